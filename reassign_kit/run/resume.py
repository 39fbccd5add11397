"""A journal's life between runs: which journaled run of a plan can be resumed, the options it
was started with (``--resume`` reuses them), setting an old journal aside before a new run so
that a journal path always holds one run, and what a later ``--cancel --journal`` needs to roll
the run back (``journaled_run``). Used by the CLI, the API and the panel."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from ..errors import JournalError, UsageError
from ..model import Plan, TopicPartition
from ..moves.journal import read_events
from .options import ExecuteOptions


def first_event(journal_path: str) -> dict[str, Any] | None:
    """The journal's ``run_started`` event (None: no such event)."""
    return next((e for e in read_events(journal_path) if e.get("event") == "run_started"), None)


def run_started(journal_path: str, events: list[dict[str, Any]], why: str) -> dict[str, Any]:
    """The ``run_started`` of a journal read for ``why`` ("nothing to resume"): an empty
    journal is a usage error, one with events but no start was damaged (its first lines
    lost): JournalError, exit 12, before anything is sent."""
    first = next((e for e in events if e.get("event") == "run_started"), None)
    if first is not None:
        return first
    if not events:
        raise UsageError(f"--journal {journal_path}: no run_started event; {why}")
    raise JournalError(
        f"{journal_path}:1: the journal has events but no run_started (its start was lost: "
        "the journal is damaged; nothing was sent)"
    )


def check_plan_digest(journal_path: str, first: dict[str, Any], plan: Plan) -> None:
    """The plan given is the journaled run's: a run_started without a digest is damaged
    (exit 12), one with another plan's a usage error (exit 2)."""
    digest = first.get("plan_digest")
    if not isinstance(digest, str):
        raise JournalError(
            f"{journal_path}: its run_started has no plan digest (the journal is damaged; "
            "nothing was sent)"
        )
    if digest != plan.digest():
        raise UsageError(f"--resume: the plan differs from the one journaled in {journal_path}")


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
    first = run_started(journal_path, read_events(journal_path), "nothing to resume")
    return ExecuteOptions.from_json_obj(first.get("options") or {}).validate()


@dataclass
class JournaledRun:
    """What a cancel needs from a run's journal: its plan, the original replica list of
    every move it touched (from its first write-ahead ``intent``, else ``submitted``'s
    ``current``: where the move started, before any KIP-435 step), the moves it completed, and its options (the throttle rate)."""

    plan: Plan | None
    originals: dict[TopicPartition, tuple[int, ...]]
    completed: set[TopicPartition]
    options: ExecuteOptions


def journaled_run(journal_path: str) -> JournaledRun:
    """Read ``journal_path`` for a cancel (``ops.cancel(journal=...)``); the plan comes from
    ``run_started`` (inline, else the plan file it names, if still there)."""
    if not os.path.exists(journal_path):
        raise UsageError(f"--journal {journal_path}: no such file")
    events = read_events(journal_path)
    first = run_started(journal_path, events, "not a run's journal")
    plan = None
    if first.get("plan"):
        plan = Plan.from_json(json.dumps(first["plan"]), source=journal_path)
    elif first.get("plan_path") and os.path.exists(first["plan_path"]):
        plan = Plan.read(first["plan_path"])
    originals: dict[TopicPartition, tuple[int, ...]] = {}
    completed: set[TopicPartition] = set()
    for e in events:
        if "topic" not in e:
            continue
        tp = TopicPartition(e["topic"], int(e["partition"]))
        kind = e.get("event")
        if kind == "intent" and e.get("original") and tp not in originals:
            originals[tp] = tuple(int(b) for b in e["original"])  # the write-ahead record
        elif kind == "submitted" and e.get("current") and tp not in originals:
            originals[tp] = tuple(int(b) for b in e["current"])
        elif kind == "rolling_back" and e.get("original") and tp not in originals:
            originals[tp] = tuple(int(b) for b in e["original"])
        elif kind == "completed":
            completed.add(tp)
    options = ExecuteOptions.from_json_obj(first.get("options") or {})
    return JournaledRun(plan, originals, completed, options)
