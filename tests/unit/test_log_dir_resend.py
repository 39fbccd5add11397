"""A move between log dirs that the broker accepted and then dropped (no future replica, the
replica still in its old dir: Kafka 4.3.1 did it in two CI runs) is sent again by a paced run,
a bounded number of times; without that the run waited for it forever."""

from __future__ import annotations

import pytest

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import RunError
from reassign_kit.model import Move, Plan
from reassign_kit.moves.journal import read_events
from reassign_kit.run.logdirs import MAX_RESENDS
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

HORIZON_S = 3600.0  # simulated: the moves take seconds; a run still going then waits forever


def dir_only_plan(sim: SimCluster) -> Plan:
    """Every partition's first replica to its broker's second log dir, replicas unchanged."""
    return Plan.of(
        Move(tp, tuple(sp.replicas), (sim.log_dirs_of(sp.replicas[0])[1], "any"))
        for tp, sp in sim.partitions.items()
    )


def dropping(sim: SimCluster, times: int) -> list:
    """At the first ``times`` sleeps that find a future replica, the broker drops it (as
    AlterReplicaLogDirs to the replica's current dir does); past HORIZON_S the run fails."""
    dropped: list = []
    real_sleep = sim.sleep

    def sleep(seconds: float) -> None:
        if sim.now() > HORIZON_S:
            raise AssertionError("the run waited past the horizon for a dropped move")
        for sp in sim.partitions.values():
            for b in list(sp.future):
                if len(dropped) < times:
                    sim.alter_replica_log_dirs({(sp.tp, b): sp.dirs.get(b, sim.log_dirs_of(b)[0])})
                    dropped.append((sp.tp, b))
        real_sleep(seconds)

    sim.sleep = sleep
    return dropped


def run(sim: SimCluster, plan: Plan, tmp_path) -> Run:
    return Run(
        sim,
        plan,
        ExecuteOptions(throttle=MB, log_dir_throttle=MB // 4, batch_size=2, wait=True),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )


def cluster() -> SimCluster:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p, (p + 1) % 4] for p in range(2)], MB)
    return sim


def test_a_dropped_log_dir_move_is_sent_again_and_completes(tmp_path):
    sim = cluster()
    plan = dir_only_plan(sim)
    dropped = dropping(sim, 1)
    res = run(sim, plan, tmp_path).run()
    assert len(dropped) == 1
    assert res.state == "done"
    for m in plan:
        sp = sim.partitions[m.tp]
        assert sp.dirs[m.replicas[0]] == m.log_dirs[0] and not sp.future
    ev = read_events(tmp_path / "run.jsonl")
    resent = [e for e in ev if e["event"] == "log_dir_resent"]
    (tp, b) = dropped[0]
    assert [(e["partition"], e["broker"], e["resend"]) for e in resent] == [(tp.partition, b, 1)]
    assert resent[0]["found_in"] == sim.log_dirs_of(b)[0]


def test_a_move_dropped_every_time_fails_its_partition_naming_the_replica(tmp_path):
    sim = cluster()
    plan = dir_only_plan(sim)
    dropped = dropping(sim, 10**6)
    with pytest.raises(RunError, match="no future replica"):
        run(sim, plan, tmp_path).run()
    ev = read_events(tmp_path / "run.jsonl")
    resent = [e for e in ev if e["event"] == "log_dir_resent"]
    assert resent and max(e["resend"] for e in resent) == MAX_RESENDS
    assert len(dropped) >= MAX_RESENDS + 1
    assert not sim.broker_cfg  # the failed run left no throttle


def test_both_replicas_of_a_partition_failing_in_one_round_fail_it_once(tmp_path):
    """Two log-dir targets of one partition past their last send (or their --timeout) in
    the same round: the partition fails once with the first one's reason (a second fail of
    a failed move raised IllegalTransition, and the run failed with that instead)."""
    sim = cluster()
    plan = Plan.of(
        Move(tp, tuple(sp.replicas), tuple(sim.log_dirs_of(b)[1] for b in sp.replicas))
        for tp, sp in sim.partitions.items()
    )
    dropping(sim, 10**6)
    with pytest.raises(RunError, match="no future replica") as got:
        run(sim, plan, tmp_path).run()
    assert "IllegalTransition" not in str(got.value) and "cannot fail" not in str(got.value)
    failed = [e for e in read_events(tmp_path / "run.jsonl") if e["event"] == "failed"]
    assert sorted(e["partition"] for e in failed) == [0, 1]  # each partition once


def test_both_replicas_timing_out_in_one_round_fail_the_partition_once(tmp_path):
    sim = cluster()
    plan = Plan.of(
        Move(tp, tuple(sp.replicas), tuple(sim.log_dirs_of(b)[1] for b in sp.replicas))
        for tp, sp in sim.partitions.items()
    )
    sim.alter_replica_log_dirs = lambda a: dict.fromkeys(a, "ReplicaNotAvailable")
    opts = ExecuteOptions(throttle=MB, batch_size=2, wait=True, timeout_s=2)
    r = Run(sim, plan, opts, journal_path=tmp_path / "run.jsonl", clock=sim.now, sleep=sim.sleep)
    with pytest.raises(RunError, match="--timeout") as got:
        r.run()
    assert "cannot fail" not in str(got.value)
    failed = [e for e in read_events(tmp_path / "run.jsonl") if e["event"] == "failed"]
    assert sorted(e["partition"] for e in failed) == [0, 1]


def test_one_read_without_the_future_replica_is_not_a_drop(tmp_path):
    """A DescribeLogDirs that lands while the broker swaps a finished future log in can show
    the replica in its old dir and no future replica (seen on the sandbox as a move sent again
    0.3 s before it completed; at ``MAX_RESENDS`` such reads would fail a move that is done).
    One such read is not a drop: the run sends nothing again and completes."""
    sim = cluster()
    plan = dir_only_plan(sim)
    real = sim.describe_log_dirs
    hidden: list = []

    def describe(brokers, tps=None):
        rows = list(real(brokers, tps))
        fut = [r for r in rows if r.is_future and (r.tp, r.broker) not in hidden]
        if not fut:
            return rows
        hidden.append((fut[0].tp, fut[0].broker))  # this one read misses the future log
        return [r for r in rows if r is not fut[0]]

    sim.describe_log_dirs = describe
    res = run(sim, plan, tmp_path).run()
    assert res.state == "done" and len(hidden) == len(plan)
    for m in plan:
        assert sim.partitions[m.tp].dirs[m.replicas[0]] == m.log_dirs[0]
    ev = read_events(tmp_path / "run.jsonl")
    assert [e for e in ev if e["event"] == "log_dir_resent"] == []
