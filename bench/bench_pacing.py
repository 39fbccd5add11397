"""The same plan with the same cap in legacy, batch and incremental mode on a real sandbox:
wall time and peak concurrent moves side by side, with the lower bound (bytes to move per
broker / throttle) beside them.

Partitions hold uneven amounts of data (big ones among small ones) so that batch mode's
head-of-line blocking shows against incremental refill. Kafka's replication quota averages
over 11 one-second windows, so roughly the first 10 s × rate passes before the throttle
bites: the table gives the plain bound and the bound net of that burst.

Usage: .venv/bin/python bench/bench_pacing.py [--rate 524288] [--cap 2] [--dir DIR]
  --dir reuses a running sandbox (e.g. $(cat .cache/dev-sandbox-dir)); else one is started
  in a temporary folder and torn down at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import peak_concurrency, read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.sandbox.sandbox import Sandbox

MB = 1024 * 1024
SIZES_MB = [6, 1, 1, 1, 1, 6, 1, 1, 1, 1]  # partition p lives on broker p % 2 (of the first two)
QUOTA_BURST_S = 10


def produce(bootstrap: str, topic: str, sizes_mb: list[float]) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "compression.type": "none"}
    )
    block = os.urandom(10_000)
    for part, mb in enumerate(sizes_mb):
        for _ in range(int(mb * MB / 10_000)):
            while True:
                try:
                    p.produce(topic, block, partition=part)
                    break
                except BufferError:
                    p.poll(0.1)
        p.flush(120)


def lower_bound(plan: Plan, before: dict, sizes: dict, rate: int) -> tuple[float, float]:
    into: Counter[int] = Counter()
    out_of: Counter[int] = Counter()
    for m in plan:
        cur = before[m.tp]
        for b in m.replicas:
            if b not in cur:
                into[b] += sizes[m.tp]
        for b in cur:  # the leader sends; with RF 1 the one replica is the source
            if set(m.replicas) - set(cur):
                out_of[b] += sizes[m.tp] if b == cur[0] else 0
    worst = max([*into.values(), *out_of.values(), 0])
    return worst / rate, max(0.0, worst / rate - QUOTA_BURST_S)


def run_mode(gw, plan, mode: str, cap: int, rate: int, journal: Path) -> dict:
    opts = ExecuteOptions(
        batch_size=0 if mode == "legacy" else cap,
        incremental=mode == "incremental",
        throttle=rate,
        wait=True,
        additional=True,
        poll_interval_ms=500,
    )
    journal.unlink(missing_ok=True)  # a journal appends: keep only this run's events
    real, requests = gw.alter_reassignments, []

    def counted(targets, **kw):  # AlterPartitionReassignments requests, as sent
        requests.append(len(targets))
        return real(targets, **kw)

    gw.alter_reassignments = counted
    t0 = time.monotonic()
    try:
        res = Run(gw, plan, opts, journal_path=journal).run()
    finally:
        del gw.alter_reassignments
    wall = time.monotonic() - t0
    ev = read_events(journal)
    return {
        "mode": mode,
        "cap": "-" if mode == "legacy" else cap,
        "state": res.state,
        "wall_s": wall,
        "peak_moves": peak_concurrency(ev),
        "requests": len(requests),
        "throttle_writes": sum(e["event"] in ("throttle_set", "throttle_cleared") for e in ev),
        "kafka": ev[0].get("kafka_version"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=int, default=512 * 1024, help="throttle, bytes/s")
    ap.add_argument("--cap", type=int, default=2, help="N for batch and incremental")
    ap.add_argument("--dir", help="a running sandbox to reuse")
    args = ap.parse_args()
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)

    own = None
    if args.dir:
        sb = Sandbox(args.dir)
    else:
        own = Sandbox.up(tempfile.mkdtemp(prefix="bench-pacing-"), brokers=4, racks=2)
        sb = own
    try:
        ids = sorted(b["id"] for b in sb.brokers)
        src, dst = ids[:2], ids[2:4]
        topic = f"bench-pacing-{uuid.uuid4().hex[:6]}"
        sb.create_topic(topic, assignment=[[src[p % 2]] for p in range(len(SIZES_MB))])
        time.sleep(1)
        produce(sb.bootstrap_servers, topic, SIZES_MB)
        tps = [TopicPartition(topic, p) for p in range(len(SIZES_MB))]
        fwd = Plan.of(Move(tp, (dst[tp.partition % 2],)) for tp in tps)
        back = Plan.of(Move(tp, (src[tp.partition % 2],)) for tp in tps)
        gw = AdminGateway(sb.bootstrap_servers)
        sizes = {}
        for r in gw.describe_log_dirs(src):
            if r.tp in set(tps) and not r.is_future:
                sizes[r.tp] = max(sizes.get(r.tp, 0), r.size_bytes)
        rows = []
        for i, mode in enumerate(("legacy", "batch", "incremental")):
            plan = fwd if i % 2 == 0 else back
            before = {tp: st.replicas for tp, st in gw.describe_partitions(tps).items()}
            bound, bound_net = lower_bound(plan, before, sizes, args.rate)
            time.sleep(QUOTA_BURST_S + 1)  # let the quota windows of the previous run expire
            row = run_mode(gw, plan, mode, args.cap, args.rate, out / f"pacing-{mode}.jsonl")
            row.update(bound_s=bound, bound_net_burst_s=bound_net)
            rows.append(row)
        gw.close()
    finally:
        if own is not None:
            own.down()

    total = sum(sizes.values()) / MB
    print(
        f"\nplan: {len(SIZES_MB)} partitions, {total:.1f} MiB (sizes MiB {SIZES_MB}), "
        f"RF 1, brokers {src} -> {dst}; throttle {args.rate / 1024:.0f} KiB/s; cap N={args.cap}; "
        f"Kafka {rows[0]['kafka']}"
    )
    hdr = (
        f"{'mode':<12} {'N':>3} {'wall s':>8} {'peak moves':>11} {'bound s':>8} "
        f"{'bound-burst s':>14} {'wall/bound':>10} {'requests':>9} {'throttle writes':>16}"
    )
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        print(
            f"{r['mode']:<12} {r['cap']!s:>3} {r['wall_s']:>8.1f} {r['peak_moves']:>11} "
            f"{r['bound_s']:>8.1f} {r['bound_net_burst_s']:>14.1f} "
            f"{r['wall_s'] / r['bound_s']:>10.2f} {r['requests']:>9} {r['throttle_writes']:>16}"
        )
    print(
        f"(bound = max bytes into / out of one broker ÷ throttle; bound-burst subtracts the "
        f"~{QUOTA_BURST_S} s Kafka's quota window lets through unthrottled; throttle writes = "
        "journaled changes of throttle configs, each only the keys that changed)"
    )
    (out / "pacing.json").write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
