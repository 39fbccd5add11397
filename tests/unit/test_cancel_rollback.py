"""Cancel means rollback, on the simulator: every cancel path — ``Run.cancel()``
/ Stop with cancel, ``--on-interrupt cancel``, ``--on-deadline cancel``, and ``--cancel``
given the journal or the plan after the run was killed — brings every partition the run
touched and did not complete back to its ORIGINAL replica list, in order, KIP-435 stepped
moves between steps included, and reports it per partition.

The move used throughout: (0, 1) -> (2, 3) with R = 1 goes (2, 0, 1), (2, 1), (2, 3): after
step 1 the partition has RF 3 and a new preferred leader, after step 2 it has lost replica 0.
"""

from __future__ import annotations

import pytest
from killfuzz import cli, killed, path_of, sim_file

from reassign_kit.cluster.simfile import load
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.moves.table import MoveStatus, replay
from reassign_kit.operations import cancel as cancel_mod
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.throttles import configs as thr

TP = TopicPartition
A0, A1 = TP("a", 0), TP("a", 1)
RATE = 1 * MB
ORIGINAL = {A0: (0, 1), A1: (1, 0)}
TARGET = {A0: (2, 3), A1: (3, 2)}


def cluster() -> SimCluster:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [list(ORIGINAL[A0]), list(ORIGINAL[A1])], 2 * MB)
    return sim


def plan(*tps: TopicPartition) -> Plan:
    return Plan.of(Move(tp, TARGET[tp]) for tp in tps or (A0,))


def run_of(sim: SimCluster, p: Plan, tmp_path, **opts) -> Run:
    opts.setdefault("throttle", RATE)
    opts.setdefault("parallel_replica_count", 1)
    opts.setdefault("wait", True)
    return Run(sim, p, ExecuteOptions(**opts), tmp_path / "run.jsonl", clock=sim.now,
               sleep=sim.sleep)  # fmt: skip


def events(tmp_path, name: str | None = None) -> list[dict]:
    return [e for e in read_events(tmp_path / "run.jsonl") if name in (None, e["event"])]


def exact_throttles(sim: SimCluster) -> bool:
    """The throttles equal what the reassignments in flight need (none when idle)."""
    need = thr.required_throttles({}, {}, sim.list_reassignments())
    current = thr.current_throttles(sim, ["a"], sim.broker_ids)
    return thr.sync_changes(need, RATE, current, ["a"], sim.broker_ids) == ({}, {})


def at_original(sim: SimCluster, *tps: TopicPartition) -> bool:
    return all(
        sim.assignment()[tp] == ORIGINAL[tp] and tp not in sim.list_reassignments() for tp in tps
    )


def on_event(run: Run, name: str, act, nth: int = 1, **match):
    """Call ``act()`` at the ``nth`` journal event ``name`` whose fields match."""
    seen = {"n": 0}

    def fn(e: dict) -> None:
        if e["event"] == name and all(e.get(k) == v for k, v in match.items()):
            seen["n"] += 1
            if seen["n"] == nth:
                act()

    run.subscribe(fn)


def assert_rolled_back(sim, tmp_path, res, *tps: TopicPartition) -> None:
    assert at_original(sim, *tps), sim.assignment()
    assert sorted(res.cancelled) == sorted(tps) and not res.rolling_back and not res.failed
    assert sim.partitions[A0].leader == ORIGINAL[A0][0]  # the preferred leader, in place
    rows = replay(events(tmp_path))
    assert all(rows[tp] is MoveStatus.CANCELLED for tp in tps)
    cancelled = {TP(e["topic"], e["partition"]): e for e in events(tmp_path, "cancelled")}
    assert all(cancelled[tp]["replicas"] == list(ORIGINAL[tp]) for tp in tps)
    assert exact_throttles(sim) and sim.current_throttles().is_empty()


# ---------------------------------------------------------------- between steps


@pytest.mark.parametrize("after_step", [1, 2])
def test_a_stepped_move_cancelled_between_steps_goes_back_to_its_original_list(
    tmp_path, after_step
):
    """Before: a move between steps was not 'moving', so the cancel left it at (2, 0, 1) or
    (2, 1) — RF 3 and the leader moved, or replica 0 gone — and reported it 'not submitted'.
    After step 2 the way back copies replica 0 again, throttled."""
    sim = cluster()
    run = run_of(sim, plan(A0), tmp_path)
    on_event(run, "step_completed", lambda: run.stop(cancel_inflight=True), nth=after_step)
    res = run.run()
    assert res.state == "cancelled"  # a cancelled run says so (was "stopped")
    assert_rolled_back(sim, tmp_path, res, A0)
    back = events(tmp_path, "rolling_back")
    assert [(e["replicas"], e["original"]) for e in back] == [
        ([[2, 0, 1], [2, 1]][after_step - 1], [0, 1])
    ]


def test_a_step_in_flight_is_cancelled_back_to_the_original_not_the_previous_step(tmp_path):
    """Before: cancelling step 3 ((2, 1) -> (2, 3)) left the partition at (2, 1), the step
    before, and called it cancelled."""
    sim = cluster()
    run = run_of(sim, plan(A0), tmp_path)
    on_event(run, "step_submitted", lambda: run.stop(cancel_inflight=True), step=3)
    res = run.run()
    assert_rolled_back(sim, tmp_path, res, A0)
    assert sim.calls["alter_reassignments"] >= 5  # 3 steps, the cancel, the way back


def test_run_cancel_is_the_same_rollback(tmp_path):
    sim = cluster()
    run = run_of(sim, plan(A0), tmp_path)
    on_event(run, "step_completed", run.cancel)
    assert_rolled_back(sim, tmp_path, run.run(), A0)


def test_stop_alone_drains_and_leaves_the_move_where_it_is(tmp_path):
    """Stop is not cancel: nothing more is submitted, nothing is rolled back."""
    sim = cluster()
    run = run_of(sim, plan(A0), tmp_path)
    on_event(run, "step_completed", run.stop)
    res = run.run()
    assert res.state == "stopped" and not res.cancelled
    assert sim.assignment()[A0] == (2, 0, 1) and not events(tmp_path, "rolling_back")


def test_a_drained_move_between_steps_is_reported_between_steps_not_unsubmitted(tmp_path, capsys):
    """After Stop a stepped move between steps was reported 'not submitted'
    although it sits at an intermediate replica set ((2, 0, 1): RF 3)."""
    import argparse

    from reassign_kit.cli import paced

    sim = cluster()
    run = run_of(sim, plan(A0, A1), tmp_path, batch_size=1)
    on_event(run, "step_completed", run.stop, topic="a", partition=0)
    res = run.run()
    assert sim.assignment()[A0] == (2, 0, 1) and A1 not in res.submitted
    assert res.between_steps == [A0] and res.not_submitted == [A1]
    assert sorted(res.pending) == [A0, A1]  # their next step was not submitted (as before)
    args = argparse.Namespace(
        bootstrap_server="k:9092", command_config=None, reassignment_json_file="plan.json"
    )
    paced._report(res, args, "run.jsonl", False)
    out = capsys.readouterr().out
    assert "between steps 1, not submitted 1" in out, out
    assert "Between two KIP-435 steps (an intermediate replica set, nothing in flight): a-0" in out
    rows = res.to_pandas()
    assert dict(zip(rows["partition"], rows["status"], strict=True)) == {
        "a-0": "between steps",
        "a-1": "pending",
    }


def test_a_cancel_as_the_last_step_is_submitted_is_not_reported_done(tmp_path):
    """Without --wait the run ends at KIP-1335's return point, the poll that submits the last
    step; a Cancel in that same poll rolled the move back but the run said 'done' (exit 0)."""
    sim = cluster()
    run = run_of(sim, plan(A0), tmp_path, wait=False)
    on_event(run, "step_submitted", run.cancel, step=3)
    res = run.run()
    assert_rolled_back(sim, tmp_path, res, A0)
    assert res.state == "cancelled" and not res.ok and res.exit_code != 0


# ---------------------------------------------------------------- interrupt, deadline


def test_on_interrupt_cancel_rolls_back(tmp_path):
    """``--on-interrupt cancel``: the CLI's SIGINT / SIGTERM handler calls ``stop()``."""
    sim = cluster()
    run = run_of(sim, plan(A0, A1), tmp_path, cancel_on_stop=True)
    on_event(run, "step_completed", run.stop)
    res = run.run()
    assert_rolled_back(sim, tmp_path, res, A0, A1)


def test_on_deadline_cancel_rolls_back_every_move_of_the_run(tmp_path):
    """The run deadline passes while a-0 and a-1 are part-way (one between steps or with a
    step in flight): both go back to their original lists, not to their last step."""
    sim = cluster()
    res = run_of(sim, plan(A0, A1), tmp_path, run_deadline=3, on_deadline="cancel").run()
    assert res.state == "deadline"
    assert_rolled_back(sim, tmp_path, res, A0, A1)
    assert events(tmp_path, "deadline") and events(tmp_path, "rolling_back")


def test_a_rollback_not_back_in_time_is_reported_with_its_throttles(tmp_path):
    """The wait is bounded (``rollback_timeout``): a way back that cannot copy is reported
    as rolling back, keeps exactly the throttles it needs, and a later ``--cancel
    --journal`` finishes and verifies it."""
    sim = cluster()
    run = run_of(sim, plan(A0), tmp_path, rollback_timeout=5)
    on_event(run, "step_completed", lambda: (sim.stall(A0), run.cancel()), nth=2)
    res = run.run()
    assert res.rolling_back == [A0] and not res.cancelled
    assert A0 in sim.list_reassignments() and exact_throttles(sim)
    assert not sim.current_throttles().is_empty()
    assert replay(events(tmp_path))[A0] is MoveStatus.ROLLING_BACK
    sim.stall(A0, False)
    cres = cancel_mod.cancel_run(sim, str(tmp_path / "run.jsonl"), timeout_s=60)
    assert cres.cancelled == [A0] and at_original(sim, A0) and cres.exit_code == 0
    assert sim.current_throttles().is_empty()


# ---------------------------------------------------------------- --cancel after a killed run


def killed_between_steps(sim: SimCluster, tmp_path, p: Plan) -> str:
    """The CLI runs ``p`` (R = 1, --wait) on ``sim`` and is SIGKILLed right before its second
    Alter: every move's first step complete, its next one written ahead, not sent. Returns
    the cluster's ``--bootstrap-server`` (``sim:PATH``, as the process left it)."""
    p.write(str(tmp_path / "plan.json"))
    bootstrap = sim_file(sim, tmp_path)
    args = ["--execute", "--reassignment-json-file", str(tmp_path / "plan.json"), "--journal",
            str(tmp_path / "run.jsonl"), "--throttle", str(RATE), "--parallel-replica-count",
            "1", "--wait"]  # fmt: skip
    proc = cli(bootstrap, args, tmp_path, kill_at="alter_reassignments:2:before", fork=True)
    assert killed(proc), proc.stdout + proc.stderr
    assert events(tmp_path)[-1]["event"] != "run_finished"
    after = load(path_of(bootstrap))
    assert after.assignment()[A0] == (2, 0, 1) and not after.list_reassignments()
    return bootstrap


@pytest.mark.parametrize("given", ["journal", "plan and journal", "plan and rollback file"])
def test_cancel_of_a_run_killed_between_steps_rolls_back(tmp_path, given):
    """Before: ``--cancel`` said 'None of the specified partition reassignments are active'
    and left a-0 at (2, 0, 1). The run and the cancel are the CLI's processes."""
    sim = cluster()
    p = plan(A0, A1)
    rollback = tmp_path / "rollback.json"
    Plan.of(Move(tp, ORIGINAL[tp]) for tp in (A0, A1)).write(str(rollback))
    bootstrap = killed_between_steps(sim, tmp_path, p)
    argv = ["--cancel"]
    argv += {
        "journal": ["--journal", str(tmp_path / "run.jsonl")],
        "plan and journal": ["--reassignment-json-file", str(tmp_path / "plan.json"),
                             "--journal", str(tmp_path / "run.jsonl")],
        "plan and rollback file": ["--reassignment-json-file", str(tmp_path / "plan.json"),
                                   "--rollback-file", str(rollback)],
    }[given]  # fmt: skip
    proc = cli(bootstrap, argv, tmp_path, fork=True)
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    sim = load(path_of(bootstrap))
    assert at_original(sim, A0, A1), sim.assignment()
    assert "a-0: back at its original replicas [0,1]" in out, out
    assert sim.current_throttles().is_empty()


def test_cancel_with_the_plan_alone_says_what_it_cannot_restore(tmp_path):
    """Without the journal or the rollback file nothing says where a move between steps
    started: the partition is named, with what would bring it back."""
    sim = load(path_of(killed_between_steps(cluster(), tmp_path, plan(A0))))
    res = cancel_mod.cancel(sim, plan(A0))
    text = "\n".join(res.lines())
    assert res.unknown == [A0] and not res.cancelled
    assert "a-0" in text and "--journal" in text and "--rollback-file" in text


def test_cancel_api_rolls_back_from_the_journal(tmp_path):
    import reassign_kit

    sim = load(path_of(killed_between_steps(cluster(), tmp_path, plan(A0, A1))))
    res = reassign_kit.cancel(sim, journal=str(tmp_path / "run.jsonl"))
    assert res.cancelled == [A0, A1] and at_original(sim, A0, A1)
    df = res.to_pandas()
    assert dict(zip(df["partition"], df["result"], strict=True))[0] == "cancelled"


def test_a_second_stop_ends_the_wait_for_a_rollback(tmp_path):
    """A second Ctrl-C (``stop()`` again) while the run's end waits for a cancel's rollback
    stops waiting: the rollback stays in flight, throttled, reported rolling back. Before, the
    CLI's signal handler swallowed it and the run sat out the whole --rollback-timeout."""
    sim = cluster()
    run = run_of(sim, plan(A0), tmp_path, rollback_timeout=600)

    def again() -> None:
        sim.stall(A0)  # the way back (onto broker 0 again) makes no progress
        run.stop(cancel_inflight=True)

    on_event(run, "step_completed", run.cancel, nth=2)
    on_event(run, "rolling_back", again)
    res = run.run()
    assert res.rolling_back == [A0] and not res.cancelled
    assert sim.now() < 60  # model time: nowhere near the 600 s rollback timeout
    assert A0 in sim.list_reassignments() and exact_throttles(sim)
    assert any("stopped waiting" in e["message"] for e in events(tmp_path, "warning"))


class CancelTimesOut(SimCluster):
    """The controller never answers a cancel (every retry times out)."""

    def alter_reassignments(self, targets, allow_replication_factor_change=True):
        if targets and all(t is None for t in targets.values()):
            from reassign_kit.errors import KafkaOperationError

            raise KafkaOperationError("alter partition reassignments: timed out after 30s")
        return super().alter_reassignments(targets, allow_replication_factor_change)


def test_a_cancel_that_fails_is_reported_and_the_throttles_still_made_right(tmp_path):
    sim = CancelTimesOut(4, bandwidth=50 * MB)
    sim.add_topic("a", [list(ORIGINAL[A0]), list(ORIGINAL[A1])], 2 * MB)
    run = run_of(sim, plan(A0), tmp_path)
    on_event(run, "step_submitted", run.cancel, step=3)
    res = run.run()
    assert res.error and "cancel failed" in res.error and not res.cancelled
    assert exact_throttles(sim)  # the move still in flight keeps exactly its throttles
    assert events(tmp_path)[-1]["event"] == "run_finished"


# ---------------------------------------------------------------- the original leader

L0 = TP("l", 0)


def leader_cluster() -> SimCluster:
    """(0, 1, 2) -> (1, 3, 4) with R = 1: step 1 is (1, 3, 2), which drops the leader 0, so
    1 takes over; the way back to (0, 1, 2) keeps 1, which Kafka then leaves leading."""
    sim = SimCluster(5, bandwidth=50 * MB)
    sim.add_topic("l", [[0, 1, 2]], 2 * MB)
    return sim


def test_a_rollback_gives_leadership_back_to_the_original_leader(tmp_path):
    sim = leader_cluster()
    run = run_of(sim, Plan.of([Move(L0, (1, 3, 4))]), tmp_path)
    seen: list = []
    on_event(run, "step_completed", lambda: (seen.append(sim.partitions[L0].leader), run.cancel()))
    res = run.run()
    assert seen == [1] and res.cancelled == [L0]
    assert sim.assignment()[L0] == (0, 1, 2)
    assert sim.partitions[L0].leader == 0  # before: 1, the replica that took over mid-way
    assert [(e["leader"], e["previous"]) for e in events(tmp_path, "leader_elected")] == [(0, 1)]


def killed_after_the_leaders_step(tmp_path) -> SimCluster:
    """The CLI moves l-0 (0, 1, 2) -> (1, 3, 4) with R = 1 and is SIGKILLed right before its
    second step's Alter: l-0 at (1, 3, 2), led by 1. Returns the cluster as it was left."""
    bootstrap = sim_file(leader_cluster(), tmp_path)
    Plan.of([Move(L0, (1, 3, 4))]).write(str(tmp_path / "plan.json"))
    args = ["--execute", "--reassignment-json-file", str(tmp_path / "plan.json"), "--journal",
            str(tmp_path / "run.jsonl"), "--throttle", str(RATE), "--parallel-replica-count",
            "1", "--wait"]  # fmt: skip
    proc = cli(bootstrap, args, tmp_path, kill_at="alter_reassignments:2:before", fork=True)
    assert killed(proc), proc.stdout + proc.stderr
    sim = load(path_of(bootstrap))
    assert sim.assignment()[L0] == (1, 3, 2) and sim.partitions[L0].leader == 1
    return sim


def test_cancel_from_the_journal_gives_leadership_back_to_the_original_leader(tmp_path):
    sim = killed_after_the_leaders_step(tmp_path)
    res = cancel_mod.cancel(sim, journal=str(tmp_path / "run.jsonl"))
    assert res.cancelled == [L0] and not res.leader_not_restored
    assert sim.assignment()[L0] == (0, 1, 2) and sim.partitions[L0].leader == 0


def test_a_failed_leader_election_is_reported(tmp_path):
    sim = killed_after_the_leaders_step(tmp_path)
    sim.elect_preferred_leaders = lambda tps: dict.fromkeys(tps, "NOT_CONTROLLER")
    res = cancel_mod.cancel(sim, journal=str(tmp_path / "run.jsonl"))
    assert res.cancelled == [L0] and res.leader_not_restored == {L0: "NOT_CONTROLLER"}
    assert "original leader 0 could not be elected (NOT_CONTROLLER)" in "\n".join(res.lines())
