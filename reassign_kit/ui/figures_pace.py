"""The adaptive pace's decisions as series ("the panel charts rate, latency and the
objective over time"), from a run's journal (pure: events in, bounded values out).

An adaptive run (``--pace adaptive``) journals ``pace_started`` (objective, floor, ceiling,
start rate), a ``pace_decision`` for every change with the signals behind it (``broker``,
``old_rate`` -> ``new_rate``, ``cause``, ``reason``, ``signals.produce_p99_ms`` /
``limit_ms``), and a ``pace_sample`` every sample interval (per broker ``rate``,
``produce_p99_ms``, ``limit_ms``; ``paused``). Times are seconds since the journal's first
event: the same origin as the progress and ETA series, so the charts line up. Events are read
leniently (a journal cut short, a field missing, a value of the wrong type is skipped).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .figures import downsample
from .figures_events import MAX_POINTS, MAX_TABLE_ROWS, num, sorted_events

MAX_PACE_BROKERS = 24  # brokers drawn at most (the ones with the most decisions first)
MAX_MARKERS = 400  # decision markers at most (the newest)
MAX_PAUSES = 50  # paused spans shaded at most (the newest)
PACE_ROWS = MAX_TABLE_ROWS  # the decisions table's length


@dataclass(frozen=True)
class PaceDecision:
    """One journaled decision: ``t`` seconds since the first event, ``ts`` the epoch."""

    t: float
    ts: float
    action: str
    cause: str
    reason: str
    broker: int | None = None
    old_rate: float | None = None
    new_rate: float | None = None
    p99_ms: float | None = None
    limit_ms: float | None = None


@dataclass(frozen=True)
class PaceSeries:
    """Per broker: its rate over time (bytes/s; a step line, held to ``end``) and the produce
    p99 the controller saw (ms); the objective (``objective`` as stated, ``limits`` per
    broker in ms), the decisions (all of them, in time order: the table and the markers take
    the newest), the spans new submissions were paused."""

    adaptive: bool = False
    objective: str | None = None
    floor: float | None = None
    ceiling: float | None = None
    rates: dict[int, tuple[list[float], list[float]]] = field(default_factory=dict)
    p99: dict[int, tuple[list[float], list[float]]] = field(default_factory=dict)
    limits: dict[int, float] = field(default_factory=dict)
    decisions: list[PaceDecision] = field(default_factory=list)
    pauses: list[tuple[float, float]] = field(default_factory=list)
    end: float = 0.0
    t0: float | None = None
    brokers_hidden: int = 0

    @property
    def broker_decisions(self) -> list[PaceDecision]:
        return [d for d in self.decisions if d.broker is not None]


def _broker(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and v.strip().lstrip("-").isascii() and v.strip().lstrip("-").isdigit():
        return int(v)
    return None


def is_adaptive(events: Iterable[Mapping[str, Any]]) -> bool:
    """Whether the journal is of an adaptive run (its options say so, or it started the
    pace): the panel shows the pace's chart for it, and only for it."""
    for e in events:
        kind = e.get("event")
        if kind in ("pace_started", "pace_decision"):
            return True
        if kind == "run_started":
            opts = e.get("options")
            if isinstance(opts, Mapping) and opts.get("pace") == "adaptive":
                return True
    return False


def pace_series(
    events: Iterable[Mapping[str, Any]],
    now: float | None = None,
    max_points: int = MAX_POINTS,
    max_brokers: int = MAX_PACE_BROKERS,
) -> PaceSeries:
    """The pace of the run in ``events`` (see the module docstring). ``now`` (epoch seconds):
    a run still going draws its rates up to it; else up to the last event."""
    evs = sorted_events(events)
    if not evs:
        return PaceSeries()
    t0 = float(evs[0].get("ts") or 0.0)
    started: Mapping[str, Any] = next((e for e in evs if e.get("event") == "pace_started"), {})
    t_start = float(started["ts"]) - t0 if started else None
    start_rate = num(started.get("start_rate"))
    pts = _Points(t0, t_start)
    for e in evs:
        kind = e.get("event")
        t = float(e.get("ts") or 0.0) - t0
        if kind == "pace_sample":
            pts.sample(e, t)
        elif kind == "pace_decision":
            pts.decision(e, t)
    last = float(evs[-1].get("ts") or 0.0) - t0
    end = max(last, (now - t0) if now is not None else last)
    if pts.paused_at is not None:
        pts.pauses.append((pts.paused_at, end))
    every = sorted(set(pts.rate) | set(pts.p99))
    shown = _shown(pts.decisions, every, max_brokers)
    rates: dict[int, tuple[list[float], list[float]]] = {}
    for b in shown:
        line = sorted(pts.rate.get(b, []), key=lambda p: p[0])
        if not line and start_rate is not None and t_start is not None:
            line = [(t_start, start_rate)]
        if line and line[-1][0] < end:
            line.append((end, line[-1][1]))  # the step line holds to the end (or now)
        line = downsample(line, max_points)
        rates[b] = ([p[0] for p in line], [p[1] for p in line])
    p99: dict[int, tuple[list[float], list[float]]] = {}
    for b in shown:
        line = downsample(sorted(pts.p99.get(b, {}).items()), max_points)
        if line:
            p99[b] = ([p[0] for p in line], [p[1] for p in line])
    return PaceSeries(
        adaptive=is_adaptive(evs),
        objective=str(started["objective"]) if started.get("objective") is not None else None,
        floor=num(started.get("floor")),
        ceiling=num(started.get("ceiling")),
        rates=rates,
        p99=p99,
        limits={b: v for b, v in pts.limits.items() if b in shown},
        decisions=pts.decisions,
        pauses=pts.pauses[-MAX_PAUSES:],
        end=end,
        t0=t0,
        brokers_hidden=len(every) - len(shown),
    )


def _shown(decisions: list[PaceDecision], every: list[int], max_brokers: int) -> list[int]:
    """The brokers drawn: those with the most decisions first (then by id) when there are
    too many."""
    count: dict[int, int] = {}
    for d in decisions:
        if d.broker is not None:
            count[d.broker] = count.get(d.broker, 0) + 1
    return sorted(sorted(every, key=lambda b: (-count.get(b, 0), b))[:max_brokers])


class _Points:
    """What the journal's pace events say, in order: each broker's rate steps and p99 points,
    its objective, the decisions and the paused spans (``t`` seconds since ``t0``)."""

    def __init__(self, t0: float, t_start: float | None) -> None:
        self.t0, self.t_start = t0, t_start
        self.rate: dict[int, list[tuple[float, float]]] = {}
        self.p99: dict[int, dict[float, float]] = {}
        self.limits: dict[int, float] = {}
        self.decisions: list[PaceDecision] = []
        self.pauses: list[tuple[float, float]] = []
        self.paused_at: float | None = None

    def _seen(self, b: int, t: float, p99: Any, limit: Any) -> None:
        v, lim = num(p99), num(limit)
        if v is not None:
            self.p99.setdefault(b, {})[t] = v
        if lim is not None:
            self.limits[b] = lim

    def sample(self, e: Mapping[str, Any], t: float) -> None:
        per = e.get("brokers")
        for key, row in per.items() if isinstance(per, Mapping) else ():
            b = _broker(key)
            if b is None or not isinstance(row, Mapping):
                continue
            r = num(row.get("rate"))
            if r is not None:
                self.rate.setdefault(b, []).append((t, r))
            sig_t = num(e.get("signal_ts"))
            self._seen(b, t if sig_t is None else sig_t - self.t0, row.get("produce_p99_ms"),
                       row.get("limit_ms"))  # fmt: skip

    def decision(self, e: Mapping[str, Any], t: float) -> None:
        sig = e.get("signals") if isinstance(e.get("signals"), Mapping) else {}
        b = _broker(e.get("broker"))
        action = str(e.get("action") or "?")
        d = PaceDecision(
            t=t,
            ts=float(e.get("ts") or 0.0),
            action=action,
            cause=str(e.get("cause") or action),
            reason=str(e.get("reason") or ""),
            broker=b,
            old_rate=num(e.get("old_rate")),
            new_rate=num(e.get("new_rate")),
            p99_ms=num(sig.get("produce_p99_ms")),
            limit_ms=num(sig.get("limit_ms")),
        )
        self.decisions.append(d)
        if b is not None:
            pts = self.rate.setdefault(b, [])
            t_start = self.t_start
            if not pts and d.old_rate is not None:  # the rate it had before
                pts.append((t_start if t_start is not None and t_start <= t else t,
                            d.old_rate))  # fmt: skip
            if d.new_rate is not None:
                pts.append((t, d.new_rate))
            sig_t = num(sig.get("ts"))
            self._seen(b, t if sig_t is None or sig_t == 0 else sig_t - self.t0, d.p99_ms,
                       d.limit_ms)  # fmt: skip
        elif action == "pause" and self.paused_at is None:
            self.paused_at = t
        elif action == "resume" and self.paused_at is not None:
            self.pauses.append((self.paused_at, t))
            self.paused_at = None


# ---- the decisions table ------------------------------------------------------------------


def _rates(old: float | None, new: float | None) -> str:
    """``0.24 → 0.12 MiB/s``: one unit for both (KiB/s below 0.1 MiB/s), so that a change
    reads at a glance."""
    top = max(v for v in (old, new, 0.0) if v is not None)
    unit, name = (1024 * 1024, "MiB/s") if top >= 0.1 * 1024 * 1024 else (1024, "KiB/s")

    def one(v: float | None) -> str:
        return "?" if v is None else f"{v / unit:.2f}" if unit > 1024 else f"{v / unit:.1f}"

    return f"{one(old)} → {one(new)} {name}"


def _signal(d: PaceDecision) -> str:
    if d.p99_ms is not None:
        lim = f" (limit {d.limit_ms:.1f} ms)" if d.limit_ms is not None else ""
        return f"p99 {d.p99_ms:.1f} ms{lim}"
    return d.reason


def decision_rows(series: PaceSeries, limit: int = PACE_ROWS) -> tuple[list[dict[str, str]], int]:
    """The table under the pace's chart: the newest ``limit`` decisions first (time, broker,
    rate before -> after, cause, signal), and how many older ones are not shown."""
    newest = list(reversed(series.decisions))[: max(0, limit)]
    rows = []
    for d in newest:
        clock = _dt.datetime.fromtimestamp(d.ts, _dt.UTC).strftime("%H:%M:%S")
        rows.append(
            {
                "time": f"{clock} (+{d.t:.0f}s)",
                "broker": "all" if d.broker is None else str(d.broker),
                "rate": _rates(d.old_rate, d.new_rate) if d.broker is not None else d.action,
                "cause": d.cause,
                "signal": _signal(d)[:160],
            }
        )
    return rows, len(series.decisions) - len(rows)
