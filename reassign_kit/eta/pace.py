"""The run's pace (for ``eta.estimate.RunEta``): where the model's assumptions are shown
wrong by the data, the measurement wins. Pure.

At each sample the model, at the throttle (share 1, no quota replay, each completion seen half
a poll after it: ``simulate(on_polls=False)``, a smooth function of the bytes left) says how
many seconds of work were left at a sample up to ``PACE_WINDOW_S`` ago and are left now, and
of them how many copy bytes: the copying done since, over the wall time the model did not
spend waiting, is the run's pace. What is left to copy at that pace, plus what is left to
wait, is the measured ETA; it takes over the model's as the span grows (a prior the
measurement takes over, not an average of two guesses). Why: a model of the share between
samples misses what the cluster does (a stream's first fetch waits, a source bursts the
quota credit of every batch gap: bench/RESULTS.md, bench_eta); the pace counts it and still
follows the plan's shape, which since-start's aggregate rate does not."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..cluster.quota import QUOTA_WINDOW_S, QUOTA_WINDOWS
from .model import Flow

PACE_WINDOW_S = 2 * QUOTA_WINDOWS * QUOTA_WINDOW_S  # two spans of the quota: recent, averaged
PACE_MIN_S = 8.0  # fewer seconds read the start's bursts and first fetches as the pace
# the pace's error is about a poll and a fetch over its span (1/span), the model's about this
# many seconds' worth: they weigh as their inverse variances (0.72 at 8 s, 0.95 at 22 s)
PACE_PRIOR_S = 5.0
# a pace outside this is clipped. Barely above 1: the model copies at the throttle, the
# physical bound; a run measured faster rode Kafka's quota credit (a burst after an idle
# spell), which the windows take back in a hold within a quota span; the 0.1 is a fetch's
# noise over the span (fit half of the held-out shapes: bench/RESULTS.md)
PACE_RANGE = (0.2, 1.1)
# the range holds every finish the run estimated over this many seconds: the estimates' own
# wander is error they carry, which a share measured evenly leaves out of the range
FINISHES_S = 5.0
# after a throttle change the brokers move at a mix of the old and new rates until Kafka's
# quota windows (11 of 1 s) hold only bytes moved at the new one
MIXED_S = float(QUOTA_WINDOWS * QUOTA_WINDOW_S)

# the run's state at a sample: (ts, flows, idle ends, elections, leaders and bytes of the
# queued moves not simulated)
PaceState = tuple[float, list[Flow], dict, Any, int, float]


class RunPace:
    """The states of the last ``PACE_WINDOW_S`` and the pace they give (``value``)."""

    def __init__(self) -> None:
        self.past: list[PaceState] = []
        self.start = -math.inf  # no pace measured before (a throttle change)
        # the run's first sample is not a state to measure from: Kafka's quota, empty as a
        # run starts, lets the fetchers burst before it and holds them back after it
        self.first_seen = False
        self.value: float | None = None
        # the work left at a state of ``past`` (by its id) and the parameters it was
        # simulated with: simulated again only when they changed (a simulation is the
        # heaviest part of a poll that samples)
        self._work: dict[int, tuple[Any, tuple[float, float]]] = {}

    def restart(self, start: float) -> None:
        """The throttle changed: the pace at the old one says nothing of the new one, nor
        does the stall or catch-up while the quota's windows hold the old one's bytes (until
        ``start``)."""
        self.past, self.value, self.start, self._work = [], None, start, {}

    def estimate(
        self,
        state: PaceState,
        work: Callable[[PaceState], tuple[float, float]],
        model: float,
        key: Any = None,
    ) -> float | None:
        """The ETA at the run's pace from ``state`` (now), ``work`` (the model's seconds left
        at a state, and how many of them copy bytes) and ``model`` (the model's own ETA now);
        None before the pace is measured over ``PACE_MIN_S``. ``key``: the parameters
        ``work`` simulates with, to reuse a state's work (None: never reused). The seconds in
        which nothing copies (lags, admin calls, elections) pass at the wall's pace: taken
        out of the span and added, not divided by the pace (a lag divided by it reads long)."""
        ts = state[0]
        if ts < self.start:
            return None
        if not self.first_seen:  # the run's first sample: not a state to measure from
            self.first_seen = True
            return None
        self.past.append(state)
        self.past = [p for p in self.past if p[0] >= ts - PACE_WINDOW_S]
        live = {id(p) for p in self.past}  # an id is only reused once its state is gone
        self._work = {k: v for k, v in self._work.items() if k in live}
        span = ts - self.past[0][0]
        if span < PACE_MIN_S:
            return None

        def of(p: PaceState) -> tuple[float, float]:
            got = self._work.get(id(p))
            if key is not None and got is not None and got[0] == key:
                return got[1]
            value = work(p)
            self._work[id(p)] = (key, value)
            return value

        (before, before_copy), (now, now_copy) = of(self.past[0]), of(state)
        if not all(map(math.isfinite, (before, before_copy, now, now_copy))) or now <= 0:
            return None
        # the wall seconds of the span the model spends not copying (none when what waits
        # grew: a lag measured anew), at most half of it
        waited = (before - before_copy) - (now - now_copy)
        copying = min(span, max(span / 2, span - waited))
        lo, hi = PACE_RANGE
        self.value = min(hi, max(lo, (before_copy - now_copy) / copying))
        w = span**2 / (span**2 + PACE_PRIOR_S**2)
        return w * (now_copy / self.value + (now - now_copy)) + (1 - w) * model


class Finishes:
    """The finish times estimated over the last ``FINISHES_S``: the range holds them all; and
    for ``MIXED_S`` after a throttle change, the way toward the last finish estimated at the
    old throttle that the quota's windows still hold of the old rate."""

    def __init__(self) -> None:
        self.past: list[tuple[float, float]] = []
        self.old: tuple[float, float] | None = None  # (finish at the old throttle, change)

    def restart(self, at: float) -> None:
        """The throttle changed at ``at``: the old one's finishes no longer say where the run
        ends, but for ``MIXED_S`` its brokers move at a mix of both rates (Kafka's quota
        averages the windows of both; a config write may be late on a broker), so the range
        reaches toward the last finish estimated at the old throttle, less each second.
        A range that spans both while the new rate is unmeasured holds the finish (bench_eta's
        x2 then x1: the samples soon after the raise missed it without)."""
        last = self.past[-1][1] if self.past else None  # at the throttle in force till now
        self.past = []
        self.old = (last, at) if last is not None and math.isfinite(at) else None

    def widen(self, ts: float, eta: float, low: float, high: float) -> tuple[float, float]:
        """(low, high) widened to hold every finish estimated in the window, this one too."""
        self.past = [p for p in self.past if p[0] >= ts - FINISHES_S] + [(ts, ts + eta)]
        ends = [f for _, f in self.past]
        if self.old is not None and ts - self.old[1] < MIXED_S:
            # the old rate's part of the quota's windows: all of them at the change, none
            # MIXED_S later (one window leaves the average each second)
            part = 1.0 - max(0.0, ts - self.old[1]) / MIXED_S
            ends.append(max(ts, ts + eta + (self.old[0] - ts - eta) * part))
        return max(0.0, min(low, min(ends) - ts)), max(high, max(ends) - ts)
