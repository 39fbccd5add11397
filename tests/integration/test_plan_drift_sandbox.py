"""Plans run as approved, on the sandbox: a plan made by `reassign-kit plan`
from a snapshot, one of its partitions then moved by Apache Kafka's own
kafka-reassign-partitions (ReassignPartitionsCommand from the sandbox's jars); `--execute`
refuses by name (exit 14) and nothing moves; with `--allow-drift` it runs to the plan."""

from __future__ import annotations

import json
import time

import pytest

from reassign_kit.cli import main as cli_main
from reassign_kit.model import Move, Plan, TopicPartition, is_complete
from reassign_kit.planner.record import PlanRecord, record_path
from reassign_kit.sandbox.kafka import run_kafka_class

pytestmark = pytest.mark.integration
TP = TopicPartition
OFFICIAL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def official(bootstrap: str, *args: str) -> str:
    proc = run_kafka_class(OFFICIAL, ["--bootstrap-server", bootstrap, *args], timeout=180)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def wait_assignment(gw, targets: dict[TopicPartition, tuple[int, ...]], timeout=120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        states = gw.describe_partitions(targets)
        if all(is_complete(t, states.get(tp)) for tp, t in targets.items()):
            return
        assert time.monotonic() < deadline, f"not complete: {states}"
        time.sleep(0.5)


def test_drift_refused_by_name_then_allowed(sandbox, bootstrap, gw, topic_name, tmp_path, capsys):
    topic = topic_name("drift")
    start = [(1, 2), (2, 3), (3, 4), (4, 1)]
    sandbox.create_topic(topic, assignment=start)
    try:
        sandbox.load(topic, mb_per_partition=0.1)
        snap, plan_file = tmp_path / "snap.json", tmp_path / "plan.json"
        assert (
            cli_main(
                ["snapshot", "--bootstrap-server", bootstrap, "--topics", topic]
                + ["--output", str(snap)]
            )
            == 0
        )
        assert (
            cli_main(
                ["plan", "--snapshot", str(snap), "--remove-brokers", "4"]
                + ["--engine", "local", "--output", str(plan_file), "--quiet"]
            )
            == 0
        )
        plan = Plan.read(str(plan_file))
        record = PlanRecord.read(record_path(str(plan_file)))
        assert record.plan_sha256 == plan.digest()
        # 2. Kafka's own tool moves one planned partition elsewhere (not to its target)
        moved = plan.moves[0]
        was = record.partitions[moved.tp]
        other = next(
            c for c in [(2, 1), (3, 1), (1, 3), (2, 3)] if c != was and c != tuple(moved.replicas)
        )
        side = tmp_path / "side.json"
        Plan.of([Move(moved.tp, other)]).write(str(side))
        official(bootstrap, "--reassignment-json-file", str(side), "--execute", "--additional")
        wait_assignment(gw, {moved.tp: other})
        official(bootstrap, "--reassignment-json-file", str(side), "--verify")
        capsys.readouterr()

        # 3. --execute refuses, naming the partition; nothing is sent
        base = ["--bootstrap-server", bootstrap, "--execute"]
        base += ["--reassignment-json-file", str(plan_file)]
        base += ["--expect-plan-hash", record.plan_sha256]
        code = cli_main([*base, "--rollback-file", str(tmp_path / "rb1.json")])
        err = capsys.readouterr().err
        assert code == 14, err
        assert f"partition {moved.tp}: replicas {list(was)} when planned, now {list(other)}" in err
        others = [tp for tp in record.partitions if tp != moved.tp]
        assert all(f"partition {tp}:" not in err for tp in others), err
        states = gw.describe_partitions(list(record.partitions))
        assert {tp: tuple(st.replicas) for tp, st in states.items() if tp != moved.tp} == {
            tp: record.partitions[tp] for tp in others
        }
        assert not any(st.reassigning for st in states.values())
        assert not (tmp_path / "rb1.json").exists()

        # 4. with --allow-drift it shows the drift and runs to the plan
        code = cli_main([*base, "--allow-drift", "--rollback-file", str(tmp_path / "rb2.json")])
        out = capsys.readouterr().out
        assert code == 0, out
        assert "--allow-drift" in out and str(moved.tp) in out
        targets = {m.tp: tuple(m.replicas) for m in plan}
        wait_assignment(gw, targets)
        code = cli_main(
            ["--bootstrap-server", bootstrap, "--verify"]
            + ["--reassignment-json-file", str(plan_file)]
        )
        assert code == 0, capsys.readouterr()
        # the plan file stays the official tool's format (its --verify reads it)
        assert set(json.loads(plan_file.read_text())) == {"version", "partitions"}
        out = official(bootstrap, "--reassignment-json-file", str(plan_file), "--verify")
        assert out.count("is completed") == len(plan), out
    finally:
        admin = sandbox.admin()  # kept: a client collected mid-call destroys its futures
        for f in admin.delete_topics([topic]).values():
            f.result(60)
