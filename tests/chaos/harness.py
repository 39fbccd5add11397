"""The chaos harness: a paced reassignment on a real sandbox (a KRaft quorum of three
controllers) while an idempotent acks=all producer writes numbered messages, a fault injected
mid-move, then a check of everything an SRE would look at afterwards — one table row.

Each scenario runs the real CLI (``python -m reassign_kit.cli``) in a subprocess, so a
SIGKILL of the tool is a SIGKILL of a process, and the run is left to ride the fault out on
its own (no person acts unless the scenario says so). Every wait is bounded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTP

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.throttles.configs import current_throttles

CLI_TIMEOUT_S = 240
MB = 1024 * 1024


@dataclass
class Row:
    scenario: str
    outcome: str = "?"
    acked: int = 0
    lost: int = 0
    stray_throttles: int = -1  # throttle configs no in-flight move needs (operator's excluded)
    operator_restored: str = "n/a"
    misplaced: int = -1  # partitions at neither their plan target (completed) nor original
    rf_changed: int = -1
    seconds: float = 0.0
    person_acted: str = "no"
    notes: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return (
            self.lost == 0
            and self.stray_throttles == 0
            and self.operator_restored in ("yes", "n/a")
            and self.misplaced == 0
            and self.rf_changed == 0
            and self.acked > 0
        )

    HEAD = (
        f"{'scenario':<34} {'outcome':<24} {'acked':>6} {'lost':>4} {'stray thr':>9} "
        f"{'op thr back':>11} {'misplaced':>9} {'RF chg':>6} {'person':>6} {'secs':>5}"
    )

    def line(self) -> str:
        return (
            f"{self.scenario:<34} {self.outcome[:24]:<24} {self.acked:>6} {self.lost:>4} "
            f"{self.stray_throttles:>9} {self.operator_restored:>11} {self.misplaced:>9} "
            f"{self.rf_changed:>6} {self.person_acted:>6} {self.seconds:>5.0f}"
        )


class Load(threading.Thread):
    """Numbered messages to every partition of a topic (acks=all, idempotent); remembers each
    one the cluster acknowledged, so losses can be counted after reading everything back."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, per_second: int = 100):
        super().__init__(daemon=True)
        self.topic, self.partitions, self.gap = topic, partitions, 1.0 / per_second
        self.stop_evt = threading.Event()
        self.acked: set[tuple[int, int]] = set()
        self.errors: list[str] = []
        self.p = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                "delivery.timeout.ms": 300000,
                "logger": _Quiet(),
            }
        )

    def _cb(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.acked.add((msg.partition(), int(msg.value())))

    def run(self) -> None:
        seq = 0
        while not self.stop_evt.is_set():
            try:
                self.p.produce(
                    self.topic,
                    str(seq).encode(),
                    partition=seq % self.partitions,
                    on_delivery=self._cb,
                )
                seq += 1
            except BufferError:
                pass
            self.p.poll(0)
            time.sleep(self.gap)
        self.p.flush(240)

    def stop(self) -> None:
        self.stop_evt.set()
        self.join(300)


class _Quiet:
    def log(self, *a: Any, **k: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return self.log


def read_back(
    bootstrap: str, topic: str, partitions: int, timeout: float = 120
) -> set[tuple[int, int]]:
    """Every numbered message in the topic, from the beginning, to the end offsets of now."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"rk-chaos-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "logger": _Quiet(),
        }
    )
    ends = {p: c.get_watermark_offsets(CTP(topic, p), timeout=30)[1] for p in range(partitions)}
    c.assign([CTP(topic, p, 0) for p in range(partitions)])
    seen: set[tuple[int, int]] = set()
    pos = dict.fromkeys(range(partitions), 0)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and any(pos[p] < ends[p] for p in pos):
            m = c.poll(0.5)
            if m is None or m.error() is not None:
                continue
            pos[m.partition()] = m.offset() + 1
            try:
                seen.add((m.partition(), int(m.value())))
            except ValueError:
                continue  # filler written by Sandbox.load
    finally:
        c.close()
    return seen


@dataclass
class Ctx:
    """What a fault needs: the cluster, the run's process and journal, the plan."""

    sb: Any
    topic: str
    plan: Plan
    original: dict[TopicPartition, tuple[int, ...]]
    journal: Path
    work: Path
    args: list[str] = field(default_factory=list)
    proc: subprocess.Popen | None = None
    person_acted: str = "no"
    notes: list[str] = field(default_factory=list)

    def wait_event(self, name: str, count: int = 1, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.journal.exists():
                n = sum(1 for e in _events(self.journal) if e.get("event") == name)
                if n >= count:
                    return
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the run ended before {count} {name!r} event(s)")
            time.sleep(0.2)
        raise AssertionError(f"no {count} {name!r} event(s) within {timeout:.0f}s")


def _events(path: Path) -> list[dict[str, Any]]:
    try:
        return read_events(path)
    except Exception:  # noqa: BLE001 - being written: read again later
        return []


def cli_args(sb: Any, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "reassign_kit.cli",
        "--bootstrap-server",
        sb.bootstrap_servers,
        *args,
    ]


def start_cli(sb: Any, *args: str, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    f = open(log, "ab")  # noqa: SIM115 - handed to the child
    try:
        return subprocess.Popen(cli_args(sb, *args), stdout=f, stderr=subprocess.STDOUT, env=env)
    finally:
        f.close()


def finish(proc: subprocess.Popen, timeout: float = CLI_TIMEOUT_S) -> int:
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait(30)


def stray_throttles(gw: AdminGateway, operator: dict[str, Any]) -> int:
    """Throttle configs set now that no in-flight move needs, not counting the operator's own
    (``operator``: what was set before the scenario)."""
    topics = list(gw.topic_partition_counts())
    brokers = [b.id for b in gw.brokers()]
    now = current_throttles(gw, topics, brokers)
    moving = gw.list_reassignments()
    busy_topics = {tp.topic for tp in moving}
    busy_brokers = {b for st in moving.values() for b in st.replicas}
    n = 0
    for t, kv in now["topics"].items():
        if t not in busy_topics:
            n += sum(1 for k, v in kv.items() if operator.get("topics", {}).get(t, {}).get(k) != v)
    for b, kv in now["brokers"].items():
        if b not in busy_brokers:
            n += sum(1 for k, v in kv.items() if operator.get("brokers", {}).get(b, {}).get(k) != v)
    return n


def snapshot_throttles(gw: AdminGateway) -> dict[str, Any]:
    return current_throttles(gw, list(gw.topic_partition_counts()), [b.id for b in gw.brokers()])


def merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"topics": {}, "brokers": {}}
    for part in ("topics", "brokers"):
        for src in (a, b):
            for k, kv in src.get(part, {}).items():
                out[part].setdefault(k, {}).update(kv)
    return out


def clean_throttles(gw: AdminGateway, keep: dict[str, Any]) -> None:
    """Remove throttle configs no move needs and ``keep`` does not hold (after measuring)."""
    topics = list(gw.topic_partition_counts())
    now = current_throttles(gw, topics, [b.id for b in gw.brokers()])
    moving = gw.list_reassignments()
    busy_topics = {tp.topic for tp in moving}
    busy_brokers = {b for st in moving.values() for b in st.replicas}
    tchanges = {
        t: {k: None for k, v in kv.items() if keep.get("topics", {}).get(t, {}).get(k) != v}
        for t, kv in now["topics"].items()
        if t not in busy_topics
    }
    bchanges = {
        b: {k: None for k, v in kv.items() if keep.get("brokers", {}).get(b, {}).get(k) != v}
        for b, kv in now["brokers"].items()
        if b not in busy_brokers
    }
    if any(tchanges.values()):
        gw.alter_topic_configs({t: c for t, c in tchanges.items() if c})
    if any(bchanges.values()):
        gw.alter_broker_configs({b: c for b, c in bchanges.items() if c})


def settle_throttles(gw: AdminGateway, operator: dict[str, Any], timeout: float = 20) -> int:
    """Brokers apply config changes as they read the metadata log: poll a little."""
    deadline = time.monotonic() + timeout
    n = stray_throttles(gw, operator)
    while n and time.monotonic() < deadline:
        time.sleep(1)
        n = stray_throttles(gw, operator)
    return n


def run_scenario(
    sb: Any,
    name: str,
    work: Path,
    fault: Callable[[Ctx], None],
    *,
    partitions: int = 4,
    mb: float = 3,
    source: Sequence[int] = (1, 2),
    target: Sequence[int] = (3, 4),
    extra: Sequence[str] = (),
    journal: Path | None = None,
    expect: str = "completed",
    throttle: int = 1 * MB,
    before: Callable[[Ctx], None] | None = None,
    after: Callable[[Ctx], None] | None = None,
    operator: dict[str, Any] | None = None,
) -> Row:
    """One scenario: topic on ``source``, data, load, paced CLI run to ``target`` with
    ``fault`` injected from this thread, then the checks. ``expect``: "completed" (every
    partition at its target), "cancelled" (every partition back at its original list) or
    "either" (a run that stopped: each partition at one of the two)."""
    row = Row(name)
    t0 = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)
    topic = f"chaos-{name.split()[0]}-{uuid.uuid4().hex[:6]}"
    rot = [list(source[i:] + source[:i]) for i in range(len(source))]
    sb.create_topic(topic, assignment=[rot[p % len(rot)] for p in range(partitions)])
    if mb:
        sb.load(topic, mb_per_partition=mb)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    original = {tp: tuple(rot[tp.partition % len(rot)]) for tp in tps}
    trot = [list(target[i:] + target[:i]) for i in range(len(target))]
    plan = Plan.of(Move(tp, tuple(trot[tp.partition % len(trot)])) for tp in tps)
    plan_path = work / "plan.json"
    plan.write(str(plan_path))
    ctx = Ctx(sb, topic, plan, original, journal or work / "journal.jsonl", work)
    gw = AdminGateway(sb.bootstrap_servers)
    load = Load(sb.bootstrap_servers, topic, partitions)
    try:
        if before is not None:
            before(ctx)
        # what was set before this scenario (an operator's, or left by another) is not its own
        baseline = snapshot_throttles(gw)
        load.start()
        args = [
            "--execute",
            "--reassignment-json-file",
            str(plan_path),
            "--throttle",
            str(throttle),
            "--incremental",
            "--reassignment-batch-size",
            "2",
            "--reassignment-poll-interval-ms",
            "500",
            "--wait",
            "--additional",
            "--journal",
            str(ctx.journal),
            "--rollback-file",
            str(work / "rollback.json"),
            *extra,
        ]
        ctx.args = args
        ctx.proc = start_cli(sb, *args, log=work / "cli.log")
        try:
            fault(ctx)
        finally:
            code = finish(ctx.proc)
        if after is not None:
            after(ctx)
        row.outcome = f"exit {code}"
        row.person_acted = ctx.person_acted
        row.notes += ctx.notes
    finally:
        load.stop()
        try:
            got = read_back(sb.bootstrap_servers, topic, partitions)
            row.acked = len(load.acked)
            row.lost = len(load.acked - got)
            states = gw.describe_partitions(tps)
            wanted = {
                tp: {
                    "completed": [plan.by_tp()[tp].replicas],
                    "cancelled": [original[tp]],
                    "either": [plan.by_tp()[tp].replicas, original[tp]],
                }[expect]
                for tp in tps
            }
            row.misplaced = sum(
                1 for tp in tps if tuple(states[tp].replicas) not in map(tuple, wanted[tp])
            )
            row.rf_changed = sum(1 for tp in tps if len(states[tp].replicas) != len(original[tp]))
            row.stray_throttles = settle_throttles(gw, merge(baseline, operator or {}))
            clean_throttles(gw, merge(baseline, operator or {}))  # the next scenario starts clean
            if operator:
                brokers = [b.id for b in gw.brokers()]
                now = current_throttles(gw, list(operator.get("topics", {})), brokers)
                back = all(
                    now["brokers"].get(b, {}).get(k) == v
                    for b, kv in operator.get("brokers", {}).items()
                    for k, v in kv.items()
                )
                row.operator_restored = "yes" if back else "no"
        finally:
            gw.close()
    row.seconds = time.monotonic() - t0
    (work / "row.json").write_text(json.dumps(row.__dict__, indent=2))
    return row
