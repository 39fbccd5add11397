"""Compatibility in `make test`: one older release, Apache Kafka 3.9.1 in ZooKeeper mode (the
newest release with ZooKeeper, without the broker-side replication-factor guard), on a small
sample so a regression is seen in CI. The sandbox fetches 3.9.1's jars itself (mvn, into
$RK_KAFKA_CACHE/3.9.1) on a fresh clone. `make compat` runs the whole matrix."""

from __future__ import annotations

import json

import pytest
from compat_checks import assert_no_request_above_listed, assert_rf_guard_behaviour
from waits import wait_until

from reassign_kit.cli import sandbox as sandbox_cli
from reassign_kit.cluster import capabilities as caps
from reassign_kit.cluster import isr_view
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.cluster.probe import probe_for

pytestmark = pytest.mark.integration
VERSION = "3.9.1"


@pytest.fixture(scope="module")
def zk39(tmp_path_factory):
    from reassign_kit.sandbox.sandbox import Sandbox

    d = tmp_path_factory.mktemp("zk39")
    with Sandbox.start(brokers=4, dir=d, kafka_version=VERSION, metadata="zookeeper") as sb:
        yield sb


@pytest.fixture
def gw39(zk39):
    g = AdminGateway(zk39.bootstrap_servers)
    yield g
    g.close()


def status(sb, capsys, *argv: str) -> dict:
    code = sandbox_cli.main([*argv, "--dir", str(sb.dir)])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_status_names_version_and_mode_and_kill_controller_names_the_broker(zk39, capsys):
    st = status(zk39, capsys, "status")
    assert (st["kafka_version"], st["metadata"]) == (VERSION, "zookeeper")
    assert st["controllers"] == [] and st["zookeeper"]["alive"]
    ctrl = st["active_controller"]
    assert ctrl in {b["id"] for b in st["brokers"]}  # the controller is a broker
    other = next(b["id"] for b in st["brokers"] if b["id"] != ctrl)
    code = sandbox_cli.main(["kill-controller", str(other), "--dir", str(zk39.dir)])
    assert code != 0 and f"the controller is broker {ctrl}" in capsys.readouterr().err
    try:
        killed = status(zk39, capsys, "kill-controller", "active")
        assert killed["acted_on"]["id"] == ctrl and killed["acted_on"]["role"] == "broker"
        assert f"controller is broker {ctrl}" in killed["acted_on"]["note"]
        new = wait_until(
            lambda: (c := zk39.active_controller()) is not None and c != ctrl and c,
            60,
            "another broker elected controller",
        )
        assert new != ctrl
    finally:
        status(zk39, capsys, "start-controller", str(ctrl))
    assert zk39.registered_brokers() == set(zk39.nodes)


def test_a_sigkilled_broker_started_again_at_once_comes_back(zk39, capsys):
    """ZooKeeper mode: a SIGKILLed broker's registration (/brokers/ids/N, ephemeral) outlives
    it until its ZooKeeper session expires (18 s); started again before that, Kafka exits with
    NodeExistsException. start-broker waits for the registration to go first (make compat's
    3.6.2 ZK chaos failure: broker 3 restarted ~10 s after its SIGKILL)."""
    ctrl = zk39.active_controller()
    victim = max(b for b in zk39.nodes if b != ctrl)
    assert sandbox_cli.main(["kill-broker", str(victim), "--dir", str(zk39.dir)]) == 0
    code = sandbox_cli.main(["start-broker", str(victim), "--dir", str(zk39.dir)])
    assert code == 0, capsys.readouterr().err
    wait_until(lambda: zk39.registered_brokers() == set(zk39.nodes), 60, "all registered")


def test_capabilities_are_what_the_brokers_report(gw39):
    c = gw39.capabilities()
    assert c.max_version(caps.ALTER_PARTITION_REASSIGNMENTS) == 0  # v1 is Kafka 4.1+
    assert not c.has(caps.RF_GUARD) and not c.has(caps.CORDONS) and not c.has(caps.ELR)
    assert c.has(caps.LOG_DIR_MOVES) and c.has(caps.TIERED)
    info = gw39.cluster_info()  # what a run's journal records (run_started)
    assert info["metadata_mode"] == "zookeeper" and info["kafka_version"].startswith("3.9")
    assert info["capabilities"] == c.summary()
    assert info["capabilities"]["broker-side replication-factor guard"] is False
    # the probe's ISR view falls back to the metadata, ELR unknown (never 0)
    assert "DescribeTopicPartitions" in (isr_view.elr_unknown_why(c) or "")
    probe = probe_for(gw39)
    try:
        s = probe.sample()
    finally:
        probe.close()
    assert s.under_min_isr is not None and s.isr is not None, s.degraded
    assert s.elr_unknown == isr_view.elr_unknown_why(c)
    assert all(x.elr is None for x in s.isr.values())


def test_rf_guard_without_v1_is_client_side_with_one_warning(
    zk39, gw39, monkeypatch, capsys, tmp_path, topic_name
):
    assert_rf_guard_behaviour(zk39, gw39, monkeypatch, capsys, tmp_path, topic_name("rfg"))


def test_no_request_above_a_listed_version_on_3_9(
    zk39, gw39, monkeypatch, capsys, tmp_path, topic_name
):
    assert_no_request_above_listed(zk39, gw39, monkeypatch, capsys, tmp_path, topic_name("api"))
