"""Read-only views of the cluster shared by every entry point: what validation needs
(``cluster_view``), partition sizes (one definition), replicas' log dirs, the reassignments
in flight with the official tool's refusal, and the rollback plan (where the plan's
partitions are now). Every function takes a gateway and sends nothing that changes the
cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from ..errors import AuthorizationError, ReassignmentInProgressError
from ..model import ANY_LOG_DIR, Move, PartitionState, Plan, TopicPartition
from ..validate import ClusterView
from .gateway import ErrorCode, is_error

# why an action needs each operation on the cluster resource (what the messages say)
NEEDED_FOR = {
    "DESCRIBE": "read partitions, log dirs and the reassignments in flight",
    "ALTER": "submit or cancel partition reassignments (AlterPartitionReassignments) and move "
    "replicas between log dirs",
    "DESCRIBE_CONFIGS": "read the brokers' throttle configs",
    "ALTER_CONFIGS": "set or remove the replication throttles (broker and topic configs)",
}
_ACL_NAME = {
    "DESCRIBE": "Describe",
    "ALTER": "Alter",
    "DESCRIBE_CONFIGS": "DescribeConfigs",
    "ALTER_CONFIGS": "AlterConfigs",
}


def missing_permissions(gateway: Any, operations: Iterable[str]) -> list[str]:
    """Which of ``operations`` on the cluster resource this client's principal lacks (none
    when the cluster does not say)."""
    have = gateway.cluster_permissions()
    if have is None:
        return []
    return [op for op in operations if op not in have]


def require_permissions(
    gateway: Any, action: str, operations: Iterable[str], hint: str = ""
) -> None:
    """Raise ``AuthorizationError`` (exit 4) naming every operation on the cluster resource
    that ``action`` needs and this client's principal lacks; called before anything is sent."""
    missing = missing_permissions(gateway, operations)
    if not missing:
        return
    lines = [
        f"{action}: not authorised; nothing was sent to the cluster. This client's principal "
        "(the --command-config user) lacks:"
    ]
    lines += [
        f"  - {op} on the CLUSTER resource (kafka-cluster), needed to {NEEDED_FOR.get(op, op)}"
        for op in missing
    ]
    ops = " ".join(f"--operation {_ACL_NAME.get(op, op)}" for op in missing)
    lines.append(
        f"Grant {'them' if len(missing) > 1 else 'it'} (kafka-acls --add --allow-principal "
        f"User:<name> {ops} --cluster) or use a principal that has "
        + ("them" if len(missing) > 1 else "it")
        + (f"; {hint}" if hint else ".")
    )
    raise AuthorizationError("\n".join(lines))


def require_topic_permissions(
    gateway: Any, action: str, topics: Iterable[str], operations: Iterable[str], why: str
) -> None:
    """Raise ``AuthorizationError`` naming each operation on each topic that ``action`` needs
    (``why``) and this client's principal lacks; called before anything is changed."""
    ops = list(operations)
    have = gateway.topic_permissions(sorted(set(topics)))
    if have is None:
        return
    lacking: dict[str, list[str]] = {}
    for topic, perms in sorted(have.items()):
        for op in ops:
            if op not in perms:
                lacking.setdefault(op, []).append(topic)
    if not lacking:
        return
    lines = [
        f"{action}: not authorised; nothing was sent to the cluster. This client's principal "
        "(the --command-config user) lacks:"
    ]
    for op, names in lacking.items():
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        lines.append(f"  - {op} on TOPIC {shown}, needed to {why}")
    acl = " ".join(f"--operation {_ACL_NAME.get(op, op)}" for op in lacking)
    lines.append(
        f"Grant it (kafka-acls --add --allow-principal User:<name> {acl} --topic <topic>) or use "
        "a principal that has it."
    )
    raise AuthorizationError("\n".join(lines))


def cluster_view(gateway: Any, plan: Plan, with_log_dirs: bool | None = None) -> ClusterView:
    """What validate needs about the plan's topics, brokers, partitions and (when the plan names
    log dirs) the brokers' log dirs: a few Admin calls whatever the plan's size."""
    brokers = [b.id for b in gateway.brokers()]
    counts = gateway.topic_partition_counts(plan.topics())
    known = [m.tp for m in plan if m.topic in counts and m.partition < counts[m.topic]]
    states = gateway.describe_partitions(known)
    if with_log_dirs is None:
        with_log_dirs = any(m.log_dirs is not None for m in plan)
    log_dirs = gateway.broker_log_dirs(brokers) if with_log_dirs else {}
    return ClusterView.of(brokers, counts, states, log_dirs)


def rollback_plan(
    plan: Plan,
    states: Mapping[TopicPartition, PartitionState],
    replica_dirs: Mapping[tuple[TopicPartition, int], str] | None = None,
) -> Plan:
    """The plan that puts the plan's partitions back where they are now (for a partition in
    flight: its original replicas), with the current log dir of each replica (or "any").
    One pass over the plan (the log-dir check used to re-scan it per partition)."""
    with_dirs = replica_dirs is not None and any(m.log_dirs is not None for m in plan)
    moves = []
    for m in plan:
        st = states.get(m.tp)
        if st is None:
            continue
        reps = (
            tuple(r for r in st.replicas if r not in st.adding) if st.reassigning else st.replicas
        )
        dirs = None
        if with_dirs:
            dirs = tuple(replica_dirs.get((m.tp, r), ANY_LOG_DIR) for r in reps)
        moves.append(Move(m.tp, reps, dirs))
    return Plan.of(moves)


def default_rollback_path() -> str:
    return f"reassign-rollback-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.json"


def replica_log_dirs(gateway: Any, tps: Iterable[TopicPartition], brokers: Iterable[int]):
    """(partition, broker) -> current log dir, and -> future log dir for moves between dirs."""
    cur: dict[tuple[TopicPartition, int], str] = {}
    fut: dict[tuple[TopicPartition, int], str] = {}
    for r in gateway.describe_log_dirs(sorted(set(brokers)), list(tps)):
        (fut if r.is_future else cur)[(r.tp, r.broker)] = r.log_dir
    return cur, fut


def refuse_in_flight(
    in_flight: Mapping[TopicPartition, Any] | Iterable[TopicPartition], additional: bool
) -> None:
    """The official tool's refusal (exit 6, nothing sent) when reassignments are in flight
    and the user did not ask for ``--additional``: one message wherever a run starts."""
    tps = sorted(in_flight)
    if tps and not additional:
        raise ReassignmentInProgressError(
            f"cannot execute: {len(tps)} partition reassignment(s) are already in progress "
            f"({', '.join(str(tp) for tp in tps[:5])}"
            f"{', …' if len(tps) > 5 else ''}). Use --additional to submit this plan on "
            "top of them (it replaces their target for partitions in both), or --cancel them"
        )


def in_flight_unless_additional(
    gateway: Any, additional: bool
) -> dict[TopicPartition, PartitionState]:
    """The reassignments in flight; refused (``refuse_in_flight``) unless ``additional``."""
    in_flight = gateway.list_reassignments()
    refuse_in_flight(in_flight, additional)
    return in_flight


def partition_sizes(
    gateway: Any, tps: Iterable[TopicPartition], brokers: Iterable[int] | None = None
) -> dict[TopicPartition, int]:
    """Bytes per partition: its largest replica's log (future logs of moves between dirs
    left out), from one DescribeLogDirs round. The one definition of a partition's size, used
    to order moves, to report them and to show a plan."""
    want = set(tps)
    ids = sorted(brokers) if brokers is not None else [b.id for b in gateway.brokers()]
    sizes: dict[TopicPartition, int] = {}
    for r in gateway.describe_log_dirs(ids):
        if r.tp in want and not r.is_future:
            sizes[r.tp] = max(sizes.get(r.tp, 0), r.size_bytes)
    return sizes


def no_reassignment_in_progress(error: str | None) -> bool:
    """Whether a per-partition error of AlterPartitionReassignments is "no reassignment in
    progress" (a move that finished just before its cancel): by its code, never its text."""
    return is_error(error, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)


# Metadata reaches brokers asynchronously: right after a move ends (or is cancelled) a broker
# may still report the intermediate replica set while the controller says nothing is
# reassigning (KIP-860's race). Whoever reads that state waits this long before believing it
# (``ops.settle``: 6 re-reads half a second apart; the run's lost-move detection).
METADATA_SETTLE_S = 3.0
