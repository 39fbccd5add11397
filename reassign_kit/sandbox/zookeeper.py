"""A ZooKeeper-mode sandbox's ZooKeeper at run time (``--metadata zookeeper``, Kafka 3.x): when
it serves, the registrations it still holds, and the SCRAM users a secured cluster puts in it
(ConfigCommand --zookeeper, KIP-554's bootstrap path) before the brokers start."""

from __future__ import annotations

import socket
import time

from ..errors import SandboxError
from .kafka import run_kafka_class
from .processes import Node, pid_alive, tail
from .security import SCRAM


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


def wait_registration_gone(zk: Node, broker_id: int, deadline: float) -> None:
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


def wait_serving(zk: Node, timeout: float) -> None:
    """Return once the launched ZooKeeper answers ``ruok``."""
    deadline = time.monotonic() + timeout
    while not _zk_ok(zk.port):
        if not pid_alive(zk.pid):
            raise SandboxError(f"ZooKeeper exited during start-up; see {zk.log}:\n{tail(zk.log)}")
        if time.monotonic() > deadline:
            raise SandboxError(f"ZooKeeper did not serve within {timeout:.0f}s; see {zk.log}")
        time.sleep(0.3)


def add_scram_users(zk: Node, passwords: dict[str, str], version: str) -> None:
    """Each user's SCRAM credential written to ZooKeeper (its password masked in an error)."""
    for user, pw in passwords.items():
        proc = run_kafka_class(
            "kafka.admin.ConfigCommand",
            ["--zookeeper", f"127.0.0.1:{zk.port}", "--alter", "--entity-type", "users"]
            + ["--entity-name", user, "--add-config", f"{SCRAM}=[password={pw}]"],
            timeout=120,
            version=version,
        )
        if proc.returncode != 0:
            err = proc.stderr.strip()[-1500:].replace(pw, "***")
            raise SandboxError(f"adding SCRAM user {user} to ZooKeeper failed: {err}")
