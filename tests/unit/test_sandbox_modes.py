"""The sandbox by release and metadata mode, without starting Kafka: bad versions and
modes are refused by name before anything is fetched or written; a ZooKeeper-mode cluster's
files (ZooKeeper on loopback, brokers with broker.id + zookeeper.connect, no controller
process) and its state (version and mode in sandbox.json and status)."""

from __future__ import annotations

import json

import pytest

from reassign_kit.cli import sandbox as sandbox_cli
from reassign_kit.errors import SandboxError
from reassign_kit.sandbox import config_files, zookeeper
from reassign_kit.sandbox import kafka as kafka_mod
from reassign_kit.sandbox import sandbox as sbx
from reassign_kit.sandbox import state as sandbox_state
from reassign_kit.sandbox.ports import LoopbackPorts


def props(path: str) -> dict[str, str]:
    lines = open(path).read().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.mark.parametrize("bad", ["4", "../4.3.1", "3.9.1; rm -rf /", "latest", ""])
def test_a_version_that_is_not_a_release_is_refused_by_name(tmp_path, bad):
    with pytest.raises(SandboxError, match="--kafka-version must be a release"):
        sbx.Sandbox.create(tmp_path / "sb", brokers=1, kafka_version=bad or " ")
    assert not (tmp_path / "sb").exists()


def test_modes_a_release_does_not_have_are_refused(tmp_path):
    with pytest.raises(SandboxError, match="ZooKeeper mode was removed in 4.0"):
        sbx.Sandbox.create(tmp_path / "a", brokers=1, kafka_version="4.0.0", metadata="zookeeper")
    with pytest.raises(SandboxError, match="--metadata must be one of"):
        sbx.Sandbox.create(tmp_path / "b", brokers=1, metadata="etcd")
    with pytest.raises(SandboxError, match="KRaft is production-ready from Kafka 3.3"):
        sbx.Sandbox.create(tmp_path / "c", brokers=1, kafka_version="3.2.3", metadata="kraft")
    with pytest.raises(
        SandboxError, match="in ZooKeeper mode the controller is one of the brokers"
    ):
        sbx.Sandbox.create(
            tmp_path / "d", brokers=3, controllers=3, kafka_version="3.9.1", metadata="zookeeper"
        )
    assert not any((tmp_path / n).exists() for n in "abcd")


def test_zookeeper_mode_files_and_state(tmp_path):
    sb = sbx.Sandbox.create(
        tmp_path / "sb", brokers=2, racks=2, kafka_version="3.9.1", metadata="zookeeper"
    )
    assert (sb.version, sb.metadata) == ("3.9.1", "zookeeper")
    assert sb.controllers == {} and sb.controller is None and sb.zookeeper is not None
    zk = props(sb.zookeeper.config)
    assert zk["clientPortAddress"] == "127.0.0.1" and zk["admin.enableServer"] == "false"
    for b in sb.nodes.values():
        p = props(b.config)
        assert p["broker.id"] == str(b.id)
        assert p["zookeeper.connect"] == f"127.0.0.1:{sb.zookeeper.port}"
        assert not {"process.roles", "node.id", "controller.quorum.voters"} & set(p)
    state = json.loads((sb.dir / sandbox_state.STATE_FILE).read_text())
    assert (state["kafka_version"], state["metadata"]) == ("3.9.1", "zookeeper")
    st = sb.status()
    assert (st["kafka_version"], st["metadata"], st["running"]) == ("3.9.1", "zookeeper", False)
    assert st["controllers"] == [] and st["zookeeper"]["alive"] is False


def test_defaults_are_4_4_0_kraft_unless_the_environment_says(monkeypatch):
    monkeypatch.delenv(kafka_mod.VERSION_ENV, raising=False)
    monkeypatch.delenv(kafka_mod.METADATA_ENV, raising=False)
    assert (kafka_mod.default_version(), kafka_mod.default_metadata()) == ("4.4.0", "kraft")
    monkeypatch.setenv(kafka_mod.VERSION_ENV, "3.6.2")
    monkeypatch.setenv(kafka_mod.METADATA_ENV, "zookeeper")
    assert (kafka_mod.default_version(), kafka_mod.default_metadata()) == ("3.6.2", "zookeeper")
    assert kafka_mod.kafka_home("3.6.2").name == "3.6.2"  # one cache folder per release


def test_cli_names_a_bad_version_with_a_non_zero_exit(capsys):
    code = sandbox_cli.main(["fetch", "--kafka-version", "4.x"])
    err = capsys.readouterr().err
    assert code != 0 and "--kafka-version must be a release" in err and "Traceback" not in err


def test_down_stops_a_node_another_handle_restarted(tmp_path):
    """A node restarted through another handle (the CLI's start-controller) has a pid this
    object never saw: down() reads sandbox.json again and stops it (it was left running)."""
    import subprocess
    import sys

    sb = sbx.Sandbox.create(tmp_path / "sb", brokers=1, kafka_version="3.9.1", metadata="zookeeper")
    other = sbx.Sandbox(sb.dir)
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "kafka.Kafka"])
    try:
        other.nodes[1].pid = proc.pid
        other._save()
        assert sb.nodes[1].pid is None  # this handle's view is stale
        sb.down(timeout=5)
        assert proc.wait(10) is not None
    finally:
        if proc.poll() is None:
            proc.kill()


# ZooKeeper 3.8's `dump` answer (a 3.6.2 sandbox, trimmed): ephemeral znodes per session
ZK_DUMP = """SessionTracker dump:
Session Sets (2)/(4):
2 expire at Wed Nov 25 07:03:03 UTC 2026:
\t0x10000cdd02a0002
\t0x10000cdd02a0000
ephemeral nodes dump:
Sessions with Ephemerals (3):
0x10000cdd02a0003:
\t/brokers/ids/4
0x10000cdd02a0002:
\t/brokers/ids/1
0x10000cdd02a0000:
\t/controller
\t/brokers/ids/2
Connections dump:
Connections Sets (1)/(5):
4 expire at Wed Nov 25 07:03:09 UTC 2026:
\tip: /127.0.0.1:51566 sessionId: 0x10000cdd02a0000
"""


def test_zk_dump_ephemerals_lists_the_registrations_zookeeper_holds():
    held = zookeeper.zk_dump_ephemerals(ZK_DUMP)
    assert held == {"/brokers/ids/4", "/brokers/ids/1", "/brokers/ids/2", "/controller"}
    # dump not whitelisted (a sandbox written before it was): unknown, not "none held"
    assert (
        zookeeper.zk_dump_ephemerals("dump is not executed because it is not in the whitelist.\n")
        is None
    )


def test_zookeeper_whitelists_dump(tmp_path):
    with LoopbackPorts() as free:
        config_files.zookeeper_node(tmp_path, free)
    props = (tmp_path / "zookeeper.properties").read_text()
    assert "4lw.commands.whitelist=ruok,srvr,dump" in props
