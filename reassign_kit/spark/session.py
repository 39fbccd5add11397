"""One Spark session per process, set up for this kind of tool: local mode by default (any
``spark.master`` works), Python workers on this interpreter, UI off, driver on loopback, few
shuffle partitions (the planner's data are per-broker aggregates and a few hash buckets)."""

from __future__ import annotations

import os
import sys
import threading

_lock = threading.Lock()
_session = None


def get_spark(
    master: str | None = None, shuffle_partitions: int = 4, app_name: str = "reassign-kit"
):
    """The process's session, created on first use. ``master`` defaults to ``local[2]`` (or
    $RK_SPARK_MASTER); a later call with another master gets the existing session."""
    global _session
    with _lock:
        if _session is not None and _session._sc._jsc is not None:
            return _session
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        from pyspark.sql import SparkSession

        master = master or os.environ.get("RK_SPARK_MASTER") or "local[2]"
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
            .config("spark.default.parallelism", str(shuffle_partitions))
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.python.worker.reuse", "true")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "50000")
            .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
            .config("spark.driver.memory", os.environ.get("RK_SPARK_DRIVER_MEMORY", "2g"))
        )
        _session = builder.getOrCreate()
        _session.sparkContext.setLogLevel("ERROR")
        return _session


def stop_spark() -> None:
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
