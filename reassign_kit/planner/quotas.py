"""Pass 2, on the driver: from the aggregates only, the targets, the lower bound and every
chunk's quotas (how many replicas it gives up from each broker, receives on each, and moves
between each pair of racks), adding up exactly to the global targets (``Prepared``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from . import repairs as repairs_hook
from .aggregates import Aggregates, rack_key
from .apportion import apportion, apportion_2d, max_flow, sum_by
from .params import PlanParams
from .rules import (
    RuleContext,
)
from .targets import (
    broker_caps,
    bytes_bands,
    count_refusal,
    file_max_replicas,
    lower_bound,
    plan_targets,
    relay_bound,
)


@dataclass
class ChunkQuota:
    give: dict[int, int] = field(default_factory=dict)
    take: dict[int, int] = field(default_factory=dict)
    flows: dict[tuple, int] = field(default_factory=dict)  # (source rack, dest rack) -> replicas


@dataclass
class Prepared:
    """Everything the driver decides from the aggregates; shipped to every chunk."""

    ctx: RuleContext
    params: PlanParams
    targets: dict[int, int]
    lower_bound: int
    quotas: dict[int, ChunkQuota]
    bytes_heavy: frozenset[int]
    agg: Aggregates
    dst_racks: frozenset = frozenset()
    # bytes: broker -> (low, high) bytes a plan aims within; high is
    # the hard disk limit or, with --balance bytes, the share plus tolerance when that is lower
    bands: dict[int, tuple[float, float]] = field(default_factory=dict)
    shares: dict[int, float] = field(default_factory=dict)
    bytes_lower_bound: int = 0
    caps: dict[int, int] = field(default_factory=dict)  # max_replicas
    # rack repair: (topic, partition) -> positions of the replicas that change rack; and the
    # violating partitions left as they are (no broker of a missing rack may take a replica):
    # the chunk pass changes no replica of theirs, the validator would refuse the set
    repairs: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    frozen: frozenset = frozenset()

    @property
    def bytes_pass(self) -> bool:
        """Whether the bytes pass runs: a bytes goal, or disk limits to keep."""
        return bool(self.bands) and (
            "bytes" in self.params.balance or self.params.capacity is not None
        )


def prepare(agg: Aggregates, ctx: RuleContext, params: PlanParams) -> Prepared:
    allowed = ctx.allowed
    if not allowed:
        raise UsageError("--remove-brokers: no broker would be left to place replicas on")
    max_rf = max(agg.rf_hist, default=0)
    if max_rf > len(allowed):
        raise UsageError(
            f"replication factor {max_rf} needs {max_rf} brokers, only {len(allowed)} would remain ({allowed})"
        )
    chunks = list(range(params.chunks))
    cur0 = agg.per_broker(agg.replicas)
    balance = "replicas" in params.balance
    bands, byte_shares, bytes_lb = bytes_bands(agg, ctx, params)
    for b in ctx.cordoned:  # a cordoned broker cannot be raised to a floor (it takes nothing)
        if b in bands:
            bands[b] = (min(bands[b][0], agg.bytes.get(b, 0)), bands[b][1])
    # rack repair: the replicas that leave a doubled rack, as placeholders
    hook = repairs_hook.choose(agg, ctx, params, cur0, balance)
    work, repairs = hook.work, hook.positions
    cur = work.per_broker(work.replicas)
    caps = broker_caps(ctx, params, cur)
    total = sum(cur.values())
    file_caps = {b: m for b in allowed if (m := file_max_replicas(params, b)) is not None}
    if file_caps and len(file_caps) == len(allowed) and sum(file_caps.values()) < total:
        raise count_refusal("the cluster", total, sum(file_caps.values()), allowed, file_caps)
    targets = plan_targets(ctx, cur, work.rf_hist, balance, params, caps)
    if balance:  # bounds on the snapshot as it is (which doubled replica leaves is free)
        lb = max(
            lower_bound(cur0, targets, ctx, work.forced_by_rack()), hook.bound(cur0, targets, ctx)
        )
    else:  # no count goal: what must move (removed brokers, placeholders, repairs) is the
        # bound; the targets are no goal, so no rack is full and no forced arrival costs more
        lb = lower_bound(cur, targets)

    quotas = _gives(chunks, cur, work, ctx, targets)
    deficit = {b: targets[b] - cur.get(b, 0) for b in allowed if targets[b] > cur.get(b, 0)}
    dst_racks = sorted({rack_key(ctx, b) for b in deficit}, key=str)
    all_racks = frozenset(dst_racks)
    _route(quotas, chunks, work, ctx, deficit, dst_racks)
    heavy = _heavy(agg, params, allowed)
    must, short = _must_move(work, ctx, targets, cur, dst_racks)
    lb = max(
        lb,
        must + (short if balance else 0),  # without a count goal no rack is full
        # departures beyond what may change rack: a bound only where counts are a goal
        relay_bound(ctx, cur0, targets, agg.capable, bool(params.rf_change())) if balance else 0,
    )
    frozen = hook.frozen(agg, params)
    return Prepared(
        ctx,
        params,
        targets,
        lb,
        quotas,
        heavy,
        agg,
        all_racks,
        bands,
        byte_shares,
        bytes_lb,
        caps,
        repairs,
        frozen,
    )


def _heavy(agg: Aggregates, params: PlanParams, allowed: list[int]) -> frozenset[int]:
    """With a bytes goal: the brokers holding more bytes than the average."""
    heavy: frozenset[int] = frozenset()
    if "bytes" in params.balance and allowed:
        real = {b: agg.bytes.get(b, 0) for b in allowed}
        avg = sum(agg.bytes.get(b, 0) for b in agg.bytes) / len(allowed)
        heavy = frozenset(b for b, v in real.items() if v > avg)
    return heavy


def _must_move(
    work: Aggregates,
    ctx: RuleContext,
    targets: dict[int, int],
    cur: dict[int, int],
    dst_racks: list[Any],
) -> tuple[int, int]:
    """The replicas rack-awareness makes leave, and how many of them no rack with room can
    take: no plan can avoid a detour for those."""
    all_racks = frozenset(dst_racks)
    allowed = ctx.allowed
    must_flow = max_flow(
        sum_by(((0, frozenset(o) & all_racks), n) for (_, _, o), n in work.classes.items()),
        {
            dr: max(0, sum(targets[b] - cur.get(b, 0) for b in allowed if rack_key(ctx, b) == dr))
            for dr in dst_racks
        },
    )
    must = sum(work.classes.values())
    return must, must - sum(must_flow.values())


def _gives(
    chunks: list[int],
    cur: dict[int, int],
    work: Aggregates,
    ctx: RuleContext,
    targets: dict[int, int],
) -> dict[int, ChunkQuota]:
    """Each chunk's quota of what each broker gives: removed / virtual brokers give
    everything; over-full brokers give their surplus, by share."""
    quotas = {c: ChunkQuota() for c in chunks}
    for b, n in cur.items():
        per = [work.replicas.get((c, b), 0) for c in chunks]
        surplus = n if (b < 0 or b in ctx.removed) else max(0, n - targets.get(b, 0))
        shares = per if surplus == n else apportion(surplus, per)
        for c, s in zip(chunks, shares, strict=True):
            if s:
                quotas[c].give[b] = s
    return quotas


def _route(
    quotas: dict[int, ChunkQuota],
    chunks: list[int],
    work: Aggregates,
    ctx: RuleContext,
    deficit: dict[int, int],
    dst_racks: list[Any],
) -> None:
    """Which rack each chunk's leaving replicas go to, and which broker of it takes them:
    a small max-flow over (chunk, option class) -> (chunk, rack) -> rack, so that replicas
    rack-awareness pins get room first; routed globally, then every chunk given its
    proportional share of each route."""
    demand = {dr: sum(n for b, n in deficit.items() if rack_key(ctx, b) == dr) for dr in dst_racks}
    all_racks = frozenset(dst_racks)
    supply_cls: dict[tuple, int] = defaultdict(int)  # (chunk, class) -> replicas
    must_given: dict[tuple, int] = defaultdict(int)
    for (c, k, opts), n in work.classes.items():
        supply_cls[(c, frozenset(opts) & all_racks)] += n
        must_given[(c, k)] += n
    for c, q in quotas.items():
        for b, n in q.give.items():
            if b >= 0 and b not in ctx.removed:  # surplus of an over-full broker
                k = rack_key(ctx, b)
                # which replicas leave an over-full broker is free, but most can only stay in
                # their rack (RF >= racks); its own rack first, what does not fit goes anywhere
                supply_cls[(c, frozenset([k]) & all_racks or all_racks)] += n
    # route globally, then give every chunk its proportional share of each route
    classes = sorted({cls for (_, cls) in supply_cls}, key=lambda c: sorted(map(str, c)))
    total_cls = {cls: sum(n for (_, c2), n in supply_cls.items() if c2 == cls) for cls in classes}
    routed = max_flow({(0, cls): n for cls, n in total_cls.items()}, demand)
    route: dict[tuple, int] = defaultdict(int)
    for (_, cls, dr), n in routed.items():
        route[(cls, dr)] += n
    unrouted = [total_cls[cls] - sum(route[(cls, dr)] for dr in dst_racks) for cls in classes]
    left = [demand[dr] - sum(route[(cls, dr)] for cls in classes) for dr in dst_racks]
    extra = apportion_2d(unrouted, left)  # what no rule-abiding route places: detours
    for ci, cls in enumerate(classes):
        for j, dr in enumerate(dst_racks):
            route[(cls, dr)] += extra[ci][j]
    take_rack: dict[tuple, int] = defaultdict(int)  # (chunk, rack) -> replicas
    for cls in classes:
        key = tuple(sorted(cls, key=str))
        m = apportion_2d(
            [supply_cls.get((c, cls), 0) for c in chunks], [route[(cls, dr)] for dr in dst_racks]
        )
        for ci, c in enumerate(chunks):
            for j, dr in enumerate(dst_racks):
                if m[ci][j]:
                    quotas[c].flows[(key, dr)] = quotas[c].flows.get((key, dr), 0) + m[ci][j]
                    take_rack[(c, dr)] += m[ci][j]
    for dr in dst_racks:
        bs = sorted(b for b in deficit if rack_key(ctx, b) == dr)
        m = apportion_2d([take_rack[(c, dr)] for c in chunks], [deficit[b] for b in bs])
        for ci, c in enumerate(chunks):
            for j, b in enumerate(bs):
                if m[ci][j]:
                    quotas[c].take[b] = m[ci][j]
