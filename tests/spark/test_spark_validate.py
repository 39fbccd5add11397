"""The Spark validator agrees with the in-process validator (verdict and messages), and the
planner on Spark gives the very plan the in-process planner gives."""

from __future__ import annotations

import json
import random

import pytest
from spark_snapshots import random_snapshot

from reassign_kit.cli.plan import main as plan_main
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.planner.in_process import plan_in_process
from reassign_kit.planner.params import PlanParams
from reassign_kit.planner.rules import RuleContext, plan_problems_offline
from reassign_kit.spark.planner import plan_and_validate_spark, plan_spark
from reassign_kit.spark.validate import validate_spark

pytestmark = pytest.mark.spark


def _bad_plan(snap, seed: int) -> Plan:
    """A plan with a bit of everything wrong, and some right."""
    rnd = random.Random(seed)
    moves = {}
    ids = snap.broker_ids()
    for p in rnd.sample(list(snap.partitions), 40):
        kind = rnd.randrange(6)
        reps = list(p.replicas)
        if kind == 0:
            reps[-1] = 99  # unknown broker
        elif kind == 1:
            reps = reps + [next(b for b in ids if b not in reps)]  # RF change
        elif kind == 2:
            reps = [reps[0]] + [b for b in ids if b != reps[0]][: len(reps) - 1]  # maybe one rack
        elif kind == 3:
            reps = list(reversed(reps))  # fine
        elif kind == 4:
            reps = [1] + [b for b in reps if b != 1][: len(reps) - 1]  # removed broker 1
        moves[p.tp] = Move(p.tp, tuple(reps))
    moves[TopicPartition("nope", 0)] = Move(TopicPartition("nope", 0), (2, 77))
    moves[TopicPartition("t0", 10_000)] = Move(TopicPartition("t0", 10_000), (2, 3, 4))
    moves[TopicPartition("t1", 0)] = Move(TopicPartition("t1", 0), (2, 3, 4), ("/x", "any", "/y"))
    return Plan.of(moves.values())


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("disallow", [False, True])
def test_spark_and_in_process_validators_agree(spark, seed, disallow):
    snap = random_snapshot(seed)
    ctx = RuleContext(snap.racks(), frozenset([1]), {"t2": 3})
    plan = _bad_plan(snap, seed)
    local = plan_problems_offline(plan, snap, ctx, disallow)
    remote = validate_spark(spark, snap, plan, ctx, disallow)
    assert local, "the bad plan must have problems"
    assert [str(p) for p in remote] == [str(p) for p in local]
    rules = {p.rule for p in local}
    assert {"unknown-broker", "unknown-topic", "partition-out-of-range", "removed-broker"} <= rules


@pytest.mark.parametrize(
    "params",
    [
        PlanParams(remove_brokers=(1,)),
        PlanParams(),
        PlanParams(remove_brokers=(2, 3), balance=("replicas", "leaders", "bytes")),
        PlanParams(replication_factor=2, rf_topics=("t0",)),
    ],
    ids=["decommission", "rebalance", "two-racks-shrink", "rf-decrease"],
)
def test_spark_planner_gives_the_in_process_plan(spark, params):
    snap = random_snapshot(7)
    local = plan_in_process(snap, params)
    remote, problems = plan_and_validate_spark(spark, snap, params)
    assert remote.plan == local.plan
    assert remote.moved_replicas == local.moved_replicas
    assert remote.lower_bound == local.lower_bound
    assert remote.leader_balance == local.leader_balance is not None
    assert problems == [] == plan_problems_offline(local.plan, snap, local.prepared.ctx)


def test_parquet_snapshot_plans_like_json(spark, tmp_path):
    snap = random_snapshot(11)
    path = str(tmp_path / "s.parquet")
    snap.write(path)
    a = plan_spark(spark, path, PlanParams(remove_brokers=(4,)))
    b = plan_in_process(snap, PlanParams(remove_brokers=(4,)))
    assert a.plan.digest() == b.plan.digest()


def test_validate_cli_on_spark_lists_every_problem(spark, tmp_path, capsys):
    snap = random_snapshot(5)
    s = tmp_path / "s.json"
    snap.write(str(s))
    plan = _bad_plan(snap, 5)
    p = tmp_path / "plan.json"
    plan.write(str(p))
    from reassign_kit.cli import main

    rc = main(
        ["validate", "--snapshot", str(s), "--reassignment-json-file", str(p), "--engine", "spark"]
    )
    err = capsys.readouterr().err
    assert rc == 3
    local = plan_problems_offline(plan, snap)
    assert f"({len(local)} problem(s))" in err
    for prob in local:
        assert str(prob) in err
    # a good plan passes, on Spark and in process
    good = tmp_path / "good.json"
    assert (
        plan_main(
            [
                "plan",
                "--snapshot",
                str(s),
                "--remove-brokers",
                "1",
                "--output",
                str(good),
                "--quiet",
                "--engine",
                "local",
            ]
        )
        == 0
    )
    for engine in ("spark", "local"):
        assert (
            main(
                [
                    "validate",
                    "--snapshot",
                    str(s),
                    "--reassignment-json-file",
                    str(good),
                    "--remove-brokers",
                    "1",
                    "--engine",
                    engine,
                ]
            )
            == 0
        )
    assert json.loads(good.read_text())["version"] == 1


@pytest.mark.parametrize(
    "params",
    [PlanParams(remove_brokers=(1, 5)), PlanParams(replication_factor=3, rf_topics=("t3",))],
)
def test_spark_aggregates_equal_the_in_process_ones(spark, params):
    from reassign_kit.planner.aggregates import aggregate_rows
    from reassign_kit.planner.params import rule_context
    from reassign_kit.spark.frames import partitions_df, with_chunk
    from reassign_kit.spark.planner import aggregate_spark

    snap = random_snapshot(3)
    ctx = rule_context(snap, params)
    local = aggregate_rows(
        [(p.topic, p.partition, p.replicas, p.size_bytes) for p in snap.partitions], params, ctx
    )
    remote = aggregate_spark(with_chunk(partitions_df(spark, snap), params.chunks), params, ctx)
    for name in (
        "replicas",
        "leaders",
        "bytes",
        "partitions",
        "rf_hist",
        "forced",
        "classes",
        "capable",
    ):
        assert getattr(remote, name) == getattr(local, name), name


def test_topic_selection_on_spark_is_the_in_process_one(spark, tmp_path):
    """A Parquet snapshot filtered in Spark (the rule decided on the names in
    Python) gives the in-process plan, leader balance and excluded-topic summary."""
    import dataclasses

    from reassign_kit.snapshot.entries import PartitionEntry, TopicEntry
    from reassign_kit.snapshot.filter import TopicFilter
    from reassign_kit.snapshot.snapshot import Snapshot

    base = random_snapshot(13)
    internal = [PartitionEntry("__consumer_offsets", i, (1, 2, 3), 10) for i in range(6)]
    snap = Snapshot.of(
        base.brokers,
        [*base.topics, TopicEntry("__consumer_offsets", 2)],
        [*base.partitions, *internal],
    )
    path = str(tmp_path / "s.parquet")
    snap.write(path)
    filters = (TopicFilter(), TopicFilter(exclude="t[12]"), TopicFilter("t0|__.*", None, True))
    for tf in filters:
        params = dataclasses.replace(PlanParams(remove_brokers=(1,)), topic_filter=tf)
        a = plan_spark(spark, path, params)
        b = plan_in_process(snap, params)
        assert a.plan.digest() == b.plan.digest(), tf
        assert a.report()["topic_selection"] == b.report()["topic_selection"], tf
        assert a.leader_balance == b.leader_balance, tf
    excluded = b.report()["topic_selection"]["excluded"]
    assert [e["topic"] for e in excluded["topics"]] == ["t1", "t2", "t3"]
    assert excluded["replicas_left_on_removed_brokers"][1] > 0
    assert "__consumer_offsets" in {m.tp.topic for m in b.plan}
    default = plan_in_process(snap, PlanParams(remove_brokers=(1,)))
    assert default.report()["topic_selection"]["excluded"]["replicas_left_on_removed_brokers"] == {
        1: 6
    }


def test_a_different_master_than_the_running_session_is_refused(spark, tmp_path, capsys):
    from reassign_kit.cli import main
    from reassign_kit.errors import SparkSessionError
    from reassign_kit.spark.session import get_spark

    assert get_spark() is spark and get_spark(spark.sparkContext.master) is spark
    with pytest.raises(SparkSessionError, match="already runs in this process"):
        get_spark("local[1]" if spark.sparkContext.master != "local[1]" else "local[2]")
    snap = random_snapshot(3)
    s, p = tmp_path / "s.json", tmp_path / "p.json"
    snap.write(str(s))
    plan_in_process(snap, PlanParams(remove_brokers=(1,))).plan.write(str(p))
    argv = ["validate", "--snapshot", str(s), "--reassignment-json-file", str(p)]
    assert main([*argv, "--engine", "spark", "--spark-master", "local[3]"]) == 2
    assert "already runs in this process" in capsys.readouterr().err
