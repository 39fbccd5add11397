"""The network pass: after the replica, bytes and leader passes (either engine: it reads only
their final rows), change the fewest replicas so that every broker meets the network goals
(``planner.network``) in their priority order.

It works in rounds. A round takes each goal in priority order (the hard limits, then the
targets asked for) and, for each kind of change in turn — leadership-only changes (a follower
made first replica, nothing copied), then single replica moves, then swaps of a hot replica
with a cooler one (both brokers keep their counts) — lets every broker over its limit shed its
hottest partitions to the brokers with most room, many changes per pass. A change is made only
when it brings the goals strictly nearer in priority order; since the totals (hence the
targets) never change, it is scored on the few brokers it touches, so a pass costs about the
partitions on the brokers over their limit, not a full re-score per change. Rounds stop when
one changes nothing. Every change keeps the rules: a partition never on fewer racks than
before, nothing new on a removed or cordoned broker, each broker's count within one of the
band the earlier passes left, the capacity file's disk and replica limits. When the rounds
stop short of a goal on a small instance, an exhaustive search over every placement (capacity
before counts) finds one that meets it if any does; a goal still unmet is reported with its
numbers, never dropped."""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import itemgetter
from typing import Any

import numpy as np

from .network import RESOURCES, Goals
from .network_arrays import Flat, added, columns, holdings
from .rules import Capacity

EPS = 1e-6  # bytes/s: an improvement smaller than this is rounding
DESTS = 8  # brokers with most room a partition's move is tried to
SWAP_COLD = 4  # swap partners tried per destination
FOLLOWERS = 256  # followers a broker lists as swap partners for network out and leader load
GIVE_UP = 32  # partitions in a row a broker fails to shed before the pass leaves it
FILE_ONE_BY_ONE = 32  # arrivals filed by bisection; more: by one sort of the list
FIRST = itemgetter(0)
SECOND = itemgetter(1)
Key = tuple[str, int]  # a partition: (topic, partition)
ROUNDS = 50  # each round's changes strictly bring the goals nearer; this only bounds it
EXHAUSTIVE_MAX = 200_000  # placements; beyond, the greedy result stands


@dataclass
class Placement:
    """The partitions the pass may change (``reps``, by key) over fixed background load, with
    what each costs and what constrains it. Inside, partitions go by number (``keys[i]``, in
    ``reps`` order): a look-up by number costs a fraction of one by (topic, partition) at a
    million replicas. Changes go through ``move`` (``assign`` by key), which keeps every
    broker's loads, replica count, bytes and partitions current (a step re-scores in
    O(brokers), not O(partitions))."""

    reps: dict[Key, list[int]]
    load: Mapping[Key, tuple[float, float]]
    size: Mapping[Key, int]
    background: list[tuple[Sequence[int], tuple[float, float]]]
    background_bytes: Mapping[int, int]
    background_count: Mapping[int, int]
    racks: Mapping[int, str | None]
    placeable: frozenset[int]
    holders: frozenset[int]
    goals: Goals
    capacity: Capacity | None = None
    band: tuple[int, int] = (0, 1 << 62)
    cur: dict[str, dict[int, float]] = field(default_factory=dict)
    count: dict[int, int] = field(default_factory=dict)
    bytes_on: dict[int, int] = field(default_factory=dict)
    # by number: the replicas now, and when the pass began (those it changed; their rack
    # count: a floor, read on demand)
    rep: list[list[int]] = field(default_factory=list)
    first: dict[int, list[int]] = field(default_factory=dict)
    min_racks: dict[int, int] = field(default_factory=dict)
    # each broker's partitions (numbers) in the order they came (a dict: the same order every
    # run): its ranked lists read their loads and leaders from the arrays below
    held: dict[int, dict[int, None]] = field(default_factory=dict)
    keys: list[Key] = field(default_factory=list)
    # by number: produce, fetch and size (lists: read one at a time), and as arrays produce,
    # fetch, the leader (-1: no replicas) and the replica count (kept current by ``move``)
    produce_of: list[float] = field(default_factory=list)
    fetch_of: list[float] = field(default_factory=list)
    size_of: list[int] = field(default_factory=list)
    produce: np.ndarray = field(default_factory=lambda: np.zeros(0))
    fetch: np.ndarray = field(default_factory=lambda: np.zeros(0))
    head: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    rf: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self) -> None:
        # the loads, counts, bytes and holdings in arrays over the flattened lists: at a
        # million replicas a walk partition by partition costs more than the pass itself
        self.keys = keys = list(self.reps)
        self.rep = lists = list(self.reps.values())
        lks = aligned(self.load, keys, (0.0, 0.0))
        self.produce_of, self.fetch_of = list(map(FIRST, lks)), list(map(SECOND, lks))
        self.size_of = aligned(self.size, keys, 0)
        self.produce, self.fetch = columns(lks)
        bg = self.background
        flat = Flat.of([*lists, *(r for r, _ in bg)], self.racks)
        self.cur = flat.loads(*columns([*lks, *(lk for _, lk in bg)]))
        self.head = np.asarray([r[0] if r else -1 for r in lists], dtype=np.int64)
        self.rf = flat.lens[: len(lists)].copy()
        upto = int(self.rf.sum())
        owners = flat.owners()
        sizes = np.asarray(self.size_of, dtype=np.int64)
        self.count = added(self.background_count, flat, upto)
        self.bytes_on = added(self.background_bytes, flat, upto, sizes[owners[:upto]])
        self.held = holdings(flat, upto, owners)
        vals = [self.count.get(b, 0) for b in self.holders]
        if vals:
            self.band = (min(vals) - 1, max(vals) + 1)

    @cached_property
    def number(self) -> dict[Key, int]:
        """Each partition's number, by key (for callers by key; the pass goes by number)."""
        return dict(zip(self.keys, itertools.count()))

    @property
    def start(self) -> dict[Key, list[int]]:
        """By key: the replicas when the pass began of those it changed."""
        return {self.keys[i]: r for i, r in self.first.items()}

    @property
    def on(self) -> dict[int, dict[Key, None]]:
        """By key: each broker's partitions, in the order they came."""
        keys = self.keys
        return {b: dict.fromkeys(map(keys.__getitem__, h)) for b, h in self.held.items()}

    def _apply(self, i: int, reps: Sequence[int], sign: int) -> None:
        """Partition ``i`` on ``reps`` added to (``sign`` 1) or taken from (-1) the brokers'
        loads, counts, bytes and holdings."""
        if not reps:
            return
        produce, fetch = self.produce_of[i], self.fetch_of[i]
        n, taken = sign * self.size_of[i], sign * produce
        count, bytes_on, on = self.count, self.bytes_on, self.held
        nin = self.cur["network_in"]
        for b in reps:
            count[b] = count.get(b, 0) + sign
            bytes_on[b] = bytes_on.get(b, 0) + n
            nin[b] = nin.get(b, 0.0) + taken
            if sign > 0:
                on.setdefault(b, {})[i] = None
            else:
                on.setdefault(b, {}).pop(i, None)
        h, nout, lead = reps[0], self.cur["network_out"], self.cur["leader_load"]
        nout[h] = nout.get(h, 0.0) + sign * (fetch + produce * (len(reps) - 1))
        lead[h] = lead.get(h, 0.0) + taken

    def move(self, i: int, new: list[int]) -> None:
        """Partition ``i`` onto ``new``."""
        was = self.rep[i]
        self.first.setdefault(i, was)
        self._apply(i, was, -1)
        self.rep[i] = self.reps[self.keys[i]] = new
        self._apply(i, new, +1)
        self.head[i], self.rf[i] = (new[0] if new else -1), len(new)

    def assign(self, k: Key, new: list[int]) -> None:
        self.move(self.number[k], new)

    def rack_count(self, reps: Sequence[int]) -> int:
        racks = set(map(self.racks.get, reps))
        return 0 if None in racks else len(racks)

    def loads(self) -> dict[str, dict[int, float]]:
        return {r: dict(v) for r, v in self.cur.items()}

    def afresh(self) -> dict[str, dict[int, float]]:
        """Each broker's loads summed afresh over the replicas now and the background (the
        running ones were kept by additions), as ``broker_loads`` sums them."""
        bg = self.background
        produce, fetch = columns([lk for _, lk in bg])
        flat = Flat.of([*self.rep, *(r for r, _ in bg)], self.racks)
        return flat.loads(
            np.concatenate((self.produce, produce)), np.concatenate((self.fetch, fetch))
        )

    def counts(self) -> dict[int, int]:
        return dict(self.count)

    def in_band(self) -> bool:
        lo, hi = self.band
        return all(lo <= self.count.get(b, 0) <= hi for b in self.holders)

    def score(self) -> tuple:
        return tuple(round(x, 6) for x in self.goals.excess(self.cur, self.holders))

    def fits(self, i: int, new: Sequence[int], old: Sequence[int]) -> bool:
        """Partition ``i`` may go from ``old`` to ``new``: racks, cordons, disk and replica
        limits."""
        added = set(new).difference(old)
        return added <= self.placeable and self.racks_kept(i, new) and self.room_for(i, added)

    def racks_kept(self, i: int, new: Sequence[int]) -> bool:
        """``new`` on no fewer racks than partition ``i`` was when the pass began."""
        floor = self.min_racks.get(i)
        if floor is None:
            floor = self.min_racks[i] = self.rack_count(self.first.get(i, self.rep[i]))
        return self.rack_count(new) >= floor

    def room_for(self, i: int, added: Iterable[int]) -> bool:
        """Each of ``added`` within its disk and replica limits holding partition ``i`` too."""
        return self.capacity is None or all(self._within(b, i) for b in added)

    def _within(self, b: int, i: int) -> bool:
        """``b`` within its disk and replica limits holding partition ``i`` too."""
        disk, most = self.capacity.disk(b), self.capacity.max_replicas(b)
        extra = 0 if i in self.held.get(b, ()) else 1
        total = self.bytes_on.get(b, 0) + extra * self.size_of[i]
        n = self.count.get(b, 0) + extra
        return (disk is None or total <= disk) and (most is None or n <= most)


def aligned(by_key: Mapping[Key, Any], keys: list[Key], default: Any) -> list:
    """``by_key``'s values for ``keys``, in order: read off in one go when it holds exactly
    ``keys`` in that order (the snapshot's key order, nothing excluded), else looked up."""
    if len(by_key) == len(keys) and list(by_key) == keys:
        return list(by_key.values())
    return [by_key.get(k, default) for k in keys]


def contribution(p: Placement, k: Key, b: int, res: str) -> float:
    """What ``k`` adds to broker ``b``'s ``res`` (``share``, by key)."""
    return share(p, p.number[k], b, res)


def share(p: Placement, i: int, b: int, res: str) -> float:
    """What partition ``i`` adds to broker ``b``'s ``res``: a follower adds its produce to
    network in and nothing to network out or leader load."""
    produce = p.produce_of[i]
    if res == "network_in":
        return produce
    reps = p.rep[i]
    if reps[0] != b:
        return 0.0
    return p.fetch_of[i] + produce * (len(reps) - 1) if res == "network_out" else produce


def shares(p: Placement, i: int, b: int) -> tuple[float, float, float]:
    """``share`` of partition ``i`` on ``b`` for each of ``RESOURCES``, worked out at once."""
    produce, reps = p.produce_of[i], p.rep[i]
    if reps[0] != b:
        return produce, 0.0, 0.0
    return produce, p.fetch_of[i] + produce * (len(reps) - 1), produce


def ranked_on(p: Placement, held: Mapping[int, None], b: int, res: str) -> list[tuple[float, int]]:
    """``(share(p, i, b, res), i)`` for each partition ``held`` on ``b`` (but at most
    ``FOLLOWERS`` of the zeros), least first (ties: in the order held): from the arrays, by a
    stable sort, since a list is thousands long at scale."""
    idx = np.fromiter(held, dtype=np.int64, count=len(held))
    if res == "network_in":
        c = p.produce[idx]
    else:
        led = p.head[idx] == b
        # followers add nothing out and no leader load: a few serve as swap partners, and a
        # partner that arrives later is told (``Scorer.attempt``)
        follows, idx = idx[~led][:FOLLOWERS], idx[led]
        c = p.produce[idx]
        if res == "network_out":
            c = p.fetch[idx] + c * (p.rf[idx] - 1)
        idx = np.concatenate((follows, idx))
        c = np.concatenate((np.zeros(len(follows)), c))
    order = np.argsort(c, kind="stable")
    return list(zip(c[order].tolist(), idx[order].tolist(), strict=True))


@dataclass
class Scorer:
    """The goals' excess broker by broker: a change touches a few brokers and the totals (hence
    the targets) never change, so a change is scored on the brokers it touches alone."""

    p: Placement
    targets: dict[str, dict[int, float]] = field(default_factory=dict)
    allowed: frozenset[int] = frozenset()
    # (resource, broker) -> its partitions (numbers) by what they add to it, least first:
    # listed once, told of every arrival, so an entry may be stale (checked when used) but
    # none is missing
    ranks: dict[tuple[str, int], list[tuple[float, int]]] = field(default_factory=dict)
    # arrivals not yet filed in their list, in the order they came (and as a set, for
    # ``forget``): filed when the list is next read, so a list read once a round is sorted
    # once, not shifted per arrival
    arrived: dict[tuple[str, int], list[tuple[float, int]]] = field(default_factory=dict)
    waiting: set[tuple[str, int, float, int]] = field(default_factory=set)
    touched: set[int] = field(default_factory=set)  # the brokers the last change made touched

    def __post_init__(self) -> None:
        self.targets = self.p.goals.targets(self.p.cur)
        self.allowed = frozenset(self.p.goals.brokers)

    def goals(self) -> list[tuple[str, dict[int, float]]]:
        """(resource, each broker's limit) in priority order: capacities, then targets."""
        out = [(res, dict(caps)) for res, caps in self.p.goals.limits.items()]
        for res in self.p.goals.balance:
            limit = dict(self.targets[res])
            limit.update({b: 0.0 for b in self.p.holders - self.allowed})
            out.append((res, limit))
        return out

    def over(
        self, brokers: set[int], delta: Mapping[str, Mapping[int, float]]
    ) -> tuple[list[float], list[float]]:
        """The excess summed over ``brokers`` as they are and with ``delta`` added to their
        loads, per goal in priority order (as ``Goals.excess``)."""
        cur, goals, allowed, holders = self.p.cur, self.p.goals, self.allowed, self.p.holders
        was = [0.0] * (1 + len(goals.balance))
        now = list(was)
        if goals.limits:
            for b in brokers:
                for res, caps in goals.limits.items():
                    if b in caps:
                        v = cur[res].get(b, 0.0)
                        was[0] += max(0.0, v + 0.0 - caps[b])
                        now[0] += max(0.0, v + delta[res].get(b, 0.0) - caps[b])
        # goal by goal: each sum still adds its brokers in the same order
        for i, res in enumerate(goals.balance, 1):
            cur_r, delta_r, target = cur[res], delta[res], self.targets[res]
            w = n = 0.0
            for b in brokers:
                v = cur_r.get(b, 0.0)
                if b in allowed:  # ``max(0.0, x)``, without a call per broker
                    t = target[b]
                    x = v + 0.0 - t
                    w += x if x > 0.0 else 0.0
                    x = v + delta_r.get(b, 0.0) - t
                    n += x if x > 0.0 else 0.0
                elif b in holders:
                    w += v + 0.0
                    n += v + delta_r.get(b, 0.0)
            was[i], now[i] = w, n
        return was, now

    def attempt(self, change: list[tuple[Key, list[int]]]) -> bool:
        """``make`` by key."""
        return self.make([(self.p.number[k], new) for k, new in change])

    def make(self, change: list[tuple[int, list[int]]]) -> bool:
        """Make ``change`` (partition numbers, their new replicas) if it keeps the rules and
        brings the goals strictly nearer, in priority order; else leave the placement as it
        was. Scored on the loads it would leave, so a refused change costs no bookkeeping."""
        p = self.p
        produce_of, fetch_of = p.produce_of, p.fetch_of
        nin: dict[int, float] = {}
        nout: dict[int, float] = {}
        lead: dict[int, float] = {}
        counts: dict[int, int] = {}
        for i, new in change:
            was = p.rep[i]
            if not p.fits(i, new, was):
                return False
            produce, fetch = produce_of[i], fetch_of[i]
            for reps, sign in ((was, -1), (new, 1)):
                if not reps:
                    continue
                taken = sign * produce
                for b in reps:  # the loads ``i`` adds on ``reps`` (``Placement.move``)
                    nin[b] = nin.get(b, 0.0) + taken
                    counts[b] = counts.get(b, 0) + sign
                h = reps[0]
                nout[h] = nout.get(h, 0.0) + sign * (fetch + produce * (len(reps) - 1))
                lead[h] = lead.get(h, 0.0) + taken
        lo, hi = p.band
        count, holders = p.count, p.holders
        for b, n in counts.items():
            if b in holders and not lo <= count.get(b, 0) + n <= hi:
                return False
        touched = set(counts)  # every broker whose loads change holds or held a replica
        delta = {"network_in": nin, "network_out": nout, "leader_load": lead}
        if not _nearer(*self.over(touched, delta)):
            return False
        self.touched = touched
        for i, new in change:
            for b in set(p.rep[i]).difference(new):
                self.forget(i, b)
            p.move(i, new)
            self.arrive(i, new)
        return True

    def arrive(self, i: int, new: list[int]) -> None:
        """Partition ``i``, now on ``new``, told to the lists of its brokers: what it adds to
        each (``share``, worked out once for all three)."""
        if not new:
            return
        ranks, arrived, waiting = self.ranks, self.arrived, self.waiting
        for b in new:
            for res, c in zip(RESOURCES, shares(self.p, i, b), strict=True):
                if (res, b) in ranks:
                    arrived.setdefault((res, b), []).append((c, i))
                    waiting.add((res, b, c, i))

    def forget(self, i: int, b: int) -> None:
        """Partition ``i``'s entries at its present figures off ``b``'s lists, as it leaves
        ``b``: a list that kept those who left would be walked past them on every later pass."""
        ranks, waiting = self.ranks, self.waiting
        for res, c in zip(RESOURCES, shares(self.p, i, b), strict=True):
            got = ranks.get((res, b))
            if got is None:
                continue
            if (res, b, c, i) in waiting:
                waiting.discard((res, b, c, i))
                self.arrived[(res, b)] = [e for e in self.arrived[(res, b)] if e != (c, i)]
            j = bisect.bisect_left(got, c, key=FIRST)
            end = bisect.bisect_right(got, c, lo=j, key=FIRST)
            entry = (c, i)
            while True:  # every copy, among those at ``c`` (compared in C)
                try:
                    j = got.index(entry, j, end)
                except ValueError:
                    break
                del got[j]
                end -= 1

    def listed(self, res: str, b: int) -> list[tuple[float, int]]:
        """``b``'s partitions (numbers) by what they add to its ``res``, least first (ties: in
        the order they came to ``b``, the same every run)."""
        got = self.ranks.get((res, b))
        if got is None:
            got = self.ranks[(res, b)] = ranked_on(self.p, self.p.held.get(b, {}), b, res)
        new = self.arrived.pop((res, b), None)
        if new:  # filed after those listed before, in the order they came: a stable sort
            self.waiting.difference_update((res, b, *e) for e in new)
            if len(new) <= FILE_ONE_BY_ONE:
                for e in new:
                    bisect.insort(got, e, key=FIRST)
            else:
                got += new
                got.sort(key=FIRST)
        return got

    def ranked(self, res: str, b: int) -> list[tuple[float, Key]]:
        """``listed`` by key."""
        keys = self.p.keys
        return [(c, keys[i]) for c, i in self.listed(res, b)]


def _nearer(before: Sequence[float], after: Sequence[float]) -> bool:
    for x, y in zip(before, after, strict=True):
        if y < x - EPS:
            return True
        if y > x + EPS:
            return False
    return False


@dataclass
class Shedding:
    """One pass over one goal with one kind of change: each broker over its limit, hottest
    partitions first, takes the first change off it that brings the goals nearer, until it is
    within its limit or nothing helps; many changes per pass, each scored on its brokers."""

    s: Scorer
    res: str
    limit: dict[int, float]
    order: list[tuple[float, int]] = field(default_factory=list)  # ``dests``, kept
    at: dict[int, tuple[float, int]] = field(default_factory=dict)  # each broker's entry

    def room(self, d: int) -> float:
        return self.limit.get(d, math.inf) - self.s.p.cur[self.res].get(d, 0.0)

    def dests(self) -> list[tuple[float, int]]:
        """(minus the room, broker) for each placeable broker, most room first."""
        cur, limit, inf = self.s.p.cur[self.res], self.limit, math.inf
        self.order = sorted((cur.get(d, 0.0) - limit.get(d, inf), d) for d in self.s.p.placeable)
        self.at = {d: e for e in self.order for d in (e[1],)}
        return self.order

    def reorder(self) -> list[tuple[float, int]]:
        """``dests`` after a change: only the brokers it touched re-placed (the same order a
        full sort gives: each entry names its broker, so no two are equal)."""
        cur, limit, order, at = self.s.p.cur[self.res], self.limit, self.order, self.at
        for d in self.s.touched:
            was = at.get(d)
            if was is None:
                continue  # not placeable
            del order[bisect.bisect_left(order, was)]
            at[d] = e = (cur.get(d, 0.0) - limit.get(d, math.inf), d)
            bisect.insort(order, e)
        return order

    def run(self, kind: str) -> int:
        p, res = self.s.p, self.res
        if kind == "leader" and res == "network_in":
            return 0  # a leadership change moves no network in
        over = [b for b in self.limit if self.room(b) < -EPS]
        done = 0
        for b in sorted(over, key=lambda b: (self.room(b), b)):
            dests, failed = self.dests(), 0
            ranked = self.s.listed(res, b)
            hot = ranked[bisect.bisect_right(ranked, EPS, key=FIRST) :]
            for c, i in reversed(hot):
                if self.room(b) >= -EPS or failed >= GIVE_UP:
                    break
                if b not in p.rep[i] or share(p, i, b, res) != c:
                    continue  # changed since listed
                if self.shed_one(kind, b, i, c, dests):
                    done, failed = done + 1, 0
                    dests = self.reorder()
                else:
                    failed += 1
        return done

    def shed_one(self, kind: str, b: int, k: int, c: float, dests: list[tuple[float, int]]) -> bool:
        """A change of partition ``k`` (adding ``c`` to ``b``) that sheds some of ``b``'s
        excess, made if one brings the goals nearer."""
        r, excess = self.s.p.rep[k], -self.room(b)
        if kind == "leader":
            for f in sorted(r[1:], key=lambda f: (-self.room(f), f)):
                if c - self.room(f) >= min(c, excess):
                    break  # the new leader takes on what ``b`` sheds: most room first
                if self.s.make([(k, [f, *[x for x in r if x != f]])]):
                    return True
            return False
        p, tries = self.s.p, 0
        lo, hi = p.band
        if kind == "move" and p.count.get(b, 0) <= lo:
            return False  # a move off ``b`` would leave it below the count band
        kept: dict[str | None, bool] = {}  # the racks a move keeps hang on its rack alone
        move, count, racks = kind == "move", p.count, p.racks
        for key, d in dests:  # walked far past the few tried: kept to local look-ups
            if move and count.get(d, 0) >= hi:
                continue
            room = -key  # ``self.room(d)``: the order is kept current (``reorder``)
            # most room first: once a move (a swap: any change) cannot help, no later one does
            if tries >= DESTS or room <= EPS or (move and c - room >= min(c, excess)):
                break
            if d in r:
                continue
            rack = racks.get(d)
            ok = kept.get(rack)
            if ok is None:
                ok = kept[rack] = p.racks_kept(k, [d if x == b else x for x in r])
            # dests are placeable: with racks kept, ``fits`` asks the limits alone
            if not ok or not p.room_for(k, (d,)):
                continue
            moved = [d if x == b else x for x in r]
            tries += 1
            if self.s.make([(k, moved)]) if kind == "move" else self.swap(b, d, k, c, moved):
                return True
        return False

    def swap(self, b: int, d: int, k: int, c: float, moved: list[int]) -> bool:
        """``k`` to ``d`` and one of ``d``'s partitions to ``b`` (counts kept): the one whose
        exchange sheds most without putting ``d`` over its limit, else the nearest to it."""
        p, res = self.s.p, self.res
        ranked = self.s.listed(res, d)
        want = c - min(-self.room(b), self.room(d))
        i = bisect.bisect_left(ranked, want, key=FIRST)
        top = bisect.bisect_left(ranked, c - EPS, lo=i, key=FIRST)
        tries, on_d = 0, p.held.get(d, {})
        for cq, q in itertools.chain(_held(ranked, i, top, on_d), _held_down(ranked, i, top, on_d)):
            rq = p.rep[q]
            if q == k or b in rq or share(p, q, d, res) != cq:
                continue
            tries += 1
            if self.s.make([(k, moved), (q, [b if x == d else x for x in rq])]):
                return True  # ``q``'s entry here is stale now, passed over when next met
            if tries >= SWAP_COLD:
                break
        return False


def _held(ranked: list, lo: int, hi: int, on: Mapping) -> Iterator:
    """``ranked[lo:hi]`` less the entries of partitions no longer ``on`` the broker: a list
    keeps those who left (skipped when met), and the filter runs in C, checked as it goes."""
    return itertools.compress(
        itertools.islice(ranked, lo, hi),
        map(on.__contains__, map(SECOND, itertools.islice(ranked, lo, hi))),
    )


def _held_down(ranked: list, i: int, top: int, on: Mapping) -> Iterator:
    """``ranked[min(i, top) - 1]`` down to ``ranked[0]``, as ``_held``."""
    skip = len(ranked) - min(i, top)
    return itertools.compress(
        itertools.islice(reversed(ranked), skip, None),
        map(on.__contains__, map(SECOND, itertools.islice(reversed(ranked), skip, None))),
    )


def improve(p: Placement, max_rounds: int = ROUNDS) -> int:
    """Rounds of passes (each goal in priority order; leadership changes, then moves, then
    swaps) until a round changes nothing; the changes made."""
    scorer = Scorer(p)
    total = 0
    for _ in range(max_rounds):
        if not any(p.score()):
            break
        done = 0
        for res, limit in scorer.goals():
            for kind in ("leader", "move", "swap"):
                done += Shedding(scorer, res, limit).run(kind)
        total += done
        if not done:
            break
    return total


def _options(p: Placement, k: int) -> list[list[int]]:
    r = p.rep[k]
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
    keys = [p.number[k] for k in sorted(p.reps)]
    bound = 1
    for k in keys:  # an upper bound on the placements, before any is listed
        bound *= math.perm(len(p.placeable | set(p.rep[k])), len(p.rep[k]))
        if bound > EXHAUSTIVE_MAX:
            return False
    options = [_options(p, k) for k in keys]
    start = {k: list(p.rep[k]) for k in keys}
    best = None
    for combo in itertools.product(*options):
        for k, c in zip(keys, combo, strict=True):
            if p.rep[k] != list(c):
                p.move(k, list(c))
        if not all(p.fits(k, p.rep[k], start[k]) for k in keys):
            continue
        moved = sum(len(set(p.rep[k]) - set(start[k])) for k in keys)
        led = sum(p.rep[k][0] != start[k][0] for k in keys)
        key = (p.score(), not p.in_band(), moved, led)
        if best is None or key < best[0]:
            best = (key, [list(c) for c in combo])
    for i, k in enumerate(keys):
        p.move(k, best[1][i] if best is not None else start[k])
    return True


def solve(p: Placement) -> None:
    """Greedy steps, then (a goal still unmet, a small instance) the exhaustive search."""
    improve(p)
    if any(p.score()):
        exhaustive(p)
