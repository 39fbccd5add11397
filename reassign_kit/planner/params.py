"""The planner's parameters as one typed object, the goals, and their checks against the
snapshot (``rule_context``: a usage error names the option and the broker or topic)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import UsageError
from ..snapshot.filter import TopicFilter
from .rules import (
    Capacity,
    RuleContext,
)

GOALS = ("replicas", "leaders", "bytes", "network_in", "network_out", "leader_load", "disks")
# --balance network: its parts (planner.network)
GOAL_GROUPS = {"network": ("network_in", "network_out", "leader_load")}
DEFAULT_NETWORK_TOLERANCE = 0.10
DEFAULT_CHUNKS = 8
DEFAULT_BYTES_TOLERANCE = 0.05
# --balance disks: each log dir within this fraction of its share of its broker's bytes
DEFAULT_DISK_TOLERANCE = 0.10
BYTES_ROUNDS = 8  # bytes rounds at most (each re-aggregates the chunks' bytes)


@dataclass(frozen=True)
class PlanParams:
    remove_brokers: tuple[int, ...] = ()
    balance: tuple[str, ...] = ("replicas", "leaders")
    replication_factor: int | None = None
    rf_topics: tuple[str, ...] = ()
    chunks: int = DEFAULT_CHUNKS
    # which topics are planned: internal topics are left out by default
    topic_filter: TopicFilter = TopicFilter()
    # a leaders-only plan moving preferred leadership off these brokers
    demote_brokers: tuple[int, ...] = ()
    # hard per-broker limits (disk bytes, max replicas) and the bytes goal's tolerance
    capacity: Capacity | None = None
    bytes_tolerance: float = DEFAULT_BYTES_TOLERANCE
    # KIP-1066: treat every broker whose log dirs are all cordoned as one to drain
    drain_cordoned: bool = False
    # the network goals' distribution target: at most (1 + this) x each broker's share
    network_tolerance: float = DEFAULT_NETWORK_TOLERANCE
    # --balance disks: each log dir within this fraction of its share of its broker's bytes
    disk_tolerance: float = DEFAULT_DISK_TOLERANCE

    def rf_change(self) -> dict[str, int]:
        if self.replication_factor is None:
            return {}
        return {t: self.replication_factor for t in self.rf_topics}


def parse_balance(text: str | Iterable[str] | None) -> tuple[str, ...]:
    if text is None:
        return ("replicas", "leaders")
    items = [s.strip() for s in (text.split(",") if isinstance(text, str) else text)]
    items = [g for s in items if s for g in GOAL_GROUPS.get(s, (s,))]
    bad = [s for s in items if s not in GOALS]
    if bad:
        raise UsageError(
            f"--balance: unknown goal(s) {bad}; choose from {', '.join([*GOALS, *GOAL_GROUPS])}"
        )
    return tuple(g for g in GOALS if g in items)


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
    if not 0 <= params.network_tolerance < 10:
        raise UsageError(
            f"--network-tolerance must be in [0, 10) (0.1 = at most 1.1x each broker's share), "
            f"got {params.network_tolerance}"
        )
    if not 0 <= params.disk_tolerance < 1:
        raise UsageError(
            f"--disk-tolerance must be in [0, 1) (0.1 = each log dir within 10% of its share), "
            f"got {params.disk_tolerance}"
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
