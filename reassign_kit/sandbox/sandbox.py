"""A real Apache Kafka cluster on loopback, for demos, rehearsal and tests.

The jars come from Maven Central through ``mvn`` (``tools/kafka-pom.xml``) and are cached under
``.cache/kafka/<version>/libs``, one folder per release (``kafka_version``: 4.4.0 unless asked;
several side by side). ``metadata="kraft"`` (the default) runs KRaft; ``"zookeeper"`` (Kafka
3.x only: ZooKeeper mode was removed in 4.0) runs one ZooKeeper server from the same jars
(the kafka 3.x artifacts depend on org.apache.zookeeper:zookeeper) and brokers that elect one
of themselves controller, as the clusters many users still run. A cluster is one controller process plus N broker processes,
each broker with its own two log dirs (so intra-broker moves can be tested), small heaps and
free ports on 127.0.0.1. ``controllers=3`` makes the KRaft quorum three controller
processes, so a controller failover can be rehearsed (kill the active one: another takes
over). The cluster's state (ports, pids, racks) lives in ``<dir>/sandbox.json``
so every command (and another process) can find it again.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import SandboxError
from . import metrics as sandbox_metrics
from . import processes, state, tiered, topics, zookeeper
from .clients import Clients
from .create import check_request, write_cluster
from .kafka import (
    REPO_ROOT,
    check_mode,
    check_version,
    default_metadata,
    default_version,
    fetch_kafka,
)
from .processes import Node, pid_alive, port_open, tail
from .security import Security
from .state import STATE_FILE


class Sandbox:
    """A handle on one sandbox cluster, identified by its directory. Its files are written by
    ``create``, its JVMs run by ``processes``, its own Kafka clients are ``self.clients``."""

    def __init__(self, dir: str | os.PathLike[str]):
        self.dir = Path(dir).resolve()
        path = self.dir / STATE_FILE
        if not path.exists():
            raise SandboxError(
                f"no sandbox in {self.dir} (no {STATE_FILE}); start one with `sandbox up --dir {dir}`"
            )
        data = json.loads(path.read_text())
        self.cluster_id: str = data["cluster_id"]
        self.version: str = data["kafka_version"]
        self.metadata: str = data.get("metadata", "kraft")
        ctrls = data.get("controllers")
        if ctrls is None:
            ctrls = [data["controller"]] if data.get("controller") else []
        # KRaft controller processes; none in ZooKeeper mode (a broker is the controller there)
        self.controllers: dict[int, Node] = {c["id"]: Node(**c) for c in ctrls}
        self.controller = next(iter(self.controllers.values()), None)  # the first (compatibility)
        self.zookeeper: Node | None = Node(**data["zookeeper"]) if data.get("zookeeper") else None
        self.nodes: dict[int, Node] = {b["id"]: Node(**b) for b in data["brokers"]}
        self.security: str = data.get("security", "plain")
        self._sec = Security.load(self.dir, self.security) if self.security != "plain" else None
        # the sandbox's own clients: the super user's settings when secured
        self.clients = Clients(self.nodes, self._sec.librdkafka() if self._sec is not None else {})

    # ---------------------------------------------------------------- creation

    @classmethod
    def create(
        cls,
        dir: str | os.PathLike[str],
        brokers: int = 4,
        racks: int = 0,
        configs: dict[str, str] | None = None,
        controllers: int = 1,
        security: str = "plain",
        kafka_version: str | None = None,
        metadata: str | None = None,
    ) -> Sandbox:
        """Write configs and format storage for a new cluster (does not start it).
        ``security``: plain (default), sasl_scram, ssl or sasl_ssl (see ``Security``).
        ``kafka_version`` / ``metadata``: the release and mode (default 4.4.0 KRaft, or
        $RK_SANDBOX_KAFKA_VERSION / $RK_SANDBOX_METADATA)."""
        version, metadata = check_request(
            brokers, racks, controllers, security, kafka_version, metadata
        )
        d = Path(dir).resolve()
        if (d / STATE_FILE).exists():
            existing = cls(d)
            if existing.running():
                raise SandboxError(
                    f"a sandbox is already running in {d}; `sandbox down --dir {dir}` first"
                )
            shutil.rmtree(d)
        write_cluster(d, brokers, racks, configs, controllers, security, version, metadata)
        return cls(d)

    @classmethod
    def up(
        cls,
        dir: str | os.PathLike[str],
        brokers: int = 4,
        racks: int = 0,
        timeout: float = 120,
        configs: dict[str, str] | None = None,
        controllers: int = 1,
        security: str = "plain",
        kafka_version: str | None = None,
        metadata: str | None = None,
        tiered_storage: bool = False,
    ) -> Sandbox:
        """Start a cluster and wait until every broker is registered. ``tiered_storage``: the
        brokers keep remote log segments in ``<dir>/remote-storage`` (``sandbox.tiered``)."""
        version = check_version(kafka_version) if kafka_version else default_version()
        check_mode(version, metadata or default_metadata())
        if tiered_storage:  # refused by name before anything is fetched or written
            configs = tiered.sandbox_configs(
                Path(dir).resolve(), version, security, brokers, configs
            )
        fetch_kafka(version)
        if sandbox_metrics.enabled():
            sandbox_metrics.fetch_agent()
        sb = cls.create(
            dir,
            brokers=brokers,
            racks=racks,
            configs=configs,
            controllers=controllers,
            security=security,
            kafka_version=version,
            metadata=metadata,
        )
        if tiered_storage:
            (sb.dir / tiered.STORAGE_DIR).mkdir(exist_ok=True)
        try:
            if sb.zookeeper is not None:
                sb._start_zookeeper(timeout)
            for c in sb.controllers.values():
                sb._launch(c)
            for node in sb.nodes.values():
                sb._launch(node)
            sb.wait_ready(timeout=timeout)
            if sb._sec is not None:
                sb.clients.grant_acls(timeout=timeout)
        except BaseException:
            sb.down()
            raise
        return sb

    @classmethod
    @contextmanager
    def start(
        cls,
        brokers: int = 4,
        racks: int = 0,
        dir: str | os.PathLike[str] | None = None,
        configs: dict[str, str] | None = None,
        controllers: int = 1,
        security: str = "plain",
        kafka_version: str | None = None,
        metadata: str | None = None,
        tiered_storage: bool = False,
    ) -> Iterator[Sandbox]:
        """Context manager: a running cluster that is torn down (no process left) on exit."""
        d = dir or tempfile.mkdtemp(prefix="rk-sandbox-")
        sb = cls.up(
            d,
            brokers=brokers,
            racks=racks,
            configs=configs,
            controllers=controllers,
            security=security,
            kafka_version=kafka_version,
            metadata=metadata,
            tiered_storage=tiered_storage,
        )
        try:
            yield sb
        finally:
            sb.down()

    # ---------------------------------------------------------------- state

    def _save(self) -> None:
        state.save_nodes(
            self.dir, list(self.controllers.values()), self.zookeeper, list(self.nodes.values())
        )

    def _launch(self, node: Node) -> None:
        processes.launch(node, self.dir, self.version)
        self._save()

    def _start_zookeeper(self, timeout: float) -> None:
        zk = self.zookeeper
        assert zk is not None
        self._launch(zk)
        zookeeper.wait_serving(zk, timeout)
        if self._sec is not None and self._sec.passwords and self._sec.sasl:
            zookeeper.add_scram_users(zk, self._sec.passwords, self.version)

    @property
    def bootstrap_servers(self) -> str:
        return self.clients.bootstrap_servers

    @property
    def brokers(self) -> list[dict[str, Any]]:
        return [n.public() for n in self.nodes.values()]

    def running(self) -> bool:
        return any(pid_alive(n.pid) for n in self._processes())

    def _processes(self) -> list[Node]:
        zk = [self.zookeeper] if self.zookeeper is not None else []
        return [*zk, *self.controllers.values(), *self.nodes.values()]

    def active_controller(self) -> int | None:
        """The quorum's leader as the controllers last wrote it (each one's ``quorum-state``
        file: the newest epoch's leader), or None when no live controller names one. In
        ZooKeeper mode: the broker the cluster names controller (DescribeCluster), if alive."""
        if self.metadata == "zookeeper":
            return self.clients.controller_broker()
        best: tuple[int, int] | None = None
        for c in self.controllers.values():
            if not pid_alive(c.pid):
                continue
            f = Path(c.log_dirs[0]) / "__cluster_metadata-0" / "quorum-state"
            try:
                q = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            epoch, leader = int(q.get("leaderEpoch", -1)), int(q.get("leaderId", -1))
            if leader >= 0 and (best is None or epoch > best[0]):
                best = (epoch, leader)
        if best is None:
            return None
        leader = self.controllers.get(best[1])
        return best[1] if leader is not None and pid_alive(leader.pid) else None

    def status(self) -> dict[str, Any]:
        return {
            "dir": str(self.dir),
            "cluster_id": self.cluster_id,
            "kafka_version": self.version,
            "metadata": self.metadata,
            "bootstrap_servers": self.bootstrap_servers,
            "controller": self.controller.public() if self.controller is not None else None,
            "controllers": [c.public() for c in self.controllers.values()],
            **({"zookeeper": self.zookeeper.public()} if self.zookeeper is not None else {}),
            "active_controller": self.active_controller(),
            "brokers": self.brokers,
            "running": self.running(),
            "security": self.security,
            "tiered_storage": (self.dir / tiered.STORAGE_DIR).is_dir(),
            "client_configs": self.client_configs,
            **sandbox_metrics.status_fields(self.dir),
        }

    @property
    def client_configs(self) -> dict[str, str]:
        """user -> path of a ready client .properties file (``--command-config``): admin,
        reader, denied; empty for a plain cluster. Paths only: the secrets stay in the files."""
        return self._sec.client_config_paths() if self._sec is not None else {}

    def client_config(self, user: str = "admin") -> str:
        """The path of ``user``'s client .properties file (a SandboxError when there is none)."""
        try:
            return self.client_configs[user]
        except KeyError:
            raise SandboxError(
                f"no client config for {user!r} in {self.dir} (security {self.security}; "
                f"users: {', '.join(self.client_configs) or 'none'})"
            ) from None

    def node(self, node_id: int) -> Node:
        """A broker or a controller by its node id."""
        try:
            nid = int(node_id)
            return self.nodes[nid] if nid in self.nodes else self.controllers[nid]
        except (KeyError, ValueError):
            known = ", ".join(str(i) for i in sorted(self.nodes))
            ctrl = ", ".join(str(i) for i in sorted(self.controllers))
            raise SandboxError(
                f"node {node_id} does not exist in {self.dir} (brokers: {known}; "
                f"controllers: {ctrl})"
            ) from None

    def registered_brokers(self, timeout: float = 5.0) -> set[int]:
        return self.clients.registered_brokers(timeout)

    def wait_ready(self, timeout: float = 120, brokers: set[int] | None = None) -> None:
        """Return once every (given) broker is registered with the controller."""
        want = set(brokers) if brokers is not None else set(self.nodes)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node in self._processes():
                if (
                    node.pid
                    and not pid_alive(node.pid)
                    and (node.id in want or (node.role != "broker" and brokers is None))
                ):
                    raise SandboxError(
                        f"{node.role} {node.id} exited during start-up; see {node.log}:\n{tail(node.log)}"
                    )
            if want <= self.registered_brokers():
                return
            time.sleep(0.5)
        raise SandboxError(
            f"brokers {sorted(want)} not all registered within {timeout:.0f}s; see {self.dir / 'logs'}"
        )

    # ---------------------------------------------------------------- control

    def stop_broker(self, broker_id: int, timeout: float = 60) -> None:
        """Graceful: SIGTERM (controlled shutdown), SIGKILL only if it does not stop in time."""
        processes.stop(self.node(broker_id), timeout)

    def kill_broker(self, broker_id: int) -> None:
        processes.kill(self.node(broker_id))

    def start_broker(self, broker_id: int, timeout: float = 120) -> None:
        """Start a stopped broker or controller; returns once it serves again: a broker once
        it answers a Metadata request itself, listing itself (KRaft brokers open for requests
        only once unfenced; the other brokers' metadata may still list the old registration,
        which is why asking them is not enough); a controller once its port accepts
        connections and the quorum has a leader."""
        node = self.node(broker_id)
        if pid_alive(node.pid):
            raise SandboxError(f"{node.role} {broker_id} is already running (pid {node.pid})")
        deadline = time.monotonic() + timeout
        if self.zookeeper is not None and node.role == "broker":
            zookeeper.wait_registration_gone(self.zookeeper, node.id, deadline)
        self._launch(node)
        while time.monotonic() < deadline:
            if not pid_alive(node.pid):
                raise SandboxError(
                    f"{node.role} {node.id} exited during start-up; see {node.log}:\n{tail(node.log)}"
                )
            if node.role == "broker" and self.clients.serves_itself(node):
                return
            if node.role == "controller" and port_open(node.port) and self.active_controller():
                return
            time.sleep(0.5)
        raise SandboxError(f"{node.role} {node.id} did not come back within {timeout:.0f}s")

    start_node = start_broker

    def stop_node(self, node_id: int, timeout: float = 60) -> None:
        self.stop_broker(node_id, timeout)

    def kill_node(self, node_id: int) -> None:
        self.kill_broker(node_id)

    def down(self, timeout: float = 30) -> None:
        """Stop every process of this cluster: brokers first (graceful), then the controller.
        The pids are read again from sandbox.json first: a node another handle (the CLI, a
        second Sandbox object) restarted has a new pid this object never saw (it was left
        running: found by test_compat_39zk's start-controller)."""
        state.reload_pids(self.dir, self.controllers, self.zookeeper, self.nodes)
        processes.stop_all(
            list(self.nodes.values()), list(self.controllers.values()), self.zookeeper, timeout
        )

    # ---------------------------------------------------------------- data

    def admin(self) -> Any:  # confluent_kafka.admin.AdminClient
        return self.clients.admin()

    def cordon(self, broker_id: int, dirs: str | None = "*", timeout: float = 30) -> None:
        """KIP-1066 (Kafka 4.3): set broker ``broker_id``'s dynamic ``cordoned.log.dirs``
        ("*" = every log dir; ``None`` deletes it: the cordon is lifted) by an
        incrementalAlterConfigs. A broker that does not know the config refuses it."""
        self.node(broker_id)  # a known broker, or SandboxError
        self.clients.cordon(broker_id, dirs, timeout)

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        rf: int = 3,
        assignment: Sequence[Sequence[int]] | None = None,
        configs: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> None:
        topics.create_topic(self.clients, name, partitions, rf, assignment, configs, timeout)

    def load(self, topic: str, mb_per_partition: float, message_bytes: int = 10_000) -> int:
        """Fill every partition of ``topic`` with incompressible data, acks=all. Returns messages sent."""
        return topics.load(self.clients, topic, mb_per_partition, message_bytes)


def default_dir() -> Path:
    return Path(os.environ.get("RK_SANDBOX_DIR", REPO_ROOT / ".cache" / "sandbox"))
