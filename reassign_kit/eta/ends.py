"""Each broker end's bytes over the last quota windows (for ``eta.estimate.RunEta``): what an
end may move next depends on what it moved in the last ones (Kafka's quota averages
``QUOTA_WINDOWS`` one-second windows). Received bytes per broker are the run's counters, sent
bytes per leader what its streams copied; ``EndBytes.windows`` rebuilds each end's windows
for the simulation to replay; ``window_rates``, each broker's rate (for display). Pure."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from ..cluster.quota import QUOTA_WINDOW_S, QUOTA_WINDOWS, Windows
from ..model import TopicPartition
from .model import Flow

# measured seconds before the share replaces the prior (``eta``), busy seconds before a
# broker's rate is shown (``window_rates``)
MIN_WINDOW_S = 3.0
QUOTA_SPAN_S = QUOTA_WINDOWS * QUOTA_WINDOW_S  # what Kafka's replication quota averages
End = tuple[str, int]  # ("i", broker) receiving, ("o", broker) sending


class EndBytes:
    """Bytes each end moved so far, at each sample of the last quota span."""

    def __init__(self) -> None:
        self.moved: list[tuple[float, dict[End, float]]] = []
        self._sent: dict[int, float] = {}
        # per stream in flight: (leader, bytes copied, size)
        self._copied: dict[tuple[TopicPartition, int], tuple[int | None, float, float]] = {}

    def track(self, ts: float, received: Mapping[int, float], flows: Sequence[Flow]) -> None:
        """One sample: received per broker; sent per leader from the streams of ``flows``
        (a stream gone since the last sample completed: its last bytes count)."""
        now: dict[tuple[TopicPartition, int], tuple[int | None, float, float]] = {}
        for f in flows:
            if f.state != "moving":
                continue
            for b, n in f.left.items():
                now[(f.tp, b)] = (f.src, f.size - n, f.size)
        for key, (src, got, _) in now.items():
            before = self._copied.get(key, (src, 0.0, 0.0))[1]
            if src is not None and got > before:
                self._sent[src] = self._sent.get(src, 0.0) + got - before
        for key, (src, got, size) in self._copied.items():
            if key not in now and src is not None:
                self._sent[src] = self._sent.get(src, 0.0) + max(0.0, size - got)
        self._copied = now
        point: dict[End, float] = {("i", b): float(n) for b, n in received.items()}
        point.update({("o", b): n for b, n in self._sent.items()})
        self.moved.append((ts, point))
        self.moved = [x for x in self.moved if x[0] >= ts - QUOTA_SPAN_S - 3 * QUOTA_WINDOW_S]

    def windows(self, ts: float) -> dict[End, Windows]:
        """Kafka's quota windows at ``ts`` of each end that moved bytes in the last ones, as
        the samples tell them (the bytes between two samples spread evenly over the time;
        none before the end first moved: a broker starting from idle gets no burst)."""
        out = {}
        for end in self.moved[-1][1] if self.moved else {}:
            pts = [(t, p.get(end, 0.0)) for t, p in self.moved]  # from before it first moved
            first = next((k for k in range(1, len(pts)) if pts[k][1] > pts[k - 1][1]), None)
            if first is None:
                continue
            pts = pts[first - 1 :]
            w = Windows()
            first = math.floor(max(pts[0][0], ts - QUOTA_SPAN_S) / QUOTA_WINDOW_S)
            for k in range(first, math.floor(ts / QUOTA_WINDOW_S) + 1):
                a = max(k * QUOTA_WINDOW_S, pts[0][0])
                b = min((k + 1) * QUOTA_WINDOW_S, ts)
                if b > a:
                    w.wins.append([k * QUOTA_WINDOW_S, at(pts, b) - at(pts, a)])
            out[end] = w
        return out


def at(pts: Sequence[tuple[float, float]], t: float) -> float:
    """The value of a piecewise linear curve at ``t`` (flat outside it)."""
    if t <= pts[0][0]:
        return pts[0][1]
    for (t0, v0), (t1, v1) in itertools.pairwise(pts):
        if t <= t1:
            return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1
    return pts[-1][1]


def window_rates(
    history: Sequence[tuple[float, Mapping[int, float], Mapping[int, float]]],
    now: tuple[float, Mapping[int, float], Mapping[int, float]],
    window_s: float,
) -> tuple[dict[int, float], float | None]:
    """(rate per broker, plan rate) at ``now`` = (ts, received per broker, busy seconds per
    broker), since the oldest point of ``history`` within ``window_s``: a broker's received
    bytes over its busy seconds (for display; shown only over ``MIN_WINDOW_S`` busy), the
    plan's over the wall seconds. ({}, None) without one."""
    ts, received, busy = now
    ref = next((h for h in history if h[0] < ts and ts - h[0] <= window_s), None)
    if ref is None:
        return {}, None
    dt = ts - ref[0]
    rates = {}
    for b, n in received.items():
        got = n - ref[1].get(b, 0.0)
        spent = busy.get(b, 0.0) - ref[2].get(b, 0.0)
        if got > 0 and spent >= min(MIN_WINDOW_S, dt):
            rates[b] = got / spent
    total = (sum(received.values()) - sum(ref[1].values())) / dt
    return rates, max(0.0, total)


def weighted_pct(pairs: Sequence[tuple[float, float]], q: float) -> float:
    """The ``q`` quantile of values weighted by weights: ``pairs`` = (value, weight)."""
    pairs = sorted(pairs)
    total = sum(w for _, w in pairs)
    acc = 0.0
    for v, w in pairs:
        acc += w
        if acc >= q * total:
            return v
    return pairs[-1][0]
