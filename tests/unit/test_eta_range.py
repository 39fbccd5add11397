"""The run's range holds the finish as often as it claims (issue 21, bench_eta follow-up 4:
the spread 3->3 on an idle machine held it in 67% of samples). The share of the throttle was
measured so evenly that its 10th-90th percentiles met and the range shrank to its floors
(+8%, a poll and a fetch), while the paced ETA moved a few percent from sample to sample: the
finish lay above the range. The range now holds every finish the run estimated over the last
few seconds (``eta_pace.Finishes``). On the simulator, in model time; "held" is bench_eta's:
the range holds the time really left, no slack."""

from __future__ import annotations

import statistics

from test_eta_pace import RATE, run

from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.simulate import MB, SimCluster

TP = TopicPartition
SPREAD = [15.0, 5.0, 10.0, 15.0, 5.0, 10.0, 15.0, 5.0, 10.0]  # s at the throttle


def held_and_width(samples: list[dict], end: float) -> tuple[float, float, float]:
    """(share of samples from 25% of the bytes whose range held the time left, mean width of
    the range over the time left, median error of the ETA)."""
    late = [e for e in samples if 1 - e["bytes_left"] / e["bytes_total"] >= 0.25 and end > e["ts"]]
    assert len(late) >= 20, late
    held = [e["eta_range_s"][0] <= end - e["ts"] <= e["eta_range_s"][1] for e in late]
    width = [(e["eta_range_s"][1] - e["eta_range_s"][0]) / (end - e["ts"]) for e in late]
    errs = [abs(e["eta_s"] - (end - e["ts"])) / (end - e["ts"]) for e in late]
    return sum(held) / len(held), statistics.mean(width), statistics.median(errs)


def test_spread_with_targets_whose_intake_wanders_the_range_holds_the_finish():
    """bench_eta's spread 3->3 (incremental, 3 at a time) under Kafka's windowed quota with
    the sandbox's overheads and 1 MiB fetches, each target taking in 0.8 of the throttle for
    4 s, then all of it (the idle sandbox's pace read 0.86-0.95). Before, the range held the
    finish in 78% of samples (median error 7%); now 90%, its mean width about the time left
    (0.97 -> 1.01 of it)."""
    sim = SimCluster(7, bandwidth=50 * MB, tick=0.1)
    sim.finish_s, sim.call_s = 1.5, 0.5
    sim.quota_windows = 11
    sim.fetch_bytes = MB
    sim.add_topic("s", [[1 + p % 3] for p in range(9)], [int(s * RATE) for s in SPREAD])
    plan = Plan.of(Move(TP("s", p), (4 + p % 3,)) for p in range(9))
    sleep = sim.sleep

    def wandering(dt: float) -> None:
        sleep(dt)
        k = int(sim.now() // 4)
        sim.quota_factor = {4 + (k + i) % 3: 0.8 if (k + i) % 2 else 1.0 for i in range(3)}

    sim.sleep = wandering
    samples, end = run(sim, plan, batch_size=3)
    held, width, med = held_and_width(samples, end)
    assert held >= 0.85 and width <= 1.2 and med <= 0.10, (held, width, med)
