"""Kafka's replication throttle at both ends of a copy: the one model the simulator
(``SimCluster``), the what-if and a run's ETA (``eta.estimate``) share.

Every new replica being filled is a *stream* from the partition's leader (its source) to the
broker receiving it (its target). A broker's leader-side throttle is shared by every stream
reading from it, its follower-side throttle by every stream writing to it; a stream goes as
fast as the tighter of the two lets it, and the room one stream leaves is taken by the
others (max-min fair share: a drain of one broker into three is bound by the source, each
target getting a third; a spread from three brokers into one by the target). Kafka's quota
is a rate averaged over windows (``replication.quota.window.num`` 11 of ``.size.seconds``
1), so a broker that was idle for part of them takes in (or sends) a burst (``Windows``).
Pure: numbers in, numbers out."""

from __future__ import annotations

import heapq
import math
from collections.abc import Hashable, Mapping, Sequence

Stream = tuple[Hashable | None, Hashable]  # (source: leader broker or None, target broker)
# Kafka's defaults: replication.quota.window.num, replication.quota.window.size.seconds
QUOTA_WINDOWS = 11
QUOTA_WINDOW_S = 1.0
# What a broker filled by several streams at once loses each time one of them ends: about one
# fetch (``replica.fetch.max.bytes``, 1 MiB) of its follower throttle, measured rather than
# derived from Kafka's code (bench/RESULTS.md, bench_eta); at most a tenth of the partition
# that ended, as nothing was measured on partitions smaller than 6 MiB.
END_LOSS_BYTES = float(1 << 20)
END_LOSS_MAX_SHARE = 0.1


def end_loss(size: float) -> float:
    """What a receiving end loses when a stream of a ``size``-byte partition ends there while
    others go on filling it: a fetch, at most ``END_LOSS_MAX_SHARE`` of the partition."""
    return min(END_LOSS_BYTES, END_LOSS_MAX_SHARE * max(0.0, float(size)))


class EndLosses:
    """What each broker still loses of its inbound capacity (``end_loss``): a stream into it
    ended while others go on filling it, and it takes in for nothing until it has paid.
    ``streams`` below are (anything, target broker) pairs."""

    def __init__(self) -> None:
        self.owed: dict[int, float] = {}  # broker -> inbound bytes it still loses

    def keep(self, filled: set[int]) -> None:
        """A broker no stream fills any more idles: the quota gives it back."""
        self.owed = {b: n for b, n in self.owed.items() if b in filled}

    def owing(
        self, streams: Sequence[tuple[object, int]], rates: Sequence[float], step: float
    ) -> tuple[dict[int, float], float]:
        """The inbound rate of each broker that owes, and ``step`` shortened to end where the
        first of them has paid."""
        owing: dict[int, float] = {}
        for (_, b), rate in zip(streams, rates, strict=True):
            if b in self.owed:
                owing[b] = owing.get(b, 0.0) + rate
        for b, rate in owing.items():
            if rate > 0:
                step = min(step, self.owed[b] / rate)
        return owing, step

    def pay(self, owing: Mapping[int, float], step: float) -> None:
        for b, rate in owing.items():
            self.owed[b] -= rate * step
            if self.owed[b] <= 1e-6:
                del self.owed[b]

    def owe(self, ended: Sequence[tuple[int, int]], still: set[int], most: float) -> None:
        """Each broker where a stream ended (``ended``: broker, partition size) while others
        still fill it owes what it lost (``end_loss``, at most ``most``)."""
        for b, size in ended:
            loss = min(most, end_loss(size))
            if b in still and loss > 0:
                self.owed[b] = self.owed.get(b, 0.0) + loss


def idle_credit(idle_s: float, limit: float, windows: int = QUOTA_WINDOWS) -> float:
    """What ``Windows`` lets an end move at once when it copies again after ``idle_s``
    seconds idle, having copied at ``limit`` before: the windows kept hold ``limit`` for
    the busy ones and nothing for the idle ones, so ``limit * idle_s``; nothing once every
    window it copied in has expired (and nothing for an end that had not copied: a broker
    starting from idle gets no burst)."""
    span = windows * QUOTA_WINDOW_S
    return limit * idle_s if 0.0 < idle_s < span - QUOTA_WINDOW_S else 0.0


def fair_share(
    streams: Sequence[Stream],
    out_cap: Mapping[Hashable, float],
    in_cap: Mapping[Hashable, float],
) -> list[float]:
    """Each stream's rate (bytes/s) under max-min fair sharing of its source's outbound
    capacity (``out_cap``; absent = unbounded) and its target's inbound one (``in_cap``;
    absent = unbounded). Progressive filling: all streams rise together, those of the
    first resource to fill stop there, the others go on. A stream with no bounded end gets
    ``math.inf``."""
    n = len(streams)
    rates = [math.inf] * n
    if not n:
        return rates
    # resources: each broker's outbound and inbound end, numbered in the order first met,
    # and each stream's two ends as those numbers (-1: unbounded). Numbers index the
    # bookkeeping, not tuples (hashing a tuple at every step of the scan
    # below was most of a call)
    outs: dict[Hashable, int] = {}
    ins: dict[Hashable, int] = {}
    caps: list[float] = []
    members: list[list[int]] = []
    ends: list[tuple[int, int]] = []
    for k, (src, dst) in enumerate(streams):
        o = outs.get(src, -1)
        if o < 0 and src is not None and src in out_cap:
            o = outs[src] = len(caps)
            caps.append(max(0.0, float(out_cap[src])))
            members.append([])
        if o >= 0:
            members[o].append(k)
        i = ins.get(dst, -1)
        if i < 0 and dst in in_cap:
            i = ins[dst] = len(caps)
            caps.append(max(0.0, float(in_cap[dst])))
            members.append([])
        if i >= 0:
            members[i].append(k)
        ends.append((o, i))
    used = [0.0] * len(caps)  # rate of the streams already fixed there
    free = [len(ks) for ks in members]  # streams still rising there
    fixed = [False] * n
    # the resources by the level at which they fill (ties: the first numbered), kept in a
    # heap with the count of streams rising there when pushed: an entry is stale once that
    # count fell (a full resource's is 0, never pushed). A scan of every resource at every
    # fill was most of a call at 200 ends (bench_poll)
    heap = [(caps[r] / free[r], r, free[r]) for r in range(len(caps))]
    heapq.heapify(heap)
    while heap:
        level, best, was = heapq.heappop(heap)
        if was != free[best]:
            continue  # a stale entry (its resource changed since: its fresh one is in the heap)
        if level == math.inf:
            break  # only unbounded ends left: their streams keep ``math.inf``
        level = max(0.0, level)
        touched = set()
        for k in members[best]:
            if fixed[k]:
                continue
            fixed[k] = True
            rates[k] = level
            o, i = ends[k]
            if o >= 0:
                free[o] -= 1
                used[o] += level
                touched.add(o)
            if i >= 0:
                free[i] -= 1
                used[i] += level
                touched.add(i)
        for r in touched:
            if free[r]:
                heapq.heappush(heap, ((caps[r] - used[r]) / free[r], r, free[r]))
    return rates


class Windows:
    """Kafka's quota on one broker and direction: the bytes it may still move now so that
    its rate over the windows kept (the oldest dropped after ``n``) stays at ``limit``.
    Measured on the sandbox (bench_eta): a broker starting from idle gets no burst (the rate
    holds from the first second), one idle for part of the last windows catches up at full
    speed until its average is back at the throttle."""

    def __init__(self, n: int = QUOTA_WINDOWS, size_s: float = QUOTA_WINDOW_S):
        self.n, self.size_s = n, size_s
        self.wins: list[list[float]] = []  # [window start, bytes]

    def credit(self, now: float, limit: float) -> float:
        start = (now // self.size_s) * self.size_s
        wins = [w for w in self.wins if w[0] > start - self.n * self.size_s]
        if not wins or wins[-1][0] != start:
            wins.append([start, 0.0])
        self.wins = wins
        span = max(now - wins[0][0], self.size_s)
        return max(0.0, limit * span - sum(w[1] for w in wins))

    def record(self, moved: float) -> None:
        if self.wins:
            self.wins[-1][1] += moved


class BrokerQuotas:
    """The replication quotas of a model's brokers: a ``Windows`` per broker and direction
    (inbound: its follower throttle; outbound: its leader throttle), made on first use."""

    def __init__(self) -> None:
        self.inbound: dict[int, Windows] = {}
        self.outbound: dict[int, Windows] = {}

    def credit(
        self, broker: int, inbound: bool, now: float, limit: float, n: int, size_s: float
    ) -> float:
        """What ``broker`` may still move now in that direction (``Windows.credit``)."""
        store = self.inbound if inbound else self.outbound
        w = store.get(broker)
        if w is None:
            w = store[broker] = Windows(n, size_s)
        return w.credit(now, limit)

    def charge(
        self,
        ends: list[tuple[int | None, int]],
        rates: list[float],
        throttled_in: set[int],
        out_caps: Mapping[int, float],
        dt: float,
    ) -> None:
        """Each stream's bytes over ``dt`` recorded at its throttled ends (``out_caps``: the
        sources whose leader throttle bounds them)."""
        for (src, b), r in zip(ends, rates, strict=True):
            if b in throttled_in and (w := self.inbound.get(b)) is not None:
                w.record(r * dt)
            if src in out_caps and (w := self.outbound.get(src)) is not None:
                w.record(r * dt)
