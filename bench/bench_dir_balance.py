"""The log-dir pass of ``--balance disks`` at scale, in process: a snapshot of N partitions
(RF 3, 24 brokers with 4 log dirs each, one broker new, every replica in its broker's first
dir, sizes 1-1000 MB), planned with ``replicas,leaders`` and with ``replicas,leaders,disks``;
prints both wall and CPU times (their difference is the pass), the bytes moved between dirs
and whether every dir ended within 10% of its share.

    .venv/bin/python bench/bench_dir_balance.py 30000 [100000 ...]   (>= 100k: under flock)
"""

from __future__ import annotations

import os
import random
import sys
import time

from reassign_kit.api import plan
from reassign_kit.snapshot.snapshot import Snapshot

BROKERS, DIRS, GB = 24, 4, 10**9


def snapshot(n: int, seed: int = 7) -> Snapshot:
    rng = random.Random(seed)
    dirs = [f"/data/d{i}" for i in range(DIRS)]
    brokers = [
        {"id": b, "rack": f"r{b % 3}", "log_dirs": dirs, "cordoned_log_dirs": [],
         "log_dir_capacity": [{"log_dir": d, "total_bytes": 100 * 2**40,
                               "usable_bytes": 90 * 2**40} for d in dirs]}
        for b in range(BROKERS)
    ]  # fmt: skip
    old = list(range(BROKERS - 1))  # the last broker is new
    parts = []
    for p in range(n):
        reps = rng.sample(old, 3)
        parts.append({"topic": f"t{p % 50}", "partition": p // 50, "replicas": reps,
                      "size_bytes": rng.randint(10**6, 10**9), "log_dirs": [dirs[0]] * 3})  # fmt: skip
    topics = [{"name": f"t{i}"} for i in range(50)]
    return Snapshot.from_json_obj(
        {"version": 1, "brokers": brokers, "topics": topics, "partitions": parts}
    )


def timed(snap: Snapshot, balance: str):
    w, c = time.perf_counter(), time.process_time()
    r = plan(snap, balance=balance, engine="local")
    return r, time.perf_counter() - w, time.process_time() - c


def main(sizes: list[int]) -> None:
    print(f"load {os.getloadavg()[0]:.1f}")
    for n in sizes:
        snap = snapshot(n)
        base, bw, bc = timed(snap, "replicas,leaders")
        disks, dw, dc = timed(snap, "replicas,leaders,disks")
        dg = disks.report()["disk_goal"]
        assert base.plan.moves and all(m.log_dirs for m in disks.plan)
        print(
            f"{n} partitions ({3 * n} replicas): replicas,leaders {bw:.1f} s wall {bc:.1f} s CPU;"
            f" +disks {dw:.1f} s wall {dc:.1f} s CPU (pass ~{dc - bc:.1f} s CPU); "
            f"{len(disks.plan)} moves ({len(disks.plan) - len(base.plan)} between dirs only), "
            f"{dg['moved_bytes_between_dirs'] / 1e12:.2f} TB moved between dirs, goal met "
            f"{dg['met']}; load {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [30000])
