"""`make demo`: the main job end to end on the sandbox, then where the results are.

Runs the papermill runbooks plan → execute → verify → postmortem (``reassign_kit.runbook``)
against a sandbox with real data, and prints the artefacts' paths."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .errors import ReassignKitError
from .sandbox.sandbox import Sandbox

DEMO_TOPICS = {"demo-orders": 6, "demo-payments": 4}


def ensure_data(sb: Sandbox, mb_per_partition: float = 4.0) -> None:
    """Create and fill the demo topics once; a second demo reuses them."""
    existing = set(sb.admin().list_topics(timeout=10).topics)
    for topic, partitions in DEMO_TOPICS.items():
        if topic not in existing:
            sb.create_topic(topic, partitions, rf=2)
            sb.load(topic, mb_per_partition)


def demo_goal(sb: Sandbox) -> dict[str, object]:
    """Decommission the last broker when it holds replicas, else rebalance onto it (it is
    empty after the previous demo), so that every demo moves real data."""
    last = max(sb.nodes)
    topics = sb.admin().list_topics(timeout=10).topics
    hosted = sum(
        last in p.replicas
        for name, t in topics.items()
        if name in DEMO_TOPICS
        for p in t.partitions.values()
    )
    return {"remove_brokers": [last]} if hosted else {"remove_brokers": []}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m reassign_kit.demo")
    p.add_argument("--sandbox-dir", required=True)
    p.add_argument("--output-dir", required=True)
    args = p.parse_args(argv)
    out = Path(args.output_dir).resolve()
    out.mkdir(parents=True, exist_ok=True)
    try:
        sb = Sandbox(args.sandbox_dir)
        ensure_data(sb)
        from . import runbook

        goal = demo_goal(sb)
        what = (
            f"decommission broker {goal['remove_brokers'][0]}"
            if goal["remove_brokers"]
            else "rebalance over every broker"
        )
        print(f"demo: {what} on the sandbox at {sb.bootstrap_servers}", flush=True)
        artefacts = runbook.demo(
            bootstrap_servers=sb.bootstrap_servers,
            output_dir=str(out),
            sandbox_dir=str(sb.dir),
            extra={"01_plan": goal},
            say=lambda text: print(text, end="", flush=True),
        )
    except ReassignKitError as e:
        print(f"\ndemo failed: {e}", file=sys.stderr)
        return e.exit_code
    (out / "artefacts.json").write_text(json.dumps(artefacts, indent=2))
    for line in closing_lines(artefacts, out):
        print(line)
    return 0


def closing_lines(artefacts: dict[str, str], out: Path) -> list[str]:
    """What the demo did (one line), then where to look: the charts to open, every file, and
    where Spark's, Jupyter's and the kernels' lines went (they are not on the terminal)."""
    from .runbook import demo_summary  # the [notebook] extra's module, as in main

    charts = [c.strip() for c in artefacts.get("charts", "").split(",") if c.strip()]
    return [
        f"demo: {demo_summary(artefacts)}",
        *([f"demo: charts to open: {', '.join(charts)}"] if charts else []),
        f"demo: every file: {out / 'artefacts.json'}; Spark's, Jupyter's and the kernels' "
        f"lines: {out}/*/*.out.log",
    ]


if __name__ == "__main__":
    sys.exit(main())
