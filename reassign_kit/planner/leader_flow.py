"""Exact preferred-leader balance as a flow problem.

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

from collections import defaultdict
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


@dataclass(frozen=True)
class Network:
    """A min-cost flow network as flat arrays (node 0.. ``nodes`` - 1): what the solver gets, and
    what a test hands to another solver to check the optimum. Parallel arcs are allowed."""

    nodes: int
    tail: list[int]
    head: list[int]
    capacity: list[int]
    cost: list[int]
    supply: list[int]  # per node; > 0 sends, < 0 receives, sums to 0


def _group_list(groups: Mapping[Group, int]) -> list[tuple[Group, int]]:
    """Groups in a fixed order (the solution, hence the plan, must not depend on dict order)."""
    return sorted(groups.items())


def leader_network(
    groups: Mapping[Group, int], brokers: Sequence[int], low: int, high: int
) -> tuple[Network, list[tuple[Group, int]], int]:
    """The flow of ``_min_cost``: group node -> broker node (cost 1 when the leader changes) ->
    sink, the sink arcs convex in the broker's count (the k-th leader above ``low`` costs
    W·(2k-1), W = partitions + 1 so one step of balance outweighs every change); every broker
    must take ``low``. Returns the network, the groups in node order and the first broker arc."""
    items = _group_list(groups)
    total = sum(n for _, n in items)
    w = total + 1
    g_n, b_n = len(items), len(brokers)
    index = {b: g_n + i for i, b in enumerate(brokers)}
    sink = g_n + b_n
    tail: list[int] = []
    head: list[int] = []
    cap: list[int] = []
    cost: list[int] = []
    supply = [0] * (sink + 1)
    for gi, ((reps, cur), n) in enumerate(items):
        supply[gi] = n
        for b in reps:
            tail.append(gi)
            head.append(index[b])
            cap.append(n)
            cost.append(0 if b == cur else 1)
    first_broker_arc = len(tail)
    segs = _segments(low, high)
    for b in brokers:
        supply[index[b]] = -low
        prev = low
        for width, end in segs:
            # the units prev+1..end cost W·(2k-1) each, W·(end² - prev²) in all: per unit
            tail.append(index[b])
            head.append(sink)
            cap.append(width)
            cost.append(w * (prev + end))
            prev = end
    supply[sink] = -(total - low * b_n)
    return Network(sink + 1, tail, head, cap, cost, supply), items, first_broker_arc


def _solve_min_cost(net: Network):
    """OR-Tools' min-cost flow (compiled): (optimal cost, flow per arc), or None when no flow
    meets the supplies."""
    import numpy as np
    from ortools.graph.python import min_cost_flow

    mcf = min_cost_flow.SimpleMinCostFlow()
    mcf.add_arcs_with_capacity_and_unit_cost(
        np.asarray(net.tail, dtype=np.int32),
        np.asarray(net.head, dtype=np.int32),
        np.asarray(net.capacity, dtype=np.int64),
        np.asarray(net.cost, dtype=np.int64),
    )
    mcf.set_nodes_supplies(
        np.arange(net.nodes, dtype=np.int32), np.asarray(net.supply, dtype=np.int64)
    )
    status = mcf.solve()
    if status == mcf.OPTIMAL:
        return mcf.optimal_cost(), mcf.flows(np.arange(len(net.tail), dtype=np.int32))
    if status == mcf.INFEASIBLE:
        return None
    raise RuntimeError(f"leader flow: min-cost flow solver returned {status!r}")


def _max_flow_cut(tail, head, cap, source: int, sink: int) -> tuple[int, list[int]]:
    """OR-Tools' max flow: (value, the source side of a minimum cut)."""
    import numpy as np
    from ortools.graph.python import max_flow

    mf = max_flow.SimpleMaxFlow()
    if tail:
        mf.add_arcs_with_capacity(
            np.asarray(tail, dtype=np.int32),
            np.asarray(head, dtype=np.int32),
            np.asarray(cap, dtype=np.int64),
        )
    status = mf.solve(source, sink)
    if status != mf.OPTIMAL:
        raise RuntimeError(f"leader flow: max-flow solver returned {status!r}")
    return mf.optimal_flow(), list(mf.get_source_side_min_cut())


def _bipartite(groups: Mapping[Group, int], brokers: Sequence[int]):
    """Replica sets (current leader dropped) and broker node numbers for the max-flow checks:
    sets are nodes 2.., brokers after them; node 0 is the source, 1 the sink."""
    sets: dict[tuple[int, ...], int] = defaultdict(int)
    for (reps, _), n in _group_list(groups):
        sets[reps] += n
    bnode = {b: 2 + len(sets) + i for i, b in enumerate(brokers)}
    return list(sets.items()), bnode


def _upper_ok(groups: Mapping[Group, int], brokers: Sequence[int], cap: int, want_cut=False):
    """Can every partition get a leader with at most ``cap`` per broker? With ``want_cut``, also
    the brokers of a minimum cut: a set whose partitions lie wholly on it, too many for it."""
    sets, bnode = _bipartite(groups, brokers)
    total = sum(n for _, n in sets)
    if total == 0:
        return (True, []) if want_cut else True
    tail, head, caps = [], [], []
    for i, (reps, n) in enumerate(sets):
        tail.append(0), head.append(2 + i), caps.append(n)
        for b in reps:  # "infinite": more than every partition
            tail.append(2 + i), head.append(bnode[b]), caps.append(total + 1)
    for b in brokers:
        tail.append(bnode[b]), head.append(1), caps.append(cap)
    value, side = _max_flow_cut(tail, head, caps, 0, 1)
    ok = value >= total
    if not want_cut:
        return ok
    inside = set(side)
    return ok, sorted(b for b in brokers if bnode[b] in inside)


def _lower_ok(groups: Mapping[Group, int], brokers: Sequence[int], floor_: int, want_cut=False):
    """Can every broker lead at least ``floor_`` partitions? With ``want_cut``, the brokers of a
    minimum cut: a set that holds replicas of too few partitions to lead that many."""
    sets, bnode = _bipartite(groups, brokers)
    need = floor_ * len(brokers)
    if need == 0:
        return (True, []) if want_cut else True
    tail, head, caps = [], [], []
    for b in brokers:
        tail.append(0), head.append(bnode[b]), caps.append(floor_)
    for i, (reps, n) in enumerate(sets):
        tail.append(2 + i), head.append(1), caps.append(n)
        for b in reps:  # "infinite": more than every partition
            tail.append(bnode[b]), head.append(2 + i), caps.append(need + 1)
    value, side = _max_flow_cut(tail, head, caps, 0, 1)
    ok = value >= need
    if not want_cut:
        return ok
    inside = set(side)
    return ok, sorted(b for b in brokers if bnode[b] in inside)


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
    net, items, n_group_arcs = leader_network(groups, brokers, low, high)
    solved = _solve_min_cost(net)
    if solved is None:
        return None
    _, flow = solved
    out: dict[Group, dict[int, int]] = {}
    arc = 0
    for (reps, cur), _n in items:
        to = {}
        for b in reps:
            f = int(flow[arc])
            if f > 0:
                to[b] = f
            arc += 1
        out[(reps, cur)] = to
    assert arc == n_group_arcs
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
