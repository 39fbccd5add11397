"""The share of the throttle a run's brokers achieve, measured (for ``eta.estimate.RunEta``):
over the window, the bytes received against the bytes the model says the streams in flight
would have moved; the share of an idle end's quota credit the cluster gave back (``burst``).
Before ``MIN_WINDOW_S`` and ``MIN_WINDOW_BYTES`` of measurement the share is 1 (the prior);
after, the measurement plus ``PRIOR_S`` seconds' worth of the prior. Pure."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from ..cluster.quota import idle_credit
from ..moves.table import MoveIndex, MoveStatus
from .ends import MIN_WINDOW_S, End, weighted_pct
from .model import QUOTA_REPLAY_S, Snapshot, model_bytes, shares_at

MIN_WINDOW_BYTES = 1 << 20  # and bytes (a follower fetches up to 1 MiB per partition)
PRIOR_S = 2.0  # the prior's weight: this many seconds at the model's rate
SHARE_RANGE = (0.05, 20.0)  # a measured share outside this is clipped
SPREAD_FLOOR = 0.08  # the interval is at least this share either side of the ETA
# the range of the share before it is measured: a broker that idled takes in a burst above
# the throttle (Kafka's quota averages over 11 s), a loaded one stays below it
PRIOR_RANGE = (0.75, 1.5)
# after a throttle change, an interval moving more than this times the model's bytes, or less
# than its inverse, is the quota's catch-up or stall (bench_eta's x2 then x1: a 9.5 s stall,
# 19 MiB in a second), not the share
REPLAY_BURST = 1.25


class ShareMeter:
    """The share of the throttle over the last ``window_s`` (``measure`` once per sample)."""

    def __init__(self, window_s: float):
        self.window_s = window_s
        # the latest sample: (ts, bytes received in all, the model's rate then, capacity
        # then, the streams in flight then, what they had left)
        self.points: list[tuple] = []
        # per interval between two samples: (end ts, bytes received, the model's, seconds,
        # clean: no stream started or ended in it)
        self.intervals: list[tuple[float, float, float, float, bool]] = []
        # the quota's catch-up (``model.simulate``): per interval in which ends copied
        # again after an idle spell, (end ts, bytes beyond the model's, the credit expected);
        # ``burst``: the share of that credit the cluster gave (none until measured: a
        # plain rate cap gives none, Kafka's windowed quota all of it)
        self.bursts: list[tuple[float, float, float]] = []
        self.burst = 0.0
        self.share = 1.0
        self.share_range = PRIOR_RANGE
        self.measured = False
        self._straddles = False  # the throttle changed since the last sample
        self.changed_ts = -math.inf  # the last sample before the change
        self.changed = False  # the throttle changed and no interval after it was measured

    def restart(self, last_ts: float) -> None:
        """The throttle changed after the sample at ``last_ts``: the interval it falls in
        says nothing (the share of the old throttle still says much about the new one, so
        the window stays); until an interval after it is measured, ``changed``."""
        self.changed = self._straddles = True
        self.changed_ts = last_ts

    def forget(self) -> None:
        """What the window measured says nothing of what comes (a stalled broker is back):
        the share is the prior again until a new window is measured."""
        self.intervals, self.bursts = [], []
        self.share, self.share_range, self.measured = 1.0, PRIOR_RANGE, False

    def replaying(self, ts: float) -> bool:
        """Whether the simulation replays the ends' quota windows: while they hold bytes moved
        at a throttle changed since. Elsewhere they hold what the share already tells, and a
        replay from samples a second apart only adds their rounding (a short run read 0.5 s
        long)."""
        return ts - self.changed_ts < QUOTA_REPLAY_S

    def unseen(self, moves: MoveIndex) -> bool:
        """A move (or a step) completed since the last sample that no sample saw copying."""
        if not self.points:
            return False
        t0, seen = self.points[-1][0], {tp for tp, _ in self.points[-1][4]}
        recent = itertools.islice(reversed(moves.by_status[MoveStatus.DONE].values()), 20)
        for ms in itertools.chain(
            recent, moves.iter(MoveStatus.READY), moves.iter(MoveStatus.MOVING)
        ):
            at = ms.completed_at if ms.status is MoveStatus.DONE else ms.step_completed_at
            if at is not None and at > t0 and ms.tp not in seen:
                return True
        return False

    def woke(
        self, ts: float, snap: Snapshot, capacity: float, end_busy: Mapping[End, float]
    ) -> float:
        """The quota credit (``quota.idle_credit``) the streams started since the last
        sample may burst: per new stream, the least of what its ends give, an end copying
        again after an idle spell (its credit shared by its new streams)."""
        if not self.points:
            return 0.0
        t0, old = self.points[-1][0], self.points[-1][4]
        new = [(src, b) for src, b, _, tp in snap if (tp, b) not in old]
        count: dict[tuple[str, int], int] = {}
        for src, b in new:
            for e in (("i", b), ("o", src)):
                count[e] = count.get(e, 0) + 1
        busy0 = {("i", b) for _, b, _, _ in self.points[-1][5]}
        busy0 |= {("o", s) for s, _, _, _ in self.points[-1][5] if s is not None}

        def credit(e: tuple[str, Any]) -> float:
            last = end_busy.get(e)
            if e in busy0 or last is None or e[1] is None:
                return 0.0
            return idle_credit(t0 - last + (ts - t0) / 2, capacity) / count[e]

        return sum(min(credit(("i", b)), credit(("o", src))) for src, b in new)

    def measure(
        self,
        ts: float,
        got: float,
        rate: float,
        capacity: float,
        streams: frozenset,
        snap: Snapshot,
        woke: float = 0.0,
        unseen: bool = False,
    ) -> None:
        """The share over the window: bytes received against the model's at the throttle for
        the streams of an interval's start, plus those that started in it for half of it.
        Intervals in which no stream started or ended count alone when they cover
        ``MIN_WINDOW_S``. An interval in which a move came and went ``unseen`` says nothing:
        its bytes are in the count, not in the model's (bench_eta's spread: a 10 MiB burst
        in 0.8 s read as a share of 1.19 for a minute)."""
        ok = not self._straddles  # the interval ending now holds a throttle change
        self._straddles = False
        if self.points and ok:
            t0, g0, _, c0, s0, snap0 = self.points[-1]
            dt = ts - t0
            if dt > 0 and self.changed and t0 > self.changed_ts:
                self.changed = False  # an interval wholly after the change
            m = model_bytes(snap0, c0, dt) if dt > 0 else 0.0
            # while its windows hold the old throttle's bytes, Kafka's quota stalled or let a
            # catch-up through (the replay plays both): not the share
            quota = self.replaying(t0) and not m / REPLAY_BURST <= got - g0 <= REPLAY_BURST * m
            if dt > 0 and not quota and not unseen:
                if s0 != streams and snap:  # the streams started since, at their rate now
                    rates = shares_at([(src, b) for src, b, _, _ in snap], capacity)
                    new = zip(snap, rates, strict=True)
                    m += sum(r for (_, b, _, tp), r in new if (tp, b) not in s0) * dt / 2
                if woke > 0:  # the quota's catch-up expected: how much of it came
                    self.bursts.append((ts, got - g0 - self.share * m, woke))
                if m > 0:
                    clean = s0 == streams and woke <= 0
                    self.intervals.append((ts, max(0.0, got - g0), m, dt, clean))
        self.points = [(ts, got, rate, capacity, streams, snap)]
        self.intervals = [x for x in self.intervals if x[0] >= ts - self.window_s]
        self.bursts = [x for x in self.bursts if x[0] >= ts - self.window_s]
        expected = sum(x[2] for x in self.bursts)
        if expected >= MIN_WINDOW_BYTES / 2:
            self.burst = min(1.0, max(0.0, sum(x[1] for x in self.bursts) / expected))
        clean = [x for x in self.intervals if x[4]]
        use = clean if sum(x[3] for x in clean) >= MIN_WINDOW_S else self.intervals
        actual = sum(x[1] for x in use)
        model = sum(x[2] for x in use)
        secs = sum(x[3] for x in use)
        if secs < MIN_WINDOW_S or actual < MIN_WINDOW_BYTES or not use:
            self.share, self.share_range, self.measured = 1.0, PRIOR_RANGE, False
            return
        pairs = [(a / m, m) for _, a, m, _, _ in use]
        prior = PRIOR_S * max(rate, model / secs)
        lo, hi = SHARE_RANGE
        self.share = min(hi, max(lo, (actual + prior) / (model + prior)))
        p10 = min(hi, max(lo, weighted_pct(pairs, 0.1)))
        p90 = min(hi, max(lo, weighted_pct(pairs, 0.9)))
        # and no narrower than what a few intervals can tell (half the share over the root of
        # their count: +-25% on 4, +-10% on 25)
        wide = max(SPREAD_FLOOR, 0.5 / math.sqrt(len(use)))
        self.share_range = (min(p10, self.share * (1 - wide)), max(p90, self.share * (1 + wide)))
        self.measured = True
