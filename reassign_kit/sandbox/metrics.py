"""The sandbox brokers' metrics endpoints: every broker runs the Prometheus JMX
exporter Java agent (``io.prometheus.jmx:jmx_prometheus_javaagent`` from Maven Central, fetched
once into the Kafka jar cache like the broker's own jars, never committed) with the small rules
file ``tools/jmx-exporter.yaml``, serving ``http://127.0.0.1:<port>/metrics``.

The ports are chosen when the cluster is created and kept in ``<dir>/metrics.json`` (beside
``sandbox.json``, which this module does not touch), so a broker restarted later serves on the
same port and ``sandbox status`` lists the endpoints. ``RK_SANDBOX_METRICS=0`` starts brokers
without the agent (nothing fetched, no endpoint listed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from ..errors import SandboxError
from .ports import LoopbackPorts

JMX_EXPORTER_VERSION = "1.0.1"
ARTIFACT = "io.prometheus.jmx:jmx_prometheus_javaagent"
METRICS_FILE = "metrics.json"
ENV_SWITCH = "RK_SANDBOX_METRICS"
REPO_ROOT = Path(__file__).resolve().parents[2]
RULES = REPO_ROOT / "tools" / "jmx-exporter.yaml"


def enabled() -> bool:
    """Whether new brokers get the agent (``RK_SANDBOX_METRICS=0`` turns it off)."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def agent_jar(version: str = JMX_EXPORTER_VERSION) -> Path:
    """Where the agent's jar is cached: ``$RK_KAFKA_CACHE/jmx-exporter/<version>/`` (the
    folder of the Kafka jars, ``sandbox.kafka_home``'s parent; not imported from there: the
    sandbox imports this module)."""
    base = Path(os.environ.get("RK_KAFKA_CACHE", REPO_ROOT / ".cache" / "kafka"))
    return base / "jmx-exporter" / version / f"{ARTIFACT.split(':')[1]}-{version}.jar"


def fetch_agent(version: str = JMX_EXPORTER_VERSION, quiet: bool = True) -> Path:
    """The agent's jar from Maven Central through ``mvn`` (once; later calls are free)."""
    jar = agent_jar(version)
    if jar.exists():
        return jar
    mvn = shutil.which("mvn")
    if not mvn:
        raise SandboxError("mvn not found on PATH: Maven fetches the Prometheus JMX exporter agent")
    jar.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        mvn,
        "-B",
        "dependency:copy",
        f"-Dartifact={ARTIFACT}:{version}",
        f"-DoutputDirectory={jar.parent}",
    ]
    if quiet:
        cmd.insert(1, "-q")
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=jar.parent)
    if proc.returncode != 0 or not jar.exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-10:])
        raise SandboxError(f"mvn could not fetch {ARTIFACT}:{version}:\n{tail}")
    return jar


def assign_ports(d: Path, broker_ids: list[int], free: LoopbackPorts) -> dict[int, int]:
    """A free loopback port per broker from ``free`` (the cluster's other ports are taken from
    it too), written to ``<d>/metrics.json`` (none when the agent is off: the file then says
    so)."""
    ports = {b: free.take() for b in broker_ids} if enabled() else {}
    data = {
        "jmx_exporter": JMX_EXPORTER_VERSION if ports else None,
        "ports": {str(b): p for b, p in ports.items()},
    }
    (Path(d) / METRICS_FILE).write_text(json.dumps(data, indent=2) + "\n")
    return ports


def ports(d: Path) -> dict[int, int]:
    """Broker id -> its exporter's port (empty: no exporter, e.g. a sandbox made before)."""
    try:
        data = json.loads((Path(d) / METRICS_FILE).read_text())
        return {int(b): int(p) for b, p in (data.get("ports") or {}).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def agent_args(d: Path, node_id: int, role: str) -> list[str]:
    """The JVM argument that starts the agent in broker ``node_id`` (none for a controller
    or a broker without a port)."""
    port = ports(d).get(node_id) if role == "broker" else None
    if port is None:
        return []
    jar = fetch_agent()
    if not RULES.exists():
        raise SandboxError(
            f"{RULES} is missing: cannot start the JMX exporter outside the checkout"
        )
    return [f"-javaagent:{jar}=127.0.0.1:{port}:{RULES}"]


def endpoints(d: Path) -> dict[str, str]:
    """Broker id (a string, as JSON keys) -> its metrics URL, for ``sandbox status``."""
    return {str(b): f"http://127.0.0.1:{p}/metrics" for b, p in sorted(ports(d).items())}


def status_fields(d: Path) -> dict[str, Any]:
    return {"metrics_endpoints": endpoints(d)}
