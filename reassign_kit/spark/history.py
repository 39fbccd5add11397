"""``--load-from parquet:PATH``: a metrics export — Parquet rows of (timestamp, topic, partition,
metric, value) — reduced on Spark to each series' figure over the window, the same steps as
``snapshot.history`` does on the driver for a Prometheus answer (buckets of ``step``, the last
sample of each, rates between consecutive buckets with a counter's resets left out, their
quantile by Spark's exact ``percentile``); only the figures (one row per partition and metric)
reach the driver, where ``snapshot.history.loads_of`` turns them into loads.

``timestamp`` is epoch seconds (a number) or a Parquet timestamp; ``metric`` one of
``log_end_offset``, ``log_start_offset``, ``size`` or ``committed_offset:GROUP``. The window
ends at the export's latest sample unless an end is given. An export that cannot be read, lacks
a column or holds no sample is a ``LoadSourceError`` naming the path."""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import LoadSourceError
from ..model import TopicPartition
from ..snapshot.history import (
    COUNTERS,
    DEFAULT_QUANTILE,
    DEFAULT_STEP_S,
    DEFAULT_WINDOW_S,
    EPSILON,
    GROUP_PREFIX,
    SeriesFigure,
    Window,
    loads_of,
    quantile_fraction,
)
from ..snapshot.prom_load import with_history
from ..snapshot.snapshot import Snapshot

SOURCE = "parquet"
COLUMNS = ("timestamp", "topic", "partition", "metric", "value")


def read_export(spark, path: str):
    """The export as (ts double, topic, partition int, metric, value double)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampNTZType, TimestampType

    where = f"--load-from parquet:{path}"
    try:
        df = spark.read.parquet(path)
    except Exception as e:  # noqa: BLE001 - Spark's AnalysisException and Java errors: named
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise LoadSourceError(f"{where}: cannot be read as Parquet: {first[:300]}") from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise LoadSourceError(
            f"{where}: no column {', '.join(missing)} (an export has {', '.join(COLUMNS)})"
        )
    ts_type = df.schema["timestamp"].dataType
    ts = F.col("timestamp")
    if isinstance(ts_type, TimestampType | TimestampNTZType):
        ts = F.unix_micros(ts.cast("timestamp")) / F.lit(1e6)
    return df.select(
        ts.cast("double").alias("ts"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("metric").cast("string").alias("metric"),
        F.col("value").cast("double").alias("value"),
    )


def export_end(df, path: str) -> float:
    """The export's latest sample (epoch seconds)."""
    from pyspark.sql import functions as F

    end = df.agg(F.max("ts")).first()[0]
    if end is None:
        raise LoadSourceError(f"--load-from parquet:{path}: holds no sample")
    return float(end)


def _quantile_expr(q: str):
    from pyspark.sql import functions as F

    rate = F.when(F.col("ok"), F.col("rate"))
    if q == "mean":
        return F.avg(rate)
    if q == "max":
        return F.max(rate)
    return F.percentile(rate, F.lit(quantile_fraction(q)))


def figures_on_spark(df, w: Window) -> dict[tuple[TopicPartition, str], SeriesFigure]:
    """Every series' figure over the window (``snapshot.history`` steps 1-3, on Spark)."""
    from pyspark.sql import Window as W
    from pyspark.sql import functions as F

    finite = ~F.isnan("value") & (F.abs("value") != F.lit(float("inf")))
    d = df.where(
        F.col("ts").between(w.start, w.end)
        & finite
        & F.col("topic").isNotNull()
        & F.col("partition").isNotNull()
        & F.col("metric").isNotNull()
    ).withColumn("bucket", F.floor((F.col("ts") - F.lit(w.start)) / F.lit(w.step) + EPSILON))
    keys = ["topic", "partition", "metric"]
    last = d.groupBy(*keys, "bucket").agg(
        F.max_by("value", "ts").alias("v"), F.max("ts").alias("t")
    )
    order = W.partitionBy(*keys).orderBy("bucket")
    counter = F.col("metric").isin(*COUNTERS) | F.col("metric").startswith(GROUP_PREFIX)
    dv = F.col("v") - F.lag("v").over(order)
    steps = (
        last.withColumn("dv", dv)
        .withColumn("rate", F.col("dv") / (F.col("t") - F.lag("t").over(order)))
        .withColumn("reset", counter & (F.col("dv") < 0))
        .withColumn("ok", F.col("dv").isNotNull() & ~F.coalesce(F.col("reset"), F.lit(False)))
    )
    rows = (
        steps.groupBy(*keys)
        .agg(
            _quantile_expr(w.quantile).alias("figure"),
            F.max_by("v", "bucket").alias("last"),
            F.count("*").alias("buckets"),
            F.sum(F.col("reset").cast("int")).alias("resets"),
        )
        .collect()
    )
    return {
        (TopicPartition(r["topic"], int(r["partition"])), r["metric"]): SeriesFigure(
            None if r["figure"] is None else float(r["figure"]),
            float(r["last"]),
            int(r["buckets"]),
            int(r["resets"] or 0),
        )
        for r in rows
    }


def load_from_export(
    spark,
    path: str,
    snap: Snapshot,
    seconds: float = DEFAULT_WINDOW_S,
    step: float = DEFAULT_STEP_S,
    quantile: str = DEFAULT_QUANTILE,
    until: float | None = None,
) -> Snapshot:
    """``snap`` with each partition's load from the export over the window of ``seconds``
    ending at ``until`` (default: the export's latest sample)."""
    df = read_export(spark, path)
    w = Window.ending(export_end(df, path) if until is None else until, seconds, step, quantile)
    figs = figures_on_spark(df, w)
    tps = [p.tp for p in snap.partitions]
    groups_known = _any_group(figs, tps)
    loads, unread = loads_of(tps, figs, groups_known)
    return with_history(snap, loads, unread, f"{SOURCE} {w.quantile}", w)


def _any_group(figs: dict, tps: Iterable[TopicPartition]) -> bool:
    wanted = set(tps)
    return any(tp in wanted and m.startswith(GROUP_PREFIX) for tp, m in figs)
