"""Pass 1, per chunk: the per-(chunk, broker) aggregates of the snapshot after the RF change
(counts, leaders, bytes, the rack-awareness classes of the replicas that must move) — small,
whatever the snapshot's size. The Spark twin is ``spark/planner.aggregate_spark``."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .params import PlanParams
from .rack_repair import (
    is_violating,
    shape,
)
from .rows import chunk_key
from .rules import (
    VIRTUAL,
    RuleContext,
    apply_rf,
    required_racks,
)


@dataclass
class Aggregates:
    """Per-(chunk, broker) facts about the snapshot after the RF change; small whatever the size."""

    replicas: dict[tuple[int, int], int] = field(default_factory=dict)
    leaders: dict[tuple[int, int], int] = field(default_factory=dict)
    bytes: dict[int, int] = field(default_factory=dict)
    partitions: dict[int, int] = field(default_factory=dict)
    rf_hist: dict[int, int] = field(default_factory=dict)
    # (chunk, source rack key, dest rack) -> replicas that rack-awareness pins to that rack
    forced: dict[tuple, int] = field(default_factory=dict)

    # (chunk, source rack key, racks the replica may go to) -> replicas that must move
    classes: dict[tuple, int] = field(default_factory=dict)
    # broker -> replicas on it that rack-awareness lets change rack (for the lower bound)
    capable: dict[int, int] = field(default_factory=dict)
    # the partitions that span fewer racks than they could (rack_repair.is_violating): few,
    # they come to the driver whole, as rows (topic, partition, replicas, size)
    violating: list = field(default_factory=list)

    def plus(self, add: Aggregates, sub: Aggregates) -> Aggregates:
        """These aggregates with ``add``'s counts added and ``sub``'s taken away (the repaired
        partitions counted with their placeholders instead of their replicas)."""
        out = Aggregates(violating=self.violating)
        for name in (
            "replicas",
            "leaders",
            "bytes",
            "partitions",
            "rf_hist",
            "forced",
            "classes",
            "capable",
        ):
            t: dict = defaultdict(int, getattr(self, name))
            for k, n in getattr(add, name).items():
                t[k] += n
            for k, n in getattr(sub, name).items():
                t[k] -= n
            setattr(out, name, {k: n for k, n in t.items() if n})
        return out

    def forced_by_rack(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for (_, _, rk), n in self.forced.items():
            out[rk] += n
        return dict(out)

    def per_broker(self, table: dict[tuple[int, int], int]) -> dict[int, int]:
        out: dict[int, int] = defaultdict(int)
        for (_, b), n in table.items():
            out[b] += n
        return dict(out)


def forced_racks(reps: Sequence[int], ctx: RuleContext) -> list[tuple]:
    """(source rack key, dest rack) for each replica of this partition that rack-awareness pins
    to one rack, given the replicas that must go (removed brokers, RF-increase placeholders)."""
    n_racks = ctx.rack_count
    if n_racks <= 1:
        return []
    going = [b for b in reps if b < 0 or b in ctx.removed]
    if not going:
        return []
    kept = {ctx.racks[b] for b in reps if b >= 0 and b not in ctx.removed}
    unused = sorted(ctx.rack_set - kept)
    if not (len(unused) <= len(going) if len(reps) >= n_racks else len(unused) == len(going)):
        return []
    srcs = [rack_key(ctx, b) for b in going]
    out = []
    for rk in unused:  # attribute to a source in the same rack when there is one
        k = rk if rk in srcs else srcs[0]
        srcs.remove(k)
        out.append((k, rk))
    return out


def replica_options(reps: Sequence[int], pos: int, ctx: RuleContext) -> tuple:
    """Racks the replica at ``pos`` may move to without breaking rack-awareness (None when the
    cluster is not rack-aware)."""
    n = ctx.rack_count
    if n <= 1:
        return (None,)
    need = required_racks(len(reps), n)
    others = [b for j, b in enumerate(reps) if j != pos]
    real = {ctx.racks[b] for b in others if b >= 0 and b not in ctx.removed}
    holes = sum(1 for b in others if b < 0 or b in ctx.removed)
    before = min(
        need,
        len(
            real
            | ({ctx.racks[reps[pos]]} if reps[pos] >= 0 and reps[pos] not in ctx.removed else set())
        )
        + holes
        + (1 if reps[pos] < 0 or reps[pos] in ctx.removed else 0),
    )
    members = set(reps)
    out = []
    for rk in sorted(ctx.rack_set):
        if min(need, len(real | {rk}) + holes) >= before and any(
            b not in members and b not in ctx.cordoned for b in ctx.rack_brokers[rk]
        ):  # and a broker there that does not hold the partition yet
            out.append(rk)
    return tuple(out)


def can_change_rack(
    reps: Sequence[int], pos: int, racks: Mapping[int, str | None], n_racks: int
) -> bool:
    """Whether the replica at ``pos`` may move to another rack without lowering the rack spread:
    with RF < racks an unused rack is always there; with RF >= racks only a replica sharing its
    rack with another one may go. (The Spark twin is an SQL expression in spark/planner.py.)"""
    if len(reps) < n_racks:
        return True
    mine = racks.get(reps[pos])
    return sum(1 for b in reps if racks.get(b) == mine) >= 2


def aggregate_rows(
    rows: Iterable[tuple[str, int, Sequence[int], int]],
    params: PlanParams,
    ctx: RuleContext | None = None,
    repairs: Mapping[tuple[str, int], tuple[int, ...]] | None = None,
) -> Aggregates:
    """The in-process twin of the Spark aggregation (``repairs``: count the repaired replicas as
    placeholders that must move, ``rack_repair.shape``)."""
    agg = Aggregates()
    rf_change = params.rf_change()
    reps_t: dict[tuple[int, int], int] = defaultdict(int)
    lead_t: dict[tuple[int, int], int] = defaultdict(int)
    byts: dict[int, int] = defaultdict(int)
    parts: dict[int, int] = defaultdict(int)
    rfh: dict[int, int] = defaultdict(int)
    forced: dict[tuple, int] = defaultdict(int)
    classes: dict[tuple, int] = defaultdict(int)
    capable: dict[int, int] = defaultdict(int)
    n = params.chunks
    n_racks = ctx.rack_count if ctx is not None else 0
    look = ctx is not None and n_racks > 1 and repairs is None
    for topic, part, replicas, size in rows:
        c = chunk_key(topic, part) % n
        reps = apply_rf(topic, replicas, rf_change)
        if repairs:
            reps = shape(reps, repairs.get((topic, part)))
        if look and is_violating(replicas, ctx, rf_change, topic):
            agg.violating.append((topic, part, tuple(replicas), size))
        parts[c] += 1
        rfh[len(reps)] += 1
        if ctx is not None:
            for k, rk in forced_racks(reps, ctx):
                forced[(c, k, rk)] += 1
            for pos, b in enumerate(reps):
                if b < 0 or b in ctx.removed:
                    classes[(c, rack_key(ctx, b), replica_options(reps, pos, ctx))] += 1
                if n_racks > 1 and b >= 0 and can_change_rack(reps, pos, ctx.racks, n_racks):
                    capable[b] += 1
        for i, b in enumerate(reps):
            b = b if b >= 0 else VIRTUAL
            reps_t[(c, b)] += 1
            byts[b] += size
            if i == 0:
                lead_t[(c, b)] += 1
    agg.replicas, agg.leaders, agg.bytes = dict(reps_t), dict(lead_t), dict(byts)
    agg.partitions, agg.rf_hist, agg.forced = dict(parts), dict(rfh), dict(forced)
    agg.classes = dict(classes)
    agg.capable = dict(capable)
    agg.violating.sort(key=lambda r: (r[0], r[1]))
    return agg


def rack_key(ctx: RuleContext, b: int):
    if b < 0 or ctx.rack_count <= 1:
        return "__virtual__" if b < 0 else None
    return ctx.racks.get(b)
