"""Integer shares: apportionment (largest remainder, Webster), water filling, and the small
max-flow that routes leaving replicas to racks. Pure arithmetic, no planner types."""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from .maxflow import augment


def apportion(total: int, weights: Sequence[int]) -> list[int]:
    """Largest remainder, ties to the lower index: integer shares of ``total`` by weight."""
    w = sum(weights)
    if total == 0 or w == 0:
        return [0] * len(weights)
    base = [total * x // w for x in weights]
    rem = total - sum(base)
    order = sorted(range(len(weights)), key=lambda i: (-((total * weights[i]) % w), i))
    for i in order[:rem]:
        base[i] += 1
    return base


def apportion_2d(row_sums: Sequence[int], col_sums: Sequence[int]) -> list[list[int]]:
    """A non-negative integer matrix with exactly these row and column sums, spread in
    proportion (Webster seat by seat over the cumulative rows; with integer quotas no column
    ever exceeds its sum, and house monotonicity keeps every cell >= 0)."""
    assert sum(row_sums) == sum(col_sums), (row_sums, col_sums)
    out = [[0] * len(col_sums) for _ in row_sums]
    seats = [0] * len(col_sums)
    heap = [(-c / 0.5, j) for j, c in enumerate(col_sums) if c > 0]
    heapq.heapify(heap)
    for i, r in enumerate(row_sums):
        row = out[i]
        for _ in range(r):
            _, j = heapq.heappop(heap)
            row[j] += 1
            seats[j] += 1
            if seats[j] < col_sums[j]:
                heapq.heappush(heap, (-col_sums[j] / (seats[j] + 0.5), j))
    return out


def round_shares(shares: dict, total: int, tiebreak: Mapping) -> dict:
    """Floors plus largest remainders; ties go to the larger ``tiebreak`` (fewer moves)."""
    base = {k: int(v) for k, v in shares.items()}
    rem = total - sum(base.values())
    order = sorted(shares, key=lambda k: (-(shares[k] - base[k]), -tiebreak.get(k, 0), str(k)))
    for k in order[:rem]:
        base[k] += 1
    return base


def waterfill(
    levels: dict[int, int], amount: int, caps: Mapping[int, int] | None = None
) -> tuple[dict[int, int], int]:
    """Raise the lowest levels first by ``amount`` units (ties to the lower broker id), never
    above ``caps``; returns the levels and what did not fit."""
    caps = caps or {}
    out = dict(levels)
    heap = [(v, b) for b, v in out.items() if v < caps.get(b, v + amount + 1)]
    heapq.heapify(heap)
    while amount > 0 and heap:
        v, b = heapq.heappop(heap)
        out[b] = v + 1
        amount -= 1
        if v + 1 < caps.get(b, v + 2):
            heapq.heappush(heap, (v + 1, b))
    return out, amount


def capped_split(n: int, bs: Sequence[int], cur: Mapping[int, int], caps: Mapping[int, int]):
    """``n`` replicas over ``bs`` as evenly as ``caps`` allow; the ceilings go to the brokers
    that hold most already (fewer moves). None when the caps cannot hold ``n``."""
    left = list(bs)
    out: dict[int, int] = {}
    while left:
        base = n // len(left)
        fixed = [b for b in left if b in caps and caps[b] <= base]
        if not fixed:
            break
        for b in fixed:
            out[b] = caps[b]
            n -= caps[b]
            left.remove(b)
    if not left:
        return out if n == 0 else None
    base, extra = divmod(n, len(left))
    ranked = sorted(left, key=lambda b: (-cur.get(b, 0), b))
    for i, b in enumerate(ranked):
        out[b] = base + (1 if i < extra else 0)
    return out


def sum_by(pairs: Iterable[tuple]) -> dict:
    out: dict = defaultdict(int)
    for k, n in pairs:
        out[k] += n
    return dict(out)


def max_flow(
    supply: Mapping[tuple, int],
    demand: Mapping,
) -> dict[tuple, int]:
    """Max flow from (chunk, class) supplies to racks (class = the racks allowed); returns
    (chunk, class, rack) -> replicas. Tiny graph, Edmonds-Karp, deterministic order."""
    src, sink = ("S",), ("T",)
    cap: dict = defaultdict(lambda: defaultdict(int))
    for (c, cls), n in sorted(
        supply.items(), key=lambda kv: (kv[0][0], sorted(map(str, kv[0][1])))
    ):
        u = ("C", c, cls)
        cap[src][u] += n
        for dr in sorted(cls, key=str):
            v = ("R", c, dr)
            cap[u][v] += n
            cap[v][("L", dr)] += n
            cap[v].setdefault(u, 0)
            cap[("L", dr)].setdefault(v, 0)
        cap[u].setdefault(src, 0)
    for dr, n in demand.items():
        cap[("L", dr)][sink] += n
        cap[sink].setdefault(("L", dr), 0)
    cap[src], cap[sink]  # noqa: B018 - both ends exist even with nothing to move
    cap = {u: dict(vs) for u, vs in cap.items()}
    for u in list(cap):
        for v in list(cap[u]):
            cap.setdefault(v, {}).setdefault(u, 0)
    orig = {u: dict(vs) for u, vs in cap.items()}
    augment(cap, src, sink)
    out: dict[tuple, int] = {}
    for u, vs in orig.items():
        if u[0] != "C":
            continue
        for v, c0 in vs.items():
            if v[0] == "R" and c0 > 0 and c0 - cap[u][v] > 0:
                out[(u[1], u[2], v[2])] = c0 - cap[u][v]
    return out
