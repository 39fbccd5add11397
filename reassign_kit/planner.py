"""Minimal-movement, balanced, rack-aware plan generation (the pure core).

Shape of the computation, so that it runs the same in one process and in Spark executors:

1. per-(chunk, broker) aggregates of the snapshot (counts, leaders, bytes) — small;
2. on the driver, from those aggregates only: per-broker targets (spread <= 1 within each rack,
   and globally where racks allow), the lower bound on moved replicas, and per-chunk quotas
   (how many replicas each chunk must give up from each broker, receive on each broker, and move
   between each pair of racks) that add up exactly to the global targets;
3. each chunk (a deterministic hash bucket of partitions) is planned independently by a greedy
   pass that honours its quotas and every hard constraint — in Spark, inside executors.

Only replicas that must leave (removed brokers, over-full brokers) move, each exactly once, so
moved replicas equal the lower bound unless a constraint forces a detour. Chunks are buckets of
crc32(topic-partition), so the plan does not depend on where it runs.

4. Preferred leaders are balanced by reordering replicas (nothing is copied), exactly: the final
   replica sets are counted per (chunk, set, current leader), the driver solves one flow over
   those groups (``leader_flow.balance_leaders``: spread <= 1 wherever the sets allow, else the
   best achievable and why), and every chunk applies its share of that solution.
"""

from __future__ import annotations

import heapq
import math
import time
import zlib
from bisect import bisect_left, bisect_right, insort
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from . import capacity_fit
from .errors import CapacityError, UsageError
from .leader_flow import LeaderBalance, balance_leaders
from .maxflow import augment
from .model import Move, Plan, TopicPartition
from .plan_report import PlanResult, broker_totals
from .plan_rules import (
    VIRTUAL,
    Capacity,
    RuleContext,
    apply_rf,
    capacity_problems,
    required_racks,
)
from .rack_repair import (
    choose_repairs,
    is_violating,
    repair_bound,
    repair_report,
    shape,
)
from .snapshot import Snapshot, TopicFilter, excluded_summary

GOALS = ("replicas", "leaders", "bytes")
DEFAULT_CHUNKS = 8
DEFAULT_BYTES_TOLERANCE = 0.05
BYTES_ROUNDS = 8  # bytes rounds at most (each re-aggregates the chunks' bytes)


@dataclass(frozen=True)
class PlanParams:
    remove_brokers: tuple[int, ...] = ()
    balance: tuple[str, ...] = ("replicas", "leaders")
    replication_factor: int | None = None
    rf_topics: tuple[str, ...] = ()
    chunks: int = DEFAULT_CHUNKS
    # which topics are planned (issue 13 #2): internal topics are left out by default
    topic_filter: TopicFilter = TopicFilter()
    # a leaders-only plan moving preferred leadership off these brokers (issue 13 #4)
    demote_brokers: tuple[int, ...] = ()
    # hard per-broker limits (disk bytes, max replicas) and the bytes goal's tolerance
    capacity: Capacity | None = None
    bytes_tolerance: float = DEFAULT_BYTES_TOLERANCE
    # KIP-1066: treat every broker whose log dirs are all cordoned as one to drain
    drain_cordoned: bool = False

    def rf_change(self) -> dict[str, int]:
        if self.replication_factor is None:
            return {}
        return {t: self.replication_factor for t in self.rf_topics}


def parse_balance(text: str | Iterable[str] | None) -> tuple[str, ...]:
    if text is None:
        return ("replicas", "leaders")
    items = [s.strip() for s in (text.split(",") if isinstance(text, str) else text)]
    items = [s for s in items if s]
    bad = [s for s in items if s not in GOALS]
    if bad:
        raise UsageError(f"--balance: unknown goal(s) {bad}; choose from {', '.join(GOALS)}")
    return tuple(g for g in GOALS if g in items)


def chunk_key(topic: str, partition: int) -> int:
    """crc32 of 'topic-partition' (Spark's crc32 of the same string gives the same number)."""
    return zlib.crc32(f"{topic}-{partition}".encode())


# -- aggregates -----------------------------------------------------------------------------
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
    srcs = [_rack_key(ctx, b) for b in going]
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
                    classes[(c, _rack_key(ctx, b), replica_options(reps, pos, ctx))] += 1
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


# -- apportionment --------------------------------------------------------------------------
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


# -- targets --------------------------------------------------------------------------------
def _rack_bounds(rf_hist: Mapping[int, int], n_racks: int, brokers_in_rack: int) -> tuple[int, int]:
    lo = hi = 0
    for rf, n in rf_hist.items():
        per_hi = 1 if rf <= n_racks else rf - (n_racks - 1)
        hi += n * min(per_hi, brokers_in_rack)
        lo += n * (1 if rf >= n_racks else 0)
    return lo, hi


def _round_shares(shares: dict, total: int, tiebreak: Mapping) -> dict:
    """Floors plus largest remainders; ties go to the larger ``tiebreak`` (fewer moves)."""
    base = {k: int(v) for k, v in shares.items()}
    rem = total - sum(base.values())
    order = sorted(shares, key=lambda k: (-(shares[k] - base[k]), -tiebreak.get(k, 0), str(k)))
    for k in order[:rem]:
        base[k] += 1
    return base


def _waterfill(
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


def _capped_split(n: int, bs: Sequence[int], cur: Mapping[int, int], caps: Mapping[int, int]):
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


def _count_refusal(
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
        # keep everyone where they are; what must leave fills the emptiest brokers of its rack
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
            filled, rest = _waterfill({b: levels[b] for b in groups[key]}, n, caps)
            levels.update(filled)
            spill += rest
        levels, rest = _waterfill(levels, spill, caps)
        if rest:
            raise _count_refusal("the cluster", total, total - rest, allowed, caps, ctx.cordoned)
        targets.update(levels)
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
            raise _count_refusal("the cluster", total, room[k], groups[k], caps, ctx.cordoned)
    else:
        bounds = {k: _rack_bounds(rf_hist, n_racks, len(bs)) for k, bs in groups.items()}
        for k, (lo, hi) in list(bounds.items()):
            if room[k] < lo:
                raise _count_refusal(
                    f"rack {k} (rack-awareness puts at least {lo} replicas there)",
                    lo,
                    room[k],
                    groups[k],
                    caps,
                    ctx.cordoned,
                )
            bounds[k] = (lo, min(hi, room[k]))
        if sum(hi for _, hi in bounds.values()) < total:
            raise _count_refusal(
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
        shares = {
            k: min(max(hi_l * len(bs), bounds[k][0]), bounds[k][1]) for k, bs in groups.items()
        }
        scale = total / sum(shares.values()) if sum(shares.values()) else 0
        shares = {k: v * scale for k, v in shares.items()}
        group_total = _round_shares(shares, total, cur_group)
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
    for k, bs in groups.items():
        split = _capped_split(group_total[k], bs, cur, caps)
        if split is None:  # rounding put one more on a full rack: cannot happen when bounded
            raise _count_refusal(f"rack {k}", group_total[k], room[k], bs, caps, ctx.cordoned)
        targets.update(split)
    return targets


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


def _sum_by(pairs: Iterable[tuple]) -> dict:
    out: dict = defaultdict(int)
    for k, n in pairs:
        out[k] += n
    return dict(out)


def _max_flow(
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


# -- quotas ---------------------------------------------------------------------------------
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
    # bytes (issue 13 capacity goals): broker -> (low, high) bytes a plan aims within; high is
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


def _rack_key(ctx: RuleContext, b: int):
    if b < 0 or ctx.rack_count <= 1:
        return "__virtual__" if b < 0 else None
    return ctx.racks.get(b)


def _file_max_replicas(params: PlanParams, b: int) -> int | None:
    return params.capacity.max_replicas(b) if params.capacity is not None else None


def _targets(ctx: RuleContext, cur, rf_hist, balance: bool, params: PlanParams, caps) -> dict:
    """broker_targets; when the capacity file's max_replicas make it refuse, the counts are
    planned with the cordons' caps only: the targets' reading of max_replicas (rack bounds,
    rounding) is no proof, the exact fit at the end decides (capacity_fit, issue 20 #3)."""
    try:
        return broker_targets(ctx, cur, rf_hist, balance, caps)
    except CapacityError:
        if params.capacity is None:
            raise
        bare = _caps(ctx, replace(params, capacity=None), cur)
        return broker_targets(ctx, cur, rf_hist, balance, bare)


def _caps(ctx: RuleContext, params: PlanParams, cur: Mapping[int, int]) -> dict[int, int]:
    """max_replicas per broker; a fully cordoned broker may not grow (KIP-1066)."""
    cap = params.capacity
    caps = {b: m for b in ctx.allowed if cap is not None and (m := cap.max_replicas(b)) is not None}
    for b in ctx.cordoned:
        if b in set(ctx.allowed):
            caps[b] = min(caps.get(b, cur.get(b, 0)), cur.get(b, 0))
    return caps


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
    # rack repair (issue 20 #1): the replicas that leave a doubled rack, chosen against the
    # targets (rack totals do not depend on which of the doubled replicas leaves)
    repairs: dict[tuple[str, int], tuple[int, ...]] = {}
    leaving: dict[str, int] = {}
    chosen = None
    work = agg
    if agg.violating and not params.demote_brokers:
        targets0 = _targets(ctx, cur0, agg.rf_hist, balance, params, _caps(ctx, params, cur0))
        chosen = choose_repairs(agg.violating, cur0, targets0, ctx, params.rf_change())
        repairs, leaving = chosen.positions, chosen.leaving
        if repairs:
            rows = [r for r in agg.violating if (r[0], r[1]) in repairs]
            work = agg.plus(
                aggregate_rows(rows, params, ctx, repairs), aggregate_rows(rows, params, ctx, {})
            )
    cur = work.per_broker(work.replicas)
    caps = _caps(ctx, params, cur)
    total = sum(cur.values())
    file_caps = {b: m for b in allowed if (m := _file_max_replicas(params, b)) is not None}
    if file_caps and len(file_caps) == len(allowed) and sum(file_caps.values()) < total:
        raise _count_refusal("the cluster", total, sum(file_caps.values()), allowed, file_caps)
    targets = _targets(ctx, cur, work.rf_hist, balance, params, caps)
    if balance:  # bounds on the snapshot as it is (which doubled replica leaves is free)
        lb = max(
            lower_bound(cur0, targets, ctx, work.forced_by_rack()),
            repair_bound(
                cur0,
                targets,
                ctx,
                work.forced_by_rack(),
                leaving,
                chosen.beyond_excess(cur0, targets, ctx) if chosen is not None else 0,
            ),
        )
    else:  # no count goal: what must move (removed brokers, placeholders, repairs) is the
        # bound; the targets are no goal, so no rack is full and no forced arrival costs more
        lb = lower_bound(cur, targets)

    quotas = {c: ChunkQuota() for c in chunks}
    # give: removed / virtual give everything; over-full brokers give their surplus, by share
    for b, n in cur.items():
        per = [work.replicas.get((c, b), 0) for c in chunks]
        surplus = n if (b < 0 or b in ctx.removed) else max(0, n - targets.get(b, 0))
        shares = per if surplus == n else apportion(surplus, per)
        for c, s in zip(chunks, shares, strict=True):
            if s:
                quotas[c].give[b] = s
    deficit = {b: targets[b] - cur.get(b, 0) for b in allowed if targets[b] > cur.get(b, 0)}
    # which rack each chunk's leaving replicas go to: a small max-flow over (chunk, option
    # class) -> (chunk, rack) -> rack, so that replicas rack-awareness pins get room first
    dst_racks = sorted({_rack_key(ctx, b) for b in deficit}, key=str)
    demand = {dr: sum(n for b, n in deficit.items() if _rack_key(ctx, b) == dr) for dr in dst_racks}
    all_racks = frozenset(dst_racks)
    supply_cls: dict[tuple, int] = defaultdict(int)  # (chunk, class) -> replicas
    must_given: dict[tuple, int] = defaultdict(int)
    for (c, k, opts), n in work.classes.items():
        supply_cls[(c, frozenset(opts) & all_racks)] += n
        must_given[(c, k)] += n
    for c, q in quotas.items():
        for b, n in q.give.items():
            if b >= 0 and b not in ctx.removed:  # surplus of an over-full broker
                k = _rack_key(ctx, b)
                # which replicas leave an over-full broker is free, but most can only stay in
                # their rack (RF >= racks); its own rack first, what does not fit goes anywhere
                supply_cls[(c, frozenset([k]) & all_racks or all_racks)] += n
    # route globally, then give every chunk its proportional share of each route
    classes = sorted({cls for (_, cls) in supply_cls}, key=lambda c: sorted(map(str, c)))
    total_cls = {cls: sum(n for (_, c2), n in supply_cls.items() if c2 == cls) for cls in classes}
    routed = _max_flow({(0, cls): n for cls, n in total_cls.items()}, demand)
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
        bs = sorted(b for b in deficit if _rack_key(ctx, b) == dr)
        m = apportion_2d([take_rack[(c, dr)] for c in chunks], [deficit[b] for b in bs])
        for ci, c in enumerate(chunks):
            for j, b in enumerate(bs):
                if m[ci][j]:
                    quotas[c].take[b] = m[ci][j]
    heavy: frozenset[int] = frozenset()
    if "bytes" in params.balance and allowed:
        real = {b: agg.bytes.get(b, 0) for b in allowed}
        avg = sum(agg.bytes.get(b, 0) for b in agg.bytes) / len(allowed)
        heavy = frozenset(b for b, v in real.items() if v > avg)
    # no plan can avoid a detour for replicas the racks with room cannot take
    must_flow = _max_flow(
        _sum_by(((0, frozenset(o) & all_racks), n) for (_, _, o), n in work.classes.items()),
        {
            dr: max(0, sum(targets[b] - cur.get(b, 0) for b in allowed if _rack_key(ctx, b) == dr))
            for dr in dst_racks
        },
    )
    must = sum(work.classes.values())
    short = must - sum(must_flow.values())
    lb = max(
        lb,
        must + (short if balance else 0),  # without a count goal no rack is full
        # departures beyond what may change rack: a bound only where counts are a goal
        relay_bound(ctx, cur0, targets, agg.capable, bool(params.rf_change())) if balance else 0,
    )
    frozen = (
        frozenset((r[0], r[1]) for r in agg.violating if (r[0], r[1]) not in repairs)
        if not params.demote_brokers
        else frozenset()
    )
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


# -- one chunk ------------------------------------------------------------------------------
Row = tuple[str, int, Sequence[int], int]
Changed = tuple[str, int, list[int], list[int], int]


class _Chunk:
    """The greedy pass over one chunk: mandatory moves, surplus moves, rack fix-up, leaders."""

    def __init__(self, rows: Sequence[Row], prep: Prepared, quota: ChunkQuota):
        self.prep, self.ctx = prep, prep.ctx
        self.racks = prep.ctx.racks
        self.n_racks = prep.ctx.rack_count
        self.allowed = prep.ctx.allowed
        self.allowed_set = set(self.allowed)
        self.placeable = prep.ctx.placeable  # where a replica may arrive (not cordoned)
        self.removed = prep.ctx.removed
        rf_change = prep.params.rf_change()
        keyed = sorted((chunk_key(t, p), t, p, r, s) for t, p, r, s in rows)
        self.topic = [k[1] for k in keyed]
        self.part = [k[2] for k in keyed]
        self.old = [list(k[3]) for k in keyed]
        self.size = [k[4] for k in keyed]
        self.new = [
            shape(apply_rf(t, r, rf_change), prep.repairs.get((t, p)))
            for t, p, r in zip(self.topic, self.part, self.old, strict=True)
        ]
        # violating partitions no repair can fix: none of their replicas moves (rack_repair)
        self.frozen = {
            i for i, tp in enumerate(zip(self.topic, self.part, strict=True)) if tp in prep.frozen
        }
        self.give = dict(quota.give)
        self.take = {b: n for b, n in quota.take.items() if n > 0}
        self.flows = dict(quota.flows)
        self.count: dict[int, int] = defaultdict(int)
        for reps in self.new:
            for b in reps:
                self.count[b] += 1
        # what each broker of the chunk should hold once its quotas are used
        self.intended = {
            b: self.count.get(b, 0) - quota.give.get(b, 0) + quota.take.get(b, 0)
            for b in set(self.count) | set(quota.take)
            if b >= 0
        }
        self.ring: dict = defaultdict(list)
        for b in sorted(self.take):
            self.ring[_rack_key(self.ctx, b)].append(b)
        self.ptr: dict = defaultdict(int)
        self.placed: dict[int, list[tuple[int, int]]] = defaultdict(list)  # arrivals per broker
        self.rack_take: dict = defaultdict(int)
        for b, n in self.take.items():
            self.rack_take[_rack_key(self.ctx, b)] += n

    # rack-awareness: a move may not lower the rack spread the partition can still reach
    def _spread(self, reps: Sequence[int]) -> int:
        real = {self.racks[b] for b in reps if b >= 0}
        return min(
            required_racks(len(reps), self.n_racks), len(real) + sum(1 for b in reps if b < 0)
        )

    def _rack_ok(self, reps: list[int], pos: int, dest: int) -> bool:
        return self._rack_ok_rack(reps, pos, _rack_key(self.ctx, dest))

    def _rack_ok_rack(self, reps: list[int], pos: int, rack) -> bool:
        if self.n_racks <= 1:
            return True
        src = reps[pos]
        if src >= 0 and self.racks[src] == rack:
            return True
        before = self._spread(reps)
        real = {self.racks[b] for j, b in enumerate(reps) if b >= 0 and j != pos}
        real.add(rack)
        after = min(
            required_racks(len(reps), self.n_racks),
            len(real) + sum(1 for j, b in enumerate(reps) if b < 0 and j != pos),
        )
        return after >= before

    def _place(self, i: int, pos: int, dest: int) -> None:
        reps = self.new[i]
        src = reps[pos]
        self.count[src] -= 1
        self.count[dest] += 1
        reps[pos] = dest
        self.placed[dest].append((i, pos))

    def _swap_in(self, i: int, pos: int) -> int | None:
        """A one-step augmenting path: an earlier arrival on broker x (which would suit this
        replica) moves on to a broker with quota left that suits it, and this replica takes its
        place on x — no extra move, the quota is used after all."""
        free = [d for d, n in self.take.items() if n > 0]
        if not free:
            return None
        reps = self.new[i]
        members = set(reps)
        for x in self.placeable:
            if x in members or not self.placed.get(x) or not self._rack_ok(reps, pos, x):
                continue
            for j, pj in self.placed[x]:
                rj = self.new[j]
                if j == i or rj[pj] != x:
                    continue
                mj = set(rj)
                for d in free:
                    if d not in mj and self._rack_ok(rj, pj, d):
                        self.take[d] -= 1
                        self.rack_take[_rack_key(self.ctx, d)] -= 1
                        self.placed[x].remove((j, pj))
                        self._place(j, pj, d)
                        return x
        return None

    def _from_ring(self, i: int, pos: int, rack) -> int | None:
        ring = self.ring.get(rack)
        if not ring:
            return None
        reps = self.new[i]
        members = set(reps)
        n = len(ring)
        start = self.ptr[rack] % n
        best, best_step, seen = None, 0, 0
        for step in range(n):  # of the next few that fit, the one with the most room left
            d = ring[(start + step) % n]
            if self.take.get(d, 0) > 0 and d not in members:
                if best is None or self.take[d] > self.take[best]:
                    best, best_step = d, step
                seen += 1
                if seen >= 8:
                    break
        if best is not None:
            self.ptr[rack] = (start + best_step + 1) % n
        return best

    def _options(self, i: int, pos: int) -> list:
        """Racks with quota left that this replica may move to."""
        reps = self.new[i]
        return [
            dr for dr in self.ring if self.rack_take[dr] > 0 and self._rack_ok_rack(reps, pos, dr)
        ]

    def _by_class(self, i: int, pos: int, cls: tuple) -> int | None:
        """Follow the driver's max-flow: a rack this replica's class was given room in."""
        src = self.new[i][pos]
        k = _rack_key(self.ctx, src)
        reps = self.new[i]
        racks = [dr for dr in cls if self.flows.get((cls, dr), 0) > 0]
        for dr in sorted(racks, key=lambda dr: (-self.flows[(cls, dr)], dr != k, str(dr))):
            if not self._rack_ok_rack(reps, pos, dr):
                continue
            d = self._from_ring(i, pos, dr)
            if d is not None:
                self.flows[(cls, dr)] -= 1
                self.rack_take[dr] -= 1
                return self._take(d)
        return None

    def _choose(self, i: int, pos: int, mandatory: bool, where: str = "any") -> int | None:
        """A destination with quota left: ``where`` is "any" (the rack with the most quota
        left first, so that constrained replicas later still find room), "own" (own rack
        first) or "cross" (other racks only)."""
        src = self.new[i][pos]
        k = _rack_key(self.ctx, src)
        opts = self._options(i, pos)
        if where == "cross":
            opts = [dr for dr in opts if dr != k]
        order = (
            (lambda dr: (dr != k, -self.rack_take[dr], str(dr)))
            if where == "own"
            else (lambda dr: (-self.rack_take[dr], dr != k, str(dr)))
        )
        for dr in sorted(opts, key=order):
            d = self._from_ring(i, pos, dr)
            if d is not None:
                self.rack_take[dr] -= 1
                return self._take(d)
        if not mandatory:
            return None
        x = self._swap_in(i, pos)
        if x is not None:
            return x
        # no quota fits (rack-awareness pins this replica): overfill the emptiest allowed
        # broker, its own rack first, and let that broker shed one more in the surplus pass
        reps = self.new[i]
        members = set(reps)
        cands = [d for d in self.placeable if d not in members]
        ok = [d for d in cands if self._rack_ok(reps, pos, d)]
        pool = ok or cands
        if not pool:
            return None
        same = [d for d in pool if src >= 0 and _rack_key(self.ctx, d) == k]
        d = min(same or pool, key=lambda d: (self.count[d] - self.prep.targets.get(d, 0), d))
        self.give[d] = self.give.get(d, 0) + 1
        return d

    def _take(self, d: int) -> int:
        self.take[d] -= 1
        return d

    def mandatory(self) -> None:
        must = [
            i
            for i, reps in enumerate(self.new)
            if any(b < 0 or b in self.removed or b not in self.racks for b in reps)
        ]
        todo = []
        for i in must:
            for pos, b in enumerate(self.new[i]):
                if b < 0 or b in self.removed or b not in self.racks:
                    opts = replica_options(self.new[i], pos, self.ctx)
                    cls = tuple(sorted(set(opts) & self.prep.dst_racks, key=str))
                    todo.append((len(cls), i, pos, cls))
        todo.sort(key=lambda t: t[:3])  # the most constrained first
        for _, i, pos, cls in todo:
            b = self.new[i][pos]
            d = self._by_class(i, pos, cls)
            if d is None:
                d = self._choose(i, pos, mandatory=True)
            if d is None:
                raise UsageError(
                    f"partition {self.topic[i]}-{self.part[i]}: no broker can take a replica"
                )
            src = b if b >= 0 else VIRTUAL
            self.give[src] = self.give.get(src, 0) - 1
            self._place(i, pos, d)

    def surplus(self) -> None:
        over = sorted(b for b, n in self.give.items() if n > 0 and b >= 0 and b in self.allowed_set)
        if not over:
            return
        over_set = set(over)
        cands: dict[int, list[int]] = defaultdict(list)
        tcount: dict[tuple[str, int], int] = defaultdict(int)
        ttotal: dict[str, int] = defaultdict(int)
        for i, reps in enumerate(self.new):
            t = self.topic[i]
            ttotal[t] += len(reps)
            for b in reps:
                tcount[(t, b)] += 1
                if b in over_set and i not in self.frozen:
                    cands[b].append(i)
        nb = len(self.allowed)
        # the rack's share of cross-rack routes goes first, spread over its over-full brokers
        # in proportion, to the replicas that may change rack; then the rest, own rack first
        cross: dict[int, int] = {}
        for k in sorted({_rack_key(self.ctx, b) for b in over}, key=str):
            bs = [b for b in over if _rack_key(self.ctx, b) == k]
            out_k = sum(
                n for (cls, dr), n in self.flows.items() if cls == (k,) and dr != k and n > 0
            )
            out_k = min(out_k, sum(self.give[b] for b in bs))
            cross.update(zip(bs, apportion(out_k, [self.give[b] for b in bs]), strict=True))
        for phase in ("cross", "cross-rest", "relay", "own"):
            if phase == "relay":
                self._relay(over, cands)
                continue
            for b in over:
                k = _rack_key(self.ctx, b)
                if phase == "cross-rest":  # brokers short of rack-changing replicas leave
                    left = sum(
                        n
                        for (cls, dr), n in self.flows.items()
                        if cls == (k,) and dr != k and n > 0
                    )
                    if left <= 0:
                        continue
                heavy = b in self.prep.bytes_heavy

                def key(i: int, b: int = b, heavy: bool = heavy) -> tuple:
                    t = self.topic[i]
                    crowded = tcount[(t, b)] * nb > ttotal[t]  # topic over-represented here
                    return (not crowded, -self.size[i] if heavy else self.size[i], i)

                budget = cross.get(b, 0) if phase == "cross" else self.give[b]
                if phase == "cross-rest":
                    budget = min(budget, left)
                for i in sorted(cands[b], key=key):
                    if self.give[b] <= 0 or budget <= 0:
                        break
                    reps = self.new[i]
                    if b not in reps:
                        continue
                    pos = reps.index(b)
                    d = self._choose(
                        i, pos, mandatory=False, where="own" if phase == "own" else "cross"
                    )
                    if d is not None:
                        dk = _rack_key(self.ctx, d)
                        if dk != k and self.flows.get(((k,), dk), 0) > 0:
                            self.flows[((k,), dk)] -= 1
                        self.give[b] -= 1
                        budget -= 1
                        self._place(i, pos, d)

    def _relay(self, over: list[int], cands: dict[int, list[int]]) -> None:
        """When the over-full brokers of a rack lack replicas that may change rack, a broker of
        the same rack with such a replica sends it across and takes one of theirs instead
        (two moves where the bound counts one; only for what the cross-rack routes still need)."""
        for k in sorted({_rack_key(self.ctx, b) for b in over}, key=str):
            owe = sum(
                self.give[b] for b in over if _rack_key(self.ctx, b) == k and self.give[b] > 0
            )
            left = sum(
                n for (cls, dr), n in self.flows.items() if cls == (k,) and dr != k and n > 0
            )
            need = min(owe, left)
            if need <= 0:
                continue
            relays = [
                x for x in self.placeable if _rack_key(self.ctx, x) == k and x not in set(over)
            ]
            rel_set = set(relays)
            by_x: dict[int, list[int]] = defaultdict(list)
            for i, reps in enumerate(self.new):
                if i in self.frozen:
                    continue
                for b in reps:
                    if b in rel_set:
                        by_x[b].append(i)
            for x in relays:
                for i in by_x[x]:
                    if need <= 0:
                        break
                    reps = self.new[i]
                    if x not in reps:
                        continue
                    pos = reps.index(x)
                    d = self._choose(i, pos, mandatory=False, where="cross")
                    if d is None:
                        continue
                    dk = _rack_key(self.ctx, d)
                    if self.flows.get(((k,), dk), 0) > 0:
                        self.flows[((k,), dk)] -= 1
                    self._place(i, pos, d)
                    self.take[x] = self.take.get(x, 0) + 1  # x now has room for a relayed one
                    self.rack_take[k] += 1
                    if x not in self.ring[k]:
                        self.ring[k].append(x)
                    need -= 1

    def fix_racks(self) -> None:
        if self.n_racks <= 1:
            return
        for i, reps in enumerate(self.new):
            if reps == self.old[i]:
                continue
            for _ in range(len(reps)):
                need = required_racks(len(reps), self.n_racks)
                if len({self.racks[b] for b in reps}) >= need:
                    break
                seen: dict = {}
                pos = None
                for j in range(len(reps) - 1, -1, -1):  # a duplicated rack, leader last
                    rk = self.racks[reps[j]]
                    if sum(1 for b in reps if self.racks[b] == rk) > 1:
                        pos = j
                        break
                    seen[rk] = j
                used = {self.racks[b] for b in reps}
                cands = [d for d in self.placeable if self.racks[d] not in used]
                if pos is None or not cands:
                    break
                d = min(
                    cands,
                    key=lambda d: (
                        self.take.get(d, 0) <= 0,
                        self.count[d] - self.prep.targets.get(d, 0),
                        d,
                    ),
                )
                if self.take.get(d, 0) > 0:
                    self.take[d] -= 1
                self._place(i, pos, d)

    def settle(self) -> None:
        """Where a detour left a broker of a rack above what the chunk's quotas intend and
        another of the same rack below (a pinned replica overfilled the emptiest broker, rack
        repairs crowding one rack), an arrival on the first is re-pointed to the second (no
        extra move), else one of its replicas moves there (rack spread unchanged)."""
        over = sorted(b for b in self.allowed if self.count.get(b, 0) > self.intended.get(b, 0))
        for o in over:
            k = _rack_key(self.ctx, o)
            for u in self.placeable:
                if self.count.get(o, 0) <= self.intended.get(o, 0):
                    break
                if u == o or _rack_key(self.ctx, u) != k:
                    continue
                while self.count.get(o, 0) > self.intended.get(o, 0) and self.count.get(
                    u, 0
                ) < self.intended.get(u, 0):
                    arrived = [
                        (i, pos)
                        for i, pos in self.placed.get(o, [])
                        if self.new[i][pos] == o and u not in self.new[i]
                    ]
                    if arrived:
                        i, pos = arrived[0]
                        self.placed[o].remove((i, pos))
                    else:
                        i = next(
                            (
                                i
                                for i, reps in enumerate(self.new)
                                if o in reps and u not in reps and i not in self.frozen
                            ),
                            -1,
                        )
                        if i < 0:
                            break
                        pos = self.new[i].index(o)
                    self._place(i, pos, u)

    def run(self) -> list[Changed]:
        """Every partition of the chunk, in chunk order: (topic, partition, old, new, size)."""
        self.mandatory()
        if "replicas" in self.prep.params.balance or self.prep.caps:
            self.surplus()
        self.fix_racks()
        if "replicas" in self.prep.params.balance:
            self.settle()
        return [
            (self.topic[i], self.part[i], self.old[i], self.new[i], self.size[i])
            for i in range(len(self.new))
        ]


def plan_chunk(rows: Sequence[Row], prep: Prepared, chunk: int) -> list[Changed]:
    """Plan one chunk's replica sets: the unit of work of a Spark task (or of the in-process
    loop). Returns every partition of the chunk, changed or not (the leader pass needs them)."""
    return _Chunk(rows, prep, prep.quotas.get(chunk, ChunkQuota())).run()


# -- bytes: every broker within its band (capacity limits, --balance bytes) ----------------------
def chunk_totals(rows: Iterable[Changed], chunk: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(chunk, broker) -> (bytes, replicas) of a chunk's final rows (the Spark twin is a
    groupBy over the exploded replica lists)."""
    byts: dict[int, int] = defaultdict(int)
    reps: dict[int, int] = defaultdict(int)
    for _, _, _, new, size in rows:
        for b in new:
            byts[b] += size
            reps[b] += 1
    return {(chunk, b): (byts[b], reps[b]) for b in byts}


@dataclass
class BytesQuota:
    """A chunk's share of one bytes round: bytes each giver sheds (at least ``out``, at most
    ``out_max``), bytes each receiver may take (hard ``cap``; ``aim`` first) and, when replica
    counts may change, replicas each receiver may gain."""

    out: dict[int, float] = field(default_factory=dict)
    out_max: dict[int, float] = field(default_factory=dict)
    cap: dict[int, float] = field(default_factory=dict)
    aim: dict[int, float] = field(default_factory=dict)
    add: dict[int, int] = field(default_factory=dict)


@dataclass
class BytesPlan:
    ctx: RuleContext
    quotas: dict[int, BytesQuota]
    swap: bool  # replica counts are a goal: only count-neutral exchanges


def bytes_off(totals: Mapping[int, float], bands: Mapping[int, tuple[float, float]]) -> float:
    """Bytes outside the bands, summed over brokers."""
    return sum(
        max(0.0, totals.get(b, 0) - hi) + max(0.0, lo - totals.get(b, 0))
        for b, (lo, hi) in bands.items()
    )


def prepare_bytes(
    totals: Mapping[tuple[int, int], tuple[int, int]], prep: Prepared
) -> BytesPlan | None:
    """One bytes round, from the chunks' (bytes, replicas) per broker: which brokers give and
    take how much. A giver's share goes to the chunks where it holds most (up to half of what it
    holds there, then the rest), so that few chunks round a partition up; receivers' room
    follows the flow. None when every broker is within its band."""
    bands = prep.bands
    x: dict[int, float] = defaultdict(float)
    count: dict[int, int] = defaultdict(int)
    per: dict[int, dict[int, int]] = defaultdict(dict)
    for (c, b), (n_bytes, n) in totals.items():
        x[b] += n_bytes
        count[b] += n
        per[b][c] = n_bytes
    need_out = {b: x[b] - hi for b, (lo, hi) in bands.items() if x[b] > hi}
    need_in = {b: lo - x[b] for b, (lo, hi) in bands.items() if x[b] < lo}
    short, over = sum(need_in.values()), sum(need_out.values())
    if short <= 0 and over <= 0:
        return None
    room_out = {b: x[b] - lo for b, (lo, hi) in bands.items() if x[b] > lo}
    room_in = {b: hi - x[b] for b, (lo, hi) in bands.items() if x[b] < hi}
    aim_out = dict(need_out)
    # brokers within their band give too when those below their floor need more than those
    # above their ceiling shed: the ones with the widest margin first (few givers, whole
    # partitions), in the short broker's rack first (with RF >= racks every partition keeps one
    # replica per rack: bytes cannot change rack)
    spare = {b: room_out[b] - need_out.get(b, 0.0) for b in room_out}
    spare = {b: v for b, v in spare.items() if v > 0}
    rk = {b: _rack_key(prep.ctx, b) for b in bands}

    def draw(amount: float, pool: list[int]) -> float:
        for b in sorted(pool, key=lambda b: (-spare[b], b)):
            if amount <= 0:
                break
            take = min(amount, spare[b])
            if take > 0:
                aim_out[b] = aim_out.get(b, 0.0) + take
                spare[b] -= take
                amount -= take
        return amount

    left_short = 0.0
    for g in sorted(set(rk.values()), key=str):
        gap = sum(v for b, v in need_in.items() if rk[b] == g) - sum(
            v for b, v in need_out.items() if rk[b] == g
        )
        if gap > 0:
            left_short += draw(gap, [b for b in spare if rk[b] == g])
    draw(min(left_short, max(0.0, short - over)), list(spare))  # what no rack covers itself
    total_out = sum(aim_out.values())
    if total_out <= 0:
        return None
    chunks = list(range(prep.params.chunks))
    quotas = {c: BytesQuota() for c in chunks}
    flow: dict[int, float] = defaultdict(float)
    for b, a in aim_out.items():
        order = sorted((c for c, xb in per[b].items() if xb > 0), key=lambda c: (-per[b][c], c))
        share: dict[int, float] = defaultdict(float)
        left = a
        for half in (0.5, 1.0):
            for c in order:
                take = min(left, per[b][c] * half - share[c])
                if take > 0:
                    share[c] += take
                    left -= take
        for c, v in share.items():
            quotas[c].out[b] = v
            # what this giver may shed there at most: its floor, spread like its holdings
            quotas[c].out_max[b] = max(v, room_out.get(b, a) * per[b][c] / x[b])
            flow[c] += v
    swap = "replicas" in prep.params.balance
    weights = [flow[c] for c in chunks]
    for b, r in room_in.items():
        if b in aim_out:
            continue  # a broker does not both give and take in one round
        adds = None
        if not swap and b in prep.caps:  # replicas it may still gain, split like the flow
            adds = apportion(max(0, prep.caps[b] - count[b]), [round(w) for w in weights])
        for i, c in enumerate(chunks):
            if flow[c] > 0:
                quotas[c].cap[b] = r * flow[c] / total_out
                quotas[c].aim[b] = need_in.get(b, 0.0) * flow[c] / total_out
                if adds is not None:
                    quotas[c].add[b] = adds[i]
    return BytesPlan(prep.ctx, quotas, swap)


def _rack_keeps(reps: Sequence[int], pos: int, dest: int, ctx: RuleContext) -> bool:
    """Replacing reps[pos] by dest leaves min(RF, racks) racks spanned (the validator's rule
    for every partition a plan touches)."""
    if ctx.rack_count <= 1:
        return True
    after = len({ctx.racks.get(b) for j, b in enumerate(reps) if j != pos} | {ctx.racks.get(dest)})
    return after >= required_racks(len(reps), ctx.rack_count)


class _BytesChunk:
    """Greedy bytes round of one chunk: a giver's replicas go to receivers (or, when replica
    counts are a goal, are exchanged against smaller ones of the receiver) until the giver has
    shed its share; replicas that arrive in this plan anyway are re-targeted first (no extra
    move, no extra byte copied)."""

    TRIES = 24  # candidates looked at per size window

    def __init__(self, rows: Sequence[Changed], bp: BytesPlan, quota: BytesQuota):
        self.rows = sorted(rows, key=lambda r: (chunk_key(r[0], r[1]), r[0], r[1]))
        self.new = [list(r[3]) for r in self.rows]
        self.old = [set(r[2]) for r in self.rows]
        self.size = [r[4] for r in self.rows]
        self.bp, self.ctx, self.q = bp, bp.ctx, quota
        self.out = dict(quota.out)
        self.out_max = dict(quota.out_max)
        self.cap = dict(quota.cap)
        self.aim = dict(quota.aim)
        self.add = dict(quota.add)
        watch = set(self.out) | (set(self.cap) if bp.swap else set())
        # broker -> [free list, paid list] of (size, row), sorted: free = arrived in this plan
        self.lists: dict[int, list[list[tuple[int, int]]]] = {b: [[], []] for b in watch}
        for i, reps in enumerate(self.new):
            for b in reps:
                if b in self.lists:
                    self.lists[b][0 if b not in self.old[i] else 1].append((self.size[i], i))
        for ls in self.lists.values():
            ls[0].sort()
            ls[1].sort()

    def _drop(self, b: int, i: int) -> None:
        if b in self.lists:
            for lst in self.lists[b]:
                k = bisect_left(lst, (self.size[i], i))
                if k < len(lst) and lst[k] == (self.size[i], i):
                    del lst[k]
                    return

    def _add(self, b: int, i: int) -> None:
        if b in self.lists:
            insort(self.lists[b][0 if b not in self.old[i] else 1], (self.size[i], i))

    def _move(self, i: int, a: int, b: int) -> None:
        reps = self.new[i]
        self._drop(a, i)
        reps[reps.index(a)] = b
        self._add(b, i)

    def _fits(self, i: int, a: int, b: int) -> bool:
        reps = self.new[i]
        return b not in reps and _rack_keeps(reps, reps.index(a), b, self.ctx)

    def _window(self, lst, lo: float, hi: float, low_first: bool):
        """Rows of a sorted (size, row) list with lo <= size <= hi, a few, from one end."""
        i = bisect_left(lst, (math.ceil(lo), -1))
        j = len(lst) if hi == float("inf") else bisect_right(lst, (math.floor(hi), 1 << 62))
        idx = range(i, j) if low_first else range(j - 1, i - 1, -1)
        for n, k in enumerate(idx):
            if n >= self.TRIES:
                return
            yield lst[k]

    def _receivers(self) -> list[int]:
        return sorted(
            (
                b
                for b, c in self.cap.items()
                if c > 0 and self.add.get(b, 1) > 0 and b not in self.bp.ctx.cordoned
            ),
            key=lambda b: (-(self.aim.get(b, 0.0)), -self.cap[b], b),
        )

    def _one_move(self, a: int, finish: bool) -> bool:
        need = self.out[a]
        for lst in self.lists[a]:
            for b in self._receivers():
                hi = min(self._most(a) if finish else need, self.cap[b])
                lo = need if finish else 1
                for s, i in self._window(lst, lo, hi, low_first=finish):
                    if self._fits(i, a, b):
                        self._move(i, a, b)
                        self._took(a, b, s)
                        if b in self.add:
                            self.add[b] -= 1
                        return True
        return False

    def _one_swap(self, a: int, finish: bool) -> bool:
        """Exchange a replica p of the giver for a smaller one q of a receiver: the giver sheds
        size(p) - size(q), and 2 replicas (size(p) + size(q) bytes) move, so the cheapest
        exchange of the right size wins: q as small as the receiver has, p just above it."""
        need = self.out[a]
        for b in self._receivers():
            q_lists = self.lists.get(b, [])
            qmin = min((ql[0][0] for ql in q_lists if ql), default=None)
            if qmin is None:
                continue
            limit = min(self._most(a) if finish else need, self.cap[b])
            want = need if finish else 1
            if limit < want:
                continue
            for lst in self.lists[a]:
                p_win = self._window(lst, qmin + want, qmin + limit, low_first=finish)
                for sp, i in list(p_win):
                    if not self._fits(i, a, b):
                        continue
                    lo, hi = sp - limit, sp - want
                    for q_list in q_lists:
                        for sq, j in self._window(q_list, max(0, lo), hi, low_first=not finish):
                            if j == i or not self._fits(j, b, a):
                                continue
                            self._move(i, a, b)
                            self._move(j, b, a)
                            self._took(a, b, sp - sq)
                            return True
        return False

    def _most(self, a: int) -> float:
        """The most a finishing step may shed: down to the giver's floor."""
        return self.out_max[a]

    def _took(self, a: int, b: int, n: int) -> None:
        self.out[a] -= n
        self.out_max[a] -= n
        self.cap[b] -= n
        if b in self.aim:
            self.aim[b] -= n

    def run(self) -> list[Changed]:
        step = self._one_swap if self.bp.swap else self._one_move
        for a in sorted(self.out, key=lambda b: (-self.out[b], b)):
            while self.out[a] > 0 and (step(a, False) or step(a, True)):
                pass
        return [
            (t, p, old, new, sz)
            for (t, p, old, _, sz), new in zip(self.rows, self.new, strict=True)
        ]


def bytes_chunk(rows: Sequence[Changed], bp: BytesPlan, chunk: int) -> list[Changed]:
    """Apply a chunk's share of a bytes round to its final rows (every partition of the chunk);
    returns them all, in chunk order."""
    quota = bp.quotas.get(chunk)
    if quota is None or not quota.out:
        return sorted(rows, key=lambda r: (chunk_key(r[0], r[1]), r[0], r[1]))
    return _BytesChunk(rows, bp, quota).run()


# -- preferred leaders: one flow over the final replica sets ---------------------------------
def leader_key(
    old: Sequence[int],
    new: Sequence[int],
    ctx: RuleContext,
    demoted: frozenset = frozenset(),
    isr: Sequence[int] | None = None,
) -> tuple:
    """(the brokers that may lead, current leader): the replica set less the demoted brokers, or
    the first replica alone when only demoted brokers hold it. When a demoted broker holds the
    partition and its ISR is known, only the others in the ISR may lead (a preferred election
    needs the first replica in sync), unless none is. Rack placement never pins a leader: a
    reorder changes no placement (the validator accepts it on a rack-breaking set, issue 20)."""
    cur = old[0] if old else VIRTUAL
    may = tuple(sorted(b for b in new if b not in demoted))
    if isr and demoted and len(may) < len(new):
        in_sync = tuple(b for b in may if b in isr)
        may = in_sync or may
    return ((new[0],) if not may else may, cur)


# a partition's recorded state: (leader, ISR), either None when the snapshot does not know it
NO_STATE: tuple[int | None, tuple[int, ...] | None] = (None, None)


def leader_groups(
    finals: Iterable[tuple],
    ctx,
    demoted: frozenset = frozenset(),
) -> dict:
    """(chunk, brokers that may lead, current leader) -> partitions, from (chunk, old, new) or
    (chunk, old, new, isr) rows; the Spark twin is a groupBy in spark/planner.py (with recorded
    ISRs, this function in executors)."""
    out: dict[tuple, int] = defaultdict(int)
    for c, old, new, *isr in finals:
        out[(c, *leader_key(old, new, ctx, demoted, isr[0] if isr else None))] += 1
    return dict(out)


def demote_states(partitions: Iterable, demoted: frozenset) -> dict:
    """(topic, partition) -> (leader, ISR) of the partitions a demoted broker holds whose state
    the snapshot records (what a demotion needs beyond the replica order)."""
    if not demoted:
        return {}
    return {
        (p.topic, p.partition): (p.leader, p.isr)
        for p in partitions
        if (p.leader is not None or p.isr is not None) and any(b in demoted for b in p.replicas)
    }


@dataclass
class LeaderPlan:
    """The driver's leader decision: the global solution and each chunk's share of it."""

    balance: LeaderBalance
    ctx: RuleContext
    # chunk -> (sorted set, current leader) -> [(new leader, partitions)]
    quotas: dict[int, dict[tuple, list[tuple[int, int]]]]
    demoted: frozenset = frozenset()
    # partitions a demoted broker keeps leading: no other replica may (or the rack rule pins it)
    stuck: dict[int, int] = field(default_factory=dict)
    # (topic, partition) -> (leader, ISR) as recorded, for the partitions a demoted broker holds
    # (demote_states); empty when the snapshot records none
    states: dict[tuple[str, int], tuple] = field(default_factory=dict)
    # demoted_left: the partitions the demoted brokers keep leading, and why
    left: dict = field(default_factory=dict)


def prepare_leaders(
    groups: Mapping[tuple, int],
    ctx: RuleContext,
    demoted: frozenset = frozenset(),
    states: Mapping[tuple[str, int], tuple] | None = None,
) -> LeaderPlan:
    """Solve the leader flow on the groups summed over chunks, then split every group's leaders
    over the chunks that hold its partitions (each chunk then applies its share on its own).
    Demoted brokers are not balanced: they lead only what no other replica can."""
    total: dict[tuple, int] = defaultdict(int)
    by_group: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
    for (c, reps, cur), n in sorted(groups.items()):
        total[(reps, cur)] += n
        by_group[(reps, cur)].append((c, n))
    fixed = {g: n for g, n in total.items() if len(g[0]) == 1 and g[0][0] in demoted}
    balance = balance_leaders(
        {g: n for g, n in total.items() if g not in fixed},
        [b for b in ctx.allowed if b not in demoted],
    )
    stuck: dict[int, int] = defaultdict(int)
    for g, n in fixed.items():
        balance.assignment[g] = {g[0][0]: n}
        stuck[g[0][0]] += n
    quotas: dict[int, dict[tuple, list[tuple[int, int]]]] = defaultdict(dict)
    for g, chunks in by_group.items():
        to = sorted(balance.assignment.get(g, {}).items())
        if len(chunks) == 1:  # what apportion_2d gives one row or one column, without it
            quotas[chunks[0][0]][g] = [(b, n) for b, n in to if n]
            continue
        if len(to) == 1:
            for c, n in chunks:
                quotas[c][g] = [(to[0][0], n)] if n else []
            continue
        m = apportion_2d([n for _, n in chunks], [n for _, n in to])
        for ci, (c, _) in enumerate(chunks):
            quotas[c][g] = [(b, m[ci][j]) for j, (b, _) in enumerate(to) if m[ci][j]]
    return LeaderPlan(
        balance, ctx, dict(quotas), frozenset(demoted), dict(stuck), dict(states or {})
    )


def lead_chunk(rows: Sequence[Changed], lp: LeaderPlan, chunk: int) -> list[Changed]:
    """Apply a chunk's leader share to its final rows (in chunk order, as ``plan_chunk`` returns
    them): only the order of each replica list changes. Returns the rows that differ from before
    the plan, and those a demoted broker leads (as recorded) though it is not their first
    replica: their list may stay as it is, the execution elects its first."""
    quota = {g: dict(q) for g, q in lp.quotas.get(chunk, {}).items()}
    rows = sorted(rows, key=lambda r: (chunk_key(r[0], r[1]), r[0], r[1]))
    states = [lp.states.get((r[0], r[1]), NO_STATE) for r in rows]
    keys = [
        leader_key(r[2], r[3], lp.ctx, lp.demoted, st[1])
        for r, st in zip(rows, states, strict=True)
    ]
    lead: list[int | None] = [None] * len(rows)
    for i, r in enumerate(rows):  # partitions whose leader already is a quota's keep it
        left = quota.get(keys[i])
        if left and left.get(r[3][0], 0) > 0:
            left[r[3][0]] -= 1
            lead[i] = r[3][0]
    out = []
    for i, (topic, part, old, new, size) in enumerate(rows):
        b = lead[i]
        if b is None:
            left = quota.get(keys[i], {})
            b = next((x for x in sorted(left) if left[x] > 0), new[0])
            if left.get(b, 0) > 0:
                left[b] -= 1
        fixed = all(x in lp.demoted for x in new)
        rest = [x for x in new if x != b]
        if lp.demoted and not fixed:
            # demoted brokers last: an election that cannot use the first picks the next
            rest = [x for x in rest if x not in lp.demoted] + [x for x in rest if x in lp.demoted]
        # drifted: a demoted broker leads (as recorded) though another replica may
        drifted = not fixed and states[i][0] in lp.demoted and b not in lp.demoted
        if drifted and list(old[:1]) == [b]:
            # its first replica stays: the list stays as it is too, so a run finds the move
            # complete at its start and elects the first replica (a reorder that keeps the
            # first would complete without an election)
            new = list(old)
        else:
            new = [b, *rest]
        if new != list(old) or drifted:
            out.append((topic, part, old, new, size))
    return out


def demoted_leading_after(
    partitions: Iterable, changed: Iterable[Changed], demoted: frozenset
) -> dict[int, int]:
    """Demoted broker -> partitions it will still lead once the plan is executed with its
    elections: a planned partition is led by its new first replica when that one is in the
    recorded ISR (or none is recorded), else by its leader as recorded; a partition the plan
    leaves is led by its recorded leader (else its first replica)."""
    target = {(t, p): new for t, p, _, new, _ in changed}
    out: dict[int, int] = {b: 0 for b in demoted}
    for p in partitions:
        new = target.get((p.topic, p.partition))
        if new is None:
            lead = p.leader if p.leader is not None else p.replicas[0]
        elif p.isr is None or new[0] in p.isr or p.leader is None:
            lead = new[0]
        else:
            lead = p.leader
        if lead in demoted:
            out[lead] += 1
    return {b: n for b, n in out.items() if n}


def _led_after(p, new: Sequence[int] | None) -> int:
    """Who leads a partition once a plan's elections ran (see ``demoted_leading_after``)."""
    if new is None:
        return p.leader if p.leader is not None else p.replicas[0]
    if p.isr is None or new[0] in p.isr or p.leader is None:
        return new[0]
    return p.leader


def demoted_left(
    partitions: Iterable,
    changed: Iterable[Changed],
    demoted: frozenset,
    excluded: Mapping[str, str],
    limit: int = 100,
) -> dict:
    """The partitions a demoted broker will still lead after the plan, each with the true
    reason (issue 20 #2): its topic is filtered out; only demoted brokers hold it; the demoted
    broker is its only in-sync replica (as the snapshot recorded the ISR). ``partitions``: the
    partitions the demoted brokers hold, of every topic (selected or not)."""
    target = {(t, p): new for t, p, _, new, _ in changed}
    rows: list[dict] = []
    why_count: dict[str, int] = defaultdict(int)
    for p in sorted(partitions, key=lambda p: (p.topic, p.partition)):
        if not p.replicas:
            continue
        if p.topic in excluded:
            lead = _led_after(p, None)
            kind, why = (
                "topic-filtered-out",
                f"topic {p.topic} is filtered out: {excluded[p.topic]}",
            )
        else:
            lead = _led_after(p, target.get((p.topic, p.partition)))
            others = [b for b in p.replicas if b not in demoted]
            if not others:
                kind, why = (
                    "only-demoted-replicas",
                    (f"only demoted brokers hold it (replicas {list(p.replicas)})"),
                )
            elif p.isr is not None and not any(b in p.isr for b in others):
                kind, why = (
                    "only-in-sync-replica",
                    (f"broker {lead} is its only in-sync replica (ISR {list(p.isr)})"),
                )
            else:
                kind, why = "not-planned", "the plan leaves it led by a demoted broker"
        if lead not in demoted:
            continue
        why_count[kind] += 1
        if len(rows) < limit:
            rows.append(
                {
                    "partition": f"{p.topic}-{p.partition}",
                    "broker": lead,
                    "reason": kind,
                    "why": why,
                }
            )
    return {"count": sum(why_count.values()), "by_reason": dict(why_count), "partitions": rows}


def _leader_summary(lp: LeaderPlan | None) -> dict | None:
    if lp is None:
        return None
    out = lp.balance.summary()
    if lp.demoted:
        out["demoted_brokers"] = sorted(lp.demoted)
        # what a demoted broker still leads among the selected topics (no other replica, or no
        # other in-sync one), and every partition it keeps leading with the reason
        out["demoted_still_leading"] = {b: lp.stuck.get(b, 0) for b in sorted(lp.demoted)}
        out["not_demoted"] = lp.left
    return out


def finish(changed: list[Changed], prep: Prepared, leaders: LeaderPlan | None = None) -> PlanResult:
    moves, current = [], []
    moved = moved_bytes = lead = 0
    for topic, part, old, new, size in sorted(changed, key=lambda c: (c[0], c[1])):
        tp = TopicPartition(topic, part)
        moves.append(Move(tp, tuple(new)))
        current.append(Move(tp, tuple(old)))
        arrived = len(set(new) - set(old))
        moved += arrived
        moved_bytes += arrived * size
        lead += int(new[0] != old[0])
    result = PlanResult(
        Plan(tuple(moves)),
        Plan(tuple(current)),
        prep,
        moved,
        moved_bytes,
        lead,
        changed,
        leader_balance=_leader_summary(leaders),
    )
    result.rack_repair = repair_report(
        prep.agg.violating,
        prep.repairs,
        {(t, p): new for t, p, _, new, _ in changed},
        prep.ctx,
        prep.params.rf_change(),
        demote=bool(prep.params.demote_brokers),
    )
    if prep.params.capacity is not None:  # hard limits: refuse rather than exceed one
        t = broker_totals(result)
        problems = capacity_problems(
            t["replicas_after"], t["bytes_after"], prep.params.capacity, prep.ctx.allowed
        )
        if problems:
            raise CapacityError(
                [f"{p.where}: {p.detail}" for p in problems],
                header=f"no plan found within the hard limits of {prep.params.capacity.source} "
                "(disk_bytes, max_replicas)",
            )
    return result


def fit_capacity(finals: Mapping[int, list[Changed]], prep: Prepared) -> dict[int, list[Changed]]:
    """The chunks' final rows within the capacity file's hard limits and, where an exact search
    finds a placement meeting it, the bytes goal (``capacity_fit.fit``: as they are when they
    fit, else the placement nearest to them, else a refusal naming the brokers and bytes). Each
    chunk keeps its rows and their order."""
    chunks = sorted(finals)
    rows = [r for c in chunks for r in finals[c]]
    goal = prep.bands if "bytes" in prep.params.balance else {}
    fitted = capacity_fit.fit(rows, prep.ctx, prep.params.capacity, goal)
    out: dict[int, list[Changed]] = {}
    i = 0
    for c in chunks:
        out[c] = fitted[i : i + len(finals[c])]
        i += len(finals[c])
    return out


def rule_context(snapshot, params: PlanParams) -> RuleContext:
    racks = snapshot.racks()
    unknown = sorted(set(params.remove_brokers) - set(racks))
    if unknown:
        raise UsageError(f"--remove-brokers: broker(s) {unknown} are not in the snapshot")
    topics = {t.name for t in snapshot.topics}
    missing = sorted(set(params.rf_topics) - topics)
    if missing:
        raise UsageError(f"--topics: topic(s) {missing} are not in the snapshot")
    demote = set(params.demote_brokers)
    if demote:
        unknown = sorted(demote - set(racks))
        if unknown:
            raise UsageError(f"--demote-brokers: broker(s) {unknown} are not in the snapshot")
        if params.remove_brokers or params.replication_factor is not None:
            raise UsageError(
                "--demote-brokers makes a leaders-only plan (replica order only, nothing "
                "copied); it does not combine with --remove-brokers or --replication-factor"
            )
        if tuple(params.balance) != ("leaders",):
            raise UsageError("--demote-brokers balances leaders only (--balance leaders)")
        if not set(racks) - demote:
            raise UsageError("--demote-brokers: no broker would be left to lead")
    _, excluded = params.topic_filter.split(params.rf_topics)
    if excluded:
        raise UsageError(
            "--topics: " + "; ".join(f"topic {t} is excluded: {why}" for t, why in excluded.items())
        )
    if params.replication_factor is not None:
        if params.replication_factor < 1:
            raise UsageError(f"--replication-factor must be >= 1, got {params.replication_factor}")
        if not params.rf_topics:
            raise UsageError("--replication-factor needs --topics")
    elif params.rf_topics:
        raise UsageError("--topics needs --replication-factor")
    if params.chunks < 1:
        raise UsageError(f"chunks must be >= 1, got {params.chunks}")
    if not 0 <= params.bytes_tolerance < 1:
        raise UsageError(
            f"--bytes-tolerance must be in [0, 1) (0.05 = within 5% of the share), "
            f"got {params.bytes_tolerance}"
        )
    cordoned = snapshot.cordoned()
    removed = frozenset(params.remove_brokers)
    if params.drain_cordoned:
        if params.demote_brokers:
            raise UsageError(
                "--drain-cordoned moves replicas; it does not combine with --demote-brokers"
            )
        removed |= cordoned
    if params.capacity is not None:
        params.capacity.check_brokers(sorted(racks), tuple(sorted(removed)))
    return RuleContext(racks, removed, params.rf_change(), cordoned)


def plan_in_process(snapshot, params: PlanParams | None = None) -> PlanResult:
    """The plain, single-process planner: the same chunks and the same plan as on Spark."""
    params = params or PlanParams()
    ctx = rule_context(snapshot, params)
    full = snapshot
    snapshot, excluded = snapshot.select(params.topic_filter)
    rows = [(p.topic, p.partition, p.replicas, p.size_bytes) for p in snapshot.partitions]
    agg = aggregate_rows(rows, params, ctx)
    prep = prepare(agg, ctx, params)
    by_chunk: dict[int, list[Row]] = defaultdict(list)
    for r in rows:
        by_chunk[chunk_key(r[0], r[1]) % params.chunks].append(r)
    t = time.perf_counter()
    finals = {c: plan_chunk(by_chunk[c], prep, c) for c in sorted(by_chunk)}
    timings = {"plan_replicas_s": time.perf_counter() - t}
    if prep.bytes_pass:
        t = time.perf_counter()
        seen = None
        for _ in range(BYTES_ROUNDS):
            totals: dict = {}
            for c, rs in finals.items():
                totals.update(chunk_totals(rs, c))
            bp = prepare_bytes(totals, prep) if totals != seen else None
            if bp is None:  # within the bands, or the last round changed nothing
                break
            seen = totals
            finals = {c: bytes_chunk(rs, bp, c) for c, rs in finals.items()}
        timings["bytes_s"] = time.perf_counter() - t
    if params.capacity is not None or "bytes" in params.balance:
        t = time.perf_counter()
        finals = fit_capacity(finals, prep)
        timings["capacity_fit_s"] = time.perf_counter() - t
    changed: list[Changed] = []
    if "leaders" not in params.balance:
        for c in sorted(finals):
            changed += [r for r in finals[c] if list(r[3]) != list(r[2])]
        result = _with_excluded(finish(changed, prep), full, excluded, ctx)
        result.timings = timings
        return result
    t = time.perf_counter()
    demoted = frozenset(params.demote_brokers)
    states = demote_states(snapshot.partitions, demoted)
    lp = prepare_leaders(
        leader_groups(
            [
                (c, r[2], r[3], states.get((r[0], r[1]), NO_STATE)[1])
                for c, rs in finals.items()
                for r in rs
            ],
            ctx,
            demoted,
        ),
        ctx,
        demoted,
        states,
    )
    timings["leader_flow_s"] = time.perf_counter() - t
    for c in sorted(finals):
        changed += lead_chunk(finals[c], lp, c)
    if demoted:  # what the recorded leaders and ISRs say the demoted brokers will still lead
        lp.stuck = demoted_leading_after(snapshot.partitions, changed, demoted)
        lp.left = demoted_left(
            [p for p in full.partitions if any(b in demoted for b in p.replicas)],
            changed,
            demoted,
            excluded,
        )
    result = _with_excluded(finish(changed, prep, lp), full, excluded, ctx)
    result.timings = timings
    return result


def _with_excluded(result: PlanResult, full, excluded: Mapping[str, str], ctx) -> PlanResult:
    """Record what the topic selection left out (the report lists it)."""
    parts: dict[str, int] = defaultdict(int)
    on_removed: dict[int, int] = defaultdict(int)
    for p in full.partitions:
        if p.topic in excluded:
            parts[p.topic] += 1
            for b in p.replicas:
                if b in ctx.removed:
                    on_removed[b] += 1
    result.excluded = excluded_summary(excluded, parts, on_removed)
    return result


def generate(
    snapshot,
    topics: Iterable[str],
    broker_list: Iterable[int],
    topic_filter: TopicFilter | None = None,
    capacity: Capacity | None = None,
) -> tuple[Plan, Plan]:
    """``--generate``: place the partitions of ``topics`` on ``broker_list`` with this planner
    (within ``capacity``'s hard limits when given; counted over those topics only).

    Returns (current assignment, proposed assignment) for every partition of those topics that
    ``topic_filter`` selects (internal topics only with ``include_internal``)."""
    topic_filter = topic_filter or TopicFilter()
    topics = sorted(set(topics))
    brokers = sorted(set(broker_list))
    known_t = {t.name for t in snapshot.topics}
    missing = [t for t in topics if t not in known_t]
    if missing:
        raise UsageError(f"--topics-to-move-json-file: topic(s) {missing} do not exist")
    known_b = set(snapshot.broker_ids())
    unknown = [b for b in brokers if b not in known_b]
    if unknown:
        raise UsageError(f"--broker-list: broker(s) {unknown} are not in the cluster")
    if not brokers:
        raise UsageError("--broker-list is empty")
    sub = Snapshot.of(
        snapshot.brokers,
        [t for t in snapshot.topics if t.name in set(topics)],
        [p for p in snapshot.partitions if p.topic in set(topics)],
    )
    remove = tuple(b for b in sorted(known_b) if b not in set(brokers))
    result = plan_in_process(
        sub, PlanParams(remove_brokers=remove, topic_filter=topic_filter, capacity=capacity)
    )
    sub, _ = sub.select(topic_filter)
    proposed = {m.tp: m for m in result.plan}
    cur = [Move(p.tp, tuple(p.replicas)) for p in sub.partitions]
    prop = [proposed.get(p.tp, Move(p.tp, tuple(p.replicas))) for p in sub.partitions]
    return Plan.of(cur), Plan.of(prop)
