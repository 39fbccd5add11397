"""Core benchmark: (1) the pure layers at scale: parse + validate a plan file and compute its
throttles, at 10k / 100k / 1M partitions; (2) on a real sandbox, the same plan through Apache
Kafka's own kafka-reassign-partitions and through reassign-kit: wall time of --execute, of the
wait until every move is complete, and of the final --verify (JVM start-up included for the
official tool, Python start-up for ours: both are run as a user runs them, as commands).

    .venv/bin/python bench/bench_core.py                       # pure sizes + a sandbox it starts
    RK_SANDBOX_DIR=… .venv/bin/python bench/bench_core.py      # reuse a running sandbox
    RK_BENCH_SIZES=10000,100000 RK_BENCH_PARTITIONS=48 RK_BENCH_MB=0.5 …

Prints tables; writes bench/out/core/results.json.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out", "core")
SIZES = [int(x) for x in os.environ.get("RK_BENCH_SIZES", "10000,100000,1000000").split(",")]
PARTITIONS = int(os.environ.get("RK_BENCH_PARTITIONS", "48"))
MB = float(os.environ.get("RK_BENCH_MB", "0.25"))
sys.path.insert(0, ROOT)

from reassign_kit import model, validate  # noqa: E402
from reassign_kit.model import Move, PartitionState, Plan, TopicPartition  # noqa: E402
from reassign_kit.throttles import configs as throttle  # noqa: E402


def pure(n: int) -> dict:
    rng = random.Random(n)
    brokers = list(range(1, 101))
    topics = {f"topic-{i:04d}": 0 for i in range(max(1, n // 100))}
    names = list(topics)
    moves, states = [], {}
    for i in range(n):
        t = names[i % len(names)]
        p = topics[t]
        topics[t] += 1
        cur = rng.sample(brokers, 3)
        tgt = rng.sample(brokers, 3)
        tp = TopicPartition(t, p)
        moves.append(Move(tp, tuple(tgt)))
        states[tp] = PartitionState(tp, tuple(cur))
    text = Plan.of(moves).to_json()
    view = validate.ClusterView.of(brokers, topics, states)
    t0 = time.perf_counter()
    plan = model.parse_plan(text)
    t1 = time.perf_counter()
    validate.validate_plan(plan, view, disallow_replication_factor_change=True)
    t2 = time.perf_counter()
    req = throttle.required_throttles({m.tp: m.replicas for m in plan}, states)
    t3 = time.perf_counter()
    return {
        "partitions": n,
        "json_mb": round(len(text) / 1e6, 1),
        "parse_s": round(t1 - t0, 2),
        "validate_s": round(t2 - t1, 2),
        "throttles_s": round(t3 - t2, 2),
        "throttle_config_kb": round(sum(len(v) for v in req.leader.values()) / 1e3),
    }


def run(cmd: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    dt = time.perf_counter() - t0
    if p.returncode not in (0, 10):
        raise SystemExit(f"{cmd[:3]}… exited {p.returncode}: {p.stdout[-800:]}{p.stderr[-800:]}")
    return dt, p.stdout


def on_cluster(sb) -> list[dict]:
    from reassign_kit.cluster.admin import AdminGateway
    from reassign_kit.model import is_complete
    from reassign_kit.sandbox.kafka import JVM_FLAGS, java_binary, kafka_classpath

    gw = AdminGateway(sb.bootstrap_servers)
    official = [
        java_binary(),
        "-Xmx256m",
        *JVM_FLAGS,
        "-cp",
        kafka_classpath(),
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "--bootstrap-server",
        sb.bootstrap_servers,
    ]
    ours = [
        os.path.join(ROOT, ".venv", "bin", "reassign-kit"),
        "--bootstrap-server",
        sb.bootstrap_servers,
    ]
    rows = []
    for name, base in (("kafka-reassign-partitions", official), ("reassign-kit", ours)):
        topic = f"bench-core-{uuid.uuid4().hex[:6]}"
        sb.create_topic(topic, PARTITIONS, 2)
        for _ in range(20):
            try:
                sb.load(topic, MB)
                break
            except Exception:
                time.sleep(0.5)
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        before = gw.describe_partitions(tps)
        ids = sorted(b.id for b in gw.brokers())
        plan = Plan.of(
            Move(tp, tuple(([b for b in ids if b not in st.replicas] + list(st.replicas))[:2]))
            for tp, st in before.items()
        )
        with tempfile.TemporaryDirectory() as d:
            f = os.path.join(d, "plan.json")
            plan.write(f)
            extra = (
                ["--rollback-file", os.path.join(d, "rb.json")] if name == "reassign-kit" else []
            )
            t_exec, _ = run(
                [
                    *base,
                    "--reassignment-json-file",
                    f,
                    "--execute",
                    "--additional",
                    "--throttle",
                    "100000000",
                    *extra,
                ]
            )
            t0 = time.perf_counter()
            while not all(
                is_complete(m.replicas, st)
                for m, st in zip(
                    plan, (gw.describe_partitions(tps).get(m.tp) for m in plan), strict=True
                )
            ):
                time.sleep(0.2)
            t_done = time.perf_counter() - t0
            t_verify, out = run([*base, "--reassignment-json-file", f, "--verify"])
        rows.append(
            {
                "tool": name,
                "partitions": PARTITIONS,
                "mb_per_partition": MB,
                "execute_s": round(t_exec, 2),
                "until_complete_s": round(t_done, 2),
                "verify_s": round(t_verify, 2),
                "verified": out.count("is completed") == PARTITIONS,
            }
        )
    gw.close()
    return rows


def table(rows: list[dict]) -> str:
    cols = list(rows[0])
    w = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.rjust(w[c]) for c in cols)]
    lines += ["  ".join(str(r[c]).rjust(w[c]) for c in cols) for r in rows]
    return "\n".join(lines)


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    results = {"pure": [pure(n) for n in SIZES]}
    print("Pure layers (one process, no Spark): parse, validate (incl. RF guard), throttles")
    print(table(results["pure"]))
    from reassign_kit.sandbox.sandbox import Sandbox

    reuse = os.environ.get("RK_SANDBOX_DIR")
    if reuse and Sandbox(reuse).running():
        results["cluster"] = on_cluster(Sandbox(reuse))
    else:
        with tempfile.TemporaryDirectory() as d, Sandbox.start(brokers=4, racks=2, dir=d) as sb:
            results["cluster"] = on_cluster(sb)
    print(
        f"\nSame plan ({PARTITIONS} partitions x {MB} MiB, RF 2, both replicas moved), 4-broker sandbox"
    )
    print(table(results["cluster"]))
    with open(os.path.join(OUT, "results.json"), "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
