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
from ..planner.rack_repair import is_violating
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


def _chunk_groups(batches):
    """(chunk, its rows) of one mapInPandas partition: the batches Spark hands over, joined
    and grouped by chunk (each chunk is planned whole, in one executor)."""
    import pandas as pd

    parts = [b for b in batches if len(b)]
    if not parts:
        return
    yield from pd.concat(parts, ignore_index=True).groupby("chunk", sort=True)


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


def _changed_rows(pdf) -> list[Changed]:
    return [
        Changed(t, int(p), [int(x) for x in o], [int(x) for x in n], int(sz))
        for t, p, o, n, sz in zip(
            pdf["topic"], pdf["partition"], pdf["old"], pdf["new"], pdf["size_bytes"], strict=True
        )
    ]


def _rows(pdf) -> list[Row]:
    return [
        Row(t, int(p), [int(x) for x in r], int(s))
        for t, p, r, s in zip(
            pdf["topic"], pdf["partition"], pdf["replicas"], pdf["size_bytes"], strict=True
        )
    ]


def _agg_entries(agg: Aggregates) -> dict[str, list]:
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
    return out


def _agg_from_rows(rows) -> Aggregates:
    agg = Aggregates()
    for kind, c, key, n in rows:
        k = json.loads(key)
        if kind == "replicas":
            agg.replicas[(c, k)] = n
        elif kind == "leaders":
            agg.leaders[(c, k)] = n
        elif kind == "bytes":
            agg.bytes[k] = n
        elif kind == "partitions":
            agg.partitions[c] = n
        elif kind == "rf":
            agg.rf_hist[k] = n
        elif kind == "forced":
            agg.forced[(c, k[0], k[1])] = n
        elif kind == "classes":
            agg.classes[(c, k[0], tuple(k[1]))] = n
    return agg


def _shaped(params: PlanParams):
    """The replica list after the RF change, as a Spark column (see planner.apply_rf)."""
    from pyspark.sql import functions as F

    reps = F.col("replicas")
    for topic, want in sorted(params.rf_change().items()):
        grown = F.concat(
            reps, F.sequence(F.lit(-1), F.lit(0) - (F.lit(want) - F.size(reps)), F.lit(-1))
        )
        shaped = F.when(F.size(reps) >= want, F.slice(reps, 1, want)).otherwise(grown)
        reps = F.when(F.col("topic") == topic, shaped).otherwise(reps)
    return reps


def aggregate_spark(df: Any, params: PlanParams, ctx: RuleContext) -> Aggregates:
    """The per-(chunk, broker) aggregates in the JVM (counts, leaders, bytes, RF histogram);
    only partitions with a replica that must go (removed broker, RF increase) pass through
    Python, for the rack-awareness classes."""

    agg = Aggregates()
    shaped = df.select(
        "topic", "partition", "chunk", "replicas", "size_bytes", _shaped(params).alias("reps")
    )
    _count_replicas(shaped, agg)
    if ctx.rack_count > 1:
        _count_rack_capable(shaped, ctx, agg)
        _find_rack_violating(shaped, params, ctx, agg)
    _aggregate_pinned(shaped, params, ctx, agg)
    return agg


def _count_replicas(shaped: Any, agg: Aggregates) -> None:
    """Replicas, leaders and bytes per (chunk, broker), partitions per chunk, the RF histogram."""
    from pyspark.sql import functions as F

    ex = shaped.select("chunk", "size_bytes", F.posexplode("reps").alias("pos", "b"))
    ex = ex.withColumn("b", F.when(F.col("b") < 0, F.lit(-1)).otherwise(F.col("b")))
    for r in (
        ex.groupBy("chunk", "b")
        .agg(
            F.count(F.lit(1)).alias("n"),
            F.sum(F.when(F.col("pos") == 0, 1).otherwise(0)).alias("lead"),
            F.sum("size_bytes").alias("bytes"),
        )
        .collect()
    ):
        agg.replicas[(r.chunk, r.b)] = r.n
        if r.lead:
            agg.leaders[(r.chunk, r.b)] = r.lead
        agg.bytes[r.b] = agg.bytes.get(r.b, 0) + r.bytes
    for r in shaped.groupBy("chunk", F.size("reps").alias("rf")).count().collect():
        agg.partitions[r.chunk] = agg.partitions.get(r.chunk, 0) + r["count"]
        agg.rf_hist[r.rf] = agg.rf_hist.get(r.rf, 0) + r["count"]


def _count_rack_capable(shaped: Any, ctx: RuleContext, agg: Aggregates) -> None:
    """Replicas that may change rack (planner.can_change_rack), per broker."""
    from pyspark.sql import functions as F

    rack_map = F.create_map(
        *[x for b, r in sorted(ctx.racks.items()) if r is not None for x in (F.lit(b), F.lit(r))]
    )
    with_racks = shaped.select(
        "reps", F.transform("reps", lambda b: F.element_at(rack_map, b)).alias("rr")
    )
    rx = with_racks.select("reps", "rr", F.posexplode("reps").alias("pos", "b")).filter(
        F.col("b") >= 0
    )
    mine = F.element_at(F.col("rr"), F.col("pos") + 1)
    capable = (F.size("reps") < F.lit(ctx.rack_count)) | (
        F.size(F.filter("rr", lambda r: r == mine)) >= 2
    )
    for r in rx.filter(capable).groupBy("b").count().collect():
        agg.capable[r.b] = r["count"]


def _find_rack_violating(
    shaped: Any, params: PlanParams, ctx: RuleContext, agg: Aggregates
) -> None:
    """Rack repair: the partitions spanning too few racks come to the driver."""
    from pyspark.sql import functions as F

    known = F.create_map(
        *[x for b, r in sorted(ctx.racks.items()) if r is not None for x in (F.lit(b), F.lit(r))]
    )

    def short(col):  # a superset of rack_repair.is_violating, exact in Python below
        racks = F.filter(
            F.transform(col, lambda b: F.element_at(known, b)), lambda r: r.isNotNull()
        )
        return F.size(F.array_distinct(racks)) < F.least(
            F.size(F.array_distinct(col)), F.lit(ctx.rack_count)
        )

    rf = params.rf_change()
    agg.violating = sorted(
        (r.topic, int(r.partition), tuple(int(b) for b in r.replicas), int(r.size_bytes))
        for r in shaped.filter(short(F.col("replicas")) | short(F.col("reps")))
        .select("topic", "partition", "replicas", "size_bytes")
        .collect()
        if is_violating(r.replicas, ctx, rf, r.topic)
    )


def _aggregate_pinned(shaped: Any, params: PlanParams, ctx: RuleContext, agg: Aggregates) -> None:
    """The forced moves and rack classes of the partitions with a replica that must go
    (removed broker, RF increase), aggregated in Python (``aggregate_rows``)."""
    import pandas as pd
    from pyspark.sql import functions as F

    removed = sorted(ctx.removed)
    must = F.exists(
        "reps",
        lambda x: (
            (x < 0) | F.array_contains(F.array(*[F.lit(b) for b in removed] or [F.lit(-1)]), x)
        ),
    )
    if ctx.rack_count > 1 or removed or params.rf_change():

        def pinned(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for pdf in batches:
                a = aggregate_rows(_rows(pdf), params, ctx)
                e = _agg_entries(Aggregates(forced=a.forced, classes=a.classes))
                if e["kind"]:
                    yield pd.DataFrame(e)

        rows = (
            shaped.filter(must)
            .select("topic", "partition", "replicas", "size_bytes")
            .mapInPandas(pinned, AGG_SCHEMA)
            .groupBy("kind", "c", "key")
            .sum("n")
            .collect()
        )
        part = _agg_from_rows([tuple(r) for r in rows])
        agg.forced, agg.classes = part.forced, part.classes


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
    import pandas as pd

    def groups(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            rows = [
                (c, o, n, states.get((t, p), NO_STATE)[1])
                for c, (t, p, o, n, _) in zip(pdf["chunk"], _changed_rows(pdf), strict=True)
            ]
            g = leader_groups(rows, ctx, demoted)
            if g:
                yield pd.DataFrame(
                    {
                        "c": [int(k[0]) for k in g],
                        "s": [list(k[1]) for k in g],
                        "o": [int(k[2]) for k in g],
                        "n": list(g.values()),
                    }
                )

    return {
        (r.c, tuple(r.s), r.o): int(r.n)
        for r in final.mapInPandas(groups, GROUP_SCHEMA)
        .groupBy("c", "s", "o")
        .sum("n")
        .withColumnRenamed("sum(n)", "n")
        .collect()
    }


class SparkChunks:
    """The pipeline's backend on Spark: the partitions stay in executors, cached and
    chunk-partitioned (one Spark partition holds whole chunks); each pass is a ``mapInPandas``
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
        import pandas as pd

        self.keep_all = keep_all

        def plan_chunks(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for c, group in _chunk_groups(batches):
                rows = plan_chunk(_rows(group), prep, int(c))
                if not keep_all:
                    rows = [r for r in rows if list(r[3]) != list(r[2])]
                if rows:
                    yield _frame(rows, int(c))

        # lazy: the first pass that needs the rows runs it, in executors
        self.final = self.df.mapInPandas(plan_chunks, FINAL_SCHEMA)

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
        import pandas as pd
        from pyspark.sql import functions as F

        def apply(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for c, group in _chunk_groups(batches):
                rows = bytes_chunk(_changed_rows(group), bp, int(c))
                if rows:
                    yield _frame(rows, int(c))

        # only the chunks with a share of this round pass through Python; the others are kept
        # as they are (each chunk stays whole in one Spark partition on either side)
        final = self.final
        active = sorted(c for c, q in bp.quotas.items() if q.out)
        busy = F.col("chunk").isin(active)
        nxt = (
            final.filter(~busy)
            .unionByName(final.filter(busy).mapInPandas(apply, FINAL_SCHEMA))
            .coalesce(self.chunks)  # merges whole partitions: a chunk is never split
            .cache()
        )
        nxt.count()  # materialised before the previous round's rows are dropped
        final.unpersist()
        self.final = nxt

    def apply_level(self, pairs: Mapping[int, list[tuple[int, int]]], prep: Prepared) -> None:
        import pandas as pd
        from pyspark.sql import functions as F

        def apply(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for c, group in _chunk_groups(batches):
                rows = level_chunk(_changed_rows(group), pairs.get(int(c), ()), prep)
                if rows:
                    yield _frame(rows, int(c))

        final = self.final.cache()
        busy = F.col("chunk").isin(sorted(pairs))
        nxt = (
            final.filter(~busy)
            .unionByName(final.filter(busy).mapInPandas(apply, FINAL_SCHEMA))
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
        import pandas as pd

        def lead_chunks(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            for c, group in _chunk_groups(batches):
                rows = lead_chunk(_changed_rows(group), lp, int(c))
                if rows:
                    yield _frame(rows)

        out = self.final.mapInPandas(lead_chunks, CHANGED_SCHEMA).toPandas()
        self.final.unpersist()
        return _changed_rows(out)

    def changed(self) -> list[Changed]:
        from pyspark.sql import functions as F

        final = self.final
        if self.keep_all:
            final = final.filter(F.col("new") != F.col("old"))
        return _changed_rows(final.drop("chunk").toPandas())  # Arrow, not pickled rows


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
