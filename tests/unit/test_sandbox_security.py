"""The secured sandbox's configs, without starting Kafka: what each security mode
writes for the nodes and the clients, with the secrets only in owner-only files."""

from __future__ import annotations

import json
import os
import stat

import pytest

from reassign_kit.cluster.config import client_configs
from reassign_kit.errors import SandboxError
from reassign_kit.operations.execute import load_command_config
from reassign_kit.sandbox import kafka
from reassign_kit.sandbox import sandbox as sbx
from reassign_kit.sandbox.security import Security
from reassign_kit.sandbox.state import STATE_FILE


@pytest.mark.parametrize("mode", ["sasl_scram", "ssl", "sasl_ssl"])
def test_each_mode_writes_private_client_configs_both_clients_accept(tmp_path, mode):
    sec = Security.make(tmp_path, mode)
    d = tmp_path / "security"
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    for f in d.iterdir():
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o600, f
    paths = sec.client_config_paths()
    assert set(paths) == {"admin", "reader", "denied"}
    for user, path in paths.items():
        props = load_command_config(path)
        ck, kp = client_configs(props)  # both clients' settings, no property refused
        assert ck["security.protocol"] == kp["security_protocol"] == sec.protocol
        if sec.sasl:
            assert ck["sasl.username"] == kp["sasl_plain_username"] == user
            assert ck["sasl.password"] == sec.passwords[user]
            assert ck["sasl.mechanism"] == "SCRAM-SHA-512"
        if sec.tls:
            assert ck["ssl.ca.location"] == kp["ssl_cafile"] == str(d / "ca.pem")
        if mode == "ssl":
            assert (
                ck["ssl.certificate.location"] == ck["ssl.key.location"] == str(d / f"{user}.pem")
            )
            assert kp["ssl_certfile"] == kp["ssl_keyfile"] == str(d / f"{user}.pem")
    common, broker = sec.common_props(), sec.broker_props()
    assert common["super.users"] == "User:broker"
    assert common["authorizer.class.name"].endswith("StandardAuthorizer")
    assert broker["inter.broker.listener.name"] == sec.protocol
    if sec.sasl:
        assert broker["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
        args = sec.format_args()
        assert args.count("--add-scram") == 4  # broker, admin, reader, denied


def test_status_json_holds_paths_never_secrets(tmp_path):
    """The status of a secured sandbox (as `sandbox status` prints it) names the client
    config files; no password appears in it nor in sandbox.json."""
    sec = Security.make(tmp_path, "sasl_scram")
    state = {
        "cluster_id": "x",
        "kafka_version": kafka.KAFKA_VERSION,
        "security": "sasl_scram",
        "controller": {
            "id": 1000,
            "role": "controller",
            "port": 1,
            "rack": None,
            "log_dirs": [],
            "config": "c",
            "log": "l",
        },
        "brokers": [],
    }
    (tmp_path / STATE_FILE).write_text(json.dumps(state))
    sb = sbx.Sandbox(tmp_path)
    status = json.dumps(sb.status())
    assert json.loads(status)["security"] == "sasl_scram"
    assert json.loads(status)["client_configs"] == sec.client_config_paths()
    for pw in sec.passwords.values():
        assert pw not in status
        assert pw not in (tmp_path / STATE_FILE).read_text()
    assert sb.client_config("reader").endswith("reader.properties")
    with pytest.raises(SandboxError, match="no client config for 'nobody'"):
        sb.client_config("nobody")


def test_unknown_security_mode_is_refused_before_anything_is_written(tmp_path):
    with pytest.raises(SandboxError, match="--security must be one of"):
        sbx.Sandbox.create(tmp_path / "sb", brokers=1, security="kerberos")
    assert not (tmp_path / "sb").exists()
