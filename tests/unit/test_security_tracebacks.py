"""Every bare-traceback path found ends in a message naming the file, option or
setting at fault and a meaningful exit code (each test here failed before its fix: a traceback,
or exit 1 "unexpected"). ``request.timeout.ms=abc`` and a CA file librdkafka refuses are in
test_client_security.py; these are the rest."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys

import pytest

import reassign_kit
from reassign_kit import runbook
from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import JournalError, RunbookError, UsageError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal_rules import seal, unseal
from reassign_kit.operations import execute as ops
from reassign_kit.operations import verify as verify_mod
from reassign_kit.snapshot.snapshot import take_snapshot

TP = TopicPartition


def sim_cluster() -> SimCluster:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[0, 1], [1, 2], [2, 3], [3, 0]], 1 * MB)
    return sim


@pytest.fixture
def snap(tmp_path) -> str:
    path = str(tmp_path / "s.json")
    take_snapshot(sim_cluster()).write(path)
    return path


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    code = cli_main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "unexpected" not in err, err
    return code, out, err


# ----------------------------------------------------------------------------- output files


@pytest.mark.parametrize("flag", ["--output", "--report", "--rollback"])
def test_plan_outputs_in_a_missing_directory_are_named_before_planning(
    flag, snap, tmp_path, capsys
):
    """Before: FileNotFoundError traceback after the planning was done."""
    missing = tmp_path / "no-such-dir" / "x.json"
    argv = ["plan", "--snapshot", snap, "--engine", "local", "--remove-brokers", "3"]
    argv += ["--output", str(tmp_path / "plan.json")] if flag != "--output" else []
    code, _, err = run_cli([*argv, flag, str(missing)], capsys)
    assert code == UsageError.exit_code
    assert f"{flag} {missing}: the directory {missing.parent} does not exist" in err
    assert not (tmp_path / "plan.json").exists()  # refused before anything was written


def test_plan_output_that_cannot_be_written_names_the_option(snap, capsys):
    """A write that fails (here: /dev/full, a disk that is full) after planning."""
    code, _, err = run_cli(
        ["plan", "--snapshot", snap, "--engine", "local", "--output", "/dev/full"], capsys
    )
    assert code == UsageError.exit_code
    assert "--output /dev/full: cannot write it: No space left on device" in err


def test_snapshot_output_in_a_missing_directory_is_named_before_connecting(tmp_path, capsys):
    missing = tmp_path / "nope" / "s.json"
    code, _, err = run_cli(
        ["snapshot", "--bootstrap-server", "127.0.0.1:1", "--output", str(missing)], capsys
    )
    assert code == UsageError.exit_code
    assert f"--output {missing}: the directory {missing.parent} does not exist" in err


def test_validate_plan_in_a_missing_directory_is_named(snap, tmp_path, capsys):
    missing = tmp_path / "nope" / "p.json"
    code, _, err = run_cli(
        ["validate", "--snapshot", snap, "--reassignment-json-file", str(missing)], capsys
    )
    assert code == 3 and f"cannot read {missing}: No such file or directory" in err


def test_a_bug_in_a_sub_command_is_a_message_not_a_traceback(monkeypatch, capsys):
    """The sub-commands (snapshot/plan/validate, ...) get the drop-in CLI's last resort."""
    from reassign_kit.cli import plan as plan_cli

    def boom(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(plan_cli, "_validate", boom)
    monkeypatch.delenv("RK_DEBUG", raising=False)
    code = cli_main(["validate", "--snapshot", "s", "--reassignment-json-file", "p"])
    err = capsys.readouterr().err
    assert code == 1 and "unexpected RuntimeError: a bug" in err and "Traceback" not in err


# ----------------------------------------------------------------------------- execute's files


@pytest.fixture
def sim_cli(monkeypatch, tmp_path):
    sim = sim_cluster()
    monkeypatch.setattr(ops, "connect", lambda *a, **k: sim)
    monkeypatch.chdir(tmp_path)
    plan = tmp_path / "plan.json"
    Plan.of([Move(TP("a", 0), (2, 3))]).write(str(plan))
    return sim, str(plan)


def test_execute_rollback_file_in_a_missing_directory(sim_cli, tmp_path, capsys):
    sim, plan = sim_cli
    missing = tmp_path / "nope" / "rb.json"
    code, _, err = run_cli(
        ["--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", plan,
         "--rollback-file", str(missing)],
        capsys,
    )  # fmt: skip
    assert code == UsageError.exit_code
    assert f"--rollback-file {missing}: cannot write it: No such file or directory" in err
    assert not sim.list_reassignments() and sim.partitions[TP("a", 0)].replicas == [0, 1]


def test_a_journal_that_cannot_be_created_is_named_and_nothing_is_sent(sim_cli, capsys):
    """Before: exit 7 'FileExistsError: [Errno 17] File exists: '/dev/null'' (no option)."""
    sim, plan = sim_cli
    code, _, err = run_cli(
        ["--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", plan,
         "--journal", "/dev/null/run.jsonl", "--reassignment-batch-size", "1"],
        capsys,
    )  # fmt: skip
    assert code == JournalError.exit_code
    assert "cannot open the journal /dev/null/run.jsonl (--journal)" in err
    assert not sim.list_reassignments() and sim.partitions[TP("a", 0)].replicas == [0, 1]
    assert sim.current_throttles().is_empty()


def test_snapshot_command_config_error_is_a_usage_error(tmp_path, capsys):
    cfg = tmp_path / "c.properties"
    cfg.write_text("request.timeout.ms=abc\n")
    code, _, err = run_cli(
        ["snapshot", "--bootstrap-server", "127.0.0.1:1", "--command-config", str(cfg),
         "--output", str(tmp_path / "s.json")],
        capsys,
    )  # fmt: skip
    assert code == UsageError.exit_code
    assert "request.timeout.ms must be a whole number of milliseconds" in err


# ----------------------------------------------------------------------------- runbooks


def fake_papermill(monkeypatch, write):
    import papermill

    def execute_notebook(src, out, **kw):
        write(out)
        return None

    monkeypatch.setattr(papermill, "execute_notebook", execute_notebook)


def test_a_truncated_output_notebook_is_named(monkeypatch, tmp_path, capsys):
    """Before: nbformat's NotJSONError (or UnboundLocalError for ``size``) as a traceback."""

    def truncated(out):
        with open(out, "w") as f:
            f.write('{"cells": [{"cell_type": "code", "sou')

    fake_papermill(monkeypatch, truncated)
    with pytest.raises(RunbookError, match=r"the output notebook .*03_verify.out.ipynb cannot be"):
        runbook.run_notebook("03_verify", str(tmp_path / "o"), {"plan_path": "p.json"})
    code = runbook.main(["run", "03_verify", "--output-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == RunbookError.exit_code and "truncated or not a notebook" in err


def test_no_output_notebook_is_named(monkeypatch, tmp_path):
    fake_papermill(monkeypatch, lambda out: None)
    with pytest.raises(RunbookError, match="papermill wrote no output notebook"):
        runbook.run_notebook("03_verify", str(tmp_path / "o"))


def test_runbook_parameters_are_checked_before_a_kernel_starts(monkeypatch, tmp_path, capsys):
    started = []
    fake_papermill(monkeypatch, started.append)
    with pytest.raises(UsageError) as ei:
        runbook.run_notebook(
            "02_execute",
            str(tmp_path / "o"),
            {"batch_sise": 2, "throttle": "fast", "timeout_s": float("nan"), "resume": 1},
        )
    msg = str(ei.value)
    assert "02_execute.ipynb: 4 bad parameter(s); no kernel was started" in msg
    assert "unknown parameter 'batch_sise' (its parameters: additional, " in msg
    assert "parameter throttle must be of type int, got str" in msg
    assert "parameter timeout_s must be a finite number" in msg
    assert "parameter resume must be of type bool, got int" in msg
    assert started == []
    code = runbook.main(
        ["run", "02_execute", "--output-dir", str(tmp_path / "o"), "-p", "batch_size", "two"]
    )
    assert code == UsageError.exit_code
    assert "parameter batch_size must be of type int" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the panel


def panel_on(sim, out_dir):
    from reassign_kit.ui.panel import Panel

    return Panel(
        Plan.of([Move(TP("a", 0), (2, 3)), Move(TP("a", 1), (3, 0))]),
        sim,
        output_dir=str(out_dir),
        refresh_s=0.02,
        run_kwargs={"clock": sim.now, "sleep": sim.sleep},
        verify_fn=lambda gw, plan: verify_mod.verify(gw, plan, preserve_throttles=True),
        batch_size=1,
    )


def test_panel_output_dir_that_cannot_be_made_is_named(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("")
    with pytest.raises(UsageError, match=f"output_dir {a_file}/out: cannot create it"):
        panel_on(sim_cluster(), a_file / "out")


def test_panel_start_artefacts_unwritable_shows_an_error_and_starts_nothing(tmp_path):
    """Before: IsADirectoryError in the button callback with ``run`` set but never started,
    the phase still 'ready' and no message: a half-started panel."""
    sim = sim_cluster()
    (tmp_path / "plan.json").mkdir()  # plan.json cannot be written
    p = panel_on(sim, tmp_path)
    p.buttons["execute"].click()
    assert p.phase == "ready" and p.run is None
    assert "cannot write the panel's artefacts in" in html.unescape(p.message.value)
    assert "nothing was sent to the cluster" in p.errors[-1]
    assert not sim.list_reassignments() and sim.partitions[TP("a", 0)].replicas == [0, 1]


def test_panel_end_artefacts_unwritable_shows_an_error(tmp_path):
    """Before: the OSError of save_artefacts ended the watcher thread (and a Verify click)
    with a traceback in the callback log; the panel said nothing."""
    sim = sim_cluster()
    (tmp_path / "execute_report.json").mkdir()
    p = panel_on(sim, tmp_path)
    p.buttons["execute"].click()
    p.wait(60)
    assert p.phase == "done"
    assert "cannot write the panel's artefacts in" in p.errors[-1]
    assert "execute_report.json" in p.errors[-1]
    p.buttons["verify"].click()
    assert "cannot write the panel's artefacts" in html.unescape(p.message.value)


# ----------------------------------------------------------------------------- Spark


def test_spark_that_cannot_start_is_a_message_and_exit_2(snap, tmp_path):
    """JAVA_HOME pointing nowhere: before, PySparkRuntimeError [JAVA_GATEWAY_EXITED] as a
    traceback (exit 1). A fresh process: this one may hold a Spark session already."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(reassign_kit.__file__)))
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-java"), "PYTHONPATH": root}
    env.pop("RK_DEBUG", None)
    env.pop("RK_SPARK_MASTER", None)
    proc = subprocess.run(
        [sys.executable, "-m", "reassign_kit.cli", "plan", "--snapshot", snap,
         "--output", str(tmp_path / "p.json")],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert proc.returncode == UsageError.exit_code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Spark could not start (master local[2])" in proc.stderr
    assert f"JAVA_HOME={tmp_path / 'no-java'} has no bin/java" in proc.stderr
    assert "--engine local" in proc.stderr


# ----------------------------------------------------------------------------- not UTF-8

NOT_UTF8 = b'{"version": 1, "partitions": [{"topic": "\xff\xfe", "partition": 0}]}'


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["--verify", "--reassignment-json-file", "{f}"], 3, "{f} is not a reassignment plan"),
        (["--cancel", "--reassignment-json-file", "{p}", "--rollback-file", "{f}"], 3,
         "{f} is not a reassignment plan"),
        (["--list", "--command-config", "{f}"], 2, "--command-config {f}: not UTF-8 text (byte"),
        (["--generate", "--topics-to-move-json-file", "{f}", "--broker-list", "0,1"], 3,
         "{f} is not a topics-to-move file"),
        (["--progress", "--reassignment-json-file", "{p}", "--progress-journal", "{f}"], 12,
         "{f}:1: not UTF-8 text at byte"),
        (["--cancel", "--journal", "{f}"], 12, "{f}:1: not UTF-8 text"),
        (["validate", "--snapshot", "{f}", "--reassignment-json-file", "{p}"], 3,
         "{f} is not a snapshot"),
        (["plan", "--snapshot", "{f}", "--engine", "local", "--output", "{p}.out"], 3,
         "{f} is not a snapshot"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_utf8_is_named(
    argv, code, message, sim_cli, tmp_path, capsys, monkeypatch
):
    """Before: UnicodeDecodeError, exit 1 'unexpected' (the drop-in) or a traceback."""
    _, plan = sim_cli
    sim_connect = ops.connect
    monkeypatch.setattr(  # the config is read (and refused) before anything connects
        ops,
        "connect",
        lambda bs, cc=None, **k: sim_connect(ops.load_command_config(cc) if cc else None),
    )
    bad = tmp_path / "bad.bin"
    bad.write_bytes(NOT_UTF8)
    argv = [a.format(f=bad, p=plan) for a in argv]
    if argv[0] not in ("validate", "plan"):
        argv = ["--bootstrap-server", "h:1", *argv]
    got, _, err = run_cli(argv, capsys)
    assert got == code and message.format(f=bad) in err, err


def test_a_missing_plan_file_says_it_is_the_plan(tmp_path, capsys):
    missing = tmp_path / "p.json"
    code, _, err = run_cli(["--bootstrap-server", "h:1", "--verify",
                            "--reassignment-json-file", str(missing)], capsys)  # fmt: skip
    assert code == 3 and f"reassignment plan {missing} (1 problem(s))" in err


# ----------------------------------------------------------------------------- damaged journals


@pytest.fixture
def journal_of_a_run(sim_cli, tmp_path, capsys) -> list[dict]:
    _, plan = sim_cli
    path = tmp_path / "run.jsonl"
    code, _, _ = run_cli(
        ["--bootstrap-server", "h:1", "--execute", "--reassignment-json-file", plan,
         "--reassignment-batch-size", "1", "--throttle", "10000000", "--wait", "--journal", str(path),
         "--rollback-file", str(tmp_path / "rb.json")],
        capsys,
    )  # fmt: skip
    assert code == 0
    return [json.loads(unseal(line)[0]) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    "event, change, problem",
    [
        ("submitted", {"partition": None}, "'topic' without its 'partition'"),
        (
            "submitted",
            {"current": "0,1"},
            "'current' must be a list of distinct broker ids, not empty",
        ),
        ("run_started", {"options": [1]}, "'options' must be an object"),
        ("completed", {"duration_s": "1s"}, "'duration_s' must be a non-negative number"),
        ("throttle_set", {"ts": None}, "has no 'ts'"),
    ],
)
@pytest.mark.parametrize(
    "argv",
    [
        ["--cancel", "--journal", "{j}"],
        ["--execute", "--resume", "--journal", "{j}", "--reassignment-json-file", "{p}"],
        ["--progress", "--reassignment-json-file", "{p}", "--progress-journal", "{j}"],
        ["calibrate", "--journal", "{j}", "--output", "{j}.cal"],
    ],
)
def test_a_damaged_journal_event_is_named_by_line(
    event, change, problem, argv, journal_of_a_run, sim_cli, tmp_path, capsys
):
    """Before: KeyError / TypeError / ValueError from the event's reader, exit 1 'unexpected'
    (e.g. ``--cancel --journal`` with a submitted event without its partition)."""
    _, plan = sim_cli
    events = [dict(e) for e in journal_of_a_run]
    i = next(n for n, e in enumerate(events) if e["event"] == event)
    for k, v in change.items():
        if v is None:
            events[i].pop(k)
        else:
            events[i][k] = v
    j = tmp_path / "damaged.jsonl"
    # sealed again, as an editor who knows the format would: the fields themselves are checked
    j.write_text("".join(seal(json.dumps(e, separators=(",", ":"))) + "\n" for e in events))
    argv = [a.format(j=j, p=plan) for a in argv]
    if argv[0] != "calibrate":
        argv = ["--bootstrap-server", "h:1", *argv]
    code, _, err = run_cli(argv, capsys)
    assert code == JournalError.exit_code, err
    assert f"{j}:{i + 1}: event {event!r}" in err or f"{j}:{i + 1}: " in err
    assert problem in err and "the journal is corrupt" in err
