"""Each notebook executed headless by papermill (through runbook.py) against the sandbox:
02 executes a plan and writes its artefacts, 03 verifies it, 04 writes the postmortem; a bad
plan makes papermill fail loudly with the reason."""

from __future__ import annotations

import json
import os

import pytest

from reassign_kit import runbook

pytestmark = [pytest.mark.integration]


@pytest.fixture(scope="module")
def executed(sandbox, tmp_path_factory):
    out = tmp_path_factory.mktemp("nb")
    topic = f"nb-{os.getpid()}-{out.name[-4:]}"
    nb = runbook.run_notebook(
        "02_execute",
        str(out / "02"),
        {
            "sandbox_dir": str(sandbox.dir),
            "demo_topic": topic,
            "auto_execute": True,
            "demo_partitions": 4,
            "demo_mb_per_partition": 1.0,
            "batch_size": 2,
            "incremental": False,
            "throttle": 8_000_000,
            "poll_interval_ms": 300,
        },
        execution_timeout=300,
    )
    return out, nb


def test_02_execute_writes_artefacts_and_completes(executed):
    out, nb = executed
    d = out / "02"
    for name in (
        "plan.json",
        "rollback.json",
        "journal.jsonl",
        "execute_report.json",
        "execute_chart.html",
    ):
        assert (d / name).exists(), name
    report = json.loads((d / "execute_report.json").read_text())
    assert report["phase"] == "done" and report["verify_complete"] is True
    assert report["progress"]["percent_done"] == 100
    assert os.path.getsize(nb) < runbook.MAX_OUTPUT_BYTES
    assert "widgets" not in json.loads(open(nb).read())["metadata"]


def test_03_verify_reports_complete(executed, sandbox):
    out, _ = executed
    nb = runbook.run_notebook(
        "03_verify",
        str(out / "03"),
        {"sandbox_dir": str(sandbox.dir), "plan_path": str(out / "02" / "plan.json")},
        execution_timeout=300,
    )
    rep = json.loads((out / "03" / "verify_report.json").read_text())
    assert rep["complete"] is True and rep["exit_code"] == 0
    # it prints what verify knows, not an empty progress line ("0 B of 0 B ... ETA 0m00s")
    text = _outputs(nb)
    assert "nothing left to copy" in text and "0 B of 0 B" not in text, text[-2000:]


def _outputs(nb_path) -> str:
    """Every text output of an executed notebook, joined."""
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    parts = []
    for cell in nb.cells:
        for o in cell.get("outputs", ()):
            parts.append(o.get("text", ""))
            parts.append(str(o.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


@pytest.mark.spark
def test_04_postmortem_reads_the_journal(executed):
    out, _ = executed
    nb = runbook.run_notebook(
        "04_postmortem",
        str(out / "04"),
        {"journal_paths": str(out / "02" / "journal.jsonl"), "spark_master": "local[1]"},
        execution_timeout=600,
    )
    rep = json.loads((out / "04" / "postmortem_report.json").read_text())
    s = rep["summary"]
    assert s["moves"] == 4 and s["states"] == {"completed": 4}
    assert max(s["peak_in_flight"].values()) <= 2  # batch size 2
    assert s["throttle_changes"] >= 2  # set, then cleared
    # every chart in one standalone file: plotly.js once, not once per chart
    page = (out / "04" / "postmortem_charts.html").read_text()
    for chart in ("timeline", "concurrency", "throughput", "batch_waits"):
        assert f'<section id="{chart}">' in page
    assert page.count("plotly.js v") == 1 and len(page) < 6_000_000
    assert sorted(p.name for p in (out / "04").glob("*.html")) == ["postmortem_charts.html"]
    # times as times, and a sentence where a table would be empty
    text = _outputs(nb)
    assert "Empty DataFrame" not in text and "e+09" not in text, text[-2000:]
    assert "no stuck moves" in text and " UTC" in text
    # the journals' own figures ran (02's run is static, no pace chart)
    assert "no adaptive pace in these runs" in text and '<section id="pace' not in page


def test_bad_plan_fails_loudly(sandbox, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [{"topic": "no-such-topic-x", "partition": 0, "replicas": [1, 99]}],
            }
        )
    )
    with pytest.raises(runbook.RunbookError) as ei:
        runbook.run_notebook(
            "02_execute",
            str(tmp_path / "out"),
            {"sandbox_dir": str(sandbox.dir), "plan_path": str(bad), "auto_execute": True},
            execution_timeout=120,
        )
    msg = str(ei.value)
    assert "02_execute" in msg and "no-such-topic-x" in msg
    assert os.path.exists(tmp_path / "out" / "02_execute.out.ipynb")


def test_resume_without_a_journal_fails_loudly(executed, sandbox, tmp_path):
    """Headless resume=True with no unfinished run of the plan in output_dir: a clear failure."""
    out, _ = executed
    with pytest.raises(runbook.RunbookError) as ei:
        runbook.run_notebook(
            "02_execute",
            str(tmp_path / "out"),
            {
                "sandbox_dir": str(sandbox.dir),
                "plan_path": str(out / "02" / "plan.json"),
                "auto_execute": True,
                "resume": True,
            },
            execution_timeout=120,
        )
    assert "resume_run" in str(ei.value) and "no unfinished run" in str(ei.value)


def test_01_plan_shows_the_what_if_before_anything_runs(executed, sandbox, tmp_path):
    """01 with a throttle and a batch size (in-process planner): the what-if table — the
    numbers ``--execute --dry-run`` prints (whatif.json) — and its chart in plan_charts.html."""
    last = sorted(b["id"] for b in sandbox.brokers)[-1]
    out = tmp_path / "01"
    nb = runbook.run_notebook(
        "01_plan",
        str(out),
        {
            "sandbox_dir": str(sandbox.dir),
            "engine": "local",
            "remove_brokers": [last],
            "throttle": 8_000_000,
            "batch_size": 2,
        },
        execution_timeout=300,
    )
    wi = json.loads((out / "whatif.json").read_text())
    assert wi["predicted_seconds"] > 0
    assert [p["policy"] for p in wi["policies"]][:2] == ["as given", "legacy (one request)"]
    assert '<section id="whatif">' in (out / "plan_charts.html").read_text()
    assert os.path.getsize(nb) < runbook.MAX_OUTPUT_BYTES
