"""Kafka's replication throttle at both ends of a copy (issue 21): the one model the simulator
(``SimCluster``), the what-if and a run's ETA (``engine.eta``) share.

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

import math
from collections.abc import Hashable, Mapping, Sequence

Stream = tuple[Hashable | None, Hashable]  # (source: leader broker or None, target broker)
# Kafka's defaults: replication.quota.window.num, replication.quota.window.size.seconds
QUOTA_WINDOWS = 11
QUOTA_WINDOW_S = 1.0


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
    # resources: ("o", broker) and ("i", broker), numbered in the order first met, and each
    # stream's two ends as those numbers (-1: unbounded). Numbers index the bookkeeping, not
    # the tuples (issue 19, poll cost: hashing a tuple at every step of the scan below was
    # most of a call, ~10 ms for 2,000 moves on 100 brokers, four calls per ETA)
    index: dict[tuple[str, Hashable], int] = {}
    caps: list[float] = []
    members: list[list[int]] = []
    ends: list[tuple[int, int]] = []
    for k, (src, dst) in enumerate(streams):
        o = i = -1
        if src is not None and src in out_cap:
            o = index.get(("o", src), -1)
            if o < 0:
                o = index[("o", src)] = len(caps)
                caps.append(max(0.0, float(out_cap[src])))
                members.append([])
            members[o].append(k)
        if dst in in_cap:
            i = index.get(("i", dst), -1)
            if i < 0:
                i = index[("i", dst)] = len(caps)
                caps.append(max(0.0, float(in_cap[dst])))
                members.append([])
            members[i].append(k)
        ends.append((o, i))
    used = [0.0] * len(caps)  # rate of the streams already fixed there
    free = [len(ks) for ks in members]  # streams still rising there
    rising = list(range(len(caps)))  # resources with streams still rising, in order
    fixed = [False] * n
    while rising:
        best, level = -1, math.inf
        for r in rising:  # the first to fill (ties: the first numbered)
            lv = (caps[r] - used[r]) / free[r]
            if lv < level:
                best, level = r, lv
        if best < 0:
            break
        level = max(0.0, level)
        for k in members[best]:
            if fixed[k]:
                continue
            fixed[k] = True
            rates[k] = level
            for r in ends[k]:
                if r >= 0:
                    free[r] -= 1
                    used[r] += level
        rising = [r for r in rising if free[r] > 0]
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
