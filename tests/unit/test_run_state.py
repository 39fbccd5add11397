"""A run's state has a home: every execute records its originals and
throttle priors under <state dir>/<cluster id>/<plan hash>/<run id>/ before anything is sent,
and the drop-in ``--verify`` / ``--cancel`` given only the plan find them, say which run they
found, restore the operator's throttle values exactly, touch only what that run changed, and
put every partition back at its original list, order included. On the simulator, through the
real CLI (only ``ops.connect`` is pointed at the model)."""

from __future__ import annotations

import json
import os

import pytest

from reassign_kit.cli import reassign as cli
from reassign_kit.cli import throttles as throttles_cli
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.operations import execute as ops
from reassign_kit.operations import verify as verify_mod
from reassign_kit.run import home as state

TP = TopicPartition
OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}
ORIGINAL = (1, 2, 3)
TARGET = (3, 4, 5)  # shares broker 3: Kafka lists the target first, so order is at stake


def cluster() -> SimCluster:
    """Brokers 0..5; t-0 on (1, 2, 3) moves to (3, 4, 5); the operator has a rate on broker 1
    (in the plan) and on broker 0 (never touched by the plan)."""
    sim = SimCluster(6, bandwidth=50 * MB)
    sim.add_topic("t", [list(ORIGINAL), [0, 1, 2]], 40 * MB)
    sim.alter_broker_configs({0: dict(OPERATOR), 1: dict(OPERATOR)})
    return sim


PLAN = Plan.of([Move(TP("t", 0), TARGET)])


@pytest.fixture
def sim(monkeypatch, tmp_path):
    s = cluster()
    monkeypatch.setattr(ops, "connect", lambda *a, **k: s)
    monkeypatch.setattr(throttles_cli, "connect", lambda *a, **k: s)
    monkeypatch.chdir(tmp_path)  # a default file lands here, not in the repo
    return s


def reassign(capsys, *args: str) -> tuple[int, str]:
    code = cli.main(["--bootstrap-server", "sim:9092", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return code, out + err


def plan_file(tmp_path, indent: int | None = None, reverse: bool = False) -> str:
    obj = PLAN.to_json_obj()
    if reverse:
        obj["partitions"].reverse()
    path = tmp_path / f"plan-{indent}-{reverse}.json"
    path.write_text(json.dumps(obj, indent=indent))
    return str(path)


def finish(sim: SimCluster) -> None:
    for _ in range(200):
        if not sim.list_reassignments():
            return
        sim.sleep(1.0)
    raise AssertionError(f"still moving: {sim.list_reassignments()}")


def test_dropin_verify_puts_the_operators_rates_back_exactly(sim, tmp_path, capsys):
    """Item 5: --execute --throttle with a plan, then --verify with the same plan (nothing
    else) until done: the operator's 7777777 on broker 1 (the run throttled it) is back, and
    broker 0's (never touched) too; on main --verify deleted both."""
    plan = plan_file(tmp_path)
    code, out = reassign(
        capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000"
    )
    assert code == 0, out
    assert sim.broker_cfg[1][LEADER_RATE] == "1000000"  # the run's rate is in force
    code, out = reassign(capsys, "--verify", "--reassignment-json-file", plan)
    assert code == 10, out  # in progress: nothing cleared yet
    finish(sim)
    code, out = reassign(capsys, "--verify", "--reassignment-json-file", plan)
    assert code == 0, out
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}
    assert sim.topic_cfg.get("t", {}) == {}
    assert "found run" in out and "started" in out  # says which run it found


def test_dropin_cancel_restores_the_original_order(sim, tmp_path, capsys):
    """Item 5: --execute then --cancel --reassignment-json-file plan.json (nothing else):
    back at (1, 2, 3), order included, from the originals --execute saved; on main the
    originals came from the reassignment in flight, (3, 1, 2) in Kafka's order."""
    sim.stall(TP("t", 0))
    plan = plan_file(tmp_path)
    code, out = reassign(
        capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000"
    )
    assert code == 0, out
    assert sim.list_reassignments()  # in flight
    code, out = reassign(
        capsys, "--cancel", "--reassignment-json-file", plan, "--rollback-timeout", "30"
    )
    assert code == 0, out
    assert sim.describe_partitions([TP("t", 0)])[TP("t", 0)].replicas == ORIGINAL
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}
    assert "found run" in out


def test_verify_with_priors_touches_only_what_the_run_changed(sim, tmp_path, capsys):
    """Item 6: an explicit --throttle-priors (the file --execute saved) restores broker 1 and
    leaves broker 0's operator rate (a broker the plan never touched) alone; main deleted it."""
    plan = plan_file(tmp_path)
    rb = tmp_path / "rb.json"
    code, out = reassign(
        capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000",
        "--rollback-file", str(rb),
    )  # fmt: skip
    assert code == 0, out
    finish(sim)
    priors = tmp_path / "rb.throttle-priors.json"
    assert priors.exists()
    code, out = reassign(
        capsys, "--verify", "--reassignment-json-file", plan, "--throttle-priors", str(priors)
    )
    assert code == 0, out
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}


def test_the_same_plan_reformatted_has_the_same_home(sim, tmp_path, capsys):
    """The key is the plan's content: another indent and partition order find the same run."""
    code, out = reassign(
        capsys, "--execute", "--reassignment-json-file", plan_file(tmp_path), "--throttle", "1000000"
    )  # fmt: skip
    assert code == 0, out
    finish(sim)
    code, out = reassign(
        capsys, "--verify", "--reassignment-json-file", plan_file(tmp_path, indent=4, reverse=True)
    )
    assert code == 0 and "found run" in out, out
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}


def test_two_runs_of_one_plan_the_newest_unfinished_is_found(sim, tmp_path, capsys):
    """The same plan executed twice (the second with --additional and another rate, the
    official way to change the rate): two run ids under one key; --verify names the newest
    and says there is an earlier one; the operator's value (recorded by the first run: the
    second saw the first run's rate) comes back."""
    sim.stall(TP("t", 0))
    plan = plan_file(tmp_path)
    assert (
        reassign(capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000")[0]
        == 0
    )
    code, out = reassign(
        capsys, "--execute", "--additional", "--reassignment-json-file", plan, "--throttle", "2000000"
    )  # fmt: skip
    assert code == 0, out
    found = state.find(sim, PLAN)
    assert found is not None and len(found.runs) == 2 and found.run is found.runs[-1]
    sim.stall(TP("t", 0), False)
    finish(sim)
    code, out = reassign(capsys, "--verify", "--reassignment-json-file", plan)
    assert code == 0, out
    assert f"found run {found.runs[1].run_id}" in out
    assert "1 earlier unfinished run(s)" in out and found.runs[0].run_id in out
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}
    again = state.find(sim, PLAN)
    assert again is not None and all(r.finished for r in again.runs)


def test_an_unwritable_state_dir_sends_nothing(sim, tmp_path, capsys, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    if os.access(ro, os.W_OK):  # root ignores the mode: make the root a file instead
        ro.chmod(0o700)
        ro.rmdir()
        ro.write_text("not a directory")
    before = (dict(sim.broker_cfg), sim.describe_partitions([TP("t", 0)]))
    code, out = reassign(
        capsys, "--execute", "--reassignment-json-file", plan_file(tmp_path), "--throttle", "1",
        "--state-dir", str(ro / "runs"),
    )  # fmt: skip
    assert code == 2, out
    assert "run state: cannot write" in out and "--state-dir" in out and "Nothing was sent" in out
    assert (dict(sim.broker_cfg), sim.describe_partitions([TP("t", 0)])) == before
    assert not sim.list_reassignments()


def test_a_damaged_record_is_named_by_its_file(sim, tmp_path, capsys):
    plan = plan_file(tmp_path)
    assert (
        reassign(capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000")[0]
        == 0
    )
    found = state.find(sim, PLAN)
    assert found is not None
    record = os.path.join(found.run.dir, state.RUN_FILE)
    with open(record, "w") as f:
        f.write('{"run_id": 5')
    before = dict(sim.broker_cfg)
    code, out = reassign(capsys, "--verify", "--reassignment-json-file", plan)
    assert code == 12, out
    assert record in out and "damaged" in out
    assert dict(sim.broker_cfg) == before  # nothing touched


@pytest.mark.parametrize("entry", ["cli legacy", "cli paced", "api legacy", "api paced", "panel"])
def test_a_refused_plan_leaves_no_run_behind(entry, sim, tmp_path, capsys):
    """Every execute entry point goes through state.recording: a plan refused before anything
    is sent (broker 9 does not exist) leaves no run for a later --verify / --cancel to find."""
    import reassign_kit
    from reassign_kit.errors import InvalidPlanError
    from reassign_kit.ui.panel import Panel

    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 9, 3]}]}
        )
    )
    if entry.startswith("cli"):
        paced = ["--reassignment-batch-size", "1"] if entry == "cli paced" else []
        code, out = reassign(capsys, "--execute", "--reassignment-json-file", str(bad), *paced)
        assert code == 3, out
    elif entry.startswith("api"):
        options = {"batch_size": 1} if entry == "api paced" else {}
        with pytest.raises(InvalidPlanError):
            reassign_kit.execute(sim, str(bad), **options)
    else:
        # an invalid plan never enables the panel's Execute: the refusal here is the approval's
        p = Panel(PLAN, sim, refresh_s=0.02, expect_plan_hash="0" * 64)
        p.buttons["execute"].click()
        assert p.run is None and "expect-plan-hash" in p.message.value, p.message.value
    assert state.cluster_runs(sim) == []


def test_the_default_home_is_under_the_working_dir(sim, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(state.STATE_DIR_ENV, raising=False)
    plan = plan_file(tmp_path)
    assert reassign(capsys, "--execute", "--reassignment-json-file", plan)[0] == 0
    key = tmp_path / ".reassign-kit" / "runs" / "simulated" / state.plan_hash(PLAN)
    (run,) = list(key.iterdir())
    assert sorted(p.name for p in run.iterdir()) == ["plan.json", "rollback.json", "run.json"]
    other = tmp_path / "elsewhere"
    monkeypatch.setenv(state.STATE_DIR_ENV, str(other))
    assert state.find(sim, PLAN) is None  # the environment variable moves it
    code, out = reassign(capsys, "--list", "--state-dir", str(tmp_path / ".reassign-kit" / "runs"))
    assert code == 0 and run.name in out, out  # the option too


def test_a_paced_run_keeps_its_journal_in_its_home(sim, tmp_path, capsys):
    """A CLI run's journal no longer lands in the working directory; --cancel
    with only the plan finds it (and the run's originals)."""
    sim.stall(TP("t", 0))
    plan = plan_file(tmp_path)
    code, out = reassign(
        capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000",
        "--reassignment-batch-size", "1",
    )  # fmt: skip
    found = state.find(sim, PLAN)
    assert found is not None and found.run.kind == "paced", out
    assert found.run.journal == os.path.join(found.run.dir, state.JOURNAL_FILE)
    assert os.path.exists(found.run.journal), out
    assert not list(tmp_path.glob("reassign-run-*.jsonl"))
    code, out = reassign(
        capsys, "--cancel", "--reassignment-json-file", plan, "--rollback-timeout", "30"
    )
    assert code == 0, out
    assert "found run" in out
    assert sim.describe_partitions([TP("t", 0)])[TP("t", 0)].replicas == ORIGINAL
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}


def test_throttles_clean_with_nothing_uses_the_recorded_runs(sim, tmp_path, capsys):
    """throttles --clean without --journal: the unfinished runs recorded for the cluster say
    which values were the operator's (put back, not deleted), and which runs are said."""
    plan = plan_file(tmp_path)
    assert (
        reassign(capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000")[0]
        == 0
    )
    finish(sim)
    code = throttles_cli.main(["--bootstrap-server", "sim:9092", "--clean"])
    out = capsys.readouterr().out
    assert "unfinished run(s) of this cluster" in out, out
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}
    assert code in (0, 8), out


def test_the_api_has_one_convention_for_the_cluster(sim, tmp_path):
    """Item 4: verify / list / progress / cancel / execute take a bootstrap string, a client
    config dict or a gateway alike (verify("host:9092") used to fail where cancel worked)."""
    import reassign_kit
    from reassign_kit.errors import UsageError

    res = reassign_kit.execute("sim:9092", PLAN, throttle=1_000_000)
    assert res.exit_code == 0
    finish(sim)
    for cluster in ("sim:9092", {"bootstrap.servers": "sim:9092"}, sim):
        assert reassign_kit.verify(cluster, PLAN).exit_code == 0
        assert reassign_kit.list_reassignments(cluster).states == {}
        assert reassign_kit.progress(cluster, PLAN) is not None
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}  # the API found the run's priors too
    with pytest.raises(UsageError, match=r"bootstrap\.servers"):
        reassign_kit.verify({"security.protocol": "SSL"}, PLAN)
    assert reassign_kit.plan.__module__ == "reassign_kit.api"


def test_settle_waits_on_the_gateways_clock():
    """Item 5 (verify_mod.settle): the re-reads wait on the gateway's clock (model time on the
    simulator), not the wall clock."""
    sim = cluster()
    t0 = sim.now()
    states = sim.describe_partitions([TP("t", 0)])
    verify_mod.settle(sim, states, lambda tp, st: True, attempts=3, pause_s=10.0)
    assert sim.now() - t0 >= 30.0


def test_a_second_run_over_the_first_cancels_to_the_first_runs_originals(sim, tmp_path, capsys):
    """The same plan executed again with --additional while the first run's move is in flight
    (its rollback then holds (3, 1, 2): the set, in Kafka's order): --cancel with only the
    plan finds the newest run, says it started over the first run's moves, and puts the
    partition back at the first run's (1, 2, 3)."""
    sim.stall(TP("t", 0))
    plan = plan_file(tmp_path)
    assert (
        reassign(capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000")[0]
        == 0
    )
    code, out = reassign(capsys, "--execute", "--additional", "--reassignment-json-file", plan)
    assert code == 0, out
    found = state.find(sim, PLAN)
    assert found is not None and found.run.in_flight_at_start == ["t-0"]
    assert found.origin is found.runs[0]
    code, out = reassign(
        capsys, "--cancel", "--reassignment-json-file", plan, "--rollback-timeout", "30"
    )
    assert code == 0, out
    assert sim.describe_partitions([TP("t", 0)])[TP("t", 0)].replicas == ORIGINAL
    assert "still moving for run " + found.runs[0].run_id in out
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}


def test_the_panel_records_its_run_and_its_verify_keeps_the_operators_rates(tmp_path):
    """The panel is an execute too: without an output folder its run's journal and rollback
    land in the run's home, and its Verify (as --verify) finds the run's priors: the
    operator's rates (on a broker of the plan and on one outside it) stay; on main the
    panel's Verify deleted them."""
    import time

    from reassign_kit.ui.panel import Panel

    sim = cluster()

    def sleep(dt: float) -> None:
        sim.sleep(dt)
        time.sleep(0.01)

    p = Panel(PLAN, sim, refresh_s=0.02, run_kwargs={"clock": sim.now, "sleep": sleep},
              throttle=1_000_000)  # fmt: skip
    p.buttons["execute"].click()
    p.wait(60)
    assert p.phase == "done", p.message.value
    found = state.find(sim, PLAN)
    assert found is not None and found.run.kind == "paced"
    # a done run is recorded as done (as the CLI's): --verify does not call it "not finished"
    assert (found.run.finished is not None, found.run.outcome) == (True, "done")
    assert p.journal_path == found.run.journal and os.path.exists(found.run.journal)
    assert found.run.rollback_file() is not None
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}  # the run put them back itself
    p.buttons["verify"].click()
    assert p.report()["verify_complete"] is True
    assert sim.broker_cfg == {0: OPERATOR, 1: OPERATOR}
    assert state.find(sim, PLAN).run.finished is not None
