"""The run's deadline is journaled once: with ``--on-deadline wait`` the run goes on, and each
later poll used to write another identical ``deadline`` event."""

from __future__ import annotations

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run


def test_a_passed_run_deadline_is_journaled_once_while_the_run_waits(tmp_path):
    sim = SimCluster(3, bandwidth=20 * MB)
    sim.add_topic("a", [[0], [1]], 8 * MB)
    tp = TopicPartition("a", 0)
    sim.stall(tp)
    plan = Plan.of([Move(tp, (2,)), Move(TopicPartition("a", 1), (2,))])
    opts = ExecuteOptions(batch_size=2, wait=True, throttle=MB, run_deadline=5, on_deadline="wait")
    journal = tmp_path / "run.jsonl"
    run = Run(sim, plan, opts, str(journal), clock=sim.now, sleep=sim.sleep)

    def on_event(e):
        if sim.now() > 60:  # well past the deadline: the stalled move is let go
            sim.stall(tp, False)

    run.subscribe(on_event)
    run.run()
    ev = read_events(journal)
    assert [e["event"] for e in ev].count("run_finished") == 1
    assert [e for e in ev if e["event"] == "deadline" and e.get("scope") == "run"] != []
    assert len([e for e in ev if e["event"] == "deadline"]) == 1, [
        e for e in ev if e["event"] == "deadline"
    ]
