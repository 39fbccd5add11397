"""A cancel trusts nothing it reads back: the originals a journal or a rollback file records
are checked against the cluster before anything is sent, a state directory another user can
write is refused, a record planted under another plan's key is refused, an explicit rollback
file is merged with the run's record (never replaces it), and "order included" is said only
for originals whose order a record holds. On the simulator."""

from __future__ import annotations

import json
import os

import pytest

import reassign_kit
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import JournalError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal_rules import seal, unseal
from reassign_kit.operations import cancel as cancel_mod
from reassign_kit.run.home import StateRecordError
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TP = TopicPartition
A0, A1 = TP("a", 0), TP("a", 1)
ORIGINAL = {A0: (0, 1), A1: (1, 0)}
TARGET = {A0: (2, 3), A1: (3, 2)}


def cluster() -> SimCluster:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [list(ORIGINAL[A0]), list(ORIGINAL[A1])], 8 * MB)
    return sim


def plan(*tps: TopicPartition) -> Plan:
    return Plan.of(Move(tp, TARGET[tp]) for tp in tps)


def stopped_in_flight(sim: SimCluster, p: Plan, journal) -> None:
    """A paced run of ``p`` stopped (drained) right after its submissions: every move of it
    still in flight, its journal holding the write-ahead originals."""
    run = Run(sim, p, ExecuteOptions(throttle=MB, wait=True), journal, clock=sim.now,
              sleep=sim.sleep)  # fmt: skip
    n = {"submitted": 0}

    def on(e: dict) -> None:
        if e["event"] == "submitted":
            n["submitted"] += 1
            if n["submitted"] == len(p.moves):
                run.stop()

    run.subscribe(on)
    run.run()
    assert set(sim.list_reassignments()) == {m.tp for m in p}


def edit_journal(path, fn) -> None:
    """Each event edited and sealed again (as an editor who knows the format would: the
    original itself must then be what the cancel refuses)."""
    lines = [json.loads(unseal(x)[0]) for x in open(path, encoding="utf-8")]
    with open(path, "w", encoding="utf-8") as f:
        for e in lines:
            f.write(seal(json.dumps(fn(e), separators=(",", ":"))) + "\n")


def test_a_journal_whose_original_was_edited_is_refused_and_nothing_is_sent(tmp_path):
    sim = cluster()
    journal = tmp_path / "run.jsonl"
    stopped_in_flight(sim, plan(A0), journal)

    def edit(e: dict) -> dict:  # [0, 1] -> [0, 2]: broker 2 never held the partition first
        for key in ("original", "current"):
            if e.get("topic") == "a" and e.get(key) == [0, 1]:
                e[key] = [0, 2]
        return e

    edit_journal(journal, edit)
    before = dict(sim.calls)
    with pytest.raises(JournalError, match=r"a-0: recorded original \[0,2\]"):
        cancel_mod.cancel(sim, journal=str(journal), timeout_s=30)
    assert sim.calls.get("alter_reassignments", 0) == before.get("alter_reassignments", 0)
    assert A0 in sim.list_reassignments()  # untouched: still the run's move in flight


def test_the_same_journal_unedited_cancels_back_to_the_recorded_order(tmp_path):
    sim = cluster()
    journal = tmp_path / "run.jsonl"
    stopped_in_flight(sim, plan(A0, A1), journal)
    res = cancel_mod.cancel(sim, journal=str(journal), timeout_s=60)
    assert res.exit_code == 0 and sorted(res.cancelled) == [A0, A1]
    assert res.order_recorded == {A0, A1}
    assert sim.assignment()[A1] == (1, 0)
    assert any("as recorded" in line for line in res.lines())


def test_without_a_record_the_order_is_said_unknown(tmp_path):
    sim = cluster()
    stopped_in_flight(sim, plan(A0), tmp_path / "run.jsonl")
    res = cancel_mod.cancel(sim, all=True, timeout_s=60)
    assert res.cancelled == [A0] and res.order_recorded == set()
    text = "\n".join(res.lines())
    assert "order unknown" in text and "order and preferred leader included" not in text


def legacy_run(sim: SimCluster, p: Plan, state_dir) -> None:
    res = reassign_kit.execute(sim, p, throttle=MB, state_dir=str(state_dir))
    assert res.exit_code == 0 and set(sim.list_reassignments()) == {m.tp for m in p}


def test_a_state_dir_others_can_write_is_refused_and_nothing_is_sent(tmp_path):
    sim = cluster()
    shared = tmp_path / "shared"
    shared.mkdir()
    legacy_run(sim, plan(A0), shared)
    os.chmod(shared, 0o1777)
    before = dict(sim.calls)
    with pytest.raises(StateRecordError, match="writable by others"):
        reassign_kit.cancel(sim, plan(A0), state_dir=str(shared), timeout_s=30)
    assert sim.calls.get("alter_reassignments", 0) == before.get("alter_reassignments", 0)


def test_a_record_planted_under_another_plans_key_is_refused(tmp_path):
    sim = cluster()
    state = tmp_path / "state"
    legacy_run(sim, plan(A1), state)  # another plan's run...
    cluster_dir = next(p for p in state.iterdir() if p.is_dir())
    (other_key,) = [p for p in cluster_dir.iterdir() if p.is_dir()]
    from reassign_kit.run.home import plan_hash

    target_key = cluster_dir / plan_hash(plan(A0))
    target_key.mkdir()
    run_dir = next(p for p in other_key.iterdir() if p.is_dir())
    os.rename(run_dir, target_key / run_dir.name)  # ...moved under this plan's key
    with pytest.raises(StateRecordError, match="not this plan"):
        reassign_kit.cancel(sim, plan(A0), state_dir=str(state), timeout_s=30)


def test_a_partial_rollback_file_is_merged_with_the_runs_record(tmp_path):
    sim = cluster()
    state = tmp_path / "state"
    legacy_run(sim, plan(A0, A1), state)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "a", "partition": 0, "replicas": [0, 1]}]}))  # fmt: skip
    res = reassign_kit.cancel(
        sim, plan(A0, A1), rollback_file=str(partial), state_dir=str(state), timeout_s=60
    )
    assert res.exit_code == 0 and sorted(res.cancelled) == [A0, A1]
    assert res.order_recorded == {A0, A1}  # A1's original from the run's record, not Kafka's
    assert sim.assignment() == {A0: (0, 1), A1: (1, 0)}


def test_a_partial_rollback_file_that_contradicts_the_record_is_refused(tmp_path):
    sim = cluster()
    state = tmp_path / "state"
    legacy_run(sim, plan(A0, A1), state)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "a", "partition": 1, "replicas": [0, 1]}]}))  # fmt: skip
    before = dict(sim.calls)
    with pytest.raises(Exception, match="a-1"):
        reassign_kit.cancel(
            sim, plan(A0, A1), rollback_file=str(partial), state_dir=str(state), timeout_s=60
        )
    assert sim.calls.get("alter_reassignments", 0) == before.get("alter_reassignments", 0)
