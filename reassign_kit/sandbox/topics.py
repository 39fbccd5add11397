"""Topics of a sandbox and the data in them: a topic created and waited for until every live
broker knows it, and partitions filled with incompressible data."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

from ..errors import SandboxError
from .clients import Clients, QuietLogger
from .processes import pid_alive


def create_topic(
    clients: Clients,
    name: str,
    partitions: int,
    rf: int,
    assignment: Sequence[Sequence[int]] | None,
    configs: dict[str, str] | None,
    timeout: float,
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
    admin = clients.admin()  # keep a reference: the futures die with their client
    futures = admin.create_topics([topic], operation_timeout=timeout)
    try:
        futures[name].result(timeout)
    except Exception as e:
        raise SandboxError(f"creating topic {name} failed: {e}") from e
    _wait_topic(clients, admin, name, timeout)


def _wait_topic(clients: Clients, admin: Any, name: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic=name, timeout=10).topics.get(name)
        if (
            md is not None
            and md.error is None
            and md.partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return _wait_topic_everywhere(clients, name, deadline)
        time.sleep(0.2)
    raise SandboxError(f"topic {name} has no leader for every partition after {timeout:.0f}s")


def _wait_topic_everywhere(clients: Clients, name: str, deadline: float) -> None:
    """Every live broker that answers knows the topic: a client asks any one broker, and a
    broker's metadata can lag the controller's for a moment under load (a fresh-clone CI
    run: ``--progress`` right after ``create_topic`` read "Unknown topic"). A broker that
    does not answer (stopped by a test) is not waited for."""
    for n in clients.nodes.values():
        if not pid_alive(n.pid):
            continue
        one = clients.one_broker(n)
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


def load(clients: Clients, topic: str, mb_per_partition: float, message_bytes: int) -> int:
    """Fill every partition of ``topic`` with incompressible data, acks=all. Returns messages sent."""
    from confluent_kafka import Producer

    admin = clients.admin()
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
            "bootstrap.servers": clients.bootstrap_servers,
            "acks": "all",
            "linger.ms": 20,
            "compression.type": "none",
            "enable.idempotence": True,
            "queue.buffering.max.kbytes": 65536,
            "logger": QuietLogger(),  # "coordinator load in progress" retries are expected here
            **clients.conf,
        }
    )
    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
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
