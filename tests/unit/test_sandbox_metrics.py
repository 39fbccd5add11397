"""The sandbox brokers' exporter wiring, without starting Kafka: a port per broker
kept beside sandbox.json, the agent's JVM argument for brokers only, the endpoints
``sandbox status`` lists, and ``RK_SANDBOX_METRICS=0``."""

from __future__ import annotations

import pytest

from reassign_kit.sandbox import metrics as sm
from reassign_kit.sandbox.ports import LoopbackPorts


@pytest.fixture
def cached_jar(tmp_path, monkeypatch):
    """A jar already in the cache (nothing fetched)."""
    monkeypatch.setenv("RK_KAFKA_CACHE", str(tmp_path / "cache"))
    jar = sm.agent_jar()
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    return jar


def test_ports_kept_and_the_agent_only_on_brokers(tmp_path, cached_jar, monkeypatch):
    monkeypatch.delenv(sm.ENV_SWITCH, raising=False)
    d = tmp_path / "sb"
    d.mkdir()
    with LoopbackPorts() as free:
        ports = sm.assign_ports(d, [1, 2, 3], free)
    assert sorted(ports) == [1, 2, 3] and len(set(ports.values())) == 3
    assert sm.ports(d) == ports  # read back by a later process (start-broker, status)
    args = sm.agent_args(d, 2, "broker")
    assert args == [f"-javaagent:{cached_jar}=127.0.0.1:{ports[2]}:{sm.RULES}"]
    assert sm.RULES.exists()
    assert sm.agent_args(d, 1000, "controller") == []
    assert sm.agent_args(d, 9, "broker") == []  # no port: no agent
    assert sm.status_fields(d) == {
        "metrics_endpoints": {str(b): f"http://127.0.0.1:{p}/metrics" for b, p in ports.items()}
    }


def test_switched_off_and_a_sandbox_made_before(tmp_path, cached_jar, monkeypatch):
    monkeypatch.setenv(sm.ENV_SWITCH, "0")
    d = tmp_path / "off"
    d.mkdir()
    with LoopbackPorts() as free:
        assert sm.assign_ports(d, [1, 2], free) == {}
    assert sm.agent_args(d, 1, "broker") == [] and sm.endpoints(d) == {}
    old = tmp_path / "old"  # no metrics.json at all
    old.mkdir()
    assert sm.endpoints(old) == {} and sm.agent_args(old, 1, "broker") == []
