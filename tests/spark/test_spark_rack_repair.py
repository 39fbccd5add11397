"""Rack repair and demotion by reorder on Spark: the Spark engine gives the
in-process plan (the repairs are chosen on the driver from the violating partitions, which Spark
filters in the JVM; the chunk pass is the same function), the same rack report and the same
partitions left led by a demoted broker, with the same reasons."""

from __future__ import annotations

import pytest
from rack_snapshots import racked_snapshot

from reassign_kit.api import plan as make_plan
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot

pytestmark = pytest.mark.spark


def same(s, spark, **kw):
    local = make_plan(s, engine="local", **kw)
    on_spark = make_plan(s, engine="spark", spark_master="local[2]", **kw)
    assert on_spark.plan == local.plan
    assert on_spark.lower_bound == local.lower_bound
    assert on_spark.report()["rack_repair"] == local.report()["rack_repair"]
    assert on_spark.report()["leader_balance"] == local.report()["leader_balance"]
    return local


@pytest.mark.parametrize(
    "seed,n,share,remove",
    [(1, 120, 0.15, ()), (2, 120, 0.15, (1,)), (3, 60, 0.5, (5, 9))],
)
def test_spark_repairs_as_in_process(spark, seed, n, share, remove):
    s = racked_snapshot(seed, n, share)
    local = same(s, spark, remove_brokers=list(remove))
    assert local.report()["rack_repair"]["violations_before"] > 0
    assert local.report()["rack_repair"]["violations_after"] == 0


def test_spark_demotes_a_rack_breaking_set_as_in_process(spark):
    racks = {1: "a", 3: "a", 2: "b", 4: "b"}
    s = Snapshot.of(
        [BrokerEntry(b, r) for b, r in sorted(racks.items())],
        [TopicEntry("t", 1), TopicEntry("__internal", 1)],
        [
            PartitionEntry("t", 0, (1, 3), 10, leader=1, isr=(1, 3)),
            PartitionEntry("t", 1, (1, 3), 10, leader=1, isr=(1,)),
            PartitionEntry("t", 2, (1, 2), 10),
            PartitionEntry("__internal", 0, (1, 2), 10, leader=1, isr=(1, 2)),
        ],
    )
    local = same(s, spark, demote_brokers=[1])
    left = local.report()["leader_balance"]["not_demoted"]
    assert {r["partition"]: r["reason"] for r in left["partitions"]} == {
        "t-1": "only-in-sync-replica",
        "__internal-0": "topic-filtered-out",
    }


def test_spark_validator_rejects_a_cordoned_target_as_in_process(spark):
    from reassign_kit.model import Move, Plan, TopicPartition
    from reassign_kit.planner.rules import plan_problems_offline
    from reassign_kit.spark.validate import validate_spark

    brokers = [BrokerEntry(b, None, ("/d",), ("*",) if b == 4 else ()) for b in range(1, 5)]
    s = Snapshot.of(
        brokers,
        [TopicEntry("t", 1)],
        [PartitionEntry("t", p, (1 + p % 3, 1 + (p + 1) % 3), 10) for p in range(6)],
    )
    plan = Plan(
        (
            Move(TopicPartition("t", 0), (4, 2)),  # a new replica on the cordoned broker
            Move(TopicPartition("t", 1), (3, 2)),  # a reorder: fine
        )
    )
    offline = plan_problems_offline(plan, s)
    assert [(p.where, p.rule) for p in offline] == [("t-0", "cordoned-broker")]
    assert validate_spark(spark, s, plan) == offline
    # and the Spark planner never targets it (the same plan as in process)
    local = same(s, spark)
    cur = {p.tp: set(p.replicas) for p in s.partitions}
    assert not any(4 in set(m.replicas) - cur[m.tp] for m in local.plan)
