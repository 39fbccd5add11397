"""Pass 4, in rounds: every broker within its bytes band (capacity limits, ``--balance
bytes``): the driver splits each round over the chunks (``prepare_bytes``), each chunk applies
its share (``bytes_chunk``)."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .aggregates import rack_key
from .apportion import apportion
from .quotas import Prepared
from .rows import Changed, chunk_key
from .rules import (
    RuleContext,
    required_racks,
)


def chunk_totals(rows: Iterable[Changed], chunk: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(chunk, broker) -> (bytes, replicas) of a chunk's final rows (the Spark twin is a
    groupBy over the exploded replica lists)."""
    byts: dict[int, int] = defaultdict(int)
    reps: dict[int, int] = defaultdict(int)
    for _, _, _, new, size in rows:
        for b in new:
            byts[b] += size
            reps[b] += 1
    return {(chunk, b): (byts[b], reps[b]) for b in byts}


@dataclass
class BytesQuota:
    """A chunk's share of one bytes round: bytes each giver sheds (at least ``out``, at most
    ``out_max``), bytes each receiver may take (hard ``cap``; ``aim`` first) and, when replica
    counts may change, replicas each receiver may gain."""

    out: dict[int, float] = field(default_factory=dict)
    out_max: dict[int, float] = field(default_factory=dict)
    cap: dict[int, float] = field(default_factory=dict)
    aim: dict[int, float] = field(default_factory=dict)
    add: dict[int, int] = field(default_factory=dict)


@dataclass
class BytesPlan:
    ctx: RuleContext
    quotas: dict[int, BytesQuota]
    swap: bool  # replica counts are a goal: only count-neutral exchanges


def bytes_off(totals: Mapping[int, float], bands: Mapping[int, tuple[float, float]]) -> float:
    """Bytes outside the bands, summed over brokers."""
    return sum(
        max(0.0, totals.get(b, 0) - hi) + max(0.0, lo - totals.get(b, 0))
        for b, (lo, hi) in bands.items()
    )


def prepare_bytes(
    totals: Mapping[tuple[int, int], tuple[int, int]], prep: Prepared
) -> BytesPlan | None:
    """One bytes round, from the chunks' (bytes, replicas) per broker: which brokers give and
    take how much. A giver's share goes to the chunks where it holds most (up to half of what it
    holds there, then the rest), so that few chunks round a partition up; receivers' room
    follows the flow. None when every broker is within its band."""
    bands = prep.bands
    x: dict[int, float] = defaultdict(float)
    count: dict[int, int] = defaultdict(int)
    per: dict[int, dict[int, int]] = defaultdict(dict)
    for (c, b), (n_bytes, n) in totals.items():
        x[b] += n_bytes
        count[b] += n
        per[b][c] = n_bytes
    need_out = {b: x[b] - hi for b, (lo, hi) in bands.items() if x[b] > hi}
    need_in = {b: lo - x[b] for b, (lo, hi) in bands.items() if x[b] < lo}
    short, over = sum(need_in.values()), sum(need_out.values())
    if short <= 0 and over <= 0:
        return None
    room_out = {b: x[b] - lo for b, (lo, hi) in bands.items() if x[b] > lo}
    room_in = {b: hi - x[b] for b, (lo, hi) in bands.items() if x[b] < hi}
    aim_out = _aims(prep, need_in, need_out, room_out, short, over)
    total_out = sum(aim_out.values())
    if total_out <= 0:
        return None
    chunks = list(range(prep.params.chunks))
    quotas = {c: BytesQuota() for c in chunks}
    flow = _split_givers(quotas, aim_out, per, x, room_out)
    swap = "replicas" in prep.params.balance
    weights = [flow[c] for c in chunks]
    for b, r in room_in.items():
        if b in aim_out:
            continue  # a broker does not both give and take in one round
        adds = None
        if not swap and b in prep.caps:  # replicas it may still gain, split like the flow
            adds = apportion(max(0, prep.caps[b] - count[b]), [round(w) for w in weights])
        for i, c in enumerate(chunks):
            if flow[c] > 0:
                quotas[c].cap[b] = r * flow[c] / total_out
                quotas[c].aim[b] = need_in.get(b, 0.0) * flow[c] / total_out
                if adds is not None:
                    quotas[c].add[b] = adds[i]
    return BytesPlan(prep.ctx, quotas, swap)


def _aims(
    prep: Prepared,
    need_in: dict[int, float],
    need_out: dict[int, float],
    room_out: dict[int, float],
    short: float,
    over: float,
) -> dict[int, float]:
    """How much each broker gives: those above their ceiling their excess; brokers within
    their band give too when those below their floor need more than those above their
    ceiling shed: the ones with the widest margin first (few givers, whole partitions), in
    the short broker's rack first (with RF >= racks every partition keeps one replica per
    rack: bytes cannot change rack)."""
    bands = prep.bands
    aim_out = dict(need_out)
    spare = {b: room_out[b] - need_out.get(b, 0.0) for b in room_out}
    spare = {b: v for b, v in spare.items() if v > 0}
    rk = {b: rack_key(prep.ctx, b) for b in bands}

    def draw(amount: float, pool: list[int]) -> float:
        for b in sorted(pool, key=lambda b: (-spare[b], b)):
            if amount <= 0:
                break
            take = min(amount, spare[b])
            if take > 0:
                aim_out[b] = aim_out.get(b, 0.0) + take
                spare[b] -= take
                amount -= take
        return amount

    left_short = 0.0
    for g in sorted(set(rk.values()), key=str):
        gap = sum(v for b, v in need_in.items() if rk[b] == g) - sum(
            v for b, v in need_out.items() if rk[b] == g
        )
        if gap > 0:
            left_short += draw(gap, [b for b in spare if rk[b] == g])
    draw(min(left_short, max(0.0, short - over)), list(spare))  # what no rack covers itself
    return aim_out


def _split_givers(
    quotas: dict[int, BytesQuota],
    aim_out: dict[int, float],
    per: dict[int, dict[int, int]],
    x: dict[int, float],
    room_out: dict[int, float],
) -> dict[int, float]:
    """Each giver's share over the chunks where it holds most (up to half of what it holds
    there, then the rest); the flow out of each chunk."""
    flow: dict[int, float] = defaultdict(float)
    for b, a in aim_out.items():
        order = sorted((c for c, xb in per[b].items() if xb > 0), key=lambda c: (-per[b][c], c))
        share: dict[int, float] = defaultdict(float)
        left = a
        for half in (0.5, 1.0):
            for c in order:
                take = min(left, per[b][c] * half - share[c])
                if take > 0:
                    share[c] += take
                    left -= take
        for c, v in share.items():
            quotas[c].out[b] = v
            # what this giver may shed there at most: its floor, spread like its holdings
            quotas[c].out_max[b] = max(v, room_out.get(b, a) * per[b][c] / x[b])
            flow[c] += v
    return flow


def _rack_keeps(reps: Sequence[int], pos: int, dest: int, ctx: RuleContext) -> bool:
    """Replacing reps[pos] by dest leaves min(RF, racks) racks spanned (the validator's rule
    for every partition a plan touches)."""
    if ctx.rack_count <= 1:
        return True
    after = len({ctx.racks.get(b) for j, b in enumerate(reps) if j != pos} | {ctx.racks.get(dest)})
    return after >= required_racks(len(reps), ctx.rack_count)


class _BytesChunk:
    """Greedy bytes round of one chunk: a giver's replicas go to receivers (or, when replica
    counts are a goal, are exchanged against smaller ones of the receiver) until the giver has
    shed its share; replicas that arrive in this plan anyway are re-targeted first (no extra
    move, no extra byte copied)."""

    TRIES = 24  # candidates looked at per size window

    def __init__(self, rows: Sequence[Changed], bp: BytesPlan, quota: BytesQuota):
        self.rows = sorted(rows, key=lambda r: (chunk_key(r[0], r[1]), r[0], r[1]))
        self.new = [list(r[3]) for r in self.rows]
        self.old = [set(r[2]) for r in self.rows]
        self.size = [r[4] for r in self.rows]
        self.bp, self.ctx, self.q = bp, bp.ctx, quota
        self.out = dict(quota.out)
        self.out_max = dict(quota.out_max)
        self.cap = dict(quota.cap)
        self.aim = dict(quota.aim)
        self.add = dict(quota.add)
        watch = set(self.out) | (set(self.cap) if bp.swap else set())
        # broker -> [free list, paid list] of (size, row), sorted: free = arrived in this plan
        self.lists: dict[int, list[list[tuple[int, int]]]] = {b: [[], []] for b in watch}
        for i, reps in enumerate(self.new):
            for b in reps:
                if b in self.lists:
                    self.lists[b][0 if b not in self.old[i] else 1].append((self.size[i], i))
        for ls in self.lists.values():
            ls[0].sort()
            ls[1].sort()

    def _drop(self, b: int, i: int) -> None:
        if b in self.lists:
            for lst in self.lists[b]:
                k = bisect_left(lst, (self.size[i], i))
                if k < len(lst) and lst[k] == (self.size[i], i):
                    del lst[k]
                    return

    def _add(self, b: int, i: int) -> None:
        if b in self.lists:
            insort(self.lists[b][0 if b not in self.old[i] else 1], (self.size[i], i))

    def _move(self, i: int, a: int, b: int) -> None:
        reps = self.new[i]
        self._drop(a, i)
        reps[reps.index(a)] = b
        self._add(b, i)

    def _fits(self, i: int, a: int, b: int) -> bool:
        reps = self.new[i]
        return b not in reps and _rack_keeps(reps, reps.index(a), b, self.ctx)

    def _window(self, lst, lo: float, hi: float, low_first: bool):
        """Rows of a sorted (size, row) list with lo <= size <= hi, a few, from one end."""
        i = bisect_left(lst, (math.ceil(lo), -1))
        j = len(lst) if hi == float("inf") else bisect_right(lst, (math.floor(hi), 1 << 62))
        idx = range(i, j) if low_first else range(j - 1, i - 1, -1)
        for n, k in enumerate(idx):
            if n >= self.TRIES:
                return
            yield lst[k]

    def _receivers(self) -> list[int]:
        return sorted(
            (
                b
                for b, c in self.cap.items()
                if c > 0 and self.add.get(b, 1) > 0 and b not in self.bp.ctx.cordoned
            ),
            key=lambda b: (-(self.aim.get(b, 0.0)), -self.cap[b], b),
        )

    def _one_move(self, a: int, finish: bool) -> bool:
        need = self.out[a]
        for lst in self.lists[a]:
            for b in self._receivers():
                hi = min(self._most(a) if finish else need, self.cap[b])
                lo = need if finish else 1
                for s, i in self._window(lst, lo, hi, low_first=finish):
                    if self._fits(i, a, b):
                        self._move(i, a, b)
                        self._took(a, b, s)
                        if b in self.add:
                            self.add[b] -= 1
                        return True
        return False

    def _one_swap(self, a: int, finish: bool) -> bool:
        """Exchange a replica p of the giver for a smaller one q of a receiver: the giver sheds
        size(p) - size(q), and 2 replicas (size(p) + size(q) bytes) move, so the cheapest
        exchange of the right size wins: q as small as the receiver has, p just above it."""
        need = self.out[a]
        for b in self._receivers():
            q_lists = self.lists.get(b, [])
            qmin = min((ql[0][0] for ql in q_lists if ql), default=None)
            if qmin is None:
                continue
            limit = min(self._most(a) if finish else need, self.cap[b])
            want = need if finish else 1
            if limit < want:
                continue
            for lst in self.lists[a]:
                p_win = self._window(lst, qmin + want, qmin + limit, low_first=finish)
                for sp, i in list(p_win):
                    if not self._fits(i, a, b):
                        continue
                    lo, hi = sp - limit, sp - want
                    for q_list in q_lists:
                        for sq, j in self._window(q_list, max(0, lo), hi, low_first=not finish):
                            if j == i or not self._fits(j, b, a):
                                continue
                            self._move(i, a, b)
                            self._move(j, b, a)
                            self._took(a, b, sp - sq)
                            return True
        return False

    def _most(self, a: int) -> float:
        """The most a finishing step may shed: down to the giver's floor."""
        return self.out_max[a]

    def _took(self, a: int, b: int, n: int) -> None:
        self.out[a] -= n
        self.out_max[a] -= n
        self.cap[b] -= n
        if b in self.aim:
            self.aim[b] -= n

    def run(self) -> list[Changed]:
        step = self._one_swap if self.bp.swap else self._one_move
        for a in sorted(self.out, key=lambda b: (-self.out[b], b)):
            while self.out[a] > 0 and (step(a, False) or step(a, True)):
                pass
        return [
            Changed(t, p, old, new, sz)
            for (t, p, old, _, sz), new in zip(self.rows, self.new, strict=True)
        ]


def bytes_chunk(rows: Sequence[Changed], bp: BytesPlan, chunk: int) -> list[Changed]:
    """Apply a chunk's share of a bytes round to its final rows (every partition of the chunk);
    returns them all, in chunk order."""
    quota = bp.quotas.get(chunk)
    if quota is None or not quota.out:
        return sorted(rows, key=lambda r: (chunk_key(r[0], r[1]), r[0], r[1]))
    return _BytesChunk(rows, bp, quota).run()
