"""Each receiving broker's intake as a share of the throttle, by its moves in flight, from a
paced run's journal (does a broker take in less of its throttle with
fewer concurrent streams, a fetch's dead time?).

Between two ``sample`` events with the same moves in flight and the same throttle, a broker
that still needed bytes at both took in (received at the second - at the first) bytes; summed
per (broker, moves in flight to it) and divided by throttle x seconds. Bursts and stalls of
Kafka's windowed quota are in the figures (they are what the run saw).

Usage: .venv/bin/python bench/eta_intake.py bench/out/eta-run-2.jsonl [...]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

MIN_S = 2.0  # a (broker, streams) cell over fewer seconds is not printed


def intake(events: list[dict]) -> dict[tuple[int, int], tuple[float, float]]:
    """(broker, moves in flight to it) -> (share of the throttle taken in, seconds)."""
    samples = [e for e in events if e.get("event") == "sample"]
    acc: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for a, b in zip(samples, samples[1:], strict=False):
        cap = a.get("throttle")
        if not cap or cap != b.get("throttle"):
            continue
        moves_a = {(m["topic"], m["partition"]) for m in a["moves"]}
        if moves_a != {(m["topic"], m["partition"]) for m in b["moves"]}:
            continue
        dt = b["ts"] - a["ts"]
        for k, n in a["inflight"].items():
            if n <= 0 or b["inflight"].get(k) != n:
                continue
            if a["left"].get(k, 0) <= 0 or b["left"].get(k, 0) <= 0:
                continue
            acc[(int(k), n)][0] += (b["received"].get(k, 0) - a["received"].get(k, 0)) / cap
            acc[(int(k), n)][1] += dt
    return {key: (got / secs, secs) for key, (got, secs) in acc.items() if secs > 0}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("journals", nargs="+")
    for path in ap.parse_args().journals:
        events = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
        cells = sorted((k, v) for k, v in intake(events).items() if v[1] >= MIN_S)
        text = "  ".join(f"b{b}/n{n} {share:.2f} ({secs:.0f}s)" for (b, n), (share, secs) in cells)
        print(f"{path}: {text}")


if __name__ == "__main__":
    main()
