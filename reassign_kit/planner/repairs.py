"""The rack-repair hook of the quotas pass: which doubled replicas leave their
rack (``rack_repair.choose_repairs``, against the targets: rack totals do not depend on which
of the doubled replicas leaves), and the aggregates with those replicas counted as placeholders
that must move, so that every later pass treats a repair like a removed broker's replica."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .aggregates import Aggregates, aggregate_rows
from .params import PlanParams
from .rack_repair import Repairs, choose_repairs, repair_bound
from .rules import RuleContext
from .targets import broker_caps, plan_targets


@dataclass
class RepairHook:
    """The repairs chosen and the aggregates the quotas are computed from."""

    work: Aggregates  # the aggregates with the repaired replicas as placeholders
    chosen: Repairs | None = None
    # (topic, partition) -> positions of the replicas that change rack
    positions: dict[tuple[str, int], tuple[int, ...]] = field(default_factory=dict)
    leaving: dict[str, int] = field(default_factory=dict)

    def bound(self, cur0: Mapping[int, int], targets: Mapping[int, int], ctx: RuleContext) -> int:
        """The lower bound on moves that counts the repairs (``rack_repair.repair_bound``)."""
        return repair_bound(
            cur0,
            targets,
            ctx,
            self.work.forced_by_rack(),
            self.leaving,
            self.chosen.beyond_excess(cur0, targets, ctx) if self.chosen is not None else 0,
        )

    def frozen(self, agg: Aggregates, params: PlanParams) -> frozenset:
        """The violating partitions no repair fixes: the chunk pass changes none of their
        replicas (the validator would refuse the set). None when demoting (a reorder only)."""
        if params.demote_brokers:
            return frozenset()
        return frozenset((r[0], r[1]) for r in agg.violating if (r[0], r[1]) not in self.positions)


def choose(
    agg: Aggregates, ctx: RuleContext, params: PlanParams, cur0: Mapping[int, int], balance: bool
) -> RepairHook:
    """The repairs for the violating partitions of ``agg`` (none when demoting)."""
    if not agg.violating or params.demote_brokers:
        return RepairHook(agg)
    targets0 = plan_targets(ctx, cur0, agg.rf_hist, balance, params, broker_caps(ctx, params, cur0))
    chosen = choose_repairs(agg.violating, cur0, targets0, ctx, params.rf_change())
    work = agg
    if chosen.positions:
        rows = [r for r in agg.violating if (r[0], r[1]) in chosen.positions]
        work = agg.plus(
            aggregate_rows(rows, params, ctx, chosen.positions),
            aggregate_rows(rows, params, ctx, {}),
        )
    return RepairHook(work, chosen, chosen.positions, chosen.leaving)
