"""Every ``reassign-kit`` command the README and docs/ show is RUN ("every command
shown in the docs is run by a test"). tests/unit/test_readme.py parses them; here each command,
in each variant test_readme expands, runs end to end through the console script's entry point
(``reassign_kit.cli:main``, called in-process: the same code as the installed script, without
an interpreter start per command) against a simulated cluster kept in a state file
(``--bootstrap-server sim:PATH``, cluster/simfile.py). The placeholders ($BS, plan.json, the
topics, the brokers) are filled from a small cluster this test writes; each command runs in a
fresh copy of one of three scratch directories (``state_of``: the plan made; run; left in
flight) chosen so that the docs' exit code is 0 (errors.EXIT_CODES: no command the docs show is
said to exit otherwise in the state it is written for), and must print no traceback and no
"unexpected" error. `plan` runs on Spark once (the tour's, ON_SPARK), else with `--engine
local` added.

What the simulator cannot give (a real sandbox, a Spark standalone master, a Jupyter kernel) is
in ONE table, NOT_RUN, each with its reason and the test that does run it."""

from __future__ import annotations

import contextlib
import http.server
import io
import json
import re
import shutil
import threading
from pathlib import Path

import pytest
from test_readme import COMMANDS, TEXT, variants

from reassign_kit.cli import main
from reassign_kit.cluster.simfile import load, save
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import EXIT_CODES
from reassign_kit.model import Plan
from reassign_kit.planner.record import plan_hash

SB = "the sandbox: real Kafka JVMs (tens of seconds each), not the simulator"
# the commands not run here, by how they start: (why, the test that runs it for real)
NOT_RUN: dict[str, tuple[str, str]] = {
    "sandbox up": (
        SB,
        "tests/conftest.py's session sandbox (every integration test); "
        "tests/integration/test_sandbox.py::test_cli_up_stop_start_down_leaves_no_process"
        " (the CLI); --security sasl_scram: tests/conftest.py::sasl_sandbox; "
        "--metadata zookeeper: tests/integration/test_compat_39zk.py",
    ),
    "sandbox bootstrap": (
        SB,
        "no test runs this CLI word (it prints Sandbox.bootstrap_servers, which every "
        "integration test uses: tests/conftest.py::bootstrap); its parser: test_readme.py",
    ),
    "sandbox load": (
        SB,
        "no test runs this CLI word; Sandbox.load, which it calls: tests/integration/"
        "test_install_sandbox.py::test_core_install_runs_the_drop_in_actions, make demo",
    ),
    "sandbox status": (SB, "tests/integration/test_sandbox.py::test_cli_status_and_info"),
    "snapshot --bootstrap-server 127.0.0.1:9092 --load-from": (
        "a Prometheus server or a metrics export at the docs' placeholder address and path",
        "tests/integration/test_load_history_sandbox.py (make long: Debian's Prometheus "
        "scraping the sandbox, both sources); tests/spark/test_spark_history.py; "
        "tests/unit/test_load_history.py (their refusals)",
    ),
    "sandbox stop-broker": (
        SB,
        "tests/integration/test_sandbox.py::test_cli_up_stop_start_down_leaves_no_process",
    ),
    "sandbox down": (
        SB,
        "tests/integration/test_sandbox.py::test_cli_up_stop_start_down_leaves_no_process",
    ),
    "sandbox kill-controller": (
        SB,
        "tests/integration/test_compat_39zk.py::"
        "test_status_names_version_and_mode_and_kill_controller_names_the_broker",
    ),
    "sandbox cordon": (
        SB + " (Kafka 4.3's cordoned.log.dirs)",
        "no test runs this CLI word; Sandbox.cordon, which it calls: tests/integration/"
        "test_rack_cordon_sandbox.py::test_a_cordoned_broker_is_avoided_rejected_and_drained",
    ),
    "sandbox fetch": (
        "downloads Kafka's jars from Maven Central when not cached",
        "tests/compat/matrix.py (make compat: sandbox fetch of every release); "
        "tests/unit/test_sandbox_modes.py (its refusal of a bad version)",
    ),
    "runbook run": (
        "a Jupyter kernel and papermill on a real cluster (h:9092 is a placeholder host)",
        "tests/integration/test_install_sandbox.py::test_all_install_runs_a_packaged_runbook",
    ),
    "python -m reassign_kit.runbook": (
        "a Jupyter kernel and papermill on a real cluster",
        "tests/notebooks (the runbooks on the sandbox); make demo",
    ),
    "plan --snapshot snapshot.json --remove-brokers 4 --spark-master spark://": (
        "a Spark standalone master (spark-master:7077 is a placeholder host)",
        "tests/spark/test_standalone.py::test_driver_on_another_address_plans_and_validates",
    ),
}

# `plan` runs on Spark by default; one command runs so (the tour's), the others with
# `--engine local` added (docs/planning.md: "the same planner in this process"), ~5-10 s of
# Spark each saved; the engines' parity: tests/spark/test_spark_shapes_parity.py,
# test_spark_demote_parity.py, test_spark_capacity.py
ON_SPARK = "plan --snapshot snapshot.json --remove-brokers 4 --output plan.json"


def _tokens(argv: list[str]) -> list[str]:
    """What the shell hands the tool: the quotes of a quoted word removed."""
    return [t[1:-1] if len(t) > 1 and t[0] == t[-1] == "'" else t for t in argv]


# commands written inline in the prose (`reassign-kit ...`); those that are a command's name in
# a sentence, not a line to type, are these (the full lines are in the pages' bash blocks)
INLINE = [
    " ".join(c.split())
    for c in re.findall(r"`((?:reassign-kit|\$RK_BIN|\$RK|\.venv/bin/reassign-kit) [^`]*)`", TEXT)
]
FRAGMENTS = {
    "reassign-kit calibrate",
    "reassign-kit plan",
    "reassign-kit plan --output plan.json",  # docs/approved-plans.md: what plan writes
    "reassign-kit report --html",  # docs/paced.md: where pace charts appear
    "reassign-kit runbook",
    "reassign-kit snapshot",  # docs/disks.md: what the snapshot records
    "reassign-kit throttles --check / --clean",
    "reassign-kit throttles --clean --journal",  # docs/architecture.md: the option named
}


def cases() -> list[tuple[str, list[str]]]:
    out, seen = [], set()
    for cmd in COMMANDS + [c for c in INLINE if c not in FRAGMENTS]:
        for argv in variants(cmd):
            key = (argv[0] == "$RK", *argv[1:])  # the same words after another name of the tool
            if key not in seen:
                seen.add(key)
                out.append((cmd, argv))
    return out


CASES = cases()

DOC_BS = "127.0.0.1:9092"  # test_readme's $BS
DOC_HASH = "0" * 64  # test_readme's SHA256
DOC_HOOK = "http://127.0.0.1:8080/hook"
HEADS = {"$RK_BIN", ".venv/bin/reassign-kit", "reassign-kit"}


def not_run(argv: list[str]) -> tuple[str, tuple[str, str]] | None:
    words = " ".join(_tokens(argv[1:]) if argv[0] in HEADS else argv)
    for start, why in NOT_RUN.items():
        if words.startswith(start):
            return start, why
    return None


def state_of(words: str) -> str:
    """Where a command runs: ``planned`` (the tour's plan made, nothing moved), ``done`` (that
    plan executed with --wait --journal run.jsonl), ``stopped`` (a paced run of it returned
    with moves in flight, its journal run.jsonl, its rollback file rb.json)."""
    if "--verify" in words or words.startswith(("report ", "calibrate ")):
        return "done"
    if "--progress" in words or words.startswith("throttles"):
        return "done"  # --watch returns once the plan is done (the simulator's clock is still)
    if "--resume" in words or "--cancel" in words:
        return "stopped"
    return "planned"


def fixture_cluster() -> SimCluster:
    """The tour's cluster: 4 brokers on 2 racks, t1 and t2 of 6 partitions (RF 3, 8 MB each),
    plus the topics the planning page's regexes pick and leave."""
    sim = SimCluster([1, 2, 3, 4], racks={1: "r1", 2: "r2", 3: "r1", 4: "r2"}, bandwidth=50 * MB)
    for topic in ("t1", "t2"):
        sim.add_topic(topic, [[(p + i) % 4 + 1 for i in range(3)] for p in range(6)], 8 * MB)
    sim.add_topic("orders.eu", [[1, 2, 4], [2, 3, 4]], 2 * MB)
    sim.add_topic("orders.eu-dlq", [[4, 1, 2]], MB)
    return sim


def run(argv: list[str]) -> tuple[int, str]:
    """The console script's ``main`` (pyproject: reassign-kit = reassign_kit.cli:main) on
    ``argv``; its exit code and what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(argv)
    return code, out.getvalue()


def ok(argv: list[str]) -> str:
    code, out = run(argv)
    assert code == 0, f"setup: {argv} exited {code}:\n{out}"
    return out


class Hook(http.server.BaseHTTPRequestHandler):
    """A --notify receiver: keeps every document posted to it."""

    posted: list[dict] = []

    def do_POST(self):  # noqa: N802 - http.server's name
        n = int(self.headers.get("Content-Length") or 0)
        Hook.posted.append(json.loads(self.rfile.read(n) or b"{}"))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def hook():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/hook"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def states(tmp_path_factory) -> dict[str, Path]:
    """The three scratch directories the commands run in (copies, one per command)."""
    import os

    root = tmp_path_factory.mktemp("docs-commands")
    planned = root / "planned"
    planned.mkdir()
    cwd = os.getcwd()
    os.chdir(planned)
    try:
        save(fixture_cluster(), "cluster.sim")
        bs = "sim:cluster.sim"
        ok(["snapshot", "--bootstrap-server", bs, "--output", "snapshot.json"])
        # the snapshot the network-goal commands plan from (the model has no traffic: zeros)
        ok(["snapshot", "--bootstrap-server", bs, "--sample-load", "1s", "--output", "loaded.json"])
        for goal, out in (("--remove-brokers", "plan.json"), ("--demote-brokers", "demote.json")):
            broker = "4" if goal == "--remove-brokers" else "3"
            ok(["plan", "--snapshot", "snapshot.json", goal, broker, "--output", out] + LOCAL)
        Path("topics.json").write_text(json.dumps({"version": 1, "topics": [{"topic": "t1"}]}))
        Path("capacity.json").write_text(
            json.dumps({"version": 1, "default": {"disk_bytes": 10**9, "max_replicas": 100}})
        )
        Path("admin.properties").write_text("security.protocol=PLAINTEXT\n")
    finally:
        os.chdir(cwd)
    done, stopped = root / "done", root / "stopped"
    shutil.copytree(planned, done)
    shutil.copytree(planned, stopped)
    try:
        os.chdir(done)
        ok(
            ["--bootstrap-server", bs, "--execute", "--reassignment-json-file", "plan.json"]
            + ["--throttle", "10000000", "--reassignment-batch-size", "2", "--incremental"]
            + ["--wait", "--journal", "run.jsonl"]
        )
        ok(["calibrate", "--journal", "run.jsonl", "--output", "cal.json"])
        shutil.copy("cal.json", planned / "cal.json")
        os.chdir(stopped)
        # a paced run without --wait returns once its last batch is submitted (KIP-1335)
        out = ok(
            ["--bootstrap-server", bs, "--execute", "--reassignment-json-file", "plan.json"]
            + ["--throttle", "1000000", "--reassignment-batch-size", "2", "--incremental"]
            + ["--journal", "run.jsonl", "--rollback-file", "rb.json"]
        )
        assert load("cluster.sim").list_reassignments(), f"moves left in flight:\n{out}"
    finally:
        os.chdir(cwd)
    return {"planned": planned, "done": done, "stopped": stopped}


LOCAL = ["--engine", "local"]


def argv_of(doc_argv: list[str], bs: str, hook: str, sha: str) -> list[str]:
    """The doc's words with its placeholders filled: the cluster is the state file."""
    head, *rest = _tokens(doc_argv)
    fill = {DOC_BS: bs, DOC_HASH: sha, DOC_HOOK: hook}
    rest = [fill.get(t, t) for t in rest]
    if head == "$RK":
        return ["--bootstrap-server", bs, *rest]
    assert head in HEADS, doc_argv
    if rest[:1] == ["plan"] and "--engine" not in rest and " ".join(rest) != ON_SPARK:
        rest += LOCAL
    return rest


RUN = [(c, a) for c, a in CASES if not_run(a) is None]


def _param(cmd: str, argv: list[str]):
    """Spark's two commands (the tour's plan; report, whose postmortem reads on Spark) marked."""
    rest = " ".join(argv[1:])
    spark = rest == ON_SPARK or rest.startswith("report ")
    return pytest.param(cmd, argv, id=" ".join(argv), marks=[pytest.mark.spark] if spark else [])


@pytest.mark.parametrize(("cmd", "doc_argv"), [_param(c, a) for c, a in RUN])
def test_every_docs_command_runs(cmd, doc_argv, states, hook, tmp_path, monkeypatch):
    words = " ".join(_tokens(doc_argv[1:]))
    state = state_of(words)
    d = tmp_path / "cwd"
    shutil.copytree(states[state], d)
    monkeypatch.chdir(d)
    sha = plan_hash(Plan.read("plan.json"))
    argv = argv_of(doc_argv, "sim:cluster.sim", hook, sha)
    code, out = run(argv)
    # a bug's message, from main or the drop-in's own handler (cli/reassign.py)
    assert not re.search(r"Traceback|(reassign-kit|Error): unexpected", out), out
    assert code == 0, (
        f"{cmd}\n  ran as {argv} in {state}: exit {code} ({EXIT_CODES.get(code)})\n{out}"
    )


def test_the_inline_fragments_are_still_in_the_docs_and_help_runs():
    assert FRAGMENTS <= set(INLINE), FRAGMENTS - set(INLINE)
    assert any(a == ["reassign-kit", "--help"] for _c, a in RUN), INLINE


def test_the_table_names_only_commands_the_docs_show_and_most_run():
    """No stale row in NOT_RUN, and the table stays the exception."""
    starts = [not_run(a)[0] for _c, a in CASES if not_run(a) is not None]
    assert set(starts) == set(NOT_RUN), set(NOT_RUN) - set(starts)
    assert len(RUN) > 2 * (len(CASES) - len(RUN)), (len(RUN), len(CASES))
    assert any(" ".join(a[1:]) == ON_SPARK for _c, a in RUN), "the tour's plan, on Spark"


def test_the_tests_the_table_names_exist():
    root = Path(__file__).resolve().parents[2]
    named = re.findall(r"(tests/[\w/]+\.py)(?:::(\w+))?", json.dumps(NOT_RUN))
    assert len(named) >= len(NOT_RUN), named
    for path, name in named:
        text = (root / path).read_text()
        assert not name or f"def {name}(" in text, f"{path} has no test {name}"


def test_the_docs_notify_command_posts_to_its_url(states, hook, tmp_path, monkeypatch):
    """--notify's URL is filled with a receiver here: the run posts to it."""
    (doc_argv,) = [a for _c, a in RUN if "--notify" in a]
    shutil.copytree(states["planned"], tmp_path / "cwd")
    monkeypatch.chdir(tmp_path / "cwd")
    before = len(Hook.posted)
    code, out = run(argv_of(doc_argv, "sim:cluster.sim", hook, plan_hash(Plan.read("plan.json"))))
    assert code == 0, out
    events = [d["event"] for d in Hook.posted[before:]]
    assert "finished" in events and "failed" not in events, (events, out)


def test_a_wrong_docs_command_fails_here(states, hook, tmp_path, monkeypatch):
    """The check can fail: a command the tool refuses, or one whose cluster state says
    otherwise (--verify before the plan ran: 11), exits non-zero through the same runner."""
    shutil.copytree(states["planned"], tmp_path / "cwd")
    monkeypatch.chdir(tmp_path / "cwd")
    bs = "sim:cluster.sim"
    assert (
        run(argv_of(["$RK", "--verify", "--reassignment-json-file", "plan.json"], bs, hook, ""))[0]
        == 11
    )
    wrong = [
        "$RK",
        "--progress",
        "--reassignment-json-file",
        "plan.json",
        "--watch",
        "--output",
        "json",
    ]
    assert run(argv_of(wrong, bs, hook, ""))[0] == 2
