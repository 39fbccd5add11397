"""Racked snapshots with partitions holding two replicas in one rack, shared by
the unit tests and the Spark parity tests."""

from __future__ import annotations

import random

from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot

RACKS = {1: "a", 2: "a", 3: "a", 4: "b", 5: "b", 6: "b", 7: "c", 8: "c", 9: "c"}


def racked_snapshot(seed: int, n_parts: int = 90, share: float = 0.15, racks=RACKS) -> Snapshot:
    """RF 3 over 3 racks, one replica per rack, except ``share`` of the partitions that hold
    two replicas in one rack (a rack left out)."""
    rng = random.Random(seed)
    by_rack: dict[str, list[int]] = {}
    for b, r in sorted(racks.items()):
        by_rack.setdefault(r, []).append(b)
    names = sorted(by_rack)
    parts = []
    for p in range(n_parts):
        reps = [rng.choice(by_rack[r]) for r in names]
        if rng.random() < share:
            src, dst = rng.sample(range(len(names)), 2)
            others = [b for b in by_rack[names[dst]] if b != reps[dst]]
            reps[src] = rng.choice(others)
        rng.shuffle(reps)
        parts.append(PartitionEntry("t", p, tuple(reps), 10 + p))
    return Snapshot.of(
        [BrokerEntry(b, r) for b, r in sorted(racks.items())], [TopicEntry("t", 2)], parts
    )
