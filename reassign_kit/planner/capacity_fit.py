"""Exact fit of a plan into the capacity file's hard limits.

The chunk passes are greedy: they honour the replica targets and the bytes bands, and may end
with a broker over its ``disk_bytes`` / ``max_replicas`` although some placement fits every
limit. Refusing then would be a false refusal. So when the greedy result breaks a limit, the
placement is decided by a CP-SAT model (OR-Tools), over the same hard rules as the validator:

* every partition keeps its replica set, or gets ``rf`` distinct brokers that are not being
  removed and span ``min(rf, racks)`` racks, none of them a fully cordoned broker it is not on
  already (``plan_rules.target_problems``);
* every broker within its ``disk_bytes`` and ``max_replicas``;
* the fewest replicas placed apart from the greedy plan (its balance work is kept), then the
  fewest moved from the current placement.

Up to ``EXACT_PARTITIONS`` partitions every partition is free in the model, so its verdict is
exact: a plan when one exists, else a refusal naming the brokers of an infeasible core (the
solver's assumptions) and the least bytes / replicas they would be over. Beyond that only the
partitions on over-limit brokers are free (the others stay as the greedy placed them), and a
refusal says that it is not a proof. The solver runs on one worker with a deterministic time
limit, so the same rows give the same plan on both engines.

The bytes goal (``--balance bytes``) is treated the same way where the search is exact: when the
greedy passes leave a broker outside its band and some placement within the rules and limits
puts every broker inside, that placement is taken; when none does, the goal stays unmet and the
report and the CLI's exit code (15) say so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..errors import CapacityError
from .rules import Capacity, RuleContext, required_racks

EXACT_PARTITIONS = 3000  # every partition free in the model (an exact verdict) up to this many
NEIGHBOURHOOD_VARS = 400_000  # beyond it: partitions x brokers freed around over-limit brokers
DETERMINISTIC_TIME = 120.0  # CP-SAT's deterministic time units (reproducible, ~seconds)
# the bytes goal is soft (unmet: the plan is written, exit 15): a search for it gets a short
# budget; a random 3-rack snapshot spent ~100 CPU s on it at 120 units, every plan
GOAL_DETERMINISTIC_TIME = 10.0
# the least excess only words a refusal already decided: a short budget (an exhausted one says
# the amount was not computed); at 120 units a hard refusal searched twice for many minutes
EXPLAIN_DETERMINISTIC_TIME = 10.0

Changed = tuple  # (topic, partition, old, new, size): planner.rows.Changed


@dataclass(frozen=True)
class Limits:
    """The hard limits per allowed broker (None: no limit of that kind)."""

    disk: dict[int, int]
    replicas: dict[int, int]

    @classmethod
    def of(cls, capacity: Capacity, brokers: Sequence[int]) -> Limits:
        disk = {b: d for b in brokers if (d := capacity.disk(b)) is not None}
        reps = {b: m for b in brokers if (m := capacity.max_replicas(b)) is not None}
        return cls(disk, reps)


def totals(rows: Sequence[Changed]) -> tuple[dict[int, int], dict[int, int]]:
    """(bytes, replicas) per broker of the rows' new replica sets."""
    byts: dict[int, int] = {}
    reps: dict[int, int] = {}
    for _, _, _, new, size in rows:
        for b in new:
            byts[b] = byts.get(b, 0) + size
            reps[b] = reps.get(b, 0) + 1
    return byts, reps


def over_limits(byts: Mapping[int, int], reps: Mapping[int, int], limits: Limits) -> list[int]:
    """Brokers over a limit."""
    out = {b for b, d in limits.disk.items() if byts.get(b, 0) > d}
    out |= {b for b, m in limits.replicas.items() if reps.get(b, 0) > m}
    return sorted(out)


def _keepable(old: Sequence[int], new_rf: int, ctx: RuleContext) -> bool:
    """The partition may stay as it is: its current set is usable and of the asked RF."""
    allowed = set(ctx.allowed)
    return len(old) == new_rf and len(set(old)) == len(old) and all(b in allowed for b in old)


class _Model:
    """The CP-SAT model over the free rows (the fixed rows are constants in the limits)."""

    def __init__(
        self,
        free: Sequence[Changed],
        fixed_load: tuple[dict[int, int], dict[int, int]],
        ctx: RuleContext,
        limits: Limits,
        skip: frozenset[int] = frozenset(),
        bands: Mapping[int, tuple[int, int]] | None = None,
        rep_range: tuple[int, int] | None = None,
    ):
        from ortools.sat.python import cp_model

        self.cp = cp_model
        m = self.m = cp_model.CpModel()
        brokers = list(ctx.allowed)
        self.brokers = brokers
        n_racks = ctx.rack_count
        cordoned = set(getattr(ctx, "cordoned", ())) & set(brokers)
        self.x: list[dict[int, object]] = []
        objective = []
        big = 1 + sum(len(r[3]) for r in free)
        for i, (_, _, old, new, _size) in enumerate(free):
            rf = len(new)
            xs = {b: m.new_bool_var(f"x{i}_{b}") for b in brokers}
            for b in cordoned - set(old):  # a fully cordoned broker takes no new replica
                m.add(xs[b] == 0)
            self.x.append(xs)
            m.add(sum(xs.values()) == rf)
            rack_ok = None
            if _keepable(old, rf, ctx):
                keep = m.new_bool_var(f"k{i}")
                for b, v in xs.items():
                    m.add(v == (1 if b in old else 0)).only_enforce_if(keep)
                rack_ok = keep.Not()
            if n_racks > 1:
                ys = []
                for rk, bs in sorted(ctx.rack_brokers.items(), key=lambda kv: str(kv[0])):
                    y = m.new_bool_var(f"y{i}_{rk}")
                    m.add(y <= sum(xs[b] for b in bs))
                    ys.append(y)
                c = m.add(sum(ys) >= required_racks(rf, n_racks))
                if rack_ok is not None:
                    c.only_enforce_if(rack_ok)
            # closest to the greedy placement first (its balance kept), then to the current
            greedy, current = set(new), set(old)
            for b, v in xs.items():
                w = (big if b not in greedy else 0) + (1 if b not in current else 0)
                if w:
                    objective.append(w * v)
                m.add_hint(v, b in greedy)
        m.minimize(sum(objective))
        byts0, reps0 = fixed_load
        self.assume: dict[int, object] = {}
        self.load_bytes: dict[int, object] = {}
        self.load_reps: dict[int, object] = {}
        for b in brokers:
            lb = sum(r[4] * self.x[i][b] for i, r in enumerate(free)) + byts0.get(b, 0)
            lr = sum(self.x[i][b] for i in range(len(free))) + reps0.get(b, 0)
            self.load_bytes[b], self.load_reps[b] = lb, lr
            if b in skip:
                continue
            a = m.new_bool_var(f"cap_{b}")
            self.assume[b] = a
            if b in limits.disk:
                m.add(lb <= limits.disk[b]).only_enforce_if(a)
            if b in limits.replicas:
                m.add(lr <= limits.replicas[b]).only_enforce_if(a)
        for b, (lo, hi) in (bands or {}).items():  # the bytes goal, as hard bounds
            if b in self.load_bytes:
                m.add(self.load_bytes[b] >= lo)
                m.add(self.load_bytes[b] <= hi)
        if rep_range is not None:  # the replica balance the greedy reached is kept
            for b in brokers:
                m.add(self.load_reps[b] >= rep_range[0])
                m.add(self.load_reps[b] <= rep_range[1])

    def solve(self, assumptions: bool = True, budget: float = DETERMINISTIC_TIME):
        solver = self.cp.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.random_seed = 7
        solver.parameters.max_deterministic_time = budget
        if assumptions:
            self.m.add_assumptions(list(self.assume.values()))
        status = solver.solve(self.m)
        return solver, status


def _placed(row: Changed, chosen: set[int]) -> Changed:
    """The row with ``chosen`` as its replica set: kept replicas stay in the current order (the
    leader pass orders them), new ones take the places of those that leave."""
    topic, part, old, new, size = row
    if chosen == set(new):
        return row
    keep = [b for b in old if b in chosen]
    rest = sorted(chosen - set(keep))
    return (topic, part, old, keep + rest, size)


def _explain(
    free: Sequence[Changed],
    fixed_load: tuple[dict[int, int], dict[int, int]],
    ctx: RuleContext,
    limits: Limits,
    core: Sequence[int],
) -> str:
    """The least bytes (then replicas) the core's brokers would be over, every rule kept: the
    core's limits alone admit no placement (the other brokers' limits are not enforced here,
    their assumption literals left free), so the least excess is > 0: what makes the capacity
    file infeasible, in bytes."""
    mdl = _Model(free, fixed_load, ctx, limits, skip=frozenset(core))
    m = mdl.m
    over_b, over_r = [], []
    most_bytes = sum(r[4] * len(r[3]) for r in free) + sum(fixed_load[0].values())
    most_reps = sum(len(r[3]) for r in free) + sum(fixed_load[1].values())
    for b in core:
        if b in limits.disk:
            v = m.new_int_var(0, most_bytes, f"ob{b}")
            m.add(v >= mdl.load_bytes[b] - limits.disk[b])
            over_b.append(v)
        if b in limits.replicas:
            v = m.new_int_var(0, most_reps, f"or{b}")
            m.add(v >= mdl.load_reps[b] - limits.replicas[b])
            over_r.append(v)
    m.clear_hints()
    m.minimize(sum(over_b) if over_b else 0)
    solver, status = mdl.solve(assumptions=False, budget=EXPLAIN_DETERMINISTIC_TIME)
    if status != mdl.cp.OPTIMAL:
        return "no placement keeps them within their limits (over by an amount not computed)"
    least_bytes = round(solver.objective_value)
    if over_b:
        m.add(sum(over_b) <= least_bytes)
    m.minimize(sum(over_r) if over_r else 0)
    solver, status = mdl.solve(assumptions=False)
    least_reps = round(solver.objective_value) if status == mdl.cp.OPTIMAL else 0
    disks = {b: limits.disk[b] for b in core if b in limits.disk}
    caps = {b: limits.replicas[b] for b in core if b in limits.replicas}
    parts = []
    if least_bytes > 0:
        parts.append(
            f"every placement leaves them at least {least_bytes} bytes over their disks "
            f"(disk_bytes {disks}, {sum(disks.values())} in all)"
        )
    if least_reps > 0:
        parts.append(
            ("and " if parts else "every placement leaves them ")
            + f"at least {least_reps} replicas over max_replicas {caps}"
        )
    return "; ".join(parts) or "no placement keeps them within their limits"


def int_bands(bands: Mapping[int, tuple[float, float]]) -> dict[int, tuple[int, int]]:
    """Bytes bands as integer bounds: a load is within (lo, hi) iff ceil(lo) <= it <= floor(hi)."""
    return {b: (math.ceil(lo), math.floor(hi)) for b, (lo, hi) in bands.items() if hi != math.inf}


def needs_fit(
    byts: Mapping[int, int],
    reps: Mapping[int, int],
    ctx: RuleContext,
    capacity: Capacity | None,
    bands: Mapping[int, tuple[float, float]],
) -> bool:
    """Whether the greedy totals break a hard limit, or leave a broker outside its bytes band."""
    if capacity is not None and over_limits(byts, reps, Limits.of(capacity, ctx.allowed)):
        return True
    return any(not lo <= byts.get(b, 0) <= hi for b, (lo, hi) in bands.items())


def _solve_placement(rows, free_idx, ctx, limits, bands=None, rep_range=None):
    free = [rows[i] for i in free_idx]
    free_set = set(free_idx)
    fixed_load = totals([rows[i] for i in range(len(rows)) if i not in free_set])
    mdl = _Model(free, fixed_load, ctx, limits, bands=bands, rep_range=rep_range)
    solver, status = mdl.solve(budget=GOAL_DETERMINISTIC_TIME if bands else DETERMINISTIC_TIME)
    placed = None
    if status in (mdl.cp.OPTIMAL, mdl.cp.FEASIBLE):
        placed = list(rows)
        for i, row, xs in zip(free_idx, free, mdl.x, strict=True):
            placed[i] = _placed(row, {b for b, v in xs.items() if solver.value(v)})
    return placed, mdl, solver, status, free, fixed_load


def fit(
    rows: Sequence[Changed],
    ctx: RuleContext,
    capacity: Capacity | None,
    bands: Mapping[int, tuple[float, float]] | None = None,
) -> list[Changed]:
    """``rows`` (every partition's final row) within the hard limits and, when ``bands`` (the
    bytes goal) are given and the snapshot is small enough for an exact search, within them too:
    as they are when they already are, else the CP-SAT placement nearest to them. A goal no
    placement meets is left to the report (and the CLI's exit code); a hard limit no placement
    keeps raises ``CapacityError`` (the brokers and bytes that make it so), as does a limit
    the search could not keep without proving it impossible (said so)."""
    from .rules import Capacity as _Capacity

    capacity = capacity or _Capacity()
    bands = bands or {}
    limits = Limits.of(capacity, ctx.allowed)
    byts, reps = totals(rows)
    over = over_limits(byts, reps, limits)
    off = [b for b, (lo, hi) in bands.items() if not lo <= byts.get(b, 0) <= hi]
    if not over and not off:
        return list(rows)
    order = sorted(range(len(rows)), key=lambda i: (rows[i][0], rows[i][1]))
    exact = len(rows) <= EXACT_PARTITIONS
    if off and exact:  # the goal too, when some placement meets it without undoing the
        # replica balance (a bytes-only placement left replica counts 4 apart on 5 brokers)
        counts = [reps.get(b, 0) for b in ctx.allowed]
        rep_range = (min(counts), max(counts)) if counts else None
        placed, *_ = _solve_placement(rows, order, ctx, limits, int_bands(bands), rep_range)
        if placed is not None:
            return placed
    if not over:
        return list(rows)
    if exact:
        free_idx = order
    else:  # the partitions on over-limit brokers, the biggest first
        bad = set(over)
        cand = [i for i in order if bad & set(rows[i][3])]
        cand.sort(key=lambda i: (-rows[i][4], rows[i][0], rows[i][1]))
        keep = max(1, NEIGHBOURHOOD_VARS // max(1, len(ctx.allowed)))
        free_idx = sorted(cand[:keep], key=lambda i: (rows[i][0], rows[i][1]))
    placed, mdl, solver, status, free, fixed_load = _solve_placement(rows, free_idx, ctx, limits)
    if placed is not None:
        return placed
    cp = mdl.cp
    header = f"no plan found within the hard limits of {capacity.source} (disk_bytes, max_replicas)"
    if status == cp.INFEASIBLE and exact:
        core_vars = set(solver.sufficient_assumptions_for_infeasibility())
        core = sorted(b for b, a in mdl.assume.items() if a.index in core_vars)
        who = f"broker {core[0]}" if len(core) == 1 else f"brokers {core}"
        raise CapacityError(
            [
                f"{who}: {_explain(free, fixed_load, ctx, limits, core)} (an exact search: every "
                f"placement of the {len(rows)} partitions within the rules was considered)"
            ],
            header=header,
        )
    why = (
        "the search ran out of time"
        if status == cp.UNKNOWN
        else f"only the {len(free)} partitions on over-limit brokers were free to move "
        f"(an exact search covers up to {EXACT_PARTITIONS} partitions; this plan has {len(rows)})"
    )
    raise CapacityError(
        [f"broker {b}: over a hard limit after the planner's passes" for b in over]
        + [
            f"the search found no placement within every limit, but did not prove there is none: {why}"
        ],
        header=header,
    )
