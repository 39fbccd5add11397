"""Planner benchmark: plan time and moved replicas versus the lower bound on generated
snapshots (3 racks, skewed broker and topic sizes, mixed RF 2/3), a decommission and an
add-brokers case, at 100k, 1M and 3M replicas, Spark local mode (start-up included) versus a
plain in-process pass over the same snapshot; the validator runs on every plan; peak memory is
the sum of RSS over the whole process tree (driver JVM and Python workers included).

    .venv/bin/python bench/bench_planner.py            # all sizes
    RK_BENCH_SIZES=100000,1000000 .venv/bin/python bench/bench_planner.py

Each run is a fresh process, so Spark start-up is part of every Spark time. ``load`` is the
machine's 1-minute load average at the end of the run (the machine may be shared: with 2 cores, a
load of 6 makes every number about three times slower).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out", "planner")
SIZES = [int(x) for x in os.environ.get("RK_BENCH_SIZES", "100000,1000000,3000000").split(",")]
CASES = os.environ.get("RK_BENCH_CASES", "decommission,add-brokers,uneven-racks").split(",")
ENGINES = os.environ.get("RK_BENCH_ENGINES", "spark,local").split(",")


# -- generation ---------------------------------------------------------------------------------
def generate(replicas: int, case: str, path: str, seed: int = 7) -> dict:
    """A rack-aware cluster with skew, written in the Parquet snapshot form."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    per_rack = 10 if replicas <= 1_000_000 else 20
    racks = ["a", "b", "c"]
    # "uneven-racks" (issue 13): 3 racks of unequal size (14, 10, 8 brokers), one decommissioned
    sizes = [14, 10, 8] if case == "uneven-racks" else [per_rack] * 3
    first = [1 + sum(sizes[:r]) for r in range(3)]
    brokers = [(first[r] + i, racks[r]) for r in range(3) for i in range(sizes[r])]
    if case == "add-brokers":  # one new, empty broker per rack
        brokers += [(1000 + r, racks[r]) for r in range(3)]
    # skewed broker weights inside each rack (the cluster drifted out of balance)
    weights = [rng.pareto(3.0, sizes[r]) + 1.0 for r in range(3)]
    weights = [w / w.sum() for w in weights]
    # mixed RF: 80% of partitions RF 3 (one per rack), 20% RF 2 (two racks)
    n_parts = int(replicas / 2.8)
    rf = np.where(rng.random(n_parts) < 0.8, 3, 2)
    picks = np.stack(
        [rng.choice(sizes[r], n_parts, p=weights[r]) + first[r] for r in range(3)], axis=1
    )
    rot = rng.integers(0, 3, n_parts)  # leader rack rotates
    order = (np.arange(3)[None, :] + rot[:, None]) % 3
    reps = np.take_along_axis(picks, order, axis=1)
    flat = np.where(np.arange(3)[None, :] < rf[:, None], reps, -1).ravel()
    flat = flat[flat >= 0].astype(np.int32)
    offsets = np.concatenate([[0], np.cumsum(rf)]).astype(np.int32)
    # topics with Zipf-like sizes
    n_topics = max(10, n_parts // 2000)
    tsize = rng.zipf(1.6, n_topics).astype(float)
    tsize = np.maximum(1, (tsize / tsize.sum() * n_parts)).astype(int)
    tsize[-1] += n_parts - tsize.sum()
    while tsize[-1] < 1:
        i = int(np.argmax(tsize))
        tsize[i] -= 1
        tsize[-1] += 1
    topic_idx = np.repeat(np.arange(n_topics), tsize)
    part_idx = np.concatenate([np.arange(n) for n in tsize])
    names = np.array([f"topic-{i:05d}" for i in range(n_topics)], dtype=object)
    sizes = (rng.lognormal(17, 1.5, n_parts)).astype(np.int64)
    os.makedirs(path, exist_ok=True)
    pq.write_table(
        pa.table({"id": [b for b, _ in brokers], "rack": [r for _, r in brokers]}),
        os.path.join(path, "brokers.parquet"),
    )
    pq.write_table(
        pa.table(
            {"name": list(names), "min_insync_replicas": pa.array([2] * n_topics, pa.int32())}
        ),
        os.path.join(path, "topics.parquet"),
    )
    pq.write_table(
        pa.table(
            {
                "topic": pa.array(names[topic_idx], pa.string()),
                "partition": pa.array(part_idx.astype(np.int32)),
                "replicas": pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat)),
                "size_bytes": pa.array(sizes),
            }
        ),
        os.path.join(path, "partitions.parquet"),
        row_group_size=200_000,
    )
    remove = [1] if case in ("decommission", "uneven-racks") else []
    meta = {
        "replicas": int(rf.sum()),
        "partitions": n_parts,
        "brokers": len(brokers),
        "remove": remove,
    }
    with open(os.path.join(path, "meta.json"), "w") as f:
        json.dump(meta, f)
    return meta


# -- one run (in a child process) ---------------------------------------------------------------
def run_one(path: str, engine: str) -> dict:
    t0 = time.time()
    meta = json.load(open(os.path.join(path, "meta.json")))
    from reassign_kit.planner import PlanParams

    params = PlanParams(remove_brokers=tuple(meta["remove"]))
    out: dict = {}
    if engine == "spark":
        from reassign_kit.spark.planner import plan_and_validate_spark
        from reassign_kit.spark.session import get_spark

        spark = get_spark("local[2]")
        out["startup_s"] = time.time() - t0
        result, problems = plan_and_validate_spark(spark, path, params)
        out.update(result.timings)
    else:
        import pyarrow.parquet as pq

        from reassign_kit.plan_rules import plan_problems_offline
        from reassign_kit.planner import plan_in_process
        from reassign_kit.snapshot import BrokerEntry, PartitionEntry, Snapshot, TopicEntry

        b = pq.read_table(os.path.join(path, "brokers.parquet")).to_pydict()
        t = pq.read_table(os.path.join(path, "topics.parquet")).to_pydict()
        p = pq.read_table(os.path.join(path, "partitions.parquet")).to_pydict()
        snap = Snapshot(
            tuple(BrokerEntry(i, r) for i, r in zip(b["id"], b["rack"], strict=True)),
            tuple(
                TopicEntry(n, m) for n, m in zip(t["name"], t["min_insync_replicas"], strict=True)
            ),
            tuple(
                PartitionEntry(tp, pa, tuple(r), s)
                for tp, pa, r, s in zip(
                    p["topic"], p["partition"], p["replicas"], p["size_bytes"], strict=True
                )
            ),
        )
        out["startup_s"] = time.time() - t0
        result = plan_in_process(snap, params)
        out.update(result.timings)
        t1 = time.time()
        problems = plan_problems_offline(result.plan, snap, result.prepared.ctx)
        out["validate_s"] = time.time() - t1
    report = result.report()
    out.update(
        total_s=time.time() - t0,
        moved=result.moved_replicas,
        lower_bound=result.lower_bound,
        partitions_in_plan=len(result.plan),
        leadership_changes=result.leadership_changes,
        problems=len(problems),
        replica_spread_after=report["balance"]["replicas"]["after"]["spread"],
        replica_spread_before=report["balance"]["replicas"]["before"]["spread"],
        leader_spread_before=report["balance"]["leaders"]["before"]["spread"],
        leader_spread_after=report["balance"]["leaders"]["after"]["spread"],
        leader_min_max_after=[
            report["balance"]["leaders"]["after"]["min"],
            report["balance"]["leaders"]["after"]["max"],
        ],
        # issue 13 #1: the flow's verdict (None from a planner without it)
        leader_balance=report.get("leader_balance"),
        digest=result.plan.digest(),
        load=os.getloadavg()[0],
    )
    return out


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc] + proc.children(recursive=True):
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def measure(path: str, engine: str) -> dict:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--one", path, engine],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    ps = psutil.Process(proc.pid)
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], _tree_rss(ps))
            except psutil.Error:
                pass
            done.wait(0.2)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out, _ = proc.communicate()
    done.set()
    th.join()
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}", "peak_mb": peak[0] / 2**20}
    res = json.loads(out.strip().splitlines()[-1])
    res["peak_mb"] = peak[0] / 2**20
    return res


def main() -> None:
    rows = []
    print(
        f"{'replicas':>9} {'case':<12} {'engine':<6} {'total s':>8} {'start s':>8} {'valid s':>8} "
        f"{'moved':>8} {'lower b.':>8} {'ratio':>6} {'spread':>7} {'lead sp':>9} {'lead changes':>12} {'probl':>5} {'peak MB':>8} {'load':>5}"
    )
    for size in SIZES:
        for case in CASES:
            path = os.path.join(OUT, f"{size}-{case}")
            if not os.path.exists(os.path.join(path, "meta.json")):
                generate(size, case, path)
            by_engine = {}
            for engine in ENGINES:
                r = measure(path, engine)
                by_engine[engine] = r
                if "error" in r:
                    print(f"{size:>9} {case:<12} {engine:<6} {r['error']}")
                    continue
                ratio = r["moved"] / r["lower_bound"] if r["lower_bound"] else float("nan")
                print(
                    f"{size:>9} {case:<12} {engine:<6} {r['total_s']:>8.1f} {r['startup_s']:>8.1f} {r['validate_s']:>8.1f} "
                    f"{r['moved']:>8} {r['lower_bound']:>8} {ratio:>6.3f} {r['replica_spread_before']:>3}->{r['replica_spread_after']:<3} "
                    f"{r['leader_spread_before']:>4}->{r['leader_spread_after']:<4} {r['leadership_changes']:>12} {r['problems']:>5} {r['peak_mb']:>8.0f} {r['load']:>5.1f}",
                    flush=True,
                )
            if all(e in by_engine and "error" not in by_engine[e] for e in ("spark", "local")):
                s, loc = by_engine["spark"], by_engine["local"]
                same = "same plan" if s["digest"] == loc["digest"] else "DIFFERENT plans"
                print(
                    f"{'':>9} {case:<12} spark/local time ratio {s['total_s'] / loc['total_s']:.2f} ({same})"
                )
            rows.append((size, case, by_engine))
    print("\nscaling: total seconds (seconds per million replicas)")
    for case in CASES:
        for engine in ENGINES:
            cells = []
            for size, c, by_engine in rows:
                r = by_engine.get(engine, {})
                if c == case and "total_s" in r:
                    cells.append(
                        f"{size / 1e6:g}M: {r['total_s']:.1f} s ({r['total_s'] / (size / 1e6):.1f})"
                    )
            print(f"  {case:<12} {engine:<6} " + "   ".join(cells))
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(run_one(sys.argv[2], sys.argv[3])))
    else:
        main()
