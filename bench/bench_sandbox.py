"""Sandbox start-up: seconds until every broker is registered (target: 4 brokers in <= 30 s).

Beside it, the lower bound of one JVM start (the official tool's `--version`), since a cluster
cannot be ready before its slowest JVM has started."""

from __future__ import annotations

import tempfile
import time

from reassign_kit.sandbox.kafka import fetch_kafka, run_kafka_class
from reassign_kit.sandbox.sandbox import Sandbox


def main() -> None:
    fetch_kafka()
    t0 = time.perf_counter()
    run_kafka_class("org.apache.kafka.tools.reassign.ReassignPartitionsCommand", ["--version"])
    jvm = time.perf_counter() - t0
    rows = []
    for brokers, racks in [(1, 0), (4, 2)]:
        with tempfile.TemporaryDirectory(prefix="rk-bench-sb-") as d:
            t0 = time.perf_counter()
            sb = Sandbox.up(d, brokers=brokers, racks=racks)
            ready = time.perf_counter() - t0
            t0 = time.perf_counter()
            sb.down()
            down = time.perf_counter() - t0
        rows.append((brokers, racks, ready, down))
    print(
        f"{'brokers':>7} {'racks':>5} {'ready s':>8} {'down s':>7} {'1 JVM start s':>14} {'target s':>8}"
    )
    for b, r, ready, down in rows:
        print(f"{b:>7} {r:>5} {ready:>8.1f} {down:>7.1f} {jvm:>14.1f} {30 if b == 4 else '-':>8}")


if __name__ == "__main__":
    main()
