"""The planner's hard constraints on top of the Core rules of ``validate``, as pure checks.

``plan_problems_offline`` is the in-process validator of a plan against a snapshot (Core's
``move_problems`` then these rules, per move, in plan order); the Spark validator calls
``move_all_problems`` row by row inside executors, so the two give the same verdict and the
same words by construction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from .model import Move, PartitionState, Plan
from .validate import ClusterView, Problem, move_problems

REMOVED_BROKER = "removed-broker"
REPLICATION_FACTOR_TARGET = "replication-factor-target"
RACK_AWARENESS = "rack-awareness"
TOPIC_EXCLUDED = "topic-excluded"


def selection_problems(plan: Plan, topic_filter) -> list[Problem]:
    """A move of a topic the selection leaves out (``snapshot.TopicFilter``: an internal topic
    without --include-internal, or one the regexes exclude) is a problem of the plan."""
    out = []
    for move in plan:
        why = topic_filter.why_excluded(move.topic)
        if why is not None:
            out.append(
                Problem(str(move.tp), TOPIC_EXCLUDED, f"topic {move.topic} is excluded: {why}")
            )
    return out


@dataclass(frozen=True)
class RuleContext:
    """What the constraints need to know about the cluster and the request."""

    racks: Mapping[int, str | None]  # every broker in the snapshot -> rack
    removed: frozenset[int] = frozenset()
    rf_change: Mapping[str, int] = field(default_factory=dict)  # topic -> requested RF

    @cached_property
    def allowed(self) -> list[int]:
        return sorted(b for b in self.racks if b not in self.removed)

    @cached_property
    def rack_set(self) -> frozenset[str]:
        return frozenset(self.racks[b] for b in self.allowed) if self.rack_count else frozenset()

    @cached_property
    def rack_brokers(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for b in self.allowed:
            out.setdefault(self.racks[b], []).append(b)
        return out

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


def target_problems(move: Move, ctx: RuleContext) -> list[Problem]:
    """The planner's hard constraints for one target: no removed broker, the requested
    replication factor, rack-awareness (min(RF, racks) racks spanned)."""
    out: list[Problem] = []
    where = str(move.tp)
    target = list(move.replicas)
    removed = sorted({b for b in target if b in ctx.removed})
    if removed:
        out.append(
            Problem(
                where,
                REMOVED_BROKER,
                f"replicas {target} use broker(s) {removed}, which are being removed",
            )
        )
    want = ctx.rf_change.get(move.topic)
    if want is not None and len(target) != want:
        out.append(
            Problem(
                where,
                REPLICATION_FACTOR_TARGET,
                f"replicas {target} have replication factor {len(target)}, {want} was asked for",
            )
        )
    n_racks = ctx.rack_count
    if n_racks > 1 and all(b in ctx.racks for b in target):
        spanned = len({ctx.racks[b] for b in target})
        need = required_racks(len(set(target)), n_racks)
        if spanned < need:
            out.append(
                Problem(
                    where,
                    RACK_AWARENESS,
                    f"replicas {target} span {spanned} rack(s); rack-awareness needs {need} "
                    f"(min(replication factor, {n_racks} racks))",
                )
            )
    return out


def move_all_problems(
    move: Move, cluster: ClusterView, ctx: RuleContext, disallow_replication_factor_change: bool
) -> list[Problem]:
    return move_problems(
        move, cluster, disallow_replication_factor_change=disallow_replication_factor_change
    ) + target_problems(move, ctx)


def cluster_view(snapshot, states_for: Sequence | None = None) -> ClusterView:
    """A ``ClusterView`` from a snapshot (current replicas only for ``states_for`` when given)."""
    counts: dict[str, int] = {t.name: 0 for t in snapshot.topics}
    for p in snapshot.partitions:
        counts[p.topic] = max(counts[p.topic], p.partition + 1)
    want = set(states_for) if states_for is not None else None
    states = {
        p.tp: PartitionState(p.tp, tuple(p.replicas))
        for p in snapshot.partitions
        if want is None or p.tp in want
    }
    return ClusterView.of(snapshot.broker_ids(), counts, states)


def plan_problems_offline(
    plan: Plan,
    snapshot,
    ctx: RuleContext | None = None,
    disallow_replication_factor_change: bool = False,
) -> list[Problem]:
    """The in-process validator: every problem of the plan against the snapshot, in plan order."""
    ctx = ctx or RuleContext(snapshot.racks())
    cluster = cluster_view(snapshot, [m.tp for m in plan])
    out: list[Problem] = []
    for move in plan:
        out += move_all_problems(move, cluster, ctx, disallow_replication_factor_change)
    return out


VIRTUAL = -1  # counts stand-in for replicas an RF increase adds (placeholders are -1, -2, ...)


def apply_rf(topic: str, replicas: Sequence[int], rf_change: Mapping[str, int]) -> list[int]:
    """An RF decrease drops replicas from the end (the leader stays); an increase appends
    placeholders -1, -2, ... that the planner places like replicas leaving a removed broker."""
    want = rf_change.get(topic)
    reps = list(replicas)
    if want is None or want == len(reps):
        return reps
    if want < len(reps):
        return reps[:want]
    return reps + [-(i + 1) for i in range(want - len(reps))]
