"""Installs as a user has them: the wheel built from this checkout, installed
in clean virtual environments (uv, versions pinned by requirements.lock, wheels from uv's
cache), used against the session's sandbox.

- the core alone (no extra): --execute (legacy and paced) / --list / --verify / --cancel work,
  `report` names the extras it needs; `plan` on the
  Spark engine says to install reassign-kit[spark] (exit 2, no traceback), `plan --engine
  local` plans without it; `runbook run` says to install [notebook].
- [all]: `reassign-kit runbook list` shows the runbooks shipped in the wheel, and `runbook run
  03_verify` runs one through papermill against the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import ci_env
import pytest

from reassign_kit.model import Move, Plan, TopicPartition

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
TP = TopicPartition


def uv(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(UV), *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout, built once (sdist first, then the wheel from it)."""
    if not UV.exists():
        ci_env.missing(str(UV), "make setup installs uv (the [dev] extra)")
    out = tmp_path_factory.mktemp("dist")
    uv("build", "--quiet", "-o", str(out), str(ROOT))
    wheels = list(out.glob("reassign_kit-*.whl"))
    assert len(wheels) == 1, list(out.iterdir())
    names = zipfile.ZipFile(wheels[0]).namelist()
    assert {
        f"reassign_kit/runbooks/0{i}_{n}.ipynb" for i, n in [(1, "plan"), (3, "verify")]
    } <= set(names), names
    return wheels[0]


def venv_with(tmp_path: Path, name: str, requirement: str) -> Path:
    env = tmp_path / name
    uv("venv", "--quiet", "--python", sys.executable, str(env))
    py = env / "bin" / "python"
    uv(
        "pip",
        "install",
        "--quiet",
        "--python",
        str(py),
        "-c",
        str(ROOT / "requirements.lock"),
        requirement,
    )
    return env


def cli(env: Path, *args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run(
        [str(env / "bin" / "reassign-kit"), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=clean,
    )


def test_core_install_runs_the_drop_in_actions(sandbox, bootstrap, gw, wheel, topic_name, tmp_path):
    env = venv_with(tmp_path, "core", str(wheel))
    py = env / "bin" / "python"
    probe = subprocess.run(
        [
            str(py),
            "-c",
            "import importlib.util as u; print([m for m in "
            "('pyspark','pyarrow','papermill','plotly','ipywidgets','jupyterlab') if u.find_spec(m)])",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "[]", probe.stdout
    topic = topic_name("core")
    sandbox.create_topic(topic, assignment=[(1, 2), (2, 3)])
    try:
        # 8 MiB: a throttled follower still takes up to 1 MiB (replica.fetch.max.bytes) per
        # 11 s quota window, so 1 MB partitions completed before --cancel under load and the
        # rolled-back check could never pass; 8 MiB keeps each move in flight >= ~80 s
        sandbox.load(topic, mb_per_partition=8.0)
        plan = Plan.of([Move(TP(topic, 0), (3, 4)), Move(TP(topic, 1), (4, 1))])
        plan_file = tmp_path / "plan.json"
        plan.write(str(plan_file))
        base = ["--bootstrap-server", bootstrap]
        # a slow throttle keeps the moves in flight for --list / --verify / --cancel
        p = cli(
            env,
            *base,
            "--execute",
            "--reassignment-json-file",
            str(plan_file),
            "--throttle",
            "100000",
            "--rollback-file",
            str(tmp_path / "rb.json"),
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        p = cli(env, *base, "--list", "--output", "json", cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        listed = {(e["topic"], e["partition"]) for e in json.loads(p.stdout).get("partitions", [])}
        assert listed & {(topic, 0), (topic, 1)}, p.stdout
        p = cli(env, *base, "--verify", "--reassignment-json-file", str(plan_file), cwd=tmp_path)
        assert p.returncode == 10, p.stdout + p.stderr  # in progress
        p = cli(
            env,
            *base,
            "--cancel",
            "--reassignment-json-file",
            str(plan_file),
            "--rollback-file",
            str(tmp_path / "rb.json"),
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        deadline = time.monotonic() + 120
        while True:
            p = cli(
                env,
                *base,
                "--verify",
                "--reassignment-json-file",
                str(tmp_path / "rb.json"),
                cwd=tmp_path,
            )
            if p.returncode == 0:
                break
            assert time.monotonic() < deadline, p.stdout + p.stderr
            time.sleep(1)
        states = gw.describe_partitions([TP(topic, 0), TP(topic, 1)])
        assert [states[TP(topic, i)].replicas for i in (0, 1)] == [(1, 2), (2, 3)]
        # a paced run needs no extra either (its terminal view is rich, a core dependency);
        # piped here, so its plain lines
        one = tmp_path / "one.json"
        Plan.of([Move(TP(topic, 0), (3, 4))]).write(str(one))
        journal = tmp_path / "paced.jsonl"
        p = cli(
            env,
            *base,
            "--execute",
            "--reassignment-json-file",
            str(one),
            "--reassignment-batch-size",
            "1",
            "--wait",
            "--journal",
            str(journal),
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        assert f"completed {topic}-0" in p.stdout and journal.exists(), p.stdout
        p = cli(env, *base, "--verify", "--reassignment-json-file", str(one), cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        # the postmortem report names its extras
        p = cli(env, "report", str(journal), "--html", str(tmp_path / "r.html"), cwd=tmp_path)
        assert p.returncode == 2 and "reassign-kit[notebook]" in p.stderr, p.stdout + p.stderr
        assert "Traceback" not in p.stderr and not (tmp_path / "r.html").exists()
        # plan: the Spark engine names the extra; the in-process planner needs none
        snap = tmp_path / "snap.json"
        p = cli(env, "snapshot", *base, "--topics", topic, "--output", str(snap), cwd=tmp_path)
        assert p.returncode == 0, p.stdout + p.stderr
        p = cli(
            env,
            "plan",
            "--snapshot",
            str(snap),
            "--remove-brokers",
            "4",
            "--output",
            str(tmp_path / "p2.json"),
            cwd=tmp_path,
        )
        assert p.returncode == 2, p.stdout + p.stderr
        assert "pip install 'reassign-kit[spark]'" in p.stderr and "--engine local" in p.stderr
        assert "Traceback" not in p.stderr
        p = cli(
            env,
            "plan",
            "--snapshot",
            str(snap),
            "--remove-brokers",
            "4",
            "--engine",
            "local",
            "--output",
            str(tmp_path / "p2.json"),
            cwd=tmp_path,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        p = cli(env, "runbook", "run", "03_verify", cwd=tmp_path)
        assert p.returncode == 2 and "reassign-kit[notebook]" in p.stderr, p.stdout + p.stderr
        assert "Traceback" not in p.stderr
    finally:
        admin = sandbox.admin()
        for f in admin.delete_topics([topic]).values():
            f.result(60)
        cli(
            env,
            "--bootstrap-server",
            bootstrap,
            "--verify",
            "--reassignment-json-file",
            str(tmp_path / "rb.json"),
            cwd=tmp_path,
        )  # throttles cleared whatever happened


def test_all_install_runs_a_packaged_runbook(sandbox, bootstrap, wheel, topic_name, tmp_path):
    env = venv_with(tmp_path, "all", f"reassign-kit[all] @ {wheel.as_uri()}")
    p = cli(env, "runbook", "list", cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "03_verify" in p.stdout and "site-packages/reassign_kit/runbooks" in p.stdout, p.stdout
    topic = topic_name("rbk")
    sandbox.create_topic(topic, assignment=[(1, 2)])
    try:
        plan_file = tmp_path / "plan.json"
        Plan.of([Move(TP(topic, 0), (1, 2))]).write(str(plan_file))  # already complete
        out = tmp_path / "nb" / "verify.ipynb"
        out.parent.mkdir()
        p = cli(
            env,
            "runbook",
            "run",
            "03_verify",
            "-p",
            "bootstrap_servers",
            bootstrap,
            "-p",
            "plan_path",
            str(plan_file),
            "--output",
            str(out),
            cwd=tmp_path,
            timeout=600,
        )
        assert p.returncode == 0, p.stdout + p.stderr
        assert out.exists() and (out.parent / "verify_report.json").exists()
        assert json.loads((out.parent / "verify_report.json").read_text())["complete"] is True
        # quiet: the kernel's and Jupyter's lines are in the log named at the end, not here
        assert "log: " in p.stdout and "Kernel" not in p.stdout + p.stderr, p.stdout + p.stderr
        nb = json.loads(out.read_text())
        assert "widgets" not in nb["metadata"]
    finally:
        admin = sandbox.admin()
        for f in admin.delete_topics([topic]).values():
            f.result(60)
