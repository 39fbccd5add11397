"""``reassign_kit.execute(...)``, the Python API of --execute: a plain function that routes the
legacy single request to ops.execute and paced runs to run.run.Run, on the simulator (and a
stand-in for ``ops.connect`` where a bootstrap string is given)."""

from __future__ import annotations

import sys

import pytest

import reassign_kit
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import ReassignKitError, RunError, UsageError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.moves.results import RunResult
from reassign_kit.operations import execute as ops
from reassign_kit.run.run import Run

RATE = MB


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    """Default journal / rollback paths (the working dir) land in the test's folder."""
    monkeypatch.chdir(tmp_path)


def sim_and_plan(partitions: int = 6) -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(partitions)], 2 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    return sim, plan


def test_the_public_api_is_plain_functions_with_all():
    """``reassign_kit.execute`` / ``progress`` are plain functions (no module rewritten in
    ``sys.modules``); ``reassign_kit.Run`` is the engine's Run; ``__all__`` lists them."""
    import inspect

    from reassign_kit import api

    assert inspect.isfunction(reassign_kit.execute) and reassign_kit.execute is api.execute
    assert inspect.isfunction(reassign_kit.progress) and reassign_kit.progress is api.progress
    assert reassign_kit.Run is Run
    assert {"execute", "progress", "Run", "verify", "cancel", "plan"} <= set(reassign_kit.__all__)
    assert all(
        type(m) is type(reassign_kit)
        for n, m in sys.modules.items()
        if n.startswith("reassign_kit") and m is not None
    )


def test_legacy_options_make_one_request_through_ops(tmp_path):
    sim, plan = sim_and_plan()
    rb = tmp_path / "rb.json"
    res = reassign_kit.execute(
        sim, plan, throttle=RATE, disallow_replication_factor_change=True, rollback_path=rb
    )
    assert isinstance(res, ops.ExecuteResult) and res.exit_code == 0
    assert sim.calls["alter_reassignments"] == 1 and len(sim.list_reassignments()) == 6
    assert Plan.read(str(rb)).by_tp()[TopicPartition("a", 0)].replicas == (0, 1)
    assert len(res.to_pandas()) == 6
    assert sim.current_throttles().broker_rates == dict.fromkeys(range(4), RATE)


def test_pacing_options_make_a_paced_run(tmp_path):
    sim, plan = sim_and_plan()
    path = tmp_path / "plan.json"
    plan.write(str(path))
    journal = tmp_path / "run.jsonl"
    res = reassign_kit.execute(
        sim,
        str(path),
        batch_size=2,
        incremental=True,
        throttle=RATE,
        wait=True,
        journal=journal,
        rollback_path=tmp_path / "rb.json",
    )
    assert isinstance(res, RunResult) and res.state == "done" and len(res.completed) == 6
    assert sim.assignment() == {m.tp: m.replicas for m in plan}
    assert sim.current_throttles().is_empty()
    df = res.to_pandas()
    assert list(df["status"]) == ["completed"] * 6
    started = read_events(journal)[0]
    assert started["options"]["batch_size"] == 2 and started["plan_path"] == str(path)
    assert (tmp_path / "rb.json").exists()


def test_interrupted_then_resumed_with_the_journaled_options(tmp_path, monkeypatch):
    sim, plan = sim_and_plan()
    journal = tmp_path / "run.jsonl"
    real_sleep, ticks = sim.sleep, {"n": 0}

    def ctrl_c_after_a_while(dt):  # the user interrupts the notebook cell
        ticks["n"] += 1
        if ticks["n"] == 3:
            raise KeyboardInterrupt
        real_sleep(dt)

    monkeypatch.setattr(sim, "sleep", ctrl_c_after_a_while)
    opts = dict(batch_size=2, incremental=True, throttle=RATE, wait=True, journal=journal)
    with pytest.raises(KeyboardInterrupt):
        reassign_kit.execute(sim, plan, rollback_path=None, **opts)
    assert read_events(journal)[-1]["state"] == "stopped"
    monkeypatch.setattr(sim, "sleep", real_sleep)
    res = reassign_kit.execute(sim, plan, journal=journal, resume=True)
    assert res.state == "done" and sim.assignment() == {m.tp: m.replicas for m in plan}
    ev = read_events(journal)
    assert sorted(e["partition"] for e in ev if e["event"] == "submitted") == list(range(6))
    assert sim.current_throttles().is_empty()


def test_bad_options_are_named_and_nothing_is_sent(tmp_path):
    sim, plan = sim_and_plan()
    with pytest.raises(UsageError, match="batch_sise"):
        reassign_kit.execute(sim, plan, batch_sise=2)
    with pytest.raises(UsageError, match="--timeout"):
        reassign_kit.execute(sim, plan, batch_size=2, timeout_s=-1)
    with pytest.raises(UsageError, match="--incremental"):
        reassign_kit.execute(sim, plan, incremental=True, rollback_path=None)
    with pytest.raises(UsageError, match="exactly one of"):
        reassign_kit.execute(plan=plan, rollback_path=None)
    bad = Plan.of([Move(TopicPartition("nope", 0), (1, 2))])
    with pytest.raises(ReassignKitError, match="nope"):
        reassign_kit.execute(sim, bad, batch_size=1, journal=tmp_path / "j.jsonl")
    assert sim.calls["alter_reassignments"] == 0 and not sim.topic_cfg


def test_a_failed_paced_run_raises(tmp_path):
    sim, plan = sim_and_plan()
    sim.fail_on[TopicPartition("a", 3)] = "INVALID_REPLICA_ASSIGNMENT: no"
    with pytest.raises(RunError, match="a-3"):
        reassign_kit.execute(
            sim,
            plan,
            batch_size=2,
            throttle=RATE,
            journal=tmp_path / "j.jsonl",
            rollback_path=None,
        )


def test_bootstrap_servers_connect_with_the_command_config_and_close(tmp_path, monkeypatch):
    sim, plan = sim_and_plan(2)
    seen = {}

    def connect(bootstrap, config):
        seen.update(bootstrap=bootstrap, config=config)
        sim.close = lambda: seen.setdefault("closed", True)
        return sim

    monkeypatch.setattr(ops, "connect", connect)
    props = tmp_path / "client.properties"
    props.write_text('sasl.jaas.config=x required username="u" password="hunter2pw";\n')
    journal = tmp_path / "run.jsonl"
    res = reassign_kit.execute(
        "127.0.0.1:9092",
        plan,
        command_config=str(props),
        max_moves_per_broker=1,
        throttle=RATE,
        wait=True,
        journal=journal,
        rollback_path=None,
    )
    assert res.state == "done" and seen["closed"] and seen["bootstrap"] == "127.0.0.1:9092"
    assert "sasl.jaas.config" in seen["config"]
    assert "hunter2pw" not in journal.read_text()
