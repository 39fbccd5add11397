"""The adaptive pace: per-broker replication rates that hold a produce-latency
objective, from broker health samples (``health.signals``). Pure: samples and the clock come
in, decisions go out; no I/O, no threads.

Per broker (Cruise Control's concurrency adjuster and TCP's AIMD, at poll speed instead of
every few minutes):

- **decrease** (multiplicative, ``× beta``, never below the floor) when a sample shows that
  broker's produce p99 over the objective — its lower confidence bound where the source
  gives one (the probe: a p99 read on ~50 messages, their worst, is over an objective the
  broker holds in 40% of its windows: one such reading must not halve a target's rate;
  figures in bench/RESULTS.md, "Figures behind comments in the code") — once it has read over
  in every sample for ``persist_s`` (one cycle of Kafka's replication quota, 11 s: the
  load's latency is loud and quiet in that rhythm at every throttle, ``PERSIST_S``; and
  longer than the probe's 5-s window, in which a burst of latency sits for its whole
  length), and again at most once per ``settle_s``
  (the health window must first see the lower rate; without it one slow spell would halve the
  rate to the floor before it took effect);
- **increase** (never above the ceiling) only on a *fresh* sample — taken at least ``settle_s``
  after that broker's last change and after the run's moves first loaded it (the start rate is
  a change too: a probe window of messages sent before the moves' fetchers ran says nothing of
  their load), not degraded, with a p99 within the objective at every measured fresh sample for
  ``raise_persist_s`` (6 s: one quiet window between loud ones is not a pace to raise; the
  probe's p99 of ~50 messages is their worst, one spike or none): doubled until that broker's
  first decrease (TCP's slow start: a move of a few seconds is over before an additive ramp
  from mid-range reaches a ceiling the cluster can take), additive (``+ step``) after it. With
  *room* — every p99 read under the run's load since that broker's last change at most ``ROOM``
  of its limit — the persistence scales down to nothing (the fresh windows are the evidence),
  slow start multiplies by limit / worst p99 (2 to ``MAX_JUMP``) and the ramp writes it in that
  share of its ten steps: the pace pays no fixed toll where nothing objects. Without room, a
  raise goes no further than ``AIM`` of the limit by the same linear reading of the samples it
  rests on (their worst x new / old): doubling from over half the limit is a breach foretold,
  and a breach is not undone by a decrease (Kafka's quota keeps its loud second in its 11-s
  rhythm at any lower rate); from ``AIM`` of the limit up, no raise;
- **hold** otherwise: a value not measured (None) or a degraded source never makes the pace
  faster (a lost signal is not a good signal).

With ``cap_max`` (``--max-moves-per-broker``: "the caps as maxima"), each broker also has a
cap on the moves through it (``caps``, the scheduler's ``Caps.broker_caps``), from one to
``cap_max``: it starts at one (``cap_start``) and grows in the same decision as the rate, on
its evidence, only while the moves through the broker copy at the rate they were given
(``bound``: the bytes the run's progress samples read, ``pacing/copying``): doubled with each
raise in slow start while the readings it rests on are under ``AIM`` of the limit, after a
first decrease by the room as the rate (limit / worst p99, 2 to ``MAX_JUMP``; by one without
room) and near the limit no further than ``AIM`` of it (to the nearest move). Before a window
that saw the run's load (the first ``settle_s`` after its moves reached the broker) the cap of
a broker within the objective doubles on the bytes alone, its rate kept: the moves it adds
take no more than the rates written, which bind the copy (the bytes a run without caps starts
with), where waiting for that window held one move in the cluster. Where the copy
moves well short of its rates (bound by the disks: bench-pacing's sandbox) another move only
shares the bytes and puts its own on the same disks: the cap holds. A decrease cuts the rate
first (it bounds the bytes from the next second, where a smaller cap only holds back new moves
while those in flight go on), and the cap once the rate is at the floor — Cruise Control's
concurrency adjuster, per broker and at poll speed (bench/RESULTS.md: the pace ladder,
bench-pacing).

A **pause** of new submissions (moves in flight go on; nothing is cancelled) holds while any
partition outside the plan is under min ISR: the cluster is short of redundancy for someone
else's data, and more copying can only lengthen that. An unmeasured ISR view keeps the last
state.

The objective is absolute (``50ms``) or relative to a baseline (``+20ms``: each broker's p99
measured before the first move, the median of its samples; the cluster's median baseline for
a broker with none). Every change is a ``Decision`` in words, with the signals behind it.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cluster.quota import QUOTA_WINDOW_S, QUOTA_WINDOWS
from ..errors import UsageError
from ..health.signals import HealthSample
from ..model import TopicPartition
from .ramp import RAMP_STEPS

CAUSES = {
    "increase": "p99 within the objective",
    "decrease": "p99 over the objective",
    "pause": "outside the plan under min ISR",
    "resume": "none outside the plan under min ISR",
    "baseline": "baseline measured",
}
REACTION_S = 30.0  # the bound: a signal over the objective is acted on within this
# within this long before a raise: longer than the probe's 5-s window
RAISE_PERSIST_S = 6.0
# over this long before a decrease: one cycle of Kafka's replication quota, an average over
# 11 one-second windows that lets the fetchers copy at full speed until the average reaches
# the throttle, then not at all. The load's latency follows that rhythm at every throttle, so
# a loud phase is not a pace to slow: it comes back at any lower rate. Over for a whole cycle
# is (figures: bench/RESULTS.md, "Figures behind comments in the code").
PERSIST_S = float(QUOTA_WINDOWS * QUOTA_WINDOW_S)
# Room: a broker whose worst p99 since its last change is at most this share of its limit
# needs no persistence beyond its fresh windows before a raise (above it, raise_persist_s
# scaled up to the whole at the limit). A raise multiplies the rate by limit / worst (at
# least 2 in slow start, at most MAX_JUMP: latency linear in the rate, with a base, reads at
# most the limit at the new rate) and reaches it in that share of the ramp's ten steps: a
# run nothing objects to reaches its ceiling seconds after the first window that saw its
# load instead of paying a fixed start-up toll (figures: bench/RESULTS.md, bench_pace_ladder).
ROOM = 0.5
MAX_JUMP = 4.0
# A raise aims at no more than this share of the limit where the broker has no room: latency
# linear in the rate reads worst x new / old, so doubling (slow start) from over half the limit
# is a breach foretold. Kafka's replication quota keeps a breach's loud second in its 11-s
# rhythm at any lower rate, so the pace must not overshoot in the first place: a faster
# decrease only adds time over.
AIM = 0.9


def cap_start(cap_max: int) -> int:
    """Each broker's first cap on moves: one, the bytes of a run without caps' first seconds.
    A start of two put twice those bytes on the disks where they, not the throttle, bound the
    copy (bench-pacing: ~5 s more over the objective per run); the cap grows once the bytes
    show the rate binds (``bound``)."""
    return min(1, cap_max)


def jump(room: float) -> float:
    """Slow start's factor for a rate: limit / worst (latency linear in the load reads at most
    the limit after it), 2 at least, ``MAX_JUMP`` at most."""
    return min(MAX_JUMP, max(2.0, 1 / room)) if room > 0 else MAX_JUMP


def raised_cap(
    cap: int | None,
    cap_max: int | None,
    room: float,
    near: float,
    slow_start: bool,
    aim: float | None = AIM,
) -> int | None:
    """A broker's cap on moves in the decision that raises its rate: doubled in slow start
    while the readings the raise rests on (``near``, of the limit) are under ``aim``; after a
    first decrease by the room as the rate (by one without it), near the limit no further
    than ``aim`` of it."""
    if cap is None or cap_max is None or cap >= cap_max:
        return cap
    if slow_start:
        # by the room as the rate (x2 at least), not by the aim's linear reading: the aim held
        # a tight broker's cap where it started, and a cap only doubled left a third of a short
        # run to one move in the whole cluster (bench/RESULTS.md)
        factor = jump(room) if room <= ROOM else 2.0
        return cap if aim is not None and near >= aim else min(cap_max, math.floor(cap * factor))
    factor = jump(room) if room <= ROOM else (cap + 1) / cap
    if aim is not None and near > ROOM:
        factor = min(factor, aim / near)
    # to the nearest whole move: rounded down, a cap of 3 stayed 3 at any reading over 0.68
    # of the limit, and a move held back started later into the quota's credit
    return min(cap_max, max(cap, math.floor(cap * factor + 0.5)))


_SLO = re.compile(r"^\s*(\+)?\s*(\d+(?:\.\d+)?)\s*(ms|s)?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Objective:
    """Produce p99 in ms: ``limit_ms`` absolute, or ``baseline + delta_ms`` when relative."""

    value_ms: float
    relative: bool = False

    @classmethod
    def parse(cls, text: str, name: str = "--slo-produce-p99") -> Objective:
        """``50ms``, ``50`` (ms), ``0.05s``; ``+20ms`` relative to the baseline."""
        m = _SLO.match(str(text))
        if not m:
            raise UsageError(
                f"{name} must be a latency like 50ms, 0.05s or +20ms (relative to the "
                f"baseline measured before the first move), not {text!r}"
            )
        v = float(m.group(2)) * (1000.0 if (m.group(3) or "ms").lower() == "s" else 1.0)
        if not v > 0:
            raise UsageError(f"{name} must be > 0 ms, not {text!r}")
        return cls(v, bool(m.group(1)))

    def __str__(self) -> str:
        return f"{'+' if self.relative else ''}{self.value_ms:g}ms"

    def limit(self, baseline_ms: float | None) -> float | None:
        """The p99 limit for a broker with this baseline (None: unknown yet)."""
        if not self.relative:
            return self.value_ms
        return None if baseline_ms is None else baseline_ms + self.value_ms


@dataclass(frozen=True)
class Bounds:
    """Rates in bytes/s: ``floor`` <= every broker's rate <= ``ceiling`` (``--throttle``)."""

    floor: int
    ceiling: int

    def __post_init__(self) -> None:
        if not 0 < self.floor <= self.ceiling:
            raise UsageError(
                f"--throttle-floor ({self.floor}) must be > 0 and <= --throttle ({self.ceiling})"
            )

    def clamp(self, rate: float) -> int:
        return int(min(self.ceiling, max(self.floor, rate)))


@dataclass(frozen=True)
class Decision:
    """One change of the pace: a broker's rate (``broker`` set) or the run's pause
    (``broker`` None, ``action`` pause / resume). ``signals``: what it was decided on."""

    ts: float
    action: str  # increase | decrease | pause | resume | baseline
    reason: str
    broker: int | None = None
    old_rate: int | None = None
    new_rate: int | None = None
    signals: Mapping[str, Any] = field(default_factory=dict)
    kind: str | None = None  # the cause, where the action alone does not say it
    old_cap: int | None = None  # the broker's cap on moves (--max-moves-per-broker), if any
    new_cap: int | None = None
    ramp_steps: int | None = None  # a raise of the rate: the 1-s steps it is written in

    @property
    def cause(self) -> str:
        """The reason's kind, from a fixed few (a metric's label: the reason has numbers)."""
        return self.kind or CAUSES.get(self.action, self.action)

    def to_event(self) -> dict[str, Any]:
        """The journal event's fields (``pace_decision``)."""
        out: dict[str, Any] = {"action": self.action, "reason": self.reason, "cause": self.cause}
        if self.broker is not None:
            out.update(broker=self.broker, old_rate=self.old_rate, new_rate=self.new_rate)
        if self.new_cap is not None:
            out.update(old_cap=self.old_cap, new_cap=self.new_cap)
        if self.ramp_steps is not None:
            out["ramp_steps"] = self.ramp_steps
        out["signals"] = dict(self.signals)
        out["signal_ts"] = self.signals.get("ts")
        return out


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f} ms"


class Controller:
    """The adaptive pace of one run (see the module docstring). ``brokers``: the brokers
    whose rate it sets (the plan's); ``plan_partitions``: partitions under min ISR because
    the run moves them do not pause it. Start each broker at ``start`` (default: the middle
    of the bounds) and call ``step(sample, now)`` at every poll."""

    def __init__(
        self,
        objective: Objective,
        bounds: Bounds,
        brokers: Iterable[int],
        plan_partitions: Iterable[TopicPartition] = (),
        *,
        start: int | None = None,
        step: int | None = None,
        beta: float = 0.5,
        settle_s: float = 5.0,
        persist_s: float | None = None,
        raise_persist_s: float | None = None,
        stale_s: float = 15.0,
        baseline_samples: int = 3,
        cap_max: int | None = None,
        aim: float | None = AIM,
    ):
        if not 0 < beta < 1:
            raise UsageError(f"the pace's decrease factor must be in (0, 1), got {beta}")
        if not 0 < settle_s < REACTION_S:
            raise UsageError(f"settle_s must be in (0, {REACTION_S:g}) s, got {settle_s}")
        if persist_s is None:  # 11 s, or what the reaction bound leaves after settle_s
            persist_s = min(PERSIST_S, REACTION_S - settle_s)
        if not 0 <= persist_s <= REACTION_S - settle_s:
            raise UsageError(
                f"persist_s must be in [0, {REACTION_S - settle_s:g}] s (with settle_s "
                f"{settle_s:g} s, a signal is acted on within {REACTION_S:g} s), got {persist_s}"
            )
        self.persist_s = float(persist_s)
        if raise_persist_s is None:
            raise_persist_s = min(RAISE_PERSIST_S, self.persist_s)
        if raise_persist_s < 0:
            raise UsageError(f"raise_persist_s must be >= 0 s, got {raise_persist_s}")
        self.raise_persist_s = float(raise_persist_s)
        if aim is not None and not 0 < aim <= 1:
            raise UsageError(f"the pace's aim must be in (0, 1] of the limit, got {aim}")
        self.aim = aim  # None: a raise may go past what the latency measured allows
        # per-broker caps on moves (--max-moves-per-broker the most): from one, raised with
        # the rate where the copy is bound by it, halved at the floor; none without the option
        self.cap_max = cap_max
        self.caps: dict[int, int] = {}
        self.bound: frozenset[int] = frozenset()  # the last step's: whose caps may rise
        self.over_since: dict[int, float] = {}  # broker -> first sample of its run over
        self.objective, self.bounds = objective, bounds
        self.beta, self.settle_s, self.stale_s = beta, float(settle_s), float(stale_s)
        self.step_bps = int(step or max(1, (bounds.ceiling - bounds.floor) // 10))
        first = bounds.clamp(start if start is not None else (bounds.floor + bounds.ceiling) / 2)
        self.rates: dict[int, int] = {b: first for b in sorted(set(brokers))}
        if cap_max:
            self.caps = dict.fromkeys(self.rates, cap_start(cap_max))
        self.plan_partitions = frozenset(plan_partitions)
        self.changed_at: dict[int, float] = {}  # broker -> time of its last rate change
        # broker -> when the run's moves first loaded it at the start rate (a raise needs a
        # sample whose window saw that load: ``_broker``)
        self.loaded_since: dict[int, float] = {}
        self.within_since: dict[int, float] = {}  # broker -> first fresh sample within since
        self.held_worst: dict[int, float] = {}  # broker -> its worst p99 in that run of samples
        self.worst: dict[int, float] = {}  # broker -> its worst p99 since its last change
        self.ramp_steps: dict[int, int] = {}  # broker -> the ramp's steps of its last raise
        self.last_decrease: dict[int, float] = {}
        self.paused = False
        self.pause_reason = ""
        self.baseline_samples = baseline_samples
        self._baseline_seen: dict[int, list[float]] = {}
        self.baseline: dict[int, float] | None = None if objective.relative else {}

    # ---- the baseline (relative objectives) ---------------------------------------------

    @property
    def needs_baseline(self) -> bool:
        return self.baseline is None

    def observe_baseline(self, sample: HealthSample) -> None:
        """A sample taken before the first move (relative objective only)."""
        if sample.degraded:
            return
        for b, h in sample.brokers.items():
            if b in self.rates and h.produce_p99_ms is not None:
                self._baseline_seen.setdefault(b, []).append(h.produce_p99_ms)

    def baseline_ready(self) -> bool:
        seen = self._baseline_seen
        return bool(self.rates) and all(
            len(seen.get(b, ())) >= self.baseline_samples for b in self.rates
        )

    def fix_baseline(self, now: float) -> Decision:
        """Close the baseline: each broker's median p99 (the cluster's median for a broker
        with no sample; none at all: the objective stays unknown and the pace never rises)."""
        per = {b: statistics.median(v) for b, v in self._baseline_seen.items() if v}
        overall = statistics.median(per.values()) if per else None
        self.baseline = {
            b: per.get(b, overall) for b in self.rates if per.get(b, overall) is not None
        }
        limits = {str(b): self.objective.limit(v) for b, v in sorted(self.baseline.items())}
        missing = [b for b in self.rates if b not in self.baseline]
        reason = f"objective {self.objective} over the baseline: limits {limits} ms" + (
            f"; no baseline for brokers {missing}: their pace never rises" if missing else ""
        )
        return Decision(
            now,
            "baseline",
            reason,
            signals={"baseline_ms": {str(b): v for b, v in sorted(self.baseline.items())}},
        )

    def limit_of(self, broker: int) -> float | None:
        """Broker ``broker``'s p99 limit in ms (None: not known yet)."""
        if self.baseline is None:
            return None
        return self.objective.limit(self.baseline.get(broker))

    # ---- one step ---------------------------------------------------------------------------

    def set_ceiling(self, ceiling: int) -> list[Decision]:
        """A new ceiling (the operator's ``set_throttle``): rates above it come down to it."""
        floor = min(self.bounds.floor, ceiling)
        self.bounds = Bounds(floor, ceiling)
        self.step_bps = int(max(1, (ceiling - floor) // 10))
        out = []
        for b, r in self.rates.items():
            if r > ceiling:
                self.rates[b] = ceiling
                out.append(
                    Decision(
                        0.0,
                        "decrease",
                        "the ceiling was lowered",
                        b,
                        r,
                        ceiling,
                        kind="ceiling lowered",
                    )
                )
        return out

    def set_cap_max(self, cap_max: int | None) -> None:
        """A new ``--max-moves-per-broker`` (the operator's ``set_caps``): caps above it come
        down to it; None: the brokers' caps go (the operator lifted the cap)."""
        self.cap_max = cap_max
        self.caps = (
            {b: min(self.caps.get(b, cap_max), cap_max) for b in self.rates} if cap_max else {}
        )

    def step(
        self,
        sample: HealthSample | None,
        now: float,
        busy: Iterable[int] | None = None,
        bound: Iterable[int] = (),
    ) -> list[Decision]:
        """The decisions this sample (None: the source gave nothing) calls for, applied to
        ``rates`` / ``paused``. ``busy``: the brokers the run's moves in flight copy through
        now (None: all); only those are raised — a latency measured without the run's load
        on a broker says nothing about a faster rate there. ``bound``: the brokers whose moves
        copy at their rate (``copying.CopyRates``); only their caps on moves rise."""
        out: list[Decision] = []
        self.bound = frozenset(bound)
        if sample is None:
            return out
        out += self._pause(sample, now)
        if self.baseline is None:
            return out  # no objective yet: nothing to hold the rates to
        stale = now - sample.ts > self.stale_s
        loaded = set(self.rates) if busy is None else set(busy)
        for b in loaded:
            self.loaded_since.setdefault(b, now)
        for b in self.rates:
            d = self._broker(b, sample, now, stale, b in loaded)
            if d is not None:
                out.append(d)
        return out

    def _broker(
        self, b: int, sample: HealthSample, now: float, stale: bool, loaded: bool
    ) -> Decision | None:
        h = sample.brokers.get(b)
        p99 = h.produce_p99_ms if h is not None else None
        limit = self.limit_of(b)
        if p99 is None or limit is None:
            self._unheld(b)  # an unmeasured sample held nothing
            return None  # not measured: hold (never faster)
        low = h.produce_p99_low_ms if h is not None else None
        if loaded:  # what the broker reads under the run's load (idle, it says nothing)
            self.worst[b] = max(self.worst.get(b, 0.0), p99)
        over = p99 > limit and (low is None or low > limit)
        if not over:
            self.over_since.pop(b, None)
        if p99 > limit or sample.degraded:
            self._unheld(b)  # a raise needs the objective held since
        if over:
            return self._decrease(b, sample, now, p99, low, limit)
        if p99 > limit:
            return None  # over, but within what a few messages' p99 reads by chance: hold
        return self._increase(b, sample, now, p99, limit, stale, loaded)

    def _decrease(
        self,
        b: int,
        sample: HealthSample,
        now: float,
        p99: float,
        low: float | None,
        limit: float,
    ) -> Decision | None:
        """Broker ``b`` over the objective: once it has been for ``persist_s`` and the last
        decrease has settled, its rate cut by ``beta``; at the floor, its moves at once."""
        old = self.rates[b]
        first = self.over_since.setdefault(b, sample.ts)
        if sample.ts - first < self.persist_s:
            return None  # not yet: a burst that passes is not a pace to slow
        cap = self.caps.get(b)
        if old <= self.bounds.floor and (cap is None or cap <= 1):
            return None
        if sample.ts - self.last_decrease.get(b, -1e18) < self.settle_s:
            return None  # the last decrease has not reached the window yet
        if old > self.bounds.floor:  # the rate first: it bounds the bytes from the next second
            new, new_cap, how = self.bounds.clamp(old * self.beta), cap, ""
        else:  # at the floor: the moves at once
            assert cap is not None
            new, new_cap = old, max(1, int(cap * self.beta))
            how = f": its moves at once {cap} -> {new_cap}, its rate at the floor"
        self.rates[b] = new
        if new_cap is not None:
            self.caps[b] = new_cap
        self.worst.pop(b, None)
        self.changed_at[b] = self.last_decrease[b] = max(now, sample.ts)
        bound = "" if low is None else f" (at least {_ms(low)} at 95%)"
        return Decision(
            now,
            "decrease",
            f"produce p99 {_ms(p99)}{bound} over the objective {_ms(limit)}"
            f" for {sample.ts - first:.0f} s{how}",
            b,
            old,
            new,
            decision_signals(b, sample, self.limit_of(b)),
            old_cap=cap,
            new_cap=new_cap,
        )

    def _increase(
        self,
        b: int,
        sample: HealthSample,
        now: float,
        p99: float,
        limit: float,
        stale: bool,
        loaded: bool,
    ) -> Decision | None:
        """Broker ``b`` within the objective: a raise once a fresh sample, taken with the
        run's load on it, has held it for ``raise_persist_s`` since its last change settled;
        its rate (by the room, doubled until a first decrease) and its moves at once by the
        same evidence (``_rate_raise``, ``raised_cap``)."""
        old = self.rates[b]
        since = sample.ts - self.changed_at.get(b, -1e18)
        cap = self.caps.get(b)
        cap_room = cap is not None and self.cap_max is not None and cap < self.cap_max
        if stale or sample.degraded or since < self.settle_s:
            return None
        if sample.ts - self.loaded_since.get(b, sample.ts) < self.settle_s:
            # its window holds latency from before the run's load reached it (none at all:
            # the moves through it only remove it): its rate holds, its cap may rise on the
            # bytes alone
            return self._cap_raise(b, sample, now, p99, limit, loaded)
        held = self.within_since.setdefault(b, sample.ts)
        self.held_worst[b] = max(self.held_worst.get(b, 0.0), p99)
        room = self.worst.get(b, limit) / limit  # the worst since its last change, of the limit
        if sample.ts - held < self.raise_persist_s * min(1.0, max(0.0, (room - ROOM) / ROOM)):
            return None  # within for a moment is not within (with room, the fresh windows are)
        if old >= self.bounds.ceiling and not cap_room:
            return None
        if not loaded:
            return self._cap_raise(b, sample, now, p99, limit, loaded)
        slow_start = b not in self.last_decrease
        near = self.held_worst[b] / limit  # the readings this raise rests on, of the limit
        new, how = self._rate_raise(b, old, room, near, slow_start)
        # more moves at once only where the bytes show the rate binds: elsewhere they share
        # what the copy moves and put their own bytes on the same disks
        new_cap = cap
        if b in self.bound:
            new_cap = raised_cap(cap, self.cap_max, room, near, slow_start, self.aim)
        if new <= old and new_cap == cap:
            return None
        if new_cap != cap:
            assert new_cap is not None
            self.caps[b] = new_cap
            how += f": its moves at once {cap} -> {new_cap}"
        after = f" {since:.0f} s after the last change" if b in self.changed_at else ""
        self.rates[b] = new
        self.changed_at[b] = max(now, sample.ts)
        self._unheld(b)  # the new rate needs its own
        self.worst.pop(b, None)
        return Decision(
            now,
            "increase",
            f"produce p99 {_ms(p99)} within the objective {_ms(limit)}{after}{how}",
            b,
            old,
            new,
            decision_signals(b, sample, self.limit_of(b)),
            old_cap=cap,
            new_cap=new_cap,
            ramp_steps=self.ramp_steps.get(b) if new > old else None,
        )

    def _cap_raise(
        self, b: int, sample: HealthSample, now: float, p99: float, limit: float, loaded: bool
    ) -> Decision | None:
        """Broker ``b`` within the objective on a reading that says nothing of the run's load
        (the moves only remove it, or ``loaded`` before a window saw them): its rate holds,
        its cap rises where its moves copy at a rate (loaded: doubled, no room claimed; the
        moves it adds take at most the rates written, the bytes of a run without caps)."""
        cap = self.caps.get(b)
        slow_start = b not in self.last_decrease
        if cap is None or b not in self.bound or (loaded and not slow_start):
            return None
        near = max(self.held_worst.get(b, 0.0), p99) / limit  # as a raise's readings
        room = 1.0 if loaded else near
        new_cap = raised_cap(cap, self.cap_max, room, near, slow_start, self.aim)
        if new_cap is None or new_cap <= cap:
            return None
        self.caps[b] = new_cap
        self.changed_at[b] = max(now, sample.ts)
        where = "before a window that saw their load" if loaded else "elsewhere"
        return Decision(
            now,
            "increase",
            f"produce p99 {_ms(p99)} within the objective {_ms(limit)}, its moves copying at "
            f"their rate {where}: its moves at once {cap} -> {new_cap}, its rate kept",
            b,
            self.rates[b],
            self.rates[b],
            decision_signals(b, sample, self.limit_of(b)),
            old_cap=cap,
            new_cap=new_cap,
        )

    def _rate_raise(
        self, b: int, old: int, room: float, near: float, slow_start: bool
    ) -> tuple[int, str]:
        """Broker ``b``'s raised rate (``old`` where none) and the words for it: by the room
        (doubled at least in slow start, ``+ step`` after), near the limit no further than
        ``aim`` of it by the readings the raise rests on."""
        if old >= self.bounds.ceiling:
            return old, ""
        want = old * jump(room) if slow_start else old + self.step_bps
        # near the limit, no further than the readings this raise rests on allow (not the
        # worst since the last change: one burst that did not last would bar every raise
        # until the next change)
        if self.aim is not None and near > ROOM:
            want = min(want, old * self.aim / near)
        new = self.bounds.clamp(want)
        if new <= old:
            return old, ""
        how = f" (slow start: x{new / old:.3g} until a first decrease)" if slow_start else ""
        self.ramp_steps[b] = max(2, min(RAMP_STEPS, math.ceil(RAMP_STEPS * room)))
        if room < ROOM:
            how += f", worst p99 {_ms(self.worst.get(b))} since the last change"
        return new, how

    def _unheld(self, b: int) -> None:
        self.within_since.pop(b, None)
        self.held_worst.pop(b, None)

    def _pause(self, sample: HealthSample, now: float) -> list[Decision]:
        if sample.under_min_isr is None:
            return []  # not measured: the last state holds
        outside = sorted(sample.under_min_isr - self.plan_partitions, key=str)
        sig: dict[str, Any] = {
            "ts": sample.ts,
            "source": sample.source,
            "under_min_isr_outside_plan": [str(tp) for tp in outside[:SHOWN]],
            "count": len(outside),
            **elr_signals(sample, outside),
        }
        if outside and not self.paused:
            self.paused = True
            shown = ", ".join(str(tp) for tp in outside[:5]) + (" …" if len(outside) > 5 else "")
            self.pause_reason = (
                f"{len(outside)} partition(s) outside the plan under min ISR"
                f"{elr_words(sig['with_elr'])} ({shown}): "
                "no new submissions until they are back (moves in flight go on)"
            )
            return [Decision(now, "pause", self.pause_reason, signals=sig)]
        if not outside and self.paused:
            self.paused = False
            self.pause_reason = ""
            return [
                Decision(now, "resume", "no partition outside the plan under min ISR", signals=sig)
            ]
        return []


def decision_signals(b: int, sample: HealthSample, limit_ms: float | None) -> dict[str, Any]:
    """What a decision on broker ``b`` rests on: the sample's readings of it and its limit."""
    h = sample.brokers.get(b)
    sig: dict[str, Any] = {"ts": sample.ts, "source": sample.source}
    if h is not None:
        sig.update(
            {
                k: v
                for k, v in (
                    ("produce_p99_ms", h.produce_p99_ms),
                    ("produce_p99_low_ms", h.produce_p99_low_ms),
                    ("produce_p50_ms", h.produce_p50_ms),
                    ("fetch_follower_p99_ms", h.fetch_follower_p99_ms),
                    ("request_handler_idle", h.request_handler_idle),
                    ("under_min_isr", h.under_min_isr),
                )
                if v is not None
            }
        )
    sig["limit_ms"] = limit_ms
    if sample.degraded:
        sig["degraded"] = sample.degraded
    return sig


SHOWN = 20  # partitions named in one journaled decision (the counts are whole)


def elr_signals(sample: HealthSample, outside: list[TopicPartition]) -> dict[str, Any]:
    """What the ISR view said of the partitions outside the plan under min ISR: how many
    have eligible leader replicas (KIP-966; None when the source does not count them, with
    ``elr_unknown`` saying why) and, for the first ``SHOWN``, ISR / min ISR / ELR sizes."""
    detail = sample.isr
    known = detail is not None and sample.elr_unknown is None
    with_elr = None
    if known:
        assert detail is not None
        with_elr = sum(1 for tp in outside if (getattr(detail.get(tp), "elr", None) or 0) > 0)
    out: dict[str, Any] = {"with_elr": with_elr}
    if not known:
        out["elr_unknown"] = sample.elr_unknown or f"the {sample.source} source counts no ELR"
    if detail is not None:
        out["partitions"] = {
            str(tp): {"isr": d.isr, "min_isr": d.min_isr, "elr": d.elr}
            for tp in outside[:SHOWN]
            if (d := detail.get(tp)) is not None
        }
    return out


def elr_words(with_elr: int | None) -> str:
    """The ELR part of a pause's reason: ", 2 with eligible leaders" (KIP-966)."""
    if with_elr is None:
        return ", eligible leaders not reported"
    return f", {with_elr or 'none'} with eligible leaders"


def pace_line(e: Mapping[str, Any]) -> str:
    """A journaled ``pace_decision`` on one line (the CLI's), with the signal behind it."""
    sig = e.get("signals") or {}
    seen = ""
    if sig.get("produce_p99_ms") is not None:
        seen = f" [p99 {sig['produce_p99_ms']:.1f} ms, limit {_ms(sig.get('limit_ms'))}]"
    if e.get("broker") is None:
        return f"pace {e.get('action')}: {e.get('reason')}"
    cap = ""
    if e.get("new_cap") is not None and e.get("new_cap") != e.get("old_cap"):
        cap = f", cap {e.get('old_cap')} -> {e['new_cap']} moves"
    old, new = e.get("old_rate"), e.get("new_rate")
    rate = f"{new} B/s kept" if old == new and cap else f"{old} -> {new} B/s"
    return f"pace broker {e['broker']}: {rate}{cap} ({e.get('action')}): {e.get('reason')}{seen}"
