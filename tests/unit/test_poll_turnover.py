"""The poll that turns a wave over (bench/bench_poll.py measures its cost; no timed assertion
here): a sample due at that poll is taken at the next one, the ETA's cadence otherwise as it
was; the index's published counts stay those of its moves through any sequence of
transitions; the journal's writer, which seals the bytes it encoded and rounds each reading
of the clock once, writes the lines it wrote before."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import JournalError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import Journal, read_events
from reassign_kit.moves.journal_rules import seal, seal_bytes, unseal
from reassign_kit.moves.schedule import Item
from reassign_kit.moves.table import MoveIndex, MoveState, MoveStatus, copy_bytes
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.run.track import WAVE_MOVES

BROKERS = 20


def wave_run(tmp_path, sample_interval: float) -> Run:
    """Two waves of WAVE_MOVES + 44 moves of 1 MB that complete together at one poll (20 s,
    40 s; the second wave goes at the first's poll) while 20 moves of 8 MB stay in flight
    (so that the wave's poll has moves to sample), and those end at 48 s."""
    n, big = WAVE_MOVES + 44, 20
    sim = SimCluster(BROKERS, bandwidth=2 * (n + big) / BROKERS * MB / 20, tick=1.0)
    sim.add_topic("big", [[p % BROKERS, (p + 1) % BROKERS] for p in range(big)], 8 * MB)
    sim.add_topic("t", [[p % BROKERS, (p + 1) % BROKERS] for p in range(2 * n)], 1 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % BROKERS for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    opts = ExecuteOptions(
        incremental=True,
        batch_size=n + big,
        wait=True,
        throttle=50 * MB,
        poll_interval_ms=1000,
        sample_interval=sample_interval,
    )
    return Run(sim, plan, opts, journal_path=tmp_path / "run.jsonl", clock=sim.now, sleep=sim.sleep)


def test_a_sample_due_at_the_poll_that_turns_a_wave_over_is_taken_at_the_next_poll(tmp_path):
    """Samples every 19 s from the first at 1 s: the second falls due at 20 s, the poll at
    which the first wave completes and the second is submitted. Before, that poll took the
    sample too (the ETA's simulations on top of the turnover: samples at 1, 20, 39 s); now
    the next poll does, and the cadence goes on from there (due at 40 s, a wave again:
    41 s)."""
    run = wave_run(tmp_path, sample_interval=19.0)
    heard: list[dict] = []
    run.subscribe(heard.append)
    assert run.run().state == "done"
    events = read_events(tmp_path / "run.jsonl")
    # the subscribers heard every event journaled, in its order
    assert [(e["event"], e.get("partition")) for e in heard] == [
        (e["event"], e.get("partition")) for e in events
    ]
    done_at = Counter(e["ts"] for e in events if e["event"] == "completed")
    waves = sorted(ts for ts, n in done_at.items() if n >= WAVE_MOVES)
    samples = [e["ts"] for e in events if e["event"] == "sample"]
    assert waves == [20.0, 40.0], done_at  # the shape this test needs
    assert samples == [1.0, 21.0, 41.0], samples


def test_a_sample_not_due_at_a_wave_keeps_its_time(tmp_path):
    """The default cadence (5 s, from 1 s) never falls on the waves (20 s, 40 s): every
    sample is where it was, every 5 s, until nothing is in flight."""
    run = wave_run(tmp_path, sample_interval=5.0)
    assert run.run().state == "done"
    samples = [e["ts"] for e in read_events(tmp_path / "run.jsonl") if e["event"] == "sample"]
    assert samples == [1.0 + 5 * k for k in range(10)], samples


def move_state(i: int) -> MoveState:
    tp = TopicPartition("t", i)
    return MoveState(
        Move(tp, (i % 5, (i + 1) % 5, 7)), Item(tp, frozenset({i % 5, 7, 9}), i % 2 == 0, 1000 + i)
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 7), st.sampled_from(list(MoveStatus))), max_size=60),
    st.integers(1, 8),
)
def test_the_published_counts_and_the_pending_tally_are_those_of_the_moves(changes, n):
    """Counts published by adding one to a status and taking one from another (not counted
    again at each change) equal a count of the moves after any sequence of changes; each
    published mapping is never changed afterwards; the pending tally is the sum over the
    pending moves, whatever entered and left the queue."""
    idx = MoveIndex()
    moves = [move_state(i) for i in range(n)]
    for ms in moves:
        idx.add(ms)
    seen: list[tuple[object, dict]] = []
    for i, status in changes:
        ms = moves[i % n]
        if status is not MoveStatus.PENDING:
            ms.submitted_at = ms.submitted_at if ms.submitted_at is not None else 0.0
        ms.restore(status)
        seen.append((idx.snapshot, dict(idx.snapshot)))
        truth = Counter(m.status.value for m in moves)
        assert dict(idx.snapshot) == {s.value: truth.get(s.value, 0) for s in MoveStatus}
        assert all(type(k) is str for k in idx.snapshot)
        pending = [m for m in moves if m.status is MoveStatus.PENDING]
        assert idx.pending_copy == sum(copy_bytes(m) for m in pending)
        assert idx.pending_leaders == sum(m.item.moves_leader for m in pending)
    assert all(dict(pub) == then for pub, then in seen)  # none changed once published


@settings(max_examples=300, deadline=None)
@given(st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=40))
def test_the_writers_seal_of_bytes_is_the_readers_seal(body):
    """The journal writes each line as the bytes it encoded once (sealed as bytes): the same
    line as the str seal the readers and the tests' journals use."""
    line = '{"k":' + json.dumps(body) + "}"
    assert seal_bytes(line.encode()) == seal(line).encode() + b"\n"
    assert unseal(seal(line)) == (line, True)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 2e9, allow_nan=False), min_size=1, max_size=12))
def test_each_event_carries_the_clock_rounded_whatever_its_readings(tmp_path_factory, readings):
    """The writer rounds a reading of the clock once and keeps it while the clock reads the
    same (a model clock between two polls): each event's ts is still round(reading, 6)."""
    d = tmp_path_factory.mktemp("j")
    clock = iter(readings + readings[::-1])
    with Journal(d / "j.jsonl", "r1", clock=lambda: next(clock)) as j:
        for _ in range(2 * len(readings)):
            j.write("warning", message="m")
    ts = [e["ts"] for e in read_events(d / "j.jsonl")]
    assert ts == [round(r, 6) for r in readings + readings[::-1]]


def test_a_batchs_lines_reach_the_file_at_its_end_or_at_a_commit_in_order(tmp_path):
    """Inside a batch (a poll) the lines wait in the writer; a commit inside it (before a
    change is sent) hands them over and syncs them; the batch's end hands over the rest; a
    line written outside a batch is in the file at once."""
    path = tmp_path / "j.jsonl"
    with Journal(path, "r1", clock=lambda: 1.0) as j:
        j.write("warning", message="outside")
        assert path.read_bytes().count(b"\n") == 1
        with j.batch():
            j.write("warning", message="a")
            j.write("warning", message="b")
            assert path.read_bytes().count(b"\n") == 1  # not handed over yet
            before = j.fsyncs
            j.commit()  # what undoes a change is on disk before the change is sent
            assert j.fsyncs == before + 1 and path.read_bytes().count(b"\n") == 3
            j.write("warning", message="c")
            assert path.read_bytes().count(b"\n") == 3
        assert path.read_bytes().count(b"\n") == 4
    assert [e["message"] for e in read_events(path)] == ["outside", "a", "b", "c"]


def test_a_batch_that_cannot_be_handed_over_fails_the_next_write_and_commit(tmp_path):
    """The disk fills during a poll: its lines cannot be written at its end; the next write
    and the next commit raise (a run then drains), and closing does not raise again."""
    j = Journal(tmp_path / "j.jsonl", "r1", clock=lambda: 1.0)
    with open("/dev/full", "ab") as full:
        real, j._f = j._f, full
        with j.batch():
            j.write("warning", message="lost")
        with pytest.raises(JournalError, match="No space left"):
            j.write("warning", message="after")
        with pytest.raises(JournalError, match="No space left"):
            j.commit()
        j.close()
    real.close()
    assert read_events(tmp_path / "j.jsonl") == []
