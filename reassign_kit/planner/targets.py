"""Pass 2, on the driver: per-broker replica targets (spread <= 1 within each rack, and
globally where racks allow), the lower bounds on moved replicas and bytes, and the bytes
bands; a CapacityError when the capacity file cannot hold the replicas."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace

from ..errors import CapacityError
from .aggregates import Aggregates
from .apportion import capped_split, round_shares, waterfill
from .params import PlanParams
from .rules import (
    VIRTUAL,
    RuleContext,
)


def _rack_bounds(rf_hist: Mapping[int, int], n_racks: int, brokers_in_rack: int) -> tuple[int, int]:
    lo = hi = 0
    for rf, n in rf_hist.items():
        per_hi = 1 if rf <= n_racks else rf - (n_racks - 1)
        hi += n * min(per_hi, brokers_in_rack)
        lo += n * (1 if rf >= n_racks else 0)
    return lo, hi


def count_refusal(
    what: str, total: int, room: int, brokers: Sequence[int], caps, cordoned=frozenset()
) -> CapacityError:
    held = sorted(b for b in brokers if b in cordoned)
    return CapacityError(
        [
            f"{what}: {total} replicas to place, but brokers {sorted(brokers)} may hold "
            f"{room} (max_replicas {dict(sorted((b, caps[b]) for b in brokers if b in caps))}"
            + (f"; broker(s) {held} cordoned (cordoned.log.dirs): none may grow" if held else "")
            + f"): {total - room} over"
        ],
        header="no plan fits the capacity file's max_replicas"
        + (" and the cordoned brokers" if held else ""),
    )


def broker_targets(
    ctx: RuleContext,
    cur: Mapping[int, int],
    rf_hist: Mapping[int, int],
    balance: bool,
    caps: Mapping[int, int] | None = None,
) -> dict[int, int]:
    """Replica count each broker should end with (0 for removed brokers), never above its
    ``caps`` (max_replicas); a CapacityError when the caps cannot hold the replicas."""
    caps = dict(caps or {})
    allowed = ctx.allowed
    total = sum(cur.values())
    n_racks = ctx.rack_count
    groups: dict[str | None, list[int]] = defaultdict(list)
    for b in allowed:
        groups[ctx.racks[b] if n_racks > 1 else None].append(b)
    targets = {b: 0 for b in set(cur) | set(ctx.racks)}
    if not balance:
        targets.update(_kept_in_place(ctx, cur, caps, groups))
        return targets
    cur_group = {k: sum(cur.get(b, 0) for b in bs) for k, bs in groups.items()}
    room = {
        k: (sum(caps[b] for b in bs) if all(b in caps for b in bs) else total)
        for k, bs in groups.items()
    }
    if len(groups) == 1:
        group_total = {next(iter(groups)): total}
        k = next(iter(groups))
        if room[k] < total:
            raise count_refusal("the cluster", total, room[k], groups[k], caps, ctx.cordoned)
    else:
        group_total = _rack_totals(ctx, rf_hist, groups, room, cur_group, total, caps)
    for k, bs in groups.items():
        split = capped_split(group_total[k], bs, cur, caps)
        if split is None:  # rounding put one more on a full rack: cannot happen when bounded
            raise count_refusal(f"rack {k}", group_total[k], room[k], bs, caps, ctx.cordoned)
        targets.update(split)
    return targets


def _kept_in_place(
    ctx: RuleContext,
    cur: Mapping[int, int],
    caps: dict[int, int],
    groups: dict[str | None, list[int]],
) -> dict[int, int]:
    """Without a count goal: everyone keeps what it has; what must leave fills the emptiest
    brokers of its rack (then any), never over a cap."""
    allowed = ctx.allowed
    total = sum(cur.values())
    n_racks = ctx.rack_count
    levels = {b: min(cur.get(b, 0), caps.get(b, cur.get(b, 0))) for b in allowed}
    spill = 0
    by_rack: dict[str | None, int] = defaultdict(int)
    for b, n in cur.items():
        if b in ctx.removed or b == VIRTUAL or b not in ctx.racks or n > levels.get(b, n):
            key = ctx.racks.get(b) if n_racks > 1 else None
            n = n - levels.get(b, 0)  # all of a removed broker's, a capped one's excess
            if key in groups:
                by_rack[key] += n
            else:
                spill += n
    for key, n in sorted(by_rack.items(), key=lambda kv: str(kv[0])):
        filled, rest = waterfill({b: levels[b] for b in groups[key]}, n, caps)
        levels.update(filled)
        spill += rest
    levels, rest = waterfill(levels, spill, caps)
    if rest:
        raise count_refusal("the cluster", total, total - rest, allowed, caps, ctx.cordoned)
    return levels


def _rack_totals(
    ctx: RuleContext,
    rf_hist: Mapping[int, int],
    groups: dict[str | None, list[int]],
    room: dict[str | None, int],
    cur_group: dict[str | None, int],
    total: int,
    caps: dict[int, int],
) -> dict[str | None, int]:
    """Each rack's replica count: an equal share per broker at one water level, clamped to
    what rack-awareness puts there (at least, at most) and to the rack's room."""
    allowed = ctx.allowed
    n_racks = ctx.rack_count
    bounds = {k: _rack_bounds(rf_hist, n_racks, len(bs)) for k, bs in groups.items()}
    for k, (lo, hi) in list(bounds.items()):
        if room[k] < lo:
            raise count_refusal(
                f"rack {k} (rack-awareness puts at least {lo} replicas there)",
                lo,
                room[k],
                groups[k],
                caps,
                ctx.cordoned,
            )
        bounds[k] = (lo, min(hi, room[k]))
    if sum(hi for _, hi in bounds.values()) < total:
        raise count_refusal(
            "the cluster (rack-awareness and max_replicas)",
            total,
            sum(hi for _, hi in bounds.values()),
            allowed,
            caps,
            ctx.cordoned,
        )
    lo_l, hi_l = 0.0, float(total) + 1.0
    for _ in range(100):  # water level so that clamped shares add up to the total
        mid = (lo_l + hi_l) / 2
        s = sum(min(max(mid * len(bs), bounds[k][0]), bounds[k][1]) for k, bs in groups.items())
        lo_l, hi_l = (mid, hi_l) if s < total else (lo_l, mid)
    shares = {k: min(max(hi_l * len(bs), bounds[k][0]), bounds[k][1]) for k, bs in groups.items()}
    scale = total / sum(shares.values()) if sum(shares.values()) else 0
    shares = {k: v * scale for k, v in shares.items()}
    group_total = round_shares(shares, total, cur_group)
    for k in sorted(group_total, key=str):  # rounding never lifts a rack over its bound
        over = group_total[k] - bounds[k][1]
        for k2 in sorted(group_total, key=str):
            if over <= 0:
                break
            give = min(over, bounds[k2][1] - group_total[k2]) if k2 != k else 0
            if give > 0:
                group_total[k2] += give
                group_total[k] -= give
                over -= give
    return group_total


def lower_bound(
    cur: Mapping[int, int],
    targets: Mapping[int, int],
    ctx: RuleContext | None = None,
    forced: Mapping[str, int] | None = None,
) -> int:
    """Replicas that must leave removed / over-full brokers, or arrive on under-full ones.

    With racks it is tighter: a rack whose remaining brokers must take ``forced`` pinned
    replicas (rack-awareness leaves them no other rack) must also send that many elsewhere
    beyond its target."""
    keys = set(cur) | set(targets)
    out_ = sum(max(0, cur.get(b, 0) - targets.get(b, 0)) for b in keys)
    in_ = sum(max(0, targets.get(b, 0) - cur.get(b, 0)) for b in keys)
    lb = max(out_, in_)
    if ctx is None or not forced or ctx.rack_count <= 1:
        return lb
    must = sum(n for b, n in cur.items() if b < 0 or b in ctx.removed or b not in ctx.racks)
    racked = must
    for rk in sorted(ctx.rack_set):
        bs = [b for b in ctx.allowed if ctx.racks[b] == rk]
        excess = sum(max(0, cur.get(b, 0) - targets.get(b, 0)) for b in bs)
        held = sum(cur.get(b, 0) for b in bs)
        final = sum(targets.get(b, 0) for b in bs)
        racked += max(excess, held + forced.get(rk, 0) - final, 0)
    return max(lb, racked)


def relay_bound(
    ctx: RuleContext,
    cur: Mapping[int, int],
    targets: Mapping[int, int],
    capable: Mapping[int, int],
    rf_change: bool,
) -> int:
    """Moves = departures (RF unchanged). A rack that must shrink sends replicas to other racks;
    only ``min(excess, capable)`` of each broker's leaving replicas may change rack, so every
    further cross-rack departure leaves a broker below target and costs one more arrival."""
    if rf_change or ctx.rack_count <= 1:
        return 0
    excess = {b: max(0, n - targets.get(b, 0)) for b, n in cur.items()}
    total = sum(excess.values())
    for rk in sorted(ctx.rack_set):
        bs = [b for b in set(cur) | set(targets) if b >= 0 and ctx.racks.get(b) == rk]
        shrink = max(0, sum(cur.get(b, 0) for b in bs) - sum(targets.get(b, 0) for b in bs))
        cap = sum(min(excess.get(b, 0), capable.get(b, 0)) for b in bs)
        total += max(0, shrink - cap)
    return total


def file_max_replicas(params: PlanParams, b: int) -> int | None:
    return params.capacity.max_replicas(b) if params.capacity is not None else None


def plan_targets(ctx: RuleContext, cur, rf_hist, balance: bool, params: PlanParams, caps) -> dict:
    """broker_targets; when the capacity file's max_replicas make it refuse, the counts are
    planned with the cordons' caps only: the targets' reading of max_replicas (rack bounds,
    rounding) is no proof, the exact fit at the end decides (capacity_fit)."""
    try:
        return broker_targets(ctx, cur, rf_hist, balance, caps)
    except CapacityError:
        if params.capacity is None:
            raise
        bare = broker_caps(ctx, replace(params, capacity=None), cur)
        return broker_targets(ctx, cur, rf_hist, balance, bare)


def broker_caps(ctx: RuleContext, params: PlanParams, cur: Mapping[int, int]) -> dict[int, int]:
    """max_replicas per broker; a fully cordoned broker may not grow (KIP-1066)."""
    cap = params.capacity
    caps = {b: m for b in ctx.allowed if cap is not None and (m := cap.max_replicas(b)) is not None}
    for b in ctx.cordoned:
        if b in set(ctx.allowed):
            caps[b] = min(caps.get(b, cur.get(b, 0)), cur.get(b, 0))
    return caps


def bytes_bands(
    agg: Aggregates, ctx: RuleContext, params: PlanParams
) -> tuple[dict[int, tuple[float, float]], dict[int, float], int]:
    """Per allowed broker: (low, high) bytes, its share of the bytes, and the lower bound on
    bytes moved.

    share = disk / total disk x total bytes (equal shares without a capacity file). With
    ``--balance bytes`` a broker aims within ``share x (1 +- tolerance)``; with a capacity file
    its disk is a hard ceiling as well. The lower bound: every byte above a broker's ceiling
    (all of a removed broker's, all an RF increase adds) must leave it, every byte below a
    floor must arrive, and a moved replica's bytes leave one broker and arrive on one other:
    moved bytes >= max(sum of excesses, sum of deficits)."""
    allowed = ctx.allowed
    cap = params.capacity
    goal = "bytes" in params.balance
    total = sum(agg.bytes.values())  # after the RF change; placeholders carry their size
    weights = {b: (cap.disk(b) or 0) if cap is not None else 1 for b in allowed}
    w = sum(weights.values())
    shares = {b: total * weights[b] / w if w else 0.0 for b in allowed}
    if cap is not None:
        disk = sum(weights.values())
        if total > disk:
            raise CapacityError(
                [
                    f"brokers {allowed}: {total} bytes to hold on {disk} bytes of disk: "
                    f"{total - disk} bytes ({100 * (total - disk) / disk:.1f}%) over"
                ],
                header="no plan fits the capacity file's disk_bytes",
            )
    if not goal and cap is None:
        bands: dict[int, tuple[float, float]] = {}
    else:
        tol = params.bytes_tolerance if goal else 0.0
        bands = {}
        for b in allowed:
            lo = shares[b] * (1 - tol) if goal else 0.0
            hi = shares[b] * (1 + tol) if goal else float("inf")
            if cap is not None:
                hi = min(hi, float(cap.disk(b) or 0))
            bands[b] = (lo, hi)
    must = sum(n for b, n in agg.bytes.items() if b not in set(allowed))
    out_ = must + sum(max(0.0, agg.bytes.get(b, 0) - bands[b][1]) for b in bands)
    in_ = sum(max(0.0, bands[b][0] - agg.bytes.get(b, 0)) for b in bands)
    v = max(out_, in_)
    near = round(v)  # an integer up to float noise is that integer; else its floor
    return bands, shares, int(near if abs(v - near) <= 1e-9 * max(1.0, v) else math.floor(v))
