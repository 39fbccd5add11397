"""The ETA simulates the first queued moves one by one and counts the rest (``flows_of``): how
many move a leader and the bytes their new replicas take in. The rest is the index's tally of
the pending moves (kept by the transitions) less those simulated, so a sample no longer walks
the whole queue (at 1,000,000 partitions, a second per sample); it equals the sum over the
queue beyond the first ``limit``, exactly, through submissions, completions, failures and a
resume's restore."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.eta.model import flows_of
from reassign_kit.model import Move, TopicPartition
from reassign_kit.moves.schedule import item_for
from reassign_kit.moves.table import MoveIndex, MoveState, MoveStatus


def by_hand(index: MoveIndex, limit: int) -> tuple[int, float]:
    """The queue beyond the first ``limit``, summed one move at a time."""
    rest, rest_bytes = 0, 0.0
    for ms in list(index.iter(MoveStatus.PENDING))[limit:]:
        rest += ms.item.moves_leader
        rest_bytes += ms.item.size_bytes * max(
            1, sum(b in ms.item.brokers for b in ms.move.replicas)
        )
    return rest, rest_bytes


moves = st.lists(
    st.tuples(
        st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True),  # current
        st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True),  # target
        st.integers(0, 2**40),  # size
    ),
    min_size=1,
    max_size=40,
)
steps = st.lists(st.tuples(st.integers(0, 39), st.sampled_from("sdfr")), max_size=60)


@settings(max_examples=80, deadline=None)
@given(moves=moves, steps=steps, limit=st.integers(0, 12))
def test_the_queue_beyond_the_simulated_moves_is_counted_exactly(moves, steps, limit):
    index = MoveIndex()
    states = []
    for p, (current, target, size) in enumerate(moves):
        tp = TopicPartition("t", p)
        ms = MoveState(Move(tp, tuple(target)), item_for(tp, current, target, None, size))
        ms.original = tuple(current)
        index.add(ms)
        states.append(ms)
    for k, what in steps:
        ms = states[k % len(states)]
        if what == "s" and ms.status is MoveStatus.PENDING:
            ms.submit(1.0, None)
        elif what == "d" and ms.status in (MoveStatus.PENDING, MoveStatus.READY):
            ms.complete(2.0, ms.move.replicas)
        elif what == "f" and not ms.status.final:
            ms.fail("lost")
        elif what == "r":  # a resume reads a status back: into the queue, or out of it
            ms.restore(
                MoveStatus.PENDING if ms.status is not MoveStatus.PENDING else MoveStatus.DONE
            )
        _, rest, rest_bytes = flows_of(index, {}, None, limit)
        assert (rest, rest_bytes) == by_hand(index, limit)


def test_the_queue_keeps_no_slots_of_the_moves_gone():
    """A dict keeps the slots of the keys taken out of it until it grows again, and iterating
    it walks them from the start: the queue only shrinks, so each poll's look at it walked
    past every move submitted so far. The index rebuilds a status's dict once many left it:
    the queue stays in plan order and no larger than a dict of what is left."""
    import random
    import sys

    index, states = MoveIndex(), []
    for p in range(10_000):
        tp = TopicPartition("t", p)
        ms = MoveState(Move(tp, (1,)), item_for(tp, (0,), (1,), None, 1))
        index.add(ms)
        states.append(ms)
    gone = set(random.Random(7).sample(range(10_000), 9_500))
    for p in sorted(gone):
        states[p].submit(1.0, None)
    left = [ms.tp.partition for ms in index.iter(MoveStatus.PENDING)]
    assert left == [p for p in range(10_000) if p not in gone]
    pending = index.by_status[MoveStatus.PENDING]
    assert sys.getsizeof(pending) <= 2 * sys.getsizeof(dict(pending))
    assert index.count(MoveStatus.READY) == 9_500
