"""A bounded, paced produce and consume load for sandbox tests, recording what it did.

``Traffic`` runs one producer (per partition a fixed rate of fixed-size messages) and any
number of consumer groups (each subscribed to the topic or assigned some partitions,
committing often), in threads that stop on ``stop()`` or by themselves at ``max_seconds``.
Every produced and consumed message is logged with its time, so a test can ask what it did
between two instants: ``produced(tp, t0, t1)`` / ``consumed(group, tp, t0, t1)``."""

from __future__ import annotations

import bisect
import os
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTP


@dataclass
class Log:
    """Times (sorted as appended) and the bytes of each message, for one stream."""

    times: list[float] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)

    def add(self, t: float, n: int) -> None:
        self.times.append(t)
        self.sizes.append(n)

    def between(self, t0: float, t1: float) -> tuple[int, int]:
        """(messages, bytes) with t0 <= time < t1."""
        i, j = bisect.bisect_left(self.times, t0), bisect.bisect_left(self.times, t1)
        return j - i, sum(self.sizes[i:j])


class Traffic:
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        rates: dict[int, float],
        message_bytes: int,
        groups: dict[str, list[int] | None],
        max_seconds: float,
    ):
        """``rates``: partition -> messages/s; ``groups``: group id -> the partitions it is
        assigned (None: subscribes to the whole topic)."""
        self.bootstrap, self.topic, self.rates = bootstrap, topic, rates
        self.message_bytes = message_bytes
        self.groups = groups
        self.deadline = time.time() + max_seconds
        self.stopping = threading.Event()
        self.sent = {p: Log() for p in rates}
        self.got: dict[str, dict[int, Log]] = {g: {} for g in groups}
        self.errors: list[str] = []
        self.threads = [threading.Thread(target=self._produce, daemon=True)] + [
            threading.Thread(target=self._consume, args=(g,), daemon=True) for g in groups
        ]

    def __enter__(self) -> Traffic:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=30)

    def running(self) -> bool:
        return not self.stopping.is_set() and time.time() < self.deadline

    def _produce(self) -> None:
        p = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, "acks": "all"})
        value = os.urandom(self.message_bytes)  # incompressible; no compression set
        start, due_sent = time.time(), dict.fromkeys(self.rates, 0)

        def delivered(err, msg) -> None:
            if err is not None:
                self.errors.append(f"produce: {err}")
            else:
                self.sent[msg.partition()].add(time.time(), len(msg.value()))

        while self.running():
            elapsed = time.time() - start
            for part, rate in self.rates.items():
                while due_sent[part] < int(rate * elapsed):
                    p.produce(self.topic, value, partition=part, on_delivery=delivered)
                    due_sent[part] += 1
            p.poll(0.01)
        p.flush(10)

    def _consume(self, group: str) -> None:
        c = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": group,
                "auto.offset.reset": "latest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 200,
            }
        )
        parts = self.groups[group]
        if parts is None:
            c.subscribe([self.topic])
        else:
            c.assign([CTP(self.topic, p, -1) for p in parts])  # -1: the log end (latest)
        logs = self.got[group]
        try:
            while self.running():
                msg = c.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    self.errors.append(f"consume {group}: {msg.error()}")
                    continue
                logs.setdefault(msg.partition(), Log()).add(time.time(), len(msg.value()))
        finally:
            c.close()  # commits what was consumed

    def produced(self, part: int, t0: float, t1: float) -> tuple[int, int]:
        return self.sent[part].between(t0, t1)

    def consumed(self, group: str, part: int, t0: float, t1: float) -> tuple[int, int]:
        log = self.got[group].get(part)
        return log.between(t0, t1) if log else (0, 0)
