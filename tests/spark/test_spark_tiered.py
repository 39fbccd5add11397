"""Tiered topics on Spark: the partitions sized by what a move copies (snapshot.tier), as in
process; the same copied bytes and the report's bytes in the topics."""

from __future__ import annotations

from reassign_kit.planner.in_process import plan_in_process
from reassign_kit.planner.params import PlanParams
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot
from reassign_kit.snapshot.tier import TierOffsets, move_bytes_of

GIB = 2**30


def _snapshot() -> Snapshot:
    """Brokers 1-4 with KIP-1023 on; three tiered partitions (1 GiB local, 9 GiB remote, 40
    of their 100 local offsets tiered) and three untiered ones (0.5 GiB)."""
    parts = []
    for i in range(3):
        reps = (1, 2 + i % 2)
        parts.append(
            PartitionEntry(
                "tiered", i, reps, GIB, 1, None, tier=TierOffsets(0, 900, 939, 1000, 9 * GIB)
            )
        )
        parts.append(PartitionEntry("classic", i, reps, GIB // 2, 1))
    topics = [TopicEntry("tiered", 1, True, 1024), TopicEntry("classic", 1)]
    brokers = [BrokerEntry(b, last_tiered_fetch=True) for b in (1, 2, 3, 4)]
    return Snapshot.of(brokers, topics, parts)


def test_spark_partitions_are_sized_by_what_a_move_copies(spark):
    from reassign_kit.spark.frames import partitions_df

    snap = _snapshot()
    got = {(r.topic, r.partition): r.size_bytes for r in partitions_df(spark, snap).collect()}
    cost = {(tp.topic, tp.partition): c.copied for tp, c in move_bytes_of(snap).items()}
    assert got == cost
    assert cost[("tiered", 0)] < GIB and cost[("classic", 0)] == GIB // 2  # KIP-1023 on


def test_the_report_counts_the_topics_whole_and_the_copies_as_in_process():
    """The in-process plan of the same snapshot: what its moves copy, and the topics' whole
    bytes (the Spark planner sets ``topic_bytes`` the same way from the snapshot)."""
    snap = _snapshot()
    result = plan_in_process(snap, PlanParams(remove_brokers=(1,), chunks=1))
    cost = {(tp.topic, tp.partition): c.copied for tp, c in move_bytes_of(snap).items()}
    copied = sum(len(set(new) - set(old)) * cost[(t, n)] for t, n, old, new, _ in result.changed)
    assert result.moved_bytes == copied
    assert result.topic_bytes == 3 * (10 * GIB + GIB // 2)
