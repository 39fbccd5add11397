"""Pass 3, per chunk: the greedy replica pass over one chunk (mandatory moves, surplus moves,
rack fix-up, settling), honouring the chunk's quotas and every hard constraint. The unit of
work of a Spark task or of the in-process loop."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import UsageError
from .aggregates import rack_key, replica_options
from .apportion import apportion
from .exchange import Exchanges
from .quotas import ChunkQuota, Prepared
from .rack_repair import (
    shape,
)
from .rows import Changed, Row, chunk_key
from .rules import (
    VIRTUAL,
    apply_rf,
    required_racks,
)


# rack-awareness: a move may not lower the rack spread the partition can still reach
def _spread(reps: Sequence[int], racks: Mapping[int, Any], n_racks: int) -> int:
    real = {racks[b] for b in reps if b >= 0}
    return min(required_racks(len(reps), n_racks), len(real) + sum(1 for b in reps if b < 0))


def keeps_spread(
    reps: list[int], pos: int, rack: Any, racks: Mapping[int, Any], n_racks: int
) -> bool:
    """Whether replacing ``reps[pos]`` by a replica on ``rack`` keeps the rack spread the
    partition can still reach."""
    if n_racks <= 1:
        return True
    src = reps[pos]
    if src >= 0 and racks[src] == rack:
        return True
    before = _spread(reps, racks, n_racks)
    real = {racks[b] for j, b in enumerate(reps) if b >= 0 and j != pos}
    real.add(rack)
    after = min(
        required_racks(len(reps), n_racks),
        len(real) + sum(1 for j, b in enumerate(reps) if b < 0 and j != pos),
    )
    return after >= before


class _Chunk:
    """The greedy pass over one chunk: mandatory moves, surplus moves, rack fix-up, leaders."""

    def __init__(self, rows: Sequence[Row], prep: Prepared, quota: ChunkQuota):
        self.prep, self.ctx = prep, prep.ctx
        self.racks = prep.ctx.racks
        self.n_racks = prep.ctx.rack_count
        self.allowed = prep.ctx.allowed
        self.allowed_set = set(self.allowed)
        self.placeable = prep.ctx.placeable  # where a replica may arrive (not cordoned)
        self.removed = prep.ctx.removed
        rf_change = prep.params.rf_change()
        keyed = sorted((chunk_key(t, p), t, p, r, s) for t, p, r, s in rows)
        self.topic = [k[1] for k in keyed]
        self.part = [k[2] for k in keyed]
        self.old = [list(k[3]) for k in keyed]
        self.size = [k[4] for k in keyed]
        self.new = [
            shape(apply_rf(t, r, rf_change), prep.repairs.get((t, p)))
            for t, p, r in zip(self.topic, self.part, self.old, strict=True)
        ]
        # violating partitions no repair can fix: none of their replicas moves (rack_repair)
        self.frozen = {
            i for i, tp in enumerate(zip(self.topic, self.part, strict=True)) if tp in prep.frozen
        }
        self.give = dict(quota.give)
        self.take = {b: n for b, n in quota.take.items() if n > 0}
        self.flows = dict(quota.flows)
        self.count: dict[int, int] = defaultdict(int)
        for reps in self.new:
            for b in reps:
                self.count[b] += 1
        # what each broker of the chunk should hold once its quotas are used
        self.intended = {
            b: self.count.get(b, 0) - quota.give.get(b, 0) + quota.take.get(b, 0)
            for b in set(self.count) | set(quota.take)
            if b >= 0
        }
        self.ring: dict = defaultdict(list)
        for b in sorted(self.take):
            self.ring[rack_key(self.ctx, b)].append(b)
        self.ptr: dict = defaultdict(int)
        self.placed: dict[int, list[tuple[int, int]]] = defaultdict(list)  # arrivals per broker
        self.rack_take: dict = defaultdict(int)
        for b, n in self.take.items():
            self.rack_take[rack_key(self.ctx, b)] += n
        self.departures: list[list[int]] = []  # the surplus pass's (i, pos, from, to)

    def _rack_ok(self, reps: list[int], pos: int, dest: int) -> bool:
        return keeps_spread(reps, pos, rack_key(self.ctx, dest), self.racks, self.n_racks)

    def _place(self, i: int, pos: int, dest: int) -> None:
        reps = self.new[i]
        src = reps[pos]
        self.count[src] -= 1
        self.count[dest] += 1
        reps[pos] = dest
        self.placed[dest].append((i, pos))

    def _swap_in(self, i: int, pos: int) -> int | None:
        """A one-step augmenting path: an earlier arrival on broker x (which would suit this
        replica) moves on to a broker with quota left that suits it, and this replica takes its
        place on x — no extra move, the quota is used after all."""
        free = [d for d, n in self.take.items() if n > 0]
        if not free:
            return None
        reps = self.new[i]
        members = set(reps)
        for x in self.placeable:
            if x in members or not self.placed.get(x) or not self._rack_ok(reps, pos, x):
                continue
            for j, pj in self.placed[x]:
                rj = self.new[j]
                if j == i or rj[pj] != x:
                    continue
                mj = set(rj)
                for d in free:
                    if d not in mj and self._rack_ok(rj, pj, d):
                        self.take[d] -= 1
                        self.rack_take[rack_key(self.ctx, d)] -= 1
                        self.placed[x].remove((j, pj))
                        self._place(j, pj, d)
                        return x
        return None

    def _from_ring(self, i: int, pos: int, rack) -> int | None:
        ring = self.ring.get(rack)
        if not ring:
            return None
        reps = self.new[i]
        members = set(reps)
        n = len(ring)
        start = self.ptr[rack] % n
        best, best_step, seen = None, 0, 0
        for step in range(n):  # of the next few that fit, the one with the most room left
            d = ring[(start + step) % n]
            if self.take.get(d, 0) > 0 and d not in members:
                if best is None or self.take[d] > self.take[best]:
                    best, best_step = d, step
                seen += 1
                if seen >= 8:
                    break
        if best is not None:
            self.ptr[rack] = (start + best_step + 1) % n
        return best

    def _options(self, i: int, pos: int) -> list:
        """Racks with quota left that this replica may move to."""
        reps = self.new[i]
        return [
            dr
            for dr in self.ring
            if self.rack_take[dr] > 0 and keeps_spread(reps, pos, dr, self.racks, self.n_racks)
        ]

    def _by_class(self, i: int, pos: int, cls: tuple) -> int | None:
        """Follow the driver's max-flow: a rack this replica's class was given room in."""
        src = self.new[i][pos]
        k = rack_key(self.ctx, src)
        reps = self.new[i]
        racks = [dr for dr in cls if self.flows.get((cls, dr), 0) > 0]
        for dr in sorted(racks, key=lambda dr: (-self.flows[(cls, dr)], dr != k, str(dr))):
            if not keeps_spread(reps, pos, dr, self.racks, self.n_racks):
                continue
            d = self._from_ring(i, pos, dr)
            if d is not None:
                self.flows[(cls, dr)] -= 1
                self.rack_take[dr] -= 1
                return self._take(d)
        return None

    def _choose(self, i: int, pos: int, mandatory: bool, where: str = "any") -> int | None:
        """A destination with quota left: ``where`` is "any" (the rack with the most quota
        left first, so that constrained replicas later still find room), "own" (own rack
        first) or "cross" (other racks only)."""
        src = self.new[i][pos]
        k = rack_key(self.ctx, src)
        opts = self._options(i, pos)
        if where == "cross":
            opts = [dr for dr in opts if dr != k]
        order = (
            (lambda dr: (dr != k, -self.rack_take[dr], str(dr)))
            if where == "own"
            else (lambda dr: (-self.rack_take[dr], dr != k, str(dr)))
        )
        for dr in sorted(opts, key=order):
            d = self._from_ring(i, pos, dr)
            if d is not None:
                self.rack_take[dr] -= 1
                return self._take(d)
        if not mandatory:
            return None
        x = self._swap_in(i, pos)
        if x is not None:
            return x
        # no quota fits (rack-awareness pins this replica): overfill the emptiest allowed
        # broker, its own rack first, and let that broker shed one more in the surplus pass
        reps = self.new[i]
        members = set(reps)
        cands = [d for d in self.placeable if d not in members]
        ok = [d for d in cands if self._rack_ok(reps, pos, d)]
        pool = ok or cands
        if not pool:
            return None
        same = [d for d in pool if src >= 0 and rack_key(self.ctx, d) == k]
        d = min(same or pool, key=lambda d: (self.count[d] - self.prep.targets.get(d, 0), d))
        self.give[d] = self.give.get(d, 0) + 1
        return d

    def _take(self, d: int) -> int:
        self.take[d] -= 1
        return d

    def mandatory(self) -> None:
        must = [
            i
            for i, reps in enumerate(self.new)
            if any(b < 0 or b in self.removed or b not in self.racks for b in reps)
        ]
        todo = []
        for i in must:
            for pos, b in enumerate(self.new[i]):
                if b < 0 or b in self.removed or b not in self.racks:
                    opts = replica_options(self.new[i], pos, self.ctx)
                    cls = tuple(sorted(set(opts) & self.prep.dst_racks, key=str))
                    todo.append((len(cls), i, pos, cls))
        todo.sort(key=lambda t: t[:3])  # the most constrained first
        for _, i, pos, cls in todo:
            b = self.new[i][pos]
            d = self._by_class(i, pos, cls)
            if d is None:
                d = self._choose(i, pos, mandatory=True)
            if d is None:
                raise UsageError(
                    f"partition {self.topic[i]}-{self.part[i]}: no broker can take a replica"
                )
            src = b if b >= 0 else VIRTUAL
            self.give[src] = self.give.get(src, 0) - 1
            self._place(i, pos, d)

    def surplus(self) -> None:
        over = sorted(b for b, n in self.give.items() if n > 0 and b >= 0 and b in self.allowed_set)
        if not over:
            return
        over_set = set(over)
        cands: dict[int, list[int]] = defaultdict(list)
        tcount: dict[tuple[str, int], int] = defaultdict(int)
        ttotal: dict[str, int] = defaultdict(int)
        for i, reps in enumerate(self.new):
            t = self.topic[i]
            ttotal[t] += len(reps)
            for b in reps:
                tcount[(t, b)] += 1
                if b in over_set and i not in self.frozen:
                    cands[b].append(i)
        nb = len(self.allowed)
        # the rack's share of cross-rack routes goes first, spread over its over-full brokers
        # in proportion, to the replicas that may change rack; then the rest, own rack first
        cross: dict[int, int] = {}
        for k in sorted({rack_key(self.ctx, b) for b in over}, key=str):
            bs = [b for b in over if rack_key(self.ctx, b) == k]
            out_k = sum(
                n for (cls, dr), n in self.flows.items() if cls == (k,) and dr != k and n > 0
            )
            out_k = min(out_k, sum(self.give[b] for b in bs))
            cross.update(zip(bs, apportion(out_k, [self.give[b] for b in bs]), strict=True))
        for phase in ("cross", "cross-rest", "relay", "own"):
            if phase == "relay":
                self._relay(over, cands)
                continue
            for b in over:
                k = rack_key(self.ctx, b)
                if phase == "cross-rest":  # brokers short of rack-changing replicas leave
                    left = sum(
                        n
                        for (cls, dr), n in self.flows.items()
                        if cls == (k,) and dr != k and n > 0
                    )
                    if left <= 0:
                        continue
                heavy = b in self.prep.bytes_heavy

                def key(i: int, b: int = b, heavy: bool = heavy) -> tuple:
                    t = self.topic[i]
                    crowded = tcount[(t, b)] * nb > ttotal[t]  # topic over-represented here
                    return (not crowded, -self.size[i] if heavy else self.size[i], i)

                budget = cross.get(b, 0) if phase == "cross" else self.give[b]
                if phase == "cross-rest":
                    budget = min(budget, left)
                for i in sorted(cands[b], key=key):
                    if self.give[b] <= 0 or budget <= 0:
                        break
                    reps = self.new[i]
                    if b not in reps:
                        continue
                    pos = reps.index(b)
                    d = self._choose(
                        i, pos, mandatory=False, where="own" if phase == "own" else "cross"
                    )
                    if d is not None:
                        dk = rack_key(self.ctx, d)
                        if dk != k and self.flows.get(((k,), dk), 0) > 0:
                            self.flows[((k,), dk)] -= 1
                        self.give[b] -= 1
                        budget -= 1
                        self._place(i, pos, d)
                        if not heavy:  # a bytes goal sheds the heavy broker's big ones
                            self.departures.append([i, pos, b, d])

    def _relay(self, over: list[int], cands: dict[int, list[int]]) -> None:
        """When the over-full brokers of a rack lack replicas that may change rack, a broker of
        the same rack with such a replica sends it across and takes one of theirs instead
        (two moves where the bound counts one; only for what the cross-rack routes still need)."""
        for k in sorted({rack_key(self.ctx, b) for b in over}, key=str):
            owe = sum(self.give[b] for b in over if rack_key(self.ctx, b) == k and self.give[b] > 0)
            left = sum(
                n for (cls, dr), n in self.flows.items() if cls == (k,) and dr != k and n > 0
            )
            need = min(owe, left)
            if need <= 0:
                continue
            relays = [
                x for x in self.placeable if rack_key(self.ctx, x) == k and x not in set(over)
            ]
            rel_set = set(relays)
            by_x: dict[int, list[int]] = defaultdict(list)
            for i, reps in enumerate(self.new):
                if i in self.frozen:
                    continue
                for b in reps:
                    if b in rel_set:
                        by_x[b].append(i)
            for x in relays:
                for i in by_x[x]:
                    if need <= 0:
                        break
                    reps = self.new[i]
                    if x not in reps:
                        continue
                    pos = reps.index(x)
                    d = self._choose(i, pos, mandatory=False, where="cross")
                    if d is None:
                        continue
                    dk = rack_key(self.ctx, d)
                    if self.flows.get(((k,), dk), 0) > 0:
                        self.flows[((k,), dk)] -= 1
                    self._place(i, pos, d)
                    self.take[x] = self.take.get(x, 0) + 1  # x now has room for a relayed one
                    self.rack_take[k] += 1
                    if x not in self.ring[k]:
                        self.ring[k].append(x)
                    need -= 1

    def fix_racks(self) -> None:
        if self.n_racks <= 1:
            return
        for i, reps in enumerate(self.new):
            if reps == self.old[i]:
                continue
            for _ in range(len(reps)):
                need = required_racks(len(reps), self.n_racks)
                if len({self.racks[b] for b in reps}) >= need:
                    break
                seen: dict = {}
                pos = None
                for j in range(len(reps) - 1, -1, -1):  # a duplicated rack, leader last
                    rk = self.racks[reps[j]]
                    if sum(1 for b in reps if self.racks[b] == rk) > 1:
                        pos = j
                        break
                    seen[rk] = j
                used = {self.racks[b] for b in reps}
                cands = [d for d in self.placeable if self.racks[d] not in used]
                if pos is None or not cands:
                    break
                d = min(
                    cands,
                    key=lambda d: (
                        self.take.get(d, 0) <= 0,
                        self.count[d] - self.prep.targets.get(d, 0),
                        d,
                    ),
                )
                if self.take.get(d, 0) > 0:
                    self.take[d] -= 1
                self._place(i, pos, d)

    def settle(self) -> None:
        """Where a detour left a broker of a rack above what the chunk's quotas intend and
        another of the same rack below (a pinned replica overfilled the emptiest broker, rack
        repairs crowding one rack), an arrival on the first is re-pointed to the second (no
        extra move), else one of its replicas moves there (rack spread unchanged)."""
        over = sorted(b for b in self.allowed if self.count.get(b, 0) > self.intended.get(b, 0))
        for o in over:
            k = rack_key(self.ctx, o)
            for u in self.placeable:
                if self.count.get(o, 0) <= self.intended.get(o, 0):
                    break
                if u == o or rack_key(self.ctx, u) != k:
                    continue
                while self.count.get(o, 0) > self.intended.get(o, 0) and self.count.get(
                    u, 0
                ) < self.intended.get(u, 0):
                    arrived = [
                        (i, pos)
                        for i, pos in self.placed.get(o, [])
                        if self.new[i][pos] == o and u not in self.new[i]
                    ]
                    if arrived:
                        i, pos = arrived[0]
                        self.placed[o].remove((i, pos))
                    else:
                        i = next(
                            (
                                i
                                for i, reps in enumerate(self.new)
                                if o in reps and u not in reps and i not in self.frozen
                            ),
                            -1,
                        )
                        if i < 0:
                            break
                        pos = self.new[i].index(o)
                        self.departures.append([i, pos, o, u])
                    self._place(i, pos, u)

    def run(self) -> list[Changed]:
        """Every partition of the chunk, in chunk order: (topic, partition, old, new, size)."""
        self.mandatory()
        if "replicas" in self.prep.params.balance or self.prep.caps:
            self.surplus()
        self.fix_racks()
        if "replicas" in self.prep.params.balance:
            self.settle()
        Exchanges(self, self._rack_ok).run(self.departures)  # cheaper departures, same count
        return [
            Changed(self.topic[i], self.part[i], self.old[i], self.new[i], self.size[i])
            for i in range(len(self.new))
        ]


def plan_chunk(rows: Sequence[Row], prep: Prepared, chunk: int) -> list[Changed]:
    """Plan one chunk's replica sets: the unit of work of a Spark task (or of the in-process
    loop). Returns every partition of the chunk, changed or not (the leader pass needs them)."""
    return _Chunk(rows, prep, prep.quotas.get(chunk, ChunkQuota())).run()
