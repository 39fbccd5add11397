"""The disk ceiling's order and gate (moves/ceiling.py): for random plans, sizes, capacities
and growth while moving, every dir's usage stays under its ceiling at every step of a run
(copies growing part by part up to the partition's size plus its growth, completing in any
order, a few moves in flight) whenever an order exists (checked against an exhaustive
search), and the refusal names a dir when none does."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.errors import InvalidPlanError
from reassign_kit.model import TopicPartition
from reassign_kit.moves.ceiling import (
    DiskMove,
    Disks,
    end_state_problems,
    growth_during,
    hold_reason,
    order_within_ceiling,
)

DIRS = [(b, "/d") for b in range(4)]


@st.composite
def cases(draw):
    n_dirs = draw(st.integers(2, 4))
    dirs = DIRS[:n_dirs]
    total = {d: draw(st.integers(100, 400)) for d in dirs}
    used = {d: draw(st.integers(0, total[d])) for d in dirs}
    moves = []
    for i in range(draw(st.integers(1, 7))):
        adds = draw(st.lists(st.sampled_from(dirs), min_size=1, max_size=2, unique=True))
        frees = draw(
            st.lists(
                st.sampled_from([d for d in dirs if d not in adds] or dirs),
                max_size=2,
                unique=True,
            ).filter(lambda f, a=adds: not set(f) & set(a))
        )
        size = draw(st.integers(1, 120))
        growth = draw(st.integers(0, 40))  # written to the partition while it moves
        moves.append(DiskMove(TopicPartition("t", i), size, tuple(adds), tuple(frees), growth))
    # a move frees only bytes its source holds: the source dirs start with them
    for m in moves:
        for d in m.frees:
            used[d] = max(used[d], m.size_bytes)
            total[d] = max(total[d], used[d])
    return Disks.of(total, used, 0.85), moves


def feasible(disks: Disks, moves: list[DiskMove]) -> bool:
    """Exhaustive: some order, one move at a time, keeps every dir under its ceiling."""
    seen, frontier = {frozenset()}, [frozenset()]
    while frontier:
        done = frontier.pop()
        if len(done) == len(moves):
            return True
        used = dict(disks.used)
        for i in done:
            step(used, moves[i], start=True)
            step(used, moves[i], start=False)
        for i, m in enumerate(moves):
            nxt = done | {i}
            if i in done or nxt in seen:
                continue
            if all(used[d] + m.size_bytes + m.growth_bytes <= disks.limit[d] for d in m.adds):
                seen.add(nxt)
                frontier.append(nxt)
    return False


def step(used: dict, m: DiskMove, start: bool) -> None:
    """Start: the new copies at their full size, growth included; completion: the sources
    free the size they had (their own growth stays on them)."""
    for d in m.adds if start else m.frees:
        used[d] += m.size_bytes + m.growth_bytes if start else -m.size_bytes


@settings(max_examples=300, deadline=None)
@given(cases(), st.integers(1, 3), st.data())
def test_no_dir_goes_over_its_ceiling_at_any_step_when_an_order_exists(case, slots, data):
    disks, moves = case
    if not feasible(disks, moves):
        with pytest.raises(InvalidPlanError) as e:
            order_within_ceiling(moves, disks)
        assert "broker " in str(e.value) and "ceiling" in str(e.value)
        return
    order = order_within_ceiling(moves, disks)
    assert sorted(m.tp for m in order) == sorted(m.tp for m in moves)
    # the run: the gate admits in order (a held move holds the later ones), copies grow
    # part by part, any move in flight may complete once copied
    actual = dict(disks.used)  # the bytes on each dir at this instant
    pending, inflight = list(order), {}  # tp -> [move, bytes copied]
    held_seen = False
    while pending or inflight:
        if pending and len(inflight) < slots:
            remaining = {d: 0 for d in actual}
            for m, copied in inflight.values():
                for d in m.adds:
                    remaining[d] += m.size_bytes + m.growth_bytes - copied
            why = hold_reason(pending[0], Disks(dict(actual), disks.limit), remaining)
            if why is None:
                m = pending.pop(0)
                inflight[m.tp] = [m, 0]
                continue
            held_seen = True
            assert "waiting for space on broker " in why
            assert inflight, f"held with nothing in flight (would wait forever): {why}"
        tp = data.draw(st.sampled_from(sorted(inflight)))
        m, copied = inflight[tp]
        if copied < m.size_bytes + m.growth_bytes:  # the copy chases what is written meanwhile
            grow = data.draw(st.integers(1, m.size_bytes + m.growth_bytes - copied))
            inflight[tp][1] += grow
            for d in m.adds:
                actual[d] += grow
        else:
            del inflight[tp]
            for d in m.frees:
                actual[d] -= m.size_bytes
        over = {d: u for d, u in actual.items() if u > max(disks.limit[d], disks.used[d])}
        assert not over, f"over the ceiling: {over}"
    assert held_seen or not pending


def test_the_file_order_is_kept_when_it_fits_and_changed_when_it_does_not():
    a, b = (1, "/d"), (2, "/d")
    disks = Disks.of({a: 100, b: 100}, {a: 60, b: 20}, 0.85)
    into_a = DiskMove(TopicPartition("t", 0), 20, (a,), (b,))
    out_of_a = DiskMove(TopicPartition("t", 1), 20, (b,), (a,))
    assert order_within_ceiling([out_of_a, into_a], disks) == [out_of_a, into_a]
    # 60 + 20 + 20 (the second copy while the source still holds it) = 100 > 85
    second = DiskMove(TopicPartition("t", 2), 20, (a,), (b,))
    order = order_within_ceiling([into_a, second, out_of_a], disks)
    assert order.index(out_of_a) < order.index(second)


def test_an_end_state_over_the_ceiling_names_the_dir_and_the_bytes():
    a, b = (3, "/data-1"), (2, "/d")
    disks = Disks.of({a: 1_000_000, b: 1_000_000}, {a: 800_000, b: 100_000}, 0.85)
    probs = end_state_problems([DiskMove(TopicPartition("t", 0), 100_000, (a,), (b,))], disks)
    assert probs == [
        "broker 3 /data-1: 900.0 kB after the plan, above its ceiling of 850.0 kB by 50.0 kB"
    ]
    with pytest.raises(InvalidPlanError, match="broker 3 /data-1"):
        order_within_ceiling([DiskMove(TopicPartition("t", 0), 100_000, (a,), (b,))], disks)


def test_the_gate_counts_what_the_moves_in_flight_will_still_write():
    d = (3, "/data-1")
    disks = Disks.of({d: 100}, {d: 50}, 0.85)  # 35 bytes below the ceiling
    m = DiskMove(TopicPartition("t", 1), 20, (d,), ())
    assert hold_reason(m, disks) is None
    # a move in flight into the same dir will still write 20: 50 + 20 + 20 > 85
    why = hold_reason(m, disks, {d: 20})
    assert why == (
        "waiting for space on broker 3 /data-1 (t-1 needs 20 B, 15 B free below the ceiling "
        "of 85 B)"
    )


def test_growth_while_moving_changes_the_order_and_is_said_in_the_hold():
    a, b = (1, "/d"), (2, "/d")
    disks = Disks.of({a: 100, b: 100}, {a: 50, b: 20}, 0.85)  # 35 below a's ceiling
    into_a = DiskMove(TopicPartition("t", 0), 30, (a,), (b,), growth_bytes=10)
    out_of_a = DiskMove(TopicPartition("t", 1), 20, (b,), (a,))
    # at rest 50 + 30 fits; with the 10 written meanwhile it does not: out of a first
    assert order_within_ceiling([into_a, out_of_a], disks) == [out_of_a, into_a]
    assert hold_reason(into_a, disks) == (
        "waiting for space on broker 1 /d (t-0 needs 30 B + 10 B growth while it moves, 35 B "
        "free below the ceiling of 85 B)"
    )
    without = DiskMove(TopicPartition("t", 0), 30, (a,), (b,))
    assert hold_reason(without, disks) is None


def test_growth_during_a_move_is_the_rate_over_the_copy_time_bounded():
    mb = 1_000_000
    assert growth_during(100 * mb, None, 10 * mb) == 0
    assert growth_during(100 * mb, -5.0, 10 * mb) == 0  # retention deletes faster: none
    # 100 MB at 10 MB/s chasing 1 MB/s: 100 / 9 s, 1 MB/s of it written meanwhile
    assert growth_during(100 * mb, 1 * mb, 10 * mb) == int(1 * mb * 100 / 9)
    # written as fast as it copies: never catches up, counted over the bound
    assert growth_during(100 * mb, 10 * mb, 10 * mb) == int(10 * mb * 3600)
