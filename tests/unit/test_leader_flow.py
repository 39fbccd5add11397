"""The flow-based preferred-leader assignment against a brute-force optimum, and
the compiled solver (OR-Tools) against networkx's on the same networks."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit.planner.in_process import plan_in_process
from reassign_kit.planner.leader_flow import (
    _lower_ok,
    _min_cost,
    _solve_min_cost,
    _upper_ok,
    balance_leaders,
    leader_network,
)
from reassign_kit.planner.params import PlanParams
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot


@st.composite
def small_cluster(draw):
    """A few partitions with replica lists over a few brokers (some brokers may hold nothing,
    RF 1 partitions pin their leader: the cases where spread <= 1 is out of reach)."""
    n_brokers = draw(st.integers(1, 5))
    brokers = list(range(1, n_brokers + 1))
    n_parts = draw(st.integers(0, 7))
    parts = []
    for _ in range(n_parts):
        rf = draw(st.integers(1, min(3, n_brokers)))
        reps = draw(st.permutations(brokers).map(lambda p, rf=rf: tuple(p[:rf])))
        parts.append(reps)
    return brokers, parts


def _groups(parts):
    out = {}
    for reps in parts:
        k = (tuple(sorted(reps)), reps[0])
        out[k] = out.get(k, 0) + 1
    return out


def _brute(brokers, parts):
    """(spread, sum of squares, changes) of the best assignment, lexicographically."""
    best = None
    for choice in itertools.product(*[sorted(set(r)) for r in parts]):
        counts = {b: 0 for b in brokers}
        for b in choice:
            counts[b] += 1
        vals = list(counts.values())
        changes = sum(1 for b, r in zip(choice, parts, strict=True) if b != r[0])
        key = (max(vals) - min(vals), sum(v * v for v in vals), changes)
        best = key if best is None or key < best else best
    return best


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_cluster())
def test_flow_matches_brute_force_optimum(cluster):
    brokers, parts = cluster
    result = balance_leaders(_groups(parts), brokers)
    counts = result.counts
    # every partition led by one of its own replicas, the group sizes kept
    for (reps, cur), to in result.assignment.items():
        assert set(to) <= set(reps)
        assert sum(to.values()) == _groups(parts)[(reps, cur)]
    assert sum(counts.values()) == len(parts)
    vals = [counts[b] for b in brokers]
    spread = max(vals) - min(vals)
    assert spread == result.spread
    brute = _brute(brokers, parts)
    # the best spread, the most balanced brokers in between, then the fewest changes
    assert (spread, sum(v * v for v in vals), result.changes) == brute
    if result.spread > result.ideal_spread:
        assert result.reasons  # the report says why
    else:
        assert result.reasons == []


def test_spread_one_reached_by_reordering_where_the_greedy_stopped():
    # six partitions on three brokers, each broker in four sets: spread 0 is reachable
    parts = [(1, 2), (1, 2), (1, 3), (1, 3), (2, 3), (2, 3)]
    result = balance_leaders(_groups(parts), [1, 2, 3])
    assert result.counts == {1: 2, 2: 2, 3: 2}
    assert result.changes == 2


def test_unreachable_balance_is_explained():
    # broker 1 alone holds four RF-1 partitions; broker 3 holds nothing
    parts = [(1,)] * 4 + [(1, 2)] * 2
    result = balance_leaders(_groups(parts), [1, 2, 3])
    assert (result.spread, result.ideal_spread) == (4, 0)
    assert result.counts == {1: 4, 2: 2, 3: 0}
    assert any("broker 3 holds replicas of only 0 partitions" in r for r in result.reasons), (
        result.reasons
    )
    assert any("broker 1 holds every replica of 4" in r for r in result.reasons), result.reasons


@st.composite
def small_snapshot(draw):
    brokers, parts = draw(small_cluster())
    remove = draw(st.sampled_from([(), (brokers[-1],)] if len(brokers) > 3 else [()]))
    entries = tuple(PartitionEntry("t", i, r, 100 * (i + 1)) for i, r in enumerate(parts))
    snap = Snapshot(tuple(BrokerEntry(b, None) for b in brokers), (TopicEntry("t", 1),), entries)
    return snap, remove


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_snapshot())
def test_planner_leader_spread_is_the_optimum_and_sets_unchanged(case):
    snap, remove = case
    for balance in (("leaders",), ("replicas", "leaders")):
        params = PlanParams(remove_brokers=remove, balance=balance, chunks=3)
        if not remove and balance == ("leaders",):
            result = plan_in_process(snap, params)
            # leaders only: replica sets unchanged, nothing copied
            for m in result.plan:
                old = next(p.replicas for p in snap.partitions if p.tp == m.tp)
                assert sorted(m.replicas) == sorted(old)
            assert result.moved_replicas == 0
        result = plan_in_process(snap, params)
        final = {p.tp: p.replicas for p in snap.partitions}
        final.update({m.tp: m.replicas for m in result.plan})
        allowed = [b.id for b in snap.brokers if b.id not in remove]
        leads = {b: 0 for b in allowed}
        for reps in final.values():
            leads[reps[0]] += 1
        spread = max(leads.values()) - min(leads.values()) if leads else 0
        brute = _brute(allowed, list(final.values()))
        assert spread == brute[0]
        rep = result.report()
        assert rep["balance"]["leaders"]["after"]["spread"] == spread
        assert rep["leader_balance"]["spread"] == spread


# -- the compiled solver against networkx's network simplex -----------------------------------
@st.composite
def flow_instance(draw):
    """Random groups over a few brokers and bounds around the even spread (some infeasible)."""
    n_brokers = draw(st.integers(1, 6))
    brokers = list(range(1, n_brokers + 1))
    groups: dict = {}
    for _ in range(draw(st.integers(0, 10))):
        rf = draw(st.integers(1, min(3, n_brokers)))
        reps = tuple(sorted(draw(st.permutations(brokers))[:rf]))
        cur = draw(st.sampled_from([*reps, 99]))  # 99: the old leader left the set
        groups[(reps, cur)] = groups.get((reps, cur), 0) + draw(st.integers(1, 40))
    total = sum(groups.values())
    low = draw(st.integers(0, total // n_brokers))
    high = draw(st.integers(-(-total // n_brokers), max(total, 1)))
    return groups, brokers, low, max(low, high)


def _networkx_cost(net):
    """The same network solved by networkx (pure Python): optimal cost, or None if infeasible."""
    import networkx as nx

    g = nx.MultiDiGraph()
    for i, s in enumerate(net.supply):
        g.add_node(i, demand=-s)
    for u, v, c, w in zip(net.tail, net.head, net.capacity, net.cost, strict=True):
        g.add_edge(u, v, capacity=c, weight=w)
    try:
        cost, _ = nx.network_simplex(g)
    except nx.NetworkXUnfeasible:
        return None
    return cost


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flow_instance())
def test_compiled_min_cost_flow_has_networkx_optimum(inst):
    """OR-Tools' min-cost flow reaches the optimum networkx's network simplex finds on the leader
    network (same feasibility, same cost), and its flow is a valid one of that cost."""
    groups, brokers, low, high = inst
    net, items, n_group_arcs = leader_network(groups, brokers, low, high)
    ours = _solve_min_cost(net)
    ref = _networkx_cost(net)
    assert (ours is None) == (ref is None)
    if ours is None:
        return
    cost, flow = ours
    assert cost == ref
    assert sum(int(f) * c for f, c in zip(flow, net.cost, strict=True)) == cost
    balance = [0] * net.nodes
    for u, v, f, c in zip(net.tail, net.head, flow, net.capacity, strict=True):
        assert 0 <= f <= c
        balance[u] += int(f)
        balance[v] -= int(f)
    assert balance == list(net.supply)
    # and the assignment read back from it keeps every group whole on its own replicas
    assignment = _min_cost(groups, brokers, low, high)
    for (reps, cur), n in items:
        assert set(assignment[(reps, cur)]) <= set(reps)
        assert sum(assignment[(reps, cur)].values()) == n
    assert n_group_arcs == sum(len(r) for (r, _), _ in items)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flow_instance(), st.integers(0, 50))
def test_compiled_max_flow_checks_match_networkx(inst, bound):
    """The bound checks (max flow + minimum cut) agree with networkx's minimum cut."""
    import networkx as nx

    groups, brokers, _, _ = inst
    total = sum(groups.values())
    up = nx.DiGraph()
    low = nx.DiGraph()
    up.add_nodes_from(["s", "t"])
    low.add_nodes_from(["s", "t"])
    sets: dict = {}
    for (reps, _), n in groups.items():
        sets[reps] = sets.get(reps, 0) + n
    for reps, n in sets.items():
        up.add_edge("s", ("g", reps), capacity=n)
        low.add_edge(("g", reps), "t", capacity=n)
        for b in reps:
            up.add_edge(("g", reps), ("b", b))
            low.add_edge(("b", b), ("g", reps))
    for b in brokers:
        up.add_edge(("b", b), "t", capacity=bound)
        low.add_edge("s", ("b", b), capacity=bound)
    ok, cut = _upper_ok(groups, brokers, bound, want_cut=True)
    assert ok == (total == 0 or nx.maximum_flow_value(up, "s", "t") >= total)
    if not ok:  # the cut's brokers hold every replica of more partitions than they may lead
        inside = sum(n for r, n in sets.items() if set(r) <= set(cut))
        assert inside > bound * len(cut)
    need = bound * len(brokers)
    ok, cut = _lower_ok(groups, brokers, bound, want_cut=True)
    assert ok == (need == 0 or nx.maximum_flow_value(low, "s", "t") >= need)
    if not ok:  # the cut's brokers hold replicas of fewer partitions than they must lead
        touch = sum(n for r, n in sets.items() if set(r) & set(cut))
        assert touch < bound * len(cut)
