"""Planner benchmark: plan time and moved replicas versus the lower bound on generated
snapshots (3 racks, skewed broker and topic sizes, mixed RF 2/3), a decommission and an
add-brokers case, at 100k, 1M and 3M replicas, Spark local mode (start-up included) versus a
plain in-process pass over the same snapshot; the validator runs on every plan; peak memory is
the sum of RSS over the whole process tree (driver JVM and Python workers included).

    .venv/bin/python bench/bench_planner.py            # the headline: 1.05M, 3 of 120 removed
    RK_BENCH_3M=1 .venv/bin/python bench/bench_planner.py   # and 3M on 250 brokers (Spark)
    RK_BENCH_SIZES=100000,1000000,3000000 .venv/bin/python bench/bench_planner.py  # the matrix
    RK_BENCH_SIZES=100000,1000000 .venv/bin/python bench/bench_planner.py
    RK_BENCH_CASES=bytes-goal RK_BENCH_SIZES=100000,1000000 .venv/bin/python bench/bench_planner.py
    RK_BENCH_FLEET=10000000 .venv/bin/python bench/bench_planner.py --fleet

``rack-repair`` / ``rack-repair-decommission``: RF 3 everywhere over the 3 racks
and 15% of partitions holding two replicas in one rack (a rack left out); a rebalance, and a
decommission of broker 1. ``rack viol.`` is partitions spanning fewer racks than min(RF, racks)
before -> after, ``in-rack`` the largest replica spread within a rack after the plan; the lower
bound counts the repairs.

``bytes-goal``: the decommission snapshot with a capacity file
(unequal disks: every third broker 1.5x, 25% headroom over the bytes), ``--balance
replicas,leaders,bytes`` and ``--bytes-tolerance 0.05``: whether every broker ends within 5%
of its capacity share, bytes moved beside their lower bound.

``--fleet``: ``RK_BENCH_FLEET`` replicas split over
``RK_BENCH_FLEET_CLUSTERS`` (default 4) generated cluster snapshots (``RK_BENCH_FLEET_CASE``,
default decommission; ``bytes-goal`` adds the capacity file and the bytes goal), planned and
validated one after the other in one Spark application on a standalone master and 2 workers
(1 core each, started here from pyspark's ``spark-class`` on loopback, stopped by pid); peak
memory per executor (its JVM and Python workers) and of the driver
(the planning process tree) are sampled every 0.5 s. The comparison column is the in-process
planner on the first ``RK_BENCH_FLEET_LOCAL`` snapshots (default all; 0 skips it). Each
cluster's row is printed as it finishes, so a run cut short still gives its finished part.

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
# the matrix (sizes x cases x engines) runs when RK_BENCH_SIZES or RK_BENCH_CASES is set;
# otherwise the headline: plan + validate at 1.05M replicas, 3 of 120 brokers
# decommissioned, in process and on Spark local; with RK_BENCH_3M=1 also 3M replicas on 250
# brokers on Spark local (minutes: optional in a routine `make bench`)
MATRIX = bool(os.environ.get("RK_BENCH_SIZES") or os.environ.get("RK_BENCH_CASES"))
SIZES = [int(x) for x in os.environ.get("RK_BENCH_SIZES", "100000,1000000,3000000").split(",")]
CASES = os.environ.get(
    "RK_BENCH_CASES",
    "decommission,add-brokers,uneven-racks,rack-repair,rack-repair-decommission",
).split(",")
HEADLINE = [(1_050_000, "decommission-120", ("local", "spark"))]
if os.environ.get("RK_BENCH_3M") == "1":
    HEADLINE.append((3_000_000, "decommission-250", ("spark",)))
TOLERANCE = 0.05
# the previous figures of the headline rows (bench/RESULTS.md), printed beside the new ones
PREVIOUS = {
    ("decommission-120", "local"): "plan + validate 27.4 s at load 3.1, 29.5 s CPU, "
    "moved 163,962 / lower bound 163,962, digest 0622bb98",
    ("decommission-120", "spark"): "828 s at load 33 (+108 s start), 117 s CPU",
    ("decommission-250", "spark"): "320 s at load 5.4 (plan 273 + validate 17), 232 s CPU, "
    "moved 455,935 / lower bound 455,505, 0 rack violations, in-rack spread 1",
}
REPAIR_SHARE = 0.15  # rack-repair cases: partitions holding two replicas in one rack
ENGINES = os.environ.get("RK_BENCH_ENGINES", "spark,local").split(",")


# -- generation ---------------------------------------------------------------------------------
def generate(replicas: int, case: str, path: str, seed: int = 7) -> dict:
    """A rack-aware cluster with skew, written in the Parquet snapshot form."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    per_rack = 10 if replicas <= 1_000_000 else 20
    capacity = case == "bytes-goal"
    if capacity:
        case = "decommission"
    # RF 3 everywhere and 15% of partitions with two replicas in one rack
    repair = case.startswith("rack-repair")
    if repair:
        case = "decommission" if case == "rack-repair-decommission" else "rebalance"
    racks = ["a", "b", "c"]
    # "uneven-racks": 3 racks of unequal size (14, 10, 8 brokers), one decommissioned
    sizes = [14, 10, 8] if case == "uneven-racks" else [per_rack] * 3
    # "decommission-N": N brokers in 3 racks, the first of each rack removed
    wide = case.startswith("decommission-")
    if wide:
        n = int(case.split("-", 1)[1])
        sizes = [n // 3 + (1 if r < n % 3 else 0) for r in range(3)]
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
    if repair:
        rf = np.full(n_parts, 3)
        bad = np.flatnonzero(rng.random(n_parts) < REPAIR_SHARE)
        src = rng.integers(0, 3, len(bad))  # the rack left without a replica
        dst = (src + rng.integers(1, 3, len(bad))) % 3  # the rack that holds two
        other = rng.integers(1, per_rack, len(bad))  # another broker of that rack
        base = np.array(first)[dst]
        picks[bad, src] = (picks[bad, dst] - base + other) % per_rack + base
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
    if wide:
        remove = [first[r] for r in range(3)]
    if capacity:  # unequal disks: every third broker 1.5x; 25% headroom over the bytes
        total = int((sizes * rf).sum())
        w = {b: 1.5 if b % 3 == 0 else 1.0 for b, _ in brokers if b not in remove}
        per = 1.25 * total / sum(w.values())
        with open(os.path.join(path, "capacity.json"), "w") as f:
            json.dump(
                {
                    "version": 1,
                    "brokers": [
                        {"id": int(b), "disk_bytes": int(per * w.get(b, 1.0))} for b, _ in brokers
                    ],
                },
                f,
            )
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

    params = _params(path, meta)
    out: dict = {}
    if engine == "spark":
        from reassign_kit.spark.planner import plan_and_validate_spark
        from reassign_kit.spark.session import get_spark

        spark = get_spark("local[2]")
        out["startup_s"] = time.time() - t0
        result, problems = plan_and_validate_spark(spark, path, params)
        out.update(result.timings)
    else:
        from reassign_kit.planner.in_process import plan_in_process
        from reassign_kit.planner.rules import plan_problems_offline

        snap = _snapshot_local(path)
        out["startup_s"] = time.time() - t0
        t1 = time.time()
        result = plan_in_process(snap, params)
        out.update(result.timings)
        out["plan_wall_s"] = time.time() - t1
        t1 = time.time()
        problems = plan_problems_offline(
            result.plan, snap, result.prepared.ctx, capacity=params.capacity
        )
        out["validate_s"] = time.time() - t1
    out.update(_figures(result), problems=len(problems))
    out["total_s"] = time.time() - t0
    out["plan_validate_s"] = out["total_s"] - out["startup_s"]
    return out


def _params(path: str, meta: dict):
    from reassign_kit.planner.params import PlanParams
    from reassign_kit.planner.rules import Capacity

    cap = os.path.join(path, "capacity.json")
    if os.path.exists(cap):
        return PlanParams(
            remove_brokers=tuple(meta["remove"]),
            balance=("replicas", "leaders", "bytes"),
            capacity=Capacity.read(cap),
            bytes_tolerance=TOLERANCE,
        )
    return PlanParams(remove_brokers=tuple(meta["remove"]))


def _snapshot_local(path: str):
    import pyarrow.parquet as pq

    from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
    from reassign_kit.snapshot.snapshot import Snapshot

    b = pq.read_table(os.path.join(path, "brokers.parquet")).to_pydict()
    t = pq.read_table(os.path.join(path, "topics.parquet")).to_pydict()
    p = pq.read_table(os.path.join(path, "partitions.parquet")).to_pydict()
    return Snapshot(
        tuple(BrokerEntry(i, r) for i, r in zip(b["id"], b["rack"], strict=True)),
        tuple(TopicEntry(n, m) for n, m in zip(t["name"], t["min_insync_replicas"], strict=True)),
        tuple(
            PartitionEntry(tp, pa, tuple(r), s)
            for tp, pa, r, s in zip(
                p["topic"], p["partition"], p["replicas"], p["size_bytes"], strict=True
            )
        ),
    )


def _figures(result) -> dict:
    report = result.report()
    bg = report["bytes_goal"]
    return dict(
        moved=result.moved_replicas,
        lower_bound=result.lower_bound,
        partitions_in_plan=len(result.plan),
        leadership_changes=result.leadership_changes,
        replica_spread_after=report["balance"]["replicas"]["after"]["spread"],
        replica_spread_before=report["balance"]["replicas"]["before"]["spread"],
        # rack violations before -> after, worst replica spread within a rack
        rack_violations=[
            (report.get("rack_repair") or {}).get("violations_before", 0),
            (report.get("rack_repair") or {}).get("violations_after", 0),
        ],
        rack_spread_after=max(
            (report["balance"]["replicas"]["after"].get("spread_within_rack") or {0: 0}).values()
        ),
        leader_spread_before=report["balance"]["leaders"]["before"]["spread"],
        leader_spread_after=report["balance"]["leaders"]["after"]["spread"],
        leader_min_max_after=[
            report["balance"]["leaders"]["after"]["min"],
            report["balance"]["leaders"]["after"]["max"],
        ],
        # the flow's verdict (None from a planner without it)
        leader_balance=report.get("leader_balance"),
        digest=result.plan.digest(),
        load=os.getloadavg()[0],
        bytes_goal=bg["goal"],
        bytes_met=bg["met"],
        bytes_max_dev=bg["max_deviation_from_share"],
        moved_bytes=result.moved_bytes,
        bytes_lower_bound=bg["lower_bound_moved_bytes"],
        cpu_s=time.process_time(),
    )


def _tree_rss(proc: psutil.Process) -> int:
    total = 0
    for p in [proc] + proc.children(recursive=True):
        try:
            total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


class TreeSampler:
    """Peak RSS of process trees (each root with all its descendants) and the CPU seconds every
    process seen in them used (the last reading of each, so processes that exit still count)."""

    def __init__(self, roots: dict[str, psutil.Process], every: float = 0.2):
        self.roots, self.every = roots, every
        self.peak = dict.fromkeys(roots, 0)
        self.cpu: dict[int, float] = {}
        self.done = threading.Event()
        self.th = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.done.is_set():
            for name, root in self.roots.items():
                try:  # an executor: a worker's descendants, not the worker JVM itself
                    kids = root.children(recursive=True)
                    procs = kids if name.startswith("executor") else [root] + kids
                except psutil.Error:
                    continue
                rss = 0
                for p in procs:
                    try:
                        rss += p.memory_info().rss
                        t = p.cpu_times()
                        self.cpu[p.pid] = t.user + t.system
                    except psutil.Error:
                        pass
                self.peak[name] = max(self.peak[name], rss)
            self.done.wait(self.every)

    def __enter__(self) -> TreeSampler:
        self.th.start()
        return self

    def __exit__(self, *exc) -> None:
        self.done.set()
        self.th.join()

    @property
    def cpu_s(self) -> float:
        return sum(self.cpu.values())


def measure(path: str, engine: str) -> dict:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--one", path, engine],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    with TreeSampler({"run": psutil.Process(proc.pid)}) as sampler:
        out, _ = proc.communicate()
    peak = sampler.peak["run"]
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}", "peak_mb": peak / 2**20}
    res = json.loads(out.strip().splitlines()[-1])
    res["peak_mb"] = peak / 2**20
    res["cpu_s"] = sampler.cpu_s
    return res


def _bytes_cell(r: dict) -> str:
    """bytes goal met (largest deviation from a share), moved bytes / their lower bound."""
    if not r.get("bytes_goal"):
        return "-"
    dev = r["bytes_max_dev"]
    lb = r["bytes_lower_bound"]
    return (
        f"{'met' if r['bytes_met'] else 'NOT met'} {100 * dev:.1f}% "
        f"{r['moved_bytes'] / 1e12:.2f}/{lb / 1e12:.2f} TB"
        + (f" x{r['moved_bytes'] / lb:.2f}" if lb else "")
    )


def headline() -> None:
    """Plan + validate (wall: the planning process's own; CPU: every process of its tree, JVM
    and Python workers included) beside moved / lower bound and the leader spread."""
    print(
        f"{'replicas':>9} {'brokers':>7} {'case':<18} {'engine':<6} {'start s':>7} "
        f"{'plan+valid s':>12} {'valid s':>7} {'cpu s':>6} {'load':>5} {'moved':>8} "
        f"{'lower b.':>8} {'lead spread':>11} {'replica spread':>14} {'probl':>5} {'peak MB':>7}"
    )
    rows = []
    for size, case, engines in HEADLINE:
        path = os.path.join(OUT, f"{size}-{case}")
        if not os.path.exists(os.path.join(path, "meta.json")):
            generate(size, case, path)
        meta = json.load(open(os.path.join(path, "meta.json")))
        for engine in engines:
            r = measure(path, engine)
            rows.append({"replicas": meta["replicas"], "case": case, "engine": engine, **r})
            if "error" in r:
                print(
                    f"{meta['replicas']:>9} {meta['brokers']:>7} {case:<18} {engine:<6} {r['error']}"
                )
                continue
            print(
                f"{meta['replicas']:>9} {meta['brokers']:>7} {case:<18} {engine:<6} "
                f"{r['startup_s']:>7.1f} {r['plan_validate_s']:>12.1f} {r['validate_s']:>7.1f} "
                f"{r['cpu_s']:>6.0f} {r['load']:>5.1f} {r['moved']:>8} {r['lower_bound']:>8} "
                f"{r['leader_spread_before']:>5}->{r['leader_spread_after']:<5} "
                f"{r['replica_spread_before']:>6}->{r['replica_spread_after']:<7} "
                f"{r['problems']:>5} {r['peak_mb']:>7.0f}",
                flush=True,
            )
            print(
                f"{'':>9} digest {r['digest'][:8]}; previous: {PREVIOUS.get((case, engine), '-')}"
            )
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "headline.json"), "w") as f:
        json.dump(rows, f, indent=1)


def main() -> None:
    if not MATRIX:
        headline()
        return
    rows = []
    print(
        f"{'replicas':>9} {'case':<12} {'engine':<6} {'total s':>8} {'start s':>8} {'valid s':>8} "
        f"{'moved':>8} {'lower b.':>8} {'ratio':>6} {'spread':>7} {'lead sp':>9} {'lead changes':>12} {'probl':>5} {'peak MB':>8} {'cpu s':>7} {'load':>5} {'rack viol.':>11} {'in-rack':>7}  bytes goal (max dev.) moved/lower bound"
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
                    f"{r['leader_spread_before']:>4}->{r['leader_spread_after']:<4} {r['leadership_changes']:>12} {r['problems']:>5} {r['peak_mb']:>8.0f} {r['cpu_s']:>7.0f} {r['load']:>5.1f} "
                    f"{r['rack_violations'][0]:>5}->{r['rack_violations'][1]:<5} {r['rack_spread_after']:>7}  {_bytes_cell(r)}",
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


# -- fleet scale: several clusters' snapshots in one Spark application on a standalone cluster --
def _wait_log(path: str, text: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path) and text in open(path, errors="replace").read():
            return
        if proc.poll() is not None:
            raise RuntimeError(f"{path}: exited {proc.returncode}")
        time.sleep(0.5)
    raise RuntimeError(f"{path}: no {text!r} within {timeout} s")


def start_standalone(work: str, worker_memory: str) -> tuple[str, list[subprocess.Popen]]:
    """A master and 2 workers (1 core each) on loopback, from pyspark's spark-class."""
    import pyspark

    from reassign_kit.sandbox.ports import LoopbackPorts

    home = os.path.dirname(pyspark.__file__)
    spark_class = os.path.join(home, "bin", "spark-class")
    env = dict(
        os.environ,
        SPARK_HOME=home,
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOG_DIR=work,
        SPARK_WORKER_DIR=os.path.join(work, "work"),
    )
    with LoopbackPorts() as free:  # all distinct: none is bound until its process starts
        port, master_ui, *worker_ui = (free.take() for _ in range(4))
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    mlog = os.path.join(work, "master.log")
    master = subprocess.Popen(
        [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        + ["--port", str(port), "--webui-port", str(master_ui)],
        stdout=open(mlog, "w"),
        stderr=subprocess.STDOUT,
        env=env,
    )
    procs.append(master)
    _wait_log(mlog, "I have been elected leader", master)
    for i in range(2):
        wlog = os.path.join(work, f"worker{i}.log")
        w = subprocess.Popen(
            [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1"]
            + ["--cores", "1", "--memory", worker_memory, "--webui-port", str(worker_ui[i])]
            + ["--work-dir", os.path.join(work, f"w{i}"), url],
            stdout=open(wlog, "w"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        procs.append(w)
        _wait_log(wlog, "Successfully registered with master", w)
    return url, procs


def fleet_one(url: str, paths: list[str]) -> dict:
    """The driver: one Spark session on the standalone master, every cluster planned (with the
    bytes goal and its capacity file) and validated in it, one after the other."""
    t0 = time.time()
    from reassign_kit.spark.planner import plan_and_validate_spark
    from reassign_kit.spark.session import get_spark

    spark = get_spark(url)
    out: dict = {"startup_s": time.time() - t0, "clusters": []}
    for path in paths:
        meta = json.load(open(os.path.join(path, "meta.json")))
        t = time.time()
        result, problems = plan_and_validate_spark(spark, path, _params(path, meta))
        row = _figures(result)
        row.update(result.timings, problems=len(problems), total_s=time.time() - t)
        row["replicas"] = meta["replicas"]
        row.pop("leader_balance", None)
        out["clusters"].append(row)
        print("CLUSTER " + json.dumps(row), flush=True)  # as each finishes: partial results
    out["total_s"] = time.time() - t0
    return out


def fleet() -> None:
    for total in os.environ.get("RK_BENCH_FLEET", "10000000").split(","):
        fleet_run(int(total))


def fleet_run(total: int) -> None:
    import shutil
    import tempfile

    n = int(os.environ.get("RK_BENCH_FLEET_CLUSTERS", "4"))
    case = os.environ.get("RK_BENCH_FLEET_CASE", "decommission")
    executor_memory = os.environ.get("RK_BENCH_EXECUTOR_MEMORY", "4g")
    paths = []
    for i in range(n):
        path = os.path.join(OUT, f"fleet-{case}-{total // n}-{i}")
        if not os.path.exists(os.path.join(path, "meta.json")):
            generate(total // n, case, path, seed=11 + i)
        paths.append(path)
    work = tempfile.mkdtemp(prefix="rk-bench-fleet-")
    conf = os.path.join(work, "conf")
    os.makedirs(conf)
    with open(os.path.join(conf, "spark-defaults.conf"), "w") as f:
        f.write(f"spark.executor.memory {executor_memory}\nspark.executor.cores 1\n")
    mem_gb = int(executor_memory.rstrip("g")) + 1
    url, procs = start_standalone(work, f"{mem_gb}g")
    env = dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        SPARK_CONF_DIR=conf,
        RK_SPARK_DRIVER_HOST="127.0.0.1",
        RK_SPARK_DRIVER_BIND_ADDRESS="127.0.0.1",
        RK_SPARK_DRIVER_MEMORY=os.environ.get("RK_BENCH_DRIVER_MEMORY", "4g"),
    )
    env.pop("SPARK_LOCAL_IP", None)
    t0 = time.time()
    try:
        driver = subprocess.Popen(
            [sys.executable, __file__, "--fleet-one", url, *paths],
            stdout=subprocess.PIPE,
            stderr=open(os.path.join(work, "driver.log"), "w"),
            text=True,
            env=env,
        )
        roots = {"driver": psutil.Process(driver.pid)}
        roots.update({f"executor{i}": psutil.Process(w.pid) for i, w in enumerate(procs[1:])})
        lines = []
        with TreeSampler(roots, every=0.5) as sampler:
            for line in driver.stdout:  # each cluster as it finishes (partial results)
                lines.append(line)
                if line.startswith("CLUSTER "):
                    c = json.loads(line[len("CLUSTER ") :])
                    print(
                        f"  [{time.time() - t0:.0f} s] cluster of {c['replicas']} replicas done in "
                        f"{c['total_s']:.0f} s; peak MB so far: "
                        + ", ".join(f"{k} {v / 2**20:.0f}" for k, v in sampler.peak.items()),
                        flush=True,
                    )
            driver.wait()
        wall = time.time() - t0
        if driver.returncode != 0:
            print(f"fleet: driver exit {driver.returncode}; see {work}/driver.log")
            return
        res = json.loads(lines[-1])
    finally:
        for p in reversed(procs):  # ours, by pid
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    print(
        f"fleet: {total} replicas in {n} clusters, one Spark application on a standalone master "
        f"+ 2 workers (1 core, executor {executor_memory} each); wall {wall:.0f} s "
        f"(Spark start {res['startup_s']:.0f} s), CPU {sampler.cpu_s:.0f} s over all processes, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  peak RSS: driver (Python + JVM) {sampler.peak['driver'] / 2**20:.0f} MB; "
        + ", ".join(
            f"executor {i} (its JVM + Python workers) {sampler.peak[f'executor{i}'] / 2**20:.0f} MB"
            for i in range(2)
        )
    )
    # the comparison column for the first RK_BENCH_FLEET_LOCAL clusters (default all)
    n_local = int(os.environ.get("RK_BENCH_FLEET_LOCAL", str(n)))
    local_on = n_local > 0
    print(
        f"  {'cluster':<8} {'replicas':>9} {'spark s':>8} {'moved':>8} {'lower b.':>8} {'ratio':>6} "
        f"{'spread':>7} {'lead sp':>9} {'probl':>5}  bytes goal (max dev.) moved/lower bound"
        + ("   | in process: s, peak MB, same plan" if local_on else "")
    )
    rows = []
    for i, (path, c) in enumerate(zip(paths, res["clusters"], strict=True)):
        cmp_ = ""
        loc = None
        if i < n_local:
            loc = measure(path, "local")
            if "error" in loc:
                cmp_ = f"   | {loc['error']} (peak {loc['peak_mb']:.0f} MB)"
            else:
                same = "same" if loc["digest"] == c["digest"] else "DIFFERENT"
                cmp_ = f"   | {loc['total_s']:.0f} s, {loc['peak_mb']:.0f} MB, {same}"
        ratio = c["moved"] / c["lower_bound"] if c["lower_bound"] else float("nan")
        print(
            f"  {i:<8} {c['replicas']:>9} {c['total_s']:>8.0f} {c['moved']:>8} {c['lower_bound']:>8} "
            f"{ratio:>6.3f} {c['replica_spread_before']:>3}->{c['replica_spread_after']:<3} "
            f"{c['leader_spread_before']:>4}->{c['leader_spread_after']:<4} {c['problems']:>5}  "
            f"{_bytes_cell(c)}{cmp_}",
            flush=True,
        )
        rows.append({"spark": c, "local": loc})
    os.makedirs(OUT, exist_ok=True)
    print(f"  (fleet wall {wall:.0f} s, {wall / (total / 1e6):.0f} s per million replicas)")
    with open(os.path.join(OUT, f"fleet-{total}.json"), "w") as f:
        json.dump(
            {
                "wall_s": wall,
                "cpu_s": sampler.cpu_s,
                "peak": sampler.peak,
                "res": res,
                "rows": rows,
            },
            f,
            indent=1,
        )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--one":
        print(json.dumps(run_one(sys.argv[2], sys.argv[3])))
    elif len(sys.argv) >= 3 and sys.argv[1] == "--fleet-one":
        print(json.dumps(fleet_one(sys.argv[2], sys.argv[3:])))
    elif sys.argv[1:] == ["--fleet"]:
        fleet()
    else:
        main()
