"""Pass 3b: in-rack levelling. Each chunk meets its own quotas, but on a small
snapshot, or with brokers removed from two racks, the detours of independent chunks need not
cancel out: a broker can end two replicas above another of its rack. The driver sees the final
counts (the same per-(chunk, broker) totals as the bytes pass), pairs the fullest broker of each
rack with its emptiest until they are at most one apart, and gives each pair to the chunk that
holds most of the giver; the chunk re-points an arrival (no extra move) or, failing that, moves
one of the giver's replicas (one move), to a broker of the same rack: the rack spread is unchanged.
A no-op wherever the spread within each rack is already <= 1."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from .aggregates import rack_key
from .quotas import Prepared
from .rows import Changed, chunk_key

LEVEL_ROUNDS = 4  # a pair no chunk could take goes to the next chunk holding the giver


def level_quotas(
    totals: Mapping[tuple[int, int], tuple[int, int]], prep: Prepared, round_: int = 0
) -> dict[int, list[tuple[int, int]]]:
    """chunk -> [(giver, receiver)], one replica each, so that within every rack the brokers end
    at most one replica apart; empty when they already are."""
    ctx = prep.ctx
    count: dict[int, int] = defaultdict(int)
    per: dict[int, dict[int, int]] = defaultdict(dict)
    for (c, b), (_, n) in totals.items():
        count[b] += n
        per[b][c] = n
    groups: dict = defaultdict(list)
    for b in ctx.allowed:
        groups[rack_key(ctx, b)].append(b)
    placeable = set(ctx.placeable)
    out: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for k in sorted(groups, key=str):
        bs = sorted(groups[k])
        level = {b: count.get(b, 0) for b in bs}
        recv = [b for b in bs if b in placeable]
        if not recv:
            continue
        for _ in range(sum(level.values())):
            o = max(bs, key=lambda b: (level[b], -b))
            room = [b for b in recv if level[b] < prep.caps.get(b, level[b] + 1)]  # max_replicas
            if not room:
                break
            u = min(room, key=lambda b: (level[b], b))
            if level[o] - level[u] <= 1:
                break
            chunks = sorted(per[o], key=lambda c: (-per[o][c], c))
            if not chunks:
                break
            c = chunks[round_ % len(chunks)]
            per[o][c] -= 1
            if per[o][c] <= 0:
                del per[o][c]
            out[c].append((o, u))
            level[o] -= 1
            level[u] += 1
    return dict(out)


def level_chunk(rows: Sequence[Changed], pairs: Sequence[tuple[int, int]], prep: Prepared):
    """Apply a chunk's levelling pairs to its final rows (every partition of the chunk, in chunk
    order); a pair with no partition to take it is left (the next round tries another chunk)."""
    rows = sorted(rows, key=lambda r: (chunk_key(r[0], r[1]), r[0], r[1]))
    if not pairs:
        return rows
    new = [list(r[3]) for r in rows]
    frozen = prep.frozen
    for o, u in pairs:
        pick = None
        for paid in (False, True):  # an arrival on o first (re-pointed: no extra move)
            for i, r in enumerate(rows):
                reps = new[i]
                if o not in reps or u in reps or (r[0], r[1]) in frozen:
                    continue
                if (o in r[2]) is paid:
                    pick = i
                    break
            if pick is not None:
                break
        if pick is None:
            continue
        reps = new[pick]
        reps[reps.index(o)] = u
    return [Changed(r[0], r[1], r[2], n, r[4]) for r, n in zip(rows, new, strict=True)]
