"""The Kafka distribution a sandbox runs (re-exported by sandbox): which version and
metadata mode (KRaft or ZooKeeper), where it is kept (``RK_KAFKA_CACHE``), fetched from Maven
Central, its classpath, the JVM and its flags, a Kafka class run as a process."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import SandboxError

# The sandbox's defaults when a caller names no version / mode: what `make compat` sets to run
# every test fixture (each starts its own sandbox) against another release.
KAFKA_VERSION = "4.4.0"


METADATA_MODES = ("kraft", "zookeeper")


VERSION_ENV = "RK_SANDBOX_KAFKA_VERSION"


METADATA_ENV = "RK_SANDBOX_METADATA"


REPO_ROOT = Path(__file__).resolve().parents[2]


# Small JVMs on a 2-core machine: few GC/compiler threads, fast start-up.
HEAP = os.environ.get("RK_SANDBOX_HEAP", "-Xms128m -Xmx512m")


JVM_FLAGS = [
    "-XX:+UseSerialGC",
    "-XX:CICompilerCount=2",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]


LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stdout.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.server.name = org.apache.kafka.server
logger.server.level = INFO
logger.controller.name = org.apache.kafka.controller
logger.controller.level = INFO
"""


def default_version() -> str:
    """The release a sandbox runs when none is named: $RK_SANDBOX_KAFKA_VERSION, else 4.4.0."""
    return check_version(os.environ.get(VERSION_ENV) or KAFKA_VERSION)


def default_metadata() -> str:
    """The metadata mode when none is named: $RK_SANDBOX_METADATA, else kraft."""
    return os.environ.get(METADATA_ENV) or "kraft"


def check_version(version: str) -> str:
    """A release as Maven Central names it (3.9.1, 4.0.0): anything else is refused by name
    before mvn is asked (a path in it would escape the cache folder)."""
    import re

    v = str(version).strip()
    if not re.fullmatch(r"\d+\.\d+\.\d+", v):
        raise SandboxError(
            f"--kafka-version must be a release like 3.9.1 or 4.3.1, got {version!r}"
        )
    return v


def check_mode(version: str, metadata: str) -> str:
    if metadata not in METADATA_MODES:
        raise SandboxError(
            f"--metadata must be one of {', '.join(METADATA_MODES)}, got {metadata!r}"
        )
    major, minor = (int(x) for x in version.split(".")[:2])
    if metadata == "zookeeper" and major >= 4:
        raise SandboxError(
            f"--metadata zookeeper needs Kafka 3.x: ZooKeeper mode was removed in 4.0 "
            f"(asked for {version})"
        )
    if metadata == "kraft" and (major, minor) < (3, 3):
        raise SandboxError(
            f"KRaft is production-ready from Kafka 3.3: use --metadata zookeeper for {version}"
        )
    return metadata


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    base = Path(os.environ.get("RK_KAFKA_CACHE", REPO_ROOT / ".cache" / "kafka"))
    return base / version


def require(tool: str, why: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise SandboxError(f"{tool} not found on PATH: {why}")
    return path


def fetch_kafka(version: str = KAFKA_VERSION, quiet: bool = True) -> Path:
    """Resolve the broker and the official tools from Maven Central once; later calls are free."""
    libs = kafka_home(version) / "libs"
    marker = libs / ".complete"
    if marker.exists():
        return libs
    mvn = require("mvn", "Maven is needed to fetch Apache Kafka from Maven Central")
    require("java", "a Java 17+ runtime is needed to run Apache Kafka")
    pom = REPO_ROOT / "tools" / "kafka-pom.xml"
    if not pom.exists():
        raise SandboxError(f"{pom} is missing: cannot fetch Kafka outside the source checkout")
    libs.mkdir(parents=True, exist_ok=True)
    cmd = [
        mvn,
        "-B",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-Dkafka.version={version}",
        f"-DoutputDirectory={libs}",
        "-DincludeScope=runtime",
    ]
    if quiet:
        cmd.insert(1, "-q")
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise SandboxError(f"mvn could not fetch Apache Kafka {version}:\n{tail}")
    marker.write_text(version + "\n")
    return libs


def kafka_classpath(version: str = KAFKA_VERSION) -> str:
    libs = kafka_home(version) / "libs"
    if not (libs / ".complete").exists():
        raise SandboxError(
            f"Apache Kafka {version} jars are not fetched yet ({libs}); run `make setup` "
            "or `reassign-kit sandbox fetch`"
        )
    return str(libs / "*")


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    return require("java", "a Java 17+ runtime is needed to run Apache Kafka")


def run_kafka_class(
    main_class: str,
    args: Sequence[str],
    timeout: float = 300,
    check: bool = False,
    version: str = KAFKA_VERSION,
) -> subprocess.CompletedProcess[str]:
    """Run a Kafka main class (e.g. the official ReassignPartitionsCommand) from the fetched jars
    (of ``version``: the default release's official tool unless told)."""
    cmd = [
        java_binary(),
        "-Xmx256m",
        *JVM_FLAGS,
        "-cp",
        kafka_classpath(version),
        main_class,
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise SandboxError(f"{main_class} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc


def info(version: str | None = None) -> dict[str, Any]:
    version = check_version(version) if version else default_version()
    libs = kafka_home(version) / "libs"
    return {
        "kafka_version": version,
        "libs": str(libs),
        "fetched": (libs / ".complete").exists(),
        "classpath": str(libs / "*"),
        "reassign_partitions_class": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "example": (
            f"java -cp '{libs}/*' org.apache.kafka.tools.reassign.ReassignPartitionsCommand "
            "--bootstrap-server <bootstrap_servers> --list"
        ),
    }
