"""The planner on Spark: the same pure chunk planner as ``reassign_kit.planner``, with the
per-(chunk, broker) aggregation and the chunk passes running in executors. The driver only sees
small aggregates and the plan itself (the partitions that change), never the replica set."""

from __future__ import annotations

import json
from collections.abc import Iterator

from ..planner import (
    Aggregates,
    PlanParams,
    PlanResult,
    aggregate_rows,
    finish,
    plan_chunk,
    prepare,
    rule_context,
)
from ..snapshot import Snapshot
from .frames import brokers_and_topics, partitions_df, with_chunk

AGG_SCHEMA = "kind string, c int, key string, n long"
CHANGED_SCHEMA = "topic string, partition int, old array<int>, new array<int>, size_bytes long"


def _rows(pdf) -> list[tuple]:
    return [
        (t, int(p), [int(x) for x in r], int(s))
        for t, p, r, s in zip(pdf["topic"], pdf["partition"], pdf["replicas"], pdf["size_bytes"], strict=True)
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


def plan_spark(spark, source: Snapshot | str, params: PlanParams | None = None) -> PlanResult:
    """Plan on Spark from a snapshot object or a Parquet snapshot directory."""
    import pandas as pd

    params = params or PlanParams()
    small = brokers_and_topics(source)
    ctx = rule_context(small, params)
    # one shuffle puts every chunk in one Spark partition; cached, both passes read it there
    df = (
        with_chunk(partitions_df(spark, source), params.chunks)
        .repartition(params.chunks, "chunk")
        .cache()
    )

    def aggregate(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        for pdf in batches:
            yield pd.DataFrame(_agg_entries(aggregate_rows(_rows(pdf), params, ctx)))

    agg_rows = (
        df.mapInPandas(aggregate, AGG_SCHEMA).groupBy("kind", "c", "key").sum("n").collect()
    )
    agg = _agg_from_rows([tuple(r) for r in agg_rows])
    prep = prepare(agg, ctx, params)

    def plan_chunks(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        parts = [b for b in batches if len(b)]
        if not parts:
            return
        pdf = pd.concat(parts, ignore_index=True)
        for c, group in pdf.groupby("chunk", sort=True):
            changed = plan_chunk(_rows(group), prep, int(c))
            if changed:
                yield pd.DataFrame(
                    {
                        "topic": [x[0] for x in changed],
                        "partition": [x[1] for x in changed],
                        "old": [list(x[2]) for x in changed],
                        "new": [list(x[3]) for x in changed],
                        "size_bytes": [x[4] for x in changed],
                    }
                )

    try:
        out = df.mapInPandas(plan_chunks, CHANGED_SCHEMA).collect()
    finally:
        df.unpersist()
    changed = [(r.topic, r.partition, list(r.old), list(r.new), r.size_bytes) for r in out]
    return finish(changed, prep)
