"""Security on a real secured cluster: the SASL/SCRAM-SHA-512 sandbox with the StandardAuthorizer
(the session fixture ``sasl_sandbox``: users admin, reader, denied).

Every command goes through ``reassign-kit`` with ``--command-config`` (both Kafka clients
authenticate with it). admin executes (legacy and paced), watches, verifies, lists, cancels,
snapshots and plans; denied is refused before anything is sent, with the operations it lacks
named (exit 4); reader lists, verifies (keeping the throttles and saying why), watches and
snapshots. The last test searches every file the tests wrote and every captured stream and
log line (DEBUG) for each password: 0 hits.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path

import pytest

from reassign_kit import cli as rk_cli
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.operations.execute import load_command_config
from reassign_kit.throttles.configs import current_throttles

pytestmark = pytest.mark.integration
TP = TopicPartition
OUT = Path(__file__).resolve().parent.parent / "out" / "test_security"
SLOW = 10_000  # B/s: a 1 MiB partition stays in flight for minutes
FAST = 50_000_000
CAPTURED: list[tuple[str, str]] = []  # (what, text) of every stream the tests saw
MESSAGES: dict[str, str] = {}  # what the denied and reader users were told (for the notes)


@pytest.fixture(scope="module")
def sec(sasl_sandbox):
    """The sandbox, its client configs and an output folder (fresh) with DEBUG logging to a
    file in it for the whole module."""
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)
    handler = logging.FileHandler(OUT / "debug.log")
    handler.setLevel(logging.DEBUG)
    root, kafka = logging.getLogger(), logging.getLogger("kafka")
    old = root.level, kafka.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    kafka.setLevel(logging.DEBUG)  # kafka-python logs its whole config (password too) at DEBUG
    try:
        yield sasl_sandbox
    finally:
        root.removeHandler(handler)
        root.setLevel(old[0])
        kafka.setLevel(old[1])
        handler.close()


@pytest.fixture(scope="module")
def admin_gw(sec):
    g = AdminGateway(sec.bootstrap_servers, load_command_config(sec.client_config("admin")))
    yield g
    g.close()


@pytest.fixture
def rk(sec, capsys):
    """``reassign-kit <argv>`` in this process as ``user`` (--command-config of that user for
    the cluster commands); returns (exit code, stdout, stderr), every stream kept for the
    secret search."""

    def run(user: str, *argv: str) -> tuple[int, str, str]:
        conn = ["--command-config", sec.client_config(user)]
        if argv[0] in ("plan", "validate"):
            full = list(argv)
        elif argv[0] == "snapshot":
            full = [argv[0], "--bootstrap-server", sec.bootstrap_servers, *conn, *argv[1:]]
        else:
            full = ["--bootstrap-server", sec.bootstrap_servers, *conn, *argv]
        code = rk_cli.main(full)
        out, err = capsys.readouterr()
        CAPTURED.append((f"{user}: {' '.join(argv)}", out + err))
        assert "Traceback" not in err and "unexpected" not in err, err
        return code, out, err

    return run


def write_plan(name: str, moves) -> str:
    path = OUT / name
    Plan.of(moves).write(str(path))
    return str(path)


def topic_on(sec, topic: str, assignment, mb: float) -> list[TopicPartition]:
    sec.create_topic(topic, assignment=assignment)
    if mb:
        sec.load(topic, mb_per_partition=mb)
    return [TP(topic, p) for p in range(len(assignment))]


def wait_complete(rk, plan_path: str, user: str = "admin", timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while True:
        code, out, _ = rk(user, "--verify", "--reassignment-json-file", plan_path)
        if code == 0:
            return out
        assert code == 10, out  # in progress, never a mismatch
        assert time.monotonic() < deadline, out
        time.sleep(1)


# ----------------------------------------------------------------------------- admin


def test_admin_executes_legacy_and_paced_watches_verifies_lists(sec, rk, admin_gw, topic_name):
    topic = topic_name("sec-admin")
    tps = topic_on(sec, topic, [[1, 2], [2, 3], [3, 1]], mb=0.2)
    there = write_plan(
        "there.json", [Move(tp, (3, 1) if p == 0 else (1, 2)) for p, tp in enumerate(tps)]
    )
    rb = str(OUT / "rollback-legacy.json")
    code, out, _ = rk(
        "admin", "--execute", "--reassignment-json-file", there,
        "--throttle", str(FAST), "--rollback-file", rb,
    )  # fmt: skip
    assert code == 0 and "Successfully started partition reassignment" in out
    code, out, _ = rk("admin", "--progress", "--reassignment-json-file", there, "--output", "json")
    assert code == 0 and json.loads(out)
    out = wait_complete(rk, there)
    assert "Throttles removed from topics" in out
    assert current_throttles(admin_gw, [topic], [1, 2, 3])["topics"] == {}
    code, out, _ = rk("admin", "--list")
    assert code == 0
    # paced, back where it was (the rollback file), one move at a time, with a journal
    journal = str(OUT / "paced.jsonl")
    code, out, _ = rk(
        "admin", "--execute", "--reassignment-json-file", rb, "--reassignment-batch-size", "1",
        "--wait", "--journal", journal, "--reassignment-poll-interval-ms", "300",
        "--throttle", str(FAST), "--rollback-file", str(OUT / "rollback-paced.json"),
    )  # fmt: skip
    assert code == 0, out
    states = admin_gw.describe_partitions(tps)
    assert [states[tp].replicas for tp in tps] == [(1, 2), (2, 3), (3, 1)]
    events = [json.loads(line)["event"] for line in Path(journal).read_text().splitlines()]
    assert events[0] == "run_started" and events[-1] == "run_finished"
    code, out, _ = rk("admin", "--verify", "--reassignment-json-file", rb)
    assert code == 0


def test_admin_cancels_a_move_in_flight(sec, rk, admin_gw, topic_name):
    topic = topic_name("sec-cancel")
    tps = topic_on(sec, topic, [[1, 2]], mb=1.5)
    plan = write_plan("cancel.json", [Move(tps[0], (3, 1))])
    code, out, _ = rk(
        "admin", "--execute", "--reassignment-json-file", plan, "--throttle", str(SLOW),
        "--rollback-file", str(OUT / "rollback-cancel.json"),
    )  # fmt: skip
    assert code == 0
    assert tps[0] in admin_gw.list_reassignments()
    code, out, _ = rk("admin", "--cancel", "--reassignment-json-file", plan)
    assert code == 0 and f"Successfully cancelled reassignment of partitions {topic}-0" in out
    assert tps[0] not in admin_gw.list_reassignments()


def test_admin_snapshots_and_plans(sec, rk, topic_name):
    topic = topic_name("sec-plan")
    topic_on(sec, topic, [[1, 2], [1, 2], [1, 3]], mb=0)
    snap = str(OUT / "snapshot.json")
    code, out, _ = rk("admin", "snapshot", "--topics", topic, "--output", snap)
    assert code == 0 and "3 partitions" in out
    code, out, _ = rk(
        "admin", "plan", "--snapshot", snap, "--remove-brokers", "1", "--engine", "local",
        "--output", str(OUT / "plan.json"), "--report", str(OUT / "plan-report.json"),
        "--rollback", str(OUT / "plan-rollback.json"),
    )  # fmt: skip
    assert code == 0
    planned = Plan.read(str(OUT / "plan.json"))
    assert len(planned) == 3 and all(1 not in m.replicas for m in planned)


# ----------------------------------------------------------------------------- denied


def test_denied_user_is_refused_before_anything_is_sent(sec, rk, admin_gw, topic_name):
    topic = topic_name("sec-denied")
    tps = topic_on(sec, topic, [[1, 2]], mb=0)
    plan = write_plan("denied.json", [Move(tps[0], (2, 3))])
    rb = OUT / "rollback-denied.json"
    runs = {
        "execute": ("--execute", "--reassignment-json-file", plan, "--rollback-file", str(rb)),
        "execute (paced)": (
            "--execute", "--reassignment-json-file", plan, "--reassignment-batch-size", "1",
            "--journal", str(OUT / "denied.jsonl"), "--rollback-file", str(rb),
        ),
        "cancel": ("--cancel", "--reassignment-json-file", plan),
        "list": ("--list",),
        "verify": ("--verify", "--reassignment-json-file", plan),
        "progress": ("--progress", "--reassignment-json-file", plan),
        "snapshot": ("snapshot", "--output", str(OUT / "denied-snapshot.json")),
        "generate": (
            "--generate", "--topics-to-move-json-file", str(OUT / "denied-topics.json"),
            "--broker-list", "1,2,3",
        ),
    }  # fmt: skip
    (OUT / "denied-topics.json").write_text(
        json.dumps({"version": 1, "topics": [{"topic": topic}]})
    )
    for what, argv in runs.items():
        code, out, err = rk("denied", *argv)
        MESSAGES[f"denied {what}"] = err.strip()
        assert code == 4, (what, out, err)
        assert "not authorised; nothing was sent to the cluster" in err, (what, err)
        assert "DESCRIBE on the CLUSTER resource (kafka-cluster)" in err, (what, err)
        if what.startswith(("execute", "cancel")):
            assert "ALTER on the CLUSTER resource (kafka-cluster), needed to submit" in err
    assert admin_gw.describe_partitions(tps)[tps[0]].replicas == (1, 2)
    assert tps[0] not in admin_gw.list_reassignments()
    assert not rb.exists() and not (OUT / "denied.jsonl").exists()
    assert not (OUT / "denied-snapshot.json").exists()


# ----------------------------------------------------------------------------- reader


def test_reader_lists_verifies_watches_snapshots_but_cannot_move(sec, rk, admin_gw, topic_name):
    topic = topic_name("sec-reader")
    tps = topic_on(sec, topic, [[1, 2], [2, 3]], mb=0.1)
    plan = write_plan("reader.json", [Move(tp, (3, 1)) for tp in tps])
    # admin moves with a throttle and does not verify: the throttles stay for the reader
    code, _, _ = rk(
        "admin", "--execute", "--reassignment-json-file", plan, "--throttle", str(FAST),
        "--rollback-file", str(OUT / "rollback-reader.json"),
    )  # fmt: skip
    assert code == 0
    deadline = time.monotonic() + 120
    while set(tps) & set(admin_gw.list_reassignments()):
        assert time.monotonic() < deadline
        time.sleep(0.5)
    code, out, err = rk("reader", "--list")
    MESSAGES["reader list"] = out.strip()
    assert code == 0
    out = wait_complete(rk, plan, user="reader")
    MESSAGES["reader verify"] = out.strip()
    assert "Throttles not removed: this client's principal lacks ALTER_CONFIGS" in out
    assert current_throttles(admin_gw, [topic], [1, 2, 3])["topics"]  # left, as it says
    code, out, _ = rk("reader", "--progress", "--reassignment-json-file", plan)
    MESSAGES["reader progress"] = out.strip()
    assert code == 0
    code, out, _ = rk(
        "reader", "snapshot", "--topics", topic, "--output", str(OUT / "reader-snapshot.json")
    )
    assert code == 0 and "2 partitions" in out
    back = write_plan("reader-back.json", [Move(tp, (1, 2)) for tp in tps])
    code, out, err = rk(
        "reader", "--execute", "--reassignment-json-file", back, "--throttle", str(FAST),
        "--rollback-file", str(OUT / "rollback-reader-2.json"),
    )  # fmt: skip
    MESSAGES["reader execute"] = err.strip()
    assert code == 4 and "ALTER on the CLUSTER resource" in err
    assert "ALTER_CONFIGS on the CLUSTER resource" in err and "DESCRIBE on" not in err
    assert not (OUT / "rollback-reader-2.json").exists()
    code, out, _ = rk("admin", "--verify", "--reassignment-json-file", plan)  # admin cleans up
    assert code == 0 and not current_throttles(admin_gw, [topic], [1, 2, 3])["topics"]


# ----------------------------------------------------------------------------- the API


def test_the_python_api_takes_the_same_config_file(sec, admin_gw, topic_name):
    """``reassign_kit.execute`` / ``progress`` with ``command_config`` = the file's path (never
    a secret as a value): admin runs a paced move; denied is refused before anything is sent."""
    import reassign_kit
    from reassign_kit.errors import AuthorizationError

    topic = topic_name("sec-api")
    tps = topic_on(sec, topic, [[1, 2]], mb=0.1)
    plan = Plan.of([Move(tps[0], (2, 3))])
    with pytest.raises(AuthorizationError, match="ALTER on the CLUSTER resource"):
        reassign_kit.execute(
            sec.bootstrap_servers,
            plan,
            command_config=sec.client_config("denied"),
            batch_size=1,
            journal=str(OUT / "api-denied.jsonl"),
            rollback_path=str(OUT / "rollback-api-denied.json"),
        )
    assert not (OUT / "api-denied.jsonl").exists()
    res = reassign_kit.execute(
        sec.bootstrap_servers,
        plan,
        command_config=sec.client_config("admin"),
        batch_size=1,
        throttle=FAST,
        wait=True,
        journal=str(OUT / "api.jsonl"),
        rollback_path=str(OUT / "rollback-api.json"),
    )
    assert res.state == "done"
    rep = reassign_kit.progress(
        sec.bootstrap_servers, plan, command_config=sec.client_config("reader")
    )
    CAPTURED.append(("api progress", rep.render_text()))
    assert admin_gw.describe_partitions(tps)[tps[0]].replicas == (2, 3)


def test_the_panel_takes_the_same_config_file(sec, admin_gw, topic_name):
    """``panel(plan, bootstrap, command_config=path)``: denied's Execute is refused with the
    authorisation message (nothing sent); admin's runs to the end, verifies, saves its report
    and chart (searched for the passwords below)."""
    from reassign_kit.ui import panel

    topic = topic_name("sec-panel")
    tps = topic_on(sec, topic, [[1, 2]], mb=0.1)
    plan_path = write_plan("panel.json", [Move(tps[0], (2, 3))])
    denied = panel(
        plan_path,
        sec.bootstrap_servers,
        command_config=sec.client_config("denied"),
        output_dir=str(OUT / "panel-denied"),
        batch_size=1,
    )
    assert denied.phase == "invalid"  # Execute stays disabled
    MESSAGES["denied panel"] = denied.summary.problems[0]
    assert "panel: not authorised" in denied.summary.problems[0]
    assert "DESCRIBE on the CLUSTER resource" in denied.summary.problems[0]
    reader = panel(
        plan_path,
        sec.bootstrap_servers,
        command_config=sec.client_config("reader"),
        output_dir=str(OUT / "panel-reader"),
        batch_size=1,
        throttle=FAST,
    )
    assert reader.phase == "ready", reader.summary.problems
    reader.buttons["execute"].click()
    assert reader.run is None and reader.errors, reader.message.value
    MESSAGES["reader panel execute"] = reader.errors[-1]
    assert "execute: not authorised; nothing was sent" in reader.errors[-1]
    assert "ALTER on the CLUSTER resource" in reader.errors[-1]
    assert not (OUT / "panel-reader" / "rollback.json").exists()
    p = panel(
        plan_path,
        sec.bootstrap_servers,
        command_config=sec.client_config("admin"),
        output_dir=str(OUT / "panel"),
        batch_size=1,
        throttle=FAST,
        poll_interval_ms=300,
    )
    p.buttons["execute"].click()
    p.wait(120)
    assert p.phase == "done", p.message.value
    p.buttons["verify"].click()
    assert p.report()["verify_complete"] is True, p.message.value
    p.save_artefacts()
    assert (OUT / "panel" / "execute_report.json").exists()
    assert admin_gw.describe_partitions(tps)[tps[0]].replicas == (2, 3)


# ----------------------------------------------------------------------------- runbooks


def test_runbooks_headless_take_a_command_config_file(sec, topic_name):
    """01 (plan, as reader), 02 (execute, as admin: the demo topic, the panel pressed
    headless) and 03 (verify, as admin) with ``command_config`` = a file path; their output
    notebooks, reports and charts are in the secret search below."""
    from reassign_kit import runbook

    common = {"sandbox_dir": str(sec.dir)}
    runbook.run_notebook(
        "01_plan",
        str(OUT / "runbook-01"),
        {**common, "command_config": sec.client_config("reader"), "engine": "local"},
        execution_timeout=300,
    )
    assert (OUT / "runbook-01" / "snapshot.json").exists()
    runbook.run_notebook(
        "02_execute",
        str(OUT / "runbook-02"),
        {
            **common,
            "command_config": sec.client_config("admin"),
            "demo_topic": topic_name("sec-nb"),
            "demo_partitions": 2,
            "demo_mb_per_partition": 0.2,
            "auto_execute": True,
            "batch_size": 1,
            "throttle": FAST,
            "poll_interval_ms": 300,
        },
        execution_timeout=300,
    )
    report = json.loads((OUT / "runbook-02" / "execute_report.json").read_text())
    assert report["phase"] == "done" and report["verify_complete"] is True
    runbook.run_notebook(
        "03_verify",
        str(OUT / "runbook-03"),
        {
            **common,
            "command_config": sec.client_config("admin"),
            "plan_path": str(OUT / "runbook-02" / "plan.json"),
        },
        execution_timeout=300,
    )


# ----------------------------------------------------------------------------- secrets


def test_no_password_in_any_file_written_or_stream_captured(sec):
    """Runs last: every file under the tests' output folder (plans, rollbacks, journal,
    snapshot, report, DEBUG log) and every captured stdout/stderr, searched for each user's
    password (the sandbox's passwords.json): 0 hits. The list searched is written beside."""
    passwords = json.loads((sec.dir / "security" / "passwords.json").read_text())
    files = sorted(p for p in OUT.rglob("*") if p.is_file())
    hits = [
        f"{p.name}: {user}"
        for p in files
        for user, pw in passwords.items()
        if pw in p.read_text(errors="replace")
    ]
    hits += [
        f"stream {what}: {user}"
        for what, text in CAPTURED
        for user, pw in passwords.items()
        if pw in text
    ]
    searched = [str(p.relative_to(OUT)) for p in files] + [f"stream: {w}" for w, _ in CAPTURED]
    (OUT / "secret-search.txt").write_text(
        f"{len(passwords)} passwords, {len(files)} files, {len(CAPTURED)} streams, "
        f"{len(hits)} hits\n" + "\n".join(searched) + "\n"
    )
    (OUT / "messages.json").write_text(json.dumps(MESSAGES, indent=2) + "\n")
    assert len(files) >= 10 and len(CAPTURED) >= 20
    assert "Starting KafkaAdminClient with configuration" in (OUT / "debug.log").read_text()
    assert hits == []
