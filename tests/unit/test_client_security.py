"""Every entry point takes the same client config and refuses what it cannot honour up front
, and a principal's missing rights are named before anything is sent (on the
simulator; tests/integration/test_security.py does the same on a SASL sandbox)."""

from __future__ import annotations

import json

import pytest

import reassign_kit
from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.cluster.config import client_configs
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import AuthorizationError, KafkaOperationError, UsageError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.operations import cancel as cancel_mod
from reassign_kit.operations import execute as ops
from reassign_kit.operations import verify as verify_mod
from reassign_kit.snapshot.snapshot import take_snapshot
from reassign_kit.throttles import configs as thr

BS = ["--bootstrap-server", "127.0.0.1:1"]
SCRAM = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": 'x required username="u" password="pw";',
}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def props(tmp_path, text: str) -> str:
    p = tmp_path / "client.properties"
    p.write_text(text)
    return str(p)


@pytest.fixture
def plan_file(tmp_path):
    p = tmp_path / "plan.json"
    p.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": "a", "partition": 0, "replicas": [1]}]})
    )
    return str(p)


# ----------------------------------------------------------------------------- the config


def test_a_non_numeric_timeout_names_the_key(tmp_path, capsys):
    """Before: ValueError from int() -> exit 1 'unexpected'."""
    cfg = props(tmp_path, "request.timeout.ms=abc\n")
    code = reassign_cli.main([*BS, "--list", "--command-config", cfg])
    err = capsys.readouterr().err
    assert code == UsageError.exit_code
    assert "request.timeout.ms must be a whole number of milliseconds, got 'abc'" in err
    assert "unexpected" not in err


def test_librdkafka_refusing_a_setting_is_a_config_error(tmp_path, capsys, plan_file):
    """A CA file that holds no certificate: librdkafka refuses it when the client is built
    (before: KafkaException -> exit 1 'unexpected' from the drop-in CLI)."""
    not_a_ca = tmp_path / "ca.pem"
    not_a_ca.write_text("not a certificate\n")
    cfg = props(tmp_path, f"security.protocol=SSL\nssl.ca.location={not_a_ca}\n")
    code = reassign_cli.main(
        [*BS, "--verify", "--reassignment-json-file", plan_file, "--command-config", cfg]
    )
    err = capsys.readouterr().err
    assert code == UsageError.exit_code
    assert "librdkafka) refused the settings" in err and "ssl.ca.location" in err
    assert "unexpected" not in err


def test_a_missing_ssl_file_is_named_before_any_client_is_built(tmp_path):
    with pytest.raises(UsageError, match=r"ssl.ca.location /nope/ca.pem: no such file"):
        AdminGateway("h:1", {"security.protocol": "SSL", "ssl.ca.location": "/nope/ca.pem"})


@pytest.mark.parametrize(
    "config, message",
    [
        (
            {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"},
            "sasl.mechanism=OAUTHBEARER is not supported: an OAuth token needs a token provider",
        ),
        (
            {
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
            },
            "sasl.mechanism=OAUTHBEARER is not supported",
        ),
        (
            {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "gssapi"},
            "sasl.mechanism=GSSAPI is not supported: Kerberos needs a keytab",
        ),
        (
            {"security.protocol": "SASL_SSL", "sasl.jaas.config": SCRAM["sasl.jaas.config"]},
            "needs sasl.mechanism",
        ),
        ({"sasl.jaas.config": SCRAM["sasl.jaas.config"]}, "security.protocol is PLAINTEXT"),
        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "needs credentials"),
        ({"security.protocol": "TLS"}, "security.protocol 'TLS' is not one of"),
        ({"request.timeout.ms": "0"}, "request.timeout.ms must be > 0"),
    ],
)
def test_what_cannot_be_honoured_is_refused_up_front(config, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        client_configs(config)


def test_both_clients_get_the_credentials_and_pem_keystores():
    ck, kp = client_configs(
        {
            **SCRAM,
            "security.protocol": "sasl_ssl",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/s/ca.pem",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/s/me.pem",
        }
    )
    assert ck["security.protocol"] == kp["security_protocol"] == "SASL_SSL"
    assert (ck["sasl.username"], ck["sasl.password"]) == ("u", "pw")
    assert (kp["sasl_plain_username"], kp["sasl_plain_password"]) == ("u", "pw")
    assert ck["ssl.ca.location"] == kp["ssl_cafile"] == "/s/ca.pem"
    assert ck["ssl.certificate.location"] == ck["ssl.key.location"] == "/s/me.pem"
    assert kp["ssl_certfile"] == kp["ssl_keyfile"] == "/s/me.pem"


# ----------------------------------------------------------------------------- authorisation

READER = frozenset({"DESCRIBE", "DESCRIBE_CONFIGS"})


def sim_and_plan() -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[0, 1], [1, 2]], 1 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    return sim, plan


@pytest.mark.parametrize("paced", [False, True])
@pytest.mark.parametrize("perms", [frozenset(), READER])
def test_execute_without_alter_is_refused_before_anything_is_sent(tmp_path, paced, perms):
    sim, plan = sim_and_plan()
    sim.permissions = perms
    extra = {"batch_size": 1, "journal": tmp_path / "j.jsonl"} if paced else {}
    with pytest.raises(AuthorizationError) as e:
        reassign_kit.execute(sim, plan, rollback_path=tmp_path / "rb.json", throttle=MB, **extra)
    text = str(e.value)
    assert e.value.exit_code == KafkaOperationError.exit_code == 4
    assert text.startswith("execute: not authorised; nothing was sent to the cluster")
    assert "ALTER on the CLUSTER resource (kafka-cluster), needed to submit" in text
    assert "ALTER_CONFIGS on the CLUSTER resource" in text  # asked for a throttle
    assert ("DESCRIBE on the CLUSTER" in text) == (perms == frozenset())
    assert sim.calls["alter_reassignments"] == 0 and sim.throttles.is_empty()
    assert not (tmp_path / "rb.json").exists() and not (tmp_path / "j.jsonl").exists()


def test_a_user_without_alter_configs_asking_for_a_throttle_is_told_so():
    sim, plan = sim_and_plan()
    sim.permissions = frozenset({"DESCRIBE", "DESCRIBE_CONFIGS", "ALTER"})
    with pytest.raises(AuthorizationError, match="ALTER_CONFIGS on the CLUSTER") as e:
        reassign_kit.execute(sim, plan, rollback_path=None, throttle=MB)
    assert "or run without --throttle" in str(e.value)
    assert sim.calls["alter_reassignments"] == 0


def test_cancel_and_list_name_what_is_missing():
    sim, plan = sim_and_plan()
    sim.stall(TopicPartition("a", 0))
    sim.alter_reassignments({TopicPartition("a", 0): (2, 3)})
    sim.permissions = READER
    before = sim.calls["alter_reassignments"]
    with pytest.raises(AuthorizationError, match=r"cancel: not authorised.*\n  - ALTER on"):
        cancel_mod.cancel(sim, plan)
    assert sim.calls["alter_reassignments"] == before
    assert list(ops.list_reassignments(sim).states) == [TopicPartition("a", 0)]
    sim.permissions = frozenset()
    for call in (
        lambda: ops.list_reassignments(sim),
        lambda: verify_mod.verify(sim, plan),
        lambda: reassign_kit.progress(sim, plan),
        lambda: take_snapshot(sim),
    ):
        with pytest.raises(AuthorizationError, match="lacks:\n  - DESCRIBE on the CLUSTER"):
            call()


def test_a_reader_verifies_and_is_told_why_throttles_stay():
    sim, plan = sim_and_plan()
    res = reassign_kit.execute(sim, plan, rollback_path=None, throttle=MB)
    assert res.exit_code == 0
    while sim.list_reassignments():
        sim.sleep(1)
    sim.permissions = READER
    v = verify_mod.verify(sim, plan)
    assert v.exit_code == 0 and v.cleared is None
    assert any(
        n.startswith("Throttles not removed: this client's principal lacks ALTER_CONFIGS")
        for n in v.notes
    )
    assert thr.current_throttles(sim, ["a"], range(4))["brokers"]  # still there, as said
    sim.permissions = None  # a cluster that does not say: nothing checked, throttles go
    assert verify_mod.verify(sim, plan).cleared is not None


def test_kafka_python_debug_config_dump_is_masked(caplog):
    """kafka-python logs its whole configuration at DEBUG; someone who turns its logger on
    sees the options, never the password (before: the logger was forced to CRITICAL and an
    explicit DEBUG level was overridden; nothing masked the dump)."""
    import logging

    kafka = logging.getLogger("kafka")
    old = kafka.level
    kafka.setLevel(logging.DEBUG)
    try:
        gw = AdminGateway(
            "127.0.0.1:1",
            {**SCRAM, "sasl.jaas.config": SCRAM["sasl.jaas.config"].replace('"pw"', '"hunter2pw"')},
            timeout_s=1,
        )
        with caplog.at_level(logging.DEBUG, logger="kafka"), pytest.raises(KafkaOperationError):
            _ = gw.kp
    finally:
        kafka.setLevel(old)
    assert "Starting KafkaAdminClient with configuration" in caplog.text
    assert "sasl_plain_password': '***'" in caplog.text and "hunter2pw" not in caplog.text


def test_a_throttle_on_topics_the_principal_may_not_alter_is_refused_before_any_change(tmp_path):
    """Cluster rights are not enough: the throttled-replica lists are topic configs. Before,
    nothing asked: the refusal came from the first AlterConfigs, after the rollback file was
    written (and a paced run had started and journaled)."""
    sim, plan = sim_and_plan()
    sim.topic_permissions_of = {"a": frozenset({"DESCRIBE", "DESCRIBE_CONFIGS", "READ"})}
    with pytest.raises(AuthorizationError) as e:
        reassign_kit.execute(sim, plan, rollback_path=tmp_path / "rb.json", throttle=MB)
    assert "ALTER_CONFIGS on TOPIC a, needed to set the replication throttle" in str(e.value)
    assert sim.calls["alter_reassignments"] == 0 and sim.throttles.is_empty()
    assert not (tmp_path / "rb.json").exists()
    res = reassign_kit.execute(sim, plan, rollback_path=None)  # no throttle: allowed
    assert res.exit_code == 0
