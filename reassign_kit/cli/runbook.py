"""`reassign-kit runbook list | run NAME`: the notebooks that ship with the package, run
headless through papermill from any install.

    reassign-kit runbook list
    reassign-kit runbook run 03_verify -p plan_path plan.json -p bootstrap_servers h:9092 \\
        --output out/03_verify.ipynb [--output-dir DIR] [--execution-timeout 900] [-v]

Parameters are checked against the notebook's parameters cell before a kernel starts; values
are JSON when they parse as JSON, else text. The kernel, papermill and Jupyter log to
``<output>.log`` (named at the end); ``-v`` shows them on the terminal too."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from .. import runbook as rb
from ..errors import UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="reassign-kit runbook", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    sub.add_parser("list", help="the runbooks this install ships, with their titles")
    r = sub.add_parser("run", help="run one runbook headless (papermill)")
    r.add_argument("name", help="a runbook name from `runbook list` (e.g. 03_verify)")
    r.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        default=[],
        metavar=("KEY", "VALUE"),
        help="a notebook parameter (repeatable); VALUE is read as JSON when it parses, else "
        "as text",
    )
    r.add_argument(
        "--output",
        metavar="OUT.ipynb",
        help="the executed notebook (default: <output-dir>/<name>.out.ipynb)",
    )
    r.add_argument(
        "--output-dir",
        metavar="DIR",
        help="where the runbook writes its artefacts (default: the folder of --output, else "
        "out/<name>)",
    )
    r.add_argument(
        "--kernel-name", default="python3", help="the Jupyter kernel to run it on (python3)"
    )
    r.add_argument(
        "--execution-timeout",
        type=int,
        default=rb.DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"seconds one cell may run before the runbook fails (default {rb.DEFAULT_TIMEOUT_S})",
    )
    r.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the kernel's, papermill's and Jupyter's log lines here too (else only in "
        "the log file named at the end)",
    )
    return p


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.cmd == "list":
        for name, title in rb.list_runbooks():
            print(f"{name:<16} {title}")
        print(f"({rb.notebooks_dir()})")
        return 0
    names = [n for n, _ in rb.list_runbooks()]
    name = args.name[:-6] if args.name.endswith(".ipynb") else args.name
    if name not in names:
        raise UsageError(f"runbook {args.name!r}: no such runbook (known: {', '.join(names)})")
    if args.output and not args.output.endswith(".ipynb"):
        raise UsageError(f"--output {args.output}: the executed notebook's name ends in .ipynb")
    out_dir = args.output_dir or (
        os.path.dirname(os.path.abspath(args.output)) if args.output else os.path.join("out", name)
    )
    params = {k: _value(v) for k, v in args.parameter}
    out = rb.run_notebook(
        name,
        out_dir,
        params,
        kernel_name=args.kernel_name,
        execution_timeout=args.execution_timeout,
        output_path=args.output,
        verbose=args.verbose,
    )
    print(f"runbook {name}: done -> {out} (log: {rb.log_path(out)})")
    return 0
