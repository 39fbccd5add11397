"""A real Apache Kafka cluster on loopback, for demos, rehearsal and tests.

The jars come from Maven Central through ``mvn`` (``tools/kafka-pom.xml``) and are cached under
``.cache/kafka/<version>/libs``, one folder per release (``kafka_version``: 4.3.1 unless asked;
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
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SandboxError
from . import metrics as sandbox_metrics

# the Kafka distribution (sandbox_kafka) and a secured sandbox's parts (sandbox_security):
# their names importable from here, as before
from .kafka import (
    HEAP,
    JVM_FLAGS,
    LOG4J2,
    REPO_ROOT,
    check_mode,
    check_version,
    default_metadata,
    default_version,
    fetch_kafka,
    java_binary,
    kafka_classpath,
    run_kafka_class,
)
from .security import (
    SCRAM,
    SECURITY_MODES,
    Security,
    acl_bindings,
    private_write,
)

CONTROLLER_ID = 1000
ZOOKEEPER_ID = 2000
ZK_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_MAINS = ("kafka.Kafka", ZK_MAIN)  # the only processes the sandbox ever signals
STATE_FILE = "sandbox.json"


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (exited child not yet reaped) is not alive.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return not pid_alive(pid)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Node:
    id: int
    role: str  # "controller" | "broker" | "zookeeper"
    port: int
    rack: str | None
    log_dirs: list[str]
    config: str
    log: str
    pid: int | None = None

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rack": self.rack,
            "port": self.port,
            "pid": self.pid,
            "log_dirs": self.log_dirs,
            "alive": pid_alive(self.pid),
        }


class Sandbox:
    """A handle on one sandbox cluster, identified by its directory."""

    def __init__(self, dir: str | os.PathLike[str]):
        self.dir = Path(dir).resolve()
        state = self.dir / STATE_FILE
        if not state.exists():
            raise SandboxError(
                f"no sandbox in {self.dir} (no {STATE_FILE}); start one with `sandbox up --dir {dir}`"
            )
        data = json.loads(state.read_text())
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
        ``kafka_version`` / ``metadata``: the release and mode (default 4.3.1 KRaft, or
        $RK_SANDBOX_KAFKA_VERSION / $RK_SANDBOX_METADATA)."""
        version = check_version(kafka_version) if kafka_version else default_version()
        metadata = check_mode(version, metadata or default_metadata())
        zk_mode = metadata == "zookeeper"
        if security not in SECURITY_MODES:
            raise SandboxError(
                f"--security must be one of {', '.join(SECURITY_MODES)}, got {security!r}"
            )
        if brokers < 1:
            raise SandboxError(f"--brokers must be at least 1, got {brokers}")
        if zk_mode and controllers != 1:
            raise SandboxError(
                "--controllers applies to KRaft: in ZooKeeper mode the controller is one of "
                f"the brokers (got --controllers {controllers})"
            )
        if controllers not in (1, 3, 5):
            raise SandboxError(
                f"--controllers must be 1, 3 or 5 (a KRaft quorum), got {controllers}"
            )
        if racks < 0 or racks > brokers:
            raise SandboxError(
                f"--racks must be between 0 and the broker count ({brokers}), got {racks}"
            )
        d = Path(dir).resolve()
        if (d / STATE_FILE).exists():
            existing = cls(d)
            if existing.running():
                raise SandboxError(
                    f"a sandbox is already running in {d}; `sandbox down --dir {dir}` first"
                )
            shutil.rmtree(d)
        d.mkdir(parents=True, exist_ok=True)
        (d / "logs").mkdir(exist_ok=True)
        (d / "log4j2.properties").write_text(LOG4J2)
        sec = Security.make(d, security) if security != "plain" else None
        listener = sec.protocol if sec else "PLAINTEXT"
        cluster_id = _random_cluster_id()
        cports = {} if zk_mode else {CONTROLLER_ID + i: free_port() for i in range(controllers)}
        voters = ",".join(f"{cid}@127.0.0.1:{port}" for cid, port in cports.items())
        rf = min(3, brokers)
        zk = _zookeeper_node(d) if zk_mode else None
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
        common = {
            **meta_props,
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.replica.fetchers": "1",
            "log.cleaner.threads": "1",
            "num.recovery.threads.per.data.dir": "1",
        }
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
            _write_props(
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
        nodes = {}
        for i in range(1, brokers + 1):
            port = free_port()
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
            _write_props(node.config, props)
            nodes[i] = node
        sandbox_metrics.assign_ports(d, list(nodes))  # each broker's JMX exporter (issue 22)
        for node in [] if zk_mode else [*ctrl_nodes, *nodes.values()]:
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
        state = {
            "cluster_id": cluster_id,
            "kafka_version": version,
            "metadata": metadata,
            "security": security,
            "controller": ctrl_nodes[0].__dict__ if ctrl_nodes else None,
            "controllers": [c.__dict__ for c in ctrl_nodes],
            "zookeeper": zk.__dict__ if zk is not None else None,
            "brokers": [n.__dict__ for n in nodes.values()],
        }
        (d / STATE_FILE).write_text(json.dumps(state, indent=2))
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
    ) -> Sandbox:
        version = check_version(kafka_version) if kafka_version else default_version()
        check_mode(version, metadata or default_metadata())
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
        try:
            if sb.zookeeper is not None:
                _start_zookeeper(sb, timeout)
            for c in sb.controllers.values():
                sb._launch(c)
            for node in sb.nodes.values():
                sb._launch(node)
            sb.wait_ready(timeout=timeout)
            if sb._sec is not None:
                sb._grant_acls(timeout=timeout)
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
    ) -> Iterator[Sandbox]:
        """Context manager: a running cluster that is torn down (no process left) on exit."""
        import tempfile

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
        )
        try:
            yield sb
        finally:
            sb.down()

    # ---------------------------------------------------------------- state

    def _save(self) -> None:
        path = self.dir / STATE_FILE
        data = json.loads(path.read_text())
        data["controller"] = self.controller.__dict__ if self.controller is not None else None
        data["controllers"] = [c.__dict__ for c in self.controllers.values()]
        if self.zookeeper is not None:
            data["zookeeper"] = self.zookeeper.__dict__
        data["brokers"] = [n.__dict__ for n in self.nodes.values()]
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2))
        os.replace(tmp, path)

    def _reload_pids(self) -> None:
        try:
            data = json.loads((self.dir / STATE_FILE).read_text())
        except (OSError, ValueError):
            return
        for c in data.get("controllers") or []:
            if c["id"] in self.controllers:
                self.controllers[c["id"]].pid = c.get("pid")
        for b in data.get("brokers") or []:
            if b["id"] in self.nodes:
                self.nodes[b["id"]].pid = b.get("pid")
        if self.zookeeper is not None and data.get("zookeeper"):
            self.zookeeper.pid = data["zookeeper"].get("pid")

    def _launch(self, node: Node) -> None:
        if pid_alive(node.pid) and _is_ours(node.pid):
            raise SandboxError(f"{node.role} {node.id} is already running (pid {node.pid})")
        zk = node.role == "zookeeper"
        cmd = [
            java_binary(),
            *(
                ["-Xms32m", "-Xmx128m", "-Dzookeeper.admin.enableServer=false"]
                if zk
                else HEAP.split()
            ),
            *JVM_FLAGS,
            *sandbox_metrics.agent_args(self.dir, node.id, node.role),
            f"-Dlog4j2.configurationFile={self.dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.dir / 'logs'}",
            "-cp",
            kafka_classpath(self.version),
            ZK_MAIN if zk else "kafka.Kafka",
            node.config,
        ]
        log = open(node.log, "ab")
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=self.dir,
            )
        finally:
            log.close()
        node.pid = proc.pid
        self._save()

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes.values())

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
            return _zk_controller_broker(self)
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

    def _client_conf(self) -> dict[str, str]:
        """librdkafka settings of the sandbox's own clients (the super user when secured)."""
        return self._sec.librdkafka() if self._sec is not None else {}

    def _grant_acls(self, timeout: float = 60) -> None:
        """The ACLs of admin and reader (denied gets none), as the super user; returns once
        every broker's authorizer has them."""
        from confluent_kafka.admin import AclBindingFilter, AdminClient

        bindings = acl_bindings()
        admin = self.admin()
        for binding, fut in admin.create_acls(bindings, request_timeout=timeout).items():
            try:
                fut.result(timeout)
            except Exception as e:
                raise SandboxError(f"creating ACL {binding} failed: {e}") from None
        from confluent_kafka.admin import (
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        any_acl = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        deadline = time.monotonic() + timeout
        for node in self.nodes.values():
            one = AdminClient(
                {
                    "bootstrap.servers": f"127.0.0.1:{node.port}",
                    "logger": _QuietLogger(),
                    **self._client_conf(),
                }
            )
            while True:
                try:
                    got = one.describe_acls(any_acl, request_timeout=10).result(10)
                    if len(got) >= len(bindings):
                        break
                except Exception:  # noqa: BLE001 - retried until the deadline
                    pass
                if time.monotonic() > deadline:
                    raise SandboxError(f"broker {node.id} did not see the ACLs in {timeout:.0f}s")
                time.sleep(0.2)

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
        from confluent_kafka.admin import AdminClient

        alive = [n for n in self.nodes.values() if pid_alive(n.pid)]
        if not alive:
            return set()
        admin = AdminClient(
            {
                "bootstrap.servers": ",".join(f"127.0.0.1:{n.port}" for n in alive),
                "socket.connection.setup.timeout.ms": 2000,
                "log_level": 0,
                "logger": _QuietLogger(),
                **self._client_conf(),
            }
        )
        try:
            md = admin.list_topics(timeout=timeout)
            return set(md.brokers)
        except Exception:
            return set()

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
                        f"{node.role} {node.id} exited during start-up; see {node.log}:\n{_tail(node.log)}"
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
        node = self.node(broker_id)
        self._signal(node, signal.SIGTERM)
        if node.pid and not _wait_gone(node.pid, timeout):
            self._signal(node, signal.SIGKILL)
            _wait_gone(node.pid, 10)

    def kill_broker(self, broker_id: int) -> None:
        node = self.node(broker_id)
        self._signal(node, signal.SIGKILL)
        if node.pid:
            _wait_gone(node.pid, 10)

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
            _wait_zk_registration_gone(self.zookeeper, node.id, deadline)
        self._launch(node)
        while time.monotonic() < deadline:
            if not pid_alive(node.pid):
                raise SandboxError(
                    f"{node.role} {node.id} exited during start-up; see {node.log}:\n{_tail(node.log)}"
                )
            if node.role == "broker" and self._serves_itself(node):
                return
            if node.role == "controller" and _port_open(node.port) and self.active_controller():
                return
            time.sleep(0.5)
        raise SandboxError(f"{node.role} {node.id} did not come back within {timeout:.0f}s")

    start_node = start_broker

    def stop_node(self, node_id: int, timeout: float = 60) -> None:
        self.stop_broker(node_id, timeout)

    def kill_node(self, node_id: int) -> None:
        self.kill_broker(node_id)

    def _serves_itself(self, node: Node) -> bool:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{node.port}",
                "socket.connection.setup.timeout.ms": 2000,
                "log_level": 0,
                "logger": _QuietLogger(),
                **self._client_conf(),
            }
        )
        try:
            md = admin.list_topics(timeout=3)
        except Exception:
            return False
        return md.orig_broker_id == node.id and node.id in md.brokers

    def _signal(self, node: Node, sig: int) -> None:
        if not pid_alive(node.pid):
            return
        # Only signal a process that is still the JVM we started (pids get reused).
        if not _is_ours(node.pid or 0):
            return
        try:
            os.kill(node.pid or 0, sig)
        except ProcessLookupError:
            pass

    def down(self, timeout: float = 30) -> None:
        """Stop every process of this cluster: brokers first (graceful), then the controller.
        The pids are read again from sandbox.json first: a node another handle (the CLI, a
        second Sandbox object) restarted has a new pid this object never saw (it was left
        running: found by test_compat_39zk's start-controller)."""
        self._reload_pids()
        brokers = [n for n in self.nodes.values() if pid_alive(n.pid)]
        for n in brokers:
            self._signal(n, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for n in brokers:
            if n.pid and not _wait_gone(n.pid, max(0.5, deadline - time.monotonic())):
                self._signal(n, signal.SIGKILL)
                _wait_gone(n.pid, 10)
        for c in self.controllers.values():
            if pid_alive(c.pid):
                self._signal(c, signal.SIGTERM)
        for c in self.controllers.values():
            if c.pid and not _wait_gone(c.pid, 15):
                self._signal(c, signal.SIGKILL)
                _wait_gone(c.pid, 10)
        zk = self.zookeeper
        if zk is not None and pid_alive(zk.pid):  # last: the brokers' controlled shutdown uses it
            self._signal(zk, signal.SIGTERM)
            if zk.pid and not _wait_gone(zk.pid, 15):
                self._signal(zk, signal.SIGKILL)
                _wait_gone(zk.pid, 10)

    # ---------------------------------------------------------------- data

    def admin(self):  # -> confluent_kafka.admin.AdminClient
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap_servers, **self._client_conf()})

    def cordon(self, broker_id: int, dirs: str | None = "*", timeout: float = 30) -> None:
        """KIP-1066 (Kafka 4.3): set broker ``broker_id``'s dynamic ``cordoned.log.dirs``
        ("*" = every log dir; ``None`` deletes it: the cordon is lifted) by an
        incrementalAlterConfigs. A broker that does not know the config refuses it."""
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        self.node(broker_id)  # a known broker, or SandboxError
        op = AlterConfigOpType.SET if dirs is not None else AlterConfigOpType.DELETE
        res = ConfigResource(
            ResourceType.BROKER,
            str(broker_id),
            incremental_configs=[
                ConfigEntry("cordoned.log.dirs", dirs or "", incremental_operation=op)
            ],
        )
        admin = self.admin()
        try:
            admin.incremental_alter_configs([res])[res].result(timeout)
        except Exception as e:
            raise SandboxError(f"cordoning broker {broker_id} failed: {e}") from e

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        rf: int = 3,
        assignment: Sequence[Sequence[int]] | None = None,
        configs: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> None:
        from confluent_kafka.admin import NewTopic

        if assignment is not None:
            # confluent-kafka 2.16 wants the partition count to match the assignment here.
            topic = NewTopic(
                name,
                num_partitions=len(assignment),
                replica_assignment=[list(r) for r in assignment],
                config=configs or {},
            )
        else:
            topic = NewTopic(
                name, num_partitions=partitions, replication_factor=rf, config=configs or {}
            )
        admin = self.admin()  # keep a reference: the futures die with their client
        futures = admin.create_topics([topic], operation_timeout=timeout)
        try:
            futures[name].result(timeout)
        except Exception as e:
            raise SandboxError(f"creating topic {name} failed: {e}") from e
        self._wait_topic(admin, name, timeout)

    def _wait_topic(self, admin: Any, name: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            md = admin.list_topics(topic=name, timeout=10).topics.get(name)
            if (
                md is not None
                and md.error is None
                and md.partitions
                and all(p.leader >= 0 for p in md.partitions.values())
            ):
                return self._wait_topic_everywhere(name, deadline)
            time.sleep(0.2)
        raise SandboxError(f"topic {name} has no leader for every partition after {timeout:.0f}s")

    def _wait_topic_everywhere(self, name: str, deadline: float) -> None:
        """Every live broker that answers knows the topic: a client asks any one broker, and a
        broker's metadata can lag the controller's for a moment under load (a fresh-clone CI
        run: ``--progress`` right after ``create_topic`` read "Unknown topic"). A broker that
        does not answer (stopped by a test) is not waited for."""
        from confluent_kafka.admin import AdminClient

        for n in self.nodes.values():
            if not pid_alive(n.pid):
                continue
            # sparse connections: a new client asks its one bootstrap broker first
            one = AdminClient({"bootstrap.servers": f"127.0.0.1:{n.port}", **self._client_conf()})
            while True:
                try:
                    md = one.list_topics(topic=name, timeout=5).topics.get(name)
                except Exception:  # noqa: BLE001 - a broker that does not answer: not waited for
                    break
                if md is not None and md.error is None and md.partitions:
                    break
                if time.monotonic() > deadline:
                    raise SandboxError(f"broker {n.id} does not know topic {name} yet")
                time.sleep(0.2)

    def load(self, topic: str, mb_per_partition: float, message_bytes: int = 10_000) -> int:
        """Fill every partition of ``topic`` with incompressible data, acks=all. Returns messages sent."""
        from confluent_kafka import Producer

        admin = self.admin()
        # A broker's metadata can lag the controller's for a moment after create_topic.
        deadline = time.monotonic() + 15
        while True:
            md = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
            if md is not None and md.error is None and md.partitions:
                break
            if time.monotonic() > deadline:
                raise SandboxError(f"unknown topic {topic}")
            time.sleep(0.3)
        per_partition = max(1, int(mb_per_partition * 1024 * 1024 / message_bytes))
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "acks": "all",
                "linger.ms": 20,
                "compression.type": "none",
                "enable.idempotence": True,
                "queue.buffering.max.kbytes": 65536,
                "logger": _QuietLogger(),  # "coordinator load in progress" retries are expected here
                **self._client_conf(),
            }
        )
        errors: list[str] = []

        def on_delivery(err, _msg):
            if err is not None:
                errors.append(str(err))

        sent = 0
        block = os.urandom(message_bytes * 16)
        for p in sorted(md.partitions):
            for i in range(per_partition):
                off = (i * 7919) % (len(block) - message_bytes)
                while True:
                    try:
                        producer.produce(
                            topic,
                            block[off : off + message_bytes],
                            partition=p,
                            on_delivery=on_delivery,
                        )
                        break
                    except BufferError:
                        producer.poll(0.1)
                sent += 1
                producer.poll(0)
        remaining = producer.flush(120)
        if remaining or errors:
            raise SandboxError(f"loading {topic}: {remaining} undelivered, errors: {errors[:3]}")
        return sent


# --------------------------------------------------------------------------- ZooKeeper mode
#
# ``--metadata zookeeper`` (Kafka 3.x): one ZooKeeper server on 127.0.0.1 (QuorumPeerMain from
# the zookeeper jar the kafka 3.x artifacts depend on, standalone, no admin server), brokers
# with ``broker.id`` and ``zookeeper.connect`` instead of ``process.roles`` / ``node.id``, no
# storage format, no controller processes: one broker is elected controller through ZooKeeper,
# DescribeCluster names it, and a controller failover is that broker's failover. Secured modes
# put SCRAM users in ZooKeeper (ConfigCommand --zookeeper, KIP-554's bootstrap path) before the
# brokers start and run the ZooKeeper-mode AclAuthorizer.

_ZK_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


def _is_ours(pid: int | None) -> bool:
    """Whether ``pid`` is still a JVM this module starts (a broker, a controller, ZooKeeper)."""
    line = _cmdline(pid or 0)
    return any(main in line for main in _MAINS)


def _zookeeper_node(d: Path) -> Node:
    port = free_port()
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
    _write_props(
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


def _zk_ok(port: int) -> bool:
    """ZooKeeper answers ``ruok`` with ``imok`` once it serves."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"ruok")
            return s.recv(4) == b"imok"
    except OSError:
        return False


def _zk_ephemerals(port: int) -> set[str] | None:
    """The ephemeral znodes ZooKeeper holds (its ``dump`` four-letter word), or None when it
    does not say (down, or a sandbox written before ``dump`` was whitelisted)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"dump")
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
    except OSError:
        return None
    return zk_dump_ephemerals(b"".join(chunks).decode(errors="replace"))


def zk_dump_ephemerals(text: str) -> set[str] | None:
    """The znode paths of a ``dump`` answer's "Sessions with Ephemerals" part; None when the
    answer has none (``dump`` not whitelisted: "dump is not executed because ...")."""
    if "Sessions with Ephemerals" not in text:
        return None
    part = text.split("Sessions with Ephemerals", 1)[1].split("Connections dump", 1)[0]
    return {line.strip() for line in part.splitlines() if line.strip().startswith("/")}


def _wait_zk_registration_gone(zk: Node, broker_id: int, deadline: float) -> None:
    """Wait until ZooKeeper no longer holds ``/brokers/ids/<id>``. A SIGKILLed ZooKeeper-mode
    broker's registration is an ephemeral znode that lives on until its session expires
    (zookeeper.session.timeout.ms, 18 s here); a broker started before that exits at once with
    NodeExistsException (KafkaZkClient.registerBroker: found by `make compat`, Kafka 3.6.2,
    broker 3 restarted ~10 s after its SIGKILL)."""
    path = f"/brokers/ids/{broker_id}"
    while True:
        held = _zk_ephemerals(zk.port)
        if held is None or path not in held:
            return
        if time.monotonic() > deadline:
            raise SandboxError(
                f"broker {broker_id}: ZooKeeper still holds {path} from its previous run "
                "(its session has not expired); try again later"
            )
        time.sleep(0.5)


def _start_zookeeper(sb: Sandbox, timeout: float) -> None:
    zk = sb.zookeeper
    assert zk is not None
    sb._launch(zk)
    deadline = time.monotonic() + timeout
    while not _zk_ok(zk.port):
        if not pid_alive(zk.pid):
            raise SandboxError(f"ZooKeeper exited during start-up; see {zk.log}:\n{_tail(zk.log)}")
        if time.monotonic() > deadline:
            raise SandboxError(f"ZooKeeper did not serve within {timeout:.0f}s; see {zk.log}")
        time.sleep(0.3)
    if sb._sec is not None and sb._sec.passwords and sb._sec.sasl:
        for user, pw in sb._sec.passwords.items():
            proc = run_kafka_class(
                "kafka.admin.ConfigCommand",
                ["--zookeeper", f"127.0.0.1:{zk.port}", "--alter", "--entity-type", "users"]
                + ["--entity-name", user, "--add-config", f"{SCRAM}=[password={pw}]"],
                timeout=120,
                version=sb.version,
            )
            if proc.returncode != 0:
                err = proc.stderr.strip()[-1500:].replace(pw, "***")
                raise SandboxError(f"adding SCRAM user {user} to ZooKeeper failed: {err}")


def _zk_controller_broker(sb: Sandbox) -> int | None:
    """The broker DescribeCluster names controller (ZooKeeper mode), when it is alive."""
    from confluent_kafka.admin import AdminClient

    alive = [n for n in sb.nodes.values() if pid_alive(n.pid)]
    if not alive:
        return None
    admin = AdminClient(
        {
            "bootstrap.servers": ",".join(f"127.0.0.1:{n.port}" for n in alive),
            "socket.connection.setup.timeout.ms": 2000,
            "log_level": 0,
            "logger": _QuietLogger(),
            **sb._client_conf(),
        }
    )
    try:
        desc = admin.describe_cluster(request_timeout=5).result(10)
    except Exception:  # noqa: BLE001 - no broker answers: no controller known
        return None
    cid = desc.controller.id if desc.controller is not None else -1
    node = sb.nodes.get(cid)
    return cid if node is not None and pid_alive(node.pid) else None


class _QuietLogger:
    """librdkafka logs connection refusals while brokers start; they are expected here."""

    def log(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return self.log


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _write_props(path: str, props: dict[str, str]) -> None:
    """A node's .properties file, owner-only (a secured node's holds the broker's password)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    private_write(Path(path), "".join(f"{k}={v}\n" for k, v in props.items()))


def _random_cluster_id() -> str:
    """A KRaft cluster id (URL-safe base64 of 16 random bytes). Like Kafka's Uuid.randomUuid,
    never one starting with '-': `kafka-storage format --cluster-id -x…` reads it as an option
    (about 1 start in 64 failed before)."""
    import base64

    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _tail(path: str, lines: int = 20) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def default_dir() -> Path:
    return Path(os.environ.get("RK_SANDBOX_DIR", REPO_ROOT / ".cache" / "sandbox"))
