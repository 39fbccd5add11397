"""Rack repair: partitions whose replica set spans fewer racks than it could.

Topics created before ``broker.rack`` was set, or moved by hand, hold two replicas in one rack.
The planner repairs each of them with the fewest moves: one replica per missing rack leaves a
rack that holds more than one, for the least-loaded eligible broker of a missing rack. Pure
functions, called by both engines on the driver (``prepare``) and in every chunk (``shape``):

- ``rack_surplus``: how many replicas of a partition must change rack (0: none);
- ``choose_repairs``: which of the doubled replicas leave (the one whose broker is the most over
  its target, then the later position, so the leader stays where it can), in one deterministic
  pass over the violating partitions (a few per cent of the cluster: they come to the driver);
- ``shape``: the chosen replicas become placeholders (as for an RF increase), so the chunk pass
  places them like any replica that must move, into a missing rack (``replica_options``);
- ``repair_bound``: what the repairs add to the lower bound on moved replicas (each rack sends
  away at least its repairs; each missing rack receives what rack-awareness pins there);
- ``repair_report``: violations before, after, and why any are left.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .maxflow import augment
from .rules import RuleContext, apply_rf, required_racks

REPAIR_BASE = -1000  # repair placeholders: -1000, -1001, ... (an RF increase uses -1, -2, ...)


def _kept(b: int, ctx: RuleContext) -> bool:
    return b >= 0 and b not in ctx.removed and b in ctx.racks


def rack_surplus(reps: Sequence[int], ctx: RuleContext) -> int:
    """Replicas of this (RF-shaped) replica list that must move to another rack so that it spans
    min(RF, racks) racks: the racks it lacks, less the replicas that must move anyway (removed
    brokers, RF-increase placeholders: their placement already fills missing racks), at most
    the missing racks that have a broker that may take one (not cordoned, not a member)."""
    n = ctx.rack_count
    if n <= 1:
        return 0
    kept = [b for b in reps if _kept(b, ctx)]
    holes = len(reps) - len(kept)
    spanned = {ctx.racks[b] for b in kept}
    short = required_racks(len(reps), n) - len(spanned) - holes
    if short <= 0:
        return 0
    members = set(reps)
    fillable = sum(
        1
        for rk, bs in ctx.rack_brokers.items()
        if rk not in spanned and any(b not in members and b not in ctx.cordoned for b in bs)
    )
    return max(0, min(short, fillable - holes))


def spans_short(reps: Sequence[int], ctx: RuleContext) -> bool:
    """Whether a final replica list spans fewer racks than min(RF, racks) (a violation)."""
    n = ctx.rack_count
    if n <= 1 or not all(b in ctx.racks for b in reps):
        return False
    return len({ctx.racks[b] for b in reps}) < required_racks(len(set(reps)), n)


def is_violating(
    replicas: Sequence[int], ctx: RuleContext, rf_change: Mapping[str, int], topic: str
) -> bool:
    """Whether a partition is one the repair looks at: it spans too few racks now, or its
    RF-shaped list needs a replica to change rack (the rows that come to the driver)."""
    return spans_short(replicas, ctx) or rack_surplus(apply_rf(topic, replicas, rf_change), ctx) > 0


def _per_rack_max(rf: int, n_racks: int) -> int:
    return 1 if rf <= n_racks else rf - n_racks + 1


def _flow(groups: Mapping[tuple, int], room: Mapping[int, int]) -> dict[tuple[tuple, int], int]:
    """Max flow from groups (candidate brokers, each partition sends at most one replica per
    broker) to brokers with ``room``: (group, broker) -> replicas. Small graph (groups are sets
    of brokers of one rack), Edmonds-Karp in a deterministic order."""
    cap: dict = defaultdict(lambda: defaultdict(int))
    src, sink = ("S",), ("T",)
    for g, n in sorted(groups.items()):
        cands, d = g
        cap[src][("G", g)] += n * d
        for b in cands:
            cap[("G", g)][("B", b)] += n
            cap[("B", b)].setdefault(("G", g), 0)
        cap[("G", g)].setdefault(src, 0)
    for b, r in sorted(room.items()):
        if r > 0:
            cap[("B", b)][sink] += r
            cap[sink].setdefault(("B", b), 0)
    orig = {u: dict(vs) for u, vs in cap.items()}
    augment(cap, src, sink)
    out = {}
    for u, vs in orig.items():
        if u[0] != "G":
            continue
        for v, c0 in vs.items():
            if v[0] == "B" and c0 - cap[u][v] > 0:
                out[(u[1], v[1])] = c0 - cap[u][v]
    return out


@dataclass
class Repairs:
    """The driver's repair decision (``choose_repairs``)."""

    # (topic, partition) -> positions (in the RF-shaped list) of the replicas that change rack
    positions: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    # rack -> replicas that must leave it in any plan
    leaving: dict[str, int] = field(default_factory=dict)
    # (brokers of one rack holding the partition, replicas that must leave) -> partitions
    groups: dict[tuple, int] = field(default_factory=dict)

    def beyond_excess(self, cur: Mapping[int, int], targets: Mapping[int, int], ctx) -> int:
        """Forced departures that no broker's excess over ``targets`` can absorb (a max flow):
        each costs a move beyond the excess in any plan reaching these targets."""
        room = {b: max(0, cur.get(b, 0) - targets.get(b, 0)) for b in ctx.allowed}
        flow = _flow(self.groups, room)
        return sum(g[1] * n for g, n in self.groups.items()) - sum(flow.values())


def choose_repairs(
    rows: Iterable[tuple[str, int, Sequence[int], int]],
    cur: Mapping[int, int],
    targets: Mapping[int, int],
    ctx: RuleContext,
    rf_change: Mapping[str, int],
) -> Repairs:
    """Which replicas leave their rack, and what the repairs add to the lower bound.

    A rack holding m > 1 replicas of a partition with RF <= racks must send m - 1 of them away
    in any plan, each from a broker of that rack that holds one. A departure from a broker over
    its target is a balancing move as well; any other costs one more move (the broker must be
    refilled). A max flow sends as many forced departures as possible to brokers' excess: that
    is both the choice (each partition in (topic, partition) order takes its group's flow, then
    the doubled replica whose broker is the most over target, the later position first, so the
    leader stays where it can) and the bound (departures >= excess + forced - flow)."""
    left = {b: cur.get(b, 0) - targets.get(b, 0) for b in set(cur) | set(targets)}
    out = Repairs()
    leaving: dict[str, int] = defaultdict(int)
    n_racks = ctx.rack_count
    todo = []
    groups: dict[tuple, int] = defaultdict(int)
    for topic, part, replicas, _ in sorted(rows, key=lambda r: (r[0], r[1])):
        reps = apply_rf(topic, replicas, rf_change)
        s = rack_surplus(reps, ctx)
        if not s:
            continue
        cap = _per_rack_max(len(reps), n_racks)
        by_rack: dict[str, list[int]] = defaultdict(list)
        for b in reps:
            if _kept(b, ctx):
                by_rack[ctx.racks[b]].append(b)
        forced = {rk: len(bs) - cap for rk, bs in by_rack.items() if len(bs) > cap}
        for rk, m in forced.items():  # in any plan, at least this many leave the rack
            leaving[rk] += m
        # the forced departures are the repairs when they are exactly what it needs (RF <= racks
        # and every missing rack fillable); else the greedy alone decides
        keys = []
        if sum(forced.values()) == s:
            for rk, m in sorted(forced.items()):
                g = (tuple(sorted(by_rack[rk])), m)
                groups[g] += 1
                keys.append(g)
        todo.append((topic, part, reps, s, keys))
    room = {b: max(0, v) for b, v in left.items() if b in set(ctx.allowed)}
    flow = _flow(groups, room)
    out.groups = dict(groups)
    share: dict[tuple, dict[int, int]] = defaultdict(dict)
    for (g, b), n in flow.items():
        share[g][b] = n
    for topic, part, reps, s, keys in todo:
        chosen: list[int] = []
        for g in keys:  # the flow's brokers first
            cands, m = g
            for b in sorted(cands, key=lambda b: (-share[g].get(b, 0), b)):
                if m <= 0 or share[g].get(b, 0) <= 0:
                    break
                share[g][b] -= 1
                chosen.append(reps.index(b))
                left[b] = left.get(b, 0) - 1
                m -= 1
        while len(chosen) < s:
            cnt = Counter(
                ctx.racks[b] for j, b in enumerate(reps) if _kept(b, ctx) and j not in chosen
            )
            cands_j = [
                j
                for j, b in enumerate(reps)
                if j not in chosen and _kept(b, ctx) and cnt[ctx.racks[b]] > 1
            ]
            if not cands_j:
                break
            j = max(cands_j, key=lambda j: (cnt[ctx.racks[reps[j]]], left.get(reps[j], 0), j))
            chosen.append(j)
            left[reps[j]] = left.get(reps[j], 0) - 1
        if chosen:
            out.positions[(topic, part)] = tuple(sorted(chosen))
    out.leaving = dict(leaving)
    return out


def shape(reps: Sequence[int], positions: Sequence[int] | None) -> list[int]:
    """The replica list with the repaired positions as placeholders (they must move)."""
    reps = list(reps)
    for i, j in enumerate(positions or ()):
        reps[j] = REPAIR_BASE - i
    return reps


def repair_bound(
    cur: Mapping[int, int],
    targets: Mapping[int, int],
    ctx: RuleContext,
    forced: Mapping[str, int],
    leaving: Mapping[str, int],
    beyond_excess: int = 0,
) -> int:
    """A lower bound on moved replicas that counts the repairs. Per rack k of the usable brokers
    (held = its replicas now, final = its targets, net = final - held):
    departures D_k >= max(its brokers' excess over target, the repairs that must leave it,
    forced arrivals - net), arrivals A_k >= max(its brokers' deficit, forced arrivals,
    D_k + net). Every move departs once (from a rack, or from a removed broker / placeholder)
    and arrives once (in a rack): moves >= max(outside + sum D_k, sum A_k). And per broker:
    departures >= max(excess, forced repairs it sends), so moves >= outside + all excess +
    ``beyond_excess`` (the forced departures no excess can absorb, ``choose_repairs``)."""
    if ctx.rack_count <= 1:
        return 0
    outside = sum(n for b, n in cur.items() if b < 0 or b in ctx.removed or b not in ctx.racks)
    dep_total = outside
    arr_total = 0
    for rk in sorted(ctx.rack_set):
        bs = [b for b in ctx.allowed if ctx.racks[b] == rk]
        excess = sum(max(0, cur.get(b, 0) - targets.get(b, 0)) for b in bs)
        deficit = sum(max(0, targets.get(b, 0) - cur.get(b, 0)) for b in bs)
        net = sum(targets.get(b, 0) for b in bs) - sum(cur.get(b, 0) for b in bs)
        d = max(excess, leaving.get(rk, 0), forced.get(rk, 0) - net, 0)
        dep_total += d
        arr_total += max(deficit, forced.get(rk, 0), d + net, 0)
    excess_all = sum(max(0, cur.get(b, 0) - targets.get(b, 0)) for b in ctx.allowed)
    return max(dep_total, arr_total, outside + excess_all + beyond_excess)


def repair_report(
    violating: Iterable[tuple[str, int, Sequence[int], int]],
    repairs: Mapping[tuple[str, int], tuple[int, ...]],
    final: Mapping[tuple[str, int], Sequence[int]],
    ctx: RuleContext,
    rf_change: Mapping[str, int],
    demote: bool = False,
) -> dict:
    """Violations before the plan (partitions spanning fewer racks than min(RF, racks)), after
    it (by the plan's targets), and why each one left is left."""
    before = 0
    left: dict[str, list[str]] = defaultdict(list)
    for topic, part, replicas, _ in violating:
        if not spans_short(replicas, ctx):
            continue
        before += 1
        new = final.get((topic, part), list(replicas))
        if not spans_short(new, ctx):
            continue
        if demote:
            why = "a demotion only reorders replicas (nothing is copied)"
        elif (topic, part) in repairs:
            why = "the plan could not place its repair"
        else:
            why = "no broker of a missing rack may take a replica (cordoned or all members)"
        left[why].append(f"{topic}-{part}")
    after = sum(len(v) for v in left.values())
    out: dict = {
        "rack_aware": ctx.rack_count > 1,
        "violations_before": before,
        "repaired": before - after,
        "violations_after": after,
        "left": {why: {"partitions": len(ps), "examples": ps[:10]} for why, ps in left.items()},
    }
    if ctx.rack_count <= 1 and any(r is None for r in ctx.racks.values()):
        out["why_not_rack_aware"] = (
            "not every usable broker has a rack (Kafka is rack-aware only when all are)"
        )
    return out
