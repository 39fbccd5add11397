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

Restored, not deleted: before the tool first changes a throttle config it records
the value there before (``Priors``; a paced run journals it as ``throttle_prior`` before the
change is sent, legacy ``--execute`` writes it to a priors file beside its rollback file) and
when no move needs the throttle any more it puts that value back instead of deleting the key:
an operator's own rate (per broker) comes back at its value, an operator's entries in a topic's
throttled-replica list stay in the list all along. Only the operator's part is recorded: a
value that a reassignment in flight at that moment accounts for (its brokers' rates, its
``partition:broker`` entries) is taken for that reassignment's throttle, which the official
tool and this one remove once it is done. Only dynamic configs are ever changed: a static one
(server.properties) is shown by ``current_throttles`` / ``janitor`` but never touched, and the
cluster default (``<default>``) is left to the operator (a per-broker value overrides it while
a move needs it). A broker that cannot be asked (down, KAFKA-13392) is skipped and reported;
its throttle is fixed at a later sync once it answers, or by ``reassign-kit throttles --clean``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.config import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
)
from ..cluster.gateway import (
    BROKER_SOURCE,
    DEFAULT_BROKER,
    STATIC_SOURCE,
    ConfigChanges,
    ThrottleConfigs,
    alter_in_place,
)
from ..errors import ReassignKitError, UsageError
from ..model import ANY_LOG_DIR, Move, PartitionState, TopicPartition
from .priors import Priors


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


def throttles_for(moves: Mapping[TopicPartition, PartitionMove]) -> Throttles:
    """Each topic's leader (sources) and follower (destinations) lists, in the order its
    topics first come in ``moves``, and the brokers of every move. One walk over the moves
    (a wave's sync works out 2,000 at once)."""
    leader: dict[str, set[str]] = {}
    follower: dict[str, set[str]] = {}
    brokers: set[int] = set()
    for tp, m in moves.items():
        t, p = tp.topic, tp.partition
        if t not in leader:
            leader[t], follower[t] = set(), set()
        leader[t].update([f"{p}:{b}" for b in m.sources])
        follower[t].update([f"{p}:{b}" for b in m.destinations])
        brokers.update(m.sources)
        brokers.update(m.destinations)
    return Throttles(_lists(leader), _lists(follower), frozenset(brokers))


def _lists(entries: Mapping[str, set[str]]) -> dict[str, str]:
    # Sorted as strings, like the official tool's TreeSet, so both write the same bytes.
    return {t: ",".join(sorted(es)) for t, es in entries.items() if es}


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
    priors: Priors | None = None,
    only_recorded: bool = False,
) -> tuple[ConfigChanges, ConfigChanges]:
    """(topic changes, broker changes) that remove the throttles of ``topics`` and ``brokers``
    except what the reassignments still in flight need: a topic with partitions still moving
    gets its lists narrowed to those moves, a broker still a source or destination keeps its
    rates, a broker still moving a replica between log dirs keeps its log-dir rate. A key
    with a recorded prior (``priors``) gets that value back instead of being deleted (the
    operator's list entries kept beside what the moves in flight need). ``only_recorded``
    (a run's own record is known): only the keys ``priors`` recorded — the
    ones that run changed — are touched; an operator's value elsewhere (a rate on a broker
    the run never throttled) is left as it is. Pure."""
    still = throttles_for(move_map({}, {}, remaining_in_flight))
    keep_ld = set(keep_log_dir_brokers)
    pr = priors or Priors()

    def mine(part: str, name: Any, key: str) -> bool:
        return not only_recorded or pr.known(part, name, key)

    topic_changes: ConfigChanges = {}
    for t in sorted(set(topics)):
        kv: dict[str, str | None] = {}
        for key, need in ((LEADER_REPLICAS, still.leader), (FOLLOWER_REPLICAS, still.follower)):
            if mine("topics", t, key):
                kv[key] = merge_lists(need.get(t), pr.get("topics", t, key))
        if kv:
            topic_changes[t] = kv
    broker_changes: ConfigChanges = {}
    for b in sorted(set(brokers), key=str):
        kv = {}
        keys = ((LEADER_RATE, FOLLOWER_RATE) if b not in still.brokers else ()) + (
            (LOG_DIR_RATE,) if b not in keep_ld else ()
        )
        for key in keys:
            if mine("brokers", b, key):
                kv[key] = pr.get("brokers", b, key)
        if kv:
            broker_changes[b] = kv
    return topic_changes, broker_changes


def entry_set(value: str | None) -> frozenset[str]:
    """A throttled-replica list as a set of ``partition:broker`` entries (order-insensitive:
    another writer may have written the same list in another order)."""
    if not value:
        return frozenset()
    if " " not in value and value.isprintable():
        # no whitespace to strip (what str.strip takes is a space or unprintable): split
        # alone, in C (a wave's sync read ~24,000 entries one strip at a time, twice)
        entries = frozenset(value.split(","))
        return entries - {""} if "" in entries else entries
    return frozenset(e.strip() for e in value.split(",") if e.strip())


def merge_lists(required: str | None, operator: str | None) -> str | None:
    """A throttled-replica list holding what the moves need and the operator's entries
    (``*``, every replica, stays ``*``); None when empty."""
    ops = entry_set(operator)
    if "*" in ops:
        return "*"
    return ",".join(sorted(entry_set(required) | ops)) or None


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
    priors: Priors | None = None,
    busy: Throttles | None = None,
    recorded: Priors | None = None,
    broker_rates: Mapping[int, int] | None = None,
) -> tuple[ConfigChanges, ConfigChanges]:
    """(topic changes, broker changes) that turn the throttles now set (``current``, as
    ``current_throttles`` returns them) on ``topics`` / ``brokers`` into exactly ``required``
    at ``rate``, touching only the keys whose value changes: a paced run re-syncs at every wave,
    and rewriting every broker's config each time would be noise in the cluster's config log.

    Brokers in ``keep_rates_of`` (needed only by other runs' moves) keep a rate they already
    have, which their own run chose; without one they get ``rate``, as the official tool does.
    ``rate`` None leaves the inter-broker throttle (lists and rates) alone, ``log_dir_rate``
    None the log-dir rate; a given ``log_dir_rate`` is set on ``log_dir_brokers_`` and removed
    from the other brokers in scope.

    With ``priors`` (a ``Priors``, kept by the caller), what no move needs goes back to the
    recorded value instead of being deleted, and an operator's list entries stay in the
    lists; a key changed for the first time gets its operator value recorded into
    ``recorded`` (the caller journals it before sending the changes): the value there now,
    less what the reassignments in flight (``busy``) account for. ``broker_rates`` (issue
    22: the adaptive pace's per-broker rates) overrides ``rate`` on the brokers it names;
    it never makes a broker throttled that ``required`` does not throttle. Pure."""
    ops = _Operator(priors, recorded, busy or Throttles())
    keep = set(keep_rates_of)
    ld = set(log_dir_brokers_)
    topic_changes: ConfigChanges = {}
    if rate is not None:
        topic_changes = _list_changes(required, current.get("topics", {}), topics, ops)
    broker_changes: ConfigChanges = {}
    cur_brokers = current.get("brokers", {})
    for b in sorted(set(brokers)):
        have = cur_brokers.get(b, {})
        kv: dict[str, str | None] = {}
        has_rate = _rate_value(have.get(LEADER_RATE)) or _rate_value(have.get(FOLLOWER_RATE))
        theirs = b in required.brokers and b in keep and has_rate
        if rate is not None and not theirs:
            b_rate = (broker_rates or {}).get(b, rate)
            kv.update(_rate_changes(b, have, b_rate if b in required.brokers else None, ops))
        if log_dir_rate is not None:
            op = ops.value("brokers", b, LOG_DIR_RATE, have.get(LOG_DIR_RATE), False)
            want_ld = str(int(log_dir_rate)) if b in ld else op
            if _rate_value(have.get(LOG_DIR_RATE)) != _rate_value(want_ld):
                kv[LOG_DIR_RATE] = want_ld
                ops.note("brokers", b, LOG_DIR_RATE, op)
        if kv:
            broker_changes[b] = kv
    return topic_changes, broker_changes


class _Operator:
    """The operator's values a sync puts back (``priors``), and a key changed for the first
    time recorded into ``recorded``: its value now, less what the reassignments in flight
    (``busy``) account for."""

    def __init__(self, priors: Priors | None, recorded: Priors | None, busy: Throttles) -> None:
        self.priors, self.recorded, self.busy = priors, recorded, busy

    def value(self, part: str, name: Any, key: str, have: str | None, theirs: bool) -> str | None:
        """The operator's value of a key (None without priors: deleted when no move needs
        it); ``theirs``: a rate the moves in flight set, not the operator."""
        priors, recorded = self.priors, self.recorded
        if priors is None:
            return None
        if priors.known(part, name, key):
            return priors.get(part, name, key)
        if recorded is not None and recorded.known(part, name, key):
            return recorded.get(part, name, key)
        if part == "topics":
            busy = self.busy
            busy_list = (busy.leader if key == LEADER_REPLICAS else busy.follower).get(name)
            return ",".join(sorted(entry_set(have) - entry_set(busy_list))) or None
        return None if theirs else have

    def note(self, part: str, name: Any, key: str, value: str | None) -> None:
        priors, recorded = self.priors, self.recorded
        if priors is not None and recorded is not None and not priors.known(part, name, key):
            recorded.record(part, name, key, value)


def _list_changes(
    required: Throttles, cur_topics: Mapping[str, Any], topics: Iterable[str], ops: _Operator
) -> ConfigChanges:
    """The topics' throttled-replica lists that differ from what the moves need (with the
    operator's entries)."""
    topic_changes: ConfigChanges = {}
    for t in sorted(set(topics)):
        have = cur_topics.get(t, {})
        kv: dict[str, str | None] = {}
        for key, need in (
            (LEADER_REPLICAS, required.leader.get(t)),
            (FOLLOWER_REPLICAS, required.follower.get(t)),
        ):
            op = ops.value("topics", t, key, have.get(key), False)
            want = merge_lists(need, op)
            cur = have.get(key)  # the same string is the same list, without reading it
            if cur != want and entry_set(cur) != entry_set(want):
                kv[key] = want or None
                ops.note("topics", t, key, op)
        if kv:
            topic_changes[t] = kv
    return topic_changes


def _rate_changes(
    b: int, have: Mapping[str, Any], rate: int | None, ops: _Operator
) -> dict[str, str | None]:
    """Broker ``b``'s leader and follower rates that differ from ``rate`` (None: it needs
    none, the operator's value back)."""
    kv: dict[str, str | None] = {}
    for key in (LEADER_RATE, FOLLOWER_RATE):
        op = ops.value("brokers", b, key, have.get(key), b in ops.busy.brokers)
        want = str(int(rate)) if rate is not None else op
        if _rate_value(have.get(key)) != _rate_value(want):
            kv[key] = want
            ops.note("brokers", b, key, op)
    return kv


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


def alter_brokers(gateway: Any, changes: ConfigChanges) -> dict[Any, str]:
    """Send per-broker config changes; a broker that cannot take them (down: KAFKA-13392) is
    skipped, the others are changed. Returns the brokers skipped -> error."""
    if not changes:
        return {}
    try:
        gateway.alter_broker_configs(changes)
        return {}
    except ReassignKitError as e:
        if len(changes) == 1:
            return {next(iter(changes)): str(e)}
    failed: dict[Any, str] = {}
    for b, kv in changes.items():  # which one: each on its own
        try:
            gateway.alter_broker_configs({b: kv})
        except ReassignKitError as e:
            failed[b] = str(e)
    return failed


def read_current(gateway: Any, topics: Iterable[str], brokers: Iterable[int]) -> dict[str, Any]:
    """``current_throttles`` plus what it could not read (``unreachable``: broker -> error)."""
    brokers = sorted(set(brokers))
    down: dict[Any, str] = {}
    if brokers:  # a broker not among the live ones is not asked: it would only time out
        live = {b.id for b in gateway.brokers()}
        down = {b: f"broker {b} is not among the live brokers" for b in brokers if b not in live}
    cfg: ThrottleConfigs = gateway.throttle_configs(
        sorted(set(topics)), [b for b in brokers if b not in down]
    )
    return {
        "topics": {t: {k: v.value for k, v in kv.items()} for t, kv in cfg.topics.items()},
        "brokers": {
            b: d
            for b, kv in cfg.brokers.items()
            if (d := {k: v.value for k, v in kv.items() if v.source == BROKER_SOURCE})
        },
        "static": {
            b: d
            for b, kv in cfg.brokers.items()
            if (d := {k: v.value for k, v in kv.items() if v.source == STATIC_SOURCE})
        },
        "default": {k: v.value for k, v in cfg.default.items()},
        "unreachable": {**down, **cfg.unreachable},
    }


# a broker applies a config change once the controller's record reaches it, so a read right
# after a removal may still show the old value: read again, this often, this many times
SETTLE_EVERY_S = 0.5
SETTLE_ROUNDS = 30


def read_settled(
    gateway: Any, topics: Iterable[str], brokers: Iterable[int], written: tuple[Any, Any]
) -> dict[str, Any]:
    """``read_current`` once no key that ``written`` (topic changes, broker changes) removed
    still shows, or after ``SETTLE_ROUNDS`` reads: what is left then is left."""
    topics, brokers = list(topics), list(brokers)
    now = read_current(gateway, topics, brokers)
    for _ in range(SETTLE_ROUNDS):
        if now["unreachable"] or not removed_still_shown(now, written):
            break
        gateway.sleep(SETTLE_EVERY_S)
        now = read_current(gateway, topics, brokers)
    return now


def removed_still_shown(now: Mapping[str, Any], written: tuple[Any, Any]) -> bool:
    """Whether a key ``written`` removed is still in ``now`` (``read_current``'s shape)."""
    topic_changes, broker_changes = written
    for t, kv in topic_changes.items():
        if any(v is None and now["topics"].get(t, {}).get(k) for k, v in kv.items()):
            return True
    for b, kv in broker_changes.items():
        have = now["default"] if b == DEFAULT_BROKER else now["brokers"].get(b, {})
        if any(v is None and have.get(k) for k, v in kv.items()):
            return True
    return False


def apply_throttles(
    gateway: Any,
    required: Throttles,
    rate: int | None,
    log_dir_rate: int | None = None,
    log_dir_brokers_: Iterable[int] = (),
    in_flight: Mapping[TopicPartition, PartitionState] | None = None,
    priors: Priors | None = None,
    on_prior: Any = None,
    on_skip: Any = None,
) -> tuple[ConfigChanges, ConfigChanges]:
    """Set what ``required`` needs (legacy ``--execute``): the rates on its brokers, its lists
    on its topics, an operator's entries kept in the lists. The value each key had before
    is recorded into ``priors`` (``on_prior(new)`` is called before anything is sent);
    brokers that cannot be asked or changed (down) are skipped and given to
    ``on_skip(broker -> error)``. Returns the changes made."""
    if rate is not None and rate < 0:
        raise UsageError(f"--throttle must be a positive number of bytes/s, not {rate}")
    if log_dir_rate is not None and log_dir_rate < 0:
        raise UsageError(
            f"--replica-alter-log-dirs-throttle must be a positive number of bytes/s, not {log_dir_rate}"
        )
    ld = set(log_dir_brokers_) if log_dir_rate is not None else set()
    brokers = (set(required.brokers) if rate is not None else set()) | ld
    _, _, changes, skipped = sync_throttles(
        gateway,
        required,
        rate,
        required.topics,
        brokers,
        (),
        log_dir_rate,
        ld,
        priors=priors if priors is not None else Priors(),
        busy=throttles_for(move_map({}, {}, in_flight or {})),
        on_prior=on_prior,
    )
    if skipped and on_skip is not None:
        on_skip(skipped)
    return changes


def clear_throttles(
    gateway: Any,
    topics: Iterable[str],
    brokers: Iterable[int] | None = None,
    remaining_in_flight: Mapping[TopicPartition, PartitionState] | None = None,
    keep_log_dir_brokers: Iterable[int] | None = None,
    priors: Priors | None = None,
    only_recorded: bool = False,
) -> tuple[ConfigChanges, ConfigChanges]:
    """Remove throttles no remaining in-flight move needs, putting back the ``priors``
    recorded (``only_recorded``: touching only the keys they record, see ``clear_changes``).
    ``brokers`` None = every broker (as the official tool); ``remaining_in_flight``
    None = ask the cluster; ``keep_log_dir_brokers`` None = brokers with a future replica (a
    log-dir move still running). A broker that cannot take the change is skipped."""
    if brokers is None:
        brokers = [b.id for b in gateway.brokers()]
    brokers = list(brokers)
    if priors:  # an operator's value set on the cluster default comes back too
        brokers += [b for b in priors.brokers if b not in brokers]
    if remaining_in_flight is None:
        remaining_in_flight = gateway.list_reassignments()
    if keep_log_dir_brokers is None:
        live = [b for b in brokers if b != DEFAULT_BROKER]
        keep_log_dir_brokers = {r.broker for r in gateway.describe_log_dirs(live) if r.is_future}
    topic_changes, broker_changes = clear_changes(
        topics, brokers, remaining_in_flight, keep_log_dir_brokers, priors, only_recorded
    )
    gateway.alter_topic_configs(topic_changes)
    alter_brokers(gateway, broker_changes)
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
    *,
    priors: Priors | None = None,
    busy: Throttles | None = None,
    on_prior: Any = None,
    broker_rates: Mapping[int, int] | None = None,
) -> tuple[dict[str, Any], dict[str, Any], tuple[ConfigChanges, ConfigChanges], dict[Any, str]]:
    """Make the throttles on ``topics`` / ``brokers`` exactly ``required`` (see
    ``sync_changes``): read them (a few Admin calls), write only what differs. With
    ``priors``: operator values kept and put back (``sync_changes``); the first values of the
    keys changed now are added to ``priors`` and given to ``on_prior`` before anything is
    sent. A broker that cannot be asked or changed (down) is skipped and the others go on.
    Returns (before, after, changes, skipped brokers -> error); nothing is written when they
    agree."""
    topics, brokers = sorted(set(topics)), sorted(set(brokers))
    before = read_current(gateway, topics, brokers)
    skipped: dict[Any, str] = dict(before["unreachable"])
    brokers = [b for b in brokers if b not in skipped]
    recorded = Priors()
    changes = sync_changes(
        required,
        rate,
        before,
        topics,
        brokers,
        keep_rates_of,
        log_dir_rate,
        log_dir_brokers_,
        priors=priors,
        busy=busy,
        recorded=recorded,
        broker_rates=broker_rates,
    )
    if priors is not None and recorded:
        if on_prior is not None:
            on_prior(recorded)
        priors.update(recorded)
    if changes[0]:
        gateway.alter_topic_configs(changes[0])
    if changes[1]:
        failed = alter_brokers(gateway, changes[1])
        if failed:
            skipped.update(failed)
            changes = (changes[0], {b: kv for b, kv in changes[1].items() if b not in failed})
    return before, after_changes(before, changes), changes, skipped


def current_throttles(
    gateway: Any, topics: Iterable[str], brokers: Iterable[int]
) -> dict[str, Any]:
    """The throttle configs set on these topics and brokers (empty values omitted): the
    topics' lists, the brokers' own dynamic values (``brokers``) — what this tool may change
    — and, apart, the static ones (``static``: server.properties, never changed), the cluster
    default (``default``) and the brokers that could not be asked (``unreachable``)."""
    return read_current(gateway, topics, brokers)
