"""Issue 11 on the TLS sandboxes: ``ssl`` (mutual TLS, the principal is the certificate's CN)
and ``sasl_ssl`` (SCRAM-SHA-512 over TLS), each a 2-broker cluster of its own with the
StandardAuthorizer. admin moves a partition (legacy --execute with a throttle, then --verify
clears it: both Kafka clients talk TLS with the PEM files of its client config) and lists;
denied is refused before anything is sent; the status JSON names the client configs only."""

from __future__ import annotations

import json
import time

import pytest

from reassign_kit import cli as rk_cli
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.ops import load_command_config
from reassign_kit.sandbox import Sandbox

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("mode", ["ssl", "sasl_ssl"])
def test_admin_moves_and_denied_is_refused_over_tls(mode, tmp_path, capsys):
    with Sandbox.start(brokers=2, dir=tmp_path / "sb", security=mode) as sb:
        status = json.dumps(sb.status())
        assert json.loads(status)["security"] == mode
        assert set(json.loads(status)["client_configs"]) == {"admin", "reader", "denied"}
        secrets = [p.read_text() for p in (sb.dir / "security").glob("*.key")]
        pw_file = sb.dir / "security" / "passwords.json"
        passwords = list(json.loads(pw_file.read_text()).values()) if pw_file.exists() else []
        assert all(pw not in status for pw in passwords) and not secrets  # keys live in .pem

        sb.create_topic("tls", assignment=[[1]])
        sb.load("tls", mb_per_partition=0.2)
        plan = tmp_path / "plan.json"
        Plan.of([Move(TopicPartition("tls", 0), (2,))]).write(str(plan))

        def rk(user: str, *argv: str) -> tuple[int, str, str]:
            conn = ["--command-config", sb.client_config(user)]
            code = rk_cli.main(["--bootstrap-server", sb.bootstrap_servers, *conn, *argv])
            out, err = capsys.readouterr()
            assert "Traceback" not in err and "unexpected" not in err, err
            for pw in passwords:
                assert pw not in out + err
            return code, out, err

        code, _, err = rk("denied", "--execute", "--reassignment-json-file", str(plan))
        assert code == 4 and "not authorised; nothing was sent" in err
        assert "ALTER on the CLUSTER resource" in err
        code, out, _ = rk(
            "admin", "--execute", "--reassignment-json-file", str(plan),
            "--throttle", "50000000", "--rollback-file", str(tmp_path / "rb.json"),
        )  # fmt: skip
        assert code == 0, out
        deadline = time.monotonic() + 120
        while (code := rk("admin", "--verify", "--reassignment-json-file", str(plan))[0]) == 10:
            assert time.monotonic() < deadline
            time.sleep(1)
        assert code == 0
        assert rk("admin", "--list")[0] == 0
        gw = AdminGateway(sb.bootstrap_servers, load_command_config(sb.client_config("admin")))
        try:
            assert gw.describe_partitions([TopicPartition("tls", 0)])[
                TopicPartition("tls", 0)
            ].replicas == (2,)
        finally:
            gw.close()
