"""The package-level Python API: plain functions that open a cluster connection (or take a
gateway), call the library and close what they opened. ``reassign_kit.execute(...)`` and
``reassign_kit.progress(...)`` are these functions (no callable modules)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine.progress import ProgressReport
    from .model import Plan


def execute(
    plan: Plan | str | os.PathLike,
    bootstrap_servers: str | None = None,
    *,
    gateway: Any = None,
    command_config: Mapping[str, str] | str | None = None,
    journal: str | os.PathLike | None = "",
    resume: bool = False,
    rollback_path: str | os.PathLike | None = "",
    **options: Any,
) -> Any:
    """``reassign_kit.execute(plan, bootstrap_servers=..., **options)``, from a notebook or a
    script, as the CLI's ``--execute``.

    ``plan`` is a Plan or a JSON file path; the cluster is ``gateway`` (e.g. a simulator) or
    ``bootstrap_servers`` with ``command_config`` (a dict or a .properties path; its secrets
    never reach the journal). Options are ``ExecuteOptions``' fields (and the CLI's
    ``disallow_replication_factor_change``). Those the official tool has too (``additional``,
    ``throttle``, ``log_dir_throttle``, ``allow_replication_factor_change``, ``timeout_s``)
    and ``elect_leaders`` make the legacy single request (``ops.execute``, returns
    ``ops.ExecuteResult``), where preferred leader elections are off unless
    ``elect_leaders=True`` (as the CLI's ``--elect-leaders``); in a paced run they are on
    unless ``elect_leaders=False`` (``--no-elect-leaders``), at most
    ``max_elections_per_poll`` per poll; any
    pacing option (``batch_size``, ``incremental``, caps, deadlines, ``wait``, ...), ``resume``
    or an explicit ``journal`` makes a paced run that blocks until KIP-1335's return point (or
    the end with ``wait=True``) and returns its ``RunResult``; a failed run raises
    ``RunError``. Both results have ``.to_pandas()``. ``journal`` / ``rollback_path``: "" = a
    timestamped file in the working directory (as the CLI), None = none. Both go through
    ``engine.preflight``; for a run in the background use ``preflight(...).run.start()``."""
    from . import ops
    from .engine import preflight as pf
    from .engine.options import ExecuteOptions
    from .errors import UsageError
    from .model import Plan

    if "disallow_replication_factor_change" in options:  # the CLI's name for the same thing
        disallow = options.pop("disallow_replication_factor_change")
        options["allow_replication_factor_change"] = not disallow
    unknown = sorted(set(options) - pf.OPTION_NAMES)
    if unknown:
        raise UsageError(
            f"execute: unknown option(s) {', '.join(unknown)}; known: "
            + ", ".join(sorted(pf.OPTION_NAMES | {"disallow_replication_factor_change"}))
        )
    if (gateway is None) == (bootstrap_servers is None):
        raise UsageError("execute needs exactly one of bootstrap_servers and gateway")
    opts = ExecuteOptions(**options).validate()  # every option checked before anything is read
    paced = pf.is_paced(options, resume=resume, journal=journal)
    source = os.fspath(plan) if isinstance(plan, str | os.PathLike) else "the plan"
    if isinstance(plan, str | os.PathLike):
        plan = Plan.read(source)
    if isinstance(command_config, str | os.PathLike):
        command_config = ops.load_command_config(os.fspath(command_config))
    rb = None if rollback_path is None else os.fspath(rollback_path)
    gw = gateway if gateway is not None else ops.connect(bootstrap_servers, command_config)
    try:
        if not paced:
            return ops.execute(
                gw,
                plan,
                additional=opts.additional,
                throttle=opts.throttle,
                log_dir_throttle=opts.log_dir_throttle,
                disallow_replication_factor_change=not opts.allow_replication_factor_change,
                timeout_s=opts.timeout_s,
                rollback_path=rb,
                source=source,
                elect_leaders=bool(options.get("elect_leaders", False)),
            )
        journal_path = os.fspath(journal) if journal else pf.default_journal_path()
        if resume:
            opts = pf.options_from_journal(journal_path)
        prepared = pf.preflight(
            gw,
            plan,
            opts,
            journal_path,
            resume=resume,
            rollback_path=rb,
            source=source,
            plan_path=os.path.abspath(source) if source != "the plan" else None,
        )
        assert prepared.run is not None
        return prepared.run.run()
    finally:
        if gateway is None:
            gw.close()


def progress(
    gateway: Any,
    plan: Plan | str | os.PathLike,
    journal: str | os.PathLike | Iterable[Mapping[str, Any]] | None = None,
    *,
    command_config: Mapping[str, str] | str | None = None,
    window_s: float = 60.0,
) -> ProgressReport:
    """The KIP-179 progress report of ``plan`` on a gateway or a bootstrap string (connect,
    report, close); ``journal`` (path or events) adds steps and rates: see
    ``engine.progress.report``."""
    from . import ops
    from .engine.progress import report

    if not isinstance(gateway, str):
        return report(gateway, plan, journal, window_s=window_s)
    gw = ops.connect(gateway, command_config)
    try:
        return report(gw, plan, journal, window_s=window_s)
    finally:
        gw.close()


def cancel(
    gateway: Any,
    plan: Plan | str | os.PathLike | None = None,
    *,
    topics: Iterable[str] | None = None,
    all: bool = False,
    journal: str | os.PathLike | None = None,
    rollback_file: str | os.PathLike | None = None,
    preserve_throttles: bool = False,
    throttle: int | None = None,
    timeout_s: float | None = None,
    command_config: Mapping[str, str] | str | None = None,
) -> Any:
    """Cancel means rollback, as the CLI's ``--cancel``: every partition of ``plan`` (a Plan
    or a JSON path; or the plan of the run ``journal`` holds), of ``topics`` or ``all`` in
    flight goes back to its ORIGINAL replica list, in order, KIP-435 stepped moves between
    steps included; the cancel waits for it (``timeout_s``, default 5 minutes) and verifies.
    Originals come from ``journal`` / ``rollback_file``, else from the reassignment in flight.
    ``gateway`` is a gateway or a bootstrap string (connected with ``command_config`` and
    closed). Returns ``ops.CancelResult`` (per partition: cancelled, completed, rolling back,
    not moving; ``.to_pandas()``). To stop a run without rolling back (drain), use
    ``Run.stop()``; to roll a running ``Run`` back, ``Run.cancel()``."""
    from . import ops
    from .model import Plan

    if isinstance(plan, str | os.PathLike):
        plan = Plan.read(os.fspath(plan))
    kwargs: dict[str, Any] = dict(
        topics=topics,
        all=all,
        preserve_throttles=preserve_throttles,
        journal=os.fspath(journal) if journal is not None else None,
        rollback_file=os.fspath(rollback_file) if rollback_file is not None else None,
        throttle=throttle,
        timeout_s=ops.ROLLBACK_TIMEOUT_S if timeout_s is None else timeout_s,
    )
    if not isinstance(gateway, str):
        return ops.cancel(gateway, plan, **kwargs)
    gw = ops.connect(gateway, command_config)
    try:
        return ops.cancel(gw, plan, **kwargs)
    finally:
        gw.close()
