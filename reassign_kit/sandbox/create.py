"""Creating a sandbox cluster's directory: the request checked (before anything is fetched or
written), the nodes' files written, KRaft storage formatted and the state file written. Does not
start anything."""

from __future__ import annotations

from pathlib import Path

from ..errors import SandboxError
from . import metrics as sandbox_metrics
from . import state
from .config_files import (
    CONTROLLER_ID,
    broker_nodes,
    common_props,
    controller_nodes,
    random_cluster_id,
    zookeeper_node,
)
from .kafka import (
    LOG4J2,
    check_mode,
    check_version,
    default_metadata,
    default_version,
    run_kafka_class,
)
from .ports import LoopbackPorts
from .processes import Node
from .security import SECURITY_MODES, Security
from .tiered import CONTROLLER_KEYS


def check_request(
    brokers: int,
    racks: int,
    controllers: int,
    security: str,
    kafka_version: str | None,
    metadata: str | None,
) -> tuple[str, str]:
    """The release and metadata mode a request means, or a SandboxError naming what is wrong."""
    version = check_version(kafka_version) if kafka_version else default_version()
    metadata = check_mode(version, metadata or default_metadata())
    if security not in SECURITY_MODES:
        raise SandboxError(
            f"--security must be one of {', '.join(SECURITY_MODES)}, got {security!r}"
        )
    if brokers < 1:
        raise SandboxError(f"--brokers must be at least 1, got {brokers}")
    if metadata == "zookeeper" and controllers != 1:
        raise SandboxError(
            "--controllers applies to KRaft: in ZooKeeper mode the controller is one of "
            f"the brokers (got --controllers {controllers})"
        )
    if controllers not in (1, 3, 5):
        raise SandboxError(f"--controllers must be 1, 3 or 5 (a KRaft quorum), got {controllers}")
    if racks < 0 or racks > brokers:
        raise SandboxError(
            f"--racks must be between 0 and the broker count ({brokers}), got {racks}"
        )
    return version, metadata


def write_cluster(
    d: Path,
    brokers: int,
    racks: int,
    configs: dict[str, str] | None,
    controllers: int,
    security: str,
    version: str,
    metadata: str,
) -> None:
    """Every file of a new cluster in the (empty) directory ``d``, its storage formatted."""
    zk_mode = metadata == "zookeeper"
    d.mkdir(parents=True, exist_ok=True)
    (d / "logs").mkdir(exist_ok=True)
    (d / "log4j2.properties").write_text(LOG4J2)
    sec = Security.make(d, security) if security != "plain" else None
    listener = sec.protocol if sec else "PLAINTEXT"
    cluster_id = random_cluster_id()
    with LoopbackPorts() as free:
        cports = {} if zk_mode else {CONTROLLER_ID + i: free.take() for i in range(controllers)}
        voters = ",".join(f"{cid}@127.0.0.1:{port}" for cid, port in cports.items())
        zk = zookeeper_node(d, free) if zk_mode else None
        common = common_props(zk, voters, listener, sec)
        # the KRaft controller validates new topics' configs: it refuses remote.storage.enable
        # unless it has the brokers' tiered-storage switch too
        shared = {k: v for k, v in (configs or {}).items() if k in CONTROLLER_KEYS}
        ctrl_nodes = controller_nodes(d, cports, {**common, **shared})
        nodes = broker_nodes(d, brokers, racks, common, listener, sec, zk_mode, configs, free)
        sandbox_metrics.assign_ports(d, list(nodes), free)  # each broker's JMX exporter
    if not zk_mode:  # ZooKeeper mode formats nothing: the brokers register in ZooKeeper
        _format_storage([*ctrl_nodes, *nodes.values()], cluster_id, sec, version)
    state.write_new(
        d, cluster_id, version, metadata, security, ctrl_nodes, zk, list(nodes.values())
    )


def _format_storage(nodes: list[Node], cluster_id: str, sec: Security | None, version: str) -> None:
    """KRaft storage of every node formatted with the cluster id (a secured controller's with
    the SCRAM users, KIP-900's bootstrap)."""
    for node in nodes:
        proc = run_kafka_class(
            "kafka.tools.StorageTool",
            ["format", "-t", cluster_id, "-c", node.config, "--ignore-formatted"]
            + (sec.format_args() if sec and node.role == "controller" else []),
            timeout=120,
            version=version,
        )
        if proc.returncode != 0:
            err = proc.stderr.strip()[-1500:]
            for pw in sec.passwords.values() if sec else ():
                err = err.replace(pw, "***")  # an echoed --add-scram argument
            raise SandboxError(f"formatting storage of node {node.id} failed: {err}")
