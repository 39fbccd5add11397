"""The sandbox is a real cluster: replication, failover and rejoining the ISR really happen."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from reassign_kit.errors import SandboxError
from reassign_kit.sandbox.kafka import fetch_kafka, java_binary, run_kafka_class
from reassign_kit.sandbox.processes import pid_alive

pytestmark = pytest.mark.integration


def _isr(bootstrap: str, topic: str, partition: int) -> list[int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic=topic, timeout=10)
    return sorted(md.topics[topic].partitions[partition].isrs)


def _wait(pred, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def test_kill_broker_no_acked_message_lost_and_rejoin(sandbox, topic_name):
    assert len(sandbox.nodes) >= 4
    assert {n.rack for n in sandbox.nodes.values()} == {"rack-0", "rack-1"}
    topic = topic_name("durable")
    sandbox.create_topic(topic, partitions=1, rf=3, configs={"min.insync.replicas": "2"})
    bs = sandbox.bootstrap_servers

    producer = Producer(
        {"bootstrap.servers": bs, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    )
    acked: list[int] = []
    for i in range(10_000):
        producer.produce(
            topic,
            value=str(i).encode(),
            partition=0,
            on_delivery=lambda err, msg: acked.append(int(msg.value())) if err is None else None,
        )
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert len(acked) == 10_000

    md = AdminClient({"bootstrap.servers": bs}).list_topics(topic=topic, timeout=10)
    victim = md.topics[topic].partitions[0].leader
    sandbox.kill_broker(victim)
    assert not pid_alive(sandbox.node(victim).pid)

    alive = ",".join(f"127.0.0.1:{n.port}" for n in sandbox.nodes.values() if n.id != victim)
    consumer = Consumer(
        {
            "bootstrap.servers": alive,
            "group.id": f"g-{uuid.uuid4().hex[:6]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while len(seen) < 10_000 and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            seen.add(int(msg.value()))
    consumer.close()
    assert seen == set(range(10_000))

    sandbox.start_broker(victim)
    _wait(lambda: victim in _isr(bs, topic, 0), 120, f"broker {victim} to rejoin the ISR")


def test_official_list_runs_against_sandbox(sandbox):
    proc = run_kafka_class(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        ["--bootstrap-server", sandbox.bootstrap_servers, "--list"],
    )
    assert proc.returncode == 0, proc.stderr


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reassign_kit.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_cli_status_and_info(sandbox):
    st = _cli("sandbox", "status", "--dir", str(sandbox.dir))
    assert st.returncode == 0, st.stderr
    data = json.loads(st.stdout)
    assert data["bootstrap_servers"] == sandbox.bootstrap_servers
    assert all(b["alive"] for b in data["brokers"])
    info = json.loads(_cli("sandbox", "info").stdout)
    assert info["kafka_version"].startswith("4.") and info["fetched"]


def test_bad_input_errors(sandbox, tmp_path):
    r = _cli("sandbox", "status", "--dir", str(tmp_path / "nope"))
    assert r.returncode != 0 and "no sandbox in" in r.stderr and "Traceback" not in r.stderr
    r = _cli("sandbox", "kill-broker", "99", "--dir", str(sandbox.dir))
    assert r.returncode != 0 and "broker 99 does not exist" in r.stderr
    r = _cli("sandbox", "up", "--brokers", "1", "--dir", str(sandbox.dir))
    assert r.returncode != 0 and "already running" in r.stderr
    r = _cli(
        "sandbox", "up", "--dir", str(tmp_path / "x"), env={**os.environ, "PATH": "/nonexistent"}
    )
    # with no java/mvn on PATH (and JAVA_HOME unset) the message names the missing tool
    assert r.returncode != 0 and "Traceback" not in r.stderr


def test_missing_java_and_maven_are_named(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(SandboxError, match="java not found"):
        java_binary()
    monkeypatch.setenv("RK_KAFKA_CACHE", str(tmp_path))
    with pytest.raises(SandboxError, match="mvn not found"):
        fetch_kafka()


def test_cli_up_stop_start_down_leaves_no_process(tmp_path):
    d = str(tmp_path / "one")
    up = _cli("sandbox", "up", "--brokers", "1", "--dir", d, "--output", "json")
    assert up.returncode == 0, up.stderr
    data = json.loads(up.stdout)
    assert data["dir"] == d and data["bootstrap_servers"].startswith("127.0.0.1:")
    pids = [data["controller"]["pid"]] + [b["pid"] for b in data["brokers"]]
    try:
        assert _cli("sandbox", "stop-broker", "1", "--dir", d).returncode == 0
        assert not pid_alive(pids[1])
        restarted = _cli("sandbox", "start-broker", "1", "--dir", d)
        assert restarted.returncode == 0, restarted.stderr
        pids.append(json.loads(restarted.stdout)["brokers"][0]["pid"])
    finally:
        assert _cli("sandbox", "down", "--dir", d).returncode == 0
    assert not any(pid_alive(p) for p in pids)
