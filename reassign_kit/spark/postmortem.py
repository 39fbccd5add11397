"""Journal(s) -> Spark DataFrames -> the postmortem tables (and their Plotly charts).

One or many journals (JSON lines, see ``journal``) are read with Spark, so a postmortem over a
month of runs on a big cluster is as easy as one over a demo. Every table is computed in Spark;
only the small results (one row per move, per broker, per batch, per event of interest) are
turned into pandas for the charts, and the timeline chart is capped.

Tables: ``moves`` (one row per move: start, end, state, batch, steps, size), ``concurrency``
(moves of a run in flight after each start / end, against the run's caps), ``throughput_per_broker``,
``batch_waits`` (time lost to waiting for the slowest move of each batch), ``trouble`` (stuck,
deadline, cancelled, failed moves and errors), ``throttle_changes``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

TERMINAL = ("completed", "cancelled", "failed")
STARTS = ("submitted", "adopted")
TROUBLE = ("stuck", "deadline", "cancelled", "failed", "error", "warning")


def session(master: str | None = None) -> Any:
    """The process's one Spark session (``spark.session.get_spark``: UI off, loopback driver,
    workers on this Python). ``master``: None takes the running session (or local mode);
    another master than the running session's is refused (``SparkSessionError``)."""
    from .session import get_spark

    return get_spark(master)


def stop_session() -> None:
    """Stop the process's session (the next ``session()`` starts a new one)."""
    from .session import stop_spark

    stop_spark()


def _col(df: Any, name: str, dtype: str = "string") -> Any:
    """The column, or a typed null when no journal had that field (schemas are inferred)."""
    from pyspark.sql import functions as F

    return F.col(name) if name in df.columns else F.lit(None).cast(dtype)


@dataclass
class Postmortem:
    events: Any  # Spark DataFrame of every event of every journal
    _moves: Any = field(default=None, repr=False)  # moves(), computed once: every table uses it

    @classmethod
    def of(cls, spark: Any, paths: str | Iterable[str]) -> Postmortem:
        from pyspark.sql import functions as F

        from ..moves.journal import to_spark

        paths = [paths] if isinstance(paths, str) else list(paths)
        df = to_spark(spark, paths).withColumn("journal", F.input_file_name())
        if "_corrupt_record" in df.columns:  # a torn last line of a killed run
            df = df.where(F.col("_corrupt_record").isNull()).drop("_corrupt_record")
        return cls(df.cache())

    # ------------------------------------------------------------------ tables

    def runs_pandas(self) -> Any:
        from pyspark.sql import functions as F

        e = self.events
        return (
            e.groupBy("run_id")
            .agg(
                F.min("ts").alias("start_ts"),
                F.max("ts").alias("end_ts"),
                F.count("*").alias("events"),
            )
            .orderBy("start_ts")
            .toPandas()
        )

    def moves(self) -> Any:
        """One row per (run, partition): start, end (null while running), state, batch, size."""
        if self._moves is None:
            self._moves = self._compute_moves().cache()
        return self._moves

    def _compute_moves(self) -> Any:
        from pyspark.sql import functions as F

        e = (
            self.events.where(F.col("topic").isNotNull())
            if "topic" in self.events.columns
            else None
        )
        if e is None:
            return self.events.sparkSession.createDataFrame(
                [],
                "run_id string, topic string, partition long, start double, end double, "
                "state string, batch long, steps long, size_bytes long, current array<long>, "
                "target array<long>, duration double",
            )
        ev = F.col("event")
        terminal = F.when(ev.isin(*TERMINAL), F.struct(F.col("ts"), ev.alias("e")))
        return (
            e.groupBy("run_id", "topic", "partition")
            .agg(
                F.min(F.when(ev.isin(*STARTS), F.col("ts"))).alias("start"),
                F.max(F.when(ev.isin(*TERMINAL), F.col("ts"))).alias("end"),
                F.max(terminal).getField("e").alias("state"),
                F.first(_col(e, "batch", "long"), ignorenulls=True).alias("batch"),
                F.max(_col(e, "steps", "long")).alias("steps"),
                F.first(_col(e, "size_bytes", "long"), ignorenulls=True).alias("size_bytes"),
                F.first(
                    F.when(ev == "submitted", _col(e, "current", "array<long>")), ignorenulls=True
                ).alias("current"),
                F.first(
                    F.when(ev == "submitted", _col(e, "target", "array<long>")), ignorenulls=True
                ).alias("target"),
            )
            .where(F.col("start").isNotNull())
            .withColumn("state", F.coalesce(F.col("state"), F.lit("running")))
            .withColumn("duration", F.col("end") - F.col("start"))
            .orderBy("run_id", "start", "topic", "partition")
        )

    def concurrency(self) -> Any:
        """Moves of each run in flight after every start / end (ends first at equal times)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        m = self.moves()
        starts = m.select("run_id", F.col("start").alias("ts"), F.lit(1).alias("delta"))
        ends = m.where(F.col("end").isNotNull()).select(
            "run_id", F.col("end").alias("ts"), F.lit(-1).alias("delta")
        )
        w = (
            Window.partitionBy("run_id")
            .orderBy("ts", "delta")
            .rowsBetween(Window.unboundedPreceding, 0)
        )
        return (
            starts.unionByName(ends)
            .withColumn("in_flight", F.sum("delta").over(w))
            .orderBy("run_id", "ts", "delta")
        )

    def caps_pandas(self) -> Any:
        """Per run: the pacing options it ran with (from ``run_started``)."""
        import pandas as pd
        from pyspark.sql import functions as F

        e = self.events.where(F.col("event") == "run_started")
        if "options" not in e.columns:
            return pd.DataFrame(columns=["run_id"])
        rows = []
        for r in e.select("run_id", "options", _col(e, "mode").alias("mode")).collect():
            opts = r["options"].asDict() if r["options"] is not None else {}
            rows.append({"run_id": r["run_id"], "mode": r["mode"], **opts})
        return pd.DataFrame(rows)

    def throughput_per_broker(self) -> Any:
        """Bytes each broker received (new replicas) and sent (as the move's source leader),
        over the span of its moves; a rough but honest MB/s per broker and direction."""
        from pyspark.sql import functions as F

        m = self.moves().where(F.col("state") == "completed").where(F.col("target").isNotNull())
        new = m.select(
            "run_id",
            "start",
            "end",
            "size_bytes",
            F.explode(
                F.array_except("target", F.coalesce("current", F.array().cast("array<long>")))
            ).alias("broker"),
        ).withColumn("direction", F.lit("in"))
        src = (
            m.where(F.size("current") > 0)
            .select(
                "run_id",
                "start",
                "end",
                (F.col("size_bytes") * F.size(F.array_except("target", "current"))).alias(
                    "size_bytes"
                ),
                F.element_at("current", 1).alias("broker"),
            )
            .withColumn("direction", F.lit("out"))
        )
        both = new.unionByName(src)
        return (
            both.groupBy("run_id", "broker", "direction")
            .agg(
                F.sum("size_bytes").alias("bytes"),
                F.count("*").alias("moves"),
                (F.max("end") - F.min("start")).alias("span_s"),
            )
            .withColumn("mb_per_s", F.col("bytes") / F.greatest(F.col("span_s"), F.lit(1e-3)) / 1e6)
            .orderBy("run_id", "broker", "direction")
        )

    def batch_waits(self) -> Any:
        """Per batch (batch mode): how long the batch waited for its slowest move after the
        median move had finished, and the slot-seconds left idle (sum of end-to-batch-end)."""
        from pyspark.sql import functions as F

        m = self.moves().where(F.col("batch").isNotNull()).where(F.col("end").isNotNull())
        b = m.groupBy("run_id", "batch").agg(
            F.min("start").alias("start"),
            F.max("end").alias("end"),
            F.percentile_approx("end", 0.5).alias("median_end"),
            F.count("*").alias("moves"),
            F.sum("end").alias("sum_end"),
        )
        return (
            b.withColumn("duration_s", F.col("end") - F.col("start"))
            .withColumn("waiting_for_slowest_s", F.col("end") - F.col("median_end"))
            .withColumn("idle_slot_s", F.col("moves") * F.col("end") - F.col("sum_end"))
            .drop("sum_end")
            .orderBy("run_id", "batch")
        )

    def trouble(self) -> Any:
        """Stuck, deadline, cancelled and failed moves, errors and warnings, in time order."""
        from pyspark.sql import functions as F

        e = self.events.where(F.col("event").isin(*TROUBLE))
        return e.select(
            "run_id",
            "ts",
            "event",
            _col(e, "topic").alias("topic"),
            _col(e, "partition", "long").alias("partition"),
            F.coalesce(_col(e, "reason"), _col(e, "message"), _col(e, "scope")).alias("detail"),
        ).orderBy("ts")

    def throttle_changes(self) -> Any:
        from pyspark.sql import functions as F

        e = self.events.where(F.col("event").isin("throttle_set", "throttle_cleared"))
        rates = (
            F.to_json(_col(e, "broker_rates", "map<string,long>"))
            if "broker_rates" in e.columns
            else F.lit(None)
        )
        return e.select(
            "run_id",
            "ts",
            "event",
            _col(e, "rate", "long").alias("rate"),
            rates.alias("broker_rates"),
        ).orderBy("ts")


def report(
    moves: Any, conc: Any, thr: Any, batches: Any, trouble: Any, throttles: Any, caps: Any
) -> dict[str, Any]:
    """The postmortem as JSON values: a summary plus every (small) table."""
    states = moves["state"].value_counts().to_dict() if len(moves) else {}
    peak = conc.groupby("run_id")["in_flight"].max().to_dict() if len(conc) else {}
    summary = {
        "runs": sorted(set(moves["run_id"])) if len(moves) else [],
        "moves": int(len(moves)),
        "states": {k: int(v) for k, v in states.items()},
        "peak_in_flight": {k: int(v) for k, v in peak.items()},
        "caps": caps.to_dict("records"),
        "wall_s": float(moves["end"].max() - moves["start"].min())
        if len(moves) and moves["end"].notna().any()
        else None,
        "slowest_move_s": float(moves["duration"].max())
        if len(moves) and moves["duration"].notna().any()
        else None,
        "batch_wait_s": float(batches["waiting_for_slowest_s"].sum()) if len(batches) else 0.0,
        "stuck": int((trouble["event"] == "stuck").sum()) if len(trouble) else 0,
        "cancelled": int((trouble["event"] == "cancelled").sum()) if len(trouble) else 0,
        "throttle_changes": int(len(throttles)),
    }
    return {
        "summary": summary,
        "throughput_per_broker": thr.to_dict("records"),
        "batches": batches.to_dict("records"),
        "trouble": trouble.to_dict("records"),
        "throttle_changes": throttles.to_dict("records"),
    }
