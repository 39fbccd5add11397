"""The network goals on Spark: the network pass reads only the pipeline's final rows, so the
Spark engine gives the in-process plan and the same network report, here from the Parquet form
(its loads read by the driver, the rows by Spark)."""

from __future__ import annotations

import dataclasses
import random

import pytest
from rack_snapshots import racked_snapshot

from reassign_kit.api import plan as make_plan
from reassign_kit.snapshot.load import LoadWindow, PartitionLoad
from reassign_kit.snapshot.snapshot import Snapshot

# 55 s on this shared box: beyond make test's budget for this issue, so `make long` runs it
pytestmark = [pytest.mark.spark, pytest.mark.long]


def loaded(seed: int, n: int) -> Snapshot:
    """A racked snapshot whose first few partitions are hot, the rest lukewarm."""
    s = racked_snapshot(seed, n, 0.15)
    rng = random.Random(seed)
    parts = []
    for i, p in enumerate(s.partitions):
        produce = rng.uniform(2e6, 5e6) if i % 17 == 0 else rng.uniform(0, 2e5)
        fetch = produce * rng.choice([0, 1, 2])
        load = PartitionLoad(produce, produce / 1000, fetch, int(fetch / produce) if produce else 0)
        parts.append(dataclasses.replace(p, load=load))
    return Snapshot.of(s.brokers, s.topics, parts, LoadWindow("sample", 1.0, 300.0))


def test_spark_network_plan_as_in_process(spark, tmp_path):
    snap = loaded(2, 90)
    balance = "replicas,leaders,network"
    local = make_plan(snap, balance=balance, engine="local")
    path = str(tmp_path / "s.parquet")
    snap.write(path)
    on_spark = make_plan(path, balance=balance, engine="spark", spark_master="local[2]")
    assert on_spark.plan == local.plan
    assert on_spark.report()["network_goal"] == local.report()["network_goal"]
    ng = local.report()["network_goal"]
    assert ng["changes"] > 0 and ng["hottest_partitions"]
