"""Demotion on Spark when leadership drifted: ``plan --demote-brokers B`` on the Spark
engine reads the snapshot's recorded leader / ISR as the in-process planner does, so both engines
give the same plan and the same ``demoted_still_leading`` (from a snapshot object, and from a
Parquet snapshot that Spark reads straight into executors)."""

from __future__ import annotations

import random

import pytest

from reassign_kit.api import plan as make_plan
from reassign_kit.model import TopicPartition
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot

pytestmark = pytest.mark.spark

B = 2  # the broker demoted


def _snap(parts, racks=None, topics=("t",)) -> Snapshot:
    racks = racks or {b: None for b in range(1, 5)}
    return Snapshot.of(
        [BrokerEntry(b, r) for b, r in sorted(racks.items())],
        [TopicEntry(t, 1) for t in topics],
        parts,
    )


def drifted_small() -> Snapshot:
    # t-0: B leads though 1 is first (drifted); the others hold B without leading
    return _snap(
        [
            PartitionEntry("t", 0, (1, B, 3), 10, leader=B, isr=(1, B, 3)),
            PartitionEntry("t", 1, (1, 3, B), 10, leader=1, isr=(1, 3, B)),
            PartitionEntry("t", 2, (3, 4, B), 10, leader=3, isr=(3, 4, B)),
            PartitionEntry("t", 3, (4, 1, B), 10, leader=4, isr=(4, 1, B)),
        ]
    )


def drifted_lagging() -> Snapshot:
    # ISR decides the new first replica; some partitions have no other in-sync replica
    return _snap(
        [
            PartitionEntry("t", 0, (B, 1, 3), 10, leader=B, isr=(B, 3)),
            PartitionEntry("t", 1, (1, B, 4), 10, leader=B, isr=(B, 4)),
            PartitionEntry("t", 2, (B, 1), 10, leader=B, isr=(B,)),
            PartitionEntry("t", 3, (1, B), 10, leader=B, isr=(B,)),
            PartitionEntry("t", 4, (B, 3), 10, leader=B, isr=(B, 3)),
            PartitionEntry("t", 5, (3, 4, 1), 10, leader=3, isr=(3, 4, 1)),
        ]
    )


def drifted_many(seed: int, racks: bool) -> Snapshot:
    """120 partitions over 6 brokers (3 racks or none), RF 3, one replica out of the ISR in a
    third of them, B leading (drifted) wherever it is in sync and not first in half of the rest;
    a few partitions record nothing (older snapshot entries)."""
    rng = random.Random(seed)
    rack_of = {b: (f"r{b % 3}" if racks else None) for b in range(1, 7)}
    parts = []
    for i in range(120):
        topic = "a" if i % 2 else "b"
        if racks:  # one replica per rack
            reps = tuple(
                rng.choice([b for b in rack_of if rack_of[b] == f"r{k}"]) for k in range(3)
            )
            reps = tuple(rng.sample(reps, 3))
        else:
            reps = tuple(rng.sample(range(1, 7), 3))
        if i % 11 == 0:
            parts.append(PartitionEntry(topic, i, reps, 100 + i))
            continue
        isr = list(reps)
        if i % 3 == 0:
            isr.remove(rng.choice([b for b in reps if b != reps[0]] or list(reps)))
        leader = reps[0] if reps[0] in isr else isr[0]
        if B in isr and reps[0] != B and rng.random() < 0.5:
            leader = B
        parts.append(PartitionEntry(topic, i, reps, 100 + i, leader=leader, isr=tuple(isr)))
    return _snap(parts, rack_of, topics=("a", "b"))


def _targets(result) -> dict[TopicPartition, tuple[int, ...]]:
    return {m.tp: tuple(m.replicas) for m in result.plan}


def _same(source, chunks: int = 3):
    local = make_plan(source, demote_brokers=[B], engine="local", chunks=chunks)
    spark = make_plan(source, demote_brokers=[B], engine="spark", chunks=chunks)
    assert _targets(spark) == _targets(local)
    lb_s, lb_l = spark.report()["leader_balance"], local.report()["leader_balance"]
    assert lb_s["demoted_still_leading"] == lb_l["demoted_still_leading"]
    assert lb_s == lb_l
    assert spark.moved_replicas == local.moved_replicas == 0
    return local, spark


SNAPSHOTS = {
    "small": drifted_small,
    "lagging": drifted_lagging,
    "many": lambda: drifted_many(7, racks=False),
    "many-racks": lambda: drifted_many(11, racks=True),
}


@pytest.mark.parametrize("name", sorted(SNAPSHOTS))
def test_spark_demote_plan_is_the_in_process_plan_on_drifted_snapshots(spark, name):
    snap = SNAPSHOTS[name]()
    assert any(p.leader == B and p.replicas[0] != B for p in snap.partitions)  # drifted
    local, spark_result = _same(snap)
    t = _targets(spark_result)
    for p in snap.partitions:  # every partition B leads with another in-sync replica moves off
        if p.leader == B and p.isr and any(b != B for b in p.isr):
            assert p.tp in t and t[p.tp][0] != B and t[p.tp][0] in p.isr, (p, t.get(p.tp))


def test_spark_keeps_a_drifted_list_as_it_is_and_counts_what_b_still_leads(spark):
    _, result = _same(drifted_small())
    assert _targets(result)[TopicPartition("t", 0)] == (1, B, 3)  # elected by the run
    assert result.report()["leader_balance"]["demoted_still_leading"] == {B: 0}
    _, result = _same(drifted_lagging())
    t = _targets(result)
    assert t[TopicPartition("t", 0)] == (3, 1, B) and t[TopicPartition("t", 1)] == (4, 1, B)
    assert result.report()["leader_balance"]["demoted_still_leading"] == {B: 2}


@pytest.mark.parametrize("name", ["small", "many-racks"])
def test_spark_demote_from_a_parquet_snapshot_matches_in_process(spark, tmp_path, name):
    path = str(tmp_path / "s.parquet")
    SNAPSHOTS[name]().write(path)
    _same(path)
