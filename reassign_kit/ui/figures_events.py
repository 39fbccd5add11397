"""Journal events read leniently, for the panel's figures (pure; ui/figures.py re-exports
every name): the partition(s) an event is about (``topic`` + ``partition``, ``tp`` as ``"t-0"``
or ``["t", 0]``, or a ``partitions`` list of either form), the events in order, the plan's
size, and how much at most reaches the browser."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model import TopicPartition

# How many points / rows / lines at most reach the browser, whatever the plan's size.
MAX_POINTS = 400
MAX_BARS = 150
MAX_TABLE_ROWS = 15
MAX_LOG_LINES = 200

MOVING_EVENTS = frozenset({"submitted", "step_submitted", "adopted"})
DONE_EVENTS = frozenset({"completed"})
CANCELLED_EVENTS = frozenset({"cancelled", "failed"})


def as_tp(obj: Any) -> TopicPartition | None:
    if isinstance(obj, TopicPartition):
        return obj
    if isinstance(obj, Mapping):
        if "topic" in obj and "partition" in obj:
            return TopicPartition(str(obj["topic"]), int(obj["partition"]))
        if "tp" in obj:
            return as_tp(obj["tp"])
        return None
    if isinstance(obj, str) and "-" in obj:
        topic, _, part = obj.rpartition("-")
        if part.isdigit():
            return TopicPartition(topic, int(part))
        return None
    if isinstance(obj, Sequence) and len(obj) == 2 and not isinstance(obj, str | bytes):
        try:
            return TopicPartition(str(obj[0]), int(obj[1]))
        except (TypeError, ValueError):
            return None
    return None


def event_tps(event: Mapping[str, Any]) -> list[TopicPartition]:
    """The partitions one journal event is about (empty for run-level events)."""
    if "topic" in event and "partition" in event and event.get("partition") is not None:
        tp = as_tp(event)
        return [tp] if tp else []
    if "tp" in event:
        tp = as_tp(event["tp"])
        return [tp] if tp else []
    out: list[TopicPartition] = []
    for item in event.get("partitions") or ():
        tp = as_tp(item)
        if tp is not None:
            out.append(tp)
    return out


def is_final(event: Mapping[str, Any]) -> bool:
    """A ``completed`` event of an intermediate replica-level step does not finish the move."""
    if event.get("final") is False:
        return False
    step, steps = event.get("step"), event.get("steps")
    if isinstance(step, int) and isinstance(steps, int) and step < steps:
        return False
    return True


def sorted_events(events: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Events in time order (stable, so same-ts events keep the journal's order)."""
    return sorted(events, key=lambda e: float(e.get("ts") or 0.0))


def plan_total(events: Sequence[Mapping[str, Any]], default: int | None = None) -> int | None:
    """Number of moves in the plan, as the ``run_started`` event states it."""
    for ev in events:
        if ev.get("event") == "run_started":
            for key in ("moves", "total", "plan_size", "partitions_total", "n_moves"):
                val = ev.get(key)
                if isinstance(val, int) and not isinstance(val, bool):
                    return val
                if isinstance(val, list):
                    return len(val)
    return default


def num(val: Any) -> float | None:
    if isinstance(val, bool) or val is None:
        return None
    if isinstance(val, int | float):
        return float(val)
    return None
