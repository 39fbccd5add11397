"""The run's range holds the finish as often as it claims (in bench_eta
the spread 3->3 on an idle machine held it in 67% of samples). The share of the throttle was
measured so evenly that its 10th-90th percentiles met and the range shrank to its floors
(+8%, a poll and a fetch), while the paced ETA moved a few percent from sample to sample: the
finish lay above the range. The range now holds every finish the run estimated over the last
few seconds (``eta_pace.Finishes``). On the simulator, in model time; "held" is bench_eta's:
the range holds the time really left, no slack."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest
from test_eta_pace import RATE, raise_then_lower, run

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.eta.pace import MIXED_S, Finishes
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

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


def test_after_a_throttle_change_the_range_reaches_toward_the_old_finish_less_each_second():
    """Kafka's quota averages 11 one-second windows: right after a change the brokers move at
    a mix of the old and new rates, the old one's part falling by a window a second. The
    range reaches toward the last finish estimated at the old throttle by that part (all of
    the way at the change, none of it 11 s later), on whichever side it lies."""
    f = Finishes()
    f.widen(9.0, 30.0, 27.0, 33.0)  # at the old throttle: finish at 39
    f.widen(10.0, 29.0, 26.0, 32.0)  # finish at 39, the last one before the change
    f.restart(10.0)
    highs = []
    for ts in (11.0, 13.0, 16.0, 19.0, 19.9):
        eta = 21.0 - ts  # the new throttle says: finish at 21
        low, high = f.widen(ts, eta, eta - 1, eta + 1)
        part = 1 - (ts - 10.0) / MIXED_S
        assert low == eta - 1 and high == pytest.approx(eta + (39.0 - 21.0) * part)
        highs.append(ts + high)
    assert highs == sorted(highs, reverse=True) and highs[0] > 35.0
    assert f.widen(21.5, 1.0, 0.5, 1.5)[1] == 1.5  # the windows hold the new rate only
    g = Finishes()  # lowered: the old finish lies below, the low end reaches toward it
    g.widen(10.0, 10.0, 9.0, 11.0)
    g.restart(10.0)
    low, high = g.widen(11.0, 30.0, 27.0, 33.0)
    assert high == 33.0 and low == pytest.approx(30.0 + (20.0 - 11.0 - 30.0) * (10 / 11))
    h = Finishes()  # a change before any estimate: nothing to reach toward
    h.restart(float("-inf"))
    assert h.widen(1.0, 10.0, 9.0, 11.0) == (9.0, 11.0)


def test_throttle_raised_then_lowered_the_range_holds_the_finish_between_the_changes():
    """bench_eta's throttle x2 at 30% of the bytes and back (there at 60%, here at 75%: the
    simulated raise's burst crossed 60% by the next sample) (bench_eta:
    held 76%, its misses the samples before or between the two changes).
    Between them the run said 8-10 s left at the doubled throttle, range up to 12 s, where the
    run, lowered again, took 20-22 s. The operator's second change cannot be foreseen, but
    until the quota's windows hold only the new rate, the range now spans toward the finish
    at the old one, and the truth, a mix of both, lies inside."""
    # 60% came at the first sample after the raise's burst here
    samples, end, changed_at = raise_then_lower([(0.30, 2), (0.75, 1)])
    between = [e for e in samples if changed_at[0] < e["ts"] < changed_at[1]]
    assert len(between) >= 2, changed_at
    misses = [
        (e["ts"], end - e["ts"], e["eta_range_s"])
        for e in between
        if not e["eta_range_s"][0] <= end - e["ts"] <= e["eta_range_s"][1]
    ]
    assert not misses, misses


def test_a_cluster_slower_than_the_throttle_is_inside_the_range_before_its_pace_is_measured(
    tmp_path,
):
    """The targets take in 0.7 of the throttle. The ETA runs at the throttle until the run's
    pace is measured; the share measured (0.7) must set the range meanwhile: the copying at
    1 / share of its time. Scaled by the share over its own mean, as before, the range sat
    around the throttle's ETA and the truth lay above it."""
    sim = SimCluster(4, bandwidth=0.7 * 2 * MB, tick=0.25)
    sim.add_topic("a", [[0], [1]], 60 * MB)
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (3,))])
    opts = replace(
        ExecuteOptions(batch_size=2, incremental=True, throttle=2 * MB, wait=True),
        sample_interval=1.0,
    )
    samples: list[dict] = []
    r = Run(sim, plan, opts, None, clock=sim.now, sleep=sim.sleep)
    r.subscribe(lambda e: samples.append(e) if e["event"] == "sample" else None)
    assert r.run().state == "done"
    end = sim.now()
    unpaced = [e for e in samples if e["throttle_share"] is not None and e["run_pace"] is None]
    assert len(unpaced) >= 3, [(e["ts"], e["throttle_share"], e["run_pace"]) for e in samples]
    assert all(e["throttle_share"] < 0.85 for e in unpaced)
    missed = [
        (round(e["ts"], 1), e["eta_range_s"], round(end - e["ts"], 1))
        for e in unpaced
        if not e["eta_range_s"][0] <= end - e["ts"] <= e["eta_range_s"][1]
    ]
    assert not missed, missed
