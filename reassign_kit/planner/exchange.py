"""After the chunk pass's surplus moves: exchanges that keep every broker's count and copy
fewer bytes. The greedy pass takes each over-full broker's cheapest replica that fits at the
time; a replica it took may block a cheaper choice later (two over-full brokers holding the
same partition, one destination left). Each exchange swaps a departure for a cheaper one
and is kept only if every rule still holds (the destination not already a member, the rack
spread kept), so the plan's moves stay as many and its bytes only drop.

Two exchanges, repeated while one pays: *replace* (a cheaper replica of the same broker goes
to the same destination instead) and *shift* (a partition leaving broker b leaves from its
other over-full broker b2 instead, whose departure k stays; b sends a cheaper replica j)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .aggregates import rack_key

# (partition index, replica position, from broker, to broker): one surplus departure
Departure = list[int]
RackOk = Callable[[list[int], int, int], bool]

MAX_ROUNDS = 8  # each round only lowers the bytes; a bound on the work, not on correctness


class Exchanges:
    """The surplus departures of one chunk and the replicas that could replace them."""

    def __init__(
        self,
        new: list[list[int]],
        size: Sequence[int],
        frozen: set[int],
        rack_ok: RackOk,
        ctx: Any,
        placed: Mapping[int, list[tuple[int, int]]],
    ) -> None:
        """``placed``: the arrivals of the passes before the surplus (never moved twice)."""
        self.new, self.size, self.frozen, self.rack_ok = new, size, frozen, rack_ok
        self.ctx = ctx  # a shift keeps each rack's departures (the cross-rack routes)
        self.arrived = {r for rs in placed.values() for r in rs}
        self.moved: set[tuple[int, int]] = set()
        self.cands: dict[int, list[tuple[int, int, int]]] = {}

    def run(
        self, departures: list[Departure], placed: dict[int, list[tuple[int, int]]]
    ) -> list[tuple[Departure, Departure]]:
        """Improves ``departures`` in place (and the chunk's replica lists); ``placed``: the
        chunk's arrivals per broker, kept in step. Returns the exchanges made, (before, after)
        pairs."""
        if not departures:
            return []
        self.moved = {(i, pos) for i, pos, _b, _d in departures}
        sources = {b for _i, _pos, b, _d in departures}
        by_src: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
        for j, reps in enumerate(self.new):
            if j in self.frozen:
                continue
            for pj, b in enumerate(reps):
                if b in sources and (j, pj) not in self.arrived:
                    by_src[b].append((self.size[j], j, pj))
        self.cands = {b: sorted(c) for b, c in by_src.items()}
        made: list[tuple[Departure, Departure]] = []
        for _ in range(MAX_ROUNDS):
            n = len(made)
            for m in departures:
                before = list(m)
                if self.replace(m) or self.shift(m, departures):
                    made.append((before, list(m)))
            if len(made) == n:
                break
        for (i, pos, _b, d), (j, pj, _b2, d2) in made:
            if (i, pos) in placed.get(d, ()):
                placed[d].remove((i, pos))
            placed.setdefault(d2, []).append((j, pj))
        return made

    def _cheaper(self, b: int, d: int, than: int, skip: int) -> tuple[int, int] | None:
        """The cheapest replica on ``b`` not moved, below ``than`` bytes, that may go to ``d``."""
        for s, j, pj in self.cands.get(b, ()):
            if s >= than:
                return None
            reps = self.new[j]
            if j == skip or (j, pj) in self.moved or reps[pj] != b or d in reps:
                continue
            if self.rack_ok(reps, pj, d):
                return j, pj
        return None

    def _move(self, m: Departure, i: int, pos: int, b: int, d: int) -> None:
        self.moved.discard((m[0], m[1]))
        self.moved.add((i, pos))
        self.new[i][pos] = d
        m[:] = [i, pos, b, d]

    def replace(self, m: Departure) -> bool:
        i, pos, b, d = m
        self.new[i][pos] = b  # undone while looking: ``d`` is free again for the others
        got = self._cheaper(b, d, self.size[i], skip=i)
        if got is None:
            self.new[i][pos] = d
            return False
        self._move(m, got[0], got[1], b, d)
        return True

    def shift(self, m: Departure, departures: list[Departure]) -> bool:
        i, pos, b, d = m
        for m2 in departures:
            k, pk, b2, d2 = m2
            if m2 is m or k == i or b2 not in self.new[i] or b2 == b:
                continue
            if rack_key(self.ctx, b2) != rack_key(self.ctx, b):
                continue
            pos2 = self.new[i].index(b2)
            if (i, pos2) in self.moved or (i, pos2) in self.arrived:
                continue
            self.new[i][pos], self.new[k][pk] = b, b2  # both undone while looking
            got = None
            if d not in self.new[i] and self.rack_ok(self.new[i], pos2, d):
                self.new[i][pos2] = d
                got = self._cheaper(b, d2, self.size[k], skip=i)
                if got is None:
                    self.new[i][pos2] = b2
            if got is None:
                self.new[i][pos], self.new[k][pk] = d, d2
                continue
            self.moved.discard((k, pk))
            self._move(m, i, pos2, b2, d)
            self._move(m2, got[0], got[1], b, d2)
            return True
        return False
