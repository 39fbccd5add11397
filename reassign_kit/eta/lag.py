"""The completion lag, measured (for ``run.track``): from a step's last byte to its completion
seen by the run (the follower joins the ISR, the controller ends the reassignment, a poll sees
it). The ETA adds one after every step left. Pure.

Every step counts, not only those a sample saw full (those biased the lag long: a step whose
lag is short completes before the next sample). Its last byte is placed from its bytes left
at the last sample that saw it copying and its rate before, or, seen full, halfway since the
sample before (``full_since``), whichever is later (a sample reads a follower's log a fetch
behind at most; halfway places it up to half an interval early)."""

from __future__ import annotations

import statistics

from ..model import TopicPartition

RECENT_LAGS = 20  # the lags the median is taken over
# the lags a median needs before it replaces the half poll (two will do when both outlasted
# a poll). A lag no longer than a poll may be the poll's phase alone (the last byte just
# after a poll, seen at the next one), and one lag may be an outlier (bench/RESULTS.md,
# bench_eta)
MIN_LAGS = 3


def full_since(now: float, prev: float, submitted: float | None) -> float:
    """When a replica seen full at the sample ``now`` got its last byte: halfway since the
    sample before (``prev``) or since its step was submitted, whichever is later (a move
    submitted between two samples got its bytes after its submission: halfway since ``prev``
    read its lag long, and the model counted the excess at each batch left)."""
    since = prev if submitted is None else max(prev, min(submitted, now))
    return now - max(0.0, now - since) / 2


class LagMeter:
    """The lags of the steps completed lately (``lags``) and the steps in flight: full since
    (``full_at``), or their bytes left and rate at the last sample (``copying``)."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self.full_at: dict[TopicPartition, float] = {}
        # per step copying: (its step, sample ts, bytes left, bytes/s over the interval before)
        self.copying: dict[TopicPartition, tuple[int, float, float, float]] = {}

    def sampled(
        self,
        now: float,
        prev: float,
        steps: dict[TopicPartition, tuple[int, float, float | None]],
    ) -> None:
        """A sample at ``now`` (the one before at ``prev``) saw ``steps``: per move in
        flight, (its step, the bytes its new replicas still need — the most any one of them
        does —, when the step was submitted)."""
        copying = {}
        # a step no longer in flight and not landed (its move failed, was cancelled or
        # stopped) no longer holds the lag's countdown
        self.full_at = {tp: at for tp, at in self.full_at.items() if tp in steps}
        for tp, (step, left, submitted) in steps.items():
            old = self.copying.get(tp)
            if left <= 0:
                if tp not in self.full_at:
                    at = full_since(now, prev, submitted)
                    if old is not None and old[0] == step and old[3] > 0:
                        at = max(at, min(now, _last_byte(old)))
                    self.full_at[tp] = at
                continue
            rate = 0.0
            if old is not None and old[0] == step and now > old[1]:
                rate = (old[2] - left) / (now - old[1])
                if rate <= 0:
                    rate = old[3]  # no byte seen in the interval: the rate before it
            copying[tp] = (step, now, left, rate)
        self.copying = copying

    def landed(self, tp: TopicPartition, now: float) -> float | None:
        """The step in flight of ``tp`` completed at ``now``: one more lag (None when nothing
        places its last byte: no sample saw it copying twice nor full)."""
        seen_full = self.full_at.pop(tp, None)
        rec = self.copying.pop(tp, None)
        lag = None
        if seen_full is not None:
            lag = max(0.0, now - seen_full)
        elif rec is not None and rec[2] > 0 and rec[3] > 0:
            lag = max(0.0, now - min(now, _last_byte(rec)))
        if lag is not None:
            self.lags = [*self.lags[-(RECENT_LAGS - 1) :], lag]
        return lag

    def tail(self, poll_s: float, all_in: bool, now: float) -> tuple[float, float]:
        """(the lag to add after a step's last byte, how much shorter one was measured): the
        median measured (of ``MIN_LAGS`` at least, or of two that outlasted a poll), else half
        a poll; once every byte is in (``all_in``), what is left of it since the last step in
        flight went full."""
        n = len(self.lags)
        enough = n >= MIN_LAGS or (n >= 2 and min(self.lags) > poll_s)
        tail = statistics.median(self.lags) if enough else poll_s / 2
        spread = tail - min(self.lags) if enough else 0.0
        if self.full_at and all_in:  # every byte in: the lag runs down
            tail = max(0.0, tail - (now - max(self.full_at.values())))
        return tail, spread


def _last_byte(rec: tuple[int, float, float, float]) -> float:
    """When a step copying at a sample got its last byte: its bytes left at its rate."""
    _, ts, left, rate = rec
    return ts + left / rate
