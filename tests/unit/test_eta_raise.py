"""The ETA after a throttle raise: the quota's windows hold only bytes moved under the new
limit one quota span after it, so the run's pace is measured again from then (a lowering
waits out its stall too). Before, the ETA read the model at the new throttle for 44 s,
short by the share the cluster does not reach (the simulator's fit seeds with a raise:
-11% signed from 25% of the bytes)."""

from __future__ import annotations

import statistics
from dataclasses import replace

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TP = TopicPartition


def test_the_pace_is_measured_again_a_quota_span_after_a_raise(tmp_path):
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    # the receiving brokers take in 1.4 MiB/s at most: the throttle binds until it is raised
    # to 2 MiB/s, then they copy at 0.7 of it
    sim.broker_bandwidth = {2: int(1.4 * MB), 3: int(1.4 * MB)}
    sim.add_topic("a", [[0], [1]], 60 * MB)
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (3,))])
    opts = replace(
        ExecuteOptions(batch_size=2, incremental=True, throttle=MB, wait=True),
        sample_interval=1.0,
    )
    run = Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep)
    raised: list[float] = []
    samples: list[dict] = []

    def on(e: dict) -> None:
        if e["event"] != "sample":
            return
        samples.append(e)
        if not raised and sim.now() >= 10:
            run.set_throttle(2 * MB)
            raised.append(e["ts"])

    run.subscribe(on)
    assert run.run().state == "done"
    end = sim.now()
    # from one span and the pace's shortest measurement after the raise, to the last 5 s
    late = [e for e in samples if raised[0] + 22 <= e["ts"] <= end - 5]
    assert len(late) >= 8, len(late)
    assert all(e["run_pace"] is not None for e in late)
    errs = [abs(e["eta_s"] - (end - e["ts"])) / (end - e["ts"]) for e in late]
    assert statistics.median(errs) < 0.10, errs
