"""The sandbox's JVM processes on loopback: a node (its port, log dirs, config and pid), free
ports, starting a node's JVM, and signalling only a process that is still one this package
started (pids get reused)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SandboxError
from . import metrics as sandbox_metrics
from .kafka import HEAP, JVM_FLAGS, java_binary, kafka_classpath

ZK_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_MAINS = ("kafka.Kafka", ZK_MAIN)  # the only processes the sandbox ever signals


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


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


def wait_gone(pid: int, timeout: float) -> bool:
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


def is_ours(pid: int | None) -> bool:
    """Whether ``pid`` is still a JVM this package starts (a broker, a controller, ZooKeeper)."""
    line = _cmdline(pid or 0)
    return any(main in line for main in _MAINS)


def tail(path: str, lines: int = 20) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
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


def launch(node: Node, dir: Path, version: str) -> None:
    """Start ``node``'s JVM in its own session (its output appended to its log); sets its pid."""
    if pid_alive(node.pid) and is_ours(node.pid):
        raise SandboxError(f"{node.role} {node.id} is already running (pid {node.pid})")
    zk = node.role == "zookeeper"
    cmd = [
        java_binary(),
        *(["-Xms32m", "-Xmx128m", "-Dzookeeper.admin.enableServer=false"] if zk else HEAP.split()),
        *JVM_FLAGS,
        *sandbox_metrics.agent_args(dir, node.id, node.role),
        f"-Dlog4j2.configurationFile={dir / 'log4j2.properties'}",
        f"-Dkafka.logs.dir={dir / 'logs'}",
        "-cp",
        kafka_classpath(version),
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
            cwd=dir,
        )
    finally:
        log.close()
    node.pid = proc.pid


def send(node: Node, sig: int) -> None:
    if not pid_alive(node.pid):
        return
    # Only signal a process that is still the JVM we started (pids get reused).
    if not is_ours(node.pid or 0):
        return
    try:
        os.kill(node.pid or 0, sig)
    except ProcessLookupError:
        pass


def stop(node: Node, timeout: float) -> None:
    """Graceful: SIGTERM, SIGKILL only if it does not stop in time."""
    send(node, signal.SIGTERM)
    if node.pid and not wait_gone(node.pid, timeout):
        send(node, signal.SIGKILL)
        wait_gone(node.pid, 10)


def kill(node: Node) -> None:
    send(node, signal.SIGKILL)
    if node.pid:
        wait_gone(node.pid, 10)


def stop_all(brokers: list[Node], controllers: list[Node], zk: Node | None, timeout: float) -> None:
    """Brokers first (graceful, together, within ``timeout``), then the controllers, ZooKeeper
    last: the brokers' controlled shutdown needs them."""
    alive = [n for n in brokers if pid_alive(n.pid)]
    for n in alive:
        send(n, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    for n in alive:
        if n.pid and not wait_gone(n.pid, max(0.5, deadline - time.monotonic())):
            send(n, signal.SIGKILL)
            wait_gone(n.pid, 10)
    for c in controllers:
        if pid_alive(c.pid):
            send(c, signal.SIGTERM)
    for c in controllers:
        if c.pid and not wait_gone(c.pid, 15):
            send(c, signal.SIGKILL)
            wait_gone(c.pid, 10)
    if zk is not None and pid_alive(zk.pid):
        stop(zk, 15)
