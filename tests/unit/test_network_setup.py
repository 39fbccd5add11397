"""The network pass's set-up and bookkeeping at scale: the placement's one-walk set-up carries
the loads, counts, bytes and holdings the per-partition bookkeeping gives; the destinations kept
in order after each change are those a full sort gives; the pass's inputs split the movable
partitions from the excluded topics' background as ``Snapshot.select`` does; and the cycle
collector is back as it was after the pass, even when it fails."""

from __future__ import annotations

import gc
import heapq

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit import api
from reassign_kit.planner import network_plan
from reassign_kit.planner.network import Goals, broker_loads
from reassign_kit.planner.network_pass import Placement, Scorer, Shedding
from reassign_kit.planner.network_plan import Inputs, collector_paused, hottest
from reassign_kit.planner.network_report import HOTTEST
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.filter import TopicFilter
from reassign_kit.snapshot.load import LoadWindow, PartitionLoad
from reassign_kit.snapshot.snapshot import Snapshot


@st.composite
def cases(draw):
    n = draw(st.integers(3, 6))
    parts = draw(st.integers(1, 10))
    reps, loads, sizes = [], [], []
    for _ in range(parts):
        rf = draw(st.integers(0, min(3, n)))
        reps.append(list(draw(st.permutations(range(1, n + 1)))[:rf]))
        loads.append((float(draw(st.integers(0, 100))), float(draw(st.integers(0, 300)))))
        sizes.append(draw(st.integers(0, 1000)))
    background = [
        (list(draw(st.permutations(range(1, n + 1)))[: draw(st.integers(1, 3))]), (7.0, 3.0))
        for _ in range(draw(st.integers(0, 3)))
    ]
    changes = [
        (draw(st.integers(0, parts - 1)), draw(st.permutations(range(1, n + 1))))
        for _ in range(draw(st.integers(0, 6)))
    ]
    return n, reps, loads, sizes, background, changes


def _placement(n, reps, loads, sizes, background) -> Placement:
    brokers = list(range(1, n + 1))
    keys = [("t", i) for i in range(len(reps))]
    return Placement(
        reps={k: list(r) for k, r in zip(keys, reps, strict=True)},
        load=dict(zip(keys, loads, strict=True)),
        size=dict(zip(keys, sizes, strict=True)),
        background=background,
        background_bytes={b: 5 * sum(b in r for r, _ in background) for b in brokers},
        background_count={b: sum(b in r for r, _ in background) for b in brokers},
        racks={b: "ab"[b % 2] for b in brokers},
        placeable=frozenset(brokers),
        holders=frozenset(brokers),
        goals=Goals.of(brokers, None, ("network_in", "network_out", "leader_load"), 0.1),
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_placement_set_up_is_the_bookkeeping_of_its_partitions(case):
    n, reps, loads, sizes, background, _ = case
    p = _placement(n, reps, loads, sizes, background)
    pairs = [(r, p.load[k]) for k, r in p.reps.items()] + background
    assert p.cur == broker_loads(pairs, range(1, n + 1))  # the same sums, to the last bit
    for b in range(1, n + 1):
        held = [k for k, r in p.reps.items() if b in r]
        assert list(p.on.get(b, {})) == held  # in the order they came
        assert p.count.get(b, 0) == p.background_count[b] + len(held)
        assert p.bytes_on.get(b, 0) == p.background_bytes[b] + sum(p.size[k] for k in held)
    assert p.start == {}  # nothing changed yet
    first = {k: list(r) for k, r in p.reps.items()}
    for i, perm in case[5]:
        p.assign(("t", i), list(perm)[: len(p.reps[("t", i)])])
    assert p.start == {k: first[k] for k in p.start}  # as they began, the changed ones
    assert {("t", i) for i, _ in case[5]} == set(p.start)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_the_destinations_kept_after_each_change_are_a_full_sort(case):
    n, reps, loads, sizes, background, changes = case
    p = _placement(n, reps, loads, sizes, background)
    scorer = Scorer(p)
    for res, limit in scorer.goals():
        shed = Shedding(scorer, res, limit)
        shed.dests()
        for i, perm in changes:
            k = ("t", i)
            new = list(perm)[: len(p.reps[k])]
            scorer.touched = set(p.reps[k]) | set(new)  # as ``attempt`` leaves it
            p.assign(k, new)
            kept = list(shed.reorder())
            assert kept == Shedding(scorer, res, limit).dests()


def _snapshot() -> Snapshot:
    brokers = [BrokerEntry(b, "abc"[b % 3]) for b in range(1, 7)]
    parts = []
    for topic in ("keep", "fixed"):
        for i in range(30):
            reps = (1 + i % 6, 1 + (i + 1) % 6, 1 + (i + 2) % 6)
            hot = 4e6 if i % 5 == 0 else 1e4
            reps = (1, 2, 3) if hot > 1e6 and topic == "keep" else reps  # led by 1
            load = PartitionLoad(hot, hot / 1000, 2 * hot, 2, hot)
            leader = reps[i % 3] if topic == "fixed" else reps[0]
            parts.append(PartitionEntry(topic, i, reps, 1000 + i, leader, load=load))
    return Snapshot.of(
        brokers, [TopicEntry("keep", 3), TopicEntry("fixed", 3)], parts, LoadWindow("s", 0, 60)
    )


def test_the_inputs_split_the_selected_partitions_from_the_background():
    snap = _snapshot()
    selected, excluded = snap.select(TopicFilter(exclude="fixed"))
    moved = [("keep", 3, [1, 2, 3], [4, 2, 3], 1003)]
    got = Inputs.of(snap, moved, excluded, snap.racks())
    assert list(got.reps) == sorted((p.topic, p.partition) for p in selected.partitions)
    assert got.reps[("keep", 3)] == [4, 2, 3]
    fixed = [p for p in snap.partitions if p.topic == "fixed"]
    assert got.background == [
        (list(p.replicas), (p.load.produce_bytes_s, p.load.fetch_bytes_s)) for p in fixed
    ]
    for b in range(1, 7):
        on = [p for p in fixed if b in p.replicas]
        assert got.background_count.get(b, 0) == len(on)
        assert got.background_bytes.get(b, 0) == sum(p.size_bytes for p in on)
    led_first = [  # the loads now: the recorded leader leads
        ([p.leader, *(b for b in p.replicas if b != p.leader)], got.load[(p.topic, p.partition)])
        for p in snap.partitions
    ]
    assert got.before == broker_loads(led_first, snap.racks())


def test_an_excluded_topic_is_never_moved_and_its_load_still_counts():
    snap = _snapshot()
    result = api.plan(
        snap,
        balance="replicas,leaders,network",
        engine="local",
        topic_filter=TopicFilter(exclude="fixed"),
    )
    assert result.plan, "the hot partitions crowd brokers 1-3: something must move"
    assert all(m.tp.topic == "keep" for m in result.plan)
    brokers = result.report()["network_goal"]["brokers"]
    total_in = sum(p.load.produce_bytes_s * 3 for p in snap.partitions)
    assert sum(b["network_in_after"] for b in brokers) == pytest.approx(total_in)


@pytest.mark.parametrize("enabled", [True, False])
def test_the_cycle_collector_is_back_as_it_was_after_the_pass(monkeypatch, enabled):
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() == enabled

        def fails(*_a, **_k):
            assert not gc.isenabled()
            raise RuntimeError("a pass that fails")

        monkeypatch.setattr(network_plan, "_balanced", fails)
        with pytest.raises(RuntimeError):
            network_plan.balance_network(None, None, None)
        assert gc.isenabled() == enabled
    finally:
        gc.enable() if was else gc.disable()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), max_size=40))
def test_the_hottest_partitions_are_those_of_a_full_ranking(pairs):
    load = {(f"t{i % 3}", i): (float(p), float(c)) for i, (p, c) in enumerate(pairs)}
    full = heapq.nsmallest(  # every partition named and ranked (ties by name)
        HOTTEST,
        ((f"{t}-{part}", *load[(t, part)]) for t, part in load),
        key=lambda h: (-(h[1] + h[2]), h[0]),
    )
    assert hottest(load) == full
