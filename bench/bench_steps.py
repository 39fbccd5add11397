"""KIP-435 steps and KIP-179 progress on a six-broker sandbox (its own, torn down at the end).

1. Steps: an RF=3 partition (min.insync.replicas=2) moves to three new brokers with
   --parallel-replica-count 1 through ``execute.Run`` while an acks=all producer writes to it.
   Prints the steps planned beforehand, the ones the journal recorded, the smallest ISR an
   ISR poller saw, and acknowledged / lost messages. Then the same move without steps, for the
   peak number of replicas the partition had at once.
2. Progress: a throttled move (N MiB at R bytes/s), one report per second: status of the new
   replica, percent, and how far the predicted finish (report time + ETA) is from the real one.

Usage: .venv/bin/python bench/bench_steps.py [--mib 24] [--rate 2097152] [--dir DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))

from steps_scenarios import (  # noqa: E402
    AckedProducer,
    IsrWatcher,
    consume_all,
    create_topic,
    run_steps,
    watch_throttled_move,
)

from reassign_kit.cluster.admin import AdminGateway  # noqa: E402
from reassign_kit.model import TopicPartition  # noqa: E402
from reassign_kit.sandbox.sandbox import Sandbox  # noqa: E402


def steps_scenario(sb: Sandbox, out: Path, r: int | None) -> dict:
    topic = f"bench-steps-{uuid.uuid4().hex[:6]}"
    tp = TopicPartition(topic, 0)
    create_topic(sb, topic, [[1, 2, 3]], {"min.insync.replicas": "2"})
    sb.load(topic, 8)  # the producer's sequence numbers go after 8 MiB of filler
    producer = AckedProducer(sb.bootstrap_servers, topic)
    producer.start()
    t0 = time.monotonic()
    try:
        if r is None:  # one reassignment, all three new replicas at once
            gw = AdminGateway(sb.bootstrap_servers)
            watcher = IsrWatcher(sb.bootstrap_servers, tp)
            watcher.start()
            gw.alter_reassignments({tp: [4, 5, 6]})
            while gw.describe_partitions([tp])[tp].replicas != (4, 5, 6) or gw.list_reassignments():
                time.sleep(0.1)
            watcher.stop()
            gw.close()
            res = {"planned": [(4, 5, 6)], "journal": [(4, 5, 6)], "min_isr": watcher.min_isr}
            sets = watcher.sets
        else:
            run = run_steps(sb.bootstrap_servers, tp, (4, 5, 6), r, str(out / f"steps-r{r}.jsonl"))
            print("\n".join(run.printed))
            res = {
                "planned": run.planned,
                "journal": run.journal_steps,
                "min_isr": run.min_isr_seen,
            }
            sets = run.planned
    finally:
        producer.stop()
    res["seconds"] = time.monotonic() - t0
    res["peak_replicas"] = max(len(s) for s in sets)
    got = consume_all(sb.bootstrap_servers, topic, 0, len(producer.acked), timeout=120)
    numbers = {v for v in got if v < producer.sent}
    res.update(
        acked=len(producer.acked), lost=len(producer.acked - numbers), errors=len(producer.errors)
    )
    return res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=float, default=24)
    ap.add_argument("--rate", type=int, default=2 * 1024 * 1024)
    ap.add_argument("--dir")
    a = ap.parse_args()
    out = Path(tempfile.mkdtemp(prefix="rk-bench-steps-"))
    t0 = time.monotonic()
    with Sandbox.start(brokers=6, racks=3, dir=a.dir or str(out / "sandbox")) as sb:
        print(f"6-broker sandbox up in {time.monotonic() - t0:.1f}s")
        rows = [
            ("R=1 (KIP-435 steps)", steps_scenario(sb, out, 1)),
            ("no steps", steps_scenario(sb, out, None)),
        ]
        print(
            f"\n{'move (1,2,3)->(4,5,6)':<22} {'steps':>5} {'journal=plan':>12} {'min ISR seen':>12} "
            f"{'peak replicas':>13} {'acked':>6} {'lost':>4} {'errors':>6} {'seconds':>7}"
        )
        for name, r in rows:
            print(
                f"{name:<22} {len(r['planned']):>5} {str(r['journal'] == r['planned']):>12} {r['min_isr']:>12} "
                f"{r['peak_replicas']:>13} {r['acked']:>6} {r['lost']:>4} {r['errors']:>6} {r['seconds']:>7.1f}"
            )

        topic = f"bench-progress-{uuid.uuid4().hex[:6]}"
        create_topic(sb, topic, [[1]])
        sb.load(topic, a.mib)
        gw = AdminGateway(sb.bootstrap_servers)
        reports, submitted, done_ts = watch_throttled_move(
            gw, TopicPartition(topic, 0), (2,), a.rate, interval_s=1.0
        )
        gw.close()
        total = done_ts - submitted
        print(
            f"\nthrottled move of {a.mib:g} MiB at {a.rate} B/s: done {total:.1f}s after submission "
            f"(reported at 1 s intervals)"
        )
        print(
            f"{'t s':>6} {'broker 2 status':<48} {'pct':>6} {'ETA s':>6} {'predicted finish s':>18} {'error s':>7}"
        )
        for rep in reports:
            st = [x.status for x in rep.replicas if x.broker == 2][0]
            t = rep.ts - submitted
            pred = None if rep.eta_s is None else t + rep.eta_s
            err = None if pred is None else pred - total
            print(
                f"{t:>6.1f} {st[:48]:<48} {rep.pct or 0:>6.1f} "
                f"{'-' if rep.eta_s is None else f'{rep.eta_s:.1f}':>6} "
                f"{'-' if pred is None else f'{pred:.1f}':>18} {'-' if err is None else f'{err:+.1f}':>7}"
            )
    print(f"\nartefacts (journals) in {out}")


if __name__ == "__main__":
    main()
