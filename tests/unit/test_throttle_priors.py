"""Throttles restored, not deleted: an operator's own throttle
configs — a per-broker rate, the cluster default, entries in a topic's throttled-replica
list, static server.properties values — are what they were after a run, a legacy execute, a
failed submission, a cancel; a run killed mid-way puts them back on resume from its journal;
a broker that is down is skipped, not waited for."""

from __future__ import annotations

import pytest
from killfuzz import cli, killed, path_of, sim_file

from reassign_kit.cluster.config import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
)
from reassign_kit.cluster.gateway import DEFAULT_BROKER
from reassign_kit.cluster.simfile import load
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import KafkaOperationError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.operations import cancel as cancel_mod
from reassign_kit.operations import execute as ops
from reassign_kit.operations import verify as verify_mod
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.throttles import configs as thr

TP = TopicPartition
RATE = 1 * MB
OPERATOR_RATE = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}
OPERATOR_LIST = {LEADER_REPLICAS: "1:3"}  # partition 1 of t: not moved by the plan
DEFAULT = {LEADER_RATE: "5555555"}
STATIC = {LOG_DIR_RATE: "4444444"}


def operator_cluster() -> SimCluster:
    """Brokers 0..3; t-0 on (0, 1) moves to (2, 3); the operator has a rate on brokers 1 and
    2 (both in the move), a cluster default, a static log-dir rate on 3 and an entry of their
    own in t's leader list."""
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("t", [[0, 1], [3, 0]], 4 * MB)
    sim.alter_broker_configs({1: dict(OPERATOR_RATE), 2: dict(OPERATOR_RATE)})
    sim.alter_broker_configs({DEFAULT_BROKER: dict(DEFAULT)})
    sim.static_broker_cfg[3] = dict(STATIC)
    sim.alter_topic_configs({"t": dict(OPERATOR_LIST)})
    return sim


PLAN = Plan.of([Move(TP("t", 0), (2, 3))])


def assert_operator_configs_back(sim: SimCluster) -> None:
    assert sim.broker_cfg == {1: OPERATOR_RATE, 2: OPERATOR_RATE}
    assert sim.default_broker_cfg == DEFAULT
    assert sim.static_broker_cfg == {3: STATIC}
    assert sim.topic_cfg == {"t": OPERATOR_LIST}


def rates_seen(sim: SimCluster, broker: int) -> set[int]:
    return {ts.broker_rates.get(broker) for _, ts in sim.throttle_history}


def run_of(sim, tmp_path, resume=False, **opts) -> Run:
    return Run(
        sim,
        PLAN,
        ExecuteOptions(throttle=RATE, wait=True, **opts),
        journal_path=tmp_path / "run.jsonl",
        resume=resume,
        clock=sim.now,
        sleep=sim.sleep,
    )


def test_paced_run_puts_back_the_operators_throttles(tmp_path):
    sim = operator_cluster()
    setup = len(sim.throttle_history)
    res = run_of(sim, tmp_path).run()
    assert res.state == "done" and sim.assignment()[TP("t", 0)] == (2, 3)
    assert RATE in rates_seen(sim, 1) and RATE in rates_seen(sim, 2)  # ours while it moved
    # during the move the operator's entry stayed in the list beside ours
    lists = [ts.leader_replicas.get("t", frozenset()) for _, ts in sim.throttle_history[setup:]]
    assert len(lists) > 1 and all((1, 3) in lst for lst in lists)
    assert any((0, 0) in lst for lst in lists)
    assert_operator_configs_back(sim)
    ev = read_events(tmp_path / "run.jsonl")
    prior = [e for e in ev if e["event"] == "throttle_prior"]
    assert prior and prior[0]["brokers"]["1"] == OPERATOR_RATE
    assert prior[0]["topics"]["t"][LEADER_REPLICAS] == "1:3"
    # the prior was journaled before the first change was sent
    first_set = next(i for i, e in enumerate(ev) if e["event"] == "throttle_set")
    assert ev.index(prior[0]) < first_set
    # the operator's values put back are not throttles the run left (it said "left on
    # brokers 1, 2" with nothing in flight)
    assert not any(res.throttles_left.values()), res.throttles_left


def test_killed_run_resumed_restores_the_priors_from_its_journal(tmp_path):
    """The CLI SIGKILLed at its second poll (our rates set, its exit path never run), then
    ``--resume``d: the operator's values come back from the journal."""
    bootstrap = sim_file(operator_cluster(), tmp_path)
    PLAN.write(str(tmp_path / "plan.json"))
    run = ["--execute", "--reassignment-json-file", str(tmp_path / "plan.json")]
    run += ["--journal", str(tmp_path / "run.jsonl")]
    p = cli(bootstrap, [*run, "--throttle", str(RATE), "--wait"], tmp_path, kill_at="sleep:2",
            fork=True)  # fmt: skip
    assert killed(p), p.stdout + p.stderr
    sim = load(path_of(bootstrap))
    assert sim.broker_cfg[1][LEADER_RATE] == str(RATE)  # ours, set when it died
    assert sim.list_reassignments()
    p = cli(bootstrap, [*run, "--resume"], tmp_path, fork=True)
    assert p.returncode == 0, p.stdout + p.stderr
    sim = load(path_of(bootstrap))
    assert sim.assignment()[TP("t", 0)] == (2, 3)
    assert_operator_configs_back(sim)


def test_a_run_that_never_touched_a_key_leaves_it_alone(tmp_path):
    """The operator's rate on a broker the run does not need, and lists of a topic it does
    not move, are never written (the old sync deleted every throttle in its scope)."""
    sim = operator_cluster()
    sim.add_topic("u", [[0, 1]], 1 * MB)
    sim.alter_topic_configs({"u": {FOLLOWER_REPLICAS: "0:2"}})
    sim.alter_broker_configs({0: dict(OPERATOR_RATE)})
    plan = Plan.of([Move(TP("t", 0), (2, 3))])
    Run(sim, plan, ExecuteOptions(throttle=RATE, wait=True), clock=sim.now, sleep=sim.sleep).run()
    assert sim.topic_cfg["u"] == {FOLLOWER_REPLICAS: "0:2"}
    assert sim.broker_cfg[0] == OPERATOR_RATE  # 0 is a source: ours during, theirs after


def test_legacy_execute_then_verify_with_its_priors_file(tmp_path):
    sim = operator_cluster()
    rb = str(tmp_path / "rollback.json")
    res = ops.execute(sim, PLAN, throttle=RATE, rollback_path=rb)
    assert res.priors_path and any("throttles --clean" in n for n in res.notes)
    assert sim.broker_cfg[1][LEADER_RATE] == str(RATE)
    assert thr.entry_set(sim.topic_cfg["t"][LEADER_REPLICAS]) >= {"1:3", "0:0", "0:1"}
    sim.sleep(30)
    v = verify_mod.verify(sim, PLAN, priors=res.priors_path)
    assert v.complete
    assert_operator_configs_back(sim)


def test_legacy_verify_without_priors_removes_as_the_official_tool(tmp_path):
    sim = operator_cluster()
    ops.execute(sim, PLAN, throttle=RATE, rollback_path=None)
    sim.sleep(30)
    verify_mod.verify(sim, PLAN)
    assert 1 not in sim.broker_cfg and "t" not in sim.topic_cfg  # what it does without them
    assert sim.default_broker_cfg == DEFAULT and sim.static_broker_cfg == {3: STATIC}


def test_legacy_execute_restores_throttles_when_the_submission_fails(tmp_path):
    """The controller refuses the request (KIP-860 'nothing submitted', a
    timeout): the throttles set for it are removed, the operator's put back."""
    sim = operator_cluster()

    def refuse(targets, allow_replication_factor_change=True):
        raise KafkaOperationError("alter partition reassignments: RequestTimedOutError")

    sim.alter_reassignments = refuse
    with pytest.raises(KafkaOperationError, match="RequestTimedOut"):
        ops.execute(sim, PLAN, throttle=RATE, rollback_path=None)
    assert RATE in rates_seen(sim, 1)  # it had set them
    assert_operator_configs_back(sim)


def test_legacy_execute_every_partition_rejected_restores_throttles(tmp_path):
    sim = operator_cluster()
    sim.fail_on[TP("t", 0)] = "INVALID_REPLICATION_FACTOR: nothing was submitted"
    res = ops.execute(sim, PLAN, throttle=RATE, rollback_path=None)
    assert res.failed and res.exit_code != 0
    assert_operator_configs_back(sim)
    assert any("removed" in n or "put back" in n for n in res.notes)


# ----------------------------------------------------------------------------- #13 cancel


def test_cancel_without_preserve_clears_when_nothing_moves_any_more(tmp_path):
    """After `--cancel --preserve-throttles`, a second `--cancel` (without it)
    finds nothing moving and must still clear the throttles (as the official tool and its
    ReassignPartitionsCommandTest), putting the operator's values back."""
    sim = operator_cluster()
    rb = str(tmp_path / "rollback.json")
    res = ops.execute(sim, PLAN, throttle=RATE, rollback_path=rb)
    first = cancel_mod.cancel(sim, PLAN, preserve_throttles=True, timeout_s=60)
    assert first.cancelled == [TP("t", 0)] and sim.broker_cfg[1][LEADER_RATE] == str(RATE)
    assert not sim.list_reassignments()
    second = cancel_mod.cancel(sim, PLAN, priors=res.priors_path, timeout_s=60)
    assert second.cleared is not None
    assert_operator_configs_back(sim)


def test_cancel_without_priors_clears_as_the_official_tool(tmp_path):
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("t", [[0, 1]], 4 * MB)
    ops.execute(sim, PLAN, throttle=RATE, rollback_path=None)
    cancel_mod.cancel(sim, PLAN, preserve_throttles=True, timeout_s=60)
    assert sim.broker_cfg and sim.topic_cfg
    cancel_mod.cancel(sim, PLAN, timeout_s=60)
    assert sim.broker_cfg == {} and sim.topic_cfg == {}


# ----------------------------------------------------------------------------- #14 dead broker


def test_paced_run_goes_on_when_a_source_broker_is_down(tmp_path):
    """KAFKA-13392: broker 1, a source of the move, is stopped; its configs
    cannot be asked or changed. The run skips it (journaled as a warning), throttles the
    others, completes onto the live targets and says how its throttle gets fixed."""
    sim = operator_cluster()
    sim.down.add(1)
    res = run_of(sim, tmp_path).run()
    assert res.state == "done" and sim.assignment()[TP("t", 0)] == (2, 3)
    assert RATE in rates_seen(sim, 2)  # the live brokers were throttled
    ev = read_events(tmp_path / "run.jsonl")
    warnings = [e["message"] for e in ev if e["event"] == "warning"]
    assert any("broker 1" in w and "cannot be reached" in w for w in warnings)
    assert sim.broker_cfg == {1: OPERATOR_RATE, 2: OPERATOR_RATE}  # 1 never touched
    assert sim.topic_cfg == {"t": OPERATOR_LIST}


def test_paced_run_fixes_a_brokers_throttle_when_it_comes_back(tmp_path):
    sim = operator_cluster()
    sim.down.add(2)  # a target: its throttle cannot be set while it is down
    run = run_of(sim, tmp_path)
    seen = []

    def back(e):
        if e["event"] == "warning" and "broker 2" in e.get("message", "") and not seen:
            seen.append(e)
            sim.down.discard(2)  # it returns

    run.subscribe(back)
    res = run.run()
    assert res.state == "done" and seen
    ev = read_events(tmp_path / "run.jsonl")
    assert any(e["event"] == "throttle_broker_back" and e["brokers"] == [2] for e in ev)
    assert RATE in rates_seen(sim, 2)  # set once it answered
    assert_operator_configs_back(sim)


def test_legacy_execute_submits_although_a_source_broker_is_down(tmp_path):
    sim = operator_cluster()
    sim.down.add(1)
    res = ops.execute(sim, PLAN, throttle=RATE, rollback_path=None)
    assert res.exit_code == 0 and sim.list_reassignments()
    assert any("broker(s) 1" in n and "KAFKA-13392" in n for n in res.notes)
    assert sim.broker_cfg[2][LEADER_RATE] == str(RATE)
