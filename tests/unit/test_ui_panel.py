"""The panel's logic without a browser: built on the simulated cluster (simulate.SimCluster, the
Gateway protocol) with the real execute.Run and verify_mod.verify; buttons clicked with ``.click()``."""

from __future__ import annotations

import json
import time

import plotly.graph_objects as go
import pytest

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.operations import verify as verify_mod
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.ui import charts, controls
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


def sim_runs(sim: SimCluster) -> dict:
    """Run keywords for the panel's preflight: the real Run on model time (a short real pause
    per poll keeps the loop from spinning and gives the test's clicks a chance to land)."""

    def sleep(dt: float) -> None:
        sim.sleep(dt)
        time.sleep(0.01)

    return {"clock": sim.now, "sleep": sleep}


def sim_verify(gateway, plan):
    # verify_mod.verify as the panel calls it; clearing throttles goes through broker/topic config
    # calls that the model does not offer, and the run (wait=True) has cleared them already
    return verify_mod.verify(gateway, plan, preserve_throttles=True)


def make_panel(sim: SimCluster, tmp_path, **defaults) -> Panel:
    return Panel(
        plan(),
        sim,
        output_dir=str(tmp_path),
        refresh_s=0.02,
        run_kwargs=sim_runs(sim),
        verify_fn=sim_verify,
        **defaults,
    )


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
    assert list(p.figure.data[charts.T_PLAN_IN].x) == ["0", "1", "2", "3"]


def test_the_charts_views_hold_the_whole_figure_never_a_figurewidget(tmp_path):
    """The blank chart: a FigureWidget (an anywidget) opens its comm with an empty
    figure and reaches its figure through later messages, which anywidget's front end drops
    for good when plotly's 5 MB module takes over 2 s to load. The panel's charts are views
    whose state IS the figure: a view created at any moment draws what the panel holds."""
    import ipywidgets as W

    p = make_panel(cluster(), tmp_path, batch_size=2, throttle=5 * MB)

    def tree(w):
        yield w
        for c in getattr(w, "children", ()) or ():
            yield from tree(c)

    widgets = list(tree(p.widget))
    assert not any(isinstance(w, go.FigureWidget) for w in widgets)
    assert p.chart in widgets and p.whatif_chart in widgets
    assert isinstance(p.chart, W.Output) and "rk-chart" in p.chart._dom_classes
    shown = charts.shown(p.chart)
    assert shown is not None, "the plan's chart is in the view's state before anything runs"
    assert shown["layout"]["title"]["text"] == p.figure.layout.title.text
    assert "not started" in shown["layout"]["title"]["text"]
    assert shown["data"][charts.T_PLAN_IN]["x"] == ["0", "1", "2", "3"]
    assert shown["config"]["displaylogo"] is False
    # nothing is sent again while nothing changed; a change is sent whole
    assert charts.show(p.chart, p.figure) is False
    p.figure.layout.title.text = "changed"
    assert charts.show(p.chart, p.figure) is True
    assert charts.shown(p.chart)["layout"]["title"]["text"] == "changed"
    assert p.chart.layout.min_height == f"{p.figure.layout.height}px"


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
    # what the browser is sent is the whole figure, the same title and traces (charts.show)
    shown = charts.shown(p.chart)
    assert shown is not None and "100% done" in shown["layout"]["title"]["text"]
    assert len(shown["data"]) == len(p.figure.data) and shown["data"][charts.T_DONE]["y"][-1] == 3
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
    assert p.enabled() == {"pause", "stop", "cancel"}
    p.buttons["pause"].click()
    assert p.phase == "paused" and p.enabled() == {"resume", "stop", "cancel"}
    # only the caps stay changeable while a run goes on
    # what the run can change stays editable (the caps, its throttle, its batch size)
    assert {n for n, w in p.controls.items() if not w.disabled} == set(controls.RUN_CONTROLS)
    shown = p.control_labels["incremental"].value
    assert "incremental (locked)" in shown and 'title="locked: the pacing mode' in shown
    p.buttons["resume"].click()
    assert p.phase == "running"
    p.buttons["cancel"].click()  # asks first: nothing happens before the confirmation
    assert p.confirm.layout.display == "flex" and p.phase == "running"
    assert "rolled back" in p.confirm.children[0].value and "KEPT" in p.confirm.children[0].value
    p.confirm_buttons["confirm_cancel"].click()
    assert p.confirm.layout.display == "none"
    assert p.enabled() == frozenset()  # stopping: nothing to press until the run has left
    p.wait(60)
    assert p.phase == "cancelled", p.message.value
    assert p.enabled() == {"execute", "resume_run", "verify"}  # the journal holds the run
    kinds = [e["event"] for e in p.events]
    assert "paused" in kinds and "resumed" in kinds and kinds[-1] == "run_finished"
    assert TP("orders", 0) not in sim.list_reassignments()
    assert sim.current_throttles().is_empty()
    p.buttons["verify"].click()
    assert p.report()["verify_complete"] is False
    assert "NOT complete" in p.message.value


def test_run_error_is_shown_not_silent(tmp_path):
    sim = cluster()
    p = Panel(plan(), sim, output_dir=str(tmp_path), run_kwargs=sim_runs(sim), throttle=-1)
    p.controls["incremental"].value = True  # incremental without a batch size: refused
    p.buttons["execute"].click()
    assert p.phase == "ready" and p.run is None
    assert "--incremental" in p.message.value
    assert p.errors


# ---------------------------------------------------------------- caps changed during a run


def wait_for(cond, what: str, timeout: float = 30.0) -> None:
    """Wait (not a timed assertion: the bound only turns a hang into a failure)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.01)


def kinds_for(p: Panel, event: str) -> list[dict]:
    with p._lock:
        return [e for e in p.events if e["event"] == event]


def test_caps_changed_while_running_take_effect_at_the_next_decision(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))  # holds the only slot of the cluster-wide cap
    p = make_panel(
        sim, tmp_path, batch_size=3, incremental=True, cluster_max_reassignments=1, throttle=10 * MB
    )
    p.buttons["execute"].click()
    wait_for(lambda: kinds_for(p, "submitted"), "the first submission")
    live = {n for n, w in p.controls.items() if not w.disabled}
    assert live == set(controls.RUN_CONTROLS) and p.controls["incremental"].disabled
    time.sleep(0.2)  # several polls: the cap keeps the others waiting
    assert [e["partition"] for e in kinds_for(p, "submitted")] == [0]

    p.controls["cluster_max_reassignments"].value = 3
    assert p.run.caps.cluster_max_reassignments == 3
    wait_for(lambda: len(kinds_for(p, "completed")) == 2, "the other two moves")
    changed = kinds_for(p, "caps_changed")
    assert changed and changed[-1]["caps"]["cluster_max_reassignments"] == 3
    later = [e for e in kinds_for(p, "submitted") if e["ts"] >= changed[-1]["ts"]]
    assert sorted(e["partition"] for e in later) == [1, 2]
    p.refresh()
    assert "cluster-wide cap: no cap" not in p.log_html.value
    assert (
        "cluster-wide cap: 1 -&gt; 3 (takes effect at the next scheduling decision)"
        in p.log_html.value
    )
    assert "caps_changed" in p.log_html.value

    # a value the executor refuses: named, the control put back, the run unchanged
    p.controls["max_moves_per_broker"].value = -2
    assert p.controls["max_moves_per_broker"].value == 0 and p.run.caps.max_moves_per_broker is None
    assert "--max-moves-per-broker" in p.message.value and p.errors
    # removing a cap (0 = no cap) goes through as None
    p.controls["cluster_max_reassignments"].value = 0
    assert p.run.caps.cluster_max_reassignments is None

    sim.stall(TP("orders", 0), False)
    p.wait(60)
    assert p.phase == "done", p.message.value
    assert all(w.disabled for w in p.controls.values())
    assert p.report()["options"]["cluster_max_reassignments"] is None
    changes = p.report()["changes"]
    assert changes[0].startswith("cluster-wide cap: 1 -> 3") and "not changed" in changes[1]


def test_parallel_replica_count_changed_while_running(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))
    p = make_panel(sim, tmp_path, batch_size=1, incremental=True, throttle=10 * MB)
    p.buttons["execute"].click()
    wait_for(lambda: kinds_for(p, "submitted"), "the first submission")
    assert all(e["steps"] == 1 for e in kinds_for(p, "step_submitted"))  # R = 0: whole move
    p.controls["parallel_replica_count"].value = 1
    assert p.run.caps.prefer_leader_moves and p.run.parallel_replica_count == 1
    sim.stall(TP("orders", 0), False)
    p.wait(60)
    assert p.phase == "done", p.message.value
    steps = {(e["partition"], e["steps"]) for e in kinds_for(p, "step_submitted")}
    # moves planned after the change go one replica at a time (3 steps for RF 2 -> 2 new);
    # the move part-way keeps its single step
    assert {s for s in steps if s[0] != 0} == {(1, 3), (2, 3)}
    assert {n for part, n in steps if part == 0} <= {1}
    assert "parallel replicas (steps): whole move at once -&gt; 1" in p.log_html.value


# ---------------------------------------------------------------- resume from the journal


def test_stop_then_resume_from_journal_adopts_the_move_in_flight(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))
    p = make_panel(sim, tmp_path, batch_size=1, throttle=10 * MB)
    assert "resume_run" not in p.enabled()  # no journal yet
    p.buttons["execute"].click()
    wait_for(lambda: kinds_for(p, "submitted"), "the first submission")
    p.buttons["stop"].click()
    p.wait(60)
    assert p.phase == "stopped", p.message.value
    assert p.enabled() == {"resume_run", "verify"}  # a new run would collide with the move
    assert TP("orders", 0) in sim.list_reassignments()  # stop leaves it moving (throttled)
    assert "Resume from journal" in p.message.value
    run_id = p.run.run_id

    sim.stall(TP("orders", 0), False)
    p.buttons["resume_run"].click()
    p.wait(60)
    assert p.phase == "done", p.message.value
    events = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    assert {e["run_id"] for e in events} == {run_id}  # one run, continued
    started = [e for e in events if e["event"] == "run_started"]
    assert [e["resumed"] for e in started] == [False, True]
    assert any(e["event"] == "adopted" and e["partition"] == 0 for e in events)
    assert sum(e["event"] == "submitted" and e["partition"] == 0 for e in events) == 1
    assert p.chart_data().progress.percent_done == 100
    assert sim.current_throttles().is_empty()
    assert "resume_run" not in p.enabled()  # finished: nothing left to resume


def test_a_new_panel_offers_to_resume_a_killed_run(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))
    first = make_panel(sim, tmp_path, batch_size=1, throttle=10 * MB)
    first.buttons["execute"].click()
    wait_for(lambda: kinds_for(first, "submitted"), "the first submission")
    first.buttons["stop"].click()
    first.wait(60)
    sim.stall(TP("orders", 0), False)

    # a restarted kernel: a new panel on the same output folder, with other pacing values
    again = make_panel(sim, tmp_path, batch_size=3, throttle=-1)
    assert again.phase == "ready" and again.enabled() == {"execute", "resume_run", "verify"}
    assert "unfinished run" in again.message.value
    again.buttons["resume_run"].click()
    assert again.controls["batch_size"].value == 1  # the journaled run's own options
    again.wait(60)
    assert again.phase == "done", again.message.value
    assert "resuming run" in again.log_html.value


def test_cancel_then_resume_or_start_anew(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))
    p = make_panel(sim, tmp_path, batch_size=1, throttle=10 * MB)
    p.buttons["execute"].click()
    wait_for(lambda: kinds_for(p, "submitted"), "the first submission")
    p.buttons["cancel"].click()
    p.confirm_buttons["confirm_cancel"].click()
    p.wait(60)
    assert p.phase == "cancelled" and p.enabled() == {"execute", "resume_run", "verify"}
    old_id = p.run.run_id
    sim.stall(TP("orders", 0), False)
    # Execute starts a new run: the old journal is set aside, journal.jsonl holds the new one
    p.buttons["execute"].click()
    p.wait(60)
    assert p.phase == "done", p.message.value
    aside = tmp_path / f"journal-{old_id}.jsonl"
    assert aside.exists() and p.artefacts["previous_journal"] == str(aside)
    ids = {
        json.loads(line)["run_id"] for line in (tmp_path / "journal.jsonl").read_text().splitlines()
    }
    assert len(ids) == 1 and old_id not in ids


def test_resume_refused_for_another_plan(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))
    p = make_panel(sim, tmp_path, batch_size=1, throttle=10 * MB)
    p.buttons["execute"].click()
    wait_for(lambda: kinds_for(p, "submitted"), "the first submission")
    p.buttons["stop"].click()
    p.wait(60)
    other = Panel(
        Plan.of([Move(TP("orders", 3), (1, 2))]),
        sim,
        output_dir=str(tmp_path),
        run_kwargs=sim_runs(sim),
        verify_fn=sim_verify,
    )
    assert "resume_run" not in other.enabled()
    other.buttons["resume_run"].click()  # the handler refuses too
    assert other.run is None


# ---------------------------------------------------------------- one preflight


def test_execute_twice_keeps_the_first_rollback_file(tmp_path):
    """Execute, Cancel after one move completed, Execute again: rollback.json still holds the
    assignment from before anything moved; the second run's rollback is written beside it."""
    sim = cluster()
    sim.stall(TP("orders", 1))  # orders-0 completes, orders-1 stays in flight until cancelled
    p = make_panel(sim, tmp_path, batch_size=1, throttle=10 * MB)
    p.buttons["execute"].click()
    first = (tmp_path / "rollback.json").read_bytes()
    wait_for(lambda: kinds_for(p, "completed"), "the first move to complete")
    wait_for(lambda: len(kinds_for(p, "submitted")) == 2, "the stalled move's submission")
    p.buttons["cancel"].click()
    p.confirm_buttons["confirm_cancel"].click()
    p.wait(60)
    assert p.phase == "cancelled", p.message.value
    assert sim.describe_partitions([TP("orders", 0)])[TP("orders", 0)].replicas == (2, 3)

    p.buttons["execute"].click()
    wait_for(lambda: kinds_for(p, "run_started"), "the second run")
    assert (tmp_path / "rollback.json").read_bytes() == first
    assert json.loads(first)["partitions"][0]["replicas"] == [0, 1]
    second = json.loads((tmp_path / "rollback-2.json").read_text())
    assert second["partitions"][0]["replicas"] == [2, 3]
    assert p.artefacts["rollback"] == str(tmp_path / "rollback.json")
    p.buttons["cancel"].click()
    p.confirm_buttons["confirm_cancel"].click()
    p.wait(60)


def test_others_moves_refused_with_the_preflight_message_and_nothing_changed(tmp_path):
    """Someone else's reassignment of a plan partition in flight, "additional" off: Execute
    is refused before any Run exists, with the CLI's message (exit code 6 error)."""
    from reassign_kit.cluster.views import refuse_in_flight
    from reassign_kit.errors import ReassignmentInProgressError

    sim = cluster()
    sim.stall(TP("orders", 2))
    sim.alter_reassignments({TP("orders", 2): (0, 1)})  # not ours
    p = make_panel(sim, tmp_path, batch_size=1, throttle=10 * MB)
    calls = dict(sim.calls)
    p.buttons["execute"].click()
    with pytest.raises(ReassignmentInProgressError) as cli:
        refuse_in_flight(sim.list_reassignments(), additional=False)
    assert cli.value.exit_code == 6
    assert p.run is None and p.phase == "ready"
    assert p.errors == [str(cli.value)]
    assert {k: v for k, v in sim.calls.items() if v != calls.get(k)}.keys() <= {
        "brokers",
        "topic_partition_counts",
        "describe_partitions",
        "list_reassignments",
    }
    assert not (tmp_path / "rollback.json").exists()


def test_notebook_02_timeout_cancels_before_failing(tmp_path):
    """Notebook 02's headless cell, past ``timeout_s``, presses Cancel and
    fails only once the cancel has happened (the kernel stops right after the failure)."""
    import pathlib

    nb = json.loads(
        (pathlib.Path(__file__).parents[2] / "notebooks" / "02_execute.ipynb").read_text()
    )
    cell = next(
        "".join(c["source"])
        for c in nb["cells"]
        if c["cell_type"] == "code" and "if auto_execute:" in "".join(c["source"])
    )
    sim = cluster()
    sim.stall(TP("orders", 0))

    def slow_sleep(dt: float) -> None:  # the worker notices a click only at its next poll
        sim.sleep(dt)
        time.sleep(0.05)

    p = Panel(
        plan(),
        sim,
        output_dir=str(tmp_path),
        refresh_s=0.02,
        verify_fn=sim_verify,
        run_kwargs={"clock": sim.now, "sleep": slow_sleep},
        batch_size=1,
        throttle=10 * MB,
    )
    ns = {"p": p, "json": json, "auto_execute": True, "resume": False, "timeout_s": 0.3}
    with pytest.raises(TimeoutError, match="did not finish"):
        exec(cell, ns)  # noqa: S102 - the notebook's own cell
    assert p.result is not None and p.phase == "cancelled"  # done before the failure
    assert TP("orders", 0) not in sim.list_reassignments()


def test_cancel_rolls_stepped_moves_back_to_their_original_replicas(tmp_path):
    """The panel's Cancel is a rollback. Pressed after a KIP-435 step completed,
    every move — between steps or with a step in flight — is back at its original list, in
    order (before: the moves between steps kept (2, 0, 1)-like intermediate sets)."""
    sim = cluster()
    before = sim.assignment()
    p = make_panel(sim, tmp_path, parallel_replica_count=1, throttle=1 * MB)
    p.buttons["execute"].click()
    for _ in range(3000):  # bounded: the worker runs on model time
        with p._lock:
            if any(e["event"] == "step_completed" for e in p.events):
                break
        time.sleep(0.01)
    p.buttons["cancel"].click()
    p.confirm_buttons["confirm_cancel"].click()
    p.wait(60)
    assert p.phase == "cancelled", p.message.value
    assert not sim.list_reassignments() and sim.current_throttles().is_empty()
    assert {tp: sim.assignment()[tp] for tp in before} == before
    assert len(p.result.cancelled) == 3 and "rolled back to their original" in p.message.value
    assert any(e["event"] == "rolling_back" for e in p.events)
