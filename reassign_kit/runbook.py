"""Run the notebooks headless as runbooks (papermill): plan -> execute -> verify -> postmortem.

Papermill gets a ``kernel_name`` and an ``execution_timeout``, so a hung cell fails the run
instead of hanging a CI job. Papermill 2.7 has no ``store_widget_state`` switch, so the widget
state (a live FigureWidget's is megabytes) is stripped from every output notebook here, and the
output is checked to stay small. A failing cell raises ``RunbookError`` naming the notebook, the
cell's error and the output notebook that holds the details; ``main`` turns it into a message
and a non-zero exit.

    python -m reassign_kit.runbook demo --output-dir DIR [--sandbox-dir D | --bootstrap-server B]
    python -m reassign_kit.runbook run 02_execute --output-dir DIR -p plan_path plan.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import ReassignKitError, RunbookError, UsageError, require_extra
from .logfile import to_log_file

NOTEBOOKS = ("01_plan", "02_execute", "03_verify", "04_postmortem")
MAX_OUTPUT_BYTES = 3 * 1024 * 1024  # an output notebook bigger than this carries a bug
DEFAULT_TIMEOUT_S = 900


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def notebooks_dir() -> Path:
    """The runbooks: shipped in the package (``reassign_kit/runbooks``, a wheel install), else
    the checkout's ``notebooks/`` (an editable install, the repository)."""
    packaged = Path(__file__).resolve().parent / "runbooks"
    if (packaged / "01_plan.ipynb").exists():
        return packaged
    return repo_root() / "notebooks"


def list_runbooks() -> list[tuple[str, str]]:
    """(name, first heading line) of every runbook, in order."""
    out = []
    for nb in sorted(notebooks_dir().glob("*.ipynb")):
        title = ""
        try:
            cells = json.loads(nb.read_text(encoding="utf-8")).get("cells", ())
            first = next((c for c in cells if c.get("cell_type") == "markdown"), None)
            if first:
                src = (
                    first["source"]
                    if isinstance(first["source"], str)
                    else "".join(first["source"])
                )
                title = src.strip().splitlines()[0].lstrip("# ").strip() if src.strip() else ""
        except (OSError, ValueError):
            title = "(unreadable)"
        out.append((nb.stem, title))
    return out


def default_sandbox_dir() -> str:
    """The sandbox `make demo` and `reassign-kit sandbox up` use ($RK_SANDBOX_DIR or .cache/sandbox)."""
    from .sandbox.sandbox import default_dir

    return str(default_dir())


def resolve_bootstrap(bootstrap_servers: str = "", sandbox_dir: str = "") -> str:
    """The bootstrap string a notebook should use: the one given, else the sandbox's."""
    if bootstrap_servers:
        return bootstrap_servers
    from .sandbox.sandbox import Sandbox

    d = sandbox_dir or default_sandbox_dir()
    try:
        sb = Sandbox(d)
        if not sb.running():
            raise RunbookError(
                f"the sandbox in {d} is not running; start it with "
                f"`reassign-kit sandbox up --dir {d}` or pass bootstrap_servers"
            )
        return sb.bootstrap_servers
    except RunbookError:
        raise
    except ReassignKitError as e:
        raise RunbookError(
            f"no bootstrap_servers given and the sandbox in {d} is unusable: {e}"
        ) from e


def resolve_command_config(
    command_config: str = "", bootstrap_servers: str = "", sandbox_dir: str = ""
) -> str | None:
    """The client config file a notebook should use (the ``command_config`` parameter names a
    file, never holds a secret): the one given, else, for a secured sandbox the notebook uses
    (no ``bootstrap_servers``), the sandbox's admin config; None = none (plaintext)."""
    if command_config:
        if not os.path.isfile(command_config):
            raise RunbookError(
                f"command_config {command_config!r} is not a file: it names a client "
                ".properties file (as --command-config), never the settings or a secret themselves"
            )
        return command_config
    if bootstrap_servers:
        return None
    from .sandbox.sandbox import Sandbox

    try:
        sb = Sandbox(sandbox_dir or default_sandbox_dir())
    except ReassignKitError:
        return None  # resolve_bootstrap says what is wrong with it
    return sb.client_configs.get("admin")


def demo_topic_and_plan(
    sandbox_dir: str,
    output_dir: str,
    topic: str,
    partitions: int = 6,
    mb_per_partition: float = 2.0,
    rf: int = 2,
) -> str:
    """Create (once) a topic with data on the sandbox and write a plan that moves every replica
    to other brokers (each replica shifted by ``rf`` broker positions); return the plan's path.
    Used when no plan is given, so 02_execute runs on its own (demo, tests, the browser test)."""
    from .model import Move, Plan, TopicPartition
    from .operations.execute import connect
    from .sandbox.sandbox import Sandbox

    sb = Sandbox(sandbox_dir or default_sandbox_dir())
    if topic not in sb.admin().list_topics(timeout=10).topics:
        sb.create_topic(topic, partitions, rf=rf)
        sb.load(topic, mb_per_partition)
    gw = connect(sb.bootstrap_servers, sb.client_configs.get("admin"))  # None: plaintext
    try:
        ids = sorted(b.id for b in gw.brokers())
        states = gw.describe_partitions([TopicPartition(topic, p) for p in range(partitions)])
    finally:
        gw.close()
    n = len(ids)
    shift = rf if n >= 2 * rf else 1
    if n <= rf:
        raise RunbookError(f"the demo needs more than {rf} brokers, the sandbox has {ids}")
    moves = []
    for tp, st in sorted(states.items()):
        target = tuple(ids[(ids.index(b) + shift) % n] for b in st.replicas)
        moves.append(Move(tp, target))
    plan = Plan.of(moves)
    os.makedirs(output_dir, exist_ok=True)
    path = os.path.join(output_dir, "plan.json")
    plan.write(path)
    return path


def log_path(output_notebook: str) -> str:
    """The log file beside an output notebook: ``x.out.ipynb`` -> ``x.out.log``."""
    stem = output_notebook[:-6] if output_notebook.endswith(".ipynb") else output_notebook
    return stem + ".log"


def strip_widget_state(path: str | os.PathLike) -> int:
    """Remove stored widget state from a notebook file; return its size in bytes afterwards."""
    import nbformat

    nb = nbformat.read(os.fspath(path), as_version=4)
    if "widgets" in nb.metadata:
        del nb.metadata["widgets"]
    nbformat.write(nb, os.fspath(path))
    return os.path.getsize(path)


def _cell_error(output_nb: str) -> str:
    """The first error a cell recorded in the output notebook, for the message."""
    try:
        import nbformat

        nb = nbformat.read(output_nb, as_version=4)
        for cell in nb.cells:
            for out in cell.get("outputs", ()):
                if out.get("output_type") == "error":
                    return f"{out.get('ename')}: {out.get('evalue')}"
    except Exception:  # noqa: BLE001 - best effort, the caller has a message anyway
        pass
    return ""


_PARAM_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
}


def notebook_parameters(name: str) -> dict[str, str]:
    """The parameters a notebook declares in its ``parameters`` cell (``name: type = value``
    lines), as {name: type name}."""
    import ast

    src = notebooks_dir() / (name if name.endswith(".ipynb") else f"{name}.ipynb")
    try:
        nb = json.loads(src.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"no readable notebook {src}: {e}") from None
    declared: dict[str, str] = {}
    for cell in nb.get("cells", ()):
        if "parameters" not in cell.get("metadata", {}).get("tags", ()):
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        for node in ast.parse(source).body:
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                ann = node.annotation
                declared[node.target.id] = ann.id if isinstance(ann, ast.Name) else "object"
    return declared


def check_parameters(name: str, parameters: Mapping[str, Any]) -> None:
    """Refuse, before a kernel starts, a parameter the notebook does not declare (papermill
    would inject it silently: a typo would leave the default in force) or a value of another
    type than the declared one (a cell would fail midway, perhaps after changing the
    cluster). Every problem is listed; values are not echoed (never a secret in a message)."""
    import math

    declared = notebook_parameters(name)
    problems: list[str] = []
    for key, value in parameters.items():
        if not isinstance(key, str) or key not in declared:
            problems.append(
                f"unknown parameter {key!r} (its parameters: {', '.join(sorted(declared))})"
            )
            continue
        kind = declared[key]
        ok = _PARAM_TYPES.get(kind)
        if ok is None:
            continue
        if isinstance(value, bool) and kind != "bool" or not isinstance(value, ok):
            problems.append(f"parameter {key} must be of type {kind}, got {type(value).__name__}")
        elif kind == "float" and not math.isfinite(value):
            problems.append(f"parameter {key} must be a finite number")
    if problems:
        nb = name if name.endswith(".ipynb") else f"{name}.ipynb"
        raise UsageError(
            f"{nb}: {len(problems)} bad parameter(s); no kernel was started:\n  - "
            + "\n  - ".join(problems)
        )


def run_notebook(
    name: str,
    output_dir: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    kernel_name: str = "python3",
    execution_timeout: int = DEFAULT_TIMEOUT_S,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
    log_output: bool = False,
    output_path: str | None = None,
    verbose: bool | None = None,
) -> str:
    """Execute the runbook ``name`` (``notebooks_dir()``) with papermill; return the output
    notebook's path (``output_path``, default ``<output_dir>/<name>.out.ipynb``).

    Quiet: papermill's, Jupyter's and the kernel's own lines (and a JVM's the
    kernel starts) go to ``log_path(output)``, unless ``verbose`` (default: $RK_VERBOSE)."""
    src = notebooks_dir() / (name if name.endswith(".ipynb") else f"{name}.ipynb")
    if not src.exists():
        raise UsageError(f"no notebook {src}")
    params = {"output_dir": os.path.abspath(output_dir), **(parameters or {})}
    check_parameters(src.name, params)
    require_extra("papermill", "running a runbook", "the runbooks need the notebook stack")
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    try:
        os.makedirs(output_dir, exist_ok=True)
    except OSError as e:
        raise UsageError(f"output_dir {output_dir}: cannot create it: {e.strerror or e}") from None
    out = (
        os.path.abspath(output_path)
        if output_path
        else os.path.join(os.path.abspath(output_dir), src.stem + ".out.ipynb")
    )
    if not os.path.isdir(os.path.dirname(out)):
        raise UsageError(f"--output {out}: the directory {os.path.dirname(out)} does not exist")
    if verbose is None:
        verbose = bool(os.environ.get("RK_VERBOSE"))
    failure: RunbookError | None = None
    try:
        with to_log_file(log_path(out), verbose=verbose, stdout_too=True):
            pm.execute_notebook(
                str(src),
                out,
                parameters=params,
                kernel_name=kernel_name,
                execution_timeout=execution_timeout,
                progress_bar=False,
                log_output=log_output,
                cwd=str(notebooks_dir()),
            )
    except PapermillExecutionError as e:
        failure = RunbookError(
            f"{src.name} failed in cell {e.exec_count}: {e.ename}: {e.evalue}\n  details: {out}"
        )
    except Exception as e:  # timeouts, dead kernels: still a clear message, never a traceback
        detail = _cell_error(out) if os.path.exists(out) else ""
        failure = RunbookError(
            f"{src.name} did not finish: {type(e).__name__}: {e} {detail}\n  details: {out}"
        )
    size: int | None = None
    if os.path.exists(out):
        try:
            size = strip_widget_state(out)
        except Exception as e:  # noqa: BLE001 - truncated / not a notebook: said, by file
            if failure is None:  # else the run's own failure is the better message
                failure = RunbookError(
                    f"{src.name}: the output notebook {out} cannot be read (truncated or not a "
                    f"notebook: {type(e).__name__}: {str(e)[:200]})"
                )
    if failure is not None:
        raise failure
    if size is None:
        raise RunbookError(f"{src.name}: papermill wrote no output notebook {out}")
    if size > max_output_bytes:
        raise RunbookError(
            f"{out} is {size} bytes (> {max_output_bytes}): a cell stores too much output"
        )
    return out


STEPS = {
    "01_plan": "plan: snapshot the cluster, plan on Spark, check the plan",
    "02_execute": "execute: the panel runs the plan paced, throttled",
    "03_verify": "verify: every move complete, throttles removed",
    "04_postmortem": "postmortem: the journal as tables and charts",
}
# the pacing the demo's run uses; its plan notebook's what-if predicts with the same (a what-if
# at another throttle than the run's predicts another run)
DEMO_PACING = {"throttle": 4_000_000, "batch_size": 2}


def demo(
    output_dir: str,
    *,
    sandbox_dir: str = "",
    bootstrap_servers: str = "",
    kernel_name: str = "python3",
    execution_timeout: int = DEFAULT_TIMEOUT_S,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, str]:
    """plan -> execute -> verify -> postmortem on the sandbox; return the artefacts' paths.
    ``say(text)`` narrates: one line per step (what, then how long), the kernels' own lines
    in each step's log file."""
    extra = extra or {}
    out = os.path.abspath(output_dir)
    sandbox_dir = sandbox_dir or ("" if bootstrap_servers else default_sandbox_dir())
    bootstrap = resolve_bootstrap(bootstrap_servers, sandbox_dir)
    common = {"bootstrap_servers": bootstrap}
    dirs = {n: os.path.join(out, n) for n in NOTEBOOKS}
    done: dict[str, str] = {}

    def step(name: str, params: Mapping[str, Any]) -> None:
        i = NOTEBOOKS.index(name) + 1
        if say:
            say(f"demo {i}/{len(NOTEBOOKS)} {STEPS[name]} ... ")
        t0 = time.monotonic()
        done[name] = run_notebook(
            name,
            dirs[name],
            params,
            kernel_name=kernel_name,
            execution_timeout=execution_timeout,
        )
        if say:
            say(f"ok ({time.monotonic() - t0:.0f} s)\n")

    plan_path = ""
    if (notebooks_dir() / "01_plan.ipynb").exists():
        step("01_plan", {**common, **DEMO_PACING, **extra.get("01_plan", {})})
        candidate = os.path.join(dirs["01_plan"], "plan.json")
        if os.path.exists(candidate) and _plan_has_moves(candidate):
            plan_path = candidate
    # additional: the demo moves only its own topics, and a shared sandbox may have others' moves
    # in flight (the run's caps then do not count those)
    p02 = {
        **common,
        "sandbox_dir": sandbox_dir,
        "plan_path": plan_path,
        "auto_execute": True,
        "additional": True,
        **DEMO_PACING,
        "incremental": True,
        **extra.get("02_execute", {}),
    }
    step("02_execute", p02)
    executed_plan = os.path.join(dirs["02_execute"], "plan.json")
    journal = os.path.join(dirs["02_execute"], "journal.jsonl")
    p03 = {**common, "plan_path": executed_plan, "journal_path": journal}
    step("03_verify", {**p03, **extra.get("03_verify", {})})
    step("04_postmortem", {"journal_paths": journal, **extra.get("04_postmortem", {})})
    found = {
        "execute_report": os.path.join(dirs["02_execute"], "execute_report.json"),
        "verify_report": os.path.join(dirs["03_verify"], "verify_report.json"),
        "postmortem_report": os.path.join(dirs["04_postmortem"], "postmortem_report.json"),
        "journal": journal,
    }
    charts = [f for f in _artefacts(out) if f.endswith(".html")]
    return {
        **done,
        **{k: v for k, v in found.items() if os.path.exists(v)},
        "charts": ", ".join(charts),
        "output_dir": out,
    }


def demo_summary(artefacts: Mapping[str, str]) -> str:
    """The demo's one closing line: "5 moves, 21 MB copied in 7 s, verify OK" (from the execute and
    verify reports)."""

    def load(key: str) -> dict[str, Any]:
        try:
            with open(artefacts[key], encoding="utf-8") as f:
                return json.load(f)
        except (KeyError, OSError, ValueError):
            return {}

    ex, ver = load("execute_report"), load("verify_report")
    moves = (ex.get("plan") or {}).get("moves", "?")
    nbytes = (ex.get("plan") or {}).get("bytes_to_move")
    secs = (ex.get("progress") or {}).get("seconds")
    mb = f"{nbytes / 1e6:.0f} MB" if isinstance(nbytes, int | float) else "? MB"
    took = f"{secs:.0f} s" if isinstance(secs, int | float) else "? s"
    verdict = "verify OK" if ver.get("complete") is True else "verify FAILED"
    return f"{moves} moves, {mb} copied in {took}, {verdict}"


def _plan_has_moves(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            return bool(json.load(f).get("partitions"))
    except (OSError, ValueError):
        return False


def _artefacts(output_dir: str) -> list[str]:
    found = []
    for root, _dirs, files in os.walk(output_dir):
        for f in sorted(files):
            if f.endswith((".html", ".json", ".jsonl")):
                found.append(os.path.join(root, f))
    return sorted(found)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m reassign_kit.runbook", description=__doc__.split("\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="run 01 -> 02 -> 03 -> 04 on the sandbox")
    r = sub.add_parser("run", help="run one notebook")
    r.add_argument("notebook", choices=NOTEBOOKS)
    r.add_argument(
        "-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "JSON_OR_TEXT")
    )
    for p in (d, r):
        p.add_argument("--output-dir", required=True)
        p.add_argument("--kernel-name", default="python3")
        p.add_argument("--execution-timeout", type=int, default=DEFAULT_TIMEOUT_S)
    d.add_argument("--sandbox-dir", default="")
    d.add_argument("--bootstrap-server", default="")
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:  # argparse said what is wrong (usage), or --help
        return e.code if isinstance(e.code, int) else 0 if e.code is None else 2
    try:
        if args.cmd == "demo":
            res = demo(
                args.output_dir,
                sandbox_dir=args.sandbox_dir,
                bootstrap_servers=args.bootstrap_server,
                kernel_name=args.kernel_name,
                execution_timeout=args.execution_timeout,
            )
            print("demo done: plan -> execute -> verify -> postmortem")
            for n in NOTEBOOKS:
                if n in res:
                    print(f"  {n}: {res[n]}")
            print("artefacts (reports, journals, charts):")
            for f in _artefacts(res["output_dir"]):
                print(f"  {f}")
        else:
            params = {k: _param(v) for k, v in args.parameter}
            print(
                run_notebook(
                    args.notebook,
                    args.output_dir,
                    params,
                    kernel_name=args.kernel_name,
                    execution_timeout=args.execution_timeout,
                )
            )
    except ReassignKitError as e:
        print(f"reassign-kit runbook: {e}", file=sys.stderr)
        return e.exit_code
    return 0


def _param(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


if __name__ == "__main__":
    sys.exit(main())
