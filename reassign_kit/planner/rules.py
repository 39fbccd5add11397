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
from typing import Any

from ..model import Move, PartitionState, Plan, Problem, read_text
from ..validate import ClusterView, move_problems

REMOVED_BROKER = "removed-broker"
REPLICATION_FACTOR_TARGET = "replication-factor-target"
RACK_AWARENESS = "rack-awareness"
CORDONED = "cordoned-broker"
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
    # brokers whose log dirs are all cordoned (KIP-1066 ``cordoned.log.dirs``): they keep what
    # they hold, but no new replica may be placed on them
    cordoned: frozenset[int] = frozenset()

    @cached_property
    def allowed(self) -> list[int]:
        return sorted(b for b in self.racks if b not in self.removed)

    @cached_property
    def placeable(self) -> list[int]:
        """The brokers a new replica may go to: not removed, not cordoned."""
        return [b for b in self.allowed if b not in self.cordoned]

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


def target_problems(
    move: Move, ctx: RuleContext, current: Sequence[int] | None = None
) -> list[Problem]:
    """The planner's hard constraints for one target: no removed broker, the requested
    replication factor, rack-awareness (min(RF, racks) racks spanned), no new replica on a
    cordoned broker. With ``current`` (the partition's replicas now): a reorder of the same set
    copies nothing and changes no placement, so rack-awareness does not forbid it (a demotion
    of a rack-breaking replica set)."""
    out: list[Problem] = []
    where = str(move.tp)
    target = list(move.replicas)
    reorder = current is not None and sorted(current) == sorted(target)
    added = sorted(set(target) - set(current or ()))
    cordoned = [b for b in added if b in ctx.cordoned]
    if cordoned:
        out.append(
            Problem(
                where,
                CORDONED,
                f"replicas {target} place a new replica on broker(s) {cordoned}, whose log "
                "dirs are all cordoned (cordoned.log.dirs, KIP-1066): it is to take no new "
                "replica (Kafka 4.3 places no new partition there; a reassignment is not "
                "stopped by the broker, so the plan must not ask for one)",
            )
        )
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
    if n_racks > 1 and not reorder and all(b in ctx.racks for b in target):
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
    st = cluster.states.get(move.tp)
    return move_problems(
        move, cluster, disallow_replication_factor_change=disallow_replication_factor_change
    ) + target_problems(move, ctx, st.replicas if st is not None else None)


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
    capacity: Capacity | None = None,
) -> list[Problem]:
    """The in-process validator: every problem of the plan against the snapshot, in plan order,
    then (with ``capacity``) each broker over a hard capacity limit after the plan."""
    ctx = ctx or RuleContext(snapshot.racks(), cordoned=snapshot.cordoned())
    cluster = cluster_view(snapshot, [m.tp for m in plan])
    out: list[Problem] = []
    for move in plan:
        out += move_all_problems(move, cluster, ctx, disallow_replication_factor_change)
    if capacity is not None:
        reps, byts = totals_after(snapshot, plan)
        out += capacity_problems(reps, byts, capacity, snapshot.broker_ids())
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


# -- capacity: hard per-broker limits ---------------------------------------------------------
CAPACITY_DISK = "capacity-disk"
CAPACITY_REPLICAS = "capacity-max-replicas"
CAPACITY_VERSION = 1
_CAP_TOP_KEYS = {"version", "default", "brokers"}
_CAP_KEYS = {"disk_bytes", "max_replicas", "network_in_bytes_s", "network_out_bytes_s"}


@dataclass(frozen=True)
class BrokerCapacity:
    """One broker's hard limits: the bytes its log directories may hold, and (optionally) the
    replicas it may host."""

    disk_bytes: int
    max_replicas: int | None = None
    # the network goals' hard limits (planner.network), bytes/s; None: no limit
    network_in_bytes_s: int | None = None
    network_out_bytes_s: int | None = None


@dataclass(frozen=True)
class Capacity:
    """A capacity file: per broker (or ``default`` for brokers not listed) ``disk_bytes`` and an
    optional ``max_replicas``. Both are hard limits on a plan; ``disk_bytes`` also weighs each
    broker's share of the bytes for ``--balance bytes``."""

    brokers: tuple[tuple[int, BrokerCapacity], ...] = ()
    default: BrokerCapacity | None = None
    source: str = "capacity file"

    @cached_property
    def _by_id(self) -> dict[int, BrokerCapacity]:
        return dict(self.brokers)

    def of(self, broker: int) -> BrokerCapacity | None:
        return self._by_id.get(broker, self.default)

    def disk(self, broker: int) -> int | None:
        c = self.of(broker)
        return c.disk_bytes if c is not None else None

    def max_replicas(self, broker: int) -> int | None:
        c = self.of(broker)
        return c.max_replicas if c is not None else None

    def check_brokers(self, brokers: Sequence[int], removed: Sequence[int] = ()) -> None:
        """Every broker a plan may use has a capacity; every listed broker is in the snapshot."""
        from ..errors import InvalidPlanError

        known = set(brokers)
        problems = [
            f"broker {b}: not in the snapshot (brokers {sorted(known)})"
            for b, _ in self.brokers
            if b not in known
        ]
        if self.default is None:
            gone = set(removed)
            problems += [
                f"broker {b}: no entry (and no 'default'); every broker the plan may use needs "
                "'disk_bytes'"
                for b in sorted(known - gone)
                if b not in self._by_id
            ]
        if problems:
            raise InvalidPlanError(problems, header=f"{self.source} does not fit the snapshot")

    def describe(self, brokers: Sequence[int]) -> dict[int, dict]:
        return {
            b: {"disk_bytes": c.disk_bytes, "max_replicas": c.max_replicas}
            for b in brokers
            if (c := self.of(b)) is not None
        }

    @classmethod
    def from_json_obj(cls, obj: Any, source: str = "capacity file") -> Capacity:
        """Read strictly: every problem at once, each naming the broker (or entry) and field."""
        from ..errors import InvalidPlanError

        if not isinstance(obj, dict):
            raise InvalidPlanError(
                ["the top level must be a JSON object"], header=f"{source} is not a capacity file"
            )
        problems: list[str] = []
        for k in sorted(set(obj) - _CAP_TOP_KEYS):
            problems.append(
                f"unknown top-level key {k!r} (expected 'version', 'default', 'brokers')"
            )
        if obj.get("version") != CAPACITY_VERSION:
            problems.append(f"'version' must be {CAPACITY_VERSION}, got {obj.get('version')!r}")
        default = None
        if "default" in obj:
            default = _read_cap(obj["default"], "default", problems)
        raw = obj.get("brokers", [])
        entries: dict[int, BrokerCapacity] = {}
        if not isinstance(raw, list):
            problems.append('\'brokers\' must be a list of {"id": N, "disk_bytes": N}')
            raw = []
        for i, e in enumerate(raw):
            if not isinstance(e, dict):
                problems.append(f"brokers[{i}] must be an object")
                continue
            bid = e.get("id")
            if not _is_count(bid, zero=True):
                problems.append(f"brokers[{i}]: 'id' must be a non-negative integer, got {bid!r}")
                continue
            where = f"broker {bid}"
            cap = _read_cap({k: v for k, v in e.items() if k != "id"}, where, problems)
            if bid in entries:
                problems.append(f"{where} is listed twice")
            elif cap is not None:
                entries[bid] = cap
        if not raw and default is None and not problems:
            problems.append("no broker listed and no 'default': the file sets no capacity")
        if problems:
            raise InvalidPlanError(problems, header=f"{source} is not a valid capacity file")
        return cls(tuple(sorted(entries.items())), default, source)

    @classmethod
    def read(cls, path: str) -> Capacity:
        import json

        from ..errors import InvalidPlanError

        text = read_text(path, "capacity file")
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise InvalidPlanError(
                [f"not valid JSON: {e}"], header=f"{path} is not a capacity file"
            ) from e
        return cls.from_json_obj(obj, source=path)


def _is_count(v: Any, zero: bool = False) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and (v >= 0 if zero else v > 0)


def _read_cap(e: Any, where: str, problems: list[str]) -> BrokerCapacity | None:
    if not isinstance(e, dict):
        problems.append(f"{where} must be an object with 'disk_bytes' (and 'max_replicas')")
        return None
    ok = True
    for k in sorted(set(e) - _CAP_KEYS):
        problems.append(f"{where}: unknown field {k!r} (expected 'disk_bytes', 'max_replicas')")
        ok = False
    disk, mr = e.get("disk_bytes"), e.get("max_replicas")
    if not _is_count(disk):
        problems.append(f"{where}: 'disk_bytes' must be a positive integer (bytes), got {disk!r}")
        ok = False
    if mr is not None and not _is_count(mr):
        problems.append(f"{where}: 'max_replicas' must be a positive integer or absent, got {mr!r}")
        ok = False
    for k in ("network_in_bytes_s", "network_out_bytes_s"):
        if e.get(k) is not None and not _is_count(e.get(k)):
            problems.append(f"{where}: {k!r} must be a positive integer or absent, got {e[k]!r}")
            ok = False
    net = {k: e.get(k) for k in ("network_in_bytes_s", "network_out_bytes_s")}
    return BrokerCapacity(disk, mr, **net) if ok else None


def _pct(over: float, of: float) -> str:
    return f"{100 * over / of:.1f}%" if of else "inf%"


def capacity_problems(
    replicas_after: Mapping[int, int],
    bytes_after: Mapping[int, int],
    capacity: Capacity | None,
    brokers: Sequence[int],
) -> list[Problem]:
    """The hard capacity limits on the brokers' totals after a plan: bytes within
    ``disk_bytes``, replicas within ``max_replicas``. One problem per broker and limit, saying by
    how much it is over. (The planner's refusal and both validators use this one rule.)"""
    out: list[Problem] = []
    if capacity is None:
        return out
    for b in sorted(brokers):
        c = capacity.of(b)
        if c is None:
            continue
        used = int(bytes_after.get(b, 0))
        if used > c.disk_bytes:
            over = used - c.disk_bytes
            out.append(
                Problem(
                    f"broker {b}",
                    CAPACITY_DISK,
                    f"{used} bytes after the plan on a disk of {c.disk_bytes} bytes: {over} bytes "
                    f"({_pct(over, c.disk_bytes)}) over",
                )
            )
        n = int(replicas_after.get(b, 0))
        if c.max_replicas is not None and n > c.max_replicas:
            out.append(
                Problem(
                    f"broker {b}",
                    CAPACITY_REPLICAS,
                    f"{n} replicas after the plan, max_replicas is {c.max_replicas}: "
                    f"{n - c.max_replicas} over",
                )
            )
    return out


def totals_after(snapshot, plan: Plan) -> tuple[dict[int, int], dict[int, int]]:
    """(replicas, bytes) per broker once the plan is applied to the snapshot."""
    new = {m.tp: m.replicas for m in plan}
    reps: dict[int, int] = {}
    byts: dict[int, int] = {}
    for p in snapshot.partitions:
        for b in new.get(p.tp, p.replicas):
            reps[b] = reps.get(b, 0) + 1
            byts[b] = byts.get(b, 0) + p.size_bytes
    return reps, byts
