"""The simulator plays a tick event by event (``cluster.flows``): a completion recomputes the
fair share of the streams its brokers connect it to, not of every stream. Its results are the
ones the simulator gave when every completion recomputed every stream: the same seeded
scenarios run through ``Reference`` (that algorithm, kept here) and ``SimCluster`` end at
the same model time and finish their partitions in the same order, with throttles at one or
both ends, Kafka's quota windows, end losses, stalls, a broker down and the executor driving."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE, LOG_DIR_RATE
from reassign_kit.cluster.quota import fair_share
from reassign_kit.cluster.simulate import MB, SimCluster, SimPartition
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run


class Recording(SimCluster):
    """The simulator, recording when each reassignment ends."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.finished: list[tuple[TopicPartition, float]] = []

    def _finish(self, sp: SimPartition) -> None:
        self.finished.append((sp.tp, self.t))
        super()._finish(sp)


class Reference(Recording):
    """The simulator as it was: every stream's rate recomputed at each completion."""

    charged: tuple = ((), set(), {})

    def _advance(self, dt: float) -> None:
        self.t += dt
        # every new replica being filled is a stream from the partition's leader: the
        # leader's outbound and the target's inbound throttle are both shared
        streams: list[tuple[SimPartition, int]] = []
        moving = list(self.active.values())
        for sp in moving:
            if sp.target is None or sp.stalled:
                continue
            for b in sp.target:
                if b not in sp.isr and b not in self.down:
                    streams.append((sp, b))
        debts = self._debts
        if debts.owed:  # a broker no stream fills any more idles: the quota gives it back
            debts.keep({b for _, b in streams})
        # a stream that ends within the tick leaves its share to the others for the rest of
        # it (a tick is split where one ends: the model is fluid, not a tick's granularity)
        left_dt = dt
        for _ in range(2 * len(streams) + 2):  # each pass ends a stream or a debt, or the tick
            if not streams or left_dt <= 1e-12:
                break
            rates = self._stream_rates(streams, left_dt)
            step = left_dt
            # a broker that owes (``end_loss_bytes``) takes in for nothing until it has paid
            owing: dict[int, float] = {}
            if debts.owed:
                owing, step = debts.owing(streams, rates, step)
            for (sp, b), rate in zip(streams, rates, strict=True):
                if rate > 0 and b not in owing:
                    step = min(step, (sp.size_bytes - sp.copied.get(b, 0.0)) / rate)
            step = max(step, 0.0)
            debts.pay(owing, step)
            ended: list[tuple[int, int]] = []
            for (sp, b), rate in zip(streams, rates, strict=True):
                if owing and b in owing:
                    continue
                sp.copied[b] = sp.copied.get(b, 0.0) + rate * step
                if sp.copied[b] >= sp.size_bytes - 1e-6:
                    sp.copied[b] = float(sp.size_bytes)
                    sp.isr.append(b)
                    ended.append((b, sp.size_bytes))
            if self.quota_windows and step < left_dt:  # the quota was charged for left_dt
                self._refund(streams, rates, left_dt - step)
            streams = [(sp, b) for sp, b in streams if b not in sp.isr]
            if ended and self.end_loss_bytes > 0:
                debts.owe(ended, {b for _, b in streams}, self.end_loss_bytes)
            left_dt -= step
        for sp in moving:
            if sp.target is not None and all(b in sp.isr for b in sp.target):
                sp.full_at = self.t if sp.full_at is None else sp.full_at
                if self.t - sp.full_at >= self.finish_s - 1e-9:
                    self._finish(sp)
        for sp in moving:
            if sp.target is None and not sp.future:
                self.active.pop(sp.tp, None)
        for sp in moving:  # moves between log dirs, at the log-dir rate
            for b, fut in list(sp.future.items()):
                if b in self.down:
                    continue
                rate = self.effective_broker_configs(b).get(LOG_DIR_RATE)
                fut[1] += (float(rate) if rate else self.bandwidth) * dt
                if fut[1] >= sp.size_bytes:
                    sp.dirs[b] = fut[0]
                    del sp.future[b]

    def _refund(self, streams: list, rates: list[float], unused: float) -> None:
        """Give back what was charged for the part of a tick not played, at the ends charged
        (the simulator gave it back at every end with windows, charged or not: a broker's
        windows lost the bytes its throttled streams had moved when an unthrottled stream
        into it ended later in the tick)."""
        ends, thr_in, out_cap = self.charged
        for (src, b), r in zip(ends, rates, strict=True):
            for store, end, charged in (
                (self._quotas.inbound, b, b in thr_in),
                (self._quotas.outbound, src, src in out_cap),
            ):
                w = store.get(end) if charged else None
                if w is not None and w.wins:
                    w.wins[-1][1] = max(0.0, w.wins[-1][1] - r * unused)

    def _stream_rates(self, streams: list[tuple[SimPartition, int]], dt: float) -> list[float]:
        """Each stream's rate this tick (``quota.fair_share``): a target takes in at most its
        bandwidth, or its follower throttle when a stream into it is throttled; a source
        whose leader replica is throttled sends at most its leader throttle; with
        ``quota_windows`` both throttles are Kafka's windowed averages."""
        if not streams:
            return []
        ends: list[tuple[int | None, int]] = []
        thr_in: set[int] = set()
        thr_out: set[int] = set()
        for sp, b in streams:
            src = sp.leader if sp.leader is not None and sp.leader not in self.down else None
            ends.append((src, b))
            p = sp.tp.partition
            if (p, b) in self.throttles.follower_replicas.get(sp.tp.topic, ()):
                thr_in.add(b)
            if src is not None and (p, src) in self.throttles.leader_replicas.get(sp.tp.topic, ()):
                thr_out.add(src)
        in_cap = {b: self._cap(b, True, b in thr_in, dt) for _, b in ends}
        out_cap = {s: self._cap(s, False, True, dt) for s in thr_out}
        out_cap = {s: c for s, c in out_cap.items() if c is not None}
        rates = fair_share(ends, out_cap, in_cap)
        if self.quota_windows and dt > 0:
            self._quotas.charge(ends, rates, thr_in, out_cap, dt)
            self.charged = (ends, thr_in, out_cap)
        return rates


def build(cls: type[Recording], seed: int) -> tuple[Recording, list[tuple[float, dict]]]:
    """A seeded cluster and its reassignments: (model time, targets) waves, with throttles at
    one or both ends, partition sizes over three decades, and the model's options drawn."""
    rnd = random.Random(seed)
    n = rnd.randint(3, 8)
    sim = cls(n, bandwidth=rnd.uniform(2, 40) * MB, tick=rnd.choice([0.1, 0.5, 1.0]))
    if rnd.random() < 0.4:
        sim.quota_windows = 11
        sim.quota_factor = {b: rnd.uniform(0.5, 1.0) for b in range(n)}
    if rnd.random() < 0.4:
        sim.end_loss_bytes = float(MB)
    if rnd.random() < 0.3:
        sim.broker_bandwidth = {b: rnd.uniform(1, 40) * MB for b in range(n)}
    sim.finish_s = rnd.choice([0.0, 0.0, 0.7])
    rates = {}
    for b in range(n):
        if rnd.random() < 0.7:
            r = str(int(rnd.uniform(0.5, 30) * MB))
            rates[b] = {k: r for k in (LEADER_RATE, FOLLOWER_RATE) if rnd.random() < 0.8}
    sim.alter_broker_configs(rates)
    waves: list[tuple[float, dict]] = []
    for t in range(rnd.randint(1, 3)):
        topic, rf = f"t{t}", rnd.randint(1, min(3, n - 1))  # n - 1: a broker to move to
        count = rnd.randint(2, 12)
        assignment = [rnd.sample(range(n), rf) for _ in range(count)]
        sizes = [int(10 ** rnd.uniform(4.5, 7.7)) if rnd.random() > 0.05 else 0 for _ in assignment]
        sim.add_topic(topic, assignment, sizes)
        targets = {TopicPartition(topic, p): rnd.sample(range(n), rf) for p in range(count)}
        if all(set(targets[TopicPartition(topic, p)]) == set(assignment[p]) for p in range(count)):
            # every target drawn equal to its assignment: the wave would move nothing
            first, outside = assignment[0], [b for b in range(n) if b not in assignment[0]]
            targets[TopicPartition(topic, 0)] = [outside[0], *first[1:]]
        throttled = {"leader": [], "follower": []}
        for tp, target in targets.items():
            throttled["leader"] += [f"{tp.partition}:{b}" for b in assignment[tp.partition]]
            throttled["follower"] += [f"{tp.partition}:{b}" for b in target]
        cfg = {
            f"{side}.replication.throttled.replicas": ",".join(entries)
            for side, entries in throttled.items()
            if rnd.random() < 0.8
        }
        sim.alter_topic_configs({topic: cfg})
        waves.append((round(rnd.uniform(0, 4), 1) if t else 0.0, targets))
    return sim, waves


def play(cls: type[Recording], seed: int) -> Recording:
    """Submit the waves at their times, with a stall, a broker down for a while and a throttle
    change along the way (each drawn from the seed), until every move ended."""
    sim, waves = build(cls, seed)
    rnd = random.Random(seed + 1)
    stall_at, down_at, change_at = rnd.uniform(0, 5), rnd.uniform(0, 5), rnd.uniform(0, 8)
    down = rnd.randrange(len(sim.broker_ids)) if rnd.random() < 0.3 else None
    stalled = None
    for _ in range(4000):
        for when, targets in list(waves):
            if sim.t >= when:
                sim.alter_reassignments(targets)
                waves.remove((when, targets))
        if stalled is None and sim.t >= stall_at and sim.active and rnd.random() < 0.5:
            stalled = sorted(sim.active)[0]
            sim.stall(stalled)
        if stalled is not None and sim.t >= stall_at + 2:
            sim.stall(stalled, False)
        if down is not None:
            if down_at <= sim.t < down_at + 1.5:
                sim.down.add(down)
            else:
                sim.down.discard(down)
        if change_at <= sim.t < change_at + sim.tick:
            up = next(b for b in sim.broker_ids if b not in sim.down)
            sim.alter_broker_configs({up: {FOLLOWER_RATE: str(int(rnd.uniform(1, 9) * MB))}})
        if not waves and not sim.active:
            break
        sim.sleep(sim.tick)
    return sim


def same(ref: Recording, new: Recording) -> None:
    assert [tp for tp, _ in new.finished] == [tp for tp, _ in ref.finished]
    assert [t for _, t in new.finished] == pytest.approx([t for _, t in ref.finished])
    assert new.t == pytest.approx(ref.t)
    for tp, sp in ref.partitions.items():
        assert new.partitions[tp].replicas == sp.replicas, tp


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31))
def test_a_scenario_ends_as_with_every_stream_recomputed(seed):
    ref = play(Reference, seed)
    assert ref.finished  # the scenario moved something
    same(ref, play(Recording, seed))


def paced(cls: type[Recording], brokers: int, partitions: int, seed: int) -> Recording:
    """The executor's scale bench in small: a paced incremental run, moves at every broker."""
    rnd = random.Random(seed)
    sim = cls(brokers, bandwidth=4 * MB, tick=1.0)
    sim.add_topic(
        "t",
        [[p % brokers, (p + 1) % brokers] for p in range(partitions)],
        [int(rnd.uniform(0.5, 3) * MB) for _ in range(partitions)],
    )
    plan = Plan.of(
        Move(tp, tuple((b + 2) % brokers for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    opts = ExecuteOptions(
        incremental=True, batch_size=40, wait=True, throttle=3 * MB, additional=True
    )
    run = Run(sim, plan, opts, None, clock=sim.now, sleep=sim.sleep)
    assert run.run().state == "done"
    return sim


@pytest.mark.parametrize("seed", [1, 2])
def test_a_paced_incremental_run_ends_as_with_every_stream_recomputed(seed):
    same(paced(Reference, 20, 400, seed), paced(Recording, 20, 400, seed))


def test_a_brokers_windows_keep_what_its_throttled_streams_moved():
    """Broker 2 at 1 MiB/s: a throttled and an unthrottled stream share it until the throttled
    one ends at 0.4 s, the other then ends at full speed within the same tick. The 0.4 MiB
    taken in under the throttle stay charged (they were refunded once: a burst it never had)."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=1.0)
    sim.quota_windows = 11
    sim.alter_broker_configs({2: {FOLLOWER_RATE: str(MB)}})
    sim.add_topic("a", [[0]], int(0.2 * MB))
    sim.add_topic("b", [[1]], int(0.6 * MB))
    sim.alter_topic_configs({"a": {"follower.replication.throttled.replicas": "0:2"}})
    sim.alter_reassignments({TopicPartition("a", 0): [2], TopicPartition("b", 0): [2]})
    sim.sleep(1.0)
    assert sim.partitions[TopicPartition("b", 0)].replicas == [2]
    windows = sim._quotas.inbound[2].wins
    assert sum(w[1] for w in windows) == pytest.approx(0.4 * MB)
