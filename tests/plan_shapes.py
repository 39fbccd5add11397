"""Snapshots of every shape the suite plans, each with its plan parameters:
rebalance, decommission, rack repair, demotion, cordons, capacity and the bytes goal, an RF
change. Shared by the Spark parity test (both engines give the same plan) and by
``bench/plan_digests.py`` (the same plans before and after a planner change)."""

from __future__ import annotations

import random
from collections.abc import Callable

from rack_snapshots import racked_snapshot

from reassign_kit.planner.params import PlanParams
from reassign_kit.planner.rules import BrokerCapacity, Capacity
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot


def spread_snapshot(seed: int, brokers: int = 9, racks: str = "abc", partitions: int = 300):
    """Rack-aware, one replica per rack (as tests/spark/spark_snapshots.random_snapshot)."""
    rnd = random.Random(seed)
    bs = [BrokerEntry(i, racks[i % len(racks)] if racks else None) for i in range(1, brokers + 1)]
    by_rack: dict = {}
    for b in bs:
        by_rack.setdefault(b.rack, []).append(b.id)
    topics = [f"t{t}" for t in range(4)]
    parts = []
    for n in range(partitions):
        topic = topics[n % len(topics)]
        rf = 3 if topic != "t3" else 2
        if racks:
            chosen = rnd.sample(sorted(by_rack), min(rf, len(by_rack)))
            reps = tuple(rnd.choice(by_rack[r]) for r in chosen)
        else:
            reps = tuple(rnd.sample([b.id for b in bs], rf))
        parts.append(PartitionEntry(topic, n // len(topics), reps, rnd.randint(0, 10**6)))
    return Snapshot.of(bs, [TopicEntry(t, 2) for t in topics], parts)


def unit_snapshot(seed: int) -> Snapshot:
    """The shape of tests/unit/test_planner.py's hypothesis snapshots: 3-8 brokers, 0-3 racks,
    1-3 topics of RF 1-3, skewed placements, derandomized by ``seed``."""
    rng = random.Random(seed)
    n_brokers = rng.randint(3, 8)
    n_racks = rng.choice([0, 1, 2, 3])
    brokers = [
        BrokerEntry(b, None if n_racks == 0 else "abc"[b % n_racks])
        for b in range(1, n_brokers + 1)
    ]
    ids = [b.id for b in brokers]
    topics, parts = [], []
    for t in range(rng.randint(1, 3)):
        rf = rng.randint(1, min(3, n_brokers))
        topics.append(TopicEntry(f"t{t}", min(2, rf)))
        hot = rng.sample(ids, min(len(ids), rf + 1))
        for p in range(rng.randint(1, 20)):
            pool = hot if rng.random() < 0.6 else ids
            reps = rng.sample(pool, rf) if len(pool) >= rf else rng.sample(ids, rf)
            parts.append(PartitionEntry(f"t{t}", p, tuple(reps), rng.randint(0, 10**5)))
    return Snapshot.of(brokers, topics, parts)


def cordoned_snapshot(seed: int, racks: bool = True, n: int = 40) -> Snapshot:
    """Six brokers, broker 5 fully cordoned, 6 half (as tests/unit/test_cordons.py's snap)."""
    rng = random.Random(seed)
    dirs = ("/d0", "/d1")
    cordon = {5: ("*",), 6: ("/d0",)}
    brokers = [
        BrokerEntry(b, ("a", "b", "c")[b % 3] if racks else None, dirs, cordon.get(b, ()))
        for b in range(1, 7)
    ]
    parts = []
    for p in range(n):
        reps = list(dict.fromkeys(rng.sample([1, 2, 3, 4, 1, 2, 3, 5, 6], 3)))
        while len(reps) < 3:
            reps.append(rng.choice([b for b in range(1, 7) if b not in reps]))
        parts.append(PartitionEntry("t", p, tuple(reps), 100 + p))
    return Snapshot.of(brokers, [TopicEntry("t", 2)], parts)


def drifted_snapshot(seed: int, demoted: int = 2) -> Snapshot:
    """Leadership drifted onto ``demoted`` (recorded leader and ISR), over 3 racks."""
    rng = random.Random(seed)
    rack_of = {b: f"r{b % 3}" for b in range(1, 7)}
    parts = []
    for i in range(90):
        reps = tuple(rng.sample(range(1, 7), 3))
        isr = list(reps)
        if i % 3 == 0:
            isr.remove(rng.choice(reps[1:]))
        leader = demoted if demoted in isr and rng.random() < 0.5 else isr[0]
        parts.append(PartitionEntry("a", i, reps, 100 + i, leader=leader, isr=tuple(isr)))
    return Snapshot.of(
        [BrokerEntry(b, r) for b, r in sorted(rack_of.items())], [TopicEntry("a", 1)], parts
    )


def capacity_of(snap: Snapshot, headroom: float, max_replicas: int | None = None) -> Capacity:
    """Unequal disks (brokers 1-3 twice the others, as tests/spark/test_spark_capacity.py) with
    ``headroom`` over the bytes."""
    total = sum(p.size_bytes * len(p.replicas) for p in snap.partitions)
    ids = snap.broker_ids()
    w = {b: 2 if b <= 3 else 1 for b in ids}
    per = total * headroom / sum(w.values())
    return Capacity(tuple((b, BrokerCapacity(int(per * w[b]), max_replicas)) for b in ids))


Case = Callable[[], tuple[Snapshot, PlanParams]]


def _case(snap: Callable[[], Snapshot], **kw) -> Case:
    def make():
        s = snap()
        extra = dict(kw)
        cap = extra.pop("capacity_headroom", None)
        if cap is not None:
            extra["capacity"] = capacity_of(s, *cap)
        return s, PlanParams(**extra)

    return make


def shapes(full: bool = False) -> dict[str, Case]:
    """name -> case; ``full``: more seeds of each (the digest comparison; the Spark parity test
    runs the short list)."""
    seeds = range(3) if full else range(1)
    out: dict[str, Case] = {}
    for s in seeds:
        out[f"rebalance-{s}"] = _case(lambda s=s: spread_snapshot(s))
        out[f"rebalance-skewed-{s}"] = _case(lambda s=s: unit_snapshot(s), chunks=3)
        out[f"decommission-{s}"] = _case(lambda s=s: spread_snapshot(s), remove_brokers=(1,))
        out[f"decommission-2racks-{s}"] = _case(
            lambda s=s: spread_snapshot(s + 100), remove_brokers=(1, 5)
        )
        out[f"rack-repair-{s}"] = _case(lambda s=s: racked_snapshot(s, 90, 0.15))
        out[f"rack-repair-decommission-{s}"] = _case(
            lambda s=s: racked_snapshot(s, 60, 0.5), remove_brokers=(5, 9)
        )
        out[f"demote-{s}"] = _case(
            lambda s=s: drifted_snapshot(s), balance=("leaders",), demote_brokers=(2,)
        )
        out[f"cordons-{s}"] = _case(lambda s=s: cordoned_snapshot(s), chunks=3)
        out[f"cordons-drain-{s}"] = _case(
            lambda s=s: cordoned_snapshot(s, racks=False), drain_cordoned=True
        )
        out[f"capacity-{s}"] = _case(  # hard limits only: disks and max_replicas
            lambda s=s: spread_snapshot(s + 7, partitions=150),
            remove_brokers=(4,),
            capacity_headroom=(1.5, 160),
        )
        out[f"capacity-bytes-goal-{s}"] = _case(  # as tests/spark/test_spark_capacity.py
            lambda s=s: spread_snapshot(s + 31, partitions=400),
            balance=("leaders", "bytes"),
            bytes_tolerance=0.1,
            capacity_headroom=(1.3, 160),
        )
        out[f"rf-change-{s}"] = _case(
            lambda s=s: spread_snapshot(s + 3), replication_factor=3, rf_topics=("t3",)
        )
    out["rack-repair-small-151"] = _case(
        lambda: racked_snapshot(151, 30, 0.53), remove_brokers=(1,)
    )
    return out
