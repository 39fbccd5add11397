"""KIP-435 steps and the KIP-179 progress report on the real sandbox cluster.

The steps run through ``execute.Run`` in step mode (``steps.make_steps_for``) while a
watcher polls the ISR. The RF=3 move to three new brokers needs six brokers: a six-broker
sandbox of this module's own; the shared four-broker one moves RF=2 to two new brokers."""

from __future__ import annotations

import json
import time

import pytest
from steps_scenarios import (
    AckedProducer,
    consume_all,
    create_topic,
    run_steps,
    watch_throttled_move,
)

from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.watch.progress import progress
from reassign_kit.watch.report import (
    IN_SYNC,
    NOT_HOSTED,
    UNKNOWN_BROKER,
    UNKNOWN_PARTITION,
    UNKNOWN_TOPIC,
)

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sandbox6(tmp_path_factory):
    from reassign_kit.sandbox.sandbox import Sandbox

    with Sandbox.start(brokers=6, dir=tmp_path_factory.mktemp("sandbox6")) as sb:
        yield sb


def assert_steps_under_load(sb, topic, start, target, expected, out_dir) -> None:
    """Move one partition (min.insync.replicas=2) with R=1 while an acks=all producer writes:
    the planner's printed steps are journalled and reached in order, the ISR never drops below
    2, and no acknowledged message is lost."""
    bootstrap = sb.bootstrap_servers
    tp = TopicPartition(topic, 0)
    create_topic(sb, topic, [list(start)], {"min.insync.replicas": "2"})
    producer = AckedProducer(bootstrap, topic)
    producer.start()
    try:
        run = run_steps(bootstrap, tp, target, 1, str(out_dir / "journal.jsonl"))
    finally:
        producer.stop()
    (out_dir / "steps.txt").write_text("\n".join(run.printed) + "\n")
    assert run.planned == expected
    assert run.journal_steps == run.planned
    assert run.observed_sets == run.planned
    # the watcher must have watched: it polled, from the start set through at least one change
    assert run.isr_polls > 0, "the ISR watcher never polled"
    assert run.isr_sets[0] == tuple(start) and len(run.isr_sets) >= 2, run.isr_sets
    assert run.min_isr_seen >= 2, f"ISR fell to {run.min_isr_seen} during the steps"
    assert producer.errors == []
    got = consume_all(bootstrap, topic, 0, len(producer.acked))
    lost = producer.acked - got
    assert producer.acked and not lost, f"{len(lost)} acknowledged messages lost"


def test_rf3_to_three_new_brokers_one_replica_at_a_time(sandbox6, topic_name, out_dir):
    # new preferred leader first, then one replica at a time, ending at the target in order
    expected = [(4, 1, 2, 3), (4, 2, 3), (4, 5, 3), (4, 5, 6)]
    assert_steps_under_load(
        sandbox6, topic_name("steps-rf3"), (1, 2, 3), (4, 5, 6), expected, out_dir
    )


def test_steps_keep_min_isr_and_lose_no_acked_message(sandbox, gw, topic_name, out_dir):
    topic = topic_name("steps")
    assert_steps_under_load(sandbox, topic, (1, 2), (3, 4), [(3, 1, 2), (3, 2), (3, 4)], out_dir)
    assert gw.min_insync_replicas([topic]) == {topic: 2}


def test_progress_behind_in_sync_done_with_eta(sandbox, bootstrap, gw, topic_name, out_dir):
    topic = topic_name("progress")
    tp = TopicPartition(topic, 0)
    create_topic(sandbox, topic, [[1]])
    sandbox.load(topic, mb_per_partition=6)
    for target in ((2,), (1,), (2,)):
        reports, submitted, done_ts = watch_throttled_move(gw, tp, target, rate_bps=1024 * 1024)
        if sum(any(x.kind == "behind" for x in r.replicas) for r in reports) >= 3:
            break
        # over in a blink: another test's cleanup cleared the shared brokers' throttle rates
        # at the wrong moment; move the partition back and watch once more
    rows = [
        (
            r.ts - submitted,
            r.status,
            r.replicas[0].status,
            r.pct,
            r.eta_s,
        )
        for r in reports
    ]
    (out_dir / "progress.json").write_text(json.dumps(rows, indent=1))
    first_status = rows[0][2]
    broker2 = [s for _, _, s, _, _ in rows[1:]]
    assert first_status == NOT_HOSTED
    assert any(s.startswith("Behind: ") and "bytes" in s for s in broker2)
    first_behind = next(i for i, s in enumerate(broker2) if s.startswith("Behind"))
    first_in_sync = next(i for i, s in enumerate(broker2) if s == IN_SYNC)
    assert first_behind < first_in_sync
    assert all(s == IN_SYNC for s in broker2[first_in_sync:])
    assert reports[-1].status == "Done" and reports[-1].pct == 100.0
    pcts = [r.pct for r in reports]
    assert pcts == sorted(pcts), pcts
    # ETAs are offered while the copy runs and never negative; how close they come to the
    # real finish is measured in bench/ (bench_steps.py, bench_eta.py), not asserted here.
    assert [r for r in reports if r.eta_s and not r.done], rows
    assert all(r.eta_s is None or r.eta_s >= 0 for r in reports)


def test_progress_names_unknown_topic_partition_and_broker(sandbox, gw, topic_name):
    topic = topic_name("unknown")
    create_topic(sandbox, topic, [[1, 2]])
    # the broker gw asks may learn of the new topic a moment after the controller
    deadline = time.monotonic() + 30
    while gw.topic_partition_counts([topic]).get(topic) != 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    plan = Plan.of(
        [
            Move(TopicPartition(topic_name("no-such-topic"), 0), (1,)),
            Move(TopicPartition(topic, 99), (1,)),
            Move(TopicPartition(topic, 0), (1, 2, 42)),
        ]
    )
    rep = progress(gw, plan)
    by = {(r.topic, r.partition, r.broker): r.status for r in rep.replicas}
    assert by[(topic, 99, 1)] == UNKNOWN_PARTITION
    assert by[(topic, 0, 42)] == UNKNOWN_BROKER
    assert by[(topic, 0, 1)] == IN_SYNC and by[(topic, 0, 2)] == IN_SYNC
    assert [s for (t, _, _), s in by.items() if t.startswith("no-such-topic")] == [UNKNOWN_TOPIC]
    assert not rep.done


def test_cli_progress_prints_the_report_and_exits_0(
    sandbox, bootstrap, topic_name, tmp_path, capsys
):
    from reassign_kit.cli.reassign import main

    topic = topic_name("cliprog")
    create_topic(sandbox, topic, [[1, 2]])
    f = tmp_path / "plan.json"
    Plan.of([Move(TopicPartition(topic, 0), (2, 3)), Move(TopicPartition(topic, 7), (1,))]).write(
        str(f)
    )
    argv = ["--progress", "--reassignment-json-file", str(f), "--bootstrap-server", bootstrap]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["Topic", "Partition", "Broker", "Status"]
    assert "Broker does not host this partition" in out and UNKNOWN_PARTITION in out
    assert f"{topic}-0: Pending" in out
    assert main([*argv, "--output", "json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["status"] == "Pending" and len(rep["replicas"]) == 3


def test_cli_steps_refuse_an_invalid_plan_before_sending(
    sandbox, bootstrap, gw, topic_name, tmp_path, capsys
):
    from reassign_kit.cli.reassign import main

    topic = topic_name("clibad")
    create_topic(sandbox, topic, [[1, 2]])
    f = tmp_path / "plan.json"
    Plan.of(
        [Move(TopicPartition(topic, 0), (42, 2)), Move(TopicPartition(topic_name("gone"), 0), (1,))]
    ).write(str(f))
    rb = tmp_path / "rollback.json"
    argv = ["--execute", "--parallel-replica-count", "1", "--reassignment-json-file", str(f)]
    code = main([*argv, "--bootstrap-server", bootstrap, "--rollback-file", str(rb)])
    err = capsys.readouterr().err
    assert code == 3 and "unknown-broker" in err and "unknown-topic" in err
    assert not rb.exists()
    assert gw.describe_partitions([TopicPartition(topic, 0)])[
        TopicPartition(topic, 0)
    ].replicas == (1, 2)
