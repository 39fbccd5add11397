"""`reassign-kit report JOURNAL... --html out.html`: the postmortem of one or many runs as one
self-contained HTML file (figures and the tables behind them; opens offline) and its JSON
beside it. Needs the [spark] and [notebook] extras (the postmortem runs on Spark, the figures
are Plotly); Spark's lines go to a log file named at the end (-v: here)."""

from __future__ import annotations

import argparse
import glob
import os
from typing import Any

from ..errors import UsageError, require_extra


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="reassign-kit report", description=__doc__.split("\n")[0])
    p.add_argument("journals", nargs="+", metavar="JOURNAL", help="run journals (paths or globs)")
    p.add_argument(
        "--html", required=True, metavar="OUT.html", help="the report to write (JSON beside it)"
    )
    p.add_argument("--spark-master", help="any spark.master (default local[2])")
    p.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show Spark's and the JVM's log lines here (else in the log file named at the end)",
    )
    return p


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    paths = sorted({p for pat in args.journals for p in (glob.glob(pat) or [pat])})
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise UsageError(f"report: no journal file {', '.join(missing)}")
    parent = os.path.dirname(os.path.abspath(args.html))
    if not os.path.isdir(parent):
        raise UsageError(f"--html {args.html}: the directory {parent} does not exist")
    require_extra("plotly", "the report's figures")
    require_extra("pyspark", "the postmortem (it runs on Spark)")
    if args.verbose:
        os.environ["RK_VERBOSE"] = "1"
    from ..spark.session import log_path
    from ..ui.report import write_report

    rep = write_report(paths, args.html, args.spark_master)
    s = rep["summary"]
    print(
        f"report: {len(paths)} journal(s), {s['moves']} moves ({_states(s['states'])}) "
        f"-> {args.html}" + (f" (Spark's log: {log_path()})" if log_path() else "")
    )
    return 0


def _states(states: Any) -> str:
    """``{'completed': 9, 'failed': 1}`` as ``9 completed, 1 failed`` (not a Python dict)."""
    if not isinstance(states, dict):
        return str(states)
    return ", ".join(f"{n} {state}" for state, n in sorted(states.items(), key=lambda kv: -kv[1]))
