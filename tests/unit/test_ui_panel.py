"""The panel's logic without a browser: built on the simulated cluster (simulate.SimCluster, the
Gateway protocol) with the real execute.Run and ops.verify; buttons clicked with ``.click()``."""

from __future__ import annotations

import json
import time

import pytest

from reassign_kit import ops
from reassign_kit.execute import ExecuteOptions, Run
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.simulate import MB, SimCluster
from reassign_kit.ui import charts
from reassign_kit.ui.panel import PACING, Panel

TP = TopicPartition


def cluster() -> SimCluster:
    sim = SimCluster(4, bandwidth=20 * MB, tick=0.1)
    sim.add_topic("orders", [[0, 1], [1, 2], [2, 3], [3, 0]], 10 * MB)
    return sim


def plan() -> Plan:
    return Plan.of(
        [
            Move(TP("orders", 0), (2, 3)),
            Move(TP("orders", 1), (3, 0)),
            Move(TP("orders", 2), (0, 1)),
        ]
    )


def sim_runs(sim: SimCluster):
    """Run factory: the real Run on model time (a short real pause per poll keeps the loop
    from spinning and gives the test's clicks a chance to land mid-run)."""

    def sleep(dt: float) -> None:
        sim.sleep(dt)
        time.sleep(0.01)

    def make(gateway, plan, options, journal_path):
        return Run(gateway, plan, ExecuteOptions(**{"wait": True, **options}), journal_path,
                   clock=sim.now, sleep=sleep)

    return make


def sim_verify(gateway, plan):
    # ops.verify as the panel calls it; clearing throttles goes through broker/topic config
    # calls that the model does not offer, and the run (wait=True) has cleared them already
    return ops.verify(gateway, plan, preserve_throttles=True)


def make_panel(sim: SimCluster, tmp_path, **defaults) -> Panel:
    return Panel(plan(), sim, output_dir=str(tmp_path), refresh_s=0.02,
                 run_factory=sim_runs(sim), verify_fn=sim_verify, **defaults)


def test_summary_controls_and_initial_buttons(tmp_path):
    p = make_panel(cluster(), tmp_path, batch_size=2, incremental=True, throttle=5 * MB)
    s = p.summary
    assert (s.moves, s.replica_moves, s.leader_changes) == (3, 6, 3)
    assert s.bytes_to_move == 6 * 10 * MB and s.valid
    assert "valid" in p.summary_html.value and "60.0 MiB" in p.summary_html.value
    assert p.phase == "ready" and p.enabled() == {"execute", "verify"}
    opts = p.options()
    assert opts["batch_size"] == 2 and opts["incremental"] is True and opts["throttle"] == 5 * MB
    assert opts["max_moves_per_broker"] is None and opts["move_deadline"] is None  # 0 = no limit
    # every control maps onto a real ExecuteOptions field
    assert {o.name for o in PACING} <= set(ExecuteOptions.__dataclass_fields__)
    # the plan-time chart shows bytes per broker before anything runs
    assert list(p.figure.data[charts.T_IN].x) == ["0", "1", "2", "3"]


def test_invalid_plan_disables_everything(tmp_path):
    bad = Plan.of([Move(TP("orders", 9), (0, 7)), Move(TP("nope", 0), (1, 2))])
    p = Panel(bad, cluster(), output_dir=str(tmp_path))
    assert p.phase == "invalid" and p.enabled() == frozenset()
    assert "orders-9" in p.summary_html.value and "nope" in p.summary_html.value
    p.buttons["execute"].click()  # a disabled button's handler must refuse too
    assert p.run is None


def test_unknown_option_is_named():
    with pytest.raises(Exception, match="batchsize"):
        Panel(plan(), cluster(), batchsize=3)


def test_execute_to_done_then_verify(tmp_path):
    sim = cluster()
    p = make_panel(sim, tmp_path, batch_size=1, throttle=10 * MB)
    p.buttons["execute"].click()
    assert p.phase in ("running", "done")
    p.wait(60)
    assert p.phase == "done", p.message.value
    assert p.enabled() == {"verify"}
    data = p.chart_data()
    assert data.progress.done[-1] == 3 and data.progress.percent_done == 100
    assert "100% done" in p.figure.layout.title.text
    assert {b.state for b in data.bars} == {"done"} and len(data.bars) == 3
    # batch size 1: the moves never overlap
    spans = sorted((b.start, b.end) for b in data.bars)
    assert all(a[1] <= b[0] + 1e-9 for a, b in zip(spans, spans[1:], strict=False))
    assert sum(v["bytes_in"] for v in data.brokers.values()) > 0
    p.buttons["verify"].click()
    assert p.report()["verify_complete"] is True
    assert "done" in p.message.value
    assert sim.current_throttles().is_empty()
    report = json.loads((tmp_path / "execute_report.json").read_text())
    assert report["progress"]["percent_done"] == 100 and report["verify_complete"] is True
    rollback = json.loads((tmp_path / "rollback.json").read_text())
    assert rollback["partitions"][0]["replicas"] == [0, 1]
    assert (tmp_path / "execute_chart.html").stat().st_size > 10_000
    assert (tmp_path / "journal.jsonl").exists()


def test_pause_resume_cancel(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))  # a move that never finishes keeps the run going
    p = make_panel(sim, tmp_path, batch_size=1, throttle=10 * MB)
    p.buttons["execute"].click()
    assert p.enabled() == {"pause", "cancel"}
    p.buttons["pause"].click()
    assert p.phase == "paused" and p.enabled() == {"resume", "cancel"}
    assert all(w.disabled for w in p.controls.values())
    p.buttons["resume"].click()
    assert p.phase == "running"
    p.buttons["cancel"].click()
    assert p.enabled() == frozenset()  # stopping: nothing to press until the run has left
    p.wait(60)
    assert p.phase == "cancelled", p.message.value
    assert p.enabled() == {"execute", "verify"}
    kinds = [e["event"] for e in p.events]
    assert "paused" in kinds and "resumed" in kinds and kinds[-1] == "run_finished"
    assert TP("orders", 0) not in sim.list_reassignments()
    assert sim.current_throttles().is_empty()
    p.buttons["verify"].click()
    assert p.report()["verify_complete"] is False
    assert "NOT complete" in p.message.value


def test_run_error_is_shown_not_silent(tmp_path):
    sim = cluster()
    p = Panel(plan(), sim, output_dir=str(tmp_path), run_factory=sim_runs(sim), throttle=-1)
    p.controls["incremental"].value = True  # incremental without a batch size: refused
    p.buttons["execute"].click()
    assert p.phase == "ready" and p.run is None
    assert "--incremental" in p.message.value
    assert p.errors
