"""The network goals at scale, in process: a generated cluster (3 racks, RF 3, counts even)
whose hot partitions (5%, produce 1-5 MB/s, fetched by 1-3 groups) all sit on one rack's
brokers, planned with ``--balance replicas,leaders`` and with ``replicas,leaders,network``;
each plan validated offline, each timed from a collected heap with the snapshot alone alive
(the count-only result is let go before the network plan). Prints one row per size: plan
seconds (wall and CPU) of both, their ratio, moves, the largest network in / out over the mean
after each plan, and whether the network goals were met.

    .venv/bin/python bench/bench_network.py                   # 30,000 and 150,000 replicas
    RK_BENCH_SIZES=1050000 .venv/bin/python bench/bench_network.py
    RK_BENCH_ENGINE=spark PYSPARK_SUBMIT_ARGS="--driver-memory 6g pyspark-shell" \
        RK_BENCH_SIZES=150000 .venv/bin/python bench/bench_network.py   # Spark local[2]

On Spark the count passes run on Spark from the snapshot's Parquet and the network pass on the
driver (as ``plan --engine spark``); the plan must be the one made in process.

    RK_BENCH_NETWORK_ONLY=1 RK_BENCH_ENGINE=spark RK_BENCH_SIZES=3000000 RK_BENCH_BROKERS=250 \
        PYSPARK_SUBMIT_ARGS="--driver-memory 6g pyspark-shell" \
        flock /tmp/bigbench.lock .venv/bin/python bench/bench_network.py

``RK_BENCH_NETWORK_ONLY=1``: the network plan alone (no count-only plan, no in-process plan to
compare with), timed by stage (the pipeline's ``timings``; "other": reading the snapshot on the
driver, the report, the growth rates), with the CPU of the whole process tree (driver, Spark's
JVM, its Python workers while they live). ``RK_BENCH_BROKERS``: the broker count (else
replicas / 8000, 6 to 120). ``RK_BENCH_TRACE_EVERY=S``: every S seconds the stack of every
thread on stderr (where a long run spends its time, even one cut short by a timeout).
"""

from __future__ import annotations

import faulthandler
import gc
import os
import random
import shutil
import tempfile
import time

import psutil

from reassign_kit.api import plan as make_plan
from reassign_kit.planner.network import broker_loads
from reassign_kit.planner.rules import plan_problems_offline
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.load import LoadWindow, PartitionLoad
from reassign_kit.snapshot.snapshot import Snapshot

SIZES = [int(x) for x in os.environ.get("RK_BENCH_SIZES", "30000,150000").split(",")]
ENGINE = os.environ.get("RK_BENCH_ENGINE", "local")
BROKERS = int(os.environ.get("RK_BENCH_BROKERS", "0"))


def generate(replicas: int, seed: int = 7) -> Snapshot:
    rng = random.Random(seed)
    n_brokers = BROKERS or max(6, min(120, replicas // 8000))
    n_brokers -= n_brokers % 3
    racks = {b: "abc"[b % 3] for b in range(1, n_brokers + 1)}
    by_rack = {r: [b for b in racks if racks[b] == r] for r in "abc"}
    parts, topics = [], []
    n_parts = replicas // 3
    hot_every = 20
    for i in range(n_parts):
        topic, p = f"t{i // 500}", i % 500
        if p == 0:
            topics.append(TopicEntry(topic, 2))
        j = i // 3
        reps = [by_rack[r][(j + k) % len(by_rack[r])] for k, r in enumerate("abc")]
        rot = i % 3
        reps = reps[rot:] + reps[:rot]
        if i % hot_every == 0:  # hot: led in rack a, on the same few brokers
            a = by_rack["a"][: max(1, len(by_rack["a"]) // 3)]
            reps = [a[j % len(a)], reps[1] if racks[reps[1]] != "a" else reps[2], reps[0]]
            reps = [reps[0], *[x for x in reps[1:] if racks[x] != "a"]][:3]
            while len(reps) < 3:
                reps.append(next(b for b in by_rack["c"] if b not in reps))
            produce = rng.uniform(1e6, 5e6)
            groups = rng.randint(1, 3)
        else:
            produce, groups = rng.uniform(0, 5e4), rng.randint(0, 2)
        load = PartitionLoad(produce, produce / 1000, produce * groups, groups, produce)
        parts.append(
            PartitionEntry(topic, p, tuple(reps), rng.randint(1, 10**9), reps[0], load=load)
        )
    return Snapshot.of(
        [BrokerEntry(b, r) for b, r in racks.items()],
        topics,
        parts,
        LoadWindow("sample", 0.0, 300.0),
    )


def spread(snap: Snapshot, plan) -> dict:
    final = {p.tp: list(p.replicas) for p in snap.partitions}
    for m in plan:
        final[m.tp] = list(m.replicas)
    got = broker_loads(
        ((final[p.tp], (p.load.produce_bytes_s, p.load.fetch_bytes_s)) for p in snap.partitions),
        snap.broker_ids(),
    )
    return {r: max(v.values()) / (sum(v.values()) / len(v)) for r, v in got.items()}


def timed(snap: Snapshot, balance: str, source: Snapshot | str, engine: str):
    """Plan + validate; CPU of this process (on Spark: the driver's, not the JVM's), from a
    collected heap."""
    gc.collect()
    w, c = time.perf_counter(), time.process_time()
    result = make_plan(source, balance=balance, engine=engine, spark_master="local[2]")
    problems = plan_problems_offline(result.plan, snap)
    return result, time.perf_counter() - w, time.process_time() - c, problems


def tree_cpu() -> float:
    """CPU seconds of this process and its live descendants (a child that exited is gone)."""
    me = psutil.Process()
    total = 0.0
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            continue
    return total


def source_of(snap: Snapshot) -> Snapshot | str:
    """What the planner reads: the snapshot itself, or on Spark its Parquet (the session
    started before any clock, as a user's would be)."""
    if ENGINE != "spark":
        return snap
    from reassign_kit.spark.session import get_spark

    source = os.path.join(tempfile.mkdtemp(prefix="rk-bench-net-"), "s.parquet")
    snap.write(source)
    get_spark("local[2]")
    return source


def network_only(size: int) -> None:
    """One network plan at ``size``, on ``ENGINE``, timed by stage."""
    every = float(os.environ.get("RK_BENCH_TRACE_EVERY", "0"))
    if every > 0:
        faulthandler.dump_traceback_later(every, repeat=True)
    t0 = time.perf_counter()
    snap = generate(size)
    source = source_of(snap)
    print(f"generated {snap.replica_count()} replicas in {time.perf_counter() - t0:.1f} s")
    w, c, tc = time.perf_counter(), time.process_time(), tree_cpu()
    result = make_plan(
        source, balance="replicas,leaders,network", engine=ENGINE, spark_master="local[2]"
    )
    pw, pc, ptc = time.perf_counter() - w, time.process_time() - c, tree_cpu() - tc
    w, c = time.perf_counter(), time.process_time()
    problems = plan_problems_offline(result.plan, snap)
    vw, vc = time.perf_counter() - w, time.process_time() - c
    assert not problems, problems[:3]
    stages = {k: round(v, 1) for k, v in result.timings.items()}
    other = pw - result.timings.get("plan_s", 0.0) - result.timings["network_s"]
    if ENGINE != "spark":
        other = pw - sum(v for k, v in result.timings.items() if k.endswith("_s"))
    ng = result.report()["network_goal"]
    print(
        f"{snap.replica_count()} replicas, {len(snap.brokers)} brokers, {ENGINE}: plan wall "
        f"{pw:.1f} s, CPU {pc:.1f} s (driver) / {ptc:.1f} s (process tree); validate wall "
        f"{vw:.1f} s, CPU {vc:.1f} s; {len(result.plan)} moves; goals met {ng['met']}\n"
        f"  stages (wall s): {stages}; other {other:.1f}\n  load {os.getloadavg()}"
    )
    if ENGINE == "spark":
        shutil.rmtree(os.path.dirname(source), ignore_errors=True)


def main() -> None:
    if os.environ.get("RK_BENCH_NETWORK_ONLY") == "1":
        for size in SIZES:
            network_only(size)
        return
    print(
        f"{'replicas':>9} {'brokers':>7} {'count-only s (cpu)':>19} {'network s (cpu)':>17} "
        f"{'ratio':>6} {'moves':>13} {'in max/mean':>16} {'out max/mean':>16} {'met':>4}"
    )
    warm = generate(3000)  # imports and first-call costs out of the first row
    make_plan(warm, balance="replicas,leaders,network", engine="local")
    for size in SIZES:
        snap = generate(size)
        source = source_of(snap)
        base, bw, bc, bp = timed(snap, "replicas,leaders", source, ENGINE)
        # each plan timed with the snapshot alone alive: a count-only result still held would
        # make every full collection in the network plan walk it too
        base_plan, sb = base.plan, spread(snap, base.plan)
        del base
        net, nw, nc, np_ = timed(snap, "replicas,leaders,network", source, ENGINE)
        assert not bp and not np_, (bp[:3], np_[:3])
        if ENGINE == "spark":  # the same plan as in process
            assert (
                net.plan == make_plan(snap, balance="replicas,leaders,network", engine="local").plan
            )
            shutil.rmtree(os.path.dirname(source), ignore_errors=True)
        sn, s0 = spread(snap, net.plan), spread(snap, [])
        print(
            f"{snap.replica_count():>9} {len(snap.brokers):>7} {bw:>10.1f} ({bc:>5.1f}) "
            f"{nw:>9.1f} ({nc:>5.1f}) {nc / bc:>6.2f} {len(base_plan):>6}/{len(net.plan):<6} "
            f"{s0['network_in']:.2f}>{sb['network_in']:.2f}>{sn['network_in']:.2f} "
            f"{s0['network_out']:.2f}>{sb['network_out']:.2f}>{sn['network_out']:.2f} "
            f"{str(net.report()['network_goal']['met']):>5}"
        )


if __name__ == "__main__":
    main()
