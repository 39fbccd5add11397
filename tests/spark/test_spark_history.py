"""A metrics export reduced on Spark gives the same figures as the driver's reduction of the
same series (irregular samples, resets, several groups, a NaN, samples outside the window),
and an export that is not one is named by its path."""

from __future__ import annotations

import random
from dataclasses import asdict

import pandas as pd
import pytest

from reassign_kit.errors import LoadSourceError
from reassign_kit.model import TopicPartition
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.history import GROUP_PREFIX, Window, figures_of, loads_of
from reassign_kit.snapshot.snapshot import Snapshot
from reassign_kit.spark.history import figures_on_spark, load_from_export, read_export

pytestmark = pytest.mark.spark
T0 = 1_700_000_000.0


def _export(seed: int = 7) -> tuple[pd.DataFrame, dict]:
    rnd = random.Random(seed)
    rows, series = [], {}
    for p in range(3):
        tp = TopicPartition("t", p)
        metrics = ["log_end_offset", "log_start_offset", "size"] + [
            GROUP_PREFIX + g for g in ("a", "b")[: p + 1]
        ]
        for m in metrics:
            t, v, pts = T0 - 50, 1000.0 * (p + 1), []
            while t < T0 + 700:
                t += rnd.uniform(1, 25)
                v += rnd.uniform(0, 500) if m != "log_start_offset" else 0
                if m == "log_end_offset" and p == 1 and len(pts) == 9:
                    v = 10.0  # a truncation: a reset of the counter
                if m == "size":
                    v = max(0.0, v + rnd.uniform(-800, 300))
                pts.append((t, v))
            if m == "size" and p == 2:
                pts[4] = (pts[4][0], float("nan"))
            series[(tp, m)] = pts
            rows += [(t, "t", p, m, v) for t, v in pts]
    df = pd.DataFrame(rows, columns=["timestamp", "topic", "partition", "metric", "value"])
    return df, series


def test_spark_reduction_equals_the_drivers(spark, tmp_path):
    pdf, series = _export()
    path = str(tmp_path / "export.parquet")
    pdf.to_parquet(path)
    for q in ("mean", "p95"):  # max: a plain aggregate, the driver's tests have it
        w = Window.ending(T0 + 600, 600, 30, q)
        on_spark = figures_on_spark(read_export(spark, path), w)
        on_driver = figures_of(series, w)
        assert on_spark.keys() == on_driver.keys()
        for k, f in on_driver.items():
            g = on_spark[k]
            assert (g.buckets, g.resets, g.last) == (f.buckets, f.resets, f.last), (q, k)
            assert g.rate == pytest.approx(f.rate, rel=1e-9), (q, k)
    assert on_driver[(TopicPartition("t", 1), "log_end_offset")].resets == 1
    snap = Snapshot.of(
        [BrokerEntry(1, "a")],
        [TopicEntry("t", 1)],
        [PartitionEntry("t", p, (1,), 10, 1) for p in range(4)],
    )
    got = load_from_export(spark, path, snap, 600, 30, q, until=T0 + 600)
    tps = [p.tp for p in snap.partitions]
    expect, unread = loads_of(tps, on_driver, groups_known=True)
    loads = {p.tp: asdict(p.load) for p in got.partitions if p.load is not None}
    assert loads == {tp: pytest.approx(asdict(v), rel=1e-9) for tp, v in expect.items()}
    assert got.load.unread == tuple(unread) and got.load.source == f"parquet {q}"
    assert unread == [
        "partition t-3: no log_end_offset or log_start_offset or size series in the window"
    ]


def test_an_export_that_is_not_one_is_named(spark, tmp_path):
    with pytest.raises(LoadSourceError, match=f"parquet:{tmp_path}/none: cannot be read"):
        read_export(spark, str(tmp_path / "none"))
    bad = str(tmp_path / "bad.parquet")
    pd.DataFrame({"timestamp": [T0], "topic": ["t"], "value": [1.0]}).to_parquet(bad)
    with pytest.raises(LoadSourceError, match="no column partition, metric"):
        read_export(spark, bad)
