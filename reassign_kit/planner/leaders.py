"""Pass 6: preferred leaders balanced by reordering replicas (nothing is copied), exactly: the
final replica sets are counted per (chunk, brokers that may lead, current leader), the driver
solves one flow over those groups (``leader_flow``), every chunk applies its share."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .apportion import apportion_2d
from .leader_flow import LeaderBalance, balance_leaders
from .rows import Changed, chunk_key
from .rules import (
    VIRTUAL,
    RuleContext,
)


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
    reorder changes no placement (the validator accepts it on a rack-breaking set)."""
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
            out.append(Changed(topic, part, old, new, size))
    return out
