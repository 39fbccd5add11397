"""KIP-435 step planner: the KIP's example exactly, edge cases, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.errors import InvalidPlanError, ReassignKitError, UsageError
from reassign_kit.model import TopicPartition
from reassign_kit.moves.steps import (
    Step,
    collect_batch,
    describe_steps,
    leader_moves,
    make_steps_for,
    next_step,
    plan_steps,
    steps_for,
)

TP = TopicPartition("t", 0)


def test_kip_example_exactly():
    steps = plan_steps((0, 1, 2, 3, 4), (5, 6, 7, 8, 9), parallel_replica_count=2, min_isr=2)
    assert steps == [
        (5, 0, 1, 2, 3, 4),
        (5, 6, 2, 3, 4),
        (5, 6, 7, 8, 4),
        (5, 6, 7, 8, 9),
    ]
    lines = describe_steps((0, 1, 2, 3, 4), steps)
    assert lines[2].endswith("-[0, 1] +[6]")
    assert lines[4].endswith("-[4] +[9]")


def test_no_change_is_no_step():
    assert plan_steps((1, 2, 3), (1, 2, 3), 1, 2) == []
    assert next_step((1, 2, 3), (1, 2, 3), 1) is None


def test_reorder_only_is_one_step():
    assert plan_steps((0, 1, 2), (2, 0, 1), 1, 2) == [(2, 0, 1)]


def test_rf3_to_three_new_brokers_one_at_a_time():
    steps = plan_steps((0, 1, 2), (3, 4, 5), 1, 2)
    assert steps == [(3, 0, 1, 2), (3, 1, 2), (3, 4, 2), (3, 4, 5)]


def test_existing_replica_becomes_leader_without_leader_step():
    assert plan_steps((0, 1, 2), (1, 3, 4), 1, 2) == [(1, 3, 2), (1, 3, 4)]


def test_min_isr_forces_more_than_r_in_first_step():
    # KIP: min.insync.replicas 3, one replica in sync: add two at once so producers continue
    steps = plan_steps((0, 1, 2), (3, 4, 5), 1, 3, isr=[0])
    assert steps[0] == (3, 4, 0, 1, 2)
    assert steps[-1] == (3, 4, 5)


def test_rf_decrease_and_increase():
    assert plan_steps((0, 1, 2, 3, 4), (0, 1, 2), 1, 2) == [(0, 1, 2, 4), (0, 1, 2)]
    assert plan_steps((0,), (1, 2, 3), 1, 3) == [(1, 2, 0), (1, 2, 3)]
    assert plan_steps((0, 1), (0, 1, 2, 3, 4), 1, 1) == [(0, 1, 2), (0, 1, 2, 3), (0, 1, 2, 3, 4)]


def test_out_of_sync_replicas_are_dropped_first():
    # 1 is not in sync: it leaves before the in-sync 0
    assert next_step((5, 0, 1, 2), (5, 6, 7), 1, 2, isr=[5, 0, 2]) == (5, 0, 2)


@pytest.mark.parametrize(
    "args, exc, words",
    [
        (((0, 1), (2, 3), 0, 1), UsageError, "--parallel-replica-count"),
        (((0, 1), (2, 3), 1, 0), UsageError, "min.insync.replicas"),
        (((0, 1), (), 1, 1), InvalidPlanError, "t-0"),
        (((0, 1), (2, 2), 1, 1), InvalidPlanError, "t-0"),
    ],
)
def test_bad_input_names_the_fault(args, exc, words):
    with pytest.raises(exc) as ei:
        plan_steps(*args, tp=TP)
    assert isinstance(ei.value, ReassignKitError)
    assert words in str(ei.value)


def test_leader_moves_and_step_fields():
    assert leader_moves((0, 1, 2), (5, 0, 1, 2))
    assert not leader_moves((5, 0, 1), (5, 6, 1))
    assert leader_moves((5, 0, 1), (5, 6, 1), leader=0)  # 5 preferred but 0 still leads
    s = Step(TP, (5, 0, 1, 2, 3, 4), (5, 6, 2, 3, 4), 2, 4, leader=0)
    assert s.adding == (6,) and s.removing == (0, 1) and s.moves_leader and not s.is_last
    assert s.to_json_obj()["replicas"] == [5, 6, 2, 3, 4]


def test_steps_for_numbers_against_the_original_plan():
    orig, tgt = (0, 1, 2, 3, 4), (5, 6, 7, 8, 9)
    s1 = steps_for(TP, orig, orig, tgt, 2, 2)
    assert (s1.index, s1.total, s1.target) == (1, 4, (5, 0, 1, 2, 3, 4))
    s3 = steps_for(TP, orig, (5, 6, 2, 3, 4), tgt, 2, 2)
    assert (s3.index, s3.total, s3.target) == (3, 4, (5, 6, 7, 8, 4))
    assert steps_for(TP, orig, tgt, tgt, 2, 2) is None
    # the cluster moved somewhere unplanned: re-planned from there
    odd = steps_for(TP, orig, (5, 6, 7, 2, 3), tgt, 2, 2)
    assert odd.target == (5, 6, 7, 8, 9) and odd.is_last


def test_collect_batch_leader_moves_first_up_to_cap():
    mk = lambda i, lead: Step(TopicPartition("t", i), (0, 1), (2, 1) if lead else (0, 2))  # noqa: E731
    cands = [mk(0, False), mk(1, True), mk(2, False), mk(3, True), mk(4, True)]
    got = collect_batch(cands, slots=3, leader_cap=2)
    assert [s.tp.partition for s in got] == [1, 3, 0]
    got = collect_batch(cands, slots=3, leader_cap=2, leaders_in_flight=2)
    assert [s.tp.partition for s in got] == [0, 2]  # cannot fill: no more non-leader moves
    assert [s.tp.partition for s in collect_batch(cands, 10)] == [1, 3, 4, 0, 2]
    assert collect_batch(cands, 0) == []


# ---------------------------------------------------------------- properties

brokers = st.integers(min_value=0, max_value=11)


@st.composite
def moves(draw):
    cur = draw(st.lists(brokers, min_size=1, max_size=6, unique=True))
    tgt = draw(st.lists(brokers, min_size=1, max_size=6, unique=True))
    r = draw(st.integers(min_value=1, max_value=4))
    m = draw(st.integers(min_value=1, max_value=4))
    return tuple(cur), tuple(tgt), r, m


@settings(max_examples=400, deadline=None)
@given(moves())
def test_properties(mv):
    cur, tgt, r, m = mv
    steps = plan_steps(cur, tgt, r, m)
    if cur == tgt:
        assert steps == []
        return
    assert steps[-1] == tgt  # ends at the target, in order
    floor_size = min(len(cur), len(tgt))
    need = min(m, len(tgt))
    prev = cur
    for i, s in enumerate(steps):
        assert len(set(s)) == len(s)
        assert len(s) >= floor_size  # RF (or the starting RF while it grows) or more
        # the ISR of a step only grows until it becomes the step's set: min ISR kept
        # whenever the move starts with enough replicas to satisfy it
        if len(cur) >= need:
            assert len(s) >= need
        added = [b for b in s if b not in prev]
        removed = [b for b in prev if b not in s]
        assert len(removed) <= r
        if len(cur) >= need:
            assert len(added) <= r
        else:  # only the first step may exceed R, to reach min ISR
            assert len(added) <= r or i == 0
        if prev[0] != tgt[0] and tgt[0] not in prev:  # new preferred leader comes first
            assert s[0] == tgt[0] and not removed
        prev = s
    assert len(steps) == len(set(steps))  # never revisits a set


@settings(max_examples=200, deadline=None)
@given(moves())
def test_resume_from_any_step_gives_the_same_rest(mv):
    cur, tgt, r, m = mv
    steps = plan_steps(cur, tgt, r, m)
    for i, s in enumerate(steps):
        assert plan_steps(s, tgt, r, m) == steps[i + 1 :]


def test_make_steps_for_uses_each_topics_min_isr_and_isr():
    from reassign_kit.model import Move, PartitionState

    hook = make_steps_for(1, {"a": 3})
    a, b = TopicPartition("a", 0), TopicPartition("b", 0)
    # topic a: min ISR 3 and only broker 0 in sync: the first step adds two at once
    got = hook(Move(a, (3, 4, 5)), PartitionState(a, (0, 1, 2), (0,), 0), (0, 1, 2))
    assert got[0] == (3, 4, 0, 1, 2) and got[-1] == (3, 4, 5)
    got = hook(Move(b, (3, 4, 5)), PartitionState(b, (0, 1, 2), (0, 1, 2), 0), (0, 1, 2))
    assert got == plan_steps((0, 1, 2), (3, 4, 5), 1, 1)
    assert make_steps_for(2, lambda t: 2)(Move(b, (0, 1)), PartitionState(b, (0, 1)), (0, 1)) == [
        (0, 1)
    ]
    with pytest.raises(UsageError):
        make_steps_for(0)
