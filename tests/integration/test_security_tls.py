"""Security on the TLS sandboxes: ``ssl`` (mutual TLS, the principal is the certificate's CN)
and ``sasl_ssl`` (SCRAM-SHA-512 over TLS), each a 2-broker cluster with the StandardAuthorizer,
shared by this module's tests. admin moves a partition (legacy --execute with a throttle, then
--verify clears it), lists, runs a paced execute with a journal, --progress (also from the
journal), --cancel of a throttled move in flight, snapshot and plan, and runbook 02 headless
(papermill): both Kafka clients talk TLS with the PEM files of its client config. denied is
refused before anything is sent; the status JSON names the client configs only."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from reassign_kit import cli as rk_cli
from reassign_kit import runbook
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.operations.execute import load_command_config
from reassign_kit.sandbox.sandbox import Sandbox
from reassign_kit.throttles.configs import current_throttles

pytestmark = pytest.mark.integration
TP = TopicPartition
FAST = 50_000_000
SLOW = 10_000  # B/s: a 1.5 MiB partition stays in flight for minutes


@pytest.fixture(scope="module", params=["ssl", "sasl_ssl"])
def tls(request, tmp_path_factory):
    d = tmp_path_factory.mktemp(f"tls-{request.param}")
    with Sandbox.start(brokers=2, dir=d, security=request.param) as sb:
        yield sb


@pytest.fixture(scope="module")
def admin_gw(tls):
    g = AdminGateway(tls.bootstrap_servers, load_command_config(tls.client_config("admin")))
    yield g
    g.close()


@pytest.fixture
def rk(tls, capsys):
    """``reassign-kit <argv>`` in process as admin over TLS: (exit code, stdout, stderr)."""

    def run(*argv: str) -> tuple[int, str, str]:
        conn = ["--bootstrap-server", tls.bootstrap_servers]
        conn += ["--command-config", tls.client_config("admin")]
        if argv[0] == "plan":
            full = list(argv)
        elif argv[0] == "snapshot":
            full = [argv[0], *conn, *argv[1:]]
        else:
            full = [*conn, *argv]
        code = rk_cli.main(full)
        out, err = capsys.readouterr()
        assert "Traceback" not in err and "unexpected" not in err, err
        return code, out, err

    return run


def topic_on(tls, name: str, assignment, mb: float) -> list[TopicPartition]:
    tls.create_topic(name, assignment=assignment)
    if mb:
        tls.load(name, mb_per_partition=mb)
    return [TP(name, p) for p in range(len(assignment))]


def test_admin_moves_and_denied_is_refused_over_tls(tls, tmp_path, capsys):
    sb, mode = tls, tls.security
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


def test_paced_execute_and_progress_over_tls(tls, rk, admin_gw, topic_name, tmp_path):
    tps = topic_on(tls, topic_name("tls-paced"), [[1], [1], [2]], mb=0.2)
    plan = tmp_path / "plan.json"
    Plan.of([Move(tp, (2,) if tp.partition < 2 else (1,)) for tp in tps]).write(str(plan))
    journal = str(tmp_path / "run.jsonl")
    code, out, _ = rk(
        "--execute", "--reassignment-json-file", str(plan), "--reassignment-batch-size", "1",
        "--wait", "--journal", journal, "--reassignment-poll-interval-ms", "300",
        "--throttle", str(FAST), "--rollback-file", str(tmp_path / "rb.json"),
    )  # fmt: skip
    assert code == 0, out
    states = admin_gw.describe_partitions(tps)
    assert [states[tp].replicas for tp in tps] == [(2,), (2,), (1,)]
    events = [json.loads(line)["event"] for line in Path(journal).read_text().splitlines()]
    assert events[0] == "run_started" and events[-1] == "run_finished"
    assert "throttle_set" in events and "throttle_cleared" in events
    assert not current_throttles(admin_gw, [tps[0].topic], [1, 2])["topics"]
    code, out, _ = rk(
        "--progress", "--reassignment-json-file", str(plan), "--output", "json",
        "--progress-journal", journal,
    )  # fmt: skip
    assert code == 0
    report = json.loads(out)
    assert report and "Traceback" not in out
    code, out, _ = rk("--progress", "--reassignment-json-file", str(plan))
    assert code == 0 and out.strip()
    assert rk("--verify", "--reassignment-json-file", str(plan))[0] == 0


def test_cancel_a_move_in_flight_over_tls(tls, rk, admin_gw, topic_name, tmp_path):
    tps = topic_on(tls, topic_name("tls-cancel"), [[1]], mb=1.5)
    plan = tmp_path / "cancel.json"
    Plan.of([Move(tps[0], (2,))]).write(str(plan))
    code, _, _ = rk(
        "--execute", "--reassignment-json-file", str(plan), "--throttle", str(SLOW),
        "--rollback-file", str(tmp_path / "rb.json"),
    )  # fmt: skip
    assert code == 0
    assert tps[0] in admin_gw.list_reassignments()
    code, out, _ = rk("--cancel", "--reassignment-json-file", str(plan))
    assert code == 0 and f"Successfully cancelled reassignment of partitions {tps[0]}" in out
    assert tps[0] not in admin_gw.list_reassignments()
    assert admin_gw.describe_partitions(tps)[tps[0]].replicas == (1,)
    assert not current_throttles(admin_gw, [tps[0].topic], [1, 2])["topics"]


def test_snapshot_and_plan_over_tls(tls, rk, topic_name, tmp_path):
    topic = topic_name("tls-plan")
    topic_on(tls, topic, [[1], [1], [2], [1]], mb=0)
    snap = str(tmp_path / "snapshot.json")
    code, out, _ = rk("snapshot", "--topics", topic, "--output", snap)
    assert code == 0 and "4 partitions" in out
    code, out, _ = rk(
        "plan", "--snapshot", snap, "--remove-brokers", "1", "--engine", "local",
        "--output", str(tmp_path / "plan.json"), "--report", str(tmp_path / "report.json"),
    )  # fmt: skip
    assert code == 0, out
    planned = Plan.read(str(tmp_path / "plan.json"))
    assert len(planned) == 3 and all(m.replicas == (2,) for m in planned)


def test_runbook_02_headless_over_tls(tls, admin_gw, topic_name, tmp_path):
    tps = topic_on(tls, topic_name("tls-nb"), [[1], [2]], mb=0.2)
    plan = tmp_path / "plan.json"
    Plan.of([Move(tps[0], (2,)), Move(tps[1], (1,))]).write(str(plan))
    out = tmp_path / "02"
    runbook.run_notebook(
        "02_execute",
        str(out),
        {
            "sandbox_dir": str(tls.dir),
            "command_config": tls.client_config("admin"),
            "plan_path": str(plan),
            "auto_execute": True,
            "batch_size": 1,
            "throttle": FAST,
            "poll_interval_ms": 300,
        },
        kernel_name="python3",
        execution_timeout=300,
    )
    report = json.loads((out / "execute_report.json").read_text())
    assert report["phase"] == "done" and report["verify_complete"] is True
    states = admin_gw.describe_partitions(tps)
    assert (states[tps[0]].replicas, states[tps[1]].replicas) == ((2,), (1,))
    assert (out / "execute_chart.html").exists() and (out / "journal.jsonl").exists()
    assert not current_throttles(admin_gw, [tps[0].topic], [1, 2])["topics"]
