"""Plan validation on Spark: the plan joined with the snapshot's partitions in the executors, the
plan's rows (the plan is on the driver already) brought back through Arrow and checked there by
the very functions the in-process validator uses (``plan_rules``), so the verdict and the
messages are the same. Checking them in Python workers (``mapInPandas``) cost three to eight
times the CPU of bringing them back: workers started, rows sent there and back, for a check
that takes a second or two for a plan of 130,000 moves. The snapshot's partitions never leave
the executors; the per-broker totals after the plan are Spark aggregates."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..model import Move, PartitionState, Plan, Problem, TopicPartition
from ..planner.rules import Capacity, RuleContext, capacity_problems, move_all_problems
from ..snapshot.snapshot import Snapshot
from ..validate import ClusterView
from .frames import brokers_and_topics, partitions_df


def validate_spark(
    spark,
    source: Snapshot | str,
    plan: Plan,
    ctx: RuleContext | None = None,
    disallow_replication_factor_change: bool = False,
    plan_df=None,
    parts_df=None,
    capacity: Capacity | None = None,
) -> list[Problem]:
    """Every problem of ``plan`` against the snapshot, in plan order (topic, partition), then
    (with ``capacity``) each broker over a hard limit once the plan is applied: the per-broker
    totals are Spark aggregates, judged by the same ``plan_rules.capacity_problems``."""
    from pyspark.sql import functions as F

    small = brokers_and_topics(source)
    ctx = ctx or RuleContext(small.racks(), cordoned=small.cordoned())
    parts = parts_df if parts_df is not None else partitions_df(spark, source)
    counts = {t.name: 0 for t in small.topics}
    for r in parts.groupBy("topic").agg(F.max("partition").alias("m")).collect():
        counts[r.topic] = r.m + 1
    brokers = small.broker_ids()
    if plan_df is None:
        plan_df = _plan_frame(spark, plan)
    current = parts.select("topic", "partition", F.col("replicas").alias("current"))
    joined = plan_df.join(current, ["topic", "partition"], "left")
    check = _checker(brokers, counts, ctx, disallow_replication_factor_change)
    rows = [r for found in check(iter([joined.toPandas()])) for r in found.itertuples()]
    rows.sort(key=lambda r: (r.topic, r.partition, r.i))
    out = [Problem(r.where, r.rule, r.detail) for r in rows]
    if capacity is not None:
        out += _capacity_after(parts, plan_df, capacity, brokers)
    return out


def _plan_frame(spark: Any, plan: Plan) -> Any:
    """The plan as a Spark DataFrame (topic, partition, target, log_dirs)."""
    import pandas as pd

    pdf = pd.DataFrame(
        {
            "topic": [m.topic for m in plan],
            "partition": [m.partition for m in plan],
            "target": [list(m.replicas) for m in plan],
            "log_dirs": [list(m.log_dirs) if m.log_dirs is not None else None for m in plan],
        }
    )
    return spark.createDataFrame(
        pdf, "topic string, partition int, target array<int>, log_dirs array<string>"
    )


def _checker(
    brokers: list[int], counts: dict[str, int], ctx: RuleContext, disallow: bool
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Each move's problems against its partition's current replicas, one row per problem
    (numbered, to keep their order), from frames of the plan joined with the partitions."""
    import pandas as pd

    def check(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        base = ClusterView.of(brokers, counts)
        for b in batches:
            out: dict[str, list] = {
                k: [] for k in ("topic", "partition", "i", "where", "rule", "detail")
            }
            for t, p, target, dirs, cur in zip(
                b["topic"], b["partition"], b["target"], b["log_dirs"], b["current"], strict=True
            ):
                tp = TopicPartition(t, int(p))
                move = Move(
                    tp, tuple(int(x) for x in target), tuple(dirs) if dirs is not None else None
                )
                states = (
                    {tp: PartitionState(tp, tuple(int(x) for x in cur))} if cur is not None else {}
                )
                view = ClusterView(base.brokers, base.partition_counts, states, base.log_dirs)
                for i, pr in enumerate(move_all_problems(move, view, ctx, disallow)):
                    for k, v in (
                        ("topic", t),
                        ("partition", int(p)),
                        ("i", i),
                        ("where", pr.where),
                        ("rule", pr.rule),
                        ("detail", pr.detail),
                    ):
                        out[k].append(v)
            if out["topic"]:
                yield pd.DataFrame(out, columns=list(out))

    return check


def _capacity_after(
    parts: Any, plan_df: Any, capacity: Capacity, brokers: list[int]
) -> list[Problem]:
    """Each broker over a hard limit once the plan is applied (Spark aggregates per broker)."""
    from pyspark.sql import functions as F

    after = (
        parts.join(plan_df.select("topic", "partition", "target"), ["topic", "partition"], "left")
        .select("size_bytes", F.explode(F.coalesce(F.col("target"), F.col("replicas"))).alias("b"))
        .groupBy("b")
        .agg(F.count(F.lit(1)).alias("n"), F.sum("size_bytes").alias("bytes"))
        .collect()
    )
    return capacity_problems(
        {r.b: r.n for r in after}, {r.b: r.bytes for r in after}, capacity, brokers
    )
