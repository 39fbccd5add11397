"""The drop-in CLI's argument rules (no cluster needed), --command-config parsing and mapping,
and the KIP-860 error from a broker that only speaks AlterPartitionReassignments v0."""

from __future__ import annotations

import json

import pytest

from reassign_kit import errors
from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.cluster.config import client_configs
from reassign_kit.errors import KafkaOperationError, UsageError
from reassign_kit.model import TopicPartition
from reassign_kit.operations import execute as ops

BS = ["--bootstrap-server", "127.0.0.1:1"]


@pytest.fixture
def plan_file(tmp_path):
    p = tmp_path / "plan.json"
    p.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1]}]})
    )
    return str(p)


@pytest.mark.parametrize(
    "argv, message",
    [
        ([*BS], "exactly one action"),
        ([*BS, "--execute", "--verify", "--reassignment-json-file", "x"], "exactly one action"),
        (["--list"], "--bootstrap-server is required"),
        ([*BS, "--execute"], "--execute needs --reassignment-json-file"),
        ([*BS, "--verify"], "--verify needs --reassignment-json-file"),
        ([*BS, "--cancel"], "--cancel needs exactly one of"),
        ([*BS, "--cancel", "--all", "--topics", "a"], "--cancel needs exactly one of"),
        (
            [*BS, "--verify", "--reassignment-json-file", "x", "--throttle", "5"],
            "--throttle can't be used with action --verify",
        ),
        ([*BS, "--list", "--additional"], "--additional can't be used with action --list"),
        (
            [*BS, "--execute", "--reassignment-json-file", "x", "--all"],
            "--all can't be used with action --execute",
        ),
        (
            [*BS, "--execute", "--reassignment-json-file", "x", "--preserve-throttles"],
            "--preserve-throttles can't be used",
        ),
        (
            [*BS, "--execute", "--reassignment-json-file", "x", "--throttle", "-5"],
            "--throttle must be >= 0",
        ),
        (
            [*BS, "--execute", "--reassignment-json-file", "x", "--throttle", "fast"],
            "--throttle must be an integer",
        ),
        ([*BS, "--list", "--no-such-flag"], "unrecognized arguments"),
        ([*BS, "--generate", "--broker-list", "1,2"], "reassign-kit plan"),
    ],
)
def test_usage_errors_exit_2_with_message(argv, message, capsys):
    code = reassign_cli.main(argv)
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert code == 2


def test_help_documents_exit_codes(capsys):
    assert reassign_cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in (
        "--bootstrap-server",
        "--command-config",
        "--reassignment-json-file",
        "--execute",
        "--verify",
        "--cancel",
        "--list",
        "--throttle",
        "--replica-alter-log-dirs-throttle",
        "--additional",
        "--preserve-throttles",
        "--disallow-replication-factor-change",
        "--timeout",
        "--all",
        "--topics",
        "--rollback-file",
    ):
        assert flag in out
    assert f"{errors.EXIT_IN_PROGRESS}  --verify: some moves are still in progress" in out
    assert f"{errors.EXIT_MISMATCH}  --verify" in out


def test_invalid_plan_exit_3_before_connecting(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1, 1]}]}'
    )
    code = reassign_cli.main([*BS, "--execute", "--reassignment-json-file", str(bad)])
    err = capsys.readouterr().err
    assert code == 3 and "duplicate-broker" in err and "a-0" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- command config


def test_load_command_config(tmp_path):
    p = tmp_path / "admin.properties"
    p.write_text(
        "# comment\n! also a comment\n\nsecurity.protocol=SASL_SSL\nsasl.mechanism : SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        '    username="svc" password="s3cr=t";\nssl.truststore.location=/etc/ca.pem\n'
    )
    props = ops.load_command_config(str(p))
    assert props["security.protocol"] == "SASL_SSL"
    assert props["sasl.mechanism"] == "SCRAM-SHA-512"
    assert 'password="s3cr=t"' in props["sasl.jaas.config"]
    ck, kp = client_configs(props)
    assert ck == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "svc",
        "sasl.password": "s3cr=t",
        "ssl.ca.location": "/etc/ca.pem",
    }
    assert kp == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc",
        "sasl_plain_password": "s3cr=t",
        "ssl_cafile": "/etc/ca.pem",
    }


def test_command_config_errors_never_show_secrets(tmp_path):
    p = tmp_path / "bad.properties"
    p.write_text("sasl.password\n")
    with pytest.raises(UsageError) as e:
        ops.load_command_config(str(p))
    assert "value hidden" in str(e.value)
    with pytest.raises(UsageError, match="Java keystore"):
        client_configs(
            {"ssl.truststore.location": "/etc/truststore.jks", "ssl.truststore.password": "hunter2"}
        )
    with pytest.raises(UsageError, match="unsupported property 'foo.bar'"):
        client_configs({"foo.bar": "x"})
    gw = AdminGateway(
        "h:1",
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.password": "hunter2",
            "sasl.username": "u",
        },
    )
    assert "hunter2" not in repr(gw) and "hunter2" not in str(vars(gw).get("bootstrap_servers"))


def test_missing_command_config_file_is_a_usage_error(capsys, plan_file):
    code = reassign_cli.main(
        [*BS, "--verify", "--reassignment-json-file", plan_file, "--command-config", "/nope"]
    )
    assert code == 2 and "--command-config /nope" in capsys.readouterr().err


# ----------------------------------------------------------------------------- KIP-860 on a v0 broker


class _V0Manager:
    """Negotiates versions like kafka-python's connection does, with a broker that only speaks
    AlterPartitionReassignments v0 (every release before 4.1)."""

    def __init__(self):
        from kafka.protocol.broker_version_data import BrokerVersionData

        self.data = BrokerVersionData(api_versions={45: (0, 0), 46: (0, 0), 3: (0, 12)})
        self.sent = []

    def run(self, fn, request, *args):
        request.API_VERSION = self.data.api_version(request)  # raises IncompatibleBrokerVersion
        self.sent.append(request)
        resp = type("R", (), {"error_code": 0, "error_message": None, "responses": []})
        return resp()


class _FakeKP:
    def __init__(self):
        self._manager = _V0Manager()

    async def _send_request_to_controller(self, *a):  # never awaited here
        raise AssertionError


def test_v0_controller_degrades_to_the_client_side_guard_said_once(capsys):
    """Brokers that list only v0 (3.x, 4.0) get the request at v0, without
    AllowReplicationFactorChange (the preflight checked the plan client-side), and the
    warning names what is missing and the release that has it, once per process."""
    from reassign_kit.cluster import capabilities as caps

    caps._SAID.clear()
    gw = AdminGateway("h:1")
    gw._kp = _FakeKP()
    gw._caps = caps.Capabilities(api={45: (0, 0), 46: (0, 0)})
    for _ in range(2):
        gw.alter_reassignments(
            {TopicPartition("a", 0): [1, 2]}, allow_replication_factor_change=False
        )
    sent = gw._kp._manager.sent
    assert [r.API_VERSION for r in sent] == [0, 0]
    err = capsys.readouterr().err
    assert err.count("warning:") == 1
    assert "AlterPartitionReassignments v1" in err and "Kafka 4.1+" in err
    assert "client-side" in err


def test_a_controller_without_v1_after_the_brokers_listed_it_sends_nothing():
    """The brokers listed v1 when asked but the controller answering does not (a failover to
    an older controller): refused naming the release, nothing sent."""
    from reassign_kit.cluster import capabilities as caps

    gw = AdminGateway("h:1")
    gw._kp = _FakeKP()
    gw._caps = caps.Capabilities(api={45: (0, 1), 46: (0, 0)})
    with pytest.raises(KafkaOperationError) as e:
        gw.alter_reassignments(
            {TopicPartition("a", 0): [1, 2]}, allow_replication_factor_change=False
        )
    assert "Kafka 4.1+" in str(e.value) and "Nothing was submitted" in str(e.value)
    assert gw._kp._manager.sent == []


def test_command_config_settings_win_over_defaults(monkeypatch):
    import kafka

    seen = {}

    class FakeAdmin:
        def __init__(self, **kw):
            seen.update(kw)

    monkeypatch.setattr(kafka, "KafkaAdminClient", FakeAdmin)
    gw = AdminGateway("h:1,h:2", {"request.timeout.ms": "20000", "client.id": "ops-team"})
    assert isinstance(gw.kp, FakeAdmin)
    assert seen["request_timeout_ms"] == 20000 and seen["client_id"] == "ops-team"
    assert seen["bootstrap_servers"] == ["h:1", "h:2"]
    gw._kp = None
