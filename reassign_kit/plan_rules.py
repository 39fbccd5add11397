"""The planner's hard constraints, as pure checks with fixed messages.

The in-process validator and the Spark validator both call :func:`check_target` row by row, so
the two give the same verdict and the same words by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class RuleContext:
    """What the constraints need to know about the cluster and the request."""

    racks: Mapping[int, str | None]  # every broker in the snapshot -> rack
    removed: frozenset[int] = frozenset()
    rf_change: Mapping[str, int] = field(default_factory=dict)  # topic -> requested RF
    allow_rf_change: bool = True

    @cached_property
    def allowed(self) -> list[int]:
        return sorted(b for b in self.racks if b not in self.removed)

    @cached_property
    def rack_set(self) -> frozenset[str]:
        return frozenset(self.racks[b] for b in self.allowed) if self.rack_count else frozenset()

    @cached_property
    def rack_count(self) -> int:
        """Racks among the brokers a plan may use; 0 when not every such broker has a rack
        (Kafka is rack-aware only when all brokers are)."""
        racks = [self.racks[b] for b in self.allowed]
        if not racks or any(r is None for r in racks):
            return 0
        return len(set(racks))


def required_racks(rf: int, rack_count: int) -> int:
    """A partition spans min(RF, racks) racks."""
    return min(rf, rack_count)


def check_target(
    name: str,
    topic: str,
    current: Sequence[int] | None,
    target: Sequence[int],
    ctx: RuleContext,
    rack_count: int | None = None,
) -> list[str]:
    """Every hard-constraint problem of one partition's target replica list, in a fixed order."""
    problems: list[str] = []
    if len(set(target)) != len(target):
        problems.append(f"partition {name}: replicas {list(target)} are not distinct")
    unknown = sorted({b for b in target if b not in ctx.racks})
    if unknown:
        problems.append(f"partition {name}: broker(s) {unknown} are not in the snapshot")
    removed = sorted({b for b in target if b in ctx.removed})
    if removed:
        problems.append(f"partition {name}: broker(s) {removed} are being removed")
    if current is not None:
        want = ctx.rf_change.get(topic, len(current))
        if len(target) != want:
            if topic in ctx.rf_change:
                problems.append(
                    f"partition {name}: replication factor {len(target)}, asked for {want}"
                )
            elif not ctx.allow_rf_change:
                problems.append(
                    f"partition {name}: replication factor would change from {len(current)} "
                    f"to {len(target)} (--disallow-replication-factor-change)"
                )
    n_racks = ctx.rack_count if rack_count is None else rack_count
    if n_racks > 1 and not unknown:
        spanned = len({ctx.racks[b] for b in set(target)})
        need = required_racks(len(set(target)), n_racks)
        if spanned < need:
            problems.append(
                f"partition {name}: replicas {list(target)} span {spanned} rack(s), "
                f"rack-awareness needs {need}"
            )
    return problems
