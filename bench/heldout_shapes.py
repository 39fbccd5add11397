"""Paced-run shapes drawn from a seed, for the held-out evaluation (``bench_heldout``).

A shape is what an operator might run and nobody tuned the ETA or the what-if to: 3 to 14
partitions whose sizes are log-uniform over two decades, sources and targets drawn at random
among 4 or 6 brokers (in 2 racks or none), RF 1 to 3, a throttle log-uniform from 0.2 to
50 MB/s, batches, --incremental, a per-broker cap, KIP-435 steps, a throttle change at some
share of the bytes and a broker restart.

A shape also carries its *cluster*: what the simulator does that the throttle alone does not
say, the knobs ``SimCluster`` has for what the sandbox measured (Kafka's 11-window quota, a
per-broker share of the throttle achieved, a completion lag after the last byte, the admin
calls' time, the fetch a receiving end loses when a stream ends among others, the log's
growth a fetch at a time, a broker's bandwidth that may sit under a high throttle). Shapes
``2k`` and ``2k + 1`` share a cluster, so each can be calibrated on the other's journal: the
what-if's check of one run calibrated on another of the same cluster.

Seeds split by parity: even seeds are the *fit* half (anything fitted is fitted there),
odd seeds the *judged* half."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from reassign_kit.cluster.quota import END_LOSS_BYTES, QUOTA_WINDOWS
from reassign_kit.cluster.simulate import SimCluster
from reassign_kit.model import Move, Plan, TopicPartition

MB = 1_000_000
TOPIC = "heldout"
TARGET_S = (25.0, 150.0)  # the bound (bytes through the busiest broker / throttle) drawn here


@dataclass(frozen=True)
class Cluster:
    """What the simulated cluster does besides the throttle (shared by a pair of shapes)."""

    brokers: int
    racks: bool
    share: dict[int, float]  # the share of the throttle each broker achieves
    bandwidth: dict[int, float]  # each broker's unthrottled inbound bytes/s
    finish_s: float  # last byte to completion (ISR change, the controller)
    call_s: float  # one AlterPartitionReassignments call


@dataclass
class Shape:
    seed: int
    cluster: Cluster
    sizes: list[int]
    before: list[list[int]]
    after: list[list[int]]
    throttle: int
    options: dict[str, Any] = field(default_factory=dict)
    throttle_change: tuple[float, float] | None = None  # (share of bytes moved, x throttle)
    restart: tuple[float, int, float] | None = None  # (share of bytes, broker, seconds down)

    @property
    def half(self) -> str:
        return "fit" if self.seed % 2 == 0 else "judged"

    def describe(self) -> str:
        o = self.options
        bits = [
            f"{len(self.sizes)}p",
            f"RF{len(self.before[0])}",
            f"{self.cluster.brokers}b{'/2r' if self.cluster.racks else ''}",
            f"{self.throttle / MB:.2g}MB/s",
            f"{'incr' if o.get('incremental', True) else 'batch'} {o.get('batch_size')}",
        ]
        if o.get("max_moves_per_broker"):
            bits.append(f"cap {o['max_moves_per_broker']}")
        if o.get("parallel_replica_count"):
            bits.append(f"R={o['parallel_replica_count']}")
        if self.throttle_change:
            bits.append(f"x{self.throttle_change[1]:.2g}@{self.throttle_change[0]:.0%}")
        if self.restart:
            bits.append(f"restart b{self.restart[1]} {self.restart[2]:.0f}s")
        return " ".join(bits)

    def plan(self) -> Plan:
        return Plan.of(
            Move(TopicPartition(TOPIC, p), tuple(reps)) for p, reps in enumerate(self.after)
        )

    def sim(self) -> SimCluster:
        """A fresh simulated cluster holding the shape's partitions where they start."""
        c = self.cluster
        ids = list(range(1, c.brokers + 1))
        racks = {b: f"r{b % 2}" for b in ids} if c.racks else None
        sim = SimCluster(ids, racks=racks, bandwidth=max(c.bandwidth.values()), tick=0.25)
        sim.broker_bandwidth = dict(c.bandwidth)
        sim.quota_windows = QUOTA_WINDOWS
        sim.quota_factor = dict(c.share)
        sim.finish_s = c.finish_s
        sim.call_s = c.call_s
        sim.end_loss_bytes = END_LOSS_BYTES
        sim.fetch_bytes = 1 << 20
        sim.add_topic(TOPIC, self.before, self.sizes)
        return sim


def cluster_of(seed: int) -> Cluster:
    rnd = random.Random(f"cluster-{seed // 2}")
    n = rnd.choice((4, 6))
    ids = range(1, n + 1)
    return Cluster(
        brokers=n,
        racks=rnd.random() < 0.5,
        share={b: rnd.uniform(0.8, 1.0) for b in ids},
        bandwidth={b: rnd.uniform(40, 200) * MB for b in ids},
        finish_s=rnd.uniform(0.3, 2.0),
        call_s=rnd.uniform(0.05, 0.5),
    )


def _replicas(rnd: random.Random, cluster: Cluster, rf: int, pool: list[int]) -> list[int]:
    by_rack = [[b for b in pool if b % 2 == r] for r in (0, 1)]
    if cluster.racks and rf > 1 and all(by_rack):  # one per rack first, as a rack-aware plan
        rnd.shuffle(by_rack)
        first = [rnd.choice(by_rack[i % 2]) for i in range(min(rf, 2))]
        rest = [b for b in pool if b not in first]
        return first + rnd.sample(rest, rf - len(first))
    return rnd.sample(pool, rf)


def _layout(rnd: random.Random, c: Cluster, n: int, rf: int) -> tuple[list, list]:
    """Before and after replicas: a drain of a few brokers into the others, or random moves
    among every broker (each partition gets at least one new replica)."""
    ids = list(range(1, c.brokers + 1))
    before, after = [], []
    drain = rnd.random() < 0.5
    k = rnd.randint(1, max(1, c.brokers - rf - 1)) if drain else 0
    sources = rnd.sample(ids, max(k, rf)) if drain else ids
    targets = [b for b in ids if b not in sources] if drain else ids
    for _ in range(n):
        b = _replicas(rnd, c, rf, sources)
        pool = [t for t in targets if t not in b] or [t for t in ids if t not in b]
        keep = rnd.randint(0, rf - 1) if not drain else 0
        new = rnd.sample(pool, min(len(pool), rf - keep))
        a = b[:keep] + new
        rnd.shuffle(a)
        before.append(b)
        after.append(a)
    return before, after


def bound_seconds(sizes: list[int], before: list, after: list, throttle: float) -> float:
    """Bytes through the busiest broker end (each new replica fed by the first replica
    before, the leader) over the throttle."""
    into: dict[int, float] = {}
    out: dict[int, float] = {}
    for size, b, a in zip(sizes, before, after, strict=True):
        for t in a:
            if t not in b:
                into[t] = into.get(t, 0.0) + size
                out[b[0]] = out.get(b[0], 0.0) + size
    return max([*into.values(), *out.values(), 0.0]) / throttle


def shape_of(seed: int) -> Shape:
    """The shape of ``seed`` (the same every time)."""
    c = cluster_of(seed)
    rnd = random.Random(f"shape-{seed}")
    n = rnd.randint(3, 14)
    rf = rnd.choice((1, 1, 2, 2, 3)) if c.brokers >= 6 else rnd.choice((1, 1, 2))
    before, after = _layout(rnd, c, n, rf)
    throttle = int(math.exp(rnd.uniform(math.log(0.2 * MB), math.log(50 * MB))))
    weights = [math.exp(rnd.uniform(0, math.log(100))) for _ in range(n)]  # two decades
    unit = bound_seconds(weights, before, after, throttle)
    scale = rnd.uniform(*TARGET_S) / unit
    sizes = [max(1, int(w * scale)) for w in weights]
    opts: dict[str, Any] = {
        "batch_size": rnd.randint(1, max(1, min(6, n))),
        "incremental": rnd.random() < 0.6,
    }
    if rnd.random() < 0.3:
        opts["max_moves_per_broker"] = rnd.randint(1, 2)
    if rf >= 2 and rnd.random() < 0.35:
        opts["parallel_replica_count"] = 1
    change = None
    if rnd.random() < 0.35:
        change = (rnd.uniform(0.1, 0.6), rnd.choice((0.5, 0.75, 1.5, 2.0)))
    restart = None
    if rnd.random() < 0.25:
        targets = sorted({t for b, a in zip(before, after, strict=True) for t in a if t not in b})
        restart = (rnd.uniform(0.1, 0.6), rnd.choice(targets), rnd.uniform(3.0, 15.0))
    return Shape(seed, c, sizes, before, after, throttle, opts, change, restart)
