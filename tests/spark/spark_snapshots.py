"""Small random rack-aware snapshots for the Spark tests."""

from __future__ import annotations

import random

from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot


def random_snapshot(
    seed: int, brokers: int = 9, racks: str = "abc", partitions: int = 300
) -> Snapshot:
    rnd = random.Random(seed)
    bs = [BrokerEntry(i, racks[i % len(racks)]) for i in range(1, brokers + 1)]
    by_rack: dict[str, list[int]] = {}
    for b in bs:
        by_rack.setdefault(b.rack, []).append(b.id)
    parts = []
    topics = [f"t{t}" for t in range(4)]
    for n in range(partitions):
        topic = topics[n % len(topics)]
        rf = 3 if topic != "t3" else 2
        chosen_racks = rnd.sample(sorted(by_rack), min(rf, len(by_rack)))
        reps = [rnd.choice(by_rack[r]) for r in chosen_racks]
        parts.append(PartitionEntry(topic, n // len(topics), tuple(reps), rnd.randint(0, 10**6)))
    return Snapshot.of(bs, [TopicEntry(t, 2) for t in topics], parts)
