"""The Spark planner's aggregation: each task runs ``aggregate_rows`` (the in-process function)
on its own rows and ships the sums as entries; the driver adds them up. Whatever the rows' split
over tasks, the sum equals ``aggregate_rows`` over every row, the rack-repair fields included
(no Spark needed: the split stands in for the tasks)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.planner.aggregates import aggregate_rows
from reassign_kit.planner.params import PlanParams, rule_context
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot
from reassign_kit.spark.planner import agg_entries, agg_from_entries

FIELDS = (
    "replicas",
    "leaders",
    "bytes",
    "partitions",
    "rf_hist",
    "forced",
    "classes",
    "capable",
    "violating",
)


def _snapshot(seed: int) -> Snapshot:
    """Nine brokers on three racks; some partitions hold two replicas in one rack (rack repair)."""
    rnd = random.Random(seed)
    brokers = [BrokerEntry(i, "abc"[i % 3]) for i in range(1, 10)]
    parts = [
        PartitionEntry(
            f"t{n % 3}", n // 3, tuple(rnd.sample(range(1, 10), 2 + n % 2)), rnd.randint(0, 10**6)
        )
        for n in range(120)
    ]
    return Snapshot.of(brokers, [TopicEntry(f"t{t}", 1) for t in range(3)], parts)


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 10**6),
    cuts=st.lists(st.integers(0, 120), max_size=4),
    params=st.sampled_from(
        [
            PlanParams(remove_brokers=(2, 7)),
            PlanParams(replication_factor=3, rf_topics=("t1",)),
            PlanParams(),
        ]
    ),
)
def test_summed_task_entries_are_the_aggregates_of_every_row(seed, cuts, params):
    snap = _snapshot(seed)
    ctx = rule_context(snap, params)
    rows = [(p.topic, p.partition, p.replicas, p.size_bytes) for p in snap.partitions]
    whole = aggregate_rows(rows, params, ctx)
    bounds = [0, *sorted(cuts), len(rows)]
    entries = []
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        e = agg_entries(aggregate_rows(rows[lo:hi], params, ctx))
        entries += zip(e["kind"], e["c"], e["key"], e["n"], strict=True)
    summed = agg_from_entries(entries)
    assert whole.violating  # the snapshot has partitions to repair: the field is exercised
    for name in FIELDS:
        assert getattr(summed, name) == getattr(whole, name), name
