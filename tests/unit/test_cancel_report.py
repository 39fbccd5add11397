"""The status says only what holds in the run's state; a cancel reports where each
partition ended (outcome.cancel_report: the panel, --cancel and the API), matching the cluster;
the throttle is live in the panel through Run.set_throttle. On the simulator (SimCluster, the
Gateway protocol) with the real Run."""

from __future__ import annotations

import time

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, PartitionState, Plan, TopicPartition
from reassign_kit.operations.outcome import (
    ELSEWHERE,
    KEPT,
    NEVER_STARTED,
    ROLLED_BACK,
    ROLLING_BACK,
    cancel_report,
    partition_outcomes,
    plan_from_events,
)
from reassign_kit.ui import status
from reassign_kit.ui.panel import Panel

TP = TopicPartition


def wait_for(pred, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def sim_runs(sim: SimCluster) -> dict:
    def sleep(dt: float) -> None:
        sim.sleep(dt)
        time.sleep(0.01)

    return {"clock": sim.now, "sleep": sleep}


# ---------------------------------------------------------------- the pure parts


def test_each_outcome_from_the_cluster_state():
    plan = Plan.of(
        [
            Move(TP("t", 0), (2, 3)),  # at its target, led by 3: kept, election owed
            Move(TP("t", 1), (3, 0)),  # back at its original after being sent: rolled back
            Move(TP("t", 2), (0, 1)),  # at its original, never sent: never started
            Move(TP("t", 3), (1, 2)),  # still reassigning: rolling back
            Move(TP("t", 4), (2, 0)),  # neither: elsewhere
            Move(TP("t", 5), (3, 1)),  # at its target led by its first replica
        ]
    )
    orig = {TP("t", p): (p % 4, (p + 1) % 4) for p in range(6)}
    states = {
        TP("t", 0): PartitionState(TP("t", 0), (2, 3), (2, 3), 3),
        TP("t", 1): PartitionState(TP("t", 1), (1, 2), (1, 2), 1),
        TP("t", 2): PartitionState(TP("t", 2), (2, 3), (2, 3), 2),
        TP("t", 3): PartitionState(TP("t", 3), (3, 0, 1, 2), (3, 0), 3, (1, 2), (3, 0)),
        TP("t", 4): PartitionState(TP("t", 4), (0, 3), (0, 3), 0),
        TP("t", 5): PartitionState(TP("t", 5), (3, 1), (3, 1), 3),
    }
    sent = {TP("t", p) for p in (0, 1, 3, 4, 5)}
    rep = partition_outcomes(plan, orig, states, sent)
    got = {str(r.tp): (r.outcome, r.leader, r.election) for r in rep.rows}
    assert got == {
        "t-0": (KEPT, 3, "owed"),
        "t-1": (ROLLED_BACK, 1, ""),
        "t-2": (NEVER_STARTED, 2, ""),
        "t-3": (ROLLING_BACK, 3, ""),
        "t-4": (ELSEWHERE, 0, ""),
        "t-5": (KEPT, 3, "not needed"),
    }
    assert rep.owed == [TP("t", 0)]
    text = "\n".join(rep.lines())
    assert "t-0: kept at target, replicas [2, 3], leader 3; election owed" in text
    assert "elections owed" in text and rep.to_json_obj()["counts"][KEPT] == 2


def test_the_status_line_says_only_what_holds_in_each_state():
    sample = {
        "event": "sample",
        "ts": 10.0,
        "bytes_total": 100 * MB,
        "bytes_left": 65 * MB,
        "rate_bps": MB,
        "eta_s": 52.0,
        "eta": "0m52s",
    }
    evs = [{"event": "run_started", "ts": 0.0}, sample]
    running = status.status_of("running", evs, 100 * MB, 4, now=12.0)
    assert running.line.startswith("running: 35%") and "ETA 0m52s" in running.line
    assert "35% done" in running.header  # one percentage: bytes, header and line alike
    paused = status.status_of("paused", evs, 100 * MB, 4, now=12.0)
    assert paused.line.startswith("paused at 35%") and "ETA" not in paused.line
    cancelling = status.status_of("cancelling", evs, 100 * MB, 4, now=12.0)
    assert "ETA" not in cancelling.line
    done_evs = [*evs, {"event": "run_finished", "ts": 62.0, "state": "done"}]
    done = status.status_of("done", done_evs, 100 * MB, 4, now=99.0)
    assert done.line.startswith("done in 1m02s") and "ETA" not in done.line
    assert "100% done" in done.header
    cancelled = status.status_of("cancelled", done_evs, 100 * MB, 4, now=99.0)
    assert cancelled.line.startswith("cancelled at 35% after 1m02s") and "ETA" not in cancelled.line
    ready = status.status_of("ready", [], 100 * MB, 4, now=0.0)
    assert ready.line == "not started: 100.0 MiB to copy in 4 moves"


def test_the_lifecycle_of_a_finished_run_comes_from_its_result():
    class Finished:
        def __init__(self, state):
            self.state = state

        def wait(self, _timeout=None):
            return self

    assert status.run_lifecycle(Finished("done")) == "done"
    assert status.run_lifecycle(Finished("stopped"), asked="cancel") == "cancelled"
    assert status.run_lifecycle(Finished("cancelled")) == "cancelled"
    assert status.run_lifecycle(Finished("failed")) == "failed"


# ---------------------------------------------------------------- the panel on the simulator


def cluster() -> SimCluster:
    sim = SimCluster(4, bandwidth=20 * MB, tick=0.1)
    sim.add_topic("orders", [[0, 1], [1, 2], [2, 3], [3, 0]], 10 * MB)
    return sim


def test_the_panels_cancel_reports_each_partition_as_the_cluster_holds_it(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 1))  # in flight at the cancel: rolled back
    plan = Plan.of([Move(TP("orders", p), ((p + 2) % 4, (p + 3) % 4)) for p in range(4)])
    before = {
        tp: tuple(st.replicas) for tp, st in sim.describe_partitions([m.tp for m in plan]).items()
    }
    p = Panel(
        plan,
        sim,
        output_dir=str(tmp_path),
        refresh_s=0.02,
        run_kwargs=sim_runs(sim),
        batch_size=2,
        incremental=True,
        throttle=10 * MB,
    )
    p.buttons["execute"].click()
    wait_for(
        lambda: any(e["event"] == "completed" for e in list(p.events)), "a first move complete"
    )
    p.buttons["cancel"].click()
    assert p.confirm.layout.display == "flex" and p.run.wait(0) is None  # nothing yet
    p.confirm_buttons["confirm_cancel"].click()
    p.wait(60)
    assert p.phase == "cancelled", p.message.value
    assert p.outcome is not None and "after the cancel" in p.outcome_html.value
    now = sim.describe_partitions([m.tp for m in plan])
    sent = {(e["topic"], e["partition"]) for e in p.events if e["event"] == "submitted"}
    for r in p.outcome.rows:
        st = now[r.tp]
        assert (r.replicas, r.leader) == (tuple(st.replicas), st.leader), r
        if r.outcome == KEPT:
            assert tuple(st.replicas) == plan.by_tp()[r.tp].replicas
            # "elect preferred leaders" is on: the election a kept move owes is carried out
            assert st.leader == st.replicas[0] and r.election in ("carried out", "not needed")
        elif r.outcome == ROLLED_BACK:
            assert tuple(st.replicas) == before[r.tp]
        else:
            assert r.outcome == NEVER_STARTED and (r.tp.topic, r.tp.partition) not in sent
    outcomes = {r.outcome for r in p.outcome.rows}
    assert KEPT in outcomes and ROLLED_BACK in outcomes, p.outcome.lines()
    assert p.report()["cancel"]["counts"] == p.outcome.counts()
    line = p.current_status().line
    assert line.startswith("cancelled at ") and "ETA" not in line


def test_the_throttle_changes_mid_run_through_run_set_throttle(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))  # keeps the run going
    plan = Plan.of([Move(TP("orders", 0), (2, 3)), Move(TP("orders", 1), (3, 0))])
    p = Panel(
        plan,
        sim,
        output_dir=str(tmp_path),
        refresh_s=0.02,
        run_kwargs=sim_runs(sim),
        batch_size=1,
        incremental=True,
        throttle=2 * MB,
    )
    assert p.controls["throttle"].value == 2.0  # MiB/s, said in the label
    assert "MiB/s, 0 = no throttle" in p.control_labels["throttle"].value
    p.buttons["execute"].click()
    wait_for(lambda: sim.current_throttles().broker_rates, "the first throttle")
    assert not p.controls["throttle"].disabled
    p.controls["throttle"].value = 3.0
    # the run's listeners hear a control's event from the loop's thread, at its next turn
    wait_for(
        lambda: [e["rate"] for e in p.events if e["event"] == "throttle_changed"] == [3 * MB],
        "the panel to hear the throttle change",
    )
    wait_for(
        lambda: set(sim.current_throttles().broker_rates.values()) == {3 * MB},
        "the brokers at the new rate",
    )
    assert "throttle: 2 MiB/s -> 3 MiB/s" in "\n".join(p.report()["changes"])
    # removing a run's throttle mid-run is refused by name, the control put back
    p.controls["throttle"].value = 0.0
    assert p.controls["throttle"].value == 3.0 and "cannot be removed" in p.message.value
    p.cancel()
    p.wait(60)
    assert sim.current_throttles().is_empty()


def test_a_run_without_a_throttle_shows_the_throttle_locked_with_the_reason(tmp_path):
    sim = cluster()
    sim.stall(TP("orders", 0))
    plan = Plan.of([Move(TP("orders", 0), (2, 3))])
    p = Panel(plan, sim, output_dir=str(tmp_path), refresh_s=0.02, run_kwargs=sim_runs(sim))
    p.buttons["execute"].click()
    w = p.controls["throttle"]
    shown = p.control_labels["throttle"].value
    assert w.disabled and "(locked)" in shown and 'title="locked: this run started without' in shown
    p.cancel()
    p.wait(60)


def test_the_journal_alone_names_the_plan_for_a_cancel_report():
    evs = [
        {"event": "submitted", "topic": "t", "partition": 0, "target": [2, 3], "current": [0, 1]},
        {"event": "step_submitted", "topic": "t", "partition": 0, "target": [0, 1, 2]},
        {"event": "submitted", "topic": "t", "partition": 1, "target": [3, 0], "current": [1, 2]},
    ]
    plan = plan_from_events(evs)
    assert plan is not None and [(m.tp, m.replicas) for m in plan] == [
        (TP("t", 0), (2, 3)),
        (TP("t", 1), (3, 0)),
    ]
    assert plan_from_events([]) is None
    sim = SimCluster(4, bandwidth=20 * MB, tick=0.1)
    sim.add_topic("t", [[0, 1], [1, 2]], MB)
    rep = cancel_report(sim, plan, evs)
    assert [r.outcome for r in rep.rows] == [ROLLED_BACK, ROLLED_BACK]
