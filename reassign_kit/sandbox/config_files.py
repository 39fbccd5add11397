"""A new sandbox cluster's configuration files: each node's ``.properties`` (KRaft controllers,
brokers, or ZooKeeper and brokers that point at it) and its KRaft cluster id.

``--metadata zookeeper`` (Kafka 3.x): one ZooKeeper server on 127.0.0.1 (QuorumPeerMain from
the zookeeper jar the kafka 3.x artifacts depend on, standalone, no admin server), brokers with
``broker.id`` and ``zookeeper.connect`` instead of ``process.roles`` / ``node.id``, no storage
format, no controller processes: one broker is elected controller through ZooKeeper."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from .ports import LoopbackPorts
from .processes import Node
from .security import Security, private_write

CONTROLLER_ID = 1000
ZOOKEEPER_ID = 2000
_ZK_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


def write_props(path: str, props: dict[str, str]) -> None:
    """A node's .properties file, owner-only (a secured node's holds the broker's password)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    private_write(Path(path), "".join(f"{k}={v}\n" for k, v in props.items()))


def random_cluster_id() -> str:
    """A KRaft cluster id (URL-safe base64 of 16 random bytes). Like Kafka's Uuid.randomUuid,
    never one starting with '-': `kafka-storage format --cluster-id -x…` reads it as an option
    (about 1 start in 64 failed before)."""
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def zookeeper_node(d: Path, free: LoopbackPorts) -> Node:
    port = free.take()
    zk = Node(
        id=ZOOKEEPER_ID,
        role="zookeeper",
        port=port,
        rack=None,
        log_dirs=[str(d / "zookeeper")],
        config=str(d / "zookeeper.properties"),
        log=str(d / "logs" / "zookeeper.log"),
    )
    Path(zk.log_dirs[0]).mkdir(parents=True, exist_ok=True)
    write_props(
        zk.config,
        {
            "dataDir": zk.log_dirs[0],
            "clientPort": str(port),
            "clientPortAddress": "127.0.0.1",
            "maxClientCnxns": "0",
            "tickTime": "2000",
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "ruok,srvr,dump",
        },
    )
    return zk


def _zk_broker_props(zk: Node, listener: str, sec: Security | None) -> dict[str, str]:
    """What a ZooKeeper-mode broker has instead of the KRaft quorum settings."""
    props = {
        "zookeeper.connect": f"127.0.0.1:{zk.port}",
        "zookeeper.connection.timeout.ms": "30000",
        "zookeeper.session.timeout.ms": "18000",
        "listener.security.protocol.map": f"{listener}:{listener}",
    }
    if sec is not None:
        kraft = sec.common_props()
        props.update({k: v for k, v in kraft.items() if "controller" not in k})
        props["listener.security.protocol.map"] = f"{listener}:{listener}"
        props["authorizer.class.name"] = _ZK_AUTHORIZER
    return props


def common_props(
    zk: Node | None, voters: str, listener: str, sec: Security | None
) -> dict[str, str]:
    """What every node has: how it finds the metadata (the KRaft quorum or ZooKeeper) and the
    small thread pools of a loopback cluster."""
    meta_props = (
        _zk_broker_props(zk, listener, sec)
        if zk is not None
        else {
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            **(sec.common_props() if sec else {}),
        }
    )
    return {
        **meta_props,
        "num.network.threads": "2",
        "num.io.threads": "2",
        "background.threads": "2",
        "num.replica.fetchers": "1",
        "log.cleaner.threads": "1",
        "num.recovery.threads.per.data.dir": "1",
    }


def controller_nodes(d: Path, cports: dict[int, int], common: dict[str, str]) -> list[Node]:
    """The KRaft controller processes (node id -> port), their files written."""
    ctrl_nodes = []
    for cid, cport in cports.items():
        name = "controller" if cid == CONTROLLER_ID else f"controller-{cid}"
        controller = Node(
            id=cid,
            role="controller",
            port=cport,
            rack=None,
            log_dirs=[str(d / name / "meta")],
            config=str(d / f"{name}.properties"),
            log=str(d / "logs" / f"{name}.log"),
        )
        write_props(
            controller.config,
            {
                **common,
                "process.roles": "controller",
                "node.id": str(cid),
                "listeners": f"CONTROLLER://127.0.0.1:{cport}",
                "log.dirs": controller.log_dirs[0],
            },
        )
        ctrl_nodes.append(controller)
    return ctrl_nodes


def broker_nodes(
    d: Path,
    brokers: int,
    racks: int,
    common: dict[str, str],
    listener: str,
    sec: Security | None,
    zk_mode: bool,
    configs: dict[str, str] | None,
    free: LoopbackPorts,
) -> dict[int, Node]:
    """Brokers 1..``brokers``, each with two log dirs (intra-broker moves can be tested) and
    racks round-robin, their ports from ``free``; their files written, ``configs`` over the
    defaults."""
    rf = min(3, brokers)
    nodes = {}
    for i in range(1, brokers + 1):
        port = free.take()
        rack = f"rack-{(i - 1) % racks}" if racks else None
        bdir = d / f"broker-{i}"
        node = Node(
            id=i,
            role="broker",
            port=port,
            rack=rack,
            log_dirs=[str(bdir / "data-0"), str(bdir / "data-1")],
            config=str(d / f"broker-{i}.properties"),
            log=str(d / "logs" / f"broker-{i}.log"),
        )
        props = {
            **common,
            **({"broker.id": str(i)} if zk_mode else {"process.roles": "broker"}),
            **({} if zk_mode else {"node.id": str(i)}),
            "listeners": f"{listener}://127.0.0.1:{port}",
            "advertised.listeners": f"{listener}://127.0.0.1:{port}",
            "inter.broker.listener.name": listener,
            **(sec.broker_props() if sec else {}),
            "log.dirs": ",".join(node.log_dirs),
            "offsets.topic.replication.factor": str(rf),
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": str(rf),
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": str(rf),
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "false",
            "log.segment.bytes": str(16 * 1024 * 1024),
            "replica.lag.time.max.ms": "10000",
            **(configs or {}),
        }
        if rack:
            props["broker.rack"] = rack
        write_props(node.config, props)
        nodes[i] = node
    return nodes
