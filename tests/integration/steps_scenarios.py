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

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.moves.steps import describe_steps, plan_steps
from reassign_kit.watch.progress import ProgressTracker, observe
from reassign_kit.watch.report import ProgressReport


def create_topic(
    sb: Any, name: str, assignment: Sequence[Sequence[int]], configs: dict[str, str] | None = None
) -> None:
    """A topic with an explicit assignment, every partition led."""
    sb.create_topic(name, assignment=assignment, configs=configs)


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
                try:
                    seen.add(int(m.value()))
                except ValueError:
                    continue  # filler written by ``Sandbox.load``
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
    isr_sets: list[tuple[int, ...]] = field(default_factory=list)
    journal_steps: list[tuple[int, ...]] = field(default_factory=list)
    seconds: float = 0.0


class IsrWatcher(threading.Thread):
    """Polls one partition's ISR (its own admin connection) until stopped: the smallest ISR
    seen while the run moves it. Polling samples the ISR; it cannot see every instant."""

    def __init__(self, bootstrap: str, tp: TopicPartition, poll_s: float = 0.1):
        super().__init__(daemon=True)
        self.gw, self.tp, self.poll_s = AdminGateway(bootstrap), tp, poll_s
        self.stop_evt = threading.Event()
        self.first_poll = threading.Event()  # set once the start replicas have been seen
        self.min_isr = 1 << 30
        self.polls = 0
        self.sets: list[tuple[int, ...]] = []

    def run(self) -> None:
        try:
            while not self.stop_evt.is_set():
                st = self.gw.describe_partitions([self.tp]).get(self.tp)
                if st is not None:
                    self.polls += 1
                    self.min_isr = min(self.min_isr, len(st.isr))
                    if not self.sets or self.sets[-1] != st.replicas:
                        self.sets.append(st.replicas)
                    self.first_poll.set()
                time.sleep(self.poll_s)
        finally:
            self.gw.close()

    def stop(self) -> None:
        self.stop_evt.set()
        self.join(30)


def run_steps(
    bootstrap: str,
    tp: TopicPartition,
    target: Sequence[int],
    parallel_replica_count: int,
    journal_path: str,
) -> StepRun:
    """Plan and print the steps, then run the move through ``execute.Run`` in step mode (each
    topic's own min.insync.replicas) while an ``IsrWatcher`` polls the ISR."""
    from reassign_kit.moves.steps import make_steps_for
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    gw = AdminGateway(bootstrap)
    try:
        start = gw.describe_partitions([tp])[tp]
        min_isr = gw.min_insync_replicas([tp.topic])
        planned = plan_steps(
            start.replicas, target, parallel_replica_count, min_isr[tp.topic], start.isr, tp
        )
        out = StepRun(planned, describe_steps(start.replicas, planned))
        watcher = IsrWatcher(bootstrap, tp)
        watcher.start()
        # the run starts only once the watcher has seen the start replicas: its own connection
        # can take longer than the first step's submission
        if not watcher.first_poll.wait(60):
            watcher.stop()
            raise AssertionError("the ISR watcher saw no metadata for 60 s")
        t0 = time.monotonic()
        try:
            opts = ExecuteOptions(
                parallel_replica_count=parallel_replica_count,
                wait=True,
                poll_interval_ms=200,
                additional=True,  # the sandbox is shared: other tests may be moving their topics
            )
            plan = Plan.of([Move(tp, tuple(target))])
            result = Run(
                gw,
                plan,
                opts,
                journal_path,
                steps_for=make_steps_for(parallel_replica_count, min_isr),
            ).run()
        finally:
            watcher.stop()
        out.seconds = time.monotonic() - t0
        if result.state != "done":
            raise AssertionError(f"run ended {result.state}: {result.error}")
    finally:
        gw.close()
    evs = [e for e in read_events(journal_path) if e.get("run_id") == result.run_id]
    out.journal_steps = [tuple(e["target"]) for e in evs if e["event"] == "step_submitted"]
    out.observed_sets = [tuple(e["replicas"]) for e in evs if e["event"] == "step_completed"]
    done = [tuple(e["replicas"]) for e in evs if e["event"] == "completed"]
    out.observed_sets += done
    out.min_isr_seen = watcher.min_isr
    out.isr_polls = watcher.polls
    out.isr_sets = watcher.sets
    return out


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
    topic_cfg = {
        tp.topic: {
            "leader.replication.throttled.replicas": leaders,
            "follower.replication.throttled.replicas": followers,
        }
    }
    rates = {
        b: {
            "leader.replication.throttled.rate": str(rate_bps),
            "follower.replication.throttled.rate": str(rate_bps),
        }
        for b in brokers
    }
    gw.set_throttles(topic_cfg, rates)
    try:
        tracker.update(observe(gw, plan))
        submitted = time.time()
        err = gw.alter_reassignments({tp: list(target)})
        if err.get(tp):
            raise AssertionError(f"move refused: {err[tp]}")
        deadline = time.monotonic() + timeout_s
        while True:
            time.sleep(interval_s)
            # broker rates are shared: another test's cleanup may have deleted ours meanwhile
            gw.alter_broker_configs(rates)
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
