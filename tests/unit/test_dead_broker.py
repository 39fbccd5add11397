"""KAFKA-13392, on the simulator: a broker that is down in a partition's
current replica set must not stop the move. Its configs cannot be read or written (the
request goes to that broker), so the run skips it with a warning, moves the partition onto
its live targets, and leaves no throttle that a live broker does not need."""

from __future__ import annotations

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TP = TopicPartition


def test_a_down_source_broker_does_not_stop_the_move(tmp_path):
    sim = SimCluster(4, bandwidth=20 * MB)
    sim.add_topic("a", [[0, 1], [1, 0]], 2 * MB)
    sim.down.add(0)  # stopped: a source of both partitions
    for sp in sim.partitions.values():
        sp.isr = [b for b in sp.isr if b != 0]
        sp.leader = 1
    plan = Plan.of([Move(TP("a", 0), (2, 3)), Move(TP("a", 1), (3, 2))])
    journal = tmp_path / "run.jsonl"
    opts = ExecuteOptions(batch_size=2, wait=True, throttle=5 * MB, run_deadline=600)
    res = Run(sim, plan, opts, str(journal), clock=sim.now, sleep=sim.sleep).run()
    assert res.state == "done", res
    assert sim.assignment()[TP("a", 0)] == (2, 3) and sim.assignment()[TP("a", 1)] == (3, 2)
    warnings = [e["message"] for e in read_events(journal) if e["event"] == "warning"]
    assert any("broker 0" in w and "cannot be reached" in w for w in warnings), warnings
    assert sim.current_throttles().is_empty()


def _run_with_broker_down_at_the_end(tmp_path, back_after: float | None):
    """A throttled run; broker 0 (a source) goes down as the last move completes, and comes
    back ``back_after`` model seconds later (or never)."""
    sim = SimCluster(4, bandwidth=20 * MB)
    sim.add_topic("a", [[0, 1], [1, 0]], 2 * MB)
    plan = Plan.of([Move(TP("a", 0), (2, 3)), Move(TP("a", 1), (3, 2))])
    opts = ExecuteOptions(batch_size=2, wait=True, throttle=5 * MB)
    run = Run(sim, plan, opts, str(tmp_path / "run.jsonl"), clock=sim.now, sleep=sim.sleep)
    done = []
    real_sleep = sim.sleep
    down_at: list[float] = []

    def on_event(ev):
        if ev["event"] == "completed":
            done.append(ev)
            if len(done) == len(plan):
                sim.down.add(0)
                down_at.append(sim.now())

    def sleep(seconds):
        real_sleep(seconds)
        if back_after is not None and down_at and sim.now() - down_at[0] >= back_after:
            sim.down.discard(0)

    sim.sleep = sleep
    run.subscribe(on_event)
    return sim, run.run()


def test_a_broker_back_moments_after_the_end_is_cleaned_up(tmp_path):
    """The final cleanup asks a broker that did not answer again for a bounded time: it was
    reported 'not reachable' with exit 0 and its throttle left, although it came back
    seconds later (chaos: source broker killed and restarted)."""
    sim, res = _run_with_broker_down_at_the_end(tmp_path, back_after=10)
    assert res.state == "done" and res.cleanup_error is None, res
    assert sim.current_throttles().is_empty(), sim.current_throttles()


def test_a_broker_still_down_at_the_end_is_a_cleanup_failure(tmp_path):
    """Never back: the run says so as a cleanup failure (exit 8), naming the broker and the
    command that removes the throttles, instead of 'no throttle left' and exit 0."""
    sim, res = _run_with_broker_down_at_the_end(tmp_path, back_after=None)
    assert res.cleanup_error is not None and "broker(s) 0" in res.cleanup_error
    assert "throttles --clean" in res.cleanup_error
    assert res.exit_code == 8
