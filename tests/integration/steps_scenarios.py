"""Scenarios shared by tests/integration/test_steps_progress.py and bench/bench_steps.py:
a partition moved step by step under an acks=all producer, and a throttled move watched by
the progress report. They talk to a real sandbox cluster; assertions stay in the callers."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, Producer

from reassign_kit.admin import AdminGateway
from reassign_kit.journal import Journal, read_events
from reassign_kit.model import Move, Plan, TopicPartition, is_complete
from reassign_kit.progress import ProgressReport, ProgressTracker, observe
from reassign_kit.steps import Step, describe_steps, plan_steps


def create_topic(
    sb: Any, name: str, assignment: Sequence[Sequence[int]], configs: dict[str, str] | None = None
) -> None:
    """Create a topic with an explicit assignment. (confluent-kafka 2.16 refuses
    ``replica_assignment`` with the default partition count of -1, so pass the real count.)"""
    from confluent_kafka.admin import NewTopic

    admin = sb.admin()
    t = NewTopic(
        name,
        num_partitions=len(assignment),
        replica_assignment=[list(r) for r in assignment],
        config=configs or {},
    )
    admin.create_topics([t])[name].result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        md = admin.list_topics(topic=name, timeout=10).topics.get(name)
        if (
            md is not None
            and md.error is None
            and md.partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return
        time.sleep(0.2)
    raise AssertionError(f"topic {name} has no leader after 60s")


class AckedProducer(threading.Thread):
    """Writes sequence numbers to one partition (acks=all, idempotent) and remembers every
    one the cluster acknowledged, so that losses can be counted afterwards."""

    def __init__(self, bootstrap: str, topic: str, partition: int = 0, per_second: int = 200):
        super().__init__(daemon=True)
        self.topic, self.partition, self.gap = topic, partition, 1.0 / per_second
        self.stop_evt = threading.Event()
        self.acked: set[int] = set()
        self.errors: list[str] = []
        self.sent = 0
        self.p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "delivery.timeout.ms": 120000,
            }
        )

    def _cb(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked.add(int(msg.value()))

    def run(self) -> None:
        while not self.stop_evt.is_set():
            self.p.produce(
                self.topic, str(self.sent).encode(), partition=self.partition, on_delivery=self._cb
            )
            self.sent += 1
            self.p.poll(0)
            time.sleep(self.gap)
        self.p.flush(60)

    def stop(self) -> None:
        self.stop_evt.set()
        self.join(90)


def consume_all(
    bootstrap: str, topic: str, partition: int, expect_at_least: int, timeout: float = 60
) -> set[int]:
    """Every value in the partition, read from the beginning."""
    from confluent_kafka import TopicPartition as CTP

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"rk-check-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    c.assign([CTP(topic, partition, 0)])
    seen: set[int] = set()
    deadline = time.monotonic() + timeout
    idle = 0
    try:
        while time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                idle += 1
                if len(seen) >= expect_at_least and idle >= 4:
                    break
                continue
            idle = 0
            if m.error() is None:
                seen.add(int(m.value()))
    finally:
        c.close()
    return seen


@dataclass
class StepRun:
    planned: list[tuple[int, ...]]
    printed: list[str]
    observed_sets: list[tuple[int, ...]] = field(default_factory=list)
    min_isr_seen: int = 1 << 30
    isr_polls: int = 0
    journal_steps: list[tuple[int, ...]] = field(default_factory=list)
    seconds: float = 0.0


def drive_steps(
    gw: AdminGateway,
    tp: TopicPartition,
    target: Sequence[int],
    parallel_replica_count: int,
    min_isr: int,
    journal_path: str,
    timeout_s: float = 120,
    poll_s: float = 0.1,
) -> StepRun:
    """Submit each planned step as a reassignment, wait for it (``is_complete``), journal it,
    and poll the ISR all the while. Stands in for the executor's step mode."""
    start = gw.describe_partitions([tp])[tp]
    planned = plan_steps(start.replicas, target, parallel_replica_count, min_isr, tp=tp)
    run = StepRun(planned, describe_steps(start.replicas, planned))
    t0 = time.monotonic()
    with Journal(journal_path, run_id=f"steps-{uuid.uuid4().hex[:6]}") as j:
        cur = start.replicas
        for i, s in enumerate(planned, 1):
            step = Step(tp, cur, s, i, len(planned), start.leader)
            j.write("step_submitted", **step.to_json_obj())
            err = gw.alter_reassignments({tp: list(s)})
            if err.get(tp):
                raise AssertionError(f"step {i} {s} refused: {err[tp]}")
            deadline = time.monotonic() + timeout_s
            while True:
                st = gw.describe_partitions([tp])[tp]
                run.isr_polls += 1
                run.min_isr_seen = min(run.min_isr_seen, len(st.isr))
                if is_complete(s, st):
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(f"step {i} {s} not complete after {timeout_s}s: {st}")
                time.sleep(poll_s)
            run.observed_sets.append(st.replicas)
            j.write(
                "step_completed",
                topic=tp.topic,
                partition=tp.partition,
                step=i,
                replicas=list(st.replicas),
                isr=list(st.isr),
            )
            cur = st.replicas
    run.seconds = time.monotonic() - t0
    run.journal_steps = [
        tuple(e["replicas"]) for e in read_events(journal_path) if e["event"] == "step_submitted"
    ]
    return run


def watch_throttled_move(
    gw: AdminGateway,
    tp: TopicPartition,
    target: Sequence[int],
    rate_bps: int,
    interval_s: float = 0.5,
    timeout_s: float = 180,
    on_report: Callable[[ProgressReport], None] | None = None,
) -> tuple[list[ProgressReport], float, float]:
    """Throttle, submit ``tp`` -> ``target``, report every ``interval_s`` until Done; always
    removes the throttles. Returns (reports, submit time, first time the report said Done)."""
    start = gw.describe_partitions([tp])[tp]
    plan = Plan.of([Move(tp, tuple(target))])
    leaders = ",".join(f"{tp.partition}:{b}" for b in start.replicas)
    followers = ",".join(f"{tp.partition}:{b}" for b in target if b not in start.replicas)
    brokers = sorted(set(start.replicas) | set(target))
    tracker = ProgressTracker(plan, window_s=10)
    gw.set_throttles(
        {
            tp.topic: {
                "leader.replication.throttled.replicas": leaders,
                "follower.replication.throttled.replicas": followers,
            }
        },
        {
            b: {
                "leader.replication.throttled.rate": str(rate_bps),
                "follower.replication.throttled.rate": str(rate_bps),
            }
            for b in brokers
        },
    )
    try:
        tracker.update(observe(gw, plan))
        submitted = time.time()
        err = gw.alter_reassignments({tp: list(target)})
        if err.get(tp):
            raise AssertionError(f"move refused: {err[tp]}")
        deadline = time.monotonic() + timeout_s
        while True:
            time.sleep(interval_s)
            rep = tracker.update(observe(gw, plan))
            if on_report is not None:
                on_report(rep)
            if rep.done:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"move not done after {timeout_s}s:\n{rep.render_text()}")
    finally:
        gw.clear_throttles([tp.topic], brokers)
    return tracker.reports, submitted, rep.ts
