"""The network pass: after the replica, bytes and leader passes (either engine: it reads only
their final rows), change the fewest replicas so that every broker meets the network goals
(``planner.network``) in their priority order.

A step takes, among the changes that strictly bring the placement nearer the goals, the one
that brings it nearest — first among leadership-only changes (a follower made first replica,
nothing copied), else among single replica moves, else among swaps of a hot replica with a cold
one (both brokers keep their counts). Every change keeps the rules: a partition never on fewer
racks than before, nothing new on a removed or cordoned broker, each broker's count within one
of the band the earlier passes left, the capacity file's disk and replica limits. When the
greedy steps stop short of a goal on a small instance, an exhaustive search over every
placement (capacity before counts) finds one that meets it if any does; a goal still unmet is
reported with its numbers, never dropped."""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from .network import Goals, broker_loads
from .rules import Capacity

EPS = 1e-6  # bytes/s: an improvement smaller than this is rounding
FOCUS = 3  # the brokers furthest over a goal whose partitions a step looks at
HOT = 20  # a focus broker's hottest partitions considered for a move
DESTS = 4  # the least loaded brokers (in the goal's resource) a replica may move to
SWAP_HOT, SWAP_COLD = 8, 4
EXHAUSTIVE_MAX = 200_000  # placements; beyond, the greedy result stands


@dataclass
class Placement:
    """The partitions the pass may change (``reps``, by key) over fixed background load, with
    what each costs and what constrains it. Changes go through ``assign``, which keeps every
    broker's loads, replica count, bytes and partitions current (a step re-scores in
    O(brokers), not O(partitions))."""

    reps: dict[tuple[str, int], list[int]]
    load: Mapping[tuple[str, int], tuple[float, float]]
    size: Mapping[tuple[str, int], int]
    background: list[tuple[Sequence[int], tuple[float, float]]]
    background_bytes: Mapping[int, int]
    background_count: Mapping[int, int]
    racks: Mapping[int, str | None]
    placeable: frozenset[int]
    holders: frozenset[int]
    goals: Goals
    capacity: Capacity | None = None
    band: tuple[int, int] = (0, 1 << 62)
    min_racks: dict[tuple[str, int], int] = field(default_factory=dict)
    cur: dict[str, dict[int, float]] = field(default_factory=dict)
    count: dict[int, int] = field(default_factory=dict)
    bytes_on: dict[int, int] = field(default_factory=dict)
    on: dict[int, set[tuple[str, int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.min_racks = {k: self.rack_count(r) for k, r in self.reps.items()}
        pairs = [(r, self.load.get(k, (0.0, 0.0))) for k, r in self.reps.items()]
        self.cur = broker_loads(pairs + self.background, self.racks)
        self.count = dict(self.background_count)
        self.bytes_on = dict(self.background_bytes)
        for k, r in self.reps.items():
            self._account(k, r, +1)
        vals = [self.count.get(b, 0) for b in self.holders]
        if vals:
            self.band = (min(vals) - 1, max(vals) + 1)

    def _account(self, k: tuple[str, int], reps: Sequence[int], sign: int) -> None:
        for b in reps:
            self.count[b] = self.count.get(b, 0) + sign
            self.bytes_on[b] = self.bytes_on.get(b, 0) + sign * self.size.get(k, 0)
            held = self.on.setdefault(b, set())
            if sign > 0:
                held.add(k)
            else:
                held.discard(k)

    def _loads_of(self, k: tuple[str, int], reps: Sequence[int], sign: int) -> None:
        produce, fetch = self.load.get(k, (0.0, 0.0))
        if not reps:
            return
        nin, nout, lead = self.cur["network_in"], self.cur["network_out"], self.cur["leader_load"]
        for b in reps:
            nin[b] = nin.get(b, 0.0) + sign * produce
        nout[reps[0]] = nout.get(reps[0], 0.0) + sign * (fetch + produce * (len(reps) - 1))
        lead[reps[0]] = lead.get(reps[0], 0.0) + sign * produce

    def assign(self, k: tuple[str, int], new: list[int]) -> None:
        old = self.reps[k]
        self._account(k, old, -1)
        self._loads_of(k, old, -1)
        self.reps[k] = new
        self._account(k, new, +1)
        self._loads_of(k, new, +1)

    def rack_count(self, reps: Sequence[int]) -> int:
        racks = [self.racks.get(b) for b in reps]
        return 0 if any(r is None for r in racks) else len(set(racks))

    def loads(self) -> dict[str, dict[int, float]]:
        return {r: dict(v) for r, v in self.cur.items()}

    def counts(self) -> dict[int, int]:
        return dict(self.count)

    def in_band(self) -> bool:
        lo, hi = self.band
        return all(lo <= self.count.get(b, 0) <= hi for b in self.holders)

    def score(self) -> tuple:
        return tuple(round(x, 6) for x in self.goals.excess(self.cur, self.holders))

    def fits(self, key: tuple[str, int], new: Sequence[int], old: Sequence[int]) -> bool:
        """``key`` may go from ``old`` to ``new``: racks, cordons, disk and replica limits."""
        if any(b not in self.placeable for b in set(new) - set(old)):
            return False
        if self.rack_count(new) < self.min_racks[key]:
            return False
        if self.capacity is None:
            return True
        return all(self._within(b, key) for b in set(new) - set(old))

    def _within(self, b: int, key: tuple[str, int]) -> bool:
        """``b`` within its disk and replica limits holding ``key`` too."""
        disk, most = self.capacity.disk(b), self.capacity.max_replicas(b)
        extra = 0 if key in self.on.get(b, ()) else 1
        total = self.bytes_on.get(b, 0) + extra * self.size.get(key, 0)
        n = self.count.get(b, 0) + extra
        return (disk is None or total <= disk) and (most is None or n <= most)


def _focus(p: Placement) -> tuple[list[int], str]:
    """The brokers furthest over the first goal not met (hard limits first), and its
    resource."""
    loads = p.loads()
    targets = p.goals.targets(loads)
    for res, caps in p.goals.limits.items():
        over = {b: loads[res].get(b, 0.0) - cap for b, cap in caps.items()}
        over = {b: v for b, v in over.items() if v > EPS}
        if over:
            return sorted(over, key=lambda b: (-over[b], b))[:FOCUS], res
    for res in p.goals.balance:
        t = targets[res]
        over = {b: v - t[b] if b in t else v for b, v in loads[res].items()}
        over = {b: v for b, v in over.items() if v > EPS}
        if over:
            return sorted(over, key=lambda b: (-over[b], b))[:FOCUS], res
    return [], "network_in"


def _coolest(p: Placement, res: str) -> list[int]:
    """The placeable brokers carrying least of ``res`` (ties: by id)."""
    load = p.cur[res]
    return heapq.nsmallest(DESTS, sorted(p.placeable), key=lambda b: (load.get(b, 0.0), b))


def _hottest(p: Placement, b: int, n: int, res: str, cold: bool = False) -> list[tuple[str, int]]:
    """The ``n`` partitions on ``b`` that add most (``cold``: least) to its ``res``: a
    follower adds nothing to its network out or leader load, so only what it leads counts."""
    keys = p.on.get(b, ())

    def rank(k: tuple[str, int]) -> tuple:
        produce, fetch = p.load.get(k, (0.0, 0.0))
        reps = p.reps[k]
        if res == "network_in":
            return (produce, k)
        if reps[0] != b:
            return (0.0, k)
        return (fetch + produce * (len(reps) - 1) if res == "network_out" else produce, k)

    return heapq.nsmallest(n, keys, key=rank) if cold else heapq.nlargest(n, keys, key=rank)


def _candidates(p: Placement, b: int, kind: str, dsts: list[int], res: str):
    """(key, new replica list) pairs for one kind of change off broker ``b`` (moves and swaps
    towards ``dsts``)."""
    if kind == "leader":
        for k in _hottest(p, b, HOT, res):
            r = p.reps[k]
            if r[0] == b:
                for f in r[1:]:
                    yield [(k, [f, *[x for x in r if x != f]])]
        return
    cold = {d: _hottest(p, d, SWAP_COLD, res, cold=True) for d in dsts} if kind == "swap" else {}
    for k in _hottest(p, b, HOT if kind == "move" else SWAP_HOT, res):
        r = p.reps[k]
        for d in dsts:
            if d in r or d == b:
                continue
            moved = [d if x == b else x for x in r]
            if kind == "move":
                yield [(k, moved)]
                continue
            for q in cold[d]:
                rq = p.reps[q]
                if q != k and b not in rq:
                    yield [(k, moved), (q, [b if x == d else x for x in rq])]


def _try(p: Placement, change: list) -> tuple | None:
    """The score after ``change`` (None: it breaks a rule); the placement is left as it was."""
    old = [(k, p.reps[k]) for k, _ in change]
    for (k, new), (_, was) in zip(change, old, strict=True):
        if not p.fits(k, new, was):
            return None
    for k, new in change:
        p.assign(k, new)
    score = p.score() if p.in_band() else None
    for k, was in reversed(old):
        p.assign(k, was)
    return score


def improve(p: Placement, max_steps: int | None = None) -> int:
    """Greedy steps until no change brings the placement nearer its goals; the steps taken."""
    steps = 0
    limit = max_steps if max_steps is not None else 4 * len(p.reps) + 100
    while steps < limit:
        base = p.score()
        if not any(base):
            break
        best = None
        focus, res = _focus(p)
        dsts = _coolest(p, res)
        for kind in ("leader", "move", "swap"):
            for b in focus:
                for change in _candidates(p, b, kind, dsts, res):
                    s = _try(p, change)
                    if s is not None and s < base and (best is None or s < best[0]):
                        best = (s, change)
            if best is not None:
                break
        if best is None:
            break
        for k, new in best[1]:
            p.assign(k, new)
        steps += 1
    return steps


def _options(p: Placement, k: tuple[str, int]) -> list[list[int]]:
    r = p.reps[k]
    keep = [x for x in r if x not in p.placeable]  # a cordoned holder may keep its replica
    pool = sorted(p.placeable | set(keep))
    out = [list(r)]
    for combo in itertools.permutations(pool, len(r)):
        c = list(combo)
        if c != r and p.fits(k, c, r):
            out.append(c)
    return out


def exhaustive(p: Placement) -> bool:
    """The placement meeting the most goals (ties: fewest replicas moved), over every one, when
    there are at most ``EXHAUSTIVE_MAX``; False when there are more (nothing changed)."""
    keys = sorted(p.reps)
    bound = 1
    for k in keys:  # an upper bound on the placements, before any is listed
        bound *= math.perm(len(p.placeable | set(p.reps[k])), len(p.reps[k]))
        if bound > EXHAUSTIVE_MAX:
            return False
    options = [_options(p, k) for k in keys]
    start = {k: list(p.reps[k]) for k in keys}
    best = None
    for combo in itertools.product(*options):
        for k, c in zip(keys, combo, strict=True):
            if p.reps[k] != list(c):
                p.assign(k, list(c))
        if not all(p.fits(k, p.reps[k], start[k]) for k in keys):
            continue
        moved = sum(len(set(p.reps[k]) - set(start[k])) for k in keys)
        led = sum(p.reps[k][0] != start[k][0] for k in keys)
        key = (p.score(), not p.in_band(), moved, led)
        if best is None or key < best[0]:
            best = (key, [list(c) for c in combo])
    for i, k in enumerate(keys):
        p.assign(k, best[1][i] if best is not None else start[k])
    return True


def solve(p: Placement) -> None:
    """Greedy steps, then (a goal still unmet, a small instance) the exhaustive search."""
    improve(p)
    if any(p.score()):
        exhaustive(p)
