"""The pace ladder's model, shared by ``bench/bench_pace_ladder.py`` and its tests: a 4-broker
``SimCluster`` with Kafka's 11-window replication quota and 200 MB/s disks whose plan moves
every partition from brokers 1, 2 to 3, 4, and a producer's p99 per broker that grows with the
bytes it carries (``FlowLatency``)."""

from __future__ import annotations

from reassign_kit.cluster.quota import QUOTA_WINDOWS
from reassign_kit.cluster.simulate import SimCluster
from reassign_kit.health.signals import BrokerHealth, HealthSample
from reassign_kit.model import Move, Plan, TopicPartition

MB = 1_000_000
CEILING = 32 * MB
DISK = 200 * MB
PARTS = 4
OBJECTIVE_MS = 50.0
LOADS = {"headroom": (10.0, 0.15), "tight": (10.0, 1.5)}
WINDOW_S = 5.0


class FlowLatency:
    """p99 per broker = ``base_ms`` + ``ms_per_mbps`` x its busiest second of the last
    ``WINDOW_S`` (bytes sent as a leader plus received as a follower, read from the
    simulator at every sample)."""

    name = "flow-latency"

    def __init__(self, sim: SimCluster, base_ms: float, ms_per_mbps: float):
        self.sim, self.base_ms, self.ms_per_mbps = sim, base_ms, ms_per_mbps
        self.seen: dict[tuple[TopicPartition, int], float] = {}
        self.flows: list[tuple[float, dict[int, float]]] = []  # (ts, bytes/s per broker)
        self.last_t = 0.0
        self.over_s = 0.0
        self.limit_ms = OBJECTIVE_MS

    def _moved(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for sp in self.sim.partitions.values():
            for b in sp.target or ():
                if b in sp.original or ():
                    continue
                key = (sp.tp, b)
                now = sp.copied.get(b, float(sp.size_bytes) if b in sp.isr else 0.0)
                d = max(0.0, now - self.seen.get(key, 0.0))
                self.seen[key] = now
                out[b] = out.get(b, 0.0) + d
                if sp.leader is not None:
                    out[sp.leader] = out.get(sp.leader, 0.0) + d
        return out

    def sample(self) -> HealthSample:
        t = self.sim.now()
        dt = max(t - self.last_t, 1e-9)
        self.flows.append((t, {b: n / dt for b, n in self._moved().items()}))
        self.flows = [(ts, f) for ts, f in self.flows if ts > t - WINDOW_S]
        brokers = {}
        for b in self.sim.broker_ids:
            peak = max((f.get(b, 0.0) for _, f in self.flows), default=0.0)
            brokers[b] = BrokerHealth(b, produce_p99_ms=self.base_ms + self.ms_per_mbps * peak / MB)
        if any((h.produce_p99_ms or 0.0) > self.limit_ms for h in brokers.values()):
            self.over_s += dt  # a second over on any broker is a second over
        self.last_t = t
        return HealthSample(t, self.name, brokers, under_min_isr=frozenset())

    def close(self) -> None:
        pass


def cluster(length_s: float) -> tuple[SimCluster, Plan]:
    sim = SimCluster([1, 2, 3, 4], bandwidth=DISK, tick=0.25)
    sim.quota_windows = QUOTA_WINDOWS
    # the busiest end (a source leads half the partitions and feeds both new replicas)
    # moves length_s x the ceiling
    size = int(length_s * CEILING / PARTS)
    sim.add_topic("ladder", [[1 + p % 2, 2 - p % 2] for p in range(PARTS)], size)
    plan = Plan.of(Move(TopicPartition("ladder", p), (3, 4)) for p in range(PARTS))
    return sim, plan
