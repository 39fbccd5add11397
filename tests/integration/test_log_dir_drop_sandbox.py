"""A move between log dirs that the broker accepted and then no longer has (no future replica,
the replica still in its old dir). Kafka 4.3.1 did it by itself in two fresh-clone CI runs
(test_core's log-dir test); here it is made to happen, deterministically, by what another tool
would send: AlterReplicaLogDirs to the replica's current dir, which removes the future replica.

- drop-in: --verify says the replica is not moving and that --execute with the plan sends it
  again (exit 11); --execute again completes it; no throttle is left.
- paced: the run sends it again itself (journal ``log_dir_resent``) and completes; before, it
  waited for the move forever."""

from __future__ import annotations

import pytest
from compat_checks import cli as dropin
from test_core import assert_no_throttle_left
from test_paced import cleanup, paced_argv, run_cli
from waits import wait_until

from reassign_kit import errors
from reassign_kit.cluster import views
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events

pytestmark = pytest.mark.integration
SLOW = 20_000  # B/s: past the first unthrottled fetch (1 MiB), 2 MiB take minutes
MB = 3  # MiB in the partition


def one_replica_topic(sandbox, gw, topic_name, prefix: str):
    """A 1-replica partition with MB MiB, its broker, its dir and the broker's other dir. On
    the lowest broker id: every drop Kafka made by itself in the full suite (3 of 3: two
    fresh-clone runs of test_core, one of this test's second --execute) was on broker 4, a
    move from data-1 to data-0; what this test checks is the tool's answer to a drop it makes
    itself, not Kafka's."""
    topic = topic_name(prefix)
    first = min(b["id"] for b in sandbox.brokers)
    sandbox.create_topic(topic, assignment=[[first]])
    sandbox.load(topic, mb_per_partition=MB)
    tp = TopicPartition(topic, 0)
    b = gw.describe_partitions([tp])[tp].replicas[0]
    dirs = gw.broker_log_dirs()
    cur, _ = views.replica_log_dirs(gw, [tp], dirs)
    other = next(d for d in dirs[b] if d != cur[(tp, b)])
    return tp, b, cur[(tp, b)], other


def drop_when_moving(gw, tp: TopicPartition, b: int, orig: str) -> None:
    """Wait for the future replica, then remove it as another tool would."""
    wait_until(
        lambda: (tp, b) in views.replica_log_dirs(gw, [tp], {b})[1], 60, "the future replica"
    )
    assert gw.alter_replica_log_dirs({(tp, b): orig}) == {(tp, b): None}
    cur, fut = views.replica_log_dirs(gw, [tp], {b})
    assert cur[(tp, b)] == orig and not fut


def test_dropin_verify_names_a_dropped_move_and_execute_sends_it_again(
    sandbox, gw, bootstrap, capsys, topic_name, tmp_path
):
    tp, b, orig, other = one_replica_topic(sandbox, gw, topic_name, "drop-dropin")
    plan = str(tmp_path / "plan.json")
    Plan.of([Move(tp, (b,), (other,))]).write(plan)
    execute = ("--execute", "--reassignment-json-file", plan, "--timeout", "30000", "--additional")

    def cli(*argv: str) -> tuple[int, str, str]:
        return dropin(bootstrap, capsys, *argv)

    try:
        code, out, _ = cli(*execute, "--replica-alter-log-dirs-throttle", str(SLOW))
        assert code == 0, out
        drop_when_moving(gw, tp, b, orig)
        code, out, _ = cli("--verify", "--reassignment-json-file", plan)
        assert code == errors.EXIT_MISMATCH, out
        assert (
            f"Replica {tp.topic}-0 on broker {b} is in {orig}, not in {other}, and not moving there"
            in out
            and "--execute with this plan sends it again." in out
        ), out
        code, out, _ = cli(*execute, "--replica-alter-log-dirs-throttle", "100000000")
        assert code == 0, out

        def done():
            code, out, _ = cli("--verify", "--reassignment-json-file", plan)
            assert code in (0, errors.EXIT_IN_PROGRESS), out
            return code == 0 and out

        out = wait_until(done, 120, "the move sent again")
        assert f"Reassignment of replica {tp.topic}-0 on broker {b} to {other} is completed." in out
        assert_no_throttle_left(gw, tp.topic)
    except BaseException:
        gw.clear_throttles([tp.topic], {b})
        raise


def test_paced_run_sends_a_dropped_move_again_and_completes(
    sandbox, gw, topic_name, tmp_path, bootstrap
):
    tp, b, orig, other = one_replica_topic(sandbox, gw, topic_name, "drop-paced")
    plan = str(tmp_path / "plan.json")
    Plan.of([Move(tp, (b,), (other,))]).write(plan)
    journal = str(tmp_path / "run.jsonl")
    p = run_cli(
        bootstrap,
        *paced_argv(plan, journal, tmp_path, "--throttle", "50000000"),
        *("--replica-alter-log-dirs-throttle", "500000", "--timeout", "30000"),
    )
    try:
        drop_when_moving(gw, tp, b, orig)
        out, _ = p.communicate(timeout=180)
        assert p.returncode == 0, out
        ev = read_events(journal)
        resent = [e for e in ev if e["event"] == "log_dir_resent"]
        assert [(e["partition"], e["broker"], e["log_dir"], e["found_in"]) for e in resent] == [
            (0, b, other, orig)
        ], resent
        assert len([e for e in ev if e["event"] == "log_dir_started"]) == 2
        cur, fut = views.replica_log_dirs(gw, [tp], {b})
        assert cur[(tp, b)] == other and not fut
        assert_no_throttle_left(gw, tp.topic)
    finally:
        if p.poll() is None:
            p.kill()
        cleanup(bootstrap, plan)
