"""The planner on Spark: the same pure chunk planner as ``reassign_kit.planner``, with the
per-(chunk, broker) aggregation and the chunk passes running in executors. The driver only sees
small aggregates and the plan itself (the partitions that change), never the replica set."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

from ..planner import pipeline
from ..planner.aggregates import Aggregates, aggregate_rows
from ..planner.bytes_pass import BytesPlan, bytes_chunk
from ..planner.finish import fit_capacity
from ..planner.leaders import NO_STATE, LeaderPlan, lead_chunk, leader_groups
from ..planner.level import level_chunk
from ..planner.params import PlanParams, rule_context
from ..planner.quotas import Prepared
from ..planner.replica_chunk import plan_chunk
from ..planner.report import PlanResult
from ..planner.rows import Changed, Row, chunk_key
from ..planner.rules import RuleContext
from ..snapshot.entries import PartitionEntry
from ..snapshot.filter import excluded_summary
from ..snapshot.snapshot import Snapshot
from ..snapshot.tier import move_bytes_of
from .frames import brokers_and_topics, partitions_df, with_chunk

AGG_SCHEMA = "kind string, c int, key string, n long"
GROUP_SCHEMA = "c int, s array<int>, o int, n long"
CHANGED_SCHEMA = "topic string, partition int, old array<int>, new array<int>, size_bytes long"
FINAL_SCHEMA = "chunk int, " + CHANGED_SCHEMA


def _arrow_types() -> dict[str, Any]:
    import pyarrow as pa

    return {
        "chunk": pa.int32(),
        "topic": pa.string(),
        "partition": pa.int32(),
        "old": pa.list_(pa.int32()),
        "new": pa.list_(pa.int32()),
        "size_bytes": pa.int64(),
    }


def _chunk_rows(batches: Iterator[Any], cols: tuple[str, ...]) -> Iterator[tuple[int, list]]:
    """(chunk, its rows as tuples of ``cols``) of one ``mapInArrow`` partition: each chunk is
    planned whole, in one task. Arrow to Python lists directly: no pandas object columns."""
    by: dict[int, list] = {}
    for b in batches:
        if b.num_rows:
            d = b.to_pydict()
            for row in zip(d["chunk"], *(d[c] for c in cols), strict=True):
                by.setdefault(row[0], []).append(row[1:])
    for c in sorted(by):
        yield c, by[c]


def _batch(rows: list, chunk: int | None = None) -> Any:
    """Changed rows (topic, partition, old, new, size) as one Arrow batch (FINAL_SCHEMA with a
    ``chunk``, else CHANGED_SCHEMA)."""
    import pyarrow as pa

    types = _arrow_types()
    cols = {
        "topic": pa.array([x[0] for x in rows], types["topic"]),
        "partition": pa.array([x[1] for x in rows], types["partition"]),
        "old": pa.array([list(x[2]) for x in rows], types["old"]),
        "new": pa.array([list(x[3]) for x in rows], types["new"]),
        "size_bytes": pa.array([x[4] for x in rows], types["size_bytes"]),
    }
    if chunk is not None:
        cols = {"chunk": pa.array([chunk] * len(rows), types["chunk"]), **cols}
    return pa.RecordBatch.from_pydict(cols)


_CHANGED_COLS = ("topic", "partition", "old", "new", "size_bytes")


def _changed_of(table: Any) -> list[Changed]:
    """The rows of an Arrow table with CHANGED_SCHEMA's columns."""
    d = table.to_pydict()
    return [Changed(*r) for r in zip(*(d[c] for c in _CHANGED_COLS), strict=True)]


def _chunk_pass(fn) -> Any:
    """A ``mapInArrow`` function running ``fn(chunk, changed rows) -> rows`` on every chunk."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        for c, rows in _chunk_rows(batches, _CHANGED_COLS):
            out = fn(c, [Changed(*r) for r in rows])
            if out:
                yield _batch(out, c)

    return run


def _changed_rows(pdf) -> list[Changed]:
    return [
        Changed(t, int(p), [int(x) for x in o], [int(x) for x in n], int(sz))
        for t, p, o, n, sz in zip(
            pdf["topic"], pdf["partition"], pdf["old"], pdf["new"], pdf["size_bytes"], strict=True
        )
    ]


def _frame(rows, chunk: int | None = None):
    import pandas as pd

    cols = {
        "topic": [x[0] for x in rows],
        "partition": [x[1] for x in rows],
        "old": [list(x[2]) for x in rows],
        "new": [list(x[3]) for x in rows],
        "size_bytes": [x[4] for x in rows],
    }
    if chunk is not None:
        cols = {"chunk": [chunk] * len(rows), **cols}
    return pd.DataFrame(cols)


def agg_entries(agg: Aggregates) -> dict[str, list]:
    """One task's aggregates as rows (kind, chunk, JSON key, count) for ``AGG_SCHEMA``."""
    out: dict[str, list] = {"kind": [], "c": [], "key": [], "n": []}

    def add(kind, c, key, n):
        out["kind"].append(kind)
        out["c"].append(c)
        out["key"].append(json.dumps(key))
        out["n"].append(int(n))

    for (c, b), n in agg.replicas.items():
        add("replicas", c, b, n)
    for (c, b), n in agg.leaders.items():
        add("leaders", c, b, n)
    for b, n in agg.bytes.items():
        add("bytes", -1, b, n)
    for c, n in agg.partitions.items():
        add("partitions", c, None, n)
    for rf, n in agg.rf_hist.items():
        add("rf", -1, rf, n)
    for (c, k, rk), n in agg.forced.items():
        add("forced", c, [k, rk], n)
    for (c, k, opts), n in agg.classes.items():
        add("classes", c, [k, list(opts)], n)
    for b, n in agg.capable.items():
        add("capable", -1, b, n)
    for t, p, reps, size in agg.violating:
        add("violating", -1, [t, p, list(reps), size], 1)
    return out


def agg_from_entries(rows) -> Aggregates:
    """The aggregates of every task's entries, summed (a key may come from several tasks)."""
    agg = Aggregates()

    def plus(table: dict, key, n: int) -> None:
        table[key] = table.get(key, 0) + n

    for kind, c, key, n in rows:
        k = json.loads(key)
        if kind == "replicas":
            plus(agg.replicas, (c, k), n)
        elif kind == "leaders":
            plus(agg.leaders, (c, k), n)
        elif kind == "bytes":
            plus(agg.bytes, k, n)
        elif kind == "partitions":
            plus(agg.partitions, c, n)
        elif kind == "rf":
            plus(agg.rf_hist, k, n)
        elif kind == "forced":
            plus(agg.forced, (c, k[0], k[1]), n)
        elif kind == "classes":
            plus(agg.classes, (c, k[0], tuple(k[1])), n)
        elif kind == "capable":
            plus(agg.capable, k, n)
        elif kind == "violating":
            agg.violating.append((k[0], k[1], tuple(k[2]), k[3]))
    agg.violating.sort(key=lambda r: (r[0], r[1]))
    return agg


def aggregate_spark(df: Any, params: PlanParams, ctx: RuleContext) -> Aggregates:
    """The aggregates by ``aggregate_rows`` itself (the in-process engine's function) over each
    task's rows, one pass; only the per-task sums (per chunk and broker) reach the driver."""
    import pyarrow as pa

    schema = pa.schema(
        [("kind", pa.string()), ("c", pa.int32()), ("key", pa.string()), ("n", pa.int64())]
    )

    def aggregate(batches: Iterator[Any]) -> Iterator[Any]:
        def rows():
            for b in batches:
                d = b.to_pydict()
                yield from zip(
                    d["topic"], d["partition"], d["replicas"], d["size_bytes"], strict=True
                )

        e = agg_entries(aggregate_rows(rows(), params, ctx))
        if e["kind"]:
            yield pa.RecordBatch.from_pydict(e, schema=schema)

    cols = df.select("topic", "partition", "replicas", "size_bytes")
    return agg_from_entries(tuple(r) for r in cols.mapInArrow(aggregate, AGG_SCHEMA).collect())


def _fit_capacity(spark, final, prep):
    """planner.fit_capacity on Spark: the per-broker totals come to the driver; only when a
    broker is over a hard limit or outside its bytes band do the final rows come too, to the same exact fit
    (``capacity_fit.fit``, rows in chunk order as in process), and go back chunk-partitioned."""
    from pyspark.sql import functions as F

    from ..planner import capacity_fit

    byts: dict[int, int] = {}
    reps: dict[int, int] = {}
    for r in (
        final.select("size_bytes", F.explode("new").alias("b"))
        .groupBy("b")
        .agg(F.sum("size_bytes").alias("bytes"), F.count(F.lit(1)).alias("n"))
        .collect()
    ):
        byts[r.b], reps[r.b] = int(r.bytes), int(r.n)
    goal = prep.bands if "bytes" in prep.params.balance else {}
    if not capacity_fit.needs_fit(byts, reps, prep.ctx, prep.params.capacity, goal):
        return final
    pdf = final.toPandas()
    finals: dict[int, list] = {}
    for c, group in pdf.groupby("chunk", sort=True):
        rows = _changed_rows(group)
        finals[int(c)] = sorted(rows, key=lambda r: (chunk_key(r[0], r[1]), r[0], r[1]))
    fitted = fit_capacity(finals, prep)
    import pandas as pd

    out = pd.concat([_frame(rows, c) for c, rows in sorted(fitted.items()) if rows])
    return spark.createDataFrame(out, FINAL_SCHEMA).repartition(prep.params.chunks, "chunk").cache()


def _demoted_partitions(spark, source, demoted: frozenset) -> list:
    """The partitions a demoted broker holds (of every topic, selected or not), with their
    recorded leader and ISR (``PartitionEntry``; leader / isr None when not recorded). From a
    Parquet snapshot they are read by Spark (only those rows reach the driver; a snapshot
    without the columns has none)."""
    if not demoted:
        return []
    if isinstance(source, Snapshot):
        return [p for p in source.partitions if any(b in demoted for b in p.replicas)]
    from pyspark.sql import functions as F

    raw = spark.read.parquet(os.path.join(source, "partitions.parquet"))
    cols = set(raw.columns)
    df = raw.select(
        "topic",
        F.col("partition").cast("int").alias("partition"),
        F.col("replicas").cast("array<int>").alias("replicas"),
        F.col("size_bytes").cast("long").alias("size_bytes"),
        (F.col("leader") if "leader" in cols else F.lit(None)).cast("int").alias("leader"),
        (F.col("isr") if "isr" in cols else F.lit(None)).cast("array<int>").alias("isr"),
    )
    df = df.filter(F.arrays_overlap("replicas", F.array(*[F.lit(b) for b in sorted(demoted)])))
    return [
        PartitionEntry(
            r.topic,
            int(r.partition),
            tuple(int(b) for b in r.replicas),
            int(r.size_bytes),
            None if r.leader is None else int(r.leader),
            None if r.isr is None else tuple(int(b) for b in r.isr),
        )
        for r in df.collect()
    ]


def _isr_groups(final, ctx, demoted: frozenset, states) -> dict:
    """planner.leader_groups over the final rows, in executors, with each partition's recorded
    ISR (``states`` ships with the function): (chunk, brokers that may lead, leader) -> count."""
    import pyarrow as pa

    def groups(batches: Iterator[Any]) -> Iterator[Any]:
        for b in batches:
            d = b.to_pydict()
            rows = [
                (c, o, n, states.get((t, p), NO_STATE)[1])
                for c, t, p, o, n in zip(
                    d["chunk"], d["topic"], d["partition"], d["old"], d["new"], strict=True
                )
            ]
            g = leader_groups(rows, ctx, demoted)
            if g:
                yield pa.RecordBatch.from_pydict(
                    {
                        "c": pa.array([int(k[0]) for k in g], pa.int32()),
                        "s": pa.array([list(k[1]) for k in g], pa.list_(pa.int32())),
                        "o": pa.array([int(k[2]) for k in g], pa.int32()),
                        "n": pa.array(list(g.values()), pa.int64()),
                    }
                )

    return {
        (r.c, tuple(r.s), r.o): int(r.n)
        for r in final.mapInArrow(groups, GROUP_SCHEMA)
        .groupBy("c", "s", "o")
        .sum("n")
        .withColumnRenamed("sum(n)", "n")
        .collect()
    }


class SparkChunks:
    """The pipeline's backend on Spark: the partitions stay in executors, cached and
    chunk-partitioned (one Spark partition holds whole chunks); each pass is a ``mapInArrow``
    over the chunks, and only aggregates and, at the end, the plan reach the driver."""

    def __init__(self, spark, source: Snapshot | str, df, excluded: Mapping[str, str]):
        self.spark, self.source, self.df = spark, source, df
        self.excluded = excluded
        self.chunks = 1
        self.final = None  # every partition's current row: FINAL_SCHEMA
        self.keep_all = True

    def aggregate(self, params: PlanParams, ctx) -> Aggregates:
        self.chunks = params.chunks
        return aggregate_spark(self.df, params, ctx)

    def plan_replicas(self, prep: Prepared, keep_all: bool) -> None:
        self.keep_all = keep_all
        cols = ("topic", "partition", "replicas", "size_bytes")

        def plan_chunks(batches: Iterator[Any]) -> Iterator[Any]:
            for c, group in _chunk_rows(batches, cols):
                rows = plan_chunk([Row(*r) for r in group], prep, c)
                if not keep_all:
                    rows = [r for r in rows if list(r[3]) != list(r[2])]
                if rows:
                    yield _batch(rows, c)

        # lazy: the first pass that needs the rows runs it, in executors
        self.final = self.df.mapInArrow(plan_chunks, FINAL_SCHEMA)

    def chunk_totals(self) -> dict[tuple[int, int], tuple[int, int]]:
        from pyspark.sql import functions as F

        self.final = self.final.cache()
        return {
            (r.chunk, r.b): (int(r.bytes), int(r.n))
            for r in self.final.select("chunk", "size_bytes", F.explode("new").alias("b"))
            .groupBy("chunk", "b")
            .agg(F.sum("size_bytes").alias("bytes"), F.count(F.lit(1)).alias("n"))
            .collect()
        }

    def apply_bytes(self, bp: BytesPlan) -> None:
        from pyspark.sql import functions as F

        apply = _chunk_pass(lambda c, rows: bytes_chunk(rows, bp, c))

        # only the chunks with a share of this round pass through Python; the others are kept
        # as they are (each chunk stays whole in one Spark partition on either side)
        final = self.final
        active = sorted(c for c, q in bp.quotas.items() if q.out)
        busy = F.col("chunk").isin(active)
        nxt = (
            final.filter(~busy)
            .unionByName(final.filter(busy).mapInArrow(apply, FINAL_SCHEMA))
            .coalesce(self.chunks)  # merges whole partitions: a chunk is never split
            .cache()
        )
        nxt.count()  # materialised before the previous round's rows are dropped
        final.unpersist()
        self.final = nxt

    def apply_level(self, pairs: Mapping[int, list[tuple[int, int]]], prep: Prepared) -> None:
        from pyspark.sql import functions as F

        apply = _chunk_pass(lambda c, rows: level_chunk(rows, pairs.get(c, ()), prep))

        final = self.final.cache()
        busy = F.col("chunk").isin(sorted(pairs))
        nxt = (
            final.filter(~busy)
            .unionByName(final.filter(busy).mapInArrow(apply, FINAL_SCHEMA))
            .coalesce(self.chunks)  # merges whole partitions: a chunk is never split
            .cache()
        )
        nxt.count()
        final.unpersist()
        self.final = nxt

    def fit_capacity(self, prep: Prepared) -> None:
        self.final = _fit_capacity(self.spark, self.final, prep)

    def demoted_partitions(self, demoted: frozenset) -> list:
        return _demoted_partitions(self.spark, self.source, demoted)

    def leader_groups(self, ctx, demoted: frozenset, states: Mapping) -> dict:
        from pyspark.sql import functions as F

        self.final = self.final.cache()
        if states:  # the groups by planner.leader_groups itself (the ISR is in the key)
            return _isr_groups(self.final, ctx, demoted, states)
        may = F.array_sort(
            F.array_except("new", F.array(*[F.lit(b) for b in sorted(demoted)] or [F.lit(-2)]))
        )
        return {
            (r.chunk, tuple(r.s), r.o): r["count"]
            for r in self.final.groupBy(
                "chunk",
                F.when(F.size(may) == 0, F.slice("new", 1, 1)).otherwise(may).alias("s"),
                F.coalesce(F.element_at("old", 1), F.lit(-1)).alias("o"),
            )
            .count()
            .collect()
        }

    def apply_leaders(self, lp: LeaderPlan) -> list[Changed]:
        def lead_chunks(batches: Iterator[Any]) -> Iterator[Any]:
            for c, rows in _chunk_rows(batches, _CHANGED_COLS):
                out = lead_chunk([Changed(*r) for r in rows], lp, c)
                if out:
                    yield _batch(out)

        out = self.final.mapInArrow(lead_chunks, CHANGED_SCHEMA).toArrow()
        self.final.unpersist()
        return _changed_of(out)

    def changed(self) -> list[Changed]:
        from pyspark.sql import functions as F

        final = self.final
        if self.keep_all:
            final = final.filter(F.col("new") != F.col("old"))
        return _changed_of(final.drop("chunk").toArrow())  # Arrow, not pickled rows


def plan_spark(spark, source: Snapshot | str, params: PlanParams | None = None) -> PlanResult:
    """Plan on Spark from a snapshot object or a Parquet snapshot directory."""
    return plan_and_validate_spark(spark, source, params, validate=False)[0]


def plan_and_validate_spark(
    spark, source: Snapshot | str, params: PlanParams | None = None, validate: bool = True
) -> tuple[PlanResult, list | None]:
    """Plan (``planner.pipeline`` over ``SparkChunks``), then (``validate``) run the Spark
    validator on the plan, reading the snapshot once."""
    import time

    from .validate import validate_spark

    params = params or PlanParams()
    small = brokers_and_topics(source)
    ctx = rule_context(small, params)
    kept, excluded = params.topic_filter.split(t.name for t in small.topics)
    raw = partitions_df(spark, source)
    excluded_info = None
    if excluded:  # the selection is decided on the driver (Python regexes), applied as a list
        from pyspark.sql import functions as F

        gone = raw.filter(F.col("topic").isin(sorted(excluded)))
        counts = {r.topic: r["count"] for r in gone.groupBy("topic").count().collect()}
        on_removed = {}
        if ctx.removed:
            ex = gone.select(F.explode("replicas").alias("b"))
            on_removed = {
                r.b: r["count"]
                for r in ex.filter(F.col("b").isin(sorted(ctx.removed)))
                .groupBy("b")
                .count()
                .collect()
            }
        excluded_info = excluded_summary(excluded, counts, on_removed)
        raw = raw.filter(F.col("topic").isin(kept))
    # one shuffle puts every chunk in one Spark partition; cached, every pass reads it there
    df = with_chunk(raw, params.chunks).repartition(params.chunks, "chunk").cache()
    try:
        t = time.perf_counter()
        result = pipeline.run(SparkChunks(spark, source, df, excluded), params, ctx, excluded)
        result.timings["plan_s"] = time.perf_counter() - t
        result.excluded = excluded_info or excluded_summary({}, {})
        if isinstance(source, Snapshot):  # the report's "N GiB in the topics" (local + remote)
            keep, cost = set(kept), move_bytes_of(source)
            result.topic_bytes = sum(c.total for tp, c in cost.items() if tp.topic in keep)
        problems = None
        if validate:
            t = time.perf_counter()
            problems = validate_spark(
                spark, source, result.plan, ctx, parts_df=df, capacity=params.capacity
            )
            result.timings["validate_s"] = time.perf_counter() - t
        return result, problems
    finally:
        df.unpersist()
