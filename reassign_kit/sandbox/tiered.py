"""Tiered storage (KIP-405) in a sandbox: the brokers' remote log storage on a local directory.

The remote storage manager is Kafka's own ``LocalTieredStorage``
(``org.apache.kafka.server.log.remote.storage.LocalTieredStorage``), published in the
``kafka-storage`` artifact's test jar: classifier ``test-fixtures`` from 4.4 (Gradle's test
fixtures), ``test`` before. It is fetched from Maven Central into
``.cache/kafka/<version>/tiered/`` and loaded through the broker's own
``remote.log.storage.manager.class.path`` (its own class loader), so the broker's classpath is
unchanged. Metadata: the topic-based remote log metadata manager (Kafka's default), on the
brokers' listener. Every broker shares one storage directory, as Kafka's own tiered-storage
test harness does: a new leader reads what another broker uploaded.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from ..errors import SandboxError
from .kafka import REPO_ROOT, kafka_home, require

RSM_CLASS = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"
RLMM_CLASS = (
    "org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager"
)
# Maven's dependency plugin by version: the one a bare `mvn` resolves (2.8) has no standalone copy
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
# broker configs the KRaft controllers must have as well (they validate topic configs)
CONTROLLER_KEYS = frozenset({"remote.log.storage.system.enable"})
# the remote storage's directory inside the sandbox's (its presence: the sandbox is tiered)
STORAGE_DIR = "remote-storage"
# the smallest segment Kafka accepts (segment.bytes' minimum): only closed segments are tiered
SEGMENT_BYTES = 1024 * 1024


def classifier(version: str) -> str:
    """The classifier of kafka-storage's jar that holds LocalTieredStorage in ``version``."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return "test-fixtures" if (major, minor) >= (4, 4) else "test"


def supported(version: str) -> bool:
    """Tiered storage is usable (not early access) from Kafka 3.6 on."""
    major, minor = (int(x) for x in version.split(".")[:2])
    return (major, minor) >= (3, 6)


def fetch_storage_jar(version: str) -> Path:
    """kafka-storage's test jar of ``version`` (the one holding LocalTieredStorage), fetched
    once from Maven Central; later calls are free."""
    out = kafka_home(version) / "tiered"
    jar = out / f"kafka-storage-{version}-{classifier(version)}.jar"
    if zipfile.is_zipfile(jar):  # a truncated or planted file is fetched again
        return jar
    jar.unlink(missing_ok=True)
    mvn = require("mvn", "Maven is needed to fetch Kafka's LocalTieredStorage from Maven Central")
    out.mkdir(parents=True, exist_ok=True)
    artifact = f"org.apache.kafka:kafka-storage:{version}:jar:{classifier(version)}"
    proc = subprocess.run(
        [mvn, "-B", "-q", f"{DEPENDENCY_PLUGIN}:copy", f"-Dartifact={artifact}"]
        + [f"-DoutputDirectory={out}"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
    )
    if proc.returncode != 0 or not zipfile.is_zipfile(jar):
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise SandboxError(f"mvn could not fetch {artifact} (LocalTieredStorage):\n{tail}")
    return jar


def sandbox_configs(
    d: Path, version: str, security: str, brokers: int, configs: dict[str, str] | None
) -> dict[str, str]:
    """The broker configs of a tiered sandbox in ``d`` (``configs`` over them), the storage
    jar fetched; refused by name where the sandbox cannot run it."""
    if not supported(version):
        raise SandboxError(
            f"--tiered-storage needs Kafka 3.6 or later (tiered storage was early access "
            f"before), asked for {version}"
        )
    if security != "plain":
        raise SandboxError(
            f"--tiered-storage runs with --security plain only (the remote log metadata "
            f"manager's clients would need the brokers' credentials), got {security}"
        )
    jar = fetch_storage_jar(version)
    return {**broker_configs(d / STORAGE_DIR, jar, "PLAINTEXT", brokers), **(configs or {})}


def broker_configs(storage_dir: Path, jar: Path, listener: str, brokers: int) -> dict[str, str]:
    """The broker settings of a tiered sandbox: remote storage on ``storage_dir`` (shared),
    the topic-based metadata manager, and short task intervals so that segments are uploaded
    and local copies deleted within seconds rather than minutes."""
    rf = str(min(3, brokers))
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": RSM_CLASS,
        "remote.log.storage.manager.class.path": str(jar),
        "remote.log.storage.manager.impl.prefix": "rsm.config.",
        "rsm.config.dir": str(storage_dir),
        "rsm.config.delete.on.close": "false",
        "remote.log.metadata.manager.class.name": RLMM_CLASS,
        "remote.log.metadata.manager.listener.name": listener,
        "remote.log.metadata.manager.impl.prefix": "rlmm.config.",
        "rlmm.config.remote.log.metadata.topic.replication.factor": rf,
        "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
        "rlmm.config.remote.log.metadata.topic.min.isr": "1",
        "remote.log.manager.task.interval.ms": "2000",
        "log.retention.check.interval.ms": "2000",
    }


def topic_configs(local_retention_bytes: int) -> dict[str, str]:
    """A tiered topic whose local log keeps ``local_retention_bytes`` per partition: closed
    segments of 1 MiB are uploaded, and the local copies beyond that deleted."""
    if local_retention_bytes < 0:
        raise SandboxError(f"--local-retention-bytes must be >= 0, got {local_retention_bytes}")
    return {
        "remote.storage.enable": "true",
        "local.retention.bytes": str(local_retention_bytes),
        "segment.bytes": str(SEGMENT_BYTES),
    }
