"""The adaptive pace's rates as written to the brokers (for ``run.pace``): a
raise in steps (fewer where the controller measured room), a decrease at once. Pure."""

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
        self._steps = dict.fromkeys(rates, RAMP_STEPS)

    def retarget(
        self, rates: Mapping[int, int], now: float, steps: Mapping[int, int] | None = None
    ) -> None:
        """New targets (the controller's ``rates``); a ramp under way starts again from where
        it is. ``steps``: per broker, the 1-s steps of a new raise (``RAMP_STEPS`` where not
        given; the controller takes fewer where the health measured shows room)."""
        for b, r in rates.items():
            if r == self._to.get(b):
                continue
            cur = self._at(b, now) if b in self._to else r
            self._from[b], self._to[b], self._since[b] = (cur if r > cur else r), r, now
            self._steps[b] = max(1, min(RAMP_STEPS, (steps or {}).get(b, RAMP_STEPS)))

    def _at(self, b: int, now: float) -> int:
        lo, hi = self._from[b], self._to[b]
        if hi <= lo:
            return hi
        n = self._steps.get(b, RAMP_STEPS)
        k = min(n, int((now - self._since[b]) / RAMP_STEP_S) + 1)
        return int(lo + (hi - lo) * k / n)

    def at(self, now: float) -> dict[int, int]:
        """The rate each broker is written at ``now``."""
        return {b: self._at(b, now) for b in sorted(self._to)}
