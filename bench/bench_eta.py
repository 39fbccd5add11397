"""The run's ETA against the truth on a real sandbox, over a ladder of plan shapes.

A 4-broker sandbox in 2 racks (brokers 1, 3 in rack-0; 2, 4 in rack-1), real bytes, a low
throttle so each shape lasts well under a minute. Shapes: a drain of one broker into three
with partition sizes a factor of ten apart; a spread from three brokers to three; a
rack-to-rack move; batches of 3 with --incremental; a broker cap of 1; KIP-435 steps (R=1);
the throttle raised (x2 at 30% of the bytes) and lowered (back at 60%) mid-run.

For each shape, over the run's ``sample`` events (every second; what the paced CLI's line, the
panel and ``--progress`` on its journal show) from 25% of the bytes moved to the end:

- ours: |eta_s - time really left| / time really left, median and 90th percentile;
- since-start (what Strimzi shows), on the same samples: bytes left / (bytes moved since the
  first sample / seconds since the first sample);
- held: the share of samples whose range (``eta_range_s``: 10th-90th percentile) held the
  true finish.

The truth is the run's last ``completed`` event. The what-if's makespan (``whatif.what_if``,
uncalibrated: the throttle) is printed beside the actual one. Times are wall seconds; the
machine's load average is printed with the table (the machine is shared).

Usage: nice -n 10 .venv/bin/python bench/bench_eta.py [--rate 2097152] [--dir DIR]
[--shapes 1,3]. Writes bench/out/eta.txt and bench/out/eta.json (traces).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reassign_kit import whatif
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.sandbox.sandbox import Sandbox

MB = 1024 * 1024
FROM_PCT = 25
QUOTA_IDLE_S = 12  # Kafka's replication quota averages over 11 one-second windows


@dataclass
class Shape:
    name: str
    sizes_mb: list[float]  # per partition: seconds at the throttle (bytes = x --rate)
    before: list[list[int]]  # replicas per partition, as broker indexes 0..3 (ids 1..4)
    after: list[list[int]]
    options: dict[str, Any] = field(default_factory=dict)
    throttle_changes: list[tuple[float, float]] = field(default_factory=list)  # (%, x rate)


TENFOLD = [5.0, 0.5, 0.5, 5.0, 0.5, 5.0, 0.5, 0.5, 5.0, 0.5, 5.0, 0.5]  # ~29 s at the throttle

SHAPES = [
    Shape(
        "drain 1->3, sizes x10, batches of 3",
        TENFOLD,
        [[0]] * 12,
        [[1 + p % 3] for p in range(12)],
        {"batch_size": 3, "incremental": False},
    ),
    Shape(
        "spread 3->3, incr 3",
        [15.0, 5.0, 10.0, 15.0, 5.0, 10.0, 15.0, 5.0, 10.0],
        [[p % 3] for p in range(9)],
        [[1 + p % 3] for p in range(9)],
        {"batch_size": 3},
    ),
    Shape(
        "rack-to-rack (1,3 -> 2,4), incr 4",
        [5.0, 10.0, 5.0, 10.0, 5.0, 10.0, 5.0, 10.0],
        [[(p % 2) * 2] for p in range(8)],
        [[1 + (p % 2) * 2] for p in range(8)],
        {"batch_size": 4},
    ),
    Shape(
        "batches of 3, --incremental",
        [12.0, 3.0, 6.0, 12.0, 3.0, 6.0, 12.0, 3.0, 6.0],
        [[p % 2] for p in range(9)],
        [[2 + p % 2] for p in range(9)],
        {"batch_size": 3},
    ),
    Shape(
        "broker cap 1, incr 4",
        [12.0, 12.0, 8.0, 8.0, 12.0, 8.0],
        [[0], [1], [0], [1], [0], [1]],
        [[2], [3], [2], [3], [2], [3]],
        {"batch_size": 4, "max_moves_per_broker": 1},
    ),
    Shape(
        "KIP-435 steps R=1, RF2, incr 2",
        [5.0, 5.0, 7.5, 5.0],
        [[0, 1]] * 4,
        [[2, 3]] * 4,
        {"batch_size": 2, "parallel_replica_count": 1},
    ),
    Shape(
        "throttle x2 at 30%, x1 at 60%, incr 4",
        [10.0] * 8,
        [[p % 2] for p in range(8)],
        [[2 + p % 2] for p in range(8)],
        {"batch_size": 4},
        [(30, 2.0), (60, 1.0)],
    ),
]


def produce(bootstrap: str, topic: str, sizes: list[int]) -> None:
    from confluent_kafka import Producer

    p = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "compression.type": "none"}
    )
    block = os.urandom(10_000)
    for part, n in enumerate(sizes):
        for _ in range(max(1, n // 10_000)):
            while True:
                try:
                    p.produce(topic, block, partition=part)
                    break
                except BufferError:
                    p.poll(0.1)
        p.flush(120)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def one_run(sb: Sandbox, shape: Shape, rate: int, out: Path) -> dict[str, Any]:
    ids = sorted(b["id"] for b in sb.brokers)
    topic = f"bench-eta-{uuid.uuid4().hex[:6]}"
    before = [[ids[i] for i in reps] for reps in shape.before]
    after = [tuple(ids[i] for i in reps) for reps in shape.after]
    sb.create_topic(topic, assignment=before)
    time.sleep(1)
    produce(sb.bootstrap_servers, topic, [int(mb * rate) for mb in shape.sizes_mb])
    tps = [TopicPartition(topic, p) for p in range(len(before))]
    plan = Plan.of(Move(tp, after[tp.partition]) for tp in tps)
    opts = ExecuteOptions(
        throttle=rate,
        incremental=shape.options.get("incremental", True),
        wait=True,
        additional=True,
        poll_interval_ms=500,
        sample_interval=1.0,
        **{k: v for k, v in shape.options.items() if k != "incremental"},
    )
    gw = AdminGateway(sb.bootstrap_servers)
    predicted = whatif.what_if(gw, plan, opts).predicted_seconds
    time.sleep(QUOTA_IDLE_S)  # the quota windows of the previous run expire
    journal = out / f"eta-run-{SHAPES.index(shape) + 1}.jsonl"
    journal.unlink(missing_ok=True)
    run = Run(gw, plan, opts, journal_path=journal)
    events: list[dict[str, Any]] = []
    run.subscribe(events.append)
    load0 = os.getloadavg()[0]
    t0 = time.time()
    run.start()
    changes = list(shape.throttle_changes)
    changed_at: list[float] = []
    while run.wait(0.2) is None:
        samples = [e for e in events if e["event"] == "sample"]
        if changes and samples and samples[-1].get("bytes_total"):
            e = samples[-1]
            if 1 - e["bytes_left"] / e["bytes_total"] >= changes[0][0] / 100:
                run.set_throttle(int(rate * changes[0][1]))
                changed_at.append(time.time() - t0)
                changes.pop(0)
    res = run.wait()
    gw.close()
    load1 = os.getloadavg()[0]
    finish = max(float(e["ts"]) for e in events if e["event"] == "completed")
    samples = [e for e in events if e["event"] == "sample" and e.get("bytes_total")]
    total = samples[0]["bytes_total"]
    first = samples[0]
    trace, ours, since, held = [], [], [], []
    for e in samples:
        ts, left_b = float(e["ts"]), float(e["bytes_left"])
        truth = finish - ts
        moved = 1 - left_b / total
        gained = float(first["bytes_left"]) - left_b
        ss = (
            left_b / (gained / (ts - float(first["ts"])))
            if gained > 0 and ts > first["ts"]
            else None
        )
        rng = e.get("eta_range_s")
        point = {
            "t": ts - t0,
            "moved": moved,
            "truth": truth,
            "ours": e.get("eta_s"),
            "range": rng,
            "since_start": ss,
            "reason": e.get("eta_reason"),
        }
        trace.append(point)
        if moved * 100 < FROM_PCT or truth <= 0:
            continue
        ours.append(abs(e["eta_s"] - truth) / truth if e.get("eta_s") is not None else 1.0)
        since.append(abs(ss - truth) / truth if ss is not None else 1.0)
        held.append(bool(rng) and rng[0] <= truth <= rng[1])
    return {
        "shape": shape.name,
        "state": res.state,
        "moves": len(plan),
        "mib": total / MB,
        "throttle": rate,
        "throttle_changed_at_s": changed_at,
        "predicted_s": predicted,
        "actual_s": finish - t0,
        "samples": len(ours),
        "ours_med": statistics.median(ours) if ours else None,
        "ours_p90": pct(ours, 0.9),
        "since_med": statistics.median(since) if since else None,
        "since_p90": pct(since, 0.9),
        "held": sum(held) / len(held) if held else None,
        "load": (load0, load1),
        "journal": str(journal),
        "trace": trace,
    }


# ours median per shape at the default rate in the latest recorded run (bench/RESULTS.md,
# 7265b22), printed beside the new figure
PREVIOUS = {
    "drain 1->3, sizes x10, batches of 3": 0.035,
    "spread 3->3, incr 3": 0.088,
    "rack-to-rack (1,3 -> 2,4), incr 4": 0.052,
    "batches of 3, --incremental": 0.053,
    "broker cap 1, incr 4": 0.02,
    "KIP-435 steps R=1, RF2, incr 2": 0.028,
    "throttle x2 at 30%, x1 at 60%, incr 4": 0.047,
}


def fmt(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def table(rows: list[dict[str, Any]], rate: int, wall: float) -> str:
    head = (
        f"{'shape':<38} {'MiB':>4} {'what-if':>7} {'actual':>6} {'n':>3} | "
        f"{'ours med':>8} {'p90':>5} {'prev':>5} | {'since-start med':>15} {'p90':>5} | "
        f"{'held':>5}"
    )
    lines = [
        f"bench_eta: 4-broker sandbox (2 racks), throttle {rate / MB:g} MiB/s, samples every "
        f"1 s, poll 0.5 s; wall {wall:.0f} s; load average {rows[0]['load'][0]:.1f} at the "
        f"start, {rows[-1]['load'][1]:.1f} at the end (2 cores, shared)"
        if rows
        else "bench_eta: no run",
        f"error = |ETA - time really left| / time really left over the samples from {FROM_PCT}% "
        "of the bytes moved; ours = the run's ETA (paced line, panel, --progress); "
        "since-start = bytes left / average rate since the first sample, same samples; "
        "held = samples whose range (10th-90th percentile) held the true finish; prev = ours "
        "median in the latest recorded run (bench/RESULTS.md)",
        head,
        "-" * len(head),
    ]
    default = rate == 2 * MB  # PREVIOUS holds the default rate's figures
    for r in rows:
        lines.append(
            f"{r['shape'][:38]:<38} {r['mib']:>4.0f} {r['predicted_s']:>6.1f}s "
            f"{r['actual_s']:>5.1f}s {r['samples']:>3} | {fmt(r['ours_med']):>8} "
            f"{fmt(r['ours_p90']):>5} {fmt(PREVIOUS.get(r['shape']) if default else None):>5} | "
            f"{fmt(r['since_med']):>15} {fmt(r['since_p90']):>5} | {fmt(r['held']):>5}"
        )
    ok = [
        r
        for r in rows
        if r["ours_med"] is not None
        and r["ours_med"] <= 0.10
        and (r["since_med"] is None or r["ours_med"] < r["since_med"])
        and (r["held"] or 0) >= 0.8
    ]
    lines.append("-" * len(head))
    lines.append(
        f"goal (ours median <= 10% and below since-start's, held >= 80%): met on {len(ok)} of "
        f"{len(rows)} shapes"
    )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rate", type=int, default=2 * MB, help="throttle, bytes/s (data scales)")
    ap.add_argument("--dir", help="a running 4-broker sandbox with 2 racks to reuse")
    ap.add_argument("--shapes", help="comma-separated shape numbers, 1-based (default all)")
    args = ap.parse_args()
    out = Path(__file__).parent / "out"
    out.mkdir(exist_ok=True)
    shapes = SHAPES
    if args.shapes:
        keep = {int(x) for x in args.shapes.split(",")}
        shapes = [s for i, s in enumerate(SHAPES, 1) if i in keep]
    wall0 = time.time()
    own = None
    if args.dir:
        sb = Sandbox(args.dir)
    else:
        own = Sandbox.up(tempfile.mkdtemp(prefix="bench-eta-"), brokers=4, racks=2)
        sb = own
    rows = []
    try:
        for shape in shapes:
            print(f"shape {shape.name} ...", flush=True)
            row = one_run(sb, shape, args.rate, out)
            rows.append(row)
            print(
                f"  {row['state']}: {row['actual_s']:.1f} s (what-if {row['predicted_s']:.1f} s); "
                f"ours {fmt(row['ours_med'])} / p90 {fmt(row['ours_p90'])}, since-start "
                f"{fmt(row['since_med'])} / p90 {fmt(row['since_p90'])}, held {fmt(row['held'])}",
                flush=True,
            )
    finally:
        if own is not None:
            own.down()
            shutil.rmtree(own.dir, ignore_errors=True)  # ~1 GiB of logs per run (a full disk)
    text = table(rows, args.rate, time.time() - wall0)
    print()
    print(text)
    (out / "eta.txt").write_text(text + "\n")
    (out / "eta.json").write_text(json.dumps(rows, indent=2, default=str))


if __name__ == "__main__":
    main()
