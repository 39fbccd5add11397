"""Rules a reassignment plan must pass before anything is sent to the cluster (pure).

Two layers, both reporting *every* problem at once, each naming the partition and the rule:

- ``parse_plan(text, source)``: the structural rules of the JSON file (the format of
  ``kafka-reassign-partitions``); they live in ``model`` beside ``Plan`` (re-exported here).
- ``validate_plan(plan, cluster)``: the rules that need to know the cluster (brokers, topics,
  partition counts, log dirs, current replicas for the KIP-860 replication-factor guard).
  ``cluster`` is a ``ClusterView``, a small pure value, so the Spark planner can build one from
  a snapshot and reuse the very same rules and messages (``move_problems`` checks one move).

Rule names (``Problem.rule``) are stable identifiers; tests and other modules may match on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .errors import InvalidPlanError
from .model import (
    ANY_LOG_DIR,
    EMPTY_PLAN,
    Move,
    PartitionState,
    Plan,
    Problem,
    TopicPartition,
)

# Structural rules (parse_plan).
UNKNOWN_BROKER = "unknown-broker"
UNKNOWN_TOPIC = "unknown-topic"
PARTITION_OUT_OF_RANGE = "partition-out-of-range"
UNKNOWN_LOG_DIR = "unknown-log-dir"
REPLICATION_FACTOR_CHANGE = "replication-factor-change"


@dataclass(frozen=True)
class ClusterView:
    """What the cluster-dependent rules need to know, as plain values.

    ``states`` (current replicas, and adding/removing for partitions already reassigning) is only
    needed for the replication-factor guard; ``log_dirs`` (broker -> its log dirs) only for the
    log-dir rule, and a broker missing from it is not checked."""

    brokers: frozenset[int]
    partition_counts: Mapping[str, int]
    states: Mapping[TopicPartition, PartitionState] = field(default_factory=dict)
    log_dirs: Mapping[int, Iterable[str]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        brokers: Iterable[int],
        partition_counts: Mapping[str, int],
        states: Mapping[TopicPartition, PartitionState] | None = None,
        log_dirs: Mapping[int, Iterable[str]] | None = None,
    ) -> ClusterView:
        return cls(
            frozenset(brokers),
            dict(partition_counts),
            dict(states or {}),
            {b: tuple(d) for b, d in (log_dirs or {}).items()},
        )


def current_replication_factor(state: PartitionState) -> int:
    """The RF the broker compares against for KIP-860: the size of the target set when the
    partition is already reassigning, else the size of its replica list."""
    return len(state.target) if state.reassigning else len(state.replicas)


def move_problems(
    move: Move,
    cluster: ClusterView,
    *,
    disallow_replication_factor_change: bool = False,
) -> list[Problem]:
    """Every cluster-dependent problem of one move (pure; the Spark planner calls this too)."""
    out: list[Problem] = []
    where = str(move.tp)
    count = cluster.partition_counts.get(move.topic)
    if count is None:
        out.append(
            Problem(where, UNKNOWN_TOPIC, f"topic '{move.topic}' does not exist in the cluster")
        )
    elif move.partition >= count:
        out.append(
            Problem(
                where,
                PARTITION_OUT_OF_RANGE,
                f"topic '{move.topic}' has {count} partition(s) (0..{count - 1}); "
                f"partition {move.partition} does not exist",
            )
        )
    unknown = [r for r in move.replicas if r not in cluster.brokers]
    if unknown:
        out.append(
            Problem(
                where,
                UNKNOWN_BROKER,
                f"broker(s) {unknown} are not in the cluster (brokers: {sorted(cluster.brokers)})",
            )
        )
    if move.log_dirs is not None:
        for broker, d in zip(move.replicas, move.log_dirs, strict=False):
            dirs = cluster.log_dirs.get(broker)
            if d != ANY_LOG_DIR and dirs is not None and d not in dirs:
                out.append(
                    Problem(
                        where,
                        UNKNOWN_LOG_DIR,
                        f"broker {broker} has no log dir {d!r} (it has {sorted(dirs)})",
                    )
                )
    if disallow_replication_factor_change:
        state = cluster.states.get(move.tp)
        if state is not None:
            rf = current_replication_factor(state)
            if len(move.replicas) != rf:
                what = (
                    f"the target {list(state.target)} of its reassignment in flight"
                    if state.reassigning
                    else f"its current replicas {list(state.replicas)}"
                )
                out.append(
                    Problem(
                        where,
                        REPLICATION_FACTOR_CHANGE,
                        f"replicas {list(move.replicas)} would change the replication factor from "
                        f"{rf} ({what}) to {len(move.replicas)}, and "
                        "--disallow-replication-factor-change is set",
                    )
                )
    return out


def plan_problems(
    plan: Plan,
    cluster: ClusterView,
    *,
    disallow_replication_factor_change: bool = False,
) -> list[Problem]:
    """Every cluster-dependent problem of the plan, in plan order."""
    out: list[Problem] = []
    for move in plan:
        out += move_problems(
            move, cluster, disallow_replication_factor_change=disallow_replication_factor_change
        )
    return out


def validate_plan(
    plan: Plan,
    cluster: ClusterView,
    *,
    disallow_replication_factor_change: bool = False,
    source: str = "the plan",
) -> Plan:
    """Check the plan against the cluster; raise ``InvalidPlanError`` listing every problem,
    else return the plan unchanged (so calls can be chained)."""
    if not len(plan):
        raise InvalidPlanError(
            [Problem("plan", EMPTY_PLAN, "there is nothing to reassign")],
            header=f"{source} is not valid for this cluster",
        )
    problems = plan_problems(
        plan, cluster, disallow_replication_factor_change=disallow_replication_factor_change
    )
    if problems:
        raise InvalidPlanError(problems, header=f"{source} is not valid for this cluster")
    return plan
