"""The postmortem's Spark tables on a journal the real executor wrote against the simulator
(batch size 2, a throttle): one row per move, concurrency within the batch size, batch waits,
throttle changes; and the session is the project's one (spark.session.get_spark)."""

from __future__ import annotations

import pytest

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.spark import postmortem as pmx

pytestmark = [pytest.mark.spark]
TP = TopicPartition


@pytest.fixture(scope="module")
def journal(tmp_path_factory) -> str:
    sim = SimCluster(4, bandwidth=20 * MB, tick=0.1)
    sim.add_topic("orders", [[0, 1], [1, 2], [2, 3], [3, 0]], 10 * MB)
    plan = Plan.of([Move(TP("orders", p), ((p + 2) % 4, (p + 3) % 4)) for p in range(4)])
    path = str(tmp_path_factory.mktemp("pm") / "journal.jsonl")
    opts = ExecuteOptions(batch_size=2, throttle=10 * MB, wait=True, sample_interval=1.0)
    Run(sim, plan, opts, path, clock=sim.now, sleep=sim.sleep).run()
    return path


def test_postmortem_tables_from_a_simulated_run(journal):
    from reassign_kit.spark.session import get_spark

    spark = pmx.session()  # the process's session, whichever master it runs on
    assert spark is get_spark()  # one session per process, no fallback of its own
    pm = pmx.Postmortem.of(spark, [journal])
    moves = pm.moves().toPandas()
    assert len(moves) == 4 and set(moves["state"]) == {"completed"}
    assert (moves["duration"] > 0).all() and set(moves["batch"]) == {0, 1}
    conc = pm.concurrency().toPandas()
    assert conc["in_flight"].max() == 2 and conc["in_flight"].iloc[-1] == 0
    batches = pm.batch_waits().toPandas()
    assert list(batches["moves"]) == [2, 2] and (batches["waiting_for_slowest_s"] >= 0).all()
    thr = pm.throughput_per_broker().toPandas()
    assert set(thr["direction"]) == {"in", "out"} and thr["bytes"].sum() > 0
    throttles = pm.throttle_changes().toPandas()
    assert list(throttles["event"])[-1] == "throttle_cleared"
    rep = pmx.report(
        moves, conc, thr, batches, pm.trouble().toPandas(), throttles, pm.caps_pandas()
    )
    s = rep["summary"]
    assert s["moves"] == 4 and s["states"] == {"completed": 4} and s["stuck"] == 0
    assert s["caps"][0]["batch_size"] == 2


def test_report_html_is_one_offline_file_with_figures_and_tables(journal, tmp_path, capsys):
    """`reassign-kit report JOURNAL --html out.html`: figures and their tables in
    one file that needs no network, and the JSON beside it."""
    import json
    import re

    from reassign_kit.cli import main

    out = tmp_path / "pm.html"
    assert main(["report", journal, "--html", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"4 moves (4 completed) -> {out}" in said and "{" not in said, said
    doc = out.read_text()
    assert not re.search(r"<script[^>]+src=", doc)  # plotly.js inline, nothing fetched
    for section in ("timeline", "concurrency", "throughput", "batch_waits"):
        assert f'<section id="{section}">' in doc
    # the ETA over the run beside the truth; no pace chart for a static run
    assert '<section id="eta">' in doc and '<section id="pace' not in doc
    assert "<h2>moves</h2>" in doc and "<h2>throughput per broker</h2>" in doc
    # one look: every figure of the report in the package's template
    assert doc.count("Helvetica, Arial, sans-serif") >= 4, "a figure not in the template"
    assert json.loads((tmp_path / "pm.json").read_text())["summary"]["moves"] == 4
    assert main(["report", str(tmp_path / "nope.jsonl"), "--html", str(out)]) == 2


def test_a_relative_journal_path_is_this_directorys_whichever_the_session_started_in(
    tmp_path, monkeypatch
):
    """Spark resolves a relative path against the JVM's working directory (where the session
    started): `report run.jsonl` in a second directory of one process read the first's file,
    or none (found by tests/unit/test_docs_commands_run.py)."""
    import json

    from reassign_kit.moves.journal import to_spark
    from reassign_kit.spark.session import get_spark

    spark = get_spark()  # started, or already running, in another directory than these two
    for n in (1, 2):
        d = tmp_path / f"d{n}"
        d.mkdir()
        monkeypatch.chdir(d)
        lines = [json.dumps({"event": "sample", "ts": float(i)}) for i in range(n)]
        (d / "run.jsonl").write_text("\n".join(lines) + "\n")
        assert to_spark(spark, "run.jsonl").count() == n
