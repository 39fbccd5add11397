"""KAFKA-13392 (issue 14 #14), on the simulator: a broker that is down in a partition's
current replica set must not stop the move. Its configs cannot be read or written (the
request goes to that broker), so the run skips it with a warning, moves the partition onto
its live targets, and leaves no throttle that a live broker does not need."""

from __future__ import annotations

from reassign_kit.engine.journal import read_events
from reassign_kit.engine.run import ExecuteOptions, Run
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.simulate import MB, SimCluster

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
