"""A journal's life between runs: which journaled run of a plan can be resumed, the options it
was started with (``--resume`` reuses them), and setting an old journal aside before a new
run so that a journal path always holds one run. Used by the CLI, the API and the panel."""

from __future__ import annotations

import os
import time
from typing import Any

from ..errors import UsageError
from ..model import Plan
from .journal import read_events
from .options import ExecuteOptions


def first_event(journal_path: str) -> dict[str, Any] | None:
    """The journal's ``run_started`` event (None: no such event)."""
    return next((e for e in read_events(journal_path) if e.get("event") == "run_started"), None)


def unfinished_run(journal_path: str, plan: Plan) -> dict[str, Any] | None:
    """The ``run_started`` event of a run of ``plan`` journaled at ``journal_path`` that did
    not end done (stopped, failed, cancelled or killed): the run Resume continues."""
    if not os.path.exists(journal_path):
        return None
    try:
        events = read_events(journal_path)
    except OSError:
        return None
    first = next((e for e in events if e.get("event") == "run_started"), None)
    if first is None or first.get("plan_digest") != plan.digest():
        return None
    last = next((e for e in reversed(events) if e.get("event") == "run_finished"), None)
    if last is not None and last.get("state") == "done":
        return None
    return first


def set_aside(journal_path: str) -> str | None:
    """Before a new run at ``journal_path``: rename an existing, non-empty journal to
    ``<stem>-<its run id><ext>`` (never lost, never appended to). Returns the new name."""
    if not os.path.exists(journal_path) or os.path.getsize(journal_path) == 0:
        return None
    first = first_event(journal_path)
    tag = (first or {}).get("run_id") or time.strftime(
        "%Y%m%dT%H%M%S", time.localtime(os.path.getmtime(journal_path))
    )
    stem, ext = os.path.splitext(journal_path)
    aside = f"{stem}-{tag}{ext}"
    os.replace(journal_path, aside)
    return aside


def options_from_journal(journal_path: str) -> ExecuteOptions:
    """The options a journaled run was started with (``--resume`` reuses them)."""
    if not os.path.exists(journal_path):
        raise UsageError(f"--journal {journal_path}: no such file to resume")
    first = first_event(journal_path)
    if first is None:
        raise UsageError(f"--journal {journal_path}: no run_started event; nothing to resume")
    return ExecuteOptions.from_json_obj(first.get("options") or {}).validate()
