"""Edmonds-Karp augmentation on a residual capacity map, shared by the planner's rack flows
(``planner``'s leader-rack apportioning and ``rack_repair``'s departures): small graphs where
a deterministic order (the map's insertion order) matters more than speed."""

from __future__ import annotations

from collections.abc import Hashable, MutableMapping


def augment(cap: MutableMapping[Hashable, MutableMapping[Hashable, int]], src, sink) -> None:
    """Push as much flow from ``src`` to ``sink`` as ``cap`` allows, in place: afterwards
    ``cap`` holds the residual capacities (flow on an arc = its capacity before - after).
    Every arc needs its reverse arc present (capacity 0 if none)."""
    while True:
        parent = {src: None}
        queue = [src]
        for u in queue:
            if u == sink:
                break
            for v, r in cap[u].items():
                if r > 0 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if sink not in parent:
            return
        path, v = [], sink
        while parent[v] is not None:
            path.append((parent[v], v))
            v = parent[v]
        f = min(cap[u][v] for u, v in path)
        for u, v in path:
            cap[u][v] -= f
            cap[v][u] += f
