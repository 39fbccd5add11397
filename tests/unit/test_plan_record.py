"""Plans run as approved: `plan` writes the plan's hash and the state it was made
from beside the plan (the plan stays Kafka's format); the preflight of every start (legacy and
paced, API, panel) refuses another hash (13) and the drift since the record (14, naming each
partition, broker, topic) unless allow_drift; nothing is sent when it refuses."""

from __future__ import annotations

import json

import pytest

import reassign_kit
from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import InvalidPlanError, PlanDriftError, PlanHashError
from reassign_kit.model import Move, PartitionState, Plan, TopicPartition
from reassign_kit.planner.record import (
    Approval,
    PlanRecord,
    drift,
    normalise_hash,
    plan_hash,
    record_path,
)
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot

TP = TopicPartition


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def sim_plan_record(tmp_path, partitions: int = 4):
    """A simulator, a plan moving every partition by two brokers, its file and record."""
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(partitions)], MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    current = Plan.of(Move(tp, tuple(sp.replicas)) for tp, sp in sim.partitions.items())
    path = tmp_path / "plan.json"
    plan.write(str(path))
    rec = PlanRecord.of(plan, current, sim.broker_ids, snapshot="snap.json")
    rec.write(record_path(str(path)))
    return sim, plan, str(path)


def sent(sim: SimCluster) -> int:
    return sim.calls["alter_reassignments"]


def test_record_path_and_round_trip(tmp_path):
    assert record_path("/x/plan.json") == "/x/plan.record.json"
    assert record_path("/x/plan") == "/x/plan.record.json"
    sim, plan, path = sim_plan_record(tmp_path)
    rec = PlanRecord.read(record_path(path))
    assert rec.plan_sha256 == plan_hash(plan) == plan.digest()
    assert rec.brokers == (0, 1, 2, 3) and rec.topics == ("a",)
    assert rec.partitions[TP("a", 1)] == (1, 2)
    # the plan file itself is still kafka-reassign-partitions' JSON, nothing added
    assert set(json.loads(open(path).read())) == {"version", "partitions"}


def test_no_drift_runs_and_says_so(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    res = reassign_kit.execute(sim, path, rollback_path=None)
    assert sent(sim) == 1
    assert any("no drift since" in n for n in res.notes), res.notes


def test_a_moved_partition_is_refused_by_name_and_nothing_is_sent(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    sim.partitions[TP("a", 2)].replicas = [2, 1]  # someone else moved it
    with pytest.raises(PlanDriftError) as e:
        reassign_kit.execute(sim, path, rollback_path=None)
    assert e.value.exit_code == 14
    assert "partition a-2: replicas [2, 3] when planned, now [2, 1]" in str(e.value)
    assert "a-0" not in str(e.value) and sent(sim) == 0


def test_allow_drift_shows_the_drift_and_proceeds(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    sim.partitions[TP("a", 2)].replicas = [2, 1]
    res = reassign_kit.execute(sim, path, rollback_path=None, allow_drift=True)
    assert sent(sim) == 1
    assert any("a-2" in n for n in res.notes) and any("--allow-drift" in n for n in res.notes)


def test_paced_run_refuses_drift_too(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    sim.partitions[TP("a", 0)].replicas = [0, 3]
    with pytest.raises(PlanDriftError, match="a-0"):
        reassign_kit.execute(
            sim, path, batch_size=2, journal=str(tmp_path / "j.jsonl"), rollback_path=None
        )
    assert sent(sim) == 0


def test_gone_broker_and_deleted_topic_are_named(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    rec = PlanRecord.read(record_path(path))
    states = {tp: PartitionState(tp, tuple(r)) for tp, r in rec.partitions.items()}
    d = drift(rec, plan, states, [0, 1, 2], ["a"])
    assert d and d.brokers_gone == (3,)
    assert "broker 3 is gone" in d.lines()[0]
    d = drift(rec, plan, {}, [0, 1, 2, 3], [])
    assert d.topics_gone == ("a",) and d.lines() == ["topic a was deleted"]


def test_a_partition_at_or_moving_to_its_target_has_not_drifted(tmp_path):
    """A resumed run finds its own moves done or in flight: not drift."""
    sim, plan, path = sim_plan_record(tmp_path)
    rec = PlanRecord.read(record_path(path))
    tgt = plan.by_tp()
    states = {tp: PartitionState(tp, tuple(tgt[tp].replicas)) for tp in rec.partitions}
    moving_tp = TP("a", 1)
    was, target = rec.partitions[moving_tp], tgt[moving_tp].replicas
    states[moving_tp] = PartitionState(
        moving_tp, tuple(target) + tuple(was), adding=tuple(target), removing=tuple(was)
    )
    assert not drift(rec, plan, states, [0, 1, 2, 3], ["a"])


def test_expect_plan_hash_refuses_another_plan(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    with pytest.raises(PlanHashError) as e:
        reassign_kit.execute(sim, path, rollback_path=None, expect_plan_hash="ab" * 32)
    assert e.value.exit_code == 13 and plan_hash(plan) in str(e.value)
    assert sent(sim) == 0
    # the right one, with the sha256: prefix and upper case, runs
    reassign_kit.execute(
        sim,
        path,
        rollback_path=None,
        expect_plan_hash="sha256:" + plan_hash(plan).upper(),
    )
    assert sent(sim) == 1
    assert normalise_hash(" SHA256:AB ") == "ab"


def test_a_plan_edited_after_its_record_is_refused(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    edited = Plan.of([*plan.moves[:-1], Move(plan.moves[-1].tp, (1, 0))])
    edited.write(path)
    with pytest.raises(PlanDriftError, match="edited after"):
        reassign_kit.execute(sim, path, rollback_path=None)
    assert sent(sim) == 0


def test_a_plain_kafka_plan_without_record_runs_with_a_note(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    (tmp_path / "plan.record.json").unlink()
    res = reassign_kit.execute(sim, path, rollback_path=None)
    assert sent(sim) == 1
    assert any("drift since it was planned is not checked" in n for n in res.notes)


def test_a_damaged_record_is_named(tmp_path):
    sim, plan, path = sim_plan_record(tmp_path)
    (tmp_path / "plan.record.json").write_text('{"kind": "reassign-kit plan record"}')
    with pytest.raises(InvalidPlanError, match="plan.record.json is not a plan record"):
        reassign_kit.execute(sim, path, rollback_path=None)
    assert sent(sim) == 0
    assert Approval(record="").record_for(path) is None


def test_plan_cli_writes_the_record_and_prints_the_hash(tmp_path, capsys):
    snap = Snapshot.of(
        [BrokerEntry(b, None) for b in (1, 2, 3)],
        [TopicEntry("t", 1)],
        [PartitionEntry("t", p, (1 + p % 3, 1 + (p + 1) % 3), 1000) for p in range(6)],
    )
    snap_path = tmp_path / "snap.json"
    snap.write(str(snap_path))
    out = tmp_path / "plan.json"
    code = cli_main(
        ["plan", "--snapshot", str(snap_path), "--remove-brokers", "3", "--engine", "local"]
        + ["--output", str(out), "--report", str(tmp_path / "r.json"), "--quiet"]
    )
    printed = capsys.readouterr().out
    assert code == 0
    plan = Plan.read(str(out))
    rec = PlanRecord.read(str(tmp_path / "plan.record.json"))
    assert rec.plan_sha256 == plan_hash(plan) and f"sha256 {rec.plan_sha256}" in printed
    assert rec.brokers == (1, 2, 3) and rec.snapshot == str(snap_path)
    assert {tp: snap.by_tp()[tp].replicas for tp in rec.partitions} == dict(rec.partitions)
    assert json.loads((tmp_path / "r.json").read_text())["plan_sha256"] == rec.plan_sha256


def test_drop_in_cli_exit_codes(tmp_path, capsys, monkeypatch):
    """--execute --expect-plan-hash / drift through the drop-in CLI: exit 13 / 14, nothing
    sent (the simulator stands in for the cluster)."""
    from reassign_kit.operations import execute as ops

    sim, plan, path = sim_plan_record(tmp_path)
    monkeypatch.setattr(ops, "connect", lambda *a, **k: sim)
    monkeypatch.setattr(sim, "close", lambda: None)
    base = ["--bootstrap-server", "sim:1", "--execute", "--reassignment-json-file", path]
    base += ["--rollback-file", str(tmp_path / "rb.json")]
    assert cli_main([*base, "--expect-plan-hash", "0" * 64]) == 13
    sim.partitions[TP("a", 3)].replicas = [0, 1]
    assert cli_main(base) == 14
    err = capsys.readouterr().err
    assert "partition a-3: replicas [3, 0] when planned, now [0, 1]" in err
    assert sent(sim) == 0
    assert cli_main([*base, "--allow-drift", "--expect-plan-hash", plan_hash(plan)]) == 0
    assert "a-3" in capsys.readouterr().out and sent(sim) == 1
