"""Snapshot -> Spark DataFrames: ``partitions`` (topic, partition, replicas, size_bytes) with a
``chunk`` column (the planner's deterministic hash bucket). Big snapshots are read from the
Parquet form straight into executors; small ones are shipped from the in-memory snapshot."""

from __future__ import annotations

import os

from ..snapshot.snapshot import Snapshot
from ..snapshot.tier import move_bytes_of

PARTITION_SCHEMA = "topic string, partition int, replicas array<int>, size_bytes long"


def partitions_df(spark, source: Snapshot | str):
    """The partitions of a snapshot (object, or path to its Parquet directory)."""
    if isinstance(source, str):
        return spark.read.parquet(os.path.join(source, "partitions.parquet")).selectExpr(
            "topic",
            "cast(partition as int) partition",
            "cast(replicas as array<int>) replicas",
            "cast(size_bytes as long) size_bytes",
        )
    pdf = source.to_pandas()
    if pdf.empty:
        return spark.createDataFrame([], PARTITION_SCHEMA)
    # sized by what a move copies, as the in-process planner's rows (snapshot.tier); the
    # Parquet form above carries no tier offsets: its size_bytes (the local log) is that
    cost = move_bytes_of(source)
    pdf["size_bytes"] = [cost[p.tp].copied for p in source.partitions]
    return spark.createDataFrame(pdf, PARTITION_SCHEMA)


def with_chunk(df, chunks: int):
    """Add the chunk column: crc32('topic-partition') mod chunks, the same as planner.chunk_key."""
    from pyspark.sql import functions as F

    key = F.crc32(
        F.concat(F.col("topic"), F.lit("-"), F.col("partition").cast("string")).cast("binary")
    )
    return df.withColumn("chunk", F.pmod(key, F.lit(chunks)).cast("int"))


def brokers_and_topics(source: Snapshot | str) -> Snapshot:
    """The small part of a snapshot (brokers, topics) as a Snapshot without partitions."""
    if isinstance(source, Snapshot):
        return Snapshot(source.brokers, source.topics, ())
    import pyarrow.parquet as pq

    from ..snapshot.entries import BrokerEntry, TopicEntry

    brokers = pq.read_table(os.path.join(source, "brokers.parquet")).to_pylist()
    topics = pq.read_table(os.path.join(source, "topics.parquet")).to_pylist()
    return Snapshot.of(
        [
            BrokerEntry(
                int(b["id"]),
                b["rack"],
                tuple(b["log_dirs"]) if b.get("log_dirs") is not None else None,
                tuple(b["cordoned_log_dirs"]) if b.get("cordoned_log_dirs") is not None else None,
            )
            for b in brokers
        ],
        [
            TopicEntry(
                t["name"],
                t["min_insync_replicas"],
                bool(t.get("remote_storage_enable") or False),
                t.get("local_retention_bytes"),
                t.get("local_retention_ms"),
            )
            for t in topics
        ],
        [],
    )
