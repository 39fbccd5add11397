"""The tiered sandbox's settings and refusals, without starting Kafka: which jar holds
LocalTieredStorage per release, the broker and controller configs, and bad requests refused
by name before anything is fetched, written or created."""

from __future__ import annotations

from pathlib import Path

import pytest

from reassign_kit.cli import sandbox as sandbox_cli
from reassign_kit.errors import SandboxError
from reassign_kit.sandbox import sandbox as sbx
from reassign_kit.sandbox import tiered


def test_the_test_jar_classifier_per_release():
    # checked on Maven Central: 4.4.0 publishes test-fixtures, 4.3.1 and 3.9.1 test
    assert tiered.classifier("4.4.0") == "test-fixtures"
    assert tiered.classifier("4.3.1") == tiered.classifier("3.9.1") == "test"


def test_broker_configs_share_one_storage_dir_and_the_controller_gets_the_switch():
    c = tiered.broker_configs(Path("/sb/remote-storage"), Path("/j.jar"), "PLAINTEXT", 4)
    assert c["remote.log.storage.system.enable"] == "true"
    assert c["remote.log.storage.manager.class.name"] == tiered.RSM_CLASS
    assert c["remote.log.storage.manager.class.path"] == "/j.jar"
    assert c["rsm.config.dir"] == "/sb/remote-storage"
    assert c["rlmm.config.remote.log.metadata.topic.replication.factor"] == "3"
    assert set(tiered.CONTROLLER_KEYS) <= set(c)


@pytest.mark.parametrize(
    "version, security, says",
    [
        ("3.5.2", "plain", "--tiered-storage needs Kafka 3.6 or later"),
        ("4.4.0", "sasl_scram", "--tiered-storage runs with --security plain only"),
    ],
)
def test_a_tiered_sandbox_it_cannot_run_is_refused_before_anything(
    tmp_path, version, security, says
):
    with pytest.raises(SandboxError, match=says):
        sbx.Sandbox.up(
            tmp_path / "sb",
            brokers=1,
            kafka_version=version,
            security=security,
            tiered_storage=True,
        )
    assert not (tmp_path / "sb").exists()


def test_a_negative_local_retention_is_refused():
    with pytest.raises(SandboxError, match="--local-retention-bytes must be >= 0, got -5"):
        tiered.topic_configs(-5)
    assert tiered.topic_configs(0)["local.retention.bytes"] == "0"


def test_load_tiered_on_a_sandbox_without_remote_storage_is_refused(tmp_path, capsys):
    # a ZooKeeper-mode sandbox's files (no JVM, nothing formatted), not started
    sb = sbx.Sandbox.create(tmp_path / "sb", brokers=1, kafka_version="3.9.1", metadata="zookeeper")
    code = sandbox_cli.main(
        ["load", "--dir", str(sb.dir), "--tiered", "--topics", "t", "--replication-factor", "1"]
    )
    err = capsys.readouterr().err
    assert code != 0 and "Traceback" not in err
    assert "has no remote storage; start it with `sandbox up --tiered-storage`" in err


def test_a_truncated_storage_jar_is_fetched_again(tmp_path, monkeypatch):
    """A cached jar that is not a zip (a fetch killed half-way, a planted file) is not used:
    it is removed and fetched again (here: mvn refuses, so the error names the artifact)."""
    monkeypatch.setenv("RK_KAFKA_CACHE", str(tmp_path))
    jar = tmp_path / "4.4.0" / "tiered" / "kafka-storage-4.4.0-test-fixtures.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK\x03\x04 truncated")
    monkeypatch.setattr(tiered, "require", lambda tool, why: "/bin/false")
    with pytest.raises(SandboxError, match="kafka-storage:4.4.0:jar:test-fixtures"):
        tiered.fetch_storage_jar("4.4.0")
    assert not jar.exists()
