"""The move state machine (moves/table.py): random sequences of transitions asked of a few
moves. Only the table's transitions happen, each writes exactly one journal event (through a
real Journal file), a refused one writes nothing and changes nothing, and the journal read
back replays to the statuses the moves ended in."""

from __future__ import annotations

import pathlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.errors import IllegalTransition
from reassign_kit.model import Move, TopicPartition
from reassign_kit.moves import table as mv
from reassign_kit.moves.journal import Journal, read_events
from reassign_kit.moves.schedule import item_for
from reassign_kit.moves.table import MoveState, MoveStatus, replay

TPS = [TopicPartition("t", p) for p in range(3)]


def _ask(ms: MoveState, name: str, now: float) -> None:
    """Call transition ``name`` with plausible arguments."""
    target = tuple(ms.move.replicas)
    if name == "submit":
        ms.original = (0, 1)
        ms.steps = [(0, 1, 2), target]
        ms.submit(now, batch=None)
    elif name == "submit_step":
        ms.submit_step(now, min(ms.step + 1, max(1, len(ms.steps))), target)
    elif name == "complete_step":
        ms.complete_step(target)
    elif name == "complete":
        ms.complete(now, target)
    elif name == "adopt":
        ms.adopt(now, target, [target], (0, 1))
    elif name == "roll_back":
        ms.roll_back("stop", (0, 1, 2))
    elif name == "cancel":
        ms.cancel("stop", replicas=(0, 1))
    elif name == "fail":
        ms.fail("partition no longer exists")
    elif name == "reject":
        ms.reject("NOT_CONTROLLER", target, max(1, ms.step))
    else:  # pragma: no cover - the strategy draws from TRANSITIONS
        raise AssertionError(name)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, len(TPS) - 1), st.sampled_from(sorted(mv.TRANSITIONS))),
        max_size=40,
    )
)
def test_random_transitions_follow_the_table_and_replay(tmp_path_factory, asked):
    path = tmp_path_factory.mktemp("moves") / "journal.jsonl"
    clock = iter(range(10_000)).__next__
    written: list[dict] = []
    with Journal(str(path), "run-1", lambda: float(clock())) as j:

        def emit(event: str, **fields):
            rec = j.write(event, **fields)
            written.append(rec)
            return rec

        states = {
            tp: MoveState(Move(tp, (2, 3)), item_for(tp, (0, 1), (2, 3)), emit=emit) for tp in TPS
        }
        for i, (k, name) in enumerate(asked):
            ms = states[TPS[k]]
            before, n = ms.status, len(written)
            t = mv.TRANSITIONS[name]
            if before in t.sources:
                _ask(ms, name, float(i))
                assert ms.status == t.target
                assert len(written) == n + 1  # exactly one event per transition
                assert written[-1]["event"] == t.event
                assert (written[-1]["topic"], written[-1]["partition"]) == tuple(ms.tp)
            else:
                with pytest.raises(IllegalTransition):
                    _ask(ms, name, float(i))
                assert ms.status == before and len(written) == n  # refused: nothing changes
    journaled = read_events(str(path))
    assert [e["event"] for e in journaled] == [e["event"] for e in written]
    replayed = replay(journaled)
    assert {tp: replayed.get(tp, MoveStatus.PENDING) for tp in TPS} == {
        tp: ms.status for tp, ms in states.items()
    }


def test_final_statuses_have_no_way_out():
    for status in MoveStatus:
        outs = [n for n, t in mv.TRANSITIONS.items() if status in t.sources]
        assert (outs == []) == status.final, (status, outs)


def test_every_status_is_reachable_and_a_cancel_ends_only_at_the_original():
    """Cancel means rollback: a move under way (a step in flight or between steps) reaches
    CANCELLED directly (already at its original) or through ROLLING_BACK; a pending move is
    never cancelled (it was never touched), a rolling-back one never completes."""
    reach, todo = {MoveStatus.PENDING}, [MoveStatus.PENDING]
    while todo:
        s = todo.pop()
        for t in mv.TRANSITIONS.values():
            if s in t.sources and t.target not in reach:
                reach.add(t.target)
                todo.append(t.target)
    assert reach == set(MoveStatus)
    assert mv.TRANSITIONS["roll_back"].sources == {MoveStatus.READY, MoveStatus.MOVING}
    assert mv.TRANSITIONS["cancel"].sources == {
        MoveStatus.READY,
        MoveStatus.MOVING,
        MoveStatus.ROLLING_BACK,
    }
    assert MoveStatus.ROLLING_BACK not in mv.TRANSITIONS["complete"].sources
    assert not MoveStatus.ROLLING_BACK.final


def test_a_rollback_replays_through_the_table():
    tp = {"topic": "t", "partition": 0}
    events = [
        {"event": "submitted", **tp},
        {"event": "step_submitted", **tp},
        {"event": "step_completed", **tp},
        {"event": "rolling_back", **tp, "replicas": [2, 0, 1], "original": [0, 1]},
        {"event": "cancelled", **tp, "replicas": [0, 1]},
    ]
    assert replay(events[:4])[TopicPartition("t", 0)] == MoveStatus.ROLLING_BACK
    assert replay(events)[TopicPartition("t", 0)] == MoveStatus.CANCELLED
    with pytest.raises(IllegalTransition):  # pending: nothing to roll back
        replay([{"event": "rolling_back", **tp}])


def test_a_failed_cancel_error_is_not_a_rejection():
    """``error`` events name a move in two cases; only the one with a target changes it."""
    cancel_failed = {"event": "error", "topic": "t", "partition": 0, "message": "cancel failed"}
    assert mv.transition_of(cancel_failed) is None
    assert mv.transition_of({**cancel_failed, "target": [1, 2]}) == "reject"


def test_move_events_are_written_only_by_the_state_machine():
    """No engine module writes a move's transition event itself (``completed`` in one place)."""
    events = "|".join(sorted({t.event for t in mv.TRANSITIONS.values()} - {"error"}))
    pat = re.compile(rf"""_emit\(\s*["']({events})["']""")
    engine = pathlib.Path(mv.__file__).parent
    offenders = [p.name for p in engine.glob("*.py") if pat.search(p.read_text())]
    assert offenders == []


def test_a_real_runs_journal_replays_to_its_statuses(tmp_path):
    """A stepped run on the simulator, stopped with a cancel mid-way: the journal replays to
    the statuses the Run reports."""
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.model import Plan
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(6)], 2 * MB)
    sim.stall(TopicPartition("a", 5))
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    opts = ExecuteOptions(
        batch_size=2,
        incremental=True,
        parallel_replica_count=1,
        throttle=MB,
        run_deadline=30,
        on_deadline="cancel",
    )
    run = Run(sim, plan, opts, tmp_path / "run.jsonl", clock=sim.now, sleep=sim.sleep)
    run.run()
    rows = {TopicPartition(r["topic"], r["partition"]): r["status"] for r in run.status().rows}
    replayed = replay(read_events(str(tmp_path / "run.jsonl")))
    assert {tp: replayed.get(tp, MoveStatus.PENDING) for tp in rows} == rows
    assert set(rows.values()) >= {"done", "cancelled"}
