"""Replication throttles: exactly what the moves in flight need, no more, no less.

The pure core computes them the way Apache Kafka's ``kafka-reassign-partitions`` does:

- sources of a move = the partition's current replicas (for a partition already reassigning,
  its original replicas: replicas minus adding) → ``leader.replication.throttled.replicas``
  of the topic, as ``partition:broker`` entries;
- destinations = target minus sources (plus, for a partition already reassigning, the replicas
  it is still adding: see ``partition_move``) → ``follower.replication.throttled.replicas``;
- brokers that are a source or destination of any move get ``leader.`` and
  ``follower.replication.throttled.rate``; brokers that receive a replica in a given log dir get
  ``replica.alter.log.dirs.io.max.bytes.per.second``.

Because the throttled-replica lists are per *topic*, setting one for a move would overwrite what
another in-flight move of the same topic needs: callers pass the other reassignments in flight
and they are included (as the official tool does). Clearing likewise only removes what no
remaining in-flight move needs (the official tool clears every broker's rate unconditionally).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.admin import (
    BROKER_THROTTLE_KEYS,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
)
from ..cluster.gateway import ConfigChanges, alter_in_place  # noqa: F401 (alter_in_place: re-exported)
from ..errors import UsageError
from ..model import ANY_LOG_DIR, Move, PartitionState, TopicPartition


@dataclass(frozen=True)
class PartitionMove:
    sources: frozenset[int]
    destinations: frozenset[int]


@dataclass(frozen=True)
class Throttles:
    """Per-topic throttled-replica lists and the brokers that need a rate."""

    leader: Mapping[str, str] = field(default_factory=dict)  # topic -> "0:1,0:2,1:3"
    follower: Mapping[str, str] = field(default_factory=dict)
    brokers: frozenset[int] = frozenset()

    @property
    def topics(self) -> list[str]:
        return sorted(set(self.leader) | set(self.follower))

    def topic_configs(self) -> dict[str, dict[str, str]]:
        out: dict[str, dict[str, str]] = {}
        for t in self.topics:
            kv = {}
            if self.leader.get(t):
                kv[LEADER_REPLICAS] = self.leader[t]
            if self.follower.get(t):
                kv[FOLLOWER_REPLICAS] = self.follower[t]
            out[t] = kv
        return out


def partition_move(target: Sequence[int], state: PartitionState) -> PartitionMove:
    """Sources and destinations of one move, given what the cluster says now.

    One deliberate superset of the official tool: for a partition already reassigning, the
    replicas it is adding stay destinations. A KRaft controller given a new target keeps them
    as adding *and* removing until they catch up (seen on Kafka 4.3), so they keep copying
    data; the official tool drops them from the follower list and lets that copy run
    unthrottled."""
    if state.reassigning:
        sources = set(state.replicas) - set(state.adding)
        destinations = (set(target) - sources) | set(state.adding)
    else:
        sources = set(state.replicas)
        destinations = set(target) - sources
    return PartitionMove(frozenset(sources), frozenset(destinations))


def move_map(
    targets: Mapping[TopicPartition, Sequence[int]],
    current_states: Mapping[TopicPartition, PartitionState],
    other_in_flight: Mapping[TopicPartition, PartitionState] | None = None,
) -> dict[TopicPartition, PartitionMove]:
    """Every move whose replicas must be throttled: the given targets, plus the reassignments
    already in flight (``other_in_flight``, e.g. from ``list_reassignments``) not among them."""
    out: dict[TopicPartition, PartitionMove] = {}
    for tp, st in (other_in_flight or {}).items():
        if tp not in targets and st.reassigning:
            out[tp] = PartitionMove(
                frozenset(set(st.replicas) - set(st.adding)), frozenset(st.adding)
            )
    for tp, target in targets.items():
        st = current_states.get(tp) or (other_in_flight or {}).get(tp)
        if st is None:
            raise UsageError(f"cannot compute throttles for {tp}: the cluster does not report it")
        out[tp] = partition_move(target, st)
    return out


def _entries(parts: Iterable[tuple[int, Iterable[int]]]) -> str:
    # Sorted as strings, like the official tool's TreeSet, so both write the same bytes.
    return ",".join(sorted({f"{p}:{b}" for p, bs in parts for b in bs}))


def throttles_for(moves: Mapping[TopicPartition, PartitionMove]) -> Throttles:
    by_topic: dict[str, list[tuple[TopicPartition, PartitionMove]]] = {}
    for tp, m in moves.items():
        by_topic.setdefault(tp.topic, []).append((tp, m))
    leader = {t: _entries((tp.partition, m.sources) for tp, m in ms) for t, ms in by_topic.items()}
    follower = {
        t: _entries((tp.partition, m.destinations) for tp, m in ms) for t, ms in by_topic.items()
    }
    brokers = frozenset(b for m in moves.values() for b in (*m.sources, *m.destinations))
    return Throttles(
        {t: v for t, v in leader.items() if v}, {t: v for t, v in follower.items() if v}, brokers
    )


def required_throttles(
    moves_in_flight: Mapping[TopicPartition, Sequence[int]],
    current_states: Mapping[TopicPartition, PartitionState],
    other_in_flight: Mapping[TopicPartition, PartitionState] | None = None,
) -> Throttles:
    """The throttled-replica lists and rate brokers these moves (plus other in-flight
    reassignments, so that none loses its throttle) need. Pure."""
    return throttles_for(move_map(moves_in_flight, current_states, other_in_flight))


def log_dir_brokers(moves: Iterable[Move]) -> frozenset[int]:
    """Brokers that are asked to place a replica in a specific log dir."""
    return frozenset(
        b
        for m in moves
        if m.log_dirs is not None
        for b, d in zip(m.replicas, m.log_dirs, strict=False)
        if d != ANY_LOG_DIR
    )


def apply_changes(
    required: Throttles,
    rate: int | None,
    log_dir_rate: int | None = None,
    log_dir_brokers_: Iterable[int] = (),
) -> tuple[ConfigChanges, ConfigChanges]:
    """(topic changes, broker changes) that set the required throttles. Pure.

    With ``rate`` None the inter-broker throttle is not touched (no ``--throttle``)."""
    topic_changes: ConfigChanges = {}
    broker_changes: ConfigChanges = {}
    if rate is not None:
        if rate < 0:
            raise UsageError(f"--throttle must be a positive number of bytes/s, not {rate}")
        topic_changes.update(required.topic_configs())
        for b in sorted(required.brokers):
            broker_changes.setdefault(b, {}).update(
                {LEADER_RATE: str(rate), FOLLOWER_RATE: str(rate)}
            )
    if log_dir_rate is not None:
        if log_dir_rate < 0:
            raise UsageError(
                f"--replica-alter-log-dirs-throttle must be a positive number of bytes/s, not {log_dir_rate}"
            )
        for b in sorted(set(log_dir_brokers_)):
            broker_changes.setdefault(b, {})[LOG_DIR_RATE] = str(log_dir_rate)
    return topic_changes, broker_changes


def clear_changes(
    topics: Iterable[str],
    brokers: Iterable[int],
    remaining_in_flight: Mapping[TopicPartition, PartitionState],
    keep_log_dir_brokers: Iterable[int] = (),
) -> tuple[ConfigChanges, ConfigChanges]:
    """(topic changes, broker changes) that remove the throttles of ``topics`` and ``brokers``
    except what the reassignments still in flight need: a topic with partitions still moving
    gets its lists narrowed to those moves, a broker still a source or destination keeps its
    rates, a broker still moving a replica between log dirs keeps its log-dir rate. Pure."""
    still = throttles_for(move_map({}, {}, remaining_in_flight))
    keep_ld = set(keep_log_dir_brokers)
    topic_changes: ConfigChanges = {}
    for t in sorted(set(topics)):
        topic_changes[t] = {
            LEADER_REPLICAS: still.leader.get(t) or None,
            FOLLOWER_REPLICAS: still.follower.get(t) or None,
        }
    broker_changes: ConfigChanges = {}
    for b in sorted(set(brokers)):
        kv: dict[str, str | None] = {}
        if b not in still.brokers:
            kv[LEADER_RATE] = None
            kv[FOLLOWER_RATE] = None
        if b not in keep_ld:
            kv[LOG_DIR_RATE] = None
        if kv:
            broker_changes[b] = kv
    return topic_changes, broker_changes


def entry_set(value: str | None) -> frozenset[str]:
    """A throttled-replica list as a set of ``partition:broker`` entries (order-insensitive:
    another writer may have written the same list in another order)."""
    return frozenset(e.strip() for e in (value or "").split(",") if e.strip())


def _rate_value(value: str | None) -> int | None:
    try:
        return int(float(value)) if value else None
    except ValueError:
        return None


def sync_changes(
    required: Throttles,
    rate: int | None,
    current: Mapping[str, Any],
    topics: Iterable[str],
    brokers: Iterable[int],
    keep_rates_of: Iterable[int] = (),
    log_dir_rate: int | None = None,
    log_dir_brokers_: Iterable[int] = (),
) -> tuple[ConfigChanges, ConfigChanges]:
    """(topic changes, broker changes) that turn the throttles now set (``current``, as
    ``current_throttles`` returns them) on ``topics`` / ``brokers`` into exactly ``required``
    at ``rate``, touching only the keys whose value changes: a paced run re-syncs at every wave,
    and rewriting every broker's config each time would be noise in the cluster's config log.

    Brokers in ``keep_rates_of`` (needed only by other runs' moves) keep a rate they already
    have, which their own run chose; without one they get ``rate``, as the official tool does.
    ``rate`` None leaves the inter-broker throttle (lists and rates) alone, ``log_dir_rate``
    None the log-dir rate; a given ``log_dir_rate`` is set on ``log_dir_brokers_`` and removed
    from the other brokers in scope. Pure."""
    cur_topics = current.get("topics", {})
    cur_brokers = current.get("brokers", {})
    keep = set(keep_rates_of)
    ld = set(log_dir_brokers_)
    topic_changes: ConfigChanges = {}
    for t in sorted(set(topics)) if rate is not None else ():
        have = cur_topics.get(t, {})
        kv: dict[str, str | None] = {}
        for key, want in (
            (LEADER_REPLICAS, required.leader.get(t)),
            (FOLLOWER_REPLICAS, required.follower.get(t)),
        ):
            if entry_set(have.get(key)) != entry_set(want):
                kv[key] = want or None
        if kv:
            topic_changes[t] = kv
    broker_changes: ConfigChanges = {}
    for b in sorted(set(brokers)):
        have = cur_brokers.get(b, {})
        kv = {}
        has_rate = _rate_value(have.get(LEADER_RATE)) or _rate_value(have.get(FOLLOWER_RATE))
        theirs = b in required.brokers and b in keep and has_rate
        if rate is not None and not theirs:
            want = str(int(rate)) if b in required.brokers else None
            for key in (LEADER_RATE, FOLLOWER_RATE):
                if _rate_value(have.get(key)) != _rate_value(want):
                    kv[key] = want
        if log_dir_rate is not None:
            want_ld = str(int(log_dir_rate)) if b in ld else None
            if _rate_value(have.get(LOG_DIR_RATE)) != _rate_value(want_ld):
                kv[LOG_DIR_RATE] = want_ld
        if kv:
            broker_changes[b] = kv
    return topic_changes, broker_changes


def after_changes(
    current: Mapping[str, Any], changes: tuple[ConfigChanges, ConfigChanges]
) -> dict[str, Any]:
    """``current`` (as ``current_throttles`` returns it) once ``changes`` are applied. Pure."""
    out: dict[str, Any] = {}
    for part, ch in zip(("topics", "brokers"), changes, strict=True):
        out[part] = {k: dict(v) for k, v in current.get(part, {}).items()}
        alter_in_place(out[part], ch)
    return out


def summary(current: Mapping[str, Any]) -> dict[str, Any]:
    """Throttles (as ``current_throttles`` returns them) in the journal's shape: lists per
    topic, the inter-broker rate and the log-dir rate per broker (string keys, for JSON)."""
    topics = current.get("topics", {})
    brokers = current.get("brokers", {})
    out: dict[str, Any] = {
        "leader_replicas": {
            t: c[LEADER_REPLICAS] for t, c in sorted(topics.items()) if c.get(LEADER_REPLICAS)
        },
        "follower_replicas": {
            t: c[FOLLOWER_REPLICAS] for t, c in sorted(topics.items()) if c.get(FOLLOWER_REPLICAS)
        },
        "broker_rates": {
            str(b): r
            for b, c in sorted(brokers.items())
            if (r := _rate_value(c.get(FOLLOWER_RATE)) or _rate_value(c.get(LEADER_RATE)))
        },
    }
    ld = {str(b): r for b, c in sorted(brokers.items()) if (r := _rate_value(c.get(LOG_DIR_RATE)))}
    if ld:
        out["log_dir_rates"] = ld
    return out


# ----------------------------------------------------------------------------- I/O through admin


def apply_throttles(
    gateway: Any,
    required: Throttles,
    rate: int | None,
    log_dir_rate: int | None = None,
    log_dir_brokers_: Iterable[int] = (),
) -> tuple[ConfigChanges, ConfigChanges]:
    """Set what ``required`` needs (incremental_alter_configs); returns the changes made."""
    topic_changes, broker_changes = apply_changes(required, rate, log_dir_rate, log_dir_brokers_)
    gateway.alter_topic_configs(topic_changes)
    gateway.alter_broker_configs(broker_changes)
    return topic_changes, broker_changes


def clear_throttles(
    gateway: Any,
    topics: Iterable[str],
    brokers: Iterable[int] | None = None,
    remaining_in_flight: Mapping[TopicPartition, PartitionState] | None = None,
    keep_log_dir_brokers: Iterable[int] | None = None,
) -> tuple[ConfigChanges, ConfigChanges]:
    """Remove throttles no remaining in-flight move needs. ``brokers`` None = every broker (as
    the official tool); ``remaining_in_flight`` None = ask the cluster; ``keep_log_dir_brokers``
    None = brokers with a future replica (a log-dir move still running)."""
    if brokers is None:
        brokers = [b.id for b in gateway.brokers()]
    brokers = list(brokers)
    if remaining_in_flight is None:
        remaining_in_flight = gateway.list_reassignments()
    if keep_log_dir_brokers is None:
        keep_log_dir_brokers = {r.broker for r in gateway.describe_log_dirs(brokers) if r.is_future}
    topic_changes, broker_changes = clear_changes(
        topics, brokers, remaining_in_flight, keep_log_dir_brokers
    )
    gateway.alter_topic_configs(topic_changes)
    gateway.alter_broker_configs(broker_changes)
    return topic_changes, broker_changes


def sync_throttles(
    gateway: Any,
    required: Throttles,
    rate: int | None,
    topics: Iterable[str],
    brokers: Iterable[int],
    keep_rates_of: Iterable[int] = (),
    log_dir_rate: int | None = None,
    log_dir_brokers_: Iterable[int] = (),
) -> tuple[dict[str, Any], dict[str, Any], tuple[ConfigChanges, ConfigChanges]]:
    """Make the throttles on ``topics`` / ``brokers`` exactly ``required`` (see
    ``sync_changes``): read them (a few Admin calls), write only what differs.
    Returns (before, after, changes); nothing is written when they agree."""
    topics, brokers = sorted(set(topics)), sorted(set(brokers))
    before = current_throttles(gateway, topics, brokers)
    changes = sync_changes(
        required, rate, before, topics, brokers, keep_rates_of, log_dir_rate, log_dir_brokers_
    )
    if changes[0]:
        gateway.alter_topic_configs(changes[0])
    if changes[1]:
        gateway.alter_broker_configs(changes[1])
    return before, after_changes(before, changes), changes


def current_throttles(
    gateway: Any, topics: Iterable[str], brokers: Iterable[int]
) -> dict[str, Any]:
    """The throttle configs now set on these topics and brokers (empty values omitted)."""
    tc = gateway.topic_configs(topics)
    bc = gateway.broker_configs(brokers)
    return {
        "topics": {
            t: {k: c[k] for k in (LEADER_REPLICAS, FOLLOWER_REPLICAS) if c.get(k)}
            for t, c in tc.items()
            if any(c.get(k) for k in (LEADER_REPLICAS, FOLLOWER_REPLICAS))
        },
        "brokers": {
            b: {k: c[k] for k in BROKER_THROTTLE_KEYS if c.get(k)}
            for b, c in bc.items()
            if any(c.get(k) for k in BROKER_THROTTLE_KEYS)
        },
    }


class ThrottleKeeper:
    """A paced run's throttles: after every ``sync`` the cluster holds exactly what the run's
    moves in flight (and those about to be submitted) need, plus what others' moves in flight
    need on the brokers they share. Reads and writes only when that need changed, only the
    keys that differ, and journals ``throttle_set`` / ``throttle_cleared`` through ``emit``.
    Remembers the topics and brokers this run wrote (journaled, so a resume knows them)."""

    def __init__(
        self,
        gateway: Any,
        plan_topics: Iterable[str],
        rate: int | None,
        log_dir_rate: int | None,
        emit: Any,
    ):
        self.gw = gateway
        self.plan_topics = set(plan_topics)
        self.rate, self.log_dir_rate = rate, log_dir_rate
        self.emit = emit
        self.applied: dict[str, Any] | None = None  # throttles in scope after the last sync
        self._applied_for: Any = None
        # what the last sync was given: the same again (nothing submitted, no reassignment
        # in flight changed) needs the same throttles, without computing them (issue 12)
        self._given: Any = None
        self.managed_brokers: set[int] = set()  # brokers this run set a rate on
        self.managed_topics: set[str] = set()  # topics whose lists this run wrote

    @property
    def active(self) -> bool:
        """False when the run throttles nothing (no rate given): then it never touches them."""
        return self.rate is not None or self.log_dir_rate is not None

    def remember(self, prior: Iterable[Mapping[str, Any]]) -> None:
        """On resume: the topics and brokers the journaled run wrote (``throttle_set``)."""
        for e in prior:
            if e.get("event") == "throttle_set":
                self.managed_brokers.update(int(b) for b in e.get("broker_rates", {}))
                self.managed_topics.update(e.get("leader_replicas", {}))
                self.managed_topics.update(e.get("follower_replicas", {}))

    def forget(self) -> None:
        """Read the cluster again at the next sync (at the end of a run)."""
        self.applied = None

    def left(self) -> dict[str, Any]:
        """The throttles in scope after the last sync (what the run leaves set)."""
        return summary(self.applied) if self.applied is not None else {}

    def sync(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        ours: Container[TopicPartition],
        log_dir_brokers: Iterable[int] = (),
        submitting: Mapping[TopicPartition, tuple[tuple[int, ...], PartitionState]] | None = None,
    ) -> None:
        """``cluster``: every reassignment in flight; ``ours``: this run's partitions;
        ``submitting``: tp -> (target, current state), about to be submitted."""
        if not self.active:
            return
        ld_given = frozenset(log_dir_brokers)
        given = (ld_given, frozenset(self.managed_topics), frozenset(self.managed_brokers))
        if (
            self.applied is not None
            and not submitting
            and self._given is not None
            and self._given[0] is ours
            and self._given[1] == given
            and self._given[2] == cluster
        ):
            return
        targets = {tp: st.target for tp, st in cluster.items() if tp in ours}
        states = {tp: st for tp, st in cluster.items() if tp in ours}
        for tp, (tgt, st) in (submitting or {}).items():
            targets[tp], states[tp] = tuple(tgt), st
        others = {tp: st for tp, st in cluster.items() if tp not in ours}
        moves = move_map(targets, states, others)
        required = throttles_for(moves)
        mine = {b for tp in targets for b in (*moves[tp].sources, *moves[tp].destinations)}
        keep = required.brokers - mine
        topics = self.plan_topics | {tp.topic for tp in cluster} | self.managed_topics
        ld = set(ld_given) if self.log_dir_rate is not None else set()
        brokers = self.managed_brokers | set(required.brokers) | ld
        key = (required, frozenset(keep), frozenset(topics), frozenset(brokers), frozenset(ld))
        if self.applied is not None and not submitting and self._applied_for == key:
            self._given = (ours, given, dict(cluster))
            return
        self._given = None
        before, after, changes = sync_throttles(
            self.gw, required, self.rate, topics, brokers, keep, self.log_dir_rate, ld
        )
        self.applied, self._applied_for = after, key
        if not (changes[0] or changes[1]):
            return
        self.managed_topics |= set(changes[0])
        self.managed_brokers |= {b for b, kv in changes[1].items() if any(kv.values())}
        if (self.rate is not None and (required.brokers or required.topics)) or ld:
            self.emit(
                "throttle_set", rate=self.rate, log_dir_rate=self.log_dir_rate, **summary(after)
            )
        else:
            self.emit("throttle_cleared", **summary(before))
