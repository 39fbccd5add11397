"""The paced run's own ETA (``progress.InboundEta`` in ``Run``'s samples), on the
simulator in model time: a broker queued behind a cap is not "stalled", the caps bound the
pace when one move at a time copies, a broker's rate counts the time it was busy only, a
throttle change starts a new window, and ``progress`` on the run's journal measures the very
same rates (``with_run_eta``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.eta.estimate import RunEta
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.watch.build import plan_eta
from reassign_kit.watch.from_journal import rates_from_events
from reassign_kit.watch.progress import progress
from reassign_kit.watch.report import BrokerRow

TP = TopicPartition


def row(broker: int, left: int, rate: float | None, behind: int) -> BrokerRow:
    return BrokerRow(broker, 0, 0, behind, 0, 0, left, rate)


def test_a_queued_broker_is_counted_at_the_throttle_not_called_stalled():
    """Broker 4 has bytes to come in but no move in flight (a cap holds its moves back): it
    took in nothing in the window, yet it is not stalled. Before, any broker at rate 0 made
    the ETA 'unknown'."""
    brokers = [row(3, 10 * MB, 1 * MB, behind=1), row(4, 20 * MB, 0.0, behind=0)]
    eta, why = plan_eta(30 * MB, 1 * MB, brokers, True, cap=2 * MB)
    # the plan's rate (1 MiB/s: one move at a time) sets the pace: 30 s, not 20 MiB / 2 MiB/s
    assert eta == pytest.approx(30) and why == "at the run's rate"
    eta, why = plan_eta(30 * MB, 4 * MB, brokers, True, cap=1 * MB)
    assert eta == pytest.approx(20) and why == "bound by broker 4"  # at the throttle
    stalled = [row(3, 10 * MB, 0.0, behind=1), row(4, 20 * MB, 1 * MB, behind=1)]
    eta, why = plan_eta(30 * MB, 1 * MB, stalled, True)
    assert eta is None and why == "broker(s) 3 took in nothing in the window"


def test_rates_count_the_seconds_a_broker_was_busy():
    """Broker 4 idled 10 s (queued), then took in 1 MiB/s for 10 s: its rate is 1 MiB/s, not
    the 0.5 MiB/s of its bytes over the whole window."""
    eta = RunEta(window_s=60)
    eta.update(0.0, {3: 0, 4: 0}, {3: 10 * MB, 4: 20 * MB}, {3: 1})
    eta.update(10.0, {3: 10 * MB, 4: 0}, {3: 0, 4: 20 * MB}, {4: 1})
    _, _, rates = eta.update(20.0, {3: 10 * MB, 4: 10 * MB}, {3: 0, 4: 10 * MB}, {4: 1})
    assert rates[4] == pytest.approx(1 * MB)
    assert rates[3] == pytest.approx(1 * MB)  # its 10 busy seconds, not 20


def run_with_samples(sim: SimCluster, plan: Plan, opts: ExecuteOptions, tmp_path, on=None):
    samples: list[dict] = []
    j = str(tmp_path / "j.jsonl")
    run = Run(sim, plan, opts, j, clock=sim.now, sleep=sim.sleep)

    def keep(e):
        if e["event"] == "sample":
            samples.append(e)
            if on is not None:
                on(run, e)

    run.subscribe(keep)
    assert run.run().state == "done"
    return samples, sim.now()


def moved(e: dict) -> float:
    return 1 - e["bytes_left"] / e["bytes_total"]


def errors_from(samples: list[dict], end: float, marks=(0.25, 0.5, 0.75)) -> list[float]:
    out = []
    for m in marks:
        e = next(e for e in samples if moved(e) >= m)
        out.append(abs(e["eta_s"] - (end - e["ts"])) / (end - e["ts"]))
    return out


def test_one_move_at_a_time_the_eta_follows_the_cap_not_the_idle_broker(tmp_path):
    """Six moves, one at a time, alternating between brokers 2 and 3: at any moment one of
    them is queued. The ETA (the samples' eta_s) stays within 10% of the real time left."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[p % 2] for p in range(6)], 8 * MB)
    plan = Plan.of(Move(TP("a", p), (2 + p % 2,)) for p in range(6))
    opts = ExecuteOptions(batch_size=1, incremental=True, throttle=MB, wait=True)
    opts = replace(opts, sample_interval=1.0)
    samples, end = run_with_samples(sim, plan, opts, tmp_path)
    assert all(e["eta_s"] is not None for e in samples[1:])
    assert max(errors_from(samples, end)) < 0.10


def test_steps_the_second_broker_waits_its_turn(tmp_path):
    """KIP-435 steps R=1 from (0,1) to (2,3): broker 3 receives only once broker 2 has. The
    ETA is a number (not 'stalled') and close to the truth throughout."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[0, 1]] * 4, 4 * MB)
    plan = Plan.of(Move(TP("a", p), (2, 3)) for p in range(4))
    opts = ExecuteOptions(
        batch_size=2, incremental=True, throttle=MB, wait=True, parallel_replica_count=1
    )
    opts = replace(opts, sample_interval=1.0)
    samples, end = run_with_samples(sim, plan, opts, tmp_path)
    assert all(e["eta_s"] is not None for e in samples[1:])
    assert max(errors_from(samples, end)) < 0.2


def test_a_throttle_change_starts_a_new_window(tmp_path):
    """1 MiB/s, then 4 MiB/s: right after the change the ETA counts at the new throttle, two
    samples later at the rate measured since (a window reaching back before the change would
    still say about half of it)."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[0], [1]], 60 * MB)
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (3,))])
    opts = ExecuteOptions(batch_size=2, incremental=True, throttle=MB, wait=True)
    opts = replace(opts, sample_interval=1.0)

    def raise_at_20s(run, e):
        if e["ts"] >= 20 and not run.shared.throttles.rate == 4 * MB:
            run.set_throttle(4 * MB)

    samples, end = run_with_samples(sim, plan, opts, tmp_path, raise_at_20s)
    after = [e for e in samples if e["ts"] > 20]
    # no rate measured at the new throttle yet: the brokers count at it (not "unknown")
    assert "at the new throttle" in after[0]["eta_reason"]
    assert after[0]["eta_s"] == pytest.approx(end - after[0]["ts"], rel=0.15)
    e = after[2]
    assert e["eta_s"] == pytest.approx(end - e["ts"], rel=0.1)
    assert e["throttle"] == 4 * MB


def test_progress_on_the_journal_has_the_runs_own_eta(tmp_path):
    """``progress`` (the API, ``--progress --progress-journal``) reads the run's rates from
    its samples and applies them to what it observes: at the instant of a sample, the same
    ETA the run journaled (before: a total-over-total rate from the per-partition samples)."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[0], [1]], 20 * MB)
    sim.partitions[TP("a", 0)].size_bytes = 40 * MB
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (3,))])
    opts = ExecuteOptions(batch_size=2, incremental=True, throttle=MB, wait=True)
    opts = replace(opts, sample_interval=2.0)
    seen: list[tuple[dict, object]] = []
    events: list[dict] = []
    run = Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep)

    def on(e):
        events.append(e)
        if e["event"] == "sample" and len([x for x in events if x["event"] == "sample"]) == 6:
            seen.append((e, progress(sim, plan, list(events), clock=sim.now)))

    run.subscribe(on)
    run.run()
    e, rep = seen[0]
    assert e["eta_s"] is not None and e["eta_reason"] == "bound by broker 2 (receiving)"
    assert rep.eta_s == pytest.approx(e["eta_s"], abs=0.1)
    assert rep.eta_reason == e["eta_reason"]
    info = rates_from_events(events)
    assert info is not None and info["cap"] == MB


def test_a_move_that_just_started_is_not_stalled_one_silent_for_long_is(tmp_path):
    """A follower's first fetch may wait for its quota window: a broker with a move in
    flight that received nothing yet is no reason to give up the ETA (bench_eta run 4 showed
    'unknown' there); 10 s and more in flight with nothing is stalled and named, and the ETA
    stays a number (what is left if it resumes: bench_heldout's restarted brokers read
    'unknown' for their whole restart)."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[0], [1]], 40 * MB)
    sim.stall(TP("a", 0))  # nothing reaches broker 2
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (3,))])
    opts = ExecuteOptions(batch_size=2, incremental=True, throttle=MB, wait=True)
    opts = replace(opts, sample_interval=1.0)
    samples: list[dict] = []
    run = Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep)

    def on(e):
        if e["event"] == "sample":
            samples.append(e)
            if e["ts"] >= 16:
                run.stop()

    run.subscribe(on)
    run.run()
    early = [e for e in samples if e["ts"] - samples[0]["ts"] <= 5]
    late = [e for e in samples if e["ts"] - samples[0]["ts"] >= 11]
    assert early and late
    assert all(e["eta_s"] is not None for e in early[1:])
    assert all(e["eta_s"] is not None and e["eta_s"] > 0 for e in late)
    assert all(
        e["eta_reason"].startswith("broker(s) 2 took in nothing in the window; if they resume")
        for e in late
    )


def test_a_log_that_grows_a_fetch_at_a_time_at_a_low_throttle_is_not_stalled(tmp_path):
    """At 0.24 MB/s shared by three streams into one broker, its log grows a fetch (1 MiB)
    every ~13 s: that is no stall (bench_heldout seed 20 read 'broker(s) 1, 3 took in
    nothing' for 12 samples past a quarter of the bytes). The ETA is a number at every sample
    from the first measured one, and no reason names a stall."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.fetch_bytes = 1 << 20
    sim.add_topic("a", [[0], [0], [0]], 6 * MB)
    plan = Plan.of([Move(TP("a", p), (1,)) for p in range(3)])
    opts = replace(
        ExecuteOptions(batch_size=3, incremental=True, throttle=240_000, wait=True),
        sample_interval=1.0,
    )
    samples: list[dict] = []
    run = Run(sim, plan, opts, None, clock=sim.now, sleep=sim.sleep)
    run.subscribe(lambda e: samples.append(e) if e["event"] == "sample" else None)
    assert run.run().state == "done"
    later = [e for e in samples[2:] if e["bytes_left"]]
    assert later and all(e["eta_s"] is not None for e in later)
    assert not [e["eta_reason"] for e in later if "took in nothing" in (e["eta_reason"] or "")]


class LaggingSim(SimCluster):
    """Completes a move 2 s after its last byte (Kafka: the follower joins the ISR, the
    controller ends the reassignment, metadata reaches the brokers)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.caught: dict = {}

    def _finish(self, sp):
        first = self.caught.setdefault(sp.tp, self.t)
        if self.t - first >= 2.0 - 1e-9:
            self.caught.pop(sp.tp)
            super()._finish(sp)


def test_the_eta_adds_the_completion_lag_the_run_measured(tmp_path):
    """Bench_eta saw the last ~1.5 s of each run go by with every byte in (the end came a
    completion lag later): the run measures the lag (a sample saw the bytes in, the move
    completed later) and adds it while anything is left."""
    sim = LaggingSim(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[p % 2] for p in range(6)], 4 * MB)
    plan = Plan.of(Move(TP("a", p), (2 + p % 2,)) for p in range(6))
    opts = ExecuteOptions(
        batch_size=2, incremental=True, throttle=MB, wait=True, sample_interval=0.5
    )
    opts = replace(opts, poll_interval_ms=500)
    samples, end = run_with_samples(sim, plan, opts, tmp_path)
    assert samples[0]["tail_s"] == 0.25  # half a poll before any lag was measured
    assert max(e["tail_s"] for e in samples) == pytest.approx(2.0, abs=0.6)
    # every byte in, the last moves completing: the ETA counts the lag down to the end
    last = [e for e in samples if moved(e) == 1.0]
    assert len(last) >= 3 and all(e["eta_s"] == pytest.approx(end - e["ts"], abs=0.3) for e in last)


def test_after_a_stalled_broker_returns_the_eta_is_not_paced_by_its_stall(tmp_path):
    """Broker 2, the target of both moves, is down for 20 s mid-run. What the share and the
    pace measured across the stall is the stall's, not the pace after it. Once it copies again
    the ETA is measured anew: within 15% of the time left from a few seconds after the return."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[0], [1]], 24 * MB)
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (2,))])
    opts = replace(
        ExecuteOptions(batch_size=2, incremental=True, throttle=2 * MB, wait=True),
        sample_interval=1.0,
    )
    samples: list[dict] = []
    back: list[float] = []

    def sleep(seconds: float) -> None:
        sim.sleep(seconds)
        if 8 <= sim.now() < 28:
            sim.down.add(2)
        elif 2 in sim.down:
            sim.down.discard(2)
            back.append(sim.now())

    run = Run(sim, plan, opts, None, clock=sim.now, sleep=sleep)
    run.subscribe(lambda e: samples.append(e) if e["event"] == "sample" else None)
    assert run.run().state == "done"
    end = sim.now()
    assert back, "broker 2 never came back"
    after = [e for e in samples if back[0] + 4 <= e["ts"] < end - 2]
    assert len(after) >= 5
    errs = [abs(e["eta_s"] - (end - e["ts"])) / (end - e["ts"]) for e in after]
    assert max(errs) <= 0.15, [(round(e["ts"]), e["eta_s"], round(end - e["ts"])) for e in after]


def test_targets_fed_by_one_shared_source_at_a_low_throttle_are_not_stalled():
    """Broker 0 sends to three targets at 0.24 MB/s: each log grows a fetch (1 MiB) every
    ~13 s, its share of the source's throttle. No stall: a stall seen, then 'resumed', would
    make the ETA forget what it measured."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.fetch_bytes = 1 << 20
    sim.add_topic("a", [[0], [0], [0]], 6 * MB)
    plan = Plan.of([Move(TP("a", p), (p + 1,)) for p in range(3)])
    opts = replace(
        ExecuteOptions(batch_size=3, incremental=True, throttle=240_000, wait=True),
        sample_interval=1.0,
    )
    samples: list[dict] = []
    run = Run(sim, plan, opts, None, clock=sim.now, sleep=sim.sleep)
    run.subscribe(lambda e: samples.append(e) if e["event"] == "sample" else None)
    assert run.run().state == "done"
    later = [e for e in samples[2:] if e["bytes_left"]]
    assert later and all(e["eta_s"] is not None for e in later)
    assert not [e["eta_reason"] for e in later if "took in nothing" in (e["eta_reason"] or "")]
