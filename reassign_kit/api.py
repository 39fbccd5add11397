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
    """Run ``plan`` as the CLI's ``--execute`` does (legacy single request, or a paced run
    when a pacing option, ``resume`` or ``journal`` is given): see ``engine.run.execute``."""
    from .engine.run import execute as _execute

    return _execute(
        plan,
        bootstrap_servers,
        gateway=gateway,
        command_config=command_config,
        journal=journal,
        resume=resume,
        rollback_path=rollback_path,
        **options,
    )


def progress(
    gateway: Any,
    plan: Plan | str | os.PathLike,
    journal: str | os.PathLike | Iterable[Mapping[str, Any]] | None = None,
    *,
    command_config: Mapping[str, str] | str | None = None,
    window_s: float = 60.0,
) -> ProgressReport:
    """The KIP-179 progress report of ``plan`` on a gateway or a bootstrap string;
    ``journal`` (path or events) adds steps and rates: see ``engine.progress.report``."""
    from .engine.progress import report

    return report(gateway, plan, journal, command_config=command_config, window_s=window_s)
