"""Exact preferred-leader balance as a flow problem (issue 13 #1).

Reordering a partition's replica list changes only its *preferred* leader: no byte is copied.
Which broker leads which partition is an assignment of every partition to one of its replicas;
the leader counts that assignments can reach are the integer points of a base polyhedron, so the
most balanced one both minimises the largest count and maximises the smallest (Frank & Murota,
"decreasingly minimal" elements), and a min-cost flow finds it.

The problem is solved on *groups*, not partitions: partitions with the same replica set and the
same current leader are interchangeable, so the network is (set, current leader) -> broker, small
whatever the number of partitions (a few thousand groups for 30 brokers at RF 3).

1. ``floor(P/B) .. ceil(P/B)`` leaders per broker (spread <= 1) is tried first: one min-cost flow
   minimising leadership changes.
2. When the replica sets do not allow it, the best achievable bounds are found by max-flow binary
   searches: ``high`` the smallest feasible maximum, ``low`` the largest feasible minimum (both are
   reached at once); the minimum cuts name the brokers that force them — the *why* in the report.
3. Inside ``[low, high]`` a convex cost per broker (the k-th leader costs W·(2k-1), W larger than
   any number of changes) balances the brokers in between; leadership changes are the second key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

Group = tuple[tuple[int, ...], int]  # (sorted replica set, current leader)

_UNIT_SEGMENTS = 64  # convex costs per unit up to this window, geometric segments beyond


@dataclass
class LeaderBalance:
    """The solved leader assignment and what the report says about it."""

    assignment: dict[Group, dict[int, int]]  # group -> {new leader: partitions}
    brokers: tuple[int, ...]
    counts: dict[int, int]  # leaders per broker after
    ideal_spread: int  # 0 when B divides P, else 1
    spread: int  # the best achievable (and achieved)
    changes: int  # partitions whose leader differs from the current one
    reasons: list[str] = field(default_factory=list)  # why ``spread`` > ``ideal_spread``

    def summary(self) -> dict:
        return {
            "spread": self.spread,
            "ideal_spread": self.ideal_spread,
            "achievable": self.spread <= self.ideal_spread,
            "min": min(self.counts.values(), default=0),
            "max": max(self.counts.values(), default=0),
            "changes": self.changes,
            "why_not_ideal": list(self.reasons),
        }


def _nx():
    import networkx as nx

    return nx


def _upper_ok(groups: Mapping[Group, int], brokers: Sequence[int], cap: int, want_cut=False):
    """Can every partition get a leader with at most ``cap`` per broker? With ``want_cut``, also
    the brokers of a minimum cut: a set whose partitions lie wholly on it, too many for it."""
    nx = _nx()
    g = nx.DiGraph()
    total = 0
    for (reps, _), n in groups.items():
        total += n
        key = ("g", reps)
        g.add_edge("s", key, capacity=g.get_edge_data("s", key, {}).get("capacity", 0) + n)
        for b in reps:
            g.add_edge(key, ("b", b))  # infinite capacity
    for b in brokers:
        g.add_edge(("b", b), "t", capacity=cap)
    if total == 0:
        return (True, []) if want_cut else True
    value, (side, _) = nx.minimum_cut(g, "s", "t")
    ok = value >= total
    if not want_cut:
        return ok
    return ok, sorted(n[1] for n in side if isinstance(n, tuple) and n[0] == "b")


def _lower_ok(groups: Mapping[Group, int], brokers: Sequence[int], floor_: int, want_cut=False):
    """Can every broker lead at least ``floor_`` partitions? With ``want_cut``, the brokers of a
    minimum cut: a set that holds replicas of too few partitions to lead that many."""
    nx = _nx()
    g = nx.DiGraph()
    for b in brokers:
        g.add_edge("s", ("b", b), capacity=floor_)
    for (reps, _), n in groups.items():
        key = ("g", reps)
        g.add_edge(key, "t", capacity=g.get_edge_data(key, "t", {}).get("capacity", 0) + n)
        for b in reps:
            g.add_edge(("b", b), key)
    need = floor_ * len(brokers)
    if need == 0:
        return (True, []) if want_cut else True
    value, (side, _) = nx.minimum_cut(g, "s", "t")
    ok = value >= need
    if not want_cut:
        return ok
    return ok, sorted(n[1] for n in side if isinstance(n, tuple) and n[0] == "b")


def _who(cut: Sequence[int]) -> str:
    return f"broker {cut[0]} holds" if len(cut) == 1 else f"brokers {list(cut)} hold"


def _segments(low: int, high: int) -> list[tuple[int, int]]:
    """(width, leader count at the segment's end) for the units above ``low`` up to ``high``."""
    out, k = [], low
    width = 1
    while k < high:
        if high - low > _UNIT_SEGMENTS and k - low >= _UNIT_SEGMENTS // 2:
            width = max(1, (k - low) // 8)
        w = min(width, high - k)
        k += w
        out.append((w, k))
    return out


def _min_cost(groups: Mapping[Group, int], brokers: Sequence[int], low: int, high: int):
    """Min-cost flow with every broker in [low, high]: convex balance first, changes second.
    Returns the assignment or None when infeasible."""
    nx = _nx()
    total = sum(groups.values())
    w = total + 1  # one step of balance outweighs every leadership change
    g = nx.DiGraph()
    g.add_node("t", demand=total - low * len(brokers))
    for (reps, cur), n in groups.items():
        key = ("g", reps, cur)
        g.add_node(key, demand=-n)
        for b in reps:
            g.add_edge(key, ("b", b), capacity=n, weight=0 if b == cur else 1)
    for b in brokers:
        g.add_node(("b", b), demand=low)
        prev = low
        for i, (width, end) in enumerate(_segments(low, high)):
            # the units prev+1..end cost W·(2k-1) each, W·(end² - prev²) in all: per unit
            unit = w * (prev + end)
            node = ("u", b, i)
            g.add_edge(("b", b), node, capacity=width, weight=unit)
            g.add_edge(node, "t", capacity=width, weight=0)
            prev = end
    try:
        _, flow = nx.network_simplex(g)
    except nx.NetworkXUnfeasible:
        return None
    out: dict[Group, dict[int, int]] = {}
    for (reps, cur), _n in groups.items():
        f = flow[("g", reps, cur)]
        out[(reps, cur)] = {b: f[("b", b)] for b in reps if f.get(("b", b), 0) > 0}
    return out


def balance_leaders(groups: Mapping[Group, int], brokers: Sequence[int]) -> LeaderBalance:
    """The most balanced preferred-leader assignment with the fewest leadership changes.

    ``groups`` maps (sorted replica set, current leader) to a number of partitions; ``brokers`` are
    the brokers the spread is measured over (every broker of a replica set is added)."""
    groups = {(tuple(sorted(r)), c): n for (r, c), n in groups.items() if n > 0}
    merged: dict[Group, int] = {}
    for k, n in groups.items():
        merged[k] = merged.get(k, 0) + n
    groups = merged
    bs = sorted(set(brokers) | {b for (r, _) in groups for b in r})
    total = sum(groups.values())
    if not bs:
        return LeaderBalance({}, (), {}, 0, 0, 0)
    lo, hi = total // len(bs), -(-total // len(bs))
    ideal = hi - lo
    reasons: list[str] = []
    assignment = _min_cost(groups, bs, lo, hi)
    if assignment is None:
        # the best bounds: the smallest feasible maximum and the largest feasible minimum
        a_lo, a_hi = hi, max(hi, total)
        while a_lo < a_hi:
            mid = (a_lo + a_hi) // 2
            a_lo, a_hi = (a_lo, mid) if _upper_ok(groups, bs, mid) else (mid + 1, a_hi)
        c_lo, c_hi = 0, lo
        while c_lo < c_hi:
            mid = (c_lo + c_hi + 1) // 2
            c_lo, c_hi = (mid, c_hi) if _lower_ok(groups, bs, mid) else (c_lo, mid - 1)
        high, low = a_lo, c_lo
        # the minimum cuts one step past the bounds name the brokers that force them
        if high > hi:
            _, cut = _upper_ok(groups, bs, high - 1, want_cut=True)
            inside = sum(n for (r, _), n in groups.items() if set(r) <= set(cut))
            reasons.append(
                f"{_who(cut)} every replica of {inside} partitions, so "
                f"{'it' if len(cut) == 1 else 'one of them'} leads at least "
                f"{-(-inside // len(cut))}, more than the {hi} of an even spread"
            )
        if low < lo:
            _, cut = _lower_ok(groups, bs, low + 1, want_cut=True)
            touch = sum(n for (r, _), n in groups.items() if set(r) & set(cut))
            reasons.append(
                f"{_who(cut)} replicas of only {touch} partitions, so "
                f"{'it' if len(cut) == 1 else 'one of them'} leads at most "
                f"{touch // len(cut)}, fewer than the {lo} of an even spread"
            )
        assignment = _min_cost(groups, bs, low, high)
        assert assignment is not None, (low, high)
    counts = {b: 0 for b in bs}
    changes = 0
    for (_, cur), to in assignment.items():
        for b, n in to.items():
            counts[b] += n
            if b != cur:
                changes += n
    spread = max(counts.values()) - min(counts.values())
    return LeaderBalance(assignment, tuple(bs), counts, ideal, spread, changes, reasons)
