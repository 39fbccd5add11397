"""The poll that turns a wave over, done once per wave where it was once per event: the
subscribers hear a wave's intents and submissions together after the last is journaled
(same order), the elections are handed only the completions, a move's first submission
moves it in the index once with the same two events, the journal takes the emit's fields as
they are, and a throttled-replica list without whitespace is read by a split alone."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import IllegalTransition
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import Journal, read_events
from reassign_kit.moves.schedule import Item
from reassign_kit.moves.table import MoveIndex, MoveState, MoveStatus
from reassign_kit.run.elections import Elections
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.throttles.configs import PartitionMove, entry_set, throttles_for

BROKERS, WAVE = 10, 40


def two_waves(tmp_path) -> Run:
    """Two waves of WAVE moves of 1 MB (each changing its preferred leader: elected)."""
    sim = SimCluster(BROKERS, bandwidth=2 * WAVE / BROKERS * MB / 5, tick=1.0)
    sim.add_topic("t", [[p % BROKERS, (p + 1) % BROKERS] for p in range(2 * WAVE)], 1 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % BROKERS for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    opts = ExecuteOptions(
        incremental=True, batch_size=WAVE, wait=True, throttle=50 * MB, poll_interval_ms=1000
    )
    return Run(sim, plan, opts, journal_path=tmp_path / "run.jsonl", clock=sim.now, sleep=sim.sleep)


def test_a_waves_submissions_are_heard_once_the_whole_wave_is_in_flight(tmp_path):
    """A subscriber hears each wave's first ``submitted`` when every move of that wave is in
    flight already (before, at once: with that move ready and none moving), and every event
    in the journal's order."""
    run = two_waves(tmp_path)
    heard: list[dict] = []
    moving_at_first: list[int] = []
    path = tmp_path / "run.jsonl"

    def listen(rec: dict) -> None:
        heard.append(rec)
        if rec["event"] == "submitted" and heard[-2]["event"] != "step_submitted":
            moving_at_first.append(run.status().moving)

    run.subscribe(listen)
    assert run.run().state == "done"
    events = read_events(path)
    assert [(e["event"], e.get("partition")) for e in heard] == [
        (e["event"], e.get("partition")) for e in events
    ]
    assert moving_at_first == [WAVE, WAVE], moving_at_first
    assert Counter(e["event"] for e in events)["election_queued"] == 2 * WAVE


def test_the_elections_are_handed_the_completions_alone(tmp_path, monkeypatch):
    """The elections hear what they act on (``completed``), not every event of a wave's
    poll; every move is still queued for its election and elected."""
    kinds: Counter = Counter()
    real = Elections.on_event

    def on_event(self, rec):
        kinds[rec["event"]] += 1
        return real(self, rec)

    monkeypatch.setattr(Elections, "on_event", on_event)
    run = two_waves(tmp_path)
    assert run.run().state == "done"
    assert set(kinds) == {"completed"} and kinds["completed"] == 2 * WAVE
    events = Counter(e["event"] for e in read_events(tmp_path / "run.jsonl"))
    assert events["election_queued"] == 2 * WAVE and events["leader_elected"] >= 1


def pending_move(i: int, journal: list) -> MoveState:
    tp = TopicPartition("t", i)
    ms = MoveState(
        Move(tp, (3, 4, 5)),
        Item(tp, frozenset({1, 3, 4, 5}), True, 1000 + i),
        emit=lambda event, **f: journal.append((event, f)),
    )
    ms.original = (1, 3)
    ms.steps = [(1, 3, 4, 5), (3, 4, 5)]
    return ms


@pytest.mark.parametrize("batch", [None, 2])
def test_a_first_submission_is_submit_then_submit_step_with_the_index_moved_once(batch):
    """``submit_first`` writes what ``submit`` and ``submit_step`` write, in that order, and
    leaves the move and the index as they leave them, with one move of the index."""
    a_events: list = []
    b_events: list = []
    a, b = pending_move(1, a_events), pending_move(1, b_events)
    ia, ib = MoveIndex(), MoveIndex()
    ia.add(a)
    ib.add(b)
    moves: list = []
    real = ib.moved
    ib.moved = lambda ms, before: (moves.append(before), real(ms, before))  # type: ignore[method-assign]
    a.submit(7.0, batch)
    a.submit_step(7.0, 1, (1, 3, 4, 5))
    b.submit_first(7.0, batch, 1, (1, 3, 4, 5))
    assert b_events == a_events and [e for e, _ in b_events] == ["submitted", "step_submitted"]
    assert b == a and b.status is MoveStatus.MOVING
    assert dict(ib.snapshot) == dict(ia.snapshot) and ib.submitted == ia.submitted == 1
    assert (ib.pending_copy, ib.pending_leaders) == (ia.pending_copy, ia.pending_leaders)
    assert moves == [MoveStatus.PENDING]


def test_a_first_submission_of_a_move_not_pending_is_refused_and_changes_nothing():
    events: list = []
    ms = pending_move(2, events)
    idx = MoveIndex()
    idx.add(ms)
    ms.submit(1.0, None)
    events.clear()
    before = (ms.status, ms.step, ms.submitted_at, dict(idx.snapshot))
    with pytest.raises(IllegalTransition, match="t-2: cannot submit a move that is ready"):
        ms.submit_first(2.0, None, 1, (1, 3, 4, 5))
    assert (ms.status, ms.step, ms.submitted_at, dict(idx.snapshot)) == before and not events


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["topic", "partition", "target", "message", "password", "a.b"]),
        st.one_of(st.integers(), st.text(max_size=12), st.lists(st.integers(0, 9), max_size=4)),
    )
)
def test_a_record_is_the_line_write_writes(tmp_path_factory, fields):
    """``Journal.record(event, fields)`` (the run's emit) writes the line, redaction and seal
    included, that ``write(event, **fields)`` writes, and returns the same event."""
    d = tmp_path_factory.mktemp("j")
    with Journal(d / "a.jsonl", "r1", clock=lambda: 5.5) as a:
        got_a = a.write("warning", **fields)
    with Journal(d / "b.jsonl", "r1", clock=lambda: 5.5) as b:
        got_b = b.record("warning", dict(fields))
    assert (d / "a.jsonl").read_bytes() == (d / "b.jsonl").read_bytes()
    assert got_a == got_b


def stripped(value: str | None) -> frozenset[str]:
    """What ``entry_set`` always returned: each entry stripped, the empty ones left out."""
    return frozenset(e.strip() for e in (value or "").split(",") if e.strip())


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.text(alphabet=" ,:0123456789\t\n\r\x0b\x0c\x1c\x85\xa0\u2028\u3000*"),
        st.lists(st.tuples(st.integers(0, 999), st.integers(0, 99))).map(
            lambda es: ",".join(f"{p}:{b}" for p, b in es)
        ),
    )
)
def test_a_list_read_by_a_split_is_the_list_read_entry_by_entry(value):
    assert entry_set(value) == stripped(value)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.tuples(st.sampled_from(["b", "a", "c.x"]), st.integers(0, 40)),
        st.tuples(*[st.frozensets(st.integers(0, 12), max_size=4)] * 2),
        max_size=30,
    )
)
def test_a_waves_throttled_lists_are_each_topics_sorted_entries(moves):
    """One walk over a wave's moves gives each topic's entries as the official tool writes
    them (sorted as strings, once each), topics in the order they first come, those with no
    entry left out, and every broker of a move."""
    tpm = {TopicPartition(t, p): PartitionMove(s, d) for (t, p), (s, d) in moves.items()}
    got = throttles_for(tpm)
    for lists, side in ((got.leader, 0), (got.follower, 1)):
        want = {}
        for (t, p), m in moves.items():
            want.setdefault(t, set()).update(f"{p}:{b}" for b in m[side])
        assert lists == {t: ",".join(sorted(es)) for t, es in want.items() if es}
        assert list(lists) == [t for t in want if want[t]]
    assert got.brokers == frozenset(b for s, d in moves.values() for b in s | d)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.sampled_from(list(MoveStatus))), max_size=40))
def test_a_held_run_of_transitions_publishes_the_counts_once_at_its_end(changes):
    """Inside ``MoveIndex.holding`` a reader sees the counts from before it (the same
    mapping, whole); at its end, the counts of the moves; nested, at the outer end."""
    idx = MoveIndex()
    moves = [pending_move(i, []) for i in range(8)]
    for ms in moves:
        idx.add(ms)
    before = idx.snapshot
    with idx.holding():
        with idx.holding():
            for i, status in changes:
                moves[i].restore(status)
        assert idx.snapshot is before
    truth = Counter(m.status.value for m in moves)
    assert dict(idx.snapshot) == {s.value: truth.get(s.value, 0) for s in MoveStatus}
    moves[0].restore(MoveStatus.FAILED)  # one by one again after it
    assert idx.snapshot["failed"] == sum(m.status is MoveStatus.FAILED for m in moves)
