"""Journal events and run status -> the data the panel draws (pure: values in, values out).

Kept apart from the widgets so that the shaping is unit-testable and, above all, *bounded*: a
10,000-partition plan produces tens of thousands of events, and the browser must receive a few
hundred points per trace, a few hundred Gantt bars and a short table, never the whole history.

Events follow the journal contract in docs/architecture.md (``ts``, ``event``, ``run_id`` and
event-specific fields). The partition(s) an event is about are read leniently (``topic`` +
``partition``, ``tp`` as ``"t-0"`` or ``["t", 0]``, or a ``partitions`` list of either form), so
a batch submission that lists many partitions in one event is understood as well as one event
per partition.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import TopicPartition
from .figures_bytes import (
    planned_broker_bytes,
)
from .figures_events import (
    CANCELLED_EVENTS,
    DONE_EVENTS,
    MAX_BARS,
    MAX_LOG_LINES,
    MAX_POINTS,
    MOVING_EVENTS,
    event_tps,
    is_final,
    num,
    plan_total,
    sorted_events,
)

# ---------------------------------------------------------------- progress over time


@dataclass(frozen=True)
class ProgressSeries:
    """Counts of the plan's moves over time; ``t`` is seconds since the first event."""

    t: list[float] = field(default_factory=list)
    done: list[int] = field(default_factory=list)
    moving: list[int] = field(default_factory=list)
    pending: list[int] = field(default_factory=list)
    cancelled: list[int] = field(default_factory=list)
    total: int = 0
    t0: float | None = None

    @property
    def percent_done(self) -> float:
        if not self.total:
            return 0.0
        return 100.0 * (self.done[-1] if self.done else 0) / self.total


def progress_series(
    events: Iterable[Mapping[str, Any]],
    total: int | None = None,
    max_points: int = MAX_POINTS,
) -> ProgressSeries:
    """done / moving / pending after every state change, downsampled to ``max_points``."""
    evs = sorted_events(events)
    total = plan_total(evs, total)
    state: dict[TopicPartition, str] = {}
    t0 = float(evs[0]["ts"]) if evs else None
    pts: list[tuple[float, int, int, int]] = []
    counts = {"moving": 0, "done": 0, "cancelled": 0}

    def setstate(tp: TopicPartition, new: str) -> None:
        old = state.get(tp)
        if old == new:
            return
        if old is not None:
            counts[old] -= 1
        counts[new] += 1
        state[tp] = new

    for ev in evs:
        kind = ev.get("event")
        tps = event_tps(ev)
        if kind in MOVING_EVENTS:
            for tp in tps:
                if state.get(tp) != "done":
                    setstate(tp, "moving")
        elif kind in DONE_EVENTS and is_final(ev):
            for tp in tps:
                setstate(tp, "done")
        elif kind in CANCELLED_EVENTS:
            for tp in tps:
                if state.get(tp) != "done":
                    setstate(tp, "cancelled")
        elif kind not in ("run_started", "run_finished"):
            continue
        pts.append(
            (float(ev["ts"]) - (t0 or 0.0), counts["done"], counts["moving"], counts["cancelled"])
        )
    n = total if total is not None else len(state)
    n = max(n, len(state))
    pts = downsample(pts, max_points)
    return ProgressSeries(
        t=[p[0] for p in pts],
        done=[p[1] for p in pts],
        moving=[p[2] for p in pts],
        pending=[max(0, n - p[1] - p[2] - p[3]) for p in pts],
        cancelled=[p[3] for p in pts],
        total=n,
        t0=t0,
    )


def downsample(points: Sequence[tuple], max_points: int) -> list[tuple]:
    """Keep at most ``max_points`` points: the last point of each of equal time buckets, plus the
    first and last point, so the curve's start, end and steps stay where they were."""
    if len(points) <= max_points:
        return list(points)
    if max_points < 2:
        return [points[-1]]
    t_first, t_last = points[0][0], points[-1][0]
    span = (t_last - t_first) or 1.0
    buckets = max_points - 1
    kept: dict[int, tuple] = {}
    for p in points[1:]:
        kept[min(buckets - 1, int((p[0] - t_first) / span * buckets))] = p
    out = [points[0]] + [kept[k] for k in sorted(kept)]
    if out[-1] is not points[-1]:
        out[-1] = points[-1]
    return out[:max_points]


# ---------------------------------------------------------------- Gantt timeline


@dataclass(frozen=True)
class MoveBar:
    tp: TopicPartition
    start: float  # seconds since t0
    end: float  # seconds since t0 (``now`` for moves still running)
    state: str  # moving | done | cancelled | stuck
    steps: int = 1

    @property
    def label(self) -> str:
        return str(self.tp)


def move_bars(
    events: Iterable[Mapping[str, Any]],
    now: float | None = None,
    max_bars: int = MAX_BARS,
) -> tuple[list[MoveBar], int]:
    """One bar per partition move (first submission to completion / cancellation), at most
    ``max_bars``: moves still running and stuck ones first (longest first), then cancelled, then
    the most recently finished. Returns the bars (in start order) and how many were left out."""
    evs = sorted_events(events)
    if not evs:
        return [], 0
    t0 = float(evs[0]["ts"])
    start: dict[TopicPartition, float] = {}
    end: dict[TopicPartition, float] = {}
    st: dict[TopicPartition, str] = {}
    steps: dict[TopicPartition, int] = {}
    for ev in evs:
        kind, ts = ev.get("event"), float(ev["ts"]) - t0
        for tp in event_tps(ev):
            if kind in MOVING_EVENTS:
                start.setdefault(tp, ts)
                if kind == "step_submitted":
                    steps[tp] = steps.get(tp, 0) + 1
                if st.get(tp) not in ("done",):
                    st[tp] = "moving"
                    end.pop(tp, None)
            elif kind in DONE_EVENTS and is_final(ev) and tp in start:
                st[tp], end[tp] = "done", ts
            elif kind in CANCELLED_EVENTS and tp in start and st.get(tp) != "done":
                st[tp], end[tp] = "cancelled", ts
            elif kind == "stuck" and st.get(tp) == "moving":
                st[tp] = "stuck"
    t_now = (now - t0) if now is not None else float(evs[-1]["ts"]) - t0
    bars = [
        MoveBar(tp, start[tp], end.get(tp, max(t_now, start[tp])), st[tp], max(1, steps.get(tp, 1)))
        for tp in start
    ]
    rank = {"stuck": 0, "moving": 1, "cancelled": 2, "done": 3}

    def priority(b: MoveBar) -> tuple:
        if b.state in ("stuck", "moving"):
            return (rank[b.state], b.start, b.tp)  # oldest (longest running) first
        return (rank[b.state], -b.end, b.tp)  # most recently finished first

    chosen = sorted(bars, key=priority)[:max_bars]
    chosen.sort(key=lambda b: (b.start, b.tp))
    return chosen, len(bars) - len(chosen)


# ---------------------------------------------------------------- event log


_QUIET = frozenset({"sample"})
_LOG_FIELDS = (
    "replicas",
    "step",
    "steps",
    "brokers",
    "rate",
    "message",
    "reason",
    "state",
    "error",
)


def format_event(event: Mapping[str, Any]) -> str:
    """One human line per event: time, kind, the partitions (at most 3 named) and key fields."""
    ts = num(event.get("ts"))
    clock = _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S") if ts is not None else "--:--:--"
    if event.get("event") == "note":  # something the user did in the panel
        return f"{clock}  panel  {event.get('message', '')}"
    if event.get("event") == "caps_changed" and isinstance(event.get("caps"), Mapping):
        caps = ", ".join(f"{k}={'no cap' if v is None else v}" for k, v in event["caps"].items())
        return f"{clock}  caps_changed  {caps}"
    tps = event_tps(event)
    parts = [clock, str(event.get("event", "?"))]
    if tps:
        named = ", ".join(str(tp) for tp in tps[:3])
        parts.append(named + (f" (+{len(tps) - 3} more)" if len(tps) > 3 else ""))
    for k in _LOG_FIELDS:
        if k in event and event[k] not in (None, "", [], {}):
            val = event[k]
            text = val if isinstance(val, str) else repr(val)
            parts.append(f"{k}={text[:120]}")
    return "  ".join(parts)


def _single_step(event: Mapping[str, Any]) -> bool:
    """A move's only step: its ``submitted`` line already says it all."""
    return event.get("event") == "step_submitted" and event.get("steps") == 1


def log_lines(events: Iterable[Mapping[str, Any]], limit: int = MAX_LOG_LINES) -> list[str]:
    """The last ``limit`` events worth reading (samples left out), newest last."""
    evs = [e for e in events if e.get("event") not in _QUIET and not _single_step(e)]
    return [format_event(e) for e in evs[-limit:]]


# ---------------------------------------------------------------- plan summary


@dataclass(frozen=True)
class PlanSummary:
    moves: int
    replica_moves: int  # replicas added somewhere (data to copy)
    leader_changes: int
    bytes_to_move: int
    brokers_touched: tuple[int, ...]
    per_broker: dict[int, dict[str, float]]
    problems: tuple[str, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.problems


def plan_summary(
    moves: Iterable[tuple[TopicPartition, Sequence[int], Sequence[int]]],
    sizes: Mapping[TopicPartition, int],
    problems: Iterable[str] = (),
) -> PlanSummary:
    """Moves, bytes to copy, brokers touched, from (tp, current replicas, target replicas) and
    each partition's size (bytes of its leader's log); ``problems`` is the validation result."""
    rows = list(moves)
    added = 0
    leaders = 0
    nbytes = 0
    touched: set[int] = set()
    for tp, cur, tgt in rows:
        new = set(tgt) - set(cur)
        gone = set(cur) - set(tgt)
        added += len(new)
        nbytes += len(new) * int(sizes.get(tp, 0))
        touched |= new | gone
        if cur and tgt and cur[0] != tgt[0]:
            leaders += 1
            touched |= {cur[0], tgt[0]}
    per_broker = planned_broker_bytes((cur, tgt, int(sizes.get(tp, 0))) for tp, cur, tgt in rows)
    return PlanSummary(
        moves=len(rows),
        replica_moves=added,
        leader_changes=leaders,
        bytes_to_move=nbytes,
        brokers_touched=tuple(sorted(touched)),
        per_broker=per_broker,
        problems=tuple(str(p) for p in problems),
    )


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


# ---- the ETA over the run, beside the truth (can the ETA be trusted?) -----------------------


@dataclass(frozen=True)
class EtaSeries:
    """The run's ETA at each ``sample`` (seconds since the first event): the estimate, its
    range, and — once the run finished with every move done — the time that was really
    left (the last ``completed`` minus the sample's time); ``errors``: |ETA - truth| / truth
    of the samples from ``FROM_MOVED`` of the bytes on (what bench_eta scores)."""

    t: list[float]
    eta: list[float | None]
    low: list[float | None]
    high: list[float | None]
    truth: list[float | None]
    moved: list[float]
    finish_t: float | None

    def errors(self, from_moved: float = 0.25) -> list[float]:
        return [
            abs(e - tr) / tr
            for e, tr, m in zip(self.eta, self.truth, self.moved, strict=True)
            if e is not None and tr is not None and tr > 0 and m >= from_moved
        ]

    def held(self, from_moved: float = 0.25) -> float | None:
        """The share of those samples whose range held the truth (None without one)."""
        rows = [
            lo <= tr <= hi
            for lo, hi, tr, m in zip(self.low, self.high, self.truth, self.moved, strict=True)
            if lo is not None and hi is not None and tr is not None and tr > 0 and m >= from_moved
        ]
        return sum(rows) / len(rows) if rows else None


def eta_series(events: Iterable[Mapping[str, Any]], max_points: int = MAX_POINTS) -> EtaSeries:
    """The ETA of a run's ``sample`` events beside the truth, from its journal (a postmortem:
    how far off the estimate was, and when). A run that did not finish done has no truth."""
    evs = sorted_events(events)
    t0 = float(evs[0]["ts"]) if evs else 0.0
    done = any(e.get("event") == "run_finished" and e.get("state") == "done" for e in evs)
    ends = [float(e["ts"]) for e in evs if e.get("event") == "completed"]
    finish = max(ends) if done and ends else None
    rows = []
    for e in evs:
        if e.get("event") != "sample" or not num(e.get("bytes_total")):
            continue
        ts = float(e["ts"])
        rng = e.get("eta_range_s") if isinstance(e.get("eta_range_s"), list) else None
        rows.append(
            (
                ts - t0,
                num(e.get("eta_s")),
                num(rng[0]) if rng and len(rng) == 2 else None,
                num(rng[1]) if rng and len(rng) == 2 else None,
                None if finish is None else finish - ts,
                1.0 - (num(e.get("bytes_left")) or 0.0) / float(e["bytes_total"]),
            )
        )
    rows = downsample(rows, max_points)
    return EtaSeries(
        t=[r[0] for r in rows],
        eta=[r[1] for r in rows],
        low=[r[2] for r in rows],
        high=[r[3] for r in rows],
        truth=[r[4] for r in rows],
        moved=[r[5] for r in rows],
        finish_t=None if finish is None else finish - t0,
    )


def duration(seconds: float | None) -> str:
    """``1m02s`` / ``1h02m03s`` (one convention for every time the panel shows)."""
    if seconds is None:
        return "?"
    s = max(0, int(round(seconds)))
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s"
    return f"{s // 60}m{s % 60:02d}s"
