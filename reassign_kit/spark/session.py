"""One Spark session per process, set up for this kind of tool: local mode by default (any
``spark.master`` works), Python workers on this interpreter, UI off, few shuffle partitions (the
planner's data are per-broker aggregates and a few hash buckets).

Where the driver listens: executors on other hosts must reach it, so
``spark.driver.host`` and ``spark.driver.bindAddress`` come from, in order, the ``driver_host`` /
``bind_address`` parameters, $RK_SPARK_DRIVER_HOST / $RK_SPARK_DRIVER_BIND_ADDRESS, the user's
Spark configuration (``spark-defaults.conf`` in $SPARK_CONF_DIR or $SPARK_HOME/conf, ``--conf`` in
$PYSPARK_SUBMIT_ARGS: spark-submit applies those itself, so they are left alone); only in local
mode does loopback (127.0.0.1) stand in when none says. A later call asking for another master
than the running session's is refused (``SparkSessionError``), never silently given the old one.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import threading
from collections.abc import Mapping

from ..errors import SparkSessionError, SparkStartError, require_extra
from ..logfile import default_log_path, to_log_file

LOOPBACK = "127.0.0.1"
DRIVER_HOST = "spark.driver.host"
BIND_ADDRESS = "spark.driver.bindAddress"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"
LOCAL_JIT = "-XX:TieredStopAtLevel=1"

_PROPERTY = re.compile(r"^([^\s=:]+)(?:\s*[=:]\s*|\s+)(.*)$")
_lock = threading.Lock()
_session = None
_log_path: str | None = None  # log_path()


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[") or master.startswith("local-cluster")


def user_spark_conf(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The user's Spark configuration that spark-submit will apply: ``spark-defaults.conf`` of
    $SPARK_CONF_DIR (else $SPARK_HOME/conf), then ``--conf k=v`` of $PYSPARK_SUBMIT_ARGS."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    conf_dir = env.get("SPARK_CONF_DIR") or (
        os.path.join(env["SPARK_HOME"], "conf") if env.get("SPARK_HOME") else None
    )
    if conf_dir:
        path = os.path.join(conf_dir, "spark-defaults.conf")
        try:
            with open(path, encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if not line or line.startswith("#"):
                        continue
                    m = _PROPERTY.match(line)  # java.util.Properties: "k v", "k=v", "k: v"
                    if m:
                        out[m.group(1)] = m.group(2).strip()
        except OSError:
            pass
    args = shlex.split(env.get("PYSPARK_SUBMIT_ARGS", ""))
    for i, a in enumerate(args):
        kv = None
        if a == "--conf" and i + 1 < len(args):
            kv = args[i + 1]
        elif a.startswith("--conf="):
            kv = a[len("--conf=") :]
        if kv and "=" in kv:
            k, v = kv.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def driver_conf(
    master: str,
    driver_host: str | None = None,
    bind_address: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The driver address settings this tool sets itself (an empty dict leaves them to the
    user's Spark configuration, or to Spark: SPARK_LOCAL_IP, else the host's address)."""
    env = os.environ if environ is None else environ
    user = user_spark_conf(env)
    host = driver_host or env.get("RK_SPARK_DRIVER_HOST") or None
    bind = bind_address or env.get("RK_SPARK_DRIVER_BIND_ADDRESS") or None
    out: dict[str, str] = {}
    if host:
        out[DRIVER_HOST] = host
    elif DRIVER_HOST not in user and is_local(master):
        out[DRIVER_HOST] = LOOPBACK
    if bind:
        out[BIND_ADDRESS] = bind
    elif BIND_ADDRESS not in user and is_local(master) and not host:
        out[BIND_ADDRESS] = LOOPBACK
    return out


def jvm_conf(master: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The driver JVM's options this tool sets: in local mode, when the user's configuration
    sets none, the C1 compiler alone: a local job is short, and C2's optimising costs more CPU
    than it saves on a few cores."""
    env = os.environ if environ is None else environ
    if not is_local(master) or JAVA_OPTIONS in user_spark_conf(env):
        return {}
    if "--driver-java-options" in env.get("PYSPARK_SUBMIT_ARGS", ""):
        return {}
    return {JAVA_OPTIONS: LOCAL_JIT}


def _check_master(running, asked: str | None) -> None:
    if asked is None:
        return
    have = running.sparkContext.master
    if have != asked:
        raise SparkSessionError(
            f"a Spark session on master {have!r} already runs in this process; {asked!r} was "
            "asked for. Spark would hand back the running session, so the work would not go "
            "where you asked: ask for the same master, or stop the running session first "
            "(reassign_kit.spark.session.stop_spark(), or spark.stop())"
        )


def get_spark(
    master: str | None = None,
    shuffle_partitions: int = 4,
    app_name: str = "reassign-kit",
    driver_host: str | None = None,
    bind_address: str | None = None,
):
    """The process's session, created on first use. ``master`` defaults to ``local[2]`` (or
    $RK_SPARK_MASTER); asking for another master than the running session's raises
    ``SparkSessionError``. ``driver_host`` / ``bind_address``: where executors reach the driver
    (see the module doc for the defaults)."""
    global _session
    with _lock:
        if _session is not None and _session._sc._jsc is not None:
            _check_master(_session, master)
            return _session
        require_extra(
            "pyspark.sql",
            "the Spark engine (plan's default engine, validate --engine spark)",
            "or `--engine local`: the same planner in this process, without Spark",
        )
        from pyspark.sql import SparkSession

        active = SparkSession.getActiveSession()  # one the user made (a notebook, a job)
        if active is not None and active._sc._jsc is not None:
            _check_master(active, master)
            _session = active
            return active
        master = master or os.environ.get("RK_SPARK_MASTER") or "local[2]"
        # Python workers on this interpreter, wherever Spark starts them
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        addresses = driver_conf(master, driver_host, bind_address)
        if is_local(master) and addresses.get(BIND_ADDRESS) == LOOPBACK:
            os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        builder = (
            SparkSession.builder.master(master)
            .appName(app_name)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
            .config("spark.default.parallelism", str(shuffle_partitions))
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.adaptive.enabled", "false")
            .config("spark.python.worker.reuse", "true")
            .config("spark.sql.execution.arrow.maxRecordsPerBatch", "50000")
            .config("spark.driver.memory", os.environ.get("RK_SPARK_DRIVER_MEMORY", "2g"))
        )
        for k, v in addresses.items():
            builder = builder.config(k, v)
        for k, v in jvm_conf(master).items():
            builder = builder.config(k, v)
        if "spark.executorEnv.PYSPARK_PYTHON" not in user_spark_conf():
            builder = builder.config(
                "spark.executorEnv.PYSPARK_PYTHON", os.environ["PYSPARK_PYTHON"]
            )
        global _log_path
        log = default_log_path("spark")
        try:  # the JVM keeps the log file as its stderr: log4j's lines never reach the terminal
            with to_log_file(log, verbose=bool(os.environ.get("RK_VERBOSE"))):
                session = builder.getOrCreate()
        except Exception as e:  # noqa: BLE001 - Java / gateway failures: named, no traceback
            raise SparkStartError(_start_failure(master, e)) from None
        _log_path = None if os.environ.get("RK_VERBOSE") else log
        _session = session
        _session.sparkContext.setLogLevel("ERROR")
        return _session


def _start_failure(master: str, err: BaseException) -> str:
    """Why Spark did not start, with what to check: JAVA_HOME (set, and holding bin/java) or
    java on PATH, and the engine that runs without Spark."""
    import shutil

    text = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
    java_home = os.environ.get("JAVA_HOME")
    if java_home and not os.path.isfile(os.path.join(java_home, "bin", "java")):
        java = f"JAVA_HOME={java_home} has no bin/java: point it at a Java 17+ installation"
    elif java_home:
        java = f"JAVA_HOME={java_home}"
    else:
        found = shutil.which("java")
        java = f"java: {found}" if found else "no java on PATH and JAVA_HOME is not set"
    return (
        f"Spark could not start (master {master}): {type(err).__name__}: {text}; {java} "
        "(Spark needs Java 17+); `--engine local` (plan, validate) runs without Spark"
    )


def log_path() -> str | None:
    """The file Spark's and the JVM's lines go to (quiet output), once a session
    was started here without $RK_VERBOSE; None otherwise."""
    return _log_path


def stop_spark() -> None:
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None
