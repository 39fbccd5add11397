"""After the chunk pass's surplus moves: exchanges that keep every broker's count and copy
fewer bytes. The greedy pass takes each over-full broker's cheapest replica that fits at the
time (a topic crowded on the broker first); a replica it took may block a cheaper choice
later (two over-full brokers holding the same partition, one destination left). Each
exchange swaps a departure for a cheaper one and is kept only if every rule still holds (the
destination not already a member, the rack spread kept, no partition newly short of racks,
which the rack fix-up would move again), so the plan's moves stay as many and its bytes only
drop.

Two exchanges, repeated while one pays: *replace* (a cheaper replica of the same broker goes
to the same destination instead) and *shift* (a partition leaving broker b leaves from its
other over-full broker b2 of the same rack instead, whose departure k stays; b sends a
cheaper replica j)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterator
from typing import Any

from .aggregates import rack_key
from .rules import required_racks

# (partition index, replica position, from broker, to broker): one surplus departure
Departure = list[int]
RackOk = Callable[[list[int], int, int], bool]

MAX_ROUNDS = 8  # each round only lowers the bytes; a bound on the work, not on correctness
SCAN = 16  # cheaper replicas tried per departure: the bound on the work of a big chunk


class Exchanges:
    """The surplus departures of one chunk (``chunk``: replica_chunk's pass, read for its
    replica lists before and now, sizes, racks and frozen partitions) and the replicas that
    could replace them."""

    def __init__(self, chunk: Any, rack_ok: RackOk) -> None:
        self.chunk, self.new, self.size, self.rack_ok = chunk, chunk.new, chunk.size, rack_ok
        self.moved: set[tuple[int, int]] = set()
        self.cands: dict[int, list[tuple[int, int, int]]] = {}
        # per broker: the indexes into cands[b] of the replicas that may still be on b and
        # not moved, in order (a replica found moved away is dropped, one put back returns):
        # a scan skips the departures already taken, which are the cheapest of their broker
        self.live: dict[int, list[int]] = {}
        self.at: dict[int, dict[tuple[int, int], int]] = {}

    def run(self, departures: list[Departure]) -> list[tuple[Departure, Departure]]:
        """Improves ``departures`` in place (and the chunk's replica lists); returns the
        exchanges made, (before, after) pairs. Run last in the chunk (after the rack fix-up
        and the settling, which an exchange could otherwise make move more), each departure
        where the later passes left it; one of a replica that had arrived is left as it is."""
        old = self.chunk.old
        for m in departures:  # where a later pass re-pointed it
            m[3] = self.new[m[0]][m[1]]
        # a departure of an arrival (a detour) is not undone: that would be a move more
        departures[:] = [m for m in departures if m[2] in old[m[0]] and m[3] not in old[m[0]]]
        if not departures:
            return []
        self.moved = {(i, pos) for i, pos, _b, _d in departures}
        sources = {b for _i, _pos, b, _d in departures}
        by_src: dict[int, list[tuple[int, int, int]]] = {b: [] for b in sources}
        for j, reps in enumerate(self.new):
            if j in self.chunk.frozen:
                continue
            for pj, b in enumerate(reps):
                if b in sources and b in self.chunk.old[j]:  # not an arrival: moved once
                    by_src[b].append((self.size[j], j, pj))
        for i, pos, b, _d in departures:  # the departed: candidates once an exchange undoes them
            by_src[b].append((self.size[i], i, pos))
        self.cands = {b: sorted(c) for b, c in by_src.items()}
        self.live = {b: list(range(len(c))) for b, c in self.cands.items()}
        self.at = {
            b: {(j, pj): n for n, (_s, j, pj) in enumerate(c)} for b, c in self.cands.items()
        }
        made: list[tuple[Departure, Departure]] = []
        for _ in range(MAX_ROUNDS):
            n = len(made)
            leaving: dict[int, list[Departure]] = {}
            for m in departures:
                leaving.setdefault(m[2], []).append(m)
            for m in departures:
                before = list(m)
                if self.replace(m) or self.shift(m, leaving):
                    made.append((before, list(m)))
            if len(made) == n:
                break
        return made

    def short(self, i: int) -> bool:
        """Partition ``i`` changed and short of racks: the rack fix-up would move it again."""
        c = self.chunk
        reps = self.new[i]
        if c.n_racks <= 1 or reps == c.old[i]:
            return False
        return len({c.racks[b] for b in reps}) < required_racks(len(reps), c.n_racks)

    def _try(self, changes: list[tuple[int, int, int]], was_short: int) -> bool:
        """Sets each (partition, position, broker) of ``changes`` if afterwards no partition
        holds a broker twice and no more of them are short of racks than ``was_short``
        before; else leaves all as they were."""
        parts = {i for i, _pos, _b in changes}
        undo = [(i, pos, self.new[i][pos]) for i, pos, _b in changes]
        for i, pos, b in changes:
            self.new[i][pos] = b
        if all(len(set(self.new[i])) == len(self.new[i]) for i in parts) and (
            sum(self.short(i) for i in parts) <= was_short
        ):
            for i, pos, b in changes:
                self._back(b, i, pos)
            return True
        for i, pos, b in reversed(undo):
            self.new[i][pos] = b
        return False

    def _cheaper(self, b: int, d: int, than: int, skip: int) -> Iterator[tuple[int, int]]:
        """The replicas on ``b`` not moved, below ``than`` bytes, that may go to ``d``,
        cheapest first (lazily: the first that fits is usually taken)."""
        cands, live = self.cands.get(b, []), self.live.get(b, [])
        tried = at = 0
        while at < len(live):
            s, j, pj = cands[live[at]]
            if s >= than or tried >= SCAN:
                return
            reps = self.new[j]
            if (j, pj) in self.moved or reps[pj] != b:
                del live[at]  # gone from b until an exchange puts it back (_back)
                continue
            at += 1
            if j == skip or d in reps:
                continue
            tried += 1
            if self.rack_ok(reps, pj, d):
                yield j, pj

    def _back(self, b: int, i: int, pos: int) -> None:
        """Replica ``(i, pos)`` now on ``b``: a candidate of ``b`` again if it is one."""
        n = self.at.get(b, {}).get((i, pos))
        if n is None:
            return
        live = self.live[b]
        at = bisect_left(live, n)
        if at == len(live) or live[at] != n:
            insort(live, n, lo=at)

    def _record(self, m: Departure, i: int, pos: int, b: int, d: int) -> None:
        self.moved.discard((m[0], m[1]))
        self.moved.add((i, pos))
        m[:] = [i, pos, b, d]

    def replace(self, m: Departure) -> bool:
        i, pos, b, d = m
        for j, pj in self._cheaper(b, d, self.size[i], skip=i):
            if self._try([(i, pos, b), (j, pj, d)], self.short(i) + self.short(j)):
                self._record(m, j, pj, b, d)
                return True
        return False

    def shift(self, m: Departure, by_src: dict[int, list[Departure]]) -> bool:
        """``by_src``: the departures by the broker they leave (as the round began)."""
        i, pos, b, d = m
        ctx = self.chunk.ctx
        for pos2, b2 in enumerate(list(self.new[i])):
            if b2 == b or b2 not in by_src or (i, pos2) in self.moved:
                continue
            if b2 not in self.chunk.old[i] or rack_key(ctx, b2) != rack_key(ctx, b):
                continue
            if not self._may_leave(i, pos, b, pos2, d):
                continue
            for m2 in by_src[b2]:
                if self._shift_with(m, pos2, m2):
                    return True
        return False

    def _shift_with(self, m: Departure, pos2: int, m2: Departure) -> bool:
        """``m``'s partition leaves from ``m2``'s broker (its position ``pos2``) instead,
        ``m2``'s partition stays, ``m``'s broker sends a replica cheaper than ``m2``'s."""
        i, pos, b, d = m
        k, pk, b2, d2 = m2
        if k == i or b2 != self.new[i][pos2] or m2[2] != b2:
            return False
        for j, pj in self._cheaper(b, d2, self.size[k], skip=i):
            was = self.short(i) + self.short(k) + self.short(j)
            changes = [(i, pos, b), (k, pk, b2), (i, pos2, d), (j, pj, d2)]
            if j != k and self._try(changes, was):
                self.moved.discard((k, pk))
                self._record(m, i, pos2, b2, d)
                self._record(m2, j, pj, b, d2)
                return True
        return False

    def _may_leave(self, i: int, pos: int, b: int, pos2: int, d: int) -> bool:
        """Whether partition ``i``, back on ``b`` at ``pos``, may send its replica at
        ``pos2`` to ``d`` (the rack spread kept)."""
        reps = self.new[i]
        was, reps[pos] = reps[pos], b
        ok = d not in reps and self.rack_ok(reps, pos2, d)
        reps[pos] = was
        return ok
