"""A paced run's ETA: what is left, simulated at both ends of every copy (``model``), at the
throttle (a nominal ``PRIOR_BPS`` without one), each step completing the run's measured
completion lag (``tail_s``) after its last byte.

The *share* of the throttle the cluster achieves is measured (``share.ShareMeter``) for the
range, the journal's ``throttle_share`` and the what-if's calibration; the ETA itself does
not scale by it (on held-out shapes the ETA at the throttle did as well, and the run's pace
counts what the cluster really does). The range: the same simulation at the ends of the
share measured between samples, holding every finish estimated in the last few seconds
(``pace.Finishes``). ``eta_bound_s`` is the physical bound beside it (the bytes through the
busiest broker end over the throttle), the baseline each term was kept for beating on
held-out shapes (bench/RESULTS.md, bench_heldout_ablation). Kafka's quota averages 11
one-second windows: the ETA replays each end's windows from the bytes it moved at the
samples (``ends.EndBytes``). Where the model's assumptions are shown wrong by the data, the
run's measured *pace* (``pace.RunPace``) takes over its estimate.

``RunEta.update`` once per sample (``Tracker.eta_fields``); ``fields()`` adds its figures to
the ``sample`` event, from which ``progress`` on the journal, the paced CLI's line and the
panel show the same finish time and range."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..cluster.quota import QUOTA_WINDOW_S, QUOTA_WINDOWS
from ..model import TopicPartition
from ..moves.schedule import Caps
from ..moves.table import MoveIndex
from .ends import EndBytes, window_rates
from .model import (
    QUOTA_REPLAY_S,
    Ends,
    Flow,
    Forecast,
    ends_of,
    flows_of,
    model_rate,
    simulate,
    snapshot_of,
)
from .pace import Finishes, PaceState, RunPace
from .share import SPREAD_FLOOR, ShareMeter

ETA_WINDOW_S = 60.0
# a broker with bytes in flight to it that took in nothing for this long is stalled (before:
# no rate yet — a follower's first fetch may wait a quota window)
STALLED_AFTER_S = 10.0
# after a throttle raise the pace is measured again once one quota span has passed: the
# windows then hold only bytes moved under the new limit (a lowering waits out its stall too)
RAISED_HOLD_S = QUOTA_WINDOWS * QUOTA_WINDOW_S
PRIOR_BPS = 100 * 1024 * 1024  # nominal capacity of a broker end without a throttle
FETCH_BYTES = 1 << 20  # what a follower fetches of a partition at a time


def sharing(flows: list[Flow]) -> dict[int, int]:
    """Per receiving broker, the most streams sharing one end of a stream into it (its own,
    or its source's): its log grows a fetch at a time at that share of the throttle."""
    streams = [(f.src, b) for f in flows if f.state == "moving" for b in f.left]
    into: dict[int, int] = {}
    out: dict[int | None, int] = {}
    for src, b in streams:
        into[b] = into.get(b, 0) + 1
        out[src] = out.get(src, 0) + 1
    got: dict[int, int] = {}
    for src, b in streams:
        got[b] = max(got.get(b, 0), into[b], out[src] if src is not None else 0)
    return got


class RunEta:
    """A run's ETA from its own counters and moves (no Admin call of its own). ``update``
    once per sample; see the module docstring."""

    def __init__(self, window_s: float = ETA_WINDOW_S, poll_s: float = 0.0):
        self.window_s = window_s
        self.poll_s = poll_s  # the run sees completions at its polls
        self.meter = ShareMeter(window_s)  # the share of the throttle achieved
        self.history: list[tuple[float, dict[int, float], dict[int, float]]] = []
        self.busy: dict[int, float] = {}  # seconds each broker had a move in flight
        self._last: tuple[float, set[int]] | None = None
        self._grew: dict[int, tuple[float, float]] = {}  # broker -> (received, since)
        self._full_since: dict[TopicPartition, float] = {}
        self.ends = EndBytes()  # each broker end's bytes, for Kafka's quota windows
        self._elections: tuple[int, int] | None = None
        self._rest_leaders = 0
        self.paced = RunPace()  # the run's own pace
        self.finishes = Finishes()  # the finishes estimated lately: the range holds them
        # when each broker end last copied: ("i", receiving) / ("o", sending) -> ts
        self._end_busy: dict[tuple[str, int], float] = {}
        self._stalled_before: set[int] = set()  # brokers stalled at the last sample
        self._sharing: dict[int, int] = {}  # (``sharing``)
        self._ends: Ends | None = None  # this sample's flows' ends (``model.ends_of``)
        self._known: dict[TopicPartition, tuple] = {}  # each move's steps (``flows_of``)
        self._cap: float | None = None  # the throttle at the last sample
        self.total_rate: float | None = None
        self.rates: dict[int, float] = {}
        self.low: float | None = None
        self.high: float | None = None
        self.bound: float | None = None
        self.ts = self.tail_spread = 0.0
        self.eta: float | None = None

    def restart(self) -> None:
        """The throttle changed: the interval it falls in says nothing (the share of the old
        throttle still says much about the new one, so the window stays)."""
        changed = self._last[0] if self._last is not None else -math.inf
        self.meter.restart(changed)
        # the pace at the old throttle says nothing of the new one, nor does the stall or
        # catch-up while the quota's windows hold the old one's bytes (a raise: ``update``)
        self.paced.restart(changed + QUOTA_REPLAY_S)
        self.finishes.restart(changed)

    def _resumed(self, ts: float) -> None:
        """A stalled broker (down, restarting) takes in bytes again: the share and the pace
        measured across its stall are the stall's, not the cluster's pace after it."""
        self.meter.forget()
        self.paced.restart(ts)

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
        if cap and self._cap and cap > self._cap and self.meter.changed:  # raised since
            self.paced.restart(self.meter.changed_ts + RAISED_HOLD_S)
        self._cap = float(cap) if cap else None
        if self._last is not None:
            for b in self._last[1]:
                self.busy[b] = self.busy.get(b, 0.0) + (ts - self._last[0])
        self._last = (ts, {b for b, n in inflight.items() if n > 0})
        point = (ts, dict(received), dict(self.busy))
        self.rates, self.total_rate = window_rates(self.history, point, self.window_s)
        self.history = [h for h in [*self.history, point] if h[0] >= ts - 2 * self.window_s]
        flows, rest_leaders, rest_bytes = (
            flows_of(moves, copied or {}, r, known=self._known)
            if moves is not None
            else ([], 0, 0.0)
        )
        for f in flows:
            if f.state == "moving" and not any(f.left.values()):
                f.full_s = ts - self._full_since.setdefault(f.tp, ts)
        live = {f.tp for f in flows}
        self._full_since = {tp: t for tp, t in self._full_since.items() if tp in live}
        capacity = float(cap) if cap else float(PRIOR_BPS)
        snap = snapshot_of(flows)
        self._sharing = sharing(flows)
        woke = self.meter.woke(ts, snap, capacity, self._end_busy)
        for src, b, _, _ in snap:
            self._end_busy[("i", b)] = ts
            if src is not None:
                self._end_busy[("o", src)] = ts
        self._end_busy = {
            e: t for e, t in self._end_busy.items() if ts - t < QUOTA_WINDOWS * QUOTA_WINDOW_S
        }
        streams = frozenset((f.tp, b) for f in flows if f.state == "moving" for b in f.left)
        # what both simulations of this state read of it before they start (``model.Ends``)
        self._ends = ends_of(flows, capacity)
        rate = model_rate(flows, capacity)
        unseen = moves is not None and self.meter.unseen(moves)
        self.ends.track(ts, received, flows)
        self.meter.measure(
            ts, float(sum(received.values())), rate, capacity, streams, snap, woke, unseen
        )
        self._elections, self._rest_leaders = elections, rest_leaders
        eta, why = self._estimate(ts, received, left, inflight, cap, tail, flows, caps, rest_bytes)
        if eta is not None and self.low is not None and self.high is not None:
            self.low, self.high = self.finishes.widen(ts, eta, self.low, self.high)
        self.eta = eta
        return eta, why, dict(self.rates)

    def _stalled(
        self,
        ts: float,
        received: Mapping[int, float],
        left: Mapping[int, float],
        inflight: Mapping[int, int],
        cap: float | None,
    ):
        """Brokers with moves in flight whose log grew by nothing for ``STALLED_AFTER_S``, or
        for two fetches' time at their share of the throttle (a log grows a fetch at a time:
        at 0.24 MB/s over 3 streams a fetch of 1 MiB shows every 13 s)."""
        out = []
        busy = self._last[1] if self._last is not None else set()
        for b in sorted(set(received) | set(left)):
            n = float(received.get(b, 0.0))
            prev = self._grew.get(b)
            shared = max(1, inflight.get(b, 0), self._sharing.get(b, 0))
            quiet = 2 * FETCH_BYTES * shared / cap if cap else 0.0
            if b not in busy or not left.get(b) or prev is None or n > prev[0]:
                self._grew[b] = (n, ts)
            elif ts - prev[1] >= max(STALLED_AFTER_S, quiet):
                out.append(b)
        return out

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
        """What is left simulated at the throttle (the run's pace taking over); the range
        set, the physical bound beside it; the brokers stalled named."""
        self.low = self.high = self.bound = None
        stalled = self._stalled(ts, received, left, inflight, cap)
        if self._stalled_before - set(stalled):
            self._resumed(ts)
        self._stalled_before = set(stalled)
        if sum(left.values()) <= 0:
            if not any(inflight.values()):
                self.low = self.high = 0.0
                return 0.0, None
            return self._lag_left(tail), None
        # a number still (a broker back from a restart resumes), the reason says
        stall = ", ".join(map(str, stalled))
        stall = f"broker(s) {stall} took in nothing in the window" if stalled else ""
        if not flows:
            return None, stall or "no moves to estimate"
        capacity = float(cap) if cap else float(PRIOR_BPS)
        caps = caps or Caps()
        idle = {e: ts - t for e, t in self._end_busy.items() if t < ts}
        # at the throttle: the share measured did not earn its keep (ablation)
        fc = simulate(
            flows, capacity, caps, tail, rest_bytes, self.poll_s, self._elections,
            self._rest_leaders, idle=idle, burst=self.meter.burst,
            windows=self.ends.windows(ts) if cap and self.meter.replaying(ts) else None,
            now=ts, ends=self._ends,
        )  # fmt: skip
        if not math.isfinite(fc.seconds):
            return None, stall or "no bytes can move (a throttle of 0?)"
        state = (ts, flows, idle, self._elections, self._rest_leaders, rest_bytes)
        paced = (
            self._pace(state, caps, tail, capacity, fc.seconds) if cap and fc.seconds > 0 else None
        )
        eta, low, high = self._range(fc, paced is not None)
        if paced is not None:  # the run's measured pace takes over the model's (``_pace``)
            scale = paced / eta
            eta, low, high = paced, low * scale, high * scale
        self.low, self.high = self._widened(eta, low, high, capacity)
        # the simulation's own count (``physical_bound``), before any of its terms
        self.bound = fc.busiest_bytes / cap if cap else None
        why = self._why(fc, cap)
        return eta, f"{stall}; if they resume: {why}" if stall else why

    def _lag_left(self, tail: float) -> float:
        """Every byte in: the completion lag counts down (and the elections queued go out
        at the polls)."""
        q, per = self._elections or (0, 1)
        end = max(tail, math.ceil(q / max(1, per)) * (self.poll_s or 1.0) if q else 0.0)
        # the lags vary (bench_eta's KIP-435 steps: 1.19 s measured, the last 0.2-0.5 s)
        self.low, self.high = max(0.0, end - self.tail_spread - self.poll_s), end + self.poll_s
        return end

    def _range(self, fc: Forecast, paced: bool) -> tuple[float, float, float]:
        """The model's ETA (at the throttle) and its range, holding the ETA itself. Before the
        run's pace is measured the range is the copying at the ends of the share measured
        between samples: ``fc`` copies at the throttle, and a cluster measured at 0.7 of it
        must stretch the range by 1 / 0.7, not leave the truth above it. Once the pace carries
        the level, the range is the share's spread about its mean (``paced``)."""
        lo_s, hi_s = self.meter.share_range
        level = self.meter.share if paced else 1.0

        def at(share: float) -> float:
            return fc.seconds - fc.copy_s + fc.copy_s * level / share

        return fc.seconds, min(fc.seconds, at(hi_s)), max(fc.seconds, at(lo_s))

    def _widened(self, eta: float, low: float, high: float, capacity: float) -> tuple[float, float]:
        """The range no narrower than what the run can see: a completion at one of its
        polls, and bytes a fetch behind (a follower's log grows a fetch at a time, up to 1
        MiB: the sandbox's samples read 0.94 MiB steps, the last one often unseen before the
        end)."""
        behind = FETCH_BYTES / max(capacity, 1.0)
        low = max(0.0, min(low, eta * (1 - SPREAD_FLOOR), eta - self.poll_s - self.tail_spread))
        high = max(high, eta * (1 + SPREAD_FLOOR), eta + self.poll_s + behind)
        return low, high

    def _why(self, fc: Forecast, cap: float | None) -> str:
        """What bounds the ETA, and at which rate it was reckoned."""
        why = fc.bottleneck or "at the run's rate"
        if self.meter.changed:
            why = f"{why}, at the new throttle (no rate measured since it changed)"
        elif not self.meter.measured:
            why = f"{why}, at the throttle (no rate measured yet)" if cap else why
        return why

    def _pace(
        self, state: PaceState, caps: Caps, tail: float, capacity: float, model: float
    ) -> float | None:
        """The ETA at the run's own pace (``pace.RunPace``), None before it is measured: the
        model's seconds of work left at a state, at the throttle (share 1, no quota replay),
        with the lags and bursts measured now."""

        def work(st: PaceState) -> tuple[float, float]:
            _, fl, idl, elections, rest_leaders, rest = st
            ends = self._ends if fl is state[1] else None  # this sample's: its ends are known
            fc = simulate(
                fl, capacity, caps, tail, rest, self.poll_s, elections, rest_leaders,
                idle=idl, burst=self.meter.burst, on_polls=False, ends=ends,
            )  # fmt: skip
            return fc.seconds, fc.copy_s

        key = (capacity, caps, tail, self.poll_s, self.meter.burst)
        return self.paced.estimate(state, work, model, key)

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
            "throttle_share": round(self.meter.share, 3) if self.meter.measured else None,
            "run_pace": None if self.paced.value is None else round(self.paced.value, 3),
        }
