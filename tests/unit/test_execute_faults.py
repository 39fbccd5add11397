"""Execute's faults on the simulator: a run that fails at start changes nothing on the cluster,
a failed final throttle cleanup is reported as such, ``--on-interrupt cancel`` acts on
Ctrl-C / SIGTERM only, not on deadlines or failures, and more."""

from __future__ import annotations

import pytest

from reassign_kit.cluster.gateway import ErrorCode, PartitionError
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import (
    KafkaOperationError,
    ReassignmentInProgressError,
    RunError,
    UsageError,
)
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.operations import execute as ops
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TP = TopicPartition


def cluster(cls: type[SimCluster] = SimCluster) -> SimCluster:
    sim = cls(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], 2 * MB)
    return sim


def shifted(sim: SimCluster, tps) -> Plan:
    return Plan.of(Move(tp, tuple((b + 2) % 4 for b in sim.partitions[tp].replicas)) for tp in tps)


def run_of(sim, plan, tmp_path, **opts) -> Run:
    opts.setdefault("throttle", MB)
    return Run(sim, plan, ExecuteOptions(**opts), tmp_path / "run.jsonl", clock=sim.now,
               sleep=sim.sleep)  # fmt: skip


# ---------------------------------------------------------------- a failed start


@pytest.mark.parametrize("why", ["others in flight", "unknown partition"])
def test_a_run_failing_at_start_leaves_another_runs_throttles(tmp_path, why):
    sim = cluster()
    sim.stall(TP("a", 0))
    ops.execute(sim, shifted(sim, [TP("a", 0)]), throttle=MB, rollback_path=None)  # not ours
    before = sim.current_throttles()
    assert not before.is_empty()
    if why == "others in flight":
        plan, error = shifted(sim, [TP("a", 1), TP("a", 2)]), ReassignmentInProgressError
        opts = {}
    else:
        plan = Plan.of([*shifted(sim, [TP("a", 1)]), Move(TP("a", 9), (0, 1))])
        error, opts = UsageError, {"additional": True}
    with pytest.raises(error):
        run_of(sim, plan, tmp_path, **opts).run()
    assert sim.current_throttles() == before  # the other run's move stays throttled
    assert set(sim.list_reassignments()) == {TP("a", 0)}


# ---------------------------------------------------------------- a failed cleanup


class NoClearing(SimCluster):
    """A cluster on which removing a throttle config fails (a broker or the controller
    unreachable at the end of the run)."""

    def alter_topic_configs(self, changes):
        if any(v is None for kv in changes.values() for v in kv.values()):
            raise KafkaOperationError("alter configs of topic a: timed out after 30s")
        return super().alter_topic_configs(changes)


def test_a_failed_throttle_cleanup_is_reported_with_what_is_left(tmp_path):
    sim = cluster(NoClearing)
    # the run rides through the fault (retries, next polls) until its deadline
    run = run_of(sim, shifted(sim, [TP("a", 1)]), tmp_path, wait=True, run_deadline=60)
    with pytest.raises(KafkaOperationError):
        run.run()
    res = run.wait(0)
    assert res is not None and res.cleanup_error is not None
    assert res.exit_code == 8
    left = res.throttles_left
    assert "a" in left["leader_replicas"] and "a" in left["follower_replicas"]
    lines = res.cleanup_lines("reassign-kit --bootstrap-server b:9092 --verify ...")
    assert "FAILED" in lines[0] and "topic(s) a" in lines[0] and "broker(s)" in lines[0]
    assert lines[1].endswith("reassign-kit --bootstrap-server b:9092 --verify ...")
    assert not sim.current_throttles().is_empty()  # what the report says is indeed there
    events = read_events(tmp_path / "run.jsonl")
    assert events[-1]["event"] == "run_finished" and events[-1]["throttles_left"] == left
    assert any("throttle cleanup failed" in (e.get("message") or "") for e in events)


def test_a_clean_run_has_no_cleanup_error(tmp_path):
    sim = cluster()
    res = run_of(sim, shifted(sim, [TP("a", 1)]), tmp_path, wait=True).run()
    assert res.cleanup_error is None and res.cleanup_lines() == [] and res.exit_code == 0
    assert sim.current_throttles().is_empty()


# ---------------------------------------------------------------- --on-interrupt cancel


def test_on_interrupt_cancel_leaves_moves_alone_on_a_deadline(tmp_path):
    sim = cluster()
    sim.stall(TP("a", 1))
    run = run_of(sim, shifted(sim, [TP("a", 1)]), tmp_path, cancel_on_stop=True,
                 run_deadline=5, on_deadline="stop", wait=True)  # fmt: skip
    res = run.run()
    assert res.state == "deadline" and res.exit_code == 7
    assert TP("a", 1) in sim.list_reassignments()  # not cancelled: no Ctrl-C / SIGTERM
    assert not any(e["event"] == "cancelled" for e in read_events(tmp_path / "run.jsonl"))


def test_on_interrupt_cancel_leaves_moves_alone_on_a_failure(tmp_path):
    sim = cluster()
    sim.stall(TP("a", 1))
    sim.fail_on[TP("a", 2)] = "NOT_CONTROLLER"
    plan = shifted(sim, [TP("a", 1), TP("a", 2)])
    run = run_of(sim, plan, tmp_path, cancel_on_stop=True)
    with pytest.raises(RunError):
        run.run()
    assert TP("a", 1) in sim.list_reassignments()
    assert not any(e["event"] == "cancelled" for e in read_events(tmp_path / "run.jsonl"))


def test_on_interrupt_cancel_still_cancels_on_stop(tmp_path):
    sim = cluster()
    sim.stall(TP("a", 1))
    run = run_of(sim, shifted(sim, [TP("a", 1)]), tmp_path, cancel_on_stop=True, wait=True)
    run.subscribe(lambda e: run.stop() if e["event"] == "step_submitted" else None)
    res = run.run()
    assert res.state == "cancelled" and res.cancelled == [TP("a", 1)]
    assert TP("a", 1) not in sim.list_reassignments()


# ---------------------------------------------------------------- completes while cancelled


class FinishesFirst(SimCluster):
    """A cluster on which every move in flight completes just before a cancel reaches the
    controller (the cancel then answers "no reassignment in progress")."""

    def alter_reassignments(self, targets, allow_replication_factor_change=True):
        if targets and all(t is None for t in targets.values()):
            for tp in targets:
                sp = self.partitions[tp]
                if sp.target is not None:
                    sp.isr = list(dict.fromkeys([*sp.isr, *sp.target]))
                    self._finish(sp)
        return super().alter_reassignments(targets, allow_replication_factor_change)


def test_a_move_completing_while_cancelled_is_reported_completed(tmp_path):
    from reassign_kit.moves.table import replay

    sim = cluster(FinishesFirst)
    sim.stall(TP("a", 1))
    plan = shifted(sim, [TP("a", 1)])
    run = run_of(sim, plan, tmp_path, wait=True)
    run.subscribe(
        lambda e: run.stop(cancel_inflight=True) if e["event"] == "step_submitted" else None
    )
    res = run.run()
    assert res.completed == [TP("a", 1)] and res.cancelled == []
    events = read_events(tmp_path / "run.jsonl")
    assert [e["event"] for e in events if e.get("topic")].count("completed") == 1
    assert not any(e["event"] in ("cancelled", "error") and e.get("topic") for e in events)
    assert replay(events)[TP("a", 1)] == "done"


@pytest.mark.parametrize(
    "error, expected",
    [
        (
            PartitionError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "NO_REASSIGNMENT_IN_PROGRESS"),
            True,
        ),
        (PartitionError(ErrorCode.of(85), "NoReassignmentInProgress: no reassignment"), True),
        (PartitionError(ErrorCode.NOT_CONTROLLER, "NotController: not the controller"), False),
        ("NoReassignmentInProgress: a text alone decides nothing", False),
        (None, False),
    ],
)
def test_no_reassignment_in_progress_by_code_not_by_spelling(error, expected):
    from reassign_kit.cluster.views import no_reassignment_in_progress

    assert no_reassignment_in_progress(error) is expected


# ---------------------------------------------------------------- metadata lag


class LaggingMetadata(SimCluster):
    """After a move ends, the partition's metadata shows the intermediate replica set (target
    plus the replicas being removed), not reassigning, for ``lag`` seconds (KIP-860's race)."""

    lag = 2.0

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.ended: dict[TopicPartition, tuple[float, tuple[int, ...]]] = {}

    def _finish(self, sp):
        if sp.target is not None:
            shown = (*sp.target, *[b for b in sp.original or () if b not in sp.target])
            self.ended[sp.tp] = (self.t, shown)
        super()._finish(sp)

    def describe_partitions(self, tps):
        from dataclasses import replace

        out = super().describe_partitions(tps)
        for tp, st in out.items():
            if tp in self.ended and self.t - self.ended[tp][0] < self.lag:
                out[tp] = replace(st, replicas=self.ended[tp][1], adding=(), removing=())
        return out


def test_metadata_lag_shorter_than_the_settle_window_is_not_a_lost_move(tmp_path):
    sim = cluster(LaggingMetadata)
    res = run_of(sim, shifted(sim, [TP("a", 1)]), tmp_path, wait=True, poll_interval_ms=200).run()
    assert res.state == "done" and res.completed == [TP("a", 1)] and res.failed == {}
    lagged = [e for e in read_events(tmp_path / "run.jsonl") if e["event"] == "failed"]
    assert lagged == []


# ---------------------------------------------------------------- transient faults


class Flaky(SimCluster):
    """``list_reassignments`` fails ``failures`` times in a row once ``after`` calls went
    through (a controller failover, a request timeout)."""

    after, failures = 3, 3

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.n = 0

    def list_reassignments(self):
        self.n += 1
        if self.after < self.n <= self.after + self.failures:
            raise KafkaOperationError("list partition reassignments: timed out after 30s")
        return super().list_reassignments()


# within one call's retries (4 attempts); across three polls (each call's 4 attempts fail)
@pytest.mark.parametrize("failures, retries, failed_polls", [(3, 3, 0), (12, 9, 3)])
def test_transient_admin_errors_do_not_end_a_run(tmp_path, failures, retries, failed_polls):
    sim = cluster(Flaky)
    sim.failures = failures
    plan = shifted(sim, [TP("a", 1), TP("a", 2)])
    res = run_of(sim, plan, tmp_path, batch_size=1, wait=True).run()
    assert res.state == "done" and len(res.completed) == 2
    events = read_events(tmp_path / "run.jsonl")
    journaled = [e for e in events if e["event"] == "retry"]
    assert len(journaled) == retries and {e["call"] for e in journaled} == {"list_reassignments"}
    assert [e["attempt"] for e in journaled[:3]] == [1, 2, 3]
    assert sum("poll failed" in (e.get("message") or "") for e in events) == failed_polls
    assert sim.current_throttles().is_empty()


def test_an_outage_past_the_run_deadline_ends_the_run(tmp_path):
    sim = cluster(Flaky)
    sim.failures = 10_000
    run = run_of(sim, shifted(sim, [TP("a", 1)]), tmp_path, wait=True, run_deadline=30)
    with pytest.raises(KafkaOperationError):
        run.run()
    assert run.state == "failed"


class OneBrokerBlind(SimCluster):
    """DescribeLogDirs fails for any request that includes broker 3."""

    def describe_log_dirs(self, brokers, *a, **kw):
        if 3 in set(brokers):
            raise KafkaOperationError("describe log dirs of 3: timed out after 30s")
        return super().describe_log_dirs(brokers, *a, **kw)


def test_one_broker_failing_describe_log_dirs_does_not_make_healthy_moves_stuck(tmp_path):
    sim = cluster(OneBrokerBlind)
    plan = shifted(sim, [TP("a", 1), TP("a", 2)])  # a-1 copies to broker 3, a-2 does not
    res = run_of(sim, plan, tmp_path, wait=True, throttle=MB, stuck_after=1.0,
                 on_deadline="cancel").run()  # fmt: skip
    assert res.state == "done" and res.cancelled == [] and len(res.completed) == 2
    events = read_events(tmp_path / "run.jsonl")
    assert not any(e["event"] == "stuck" for e in events)
    assert any("broker(s) 3" in (e.get("message") or "") for e in events)


# ---------------------------------------------------------------- a fault in the final steps


class BlipAtTheEnd(SimCluster):
    """Listing reassignments fails ``blips`` times once the run is stopping (a controller
    failover right at the end): more often than one call's own retries ride out."""

    stopping = False
    blips = 0

    def list_reassignments(self, *a, **kw):
        if self.stopping and self.blips > 0:
            self.blips -= 1
            raise KafkaOperationError("list reassignments: timed out after 30s")
        return super().list_reassignments(*a, **kw)


def test_a_transient_error_in_the_final_steps_is_retried_and_the_throttles_cleaned(tmp_path):
    """Before: the error in the finish's listing skipped the throttle cleanup (rates left on
    the brokers, no cleanup error reported, exit 130 from the CLI)."""
    sim = cluster(BlipAtTheEnd)
    run = run_of(sim, shifted(sim, [TP("a", 1)]), tmp_path, wait=True, throttle=MB)

    def on(e):
        if e["event"] == "completed":  # the run's end comes next
            sim.stopping, sim.blips = True, 6  # the gateway's own retries: 4 attempts

    run.subscribe(on)
    res = run.run()
    assert sim.blips == 0, "the blips happened"
    assert res.state == "done" and res.cleanup_error is None and res.exit_code == 0
    assert sim.current_throttles().is_empty(), "no throttle outlives its moves"
    assert any(e["event"] == "retry" for e in read_events(tmp_path / "run.jsonl"))


class NeverAtTheEnd(BlipAtTheEnd):
    def list_reassignments(self, *a, **kw):
        if self.stopping:
            raise KafkaOperationError("list reassignments: timed out after 30s")
        return SimCluster.list_reassignments(self, *a, **kw)


def test_a_cleanup_that_cannot_finish_exits_8_naming_what_is_left_and_the_command(tmp_path):
    sim = cluster(NeverAtTheEnd)
    run = run_of(sim, shifted(sim, [TP("a", 1)]), tmp_path, wait=True, throttle=MB)

    def on(e):
        if e["event"] == "step_submitted":
            sim.stopping = True
            run.stop()

    run.subscribe(on)
    res = run.run()
    assert res.cleanup_error is not None and res.exit_code == 8
    assert "throttles --clean --journal" in res.cleanup_error
    assert "rates on broker(s)" in res.cleanup_error


def test_the_cli_interrupted_with_a_cleanup_left_exits_8_not_130(tmp_path, monkeypatch, capsys):
    """Ctrl-C / SIGTERM, then a cleanup that cannot finish: exit 8 (someone must act),
    with the command that cleans up; it was 130."""
    import os
    import signal

    from reassign_kit.cli import main

    sim = cluster(NeverAtTheEnd)
    plan = shifted(sim, [TP("a", 1)])
    path = tmp_path / "plan.json"
    plan.write(str(path))
    monkeypatch.setattr(ops, "connect", lambda *a, **k: sim)
    real_alter = sim.alter_reassignments

    def alter(*a, **kw):  # the first submission in, then Ctrl-C
        out = real_alter(*a, **kw)
        sim.stopping = True
        os.kill(os.getpid(), signal.SIGINT)
        return out

    monkeypatch.setattr(sim, "alter_reassignments", alter)
    code = main(
        ["--bootstrap-server", "x:9092", "--execute", "--reassignment-json-file", str(path),
         "--throttle", str(MB), "--journal", str(tmp_path / "j.jsonl"), "--wait",
         "--rollback-file", str(tmp_path / "rb.json")]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 8, err
    assert "throttles --clean" in err
