"""``--progress`` (KIP-179) for the drop-in tool: the progress report of
``--reassignment-json-file``, printed once (exit 0, as KIP-179 says: "print the progress, then
exit immediately"), or refreshed in place with ``--watch`` until the plan is done; ``--output
json`` for scripts; ``--progress-journal J`` (or ``--journal``) takes rates and step numbers
from a run's journal. (``--parallel-replica-count`` is a paced-run option: ``cli.paced``.)
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from ..cluster.views import require_permissions
from ..errors import UsageError
from ..model import Plan
from ..moves.journal import read_events
from ..run.option_spec import duration_arg
from ..watch import progress as pg


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("progress (KIP-179)")
    g.add_argument(
        "--progress",
        action="store_true",
        help="Report per partition and broker of --reassignment-json-file: In sync, Behind "
        "(bytes, from DescribeLogDirs; ISR based), Unknown topic/partition/broker, Broker does "
        "not host this partition; Done/Pending/Moving per partition; rates and ETA. Exit 0.",
    )
    g.add_argument(
        "--watch", action="store_true", help="--progress: refresh in place until the plan is done."
    )
    g.add_argument(
        "--progress-interval",
        type=duration_arg("--progress-interval"),
        default=2.0,
        metavar="SECONDS",
        help="--progress --watch: seconds between reports (default 2).",
    )
    g.add_argument(
        "--progress-journal",
        metavar="FILE",
        help="--progress: a run's journal, for step numbers and rates from its samples "
        "(--journal works too).",
    )


def _journal_events(path: str | None) -> list[dict[str, Any]]:
    if not path:
        return []
    if not os.path.exists(path):
        raise UsageError(f"journal {path}: no such file")
    return read_events(path)


def run_progress(args: argparse.Namespace, gateway: Any, plan: Plan | None) -> int:
    """``--progress``: print the report (or watch it); 0 whatever the plan's state."""
    if plan is None:
        raise UsageError("--progress needs --reassignment-json-file")
    require_permissions(gateway, "progress", ["DESCRIBE"])
    journal = args.progress_journal or getattr(args, "journal", None)
    if args.watch:
        if args.output == "json":
            raise UsageError("--watch draws a table; use --output json without --watch")

        def events() -> list[dict[str, Any]]:
            return _journal_events(journal)

        pg.watch(gateway, plan, interval_s=args.progress_interval, events=events)
        return 0
    report = pg.progress(gateway, plan, _journal_events(journal))
    if args.output == "json":
        print(json.dumps(report.to_json_obj(), indent=2, default=str))
    else:
        print(report.render_text())
    return 0
