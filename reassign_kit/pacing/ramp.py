"""The adaptive pace's rates as written to the brokers (for ``run.pace``): a
raise in steps, a decrease at once. Pure."""

from __future__ import annotations

from collections.abc import Mapping

RAMP_STEPS, RAMP_STEP_S = 10, 1.0  # a raise reaches the brokers in 10 steps of 1 s


class Ramp:
    """The rates written to the brokers: a decrease at once, an increase in ``RAMP_STEPS``
    equal steps of ``RAMP_STEP_S``. Kafka's replication quota is a rate averaged over 11
    one-second windows (``replication.quota.window.num``): a limit raised in one step lets the
    fetchers take the new rate's credit over the whole window at once (a burst at the disk's
    speed, then the old rate again), and on bench-pacing each raise came with a spike in the
    load's latency the second after; a limit raised by a tenth each second keeps the average
    rising as fast as the windows fill, so the copy runs at the new rate from the first second
    without the burst. Pure."""

    def __init__(self, rates: Mapping[int, int], now: float):
        self._from = dict(rates)
        self._to = dict(rates)
        self._since = {b: now for b in rates}

    def retarget(self, rates: Mapping[int, int], now: float) -> None:
        """New targets (the controller's ``rates``); a ramp under way starts again from where
        it is."""
        for b, r in rates.items():
            if r == self._to.get(b):
                continue
            cur = self._at(b, now) if b in self._to else r
            self._from[b], self._to[b], self._since[b] = (cur if r > cur else r), r, now

    def _at(self, b: int, now: float) -> int:
        lo, hi = self._from[b], self._to[b]
        if hi <= lo:
            return hi
        k = min(RAMP_STEPS, int((now - self._since[b]) / RAMP_STEP_S) + 1)
        return int(lo + (hi - lo) * k / RAMP_STEPS)

    def at(self, now: float) -> dict[int, int]:
        """The rate each broker is written at ``now``."""
        return {b: self._at(b, now) for b in sorted(self._to)}
