"""Property tests of the pacing policies (schedule.decide): caps never exceeded, order respected,
every move submitted exactly once, batch boundaries honoured, caps changeable between decisions."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.errors import UsageError
from reassign_kit.model import TopicPartition
from reassign_kit.moves.schedule import (
    Caps,
    Item,
    assign_batches,
    decide,
    item_for,
    order_items,
    plan_batches,
)

BROKERS = list(range(6))


@st.composite
def items(draw, min_size=1, max_size=25):
    n = draw(st.integers(min_size, max_size))
    topics = draw(st.lists(st.sampled_from(["a", "b", "c", "zz"]), min_size=n, max_size=n))
    out, seen = [], set()
    for i, t in enumerate(topics):
        tp = TopicPartition(t, i)
        if tp in seen:
            continue
        seen.add(tp)
        brokers = frozenset(draw(st.sets(st.sampled_from(BROKERS), min_size=1, max_size=4)))
        out.append(
            Item(tp, brokers, draw(st.booleans()), draw(st.integers(0, 10**9)), draw(st.booleans()))
        )
    return out


caps_st = st.builds(
    Caps,
    batch_size=st.integers(0, 6),
    incremental=st.booleans(),
    max_moves_per_broker=st.none() | st.integers(1, 3),
    max_leader_moves=st.none() | st.integers(1, 3),
    cluster_max_reassignments=st.none() | st.integers(1, 8),
).filter(lambda c: not (c.incremental and c.batch_size == 0))


def caps_like(mode: str):
    """Any caps of the same pacing mode (a run cannot switch mode mid-way)."""
    return st.builds(
        Caps,
        batch_size=st.just(0) if mode == "legacy" else st.integers(1, 6),
        incremental=st.just(mode == "incremental"),
        max_moves_per_broker=st.none() | st.integers(1, 3),
        max_leader_moves=st.none() | st.integers(1, 3),
        cluster_max_reassignments=st.none() | st.integers(1, 8),
    )


def drive(its, caps, data, external=0, change_caps=False):
    """Run decisions to the end, completing a random subset of the moves in flight between
    decisions; check the invariants at every decision. Returns the submission order."""
    ordered = assign_batches(order_items(its, "topic-partition"), caps)
    index = {it.tp: k for k, it in enumerate(ordered)}
    by_tp = {it.tp: it for it in ordered}
    pending = list(ordered)
    inflight: list[Item] = []
    done: set[TopicPartition] = set()
    submitted: list[TopicPartition] = []
    for _ in range(10_000):
        if not pending and not inflight:
            break
        if change_caps:
            caps = data.draw(caps_like(caps.mode), label="caps")
        ext = data.draw(st.integers(0, external), label="external") if external else 0
        before_load = Counter(b for it in inflight for b in it.brokers)
        before_leaders = sum(it.moves_leader for it in inflight)
        d = decide(pending, inflight, caps, cluster_inflight=len(inflight) + ext)
        chosen = [by_tp[tp] for tp in d.submit]
        assert len(set(d.submit)) == len(d.submit)
        assert all(tp not in submitted for tp in d.submit), "a move submitted twice"
        # caps: a decision never pushes a count past its cap (or past where it already was)
        after = inflight + chosen
        load = Counter(b for it in after for b in it.brokers)
        if caps.max_moves_per_broker is not None:
            for b, n in load.items():
                assert n <= max(caps.max_moves_per_broker, before_load[b])
        if caps.max_leader_moves is not None:
            assert sum(it.moves_leader for it in after) <= max(
                caps.max_leader_moves, before_leaders
            )
        if caps.mode == "incremental":
            assert len(after) <= max(caps.batch_size, len(inflight))
        if caps.cluster_max_reassignments is not None and chosen:
            assert len(after) + ext <= caps.cluster_max_reassignments
        # batch boundaries: nothing of a later batch while an earlier one is unfinished
        if caps.mode == "batch":
            unfinished = [it.batch for it in pending + inflight]
            for it in chosen:
                assert it.batch == min(unfinished)
        # order: a later move goes first only past an earlier one a broker/leader cap blocked
        for it in chosen:
            for earlier in pending:
                if index[earlier.tp] < index[it.tp] and earlier.tp not in d.submit:
                    assert earlier.tp in d.blocked, (earlier.tp, it.tp, d)
                    assert "broker" in d.blocked[earlier.tp] or "leader" in d.blocked[earlier.tp]
        # no deadlock: with nothing in flight and room on the cluster, something goes
        if not inflight and pending and ext == 0:
            assert d.submit
        submitted += d.submit
        pending = [it for it in pending if it.tp not in d.submit]
        inflight = after
        if inflight:
            finishing = data.draw(st.sets(st.sampled_from([it.tp for it in inflight])), label="fin")
            if not finishing and not d.submit:
                finishing = {inflight[0].tp}
            done |= finishing
            inflight = [it for it in inflight if it.tp not in finishing]
    assert sorted(submitted) == sorted(it.tp for it in its), "every move exactly once"
    return submitted, ordered


@settings(max_examples=80, deadline=None)
@given(items(), caps_st, st.data())
def test_caps_order_exactly_once_batches(its, caps, data):
    drive(its, caps, data)


@settings(max_examples=50, deadline=None)
@given(items(), caps_st, st.data())
def test_caps_changed_between_decisions(its, caps, data):
    drive(its, caps, data, change_caps=True)


@settings(max_examples=80, deadline=None)
@given(items(), caps_st, st.data())
def test_cluster_cap_counts_other_runs(its, caps, data):
    drive(its, caps, data, external=3)


@settings(max_examples=100, deadline=None)
@given(items(), st.integers(1, 6), st.booleans(), st.data())
def test_only_count_caps_keep_strict_order(its, n, incremental, data):
    caps = Caps(n, incremental)
    submitted, ordered = drive(its, caps, data)
    assert submitted == [it.tp for it in ordered]


@settings(max_examples=100, deadline=None)
@given(
    items(),
    st.sampled_from(
        ["topic-partition", "largest-first", "smallest-first", "under-replicated-last"]
    ),
    st.randoms(),
)
def test_order_is_deterministic_whatever_the_input_order(its, strategy, rnd):
    shuffled = list(its)
    rnd.shuffle(shuffled)
    a = order_items(its, strategy)
    assert a == order_items(shuffled, strategy)
    if strategy == "topic-partition":
        assert [i.tp for i in a] == sorted(i.tp for i in its)
    if strategy == "largest-first":
        assert [i.size_bytes for i in a] == sorted((i.size_bytes for i in a), reverse=True)
    if strategy == "smallest-first":
        assert [i.size_bytes for i in a] == sorted(i.size_bytes for i in a)
    if strategy == "under-replicated-last":
        flags = [i.under_replicated for i in a]
        assert flags == sorted(flags)


def test_legacy_submits_everything_in_one_decision():
    its = [Item(TopicPartition("t", p), frozenset({p % 3})) for p in range(10)]
    d = decide(its, [], Caps())
    assert list(d.submit) == [i.tp for i in its]


def test_kip1335_example_batches_of_three():
    its = order_items(Item(TopicPartition("t", p)) for p in reversed(range(10)))
    batches = plan_batches(its, Caps(3))
    assert [[tp.partition for tp in b] for b in batches] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    numbered = assign_batches(its, Caps(3))
    # P3 (index 2) still running: batch 2 cannot start although P1 and P2 are done
    d = decide(numbered[3:], [numbered[2]], Caps(3))
    assert d.submit == () and "batch 0" in d.waiting_reason
    d = decide(numbered[3:], [], Caps(3))
    assert [tp.partition for tp in d.submit] == [3, 4, 5]


def test_incremental_refills_freed_slot():
    its = order_items(Item(TopicPartition("t", p)) for p in range(10))
    caps = Caps(3, incremental=True)
    d = decide(its, [], caps)
    assert [tp.partition for tp in d.submit] == [0, 1, 2]
    # P2 (index 1) finished first: P4 (index 3) goes while P1 and P3 still run
    d = decide(its[3:], [its[0], its[2]], caps)
    assert [tp.partition for tp in d.submit] == [3]


def test_per_broker_cap_lets_unrelated_moves_pass():
    a = Item(TopicPartition("t", 0), frozenset({1, 2}))
    b = Item(TopicPartition("t", 1), frozenset({1, 3}))
    c = Item(TopicPartition("t", 2), frozenset({4, 5}))
    d = decide([a, b, c], [], Caps(max_moves_per_broker=1))
    assert d.submit == (a.tp, c.tp)
    assert "broker 1" in d.blocked[b.tp]


def test_a_brokers_own_cap_under_the_global_one():
    """The adaptive pace's per-broker caps: broker 3's own cap of 1 holds there
    while the others keep --max-moves-per-broker; a broker cap never exceeds the global."""
    its = [Item(TopicPartition("t", p), frozenset({3, 10 + p})) for p in range(3)]
    its.append(Item(TopicPartition("t", 9), frozenset({1, 2})))
    caps = Caps(max_moves_per_broker=4, broker_caps=((3, 1),))
    d = decide(its, [], caps)
    assert d.submit == (its[0].tp, its[3].tp)
    assert d.blocked[its[1].tp] == "broker 3 at its cap of 1 moves"
    assert Caps(max_moves_per_broker=2, broker_caps=((3, 5),)).cap_of(3) == 2
    assert Caps(broker_caps=((3, 5),)).cap_of(3) == 5 and Caps().cap_of(3) is None


def test_leader_preference_for_steps():
    a = Item(TopicPartition("t", 0), frozenset({1}), moves_leader=False)
    b = Item(TopicPartition("t", 1), frozenset({2}), moves_leader=True)
    c = Item(TopicPartition("t", 2), frozenset({3}), moves_leader=True)
    d = decide([], [], Caps(max_leader_moves=1, prefer_leader_moves=True), ready=[a, b, c])
    assert d.submit == (b.tp, a.tp)


def test_item_for_counts_brokers_in_and_out_and_leader():
    it = item_for(TopicPartition("t", 0), (1, 2, 3), (2, 3, 4), leader=1)
    assert it.brokers == {1, 4} and it.moves_leader
    it = item_for(TopicPartition("t", 0), (1, 2, 3), (1, 3, 2))
    assert it.brokers == frozenset() and not it.moves_leader


@pytest.mark.parametrize(
    "caps, option",
    [
        (Caps(-1), "--reassignment-batch-size"),
        (Caps(0, incremental=True), "--incremental"),
        (Caps(2, max_moves_per_broker=0), "--max-moves-per-broker"),
        (Caps(2, max_leader_moves=-3), "--max-leader-moves"),
        (Caps(2, cluster_max_reassignments=0), "--cluster-max-reassignments"),
    ],
)
def test_bad_caps_name_the_option(caps, option):
    with pytest.raises(UsageError, match=option):
        caps.validate()


def test_bad_order_names_the_option():
    with pytest.raises(UsageError, match="--order"):
        order_items([], "random")
