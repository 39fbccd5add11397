"""The plan's ETA, on the simulator: bound by the slowest broker (not the total
over the total rate), "unknown (reason)" instead of a number when there is no signal, a
windowed rate that follows a throttle change mid-move, and the per-partition / per-broker
grouping that keeps a report's cost linear in the plan."""

from __future__ import annotations

import pytest

from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.watch import report as report_mod
from reassign_kit.watch.progress import ProgressTracker, observe

TP = TopicPartition


def two_moves(sim: SimCluster) -> Plan:
    """a-0 copies 40 MiB to broker 2, a-1 copies 10 MiB to broker 3."""
    sim.add_topic("a", [[0, 1], [0, 1]], 10 * MB)
    sim.partitions[TP("a", 0)].size_bytes = 40 * MB
    return Plan.of([Move(TP("a", 0), (0, 2)), Move(TP("a", 1), (0, 3))])


def track(sim: SimCluster, plan: Plan, every: float, times: int, window: float = 20.0):
    tracker = ProgressTracker(plan, window_s=window)
    reps = [tracker.update(observe(sim, plan, clock=sim.now))]
    for _ in range(times):
        sim.sleep(every)
        reps.append(tracker.update(observe(sim, plan, clock=sim.now)))
    return reps


def test_the_eta_is_the_slowest_brokers_not_total_over_total():
    sim = SimCluster(4, bandwidth=2 * MB, tick=0.5)
    plan = two_moves(sim)
    sim.alter_reassignments({m.tp: m.replicas for m in plan})
    reps = track(sim, plan, every=1.0, times=3)
    rep = reps[-1]
    # broker 2: 40 MiB at 2 MiB/s -> 17 s left after 3 s; broker 3: 10 MiB -> 2 s left
    assert rep.eta_reason == "bound by broker 2"
    assert rep.eta_s == pytest.approx(17, abs=1)
    naive = rep.bytes_remaining / rep.rate_bps  # what total over total would say
    assert naive < rep.eta_s * 0.8


def test_no_eta_before_a_second_sample_says_why():
    sim = SimCluster(4, bandwidth=2 * MB)
    plan = two_moves(sim)
    sim.alter_reassignments({m.tp: m.replicas for m in plan})
    rep = track(sim, plan, every=1.0, times=0)[0]
    assert rep.eta_s is None and "no earlier sample" in rep.eta_reason
    assert "ETA unknown (no earlier sample" in rep.summary()


def test_a_stalled_broker_gives_no_number_but_names_the_broker():
    sim = SimCluster(4, bandwidth=2 * MB, tick=0.5)
    plan = two_moves(sim)
    sim.alter_reassignments({m.tp: m.replicas for m in plan})
    sim.stall(TP("a", 0))  # nothing reaches broker 2
    rep = track(sim, plan, every=1.0, times=2)[-1]
    assert rep.eta_s is None and rep.eta_reason is not None and "broker(s) 2" in rep.eta_reason


def test_the_windowed_rate_follows_a_throttle_change_mid_move():
    """Throttled to 1 MiB/s, then raised to 4 MiB/s: within one window the ETA is the new
    rate's (a since-start average would still say about half of it)."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.5)
    sim.add_topic("a", [[0, 1]], 200 * MB)
    plan = Plan.of([Move(TP("a", 0), (0, 2))])
    sim.alter_topic_configs({"a": {"follower.replication.throttled.replicas": "0:2"}})
    sim.alter_broker_configs({2: {LEADER_RATE: str(MB), FOLLOWER_RATE: str(MB)}})
    sim.alter_reassignments({m.tp: m.replicas for m in plan})
    tracker = ProgressTracker(plan, window_s=10.0)
    t0 = sim.now()
    for _ in range(30):  # 30 s at 1 MiB/s
        tracker.update(observe(sim, plan, clock=sim.now))
        sim.sleep(1.0)
    sim.alter_broker_configs({2: {LEADER_RATE: str(4 * MB), FOLLOWER_RATE: str(4 * MB)}})
    for _ in range(15):  # 15 s at 4 MiB/s: past the 10 s window
        sim.sleep(1.0)
        rep = tracker.update(observe(sim, plan, clock=sim.now))
    left = rep.bytes_remaining
    assert rep.rate_bps == pytest.approx(4 * MB, rel=0.1)
    assert rep.eta_s == pytest.approx(left / (4 * MB), rel=0.1)
    since_start = (200 * MB - left) / (sim.now() - t0)
    assert left / since_start > 1.5 * rep.eta_s  # the since-start formula is far off


def test_a_reports_work_grows_linearly_with_the_plan(monkeypatch):
    """Per partition and per broker the report reads its own rows from a grouping made once;
    it filtered every row for every partition before (quadratic in the plan). Counted as
    reads of replica-row fields: x10 partitions must cost about x10, not x100."""

    reads = {"n": 0}
    real_get = object.__getattribute__

    def counting(self, name):
        reads["n"] += 1
        return real_get(self, name)

    counts = []
    for n in (50, 500):
        sim = SimCluster(10, bandwidth=100 * MB)
        sim.add_topic("a", [[p % 10, (p + 1) % 10] for p in range(n)], MB)
        plan = Plan.of(
            Move(tp, tuple((b + 2) % 10 for b in sp.replicas)) for tp, sp in sim.partitions.items()
        )
        sim.alter_reassignments({m.tp: m.replicas for m in plan})
        o = observe(sim, plan, clock=sim.now)
        with monkeypatch.context() as m:
            m.setattr(report_mod.ReplicaRow, "__getattribute__", counting)
            reads["n"] = 0
            rep = ProgressTracker(plan).update(o)
            counts.append(reads["n"])
        assert len(rep.partitions) == n
    assert counts[1] < 15 * counts[0], counts
