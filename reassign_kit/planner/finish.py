"""The last passes: the exact capacity fit over every chunk's rows, and the plan with its
report (moves, rack repair, leader balance; a refusal when a hard limit is exceeded)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import CapacityError
from ..model import Move, Plan, TopicPartition
from . import capacity_fit
from .leaders import LeaderPlan
from .quotas import Prepared
from .rack_repair import (
    repair_report,
)
from .report import PlanResult, broker_totals
from .rows import Changed
from .rules import (
    capacity_problems,
)


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
