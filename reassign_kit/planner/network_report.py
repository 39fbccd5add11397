"""The network goals in a plan's report: per broker network in, network out and leader load
before and after, the goals asked for with their targets and whether each is met (with its
numbers), and the hottest partitions by name. Pure: values in, a dict and lines out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

HOTTEST = 10


def network_report(
    before: Mapping[str, Mapping[int, float]],
    after: Mapping[str, Mapping[int, float]],
    goals: Any,  # planner.network.Goals
    unmet: Sequence[str],
    hottest: Sequence[tuple[str, float, float]],
    steps: int,
) -> dict[str, Any]:
    """The report's ``network_goal`` section (bytes/s throughout)."""
    targets = goals.targets(after)
    brokers = sorted(set(before["network_in"]) | set(after["network_in"]))
    return {
        "goals": list(goals.balance),
        "priority": ["capacity", *goals.balance],
        "tolerance": goals.tolerance,
        "met": not unmet,
        "unmet": list(unmet),
        "changes": steps,
        "brokers": [
            {
                "broker": b,
                **{f"{r}_before": round(before[r].get(b, 0.0), 3) for r in before},
                **{f"{r}_after": round(after[r].get(b, 0.0), 3) for r in after},
                **{f"{r}_target": round(t[b], 3) for r, t in targets.items() if b in t},
                **{f"{r}_capacity": caps[b] for r, caps in goals.limits.items() if b in caps},
            }
            for b in brokers
        ],
        "hottest_partitions": [
            {"partition": name, "produce_bytes_s": round(p, 3), "fetch_bytes_s": round(c, 3)}
            for name, p, c in hottest[:HOTTEST]
        ],
    }


def network_lines(ng: Mapping[str, Any] | None) -> list[str]:
    """A few terminal lines: the goals met or not, and per broker MB/s in and out."""
    if not ng:
        return []
    state = "met" if ng["met"] else "NOT met"
    lines = [
        f"network goals ({', '.join(ng['priority'])}; within {1 + ng['tolerance']:g}x of each "
        f"broker's share): {state}; {ng['changes']} change(s)"
    ]
    lines += [f"  {u}" for u in ng["unmet"]]
    lines.append(f"{'broker':>6} {'net in MB/s':>17} {'net out MB/s':>17} {'leader load MB/s':>17}")
    for r in ng["brokers"]:
        lines.append(
            f"{r['broker']:>6} "
            + " ".join(
                f"{r[f'{res}_before'] / 1e6:>8.2f}->{r[f'{res}_after'] / 1e6:<8.2f}"
                for res in ("network_in", "network_out", "leader_load")
            )
        )
    if ng["hottest_partitions"]:
        lines.append(
            "hottest partitions (produce / fetch MB/s): "
            + ", ".join(
                f"{h['partition']} {h['produce_bytes_s'] / 1e6:.2f}/{h['fetch_bytes_s'] / 1e6:.2f}"
                for h in ng["hottest_partitions"]
            )
        )
    return lines
