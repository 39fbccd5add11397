"""A network pass's Placement over hand-made replica lists and loads: brokers 1..n without
racks, every partition of size 1 and movable, nothing in the background."""

from __future__ import annotations

from reassign_kit.planner.network import RESOURCES, Goals
from reassign_kit.planner.network_pass import Placement


def placement(reps, loads, n_brokers: int, tolerance: float = 0.1) -> Placement:
    brokers = list(range(1, n_brokers + 1))
    keys = [("t", i) for i in range(len(reps))]
    return Placement(
        reps={k: list(r) for k, r in zip(keys, reps, strict=True)},
        load=dict(zip(keys, loads, strict=True)),
        size=dict.fromkeys(keys, 1),
        background=[],
        background_bytes={},
        background_count={},
        racks=dict.fromkeys(brokers),
        placeable=frozenset(brokers),
        holders=frozenset(brokers),
        goals=Goals.of(brokers, None, RESOURCES, tolerance),
    )
