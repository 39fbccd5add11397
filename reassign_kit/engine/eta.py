"""A paced run's ETA (issue 21): what is left, simulated at both ends of every copy.

What is left is a set of *flows*, one per move not done: the step in flight (bytes each new
replica still needs), the steps after it (KIP-435), then the moves queued behind batches and
caps, admitted by the run's own ``schedule.decide``. Each new replica being filled is a
stream from the partition's leader; a broker's leader-side throttle is shared by the streams
reading from it and its follower-side throttle by those writing to it (``cluster.quota``,
the simulator's and the what-if's model too): a drain of one broker is bound by that source,
whichever target it feeds. A step completes a completion lag after its last byte (the
follower joins the ISR, the controller ends it, a poll sees it: the run's measured
``tail_s``), and only then does its slot go to the next move.

The capacities are the throttle (a nominal ``PRIOR_BPS`` without one) times the *share* of it
the cluster achieves, measured: at each sample the model's rate for the streams then in
flight, and over the window the bytes really received against the bytes the model says
those streams would have moved (a trapezoid between samples). Before ``MIN_WINDOW_S`` and
``MIN_WINDOW_BYTES`` of measurement the share is 1 (the prior); after, the measurement plus
``PRIOR_S`` seconds' worth of the prior, so it takes over within seconds. A ratio of bytes
over a window of bytes cannot explode as a rate over a near-empty window does (bench_eta saw
"13981h" when one broker's moves ended between samples). The interval: the same simulation
at the 10th and 90th percentiles of the share measured between samples in the window, and
every finish estimated in the last few seconds (``eta_pace.Finishes``). The ETA never exceeds the bound of the bytes left at ``BOUND_SHARE`` of the throttle (plus a
completion lag per step left) unless ``eta_reason`` says why (the brokers measured slower).

What the run spends besides copying is measured too (bench_eta): the gap from a completion
to the next submission, from a KIP-435 step's completion to its move's next step, and what a
step that only drops replicas takes (``step_completed`` carries ``step_s``). Kafka's quota is
an average over 11 one-second windows, so the pace is not steady: an end idle between two
copies catches up, an end that caught up (or whose throttle was lowered) stalls until its
windows expire. The ETA replays each end's windows from the bytes it moved at the samples
(``eta_ends.EndBytes``; ``eta_model.simulate``), and an interval in which the quota held every
receiving end, or in which a move came and went unseen, is not a measure of the share.

Where the model's assumptions are shown wrong by the data, the measurement wins: the run's
*pace* (``eta_pace.RunPace``), the model's work done per wall second, takes over its estimate.

``RunEta.update`` once per sample (``Run._eta_fields``); ``fields()`` adds its figures to
the ``sample`` event, from which ``progress`` on the journal, the paced CLI's line and the
panel show the same finish time and range."""

from __future__ import annotations

import bisect
import itertools
import math
import statistics
from collections.abc import Mapping
from typing import Any

from ..cluster.quota import QUOTA_WINDOW_S, QUOTA_WINDOWS, idle_credit
from ..model import TopicPartition
from .eta_ends import MIN_WINDOW_S, EndBytes, weighted_pct, window_rates
from .eta_model import (
    QUOTA_REPLAY_S,
    Flow,
    Snapshot,
    flows_of,
    model_bytes,
    model_rate,
    new_rate,
    simulate,
    snapshot_of,
)
from .eta_pace import Finishes, PaceState, RunPace
from .moves import MoveIndex, MoveState, MoveStatus
from .schedule import Caps

ETA_WINDOW_S = 60.0
# a broker with bytes in flight to it that took in nothing for this long is stalled (before:
# no rate yet — a follower's first fetch may wait a quota window)
STALLED_AFTER_S = 10.0
MIN_WINDOW_BYTES = 1 << 20  # and bytes (a follower fetches up to 1 MiB per partition)
PRIOR_S = 2.0  # the prior's weight: this many seconds at the model's rate
PRIOR_BPS = 100 * 1024 * 1024  # nominal capacity of a broker end without a throttle
BOUND_SHARE = 0.5  # the ETA's bound: the bytes left at this share of the throttle
SHARE_RANGE = (0.05, 20.0)  # a measured share outside this is clipped
RECENT_DONE = 50  # completions a submission's gap is measured against
SPREAD_FLOOR = 0.08  # the interval is at least this share either side of the ETA
# the range of the share before it is measured: a broker that idled takes in a burst above
# the throttle (Kafka's quota averages over 11 s), a loaded one stays below it
PRIOR_RANGE = (0.75, 1.5)
FETCH_BYTES = 1 << 20  # what a follower fetches of a partition at a time
# after a throttle change, an interval moving more than this times the model's bytes, or less
# than its inverse, is the quota's catch-up or stall (bench_eta's x2 then x1: a 9.5 s stall,
# 19 MiB in a second), not the share
REPLAY_BURST = 1.25


# ------------------------------------------------------------------------- the run's ETA


class RunEta:
    """A run's ETA from its own counters and moves (no Admin call of its own). ``update``
    once per sample; see the module docstring."""

    def __init__(self, window_s: float = ETA_WINDOW_S, poll_s: float = 0.0):
        self.window_s = window_s
        self.poll_s = poll_s  # the run sees completions at its polls
        # the latest sample: (ts, bytes received in all, the model's rate then, capacity
        # then, the streams in flight then, what they had left)
        self.points: list[tuple] = []
        self.history: list[tuple[float, dict[int, float], dict[int, float]]] = []
        self.busy: dict[int, float] = {}  # seconds each broker had a move in flight
        self._last: tuple[float, set[int]] | None = None
        self._grew: dict[int, tuple[float, float]] = {}  # broker -> (received, since)
        self._full_since: dict[TopicPartition, float] = {}
        self._straddles = False  # the throttle changed since the last sample
        self._changed_ts = -math.inf  # the last sample before the change
        self.changed = False  # the throttle changed and no interval after it was measured
        self._first: tuple[float, float] | None = None
        # per interval between two samples: (end ts, bytes received, the model's, seconds,
        # clean: no stream started or ended in it)
        self.intervals: list[tuple[float, float, float, float, bool]] = []
        self.ends = EndBytes()  # each broker end's bytes, for Kafka's quota windows
        self._elections: tuple[int, int] | None = None
        self._rest_leaders = 0
        self.paced = RunPace()  # the run's own pace (``eta_pace``)
        self.finishes = Finishes()  # the finishes estimated lately: the range holds them
        # from a completion to the next submission (the run's admin calls between them)
        self._subs: dict[TopicPartition, float | None] = {}  # submission seen per move
        self.gaps: list[float] = []
        self.step_gaps: list[float] = []  # from a step's completion to its move's next step
        self.drops: list[float] = []  # a step that only drops replicas: submission to done
        self._drops_seen: set[tuple[TopicPartition, int]] = set()
        # when each broker end last copied: ("i", receiving) / ("o", sending) -> ts
        self._end_busy: dict[tuple[str, int], float] = {}
        # the quota's catch-up (``eta_model.simulate``): per interval in which ends copied
        # again after an idle spell, (end ts, bytes beyond the model's, the credit expected);
        # ``burst``: the share of that credit the cluster gave (none until measured: a
        # plain rate cap gives none, Kafka's windowed quota all of it)
        self.bursts: list[tuple[float, float, float]] = []
        self.burst = 0.0
        self._stall_seen = False
        self.total_rate: float | None = None
        self.rates: dict[int, float] = {}
        self.share = 1.0
        self.share_range = PRIOR_RANGE
        self.measured = False
        self.low: float | None = None
        self.high: float | None = None
        self.bound: float | None = None
        self.ts = self.tail_spread = 0.0
        self.eta: float | None = None

    def restart(self) -> None:
        """The throttle changed: the interval it falls in says nothing (the share of the old
        throttle still says much about the new one, so the window stays); until an interval
        after it is measured the reason says so."""
        self.changed = self._straddles = True
        self._changed_ts = self._last[0] if self._last is not None else -math.inf
        # the pace at the old throttle says nothing of the new one, nor does the stall or
        # catch-up while the quota's windows hold bytes of the old one (``_replaying``)
        self.paced.restart(self._changed_ts + QUOTA_REPLAY_S)
        self.finishes.restart(self._changed_ts)

    def update(
        self,
        ts: float,
        received: Mapping[int, float],
        left: Mapping[int, float],
        inflight: Mapping[int, int],
        cap: float | None = None,
        tail: float = 0.0,
        *,
        moves: MoveIndex | None = None,
        copied: Mapping[tuple[TopicPartition, int], int] | None = None,
        caps: Caps | None = None,
        r: int | None = None,
        elections: tuple[int, int] | None = None,
        tail_spread: float = 0.0,
    ) -> tuple[float | None, str | None, dict[int, float]]:
        """(eta_s, reason, rate per broker) at ``ts``. ``received`` / ``left``: bytes each
        broker's new replicas received so far / still need; ``inflight``: moves in flight to
        each broker; ``cap``: the throttle; ``tail``: the completion lag (counted down once
        every byte is in); ``moves`` / ``copied`` / ``caps`` / ``r``: the run's moves, bytes
        each new replica holds, caps and KIP-435 R, for the simulation; ``elections``:
        (preferred leader elections queued, at most per poll), None when the run elects
        none; ``tail_spread``: how much shorter than ``tail`` a completion lag was measured
        (the range's low end allows it)."""
        self.ts, self.tail_spread = ts, tail_spread
        self._busy(ts, inflight)
        if moves is not None:
            self._gaps(moves)
        self.rates, self.total_rate = self._window_rates(ts, received)
        flows, rest_leaders, rest_bytes = (
            flows_of(moves, copied or {}, r) if moves is not None else ([], 0, 0.0)
        )
        for f in flows:
            if f.state == "moving" and not any(f.left.values()):
                f.full_s = ts - self._full_since.setdefault(f.tp, ts)
        live = {f.tp for f in flows}
        self._full_since = {tp: t for tp, t in self._full_since.items() if tp in live}
        capacity = float(cap) if cap else float(PRIOR_BPS)
        snap = snapshot_of(flows)
        woke = self._woke(ts, snap, capacity)
        for src, b, _, _ in snap:
            self._end_busy[("i", b)] = ts
            if src is not None:
                self._end_busy[("o", src)] = ts
        self._end_busy = {
            e: t for e, t in self._end_busy.items() if ts - t < QUOTA_WINDOWS * QUOTA_WINDOW_S
        }
        streams = frozenset((f.tp, b) for f in flows if f.state == "moving" for b in f.left)
        rate = model_rate(flows, capacity)
        unseen = moves is not None and self._unseen(moves)
        self.ends.track(ts, received, flows)
        held = self._quota_held(ts, float(sum(received.values())))
        # a stall seen: Kafka's windowed quota, which gives all of its credit back (``burst``)
        self._stall_seen = (held or self._stall_seen) and self._replaying(ts)
        self._measure(
            ts, float(sum(received.values())), rate, capacity, streams, snap, woke, unseen, held
        )
        self._elections = elections
        self._rest_leaders = rest_leaders
        eta, why = self._estimate(ts, received, left, inflight, cap, tail, flows, caps, rest_bytes)
        if eta is not None and self.low is not None and self.high is not None:
            self.low, self.high = self.finishes.widen(ts, eta, self.low, self.high)
        self.eta = eta
        return eta, why, dict(self.rates)

    # ---- measurement ----------------------------------------------------------------------

    def _gaps(self, moves: MoveIndex) -> None:
        """Seconds from a completion to the submission it lets go: a move's first step
        against the latest completion of a move (the last ``RECENT_DONE`` done, newest
        first, without walking the others); a later KIP-435 step against its own move's
        step completion (``step_completed_at``). And how long a step that only drops
        replicas takes, submission to completion (no byte to copy, still a controller
        round: 1.3-2 s on the sandbox)."""
        done_ms = list(
            itertools.islice(reversed(moves.by_status[MoveStatus.DONE].values()), RECENT_DONE)
        )
        done = sorted(ms.completed_at for ms in done_ms if ms.completed_at is not None)
        seen: dict[TopicPartition, float | None] = {}
        for ms in moves.iter(MoveStatus.MOVING):
            sub = ms.step_submitted_at if ms.step_submitted_at is not None else ms.submitted_at
            if sub is not None and self._subs.get(ms.tp, -math.inf) != sub:
                if ms.step >= 2 and ms.step_completed_at is not None:
                    g = sub - ms.step_completed_at
                    if 0.0 <= g <= ETA_WINDOW_S / 2:
                        self.step_gaps = [*self.step_gaps[-19:], g]
                    if _drops_only(ms, ms.step - 1) and ms.step_took_s is not None:
                        self._drop((ms.tp, ms.step - 1), ms.step_took_s)
                else:
                    k = bisect.bisect_right(done, sub + 1e-9)
                    if k and 0.0 <= sub - done[k - 1] <= ETA_WINDOW_S / 2:
                        self.gaps = [*self.gaps[-19:], sub - done[k - 1]]
            seen[ms.tp] = sub
        self._subs = seen
        for ms in moves.iter(MoveStatus.READY):  # a step just completed
            if ms.step >= 1 and _drops_only(ms, ms.step) and ms.step_took_s is not None:
                self._drop((ms.tp, ms.step), ms.step_took_s)
        for ms in done_ms:  # a move whose last step dropped replicas
            n = len(ms.steps)
            if n >= 2 and _drops_only(ms, n) and ms.completed_at is not None:
                if ms.step_submitted_at is not None and (ms.tp, n) not in self._drops_seen:
                    self._drop((ms.tp, n), ms.completed_at - ms.step_submitted_at)
                    if len(self._drops_seen) > 4 * RECENT_DONE:
                        self._drops_seen.clear()

    def _drop(self, key: tuple[TopicPartition, int], took: float) -> None:
        if key not in self._drops_seen and 0.0 <= took <= ETA_WINDOW_S / 2:
            self._drops_seen.add(key)
            self.drops = [*self.drops[-19:], took]

    def gap(self) -> float:
        """The median measured gap before a move's first step (0 before one is)."""
        return statistics.median(self.gaps) if self.gaps else 0.0

    def step_gap(self) -> float:
        """The median measured gap before a later step (the slots' gap before one is)."""
        return statistics.median(self.step_gaps) if self.step_gaps else self.gap()

    def drop_s(self) -> float | None:
        """The median measured time of a step that only drops replicas (None: the
        completion lag, before one is)."""
        return statistics.median(self.drops) if self.drops else None

    def _replaying(self, ts: float) -> bool:
        """Whether the simulation replays the ends' quota windows: while they still hold
        bytes moved at a throttle changed since (Kafka stalls an end whose throttle was
        lowered until they expire). Elsewhere the windows hold what the measured share
        already tells, and a replay from samples a second or more apart only adds their
        rounding (a run of a few seconds read 0.5 s long)."""
        return ts - self._changed_ts < QUOTA_REPLAY_S

    def _quota_held(self, ts: float, got: float) -> bool:
        """The interval ending now moved (almost) nothing while every end receiving in it
        had used up its quota (its windows at the limit when the interval began): Kafka's
        quota holding back a catch-up it let through before, not the cluster's pace."""
        if not self.points or self.points[-1][0] >= ts:
            return False
        t0, g0, _, c0, _, snap0 = self.points[-1]
        ends = {("i", b) for _, b, _, _ in snap0}
        if not ends or got - g0 > 0.25 * c0 * (ts - t0):
            return False
        return all(self.ends.at_limit(e, t0, c0 * self.share) for e in ends)

    def _unseen(self, moves: MoveIndex) -> bool:
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

    def _woke(self, ts: float, snap: Snapshot, capacity: float) -> float:
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
            last = self._end_busy.get(e)
            if e in busy0 or last is None or e[1] is None:
                return 0.0
            return idle_credit(t0 - last + (ts - t0) / 2, capacity) / count[e]

        return sum(min(credit(("i", b)), credit(("o", src))) for src, b in new)

    def _busy(self, ts: float, inflight: Mapping[int, int]) -> None:
        if self._last is not None:
            for b in self._last[1]:
                self.busy[b] = self.busy.get(b, 0.0) + (ts - self._last[0])
        self._last = (ts, {b for b, n in inflight.items() if n > 0})

    def _window_rates(
        self, ts: float, received: Mapping[int, float]
    ) -> tuple[dict[int, float], float | None]:
        point = (ts, dict(received), dict(self.busy))
        rates, total = window_rates(self.history, point, self.window_s)
        self.history.append(point)
        self.history = [h for h in self.history if h[0] >= ts - 2 * self.window_s]
        return rates, total

    def _measure(
        self,
        ts: float,
        got: float,
        rate: float,
        capacity: float,
        streams: frozenset,
        snap: Snapshot,
        woke: float = 0.0,
        unseen: bool = False,
        quota_held: bool = False,
    ) -> None:
        """The share of the throttle achieved over the window: bytes received against the
        model's bytes at the throttle for the streams in flight (those of an interval's
        start played for it, plus those that started in it for half of it at their rate at
        its end). Intervals in which no stream started or ended count alone when they cover
        ``MIN_WINDOW_S``; else every interval does. An interval in which a move (or step)
        started and completed unseen by the samples (``unseen``) says nothing: its bytes
        are in the count, not in the model's (bench_eta's spread: a move taking a 10 MiB
        burst in 0.8 s read as a share of 1.19 for a minute)."""
        if self._first is None:
            self._first = (ts, got)
        ok = not self._straddles  # the interval ending now holds a throttle change
        self._straddles = False
        if self.points and ok:
            t0, g0, _, c0, s0, snap0 = self.points[-1]
            dt = ts - t0
            if dt > 0 and self.changed and t0 > self._changed_ts:
                self.changed = False  # an interval wholly after the change
            m = model_bytes(snap0, c0, dt) if dt > 0 else 0.0
            quota = self._replaying(t0) and not m / REPLAY_BURST <= got - g0 <= REPLAY_BURST * m
            if dt > 0 and (quota_held or quota):
                pass  # Kafka's quota held the ends back, or, while its windows hold the old
                # throttle's bytes, stalled or let a catch-up through (the replay plays
                # both): not the share
            elif dt > 0 and not unseen:
                if s0 != streams:
                    m += new_rate(snap, s0, capacity) * dt / 2
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
        self.share_range = (
            min(p10, self.share * (1 - wide)),
            max(p90, self.share * (1 + wide)),
        )
        self.measured = True

    def since_start(self) -> float | None:
        """Bytes per second since the first sample (the bound without a throttle)."""
        if self._first is None or not self.points:
            return None
        t0, g0 = self._first
        ts, got = self.points[-1][0], self.points[-1][1]
        return (got - g0) / (ts - t0) if ts > t0 and got > g0 else None

    def _stalled(self, ts: float, received: Mapping[int, float], left: Mapping[int, float]):
        out = []
        busy = self._last[1] if self._last is not None else set()
        for b in sorted(set(received) | set(left)):
            n = float(received.get(b, 0.0))
            prev = self._grew.get(b)
            if b not in busy or not left.get(b) or prev is None or n > prev[0]:
                self._grew[b] = (n, ts)
            elif ts - prev[1] >= STALLED_AFTER_S:
                out.append(b)
        return out

    # ---- the estimate ---------------------------------------------------------------------

    def _estimate(
        self,
        ts: float,
        received: Mapping[int, float],
        left: Mapping[int, float],
        inflight: Mapping[int, int],
        cap: float | None,
        tail: float,
        flows: list[Flow],
        caps: Caps | None,
        rest_bytes: float,
    ) -> tuple[float | None, str | None]:
        self.low = self.high = self.bound = None
        bytes_left = float(sum(left.values()))
        stalled = self._stalled(ts, received, left)
        if bytes_left <= 0 and not any(inflight.values()):
            self.low = self.high = 0.0
            return 0.0, None
        if bytes_left <= 0:  # every byte in: the completion lag counts down (and the
            # elections queued go out at the polls)
            q, per = self._elections or (0, 1)
            end = max(tail, math.ceil(q / max(1, per)) * (self.poll_s or 1.0) if q else 0.0)
            # the lags vary (bench_eta's KIP-435 steps: 1.19 s measured, the last 0.2-0.5 s)
            self.low, self.high = max(0.0, end - self.tail_spread - self.poll_s), end + self.poll_s
            return end, None
        if stalled:
            return None, "broker(s) " + ", ".join(
                map(str, stalled)
            ) + " took in nothing in the window"
        if not flows:
            return None, "no moves to estimate"
        capacity = float(cap) if cap else float(PRIOR_BPS)
        caps = caps or Caps()
        idle = {e: ts - t for e, t in self._end_busy.items() if t < ts}
        fc = simulate(
            flows,
            capacity * self.share,
            caps,
            tail,
            rest_bytes,
            self.poll_s,
            self._elections,
            self._rest_leaders,
            self.gap(),
            step_gap=self.step_gap(),
            drop_s=self.drop_s(),
            idle=idle,
            burst=1.0 if self._stall_seen else self.burst,
            windows=self.ends.windows(ts) if cap and self._replaying(ts) else None,
            now=ts,
        )
        if not math.isfinite(fc.seconds):
            return None, "no bytes can move (a throttle of 0?)"
        lo_s, hi_s = self.share_range

        def at(share: float) -> float:
            return fc.seconds - fc.copy_s + fc.copy_s * self.share / share

        eta = fc.seconds
        low, high = at(hi_s), at(lo_s)
        paced = (
            self._pace(ts, flows, caps, tail, rest_bytes, capacity, idle, fc.seconds)
            if cap and fc.seconds > 0
            else None
        )
        if paced is not None:  # the run's measured pace takes over the model's (``_pace``)
            scale = paced / eta
            eta, low, high = paced, low * scale, high * scale
        # and no narrower than what the run can see: a completion at one of its polls, and
        # bytes a fetch behind (a follower's log grows a fetch at a time, up to 1 MiB: the
        # sandbox's samples read 0.94 MiB steps, the last one often unseen before the end)
        behind = FETCH_BYTES / max(capacity * self.share, 1.0)
        low = max(0.0, min(low, eta * (1 - SPREAD_FLOOR), eta - self.poll_s - self.tail_spread))
        high = max(high, eta * (1 + SPREAD_FLOOR), eta + self.poll_s + behind)
        why = fc.bottleneck or "at the run's rate"
        if self.changed:
            why = f"{why}, at the new throttle (no rate measured since it changed)"
        elif not self.measured:
            why = f"{why}, at the throttle (no rate measured yet)" if cap else why
        steps_left = sum(len(f.steps) for f in flows)
        floor_rate = BOUND_SHARE * cap if cap else None
        if floor_rate is None and (since := self.since_start()):
            floor_rate = BOUND_SHARE * since  # no throttle: half the rate since the start
        if floor_rate:
            self.bound = (bytes_left + rest_bytes) / floor_rate + tail * (steps_left + 1)
            if eta > self.bound:
                if cap and self.measured and self.share < BOUND_SHARE:
                    why = (
                        f"{why}; the brokers copy at {self.share:.0%} of the throttle "
                        "(measured), beyond the throttle's bound"
                    )
                else:
                    eta = self.bound
                    why = f"at the bound: the bytes left at {BOUND_SHARE:.0%} of the " + (
                        "throttle" if cap else "rate since the start"
                    )
                    high = max(min(high, self.bound), eta)
                    low = min(low, eta)
        self.low, self.high = low, high
        return eta, why

    def _pace(
        self,
        ts: float,
        flows: list[Flow],
        caps: Caps,
        tail: float,
        rest_bytes: float,
        capacity: float,
        idle: dict,
        model: float,
    ) -> float | None:
        """The ETA at the run's own pace (``eta_pace.RunPace``), None before it is measured:
        the model's seconds of work left at a state, at the throttle (share 1, no quota
        replay), with the lags, gaps and bursts measured now."""
        gap, step_gap, drop_s = self.gap(), self.step_gap(), self.drop_s()

        def work(state: PaceState) -> float:
            _, fl, idl, elections, rest_leaders, rest = state
            return simulate(
                fl, capacity, caps, tail, rest, self.poll_s, elections, rest_leaders, gap,
                step_gap=step_gap, drop_s=drop_s, idle=idl, burst=self.burst, on_polls=False,
            ).seconds  # fmt: skip

        state = (ts, flows, idle, self._elections, self._rest_leaders, rest_bytes)
        return self.paced.estimate(state, work, model)

    def fields(self) -> dict[str, Any]:
        """The sample event's figures beside ``eta_s``: the range and the finish times (the
        one ETA every front end shows), the bound and the measured share of the throttle."""
        if self.eta is None:
            return {"eta_range_s": None, "finish_ts": None, "finish_range_ts": None}
        low = self.eta if self.low is None else self.low
        high = self.eta if self.high is None else self.high
        return {
            "eta_range_s": [round(low, 1), round(high, 1)],
            "finish_ts": round(self.ts + self.eta, 1),
            "finish_range_ts": [round(self.ts + low, 1), round(self.ts + high, 1)],
            "eta_bound_s": None if self.bound is None else round(self.bound, 1),
            "throttle_share": round(self.share, 3) if self.measured else None,
            "run_pace": None if self.paced.value is None else round(self.paced.value, 3),
        }


def _drops_only(ms: MoveState, k: int) -> bool:
    """Step ``k`` (1-based) of ``ms`` adds no replica: it copies nothing."""
    if not 1 <= k <= len(ms.steps):
        return False
    before = ms.steps[k - 2] if k >= 2 else ms.original
    return not any(b not in before for b in ms.steps[k - 1])
