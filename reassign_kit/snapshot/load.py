"""What each partition costs its brokers, as a snapshot records it: per partition its
``PartitionLoad`` (produce bytes/s and messages/s, consumer fetch bytes/s, the groups reading
it, the size growth) and, for the whole snapshot, the ``LoadWindow`` it was measured over with
what could not be read. Their strict JSON readers live here, and ``rates``: the pure step from
two readings of the cluster (``Reading``, taken by ``snapshot.sampler``) to the loads.

How the figures are made (Admin API only, nothing installed in the brokers):

- messages/s = growth of the log end offset over the window;
- bytes per offset = the leader's log size / (log end offset - log start offset) at the end;
- produce bytes/s = messages/s x bytes per offset; size growth = the leader's size change / s;
- fetch bytes/s = sum over consumer groups of their committed offset's growth / s x bytes per
  offset; consumer groups = the groups holding a committed offset at the window's end.

Committed offsets move in steps of the groups' commit interval (``auto.commit.interval.ms``,
5 s by default): a window many times longer keeps that error small. A partition, broker or
group that cannot be read is named in ``LoadWindow.unread``; its partitions carry no load, and
a group that could not be followed leaves every partition's fetch unknown, so the planner's
network goals refuse such a snapshot rather than guess."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model import TopicPartition

LOAD_KEYS = (
    "produce_bytes_s",
    "produce_msgs_s",
    "fetch_bytes_s",
    "consumer_groups",
    "growth_bytes_s",
)
WINDOW_KEYS = {"source", "started", "seconds", "unread"}


@dataclass(frozen=True)
class PartitionLoad:
    """One partition's load over a window (rates per second)."""

    produce_bytes_s: float = 0.0
    produce_msgs_s: float = 0.0
    fetch_bytes_s: float = 0.0
    consumer_groups: int = 0
    growth_bytes_s: float = 0.0  # signed: retention may delete faster than producers write

    def to_json_obj(self) -> dict[str, Any]:
        return {
            k: (round(v, 3) if isinstance(v, float) else v)
            for k, v in ((k, getattr(self, k)) for k in LOAD_KEYS)
        }


@dataclass(frozen=True)
class LoadWindow:
    """Where a snapshot's loads come from: ``source`` ("sample": the Admin API sampler),
    the window's start (epoch seconds) and length, and what could not be read."""

    source: str
    started: float
    seconds: float
    unread: tuple[str, ...] = ()

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "started": round(self.started, 3),
            "seconds": round(self.seconds, 3),
            "unread": list(self.unread),
        }


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def read_load(raw: Any, name: str, problems: list[str]) -> PartitionLoad | None:
    """A partition's ``load`` object (``name``: the partition, for the messages)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"partition {name}: 'load' must be an object or null, got {raw!r}")
        return None
    bad = False
    for k in sorted(set(raw) - set(LOAD_KEYS)):
        problems.append(f"partition {name}: unknown load key {k!r}")
        bad = True
    for k in LOAD_KEYS:
        v = raw.get(k)
        if k == "consumer_groups":
            ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
        else:
            ok = _number(v) and (k == "growth_bytes_s" or v >= 0)
        if not ok:
            rule = {"consumer_groups": "a non-negative integer", "growth_bytes_s": "a number"}
            rule_k = rule.get(k, "a non-negative number")
            problems.append(f"partition {name}: load {k!r} must be {rule_k}, got {v!r}")
            bad = True
    if bad:
        return None
    return PartitionLoad(
        **{k: raw[k] if k == "consumer_groups" else float(raw[k]) for k in LOAD_KEYS}
    )


def with_loads(partitions: list[Any], raw: Any, problems: list[str]) -> list[Any]:
    """The partitions read (``PartitionEntry``) with the ``load`` of their raw entries."""
    if not isinstance(raw, list):
        return partitions
    loads = {}
    for p in raw:
        if isinstance(p, dict) and p.get("load") is not None:
            name = f"{p.get('topic')}-{p.get('partition')}"
            loads[(p.get("topic"), p.get("partition"))] = read_load(p["load"], name, problems)
    if not loads:
        return partitions
    return [dataclasses.replace(e, load=loads.get((e.topic, e.partition))) for e in partitions]


def read_window(raw: Any, problems: list[str]) -> LoadWindow | None:
    """The snapshot's top-level ``load`` object."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"'load' must be an object or null, got {raw!r}")
        return None
    for k in sorted(set(raw) - WINDOW_KEYS):
        problems.append(f"load: unknown key {k!r}")
    source, started, seconds = raw.get("source"), raw.get("started"), raw.get("seconds")
    unread = raw.get("unread", [])
    ok = True
    if not isinstance(source, str) or not source:
        problems.append(f"load: 'source' must be a non-empty string, got {source!r}")
        ok = False
    if not _number(started) or started < 0:
        problems.append(f"load: 'started' must be epoch seconds, got {started!r}")
        ok = False
    if not _number(seconds) or seconds <= 0:
        problems.append(f"load: 'seconds' must be a positive number, got {seconds!r}")
        ok = False
    if not isinstance(unread, list) or not all(isinstance(u, str) for u in unread):
        problems.append(f"load: 'unread' must be a list of strings, got {unread!r}")
        ok = False
    if not ok:
        return None
    return LoadWindow(source, float(started), float(seconds), tuple(unread))


# -- from two readings to rates --------------------------------------------------------------
@dataclass
class Reading:
    """The cluster read once: when (``at``, epoch seconds, the offsets' read), each
    partition's log start and end offsets and its leader's log size, each consumer group's
    committed offsets with the time they were read, and what could not be read."""

    at: float
    start: dict[TopicPartition, int] = field(default_factory=dict)
    end: dict[TopicPartition, int] = field(default_factory=dict)
    size: dict[TopicPartition, int] = field(default_factory=dict)
    groups: dict[str, tuple[float, dict[TopicPartition, int]]] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)


def _group_gaps(first: Reading, last: Reading) -> list[str]:
    """Groups read at one end of the window only: their fetch over it is unknown."""
    out = []
    for g in sorted(set(first.groups) ^ set(last.groups)):
        at = "end" if g in first.groups else "start"
        out.append(f"group {g}: not read at the window's {at}")
    return out


def rates(
    tps: list[TopicPartition], first: Reading, last: Reading
) -> tuple[dict[TopicPartition, PartitionLoad], list[str]]:
    """Each partition's load between the two readings, and what made a figure unknown (a
    partition without load is not in the result)."""
    unread = sorted(set(first.unread) | set(last.unread)) + _group_gaps(first, last)
    dt = last.at - first.at
    if not dt > 0:
        return {}, [*unread, f"the readings are not in time order ({first.at} -> {last.at})"]
    fetch_s: dict[TopicPartition, float] = {}
    readers: dict[TopicPartition, int] = {}
    for g in sorted(set(first.groups) & set(last.groups)):
        (t0, c0), (t1, c1) = first.groups[g], last.groups[g]
        for tp, off in c1.items():
            readers[tp] = readers.get(tp, 0) + 1
            if tp not in c0:
                unread.append(f"group {g}: no committed offset on {tp} at the window's start")
                continue
            gdt = t1 - t0 if t1 > t0 else dt
            fetch_s[tp] = fetch_s.get(tp, 0.0) + max(0, off - c0[tp]) / gdt
    out: dict[TopicPartition, PartitionLoad] = {}
    for tp in tps:
        missing = [
            what
            for what, d in (("offsets", first.end), ("offsets", last.end), ("size", last.size))
            if tp not in d
        ] + (["size"] if tp not in first.size else [])
        if missing:
            unread.append(f"partition {tp}: no {' or '.join(sorted(set(missing)))} read")
            continue
        grown = last.end[tp] - first.end[tp]
        if grown < 0:
            unread.append(
                f"partition {tp}: log end offset went back from {first.end[tp]} to "
                f"{last.end[tp]} (truncated by a leader change?)"
            )
            continue
        span = last.end[tp] - last.start[tp]
        per_offset = last.size[tp] / span if span > 0 else 0.0
        out[tp] = PartitionLoad(
            produce_bytes_s=grown * per_offset / dt,
            produce_msgs_s=grown / dt,
            fetch_bytes_s=fetch_s.get(tp, 0.0) * per_offset,
            consumer_groups=readers.get(tp, 0),
            growth_bytes_s=(last.size[tp] - first.size[tp]) / dt,
        )
    return out, unread


def loads_of(partitions: Any) -> Mapping[TopicPartition, PartitionLoad]:
    """Partition -> its recorded load (partitions without one left out)."""
    return {p.tp: p.load for p in partitions if getattr(p, "load", None) is not None}
