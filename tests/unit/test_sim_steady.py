"""A tick like the last one (the same streams' ends and limits, none ending in it) is played from
the rates the last one started with (``flows.SteadyRates``): every replica's bytes, every
completion and the model's time are those of the tick played in full, to the bit, whatever the
throttles, quota windows, end losses, stalls and brokers down of a seeded scenario."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.flows import SteadyRates
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run


class Counted(SteadyRates):
    """``SteadyRates`` counting the ticks it played; ``on=False``: every tick in full."""

    def __init__(self, on: bool) -> None:
        super().__init__()
        self.on = on
        self.replayed = 0

    def replay(self, streams, key, dt) -> bool:
        played = self.on and super().replay(streams, key, dt)
        self.replayed += played
        return played


def cluster(seed: int, on: bool) -> tuple[SimCluster, Counted, dict]:
    """A seeded cluster: equal-sized partitions (so whole waves copy in step), throttles at one
    or both ends, sometimes Kafka's quota windows or end losses; and its targets."""
    rnd = random.Random(seed)
    n = rnd.randint(3, 8)
    sim = SimCluster(n, bandwidth=rnd.uniform(2, 40) * MB, tick=rnd.choice([0.1, 0.5, 1.0]))
    steady = Counted(on)
    sim._steady = steady
    if rnd.random() < 0.2:
        sim.quota_windows = 11
    if rnd.random() < 0.2:
        sim.end_loss_bytes = float(MB)
    rates = {}
    for b in range(n):
        if rnd.random() < 0.5:
            r = str(int(rnd.uniform(0.5, 30) * MB))
            rates[b] = {k: r for k in (LEADER_RATE, FOLLOWER_RATE) if rnd.random() < 0.8}
    sim.alter_broker_configs(rates)
    count, rf = rnd.randint(2, 16), rnd.randint(1, min(3, n))
    assignment = [rnd.sample(range(n), rf) for _ in range(count)]
    size = int(10 ** rnd.uniform(5, 7.5))
    sim.add_topic("t", assignment, [size if rnd.random() < 0.8 else 2 * size for _ in assignment])
    targets = {TopicPartition("t", p): rnd.sample(range(n), rf) for p in range(count)}
    if rnd.random() < 0.7:
        follower = [f"{tp.partition}:{b}" for tp, t in targets.items() for b in t]
        sim.alter_topic_configs(
            {"t": {"follower.replication.throttled.replicas": ",".join(follower)}}
        )
    return sim, steady, targets


def lockstep(seed: int) -> int:
    """Both clusters driven alike (a stall, a broker down for a while, a throttle change),
    compared at every tick; the ticks the steady one replayed."""
    (full, _, targets), (fast, steady, _) = cluster(seed, False), cluster(seed, True)
    rnd = random.Random(seed + 1)
    stall_at, down_at, change_at = rnd.uniform(0, 5), rnd.uniform(0, 5), rnd.uniform(0, 8)
    down = rnd.randrange(len(full.broker_ids)) if rnd.random() < 0.3 else None
    tp0 = sorted(targets)[0]
    for sim in (full, fast):
        sim.alter_reassignments(targets)
    for _ in range(3000):
        rate = str(int(rnd.uniform(1, 9) * MB))
        for sim in (full, fast):
            sim.stall(tp0, stall_at <= sim.t < stall_at + 2)
            if down is not None and down_at <= sim.t < down_at + 1.5:
                sim.down.add(down)
            elif down is not None:
                sim.down.discard(down)
            if change_at <= sim.t < change_at + sim.tick:
                up = next(b for b in sim.broker_ids if b not in sim.down)
                sim.alter_broker_configs({up: {FOLLOWER_RATE: rate}})
            sim.sleep(sim.tick)
        assert fast.t == full.t
        for tp, sp in full.partitions.items():
            other = fast.partitions[tp]
            assert (other.copied, other.replicas, other.isr) == (sp.copied, sp.replicas, sp.isr)
        if not full.active:
            break
    assert not fast.active
    return steady.replayed


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_a_tick_replayed_is_the_tick_played_in_full(seed):
    lockstep(seed)


def test_seeded_scenarios_replay_ticks():
    """The property above is not vacuous: its scenarios do replay ticks."""
    assert sum(lockstep(seed) for seed in range(10)) > 0


def test_a_paced_run_ends_as_with_every_tick_played_in_full():
    """The executor's scale bench in small (a wave of equal moves at a time): the same
    completions at the same model times, most ticks replayed."""

    def run(on: bool) -> tuple[SimCluster, Counted, list]:
        sim = SimCluster(20, bandwidth=4 * MB, tick=1.0)
        steady = Counted(on)
        sim._steady = steady
        sim.add_topic("t", [[p % 20, (p + 1) % 20] for p in range(200)], 8 * MB)
        plan = Plan.of(
            Move(tp, tuple((b + 2) % 20 for b in sp.replicas)) for tp, sp in sim.partitions.items()
        )
        opts = ExecuteOptions(
            incremental=True, batch_size=40, wait=True, throttle=3 * MB, additional=True
        )
        events: list = []
        r = Run(sim, plan, opts, None, clock=sim.now, sleep=sim.sleep)
        r.subscribe(events.append)
        assert r.run().state == "done"
        return sim, steady, events

    full, _, full_events = run(False)
    fast, steady, fast_events = run(True)
    assert fast.t == full.t
    done = [(e["topic"], e["partition"], e["ts"]) for e in full_events if e["event"] == "completed"]
    assert done == [
        (e["topic"], e["partition"], e["ts"]) for e in fast_events if e["event"] == "completed"
    ]
    assert len(done) == 200
    assert steady.replayed > fast.t / 2  # most ticks: the waves copy in step
