"""A paced run's throttles over its life (``ThrottleKeeper``): the one owner of what the run
set on the cluster, synced at every poll from throttles/configs.py's pure core and I/O."""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from typing import Any

from ..cluster.gateway import DEFAULT_BROKER, ConfigChanges
from ..errors import UsageError
from ..model import PartitionState, TopicPartition
from .configs import Throttles, entry_set, move_map, summary, sync_throttles, throttles_for
from .priors import Priors


class ThrottleKeeper:
    """A paced run's throttles: after every ``sync`` the cluster holds exactly what the run's
    moves in flight (and those about to be submitted) need, plus what others' moves in flight
    need on the brokers they share, plus the operator's own throttle configs (their values
    put back once no move needs the key). Reads and writes only when that need changed, only
    the keys that differ, and journals ``throttle_prior`` (before the change is sent: what
    the end puts back, also after a SIGKILL and ``--resume``) / ``throttle_set`` /
    ``throttle_cleared`` through ``emit``. Remembers the topics and brokers this run wrote
    (journaled, so a resume knows them). A broker that cannot be asked or changed (down) is
    skipped with a ``warning`` and synced again at every later sync until it answers."""

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
        # per-broker rates over ``rate`` (the adaptive pace), replaced whole by
        # ``set_broker_rates`` so a sync reads one consistent mapping
        self.broker_rates: Mapping[int, int] = {}
        self.emit = emit
        self.applied: dict[str, Any] | None = None  # throttles in scope after the last sync
        self._applied_for: Any = None
        # what the last sync was given: the same again (nothing submitted, no reassignment
        # in flight changed) needs the same throttles, without computing them
        self._given: Any = None
        self._computed: Any = None  # (moves, their throttles, this run's brokers among them)
        self.managed_brokers: set[int] = set()  # brokers this run set a rate on
        self.managed_topics: set[str] = set()  # topics whose lists this run wrote
        self.priors = Priors()  # the operator's values, to put back
        self.skipped: dict[Any, str] = {}  # brokers the last sync could not reach

    @property
    def active(self) -> bool:
        """False when the run throttles nothing (no rate given): then it never touches them."""
        return self.rate is not None or self.log_dir_rate is not None

    def remember(self, prior: Iterable[Mapping[str, Any]]) -> None:
        """On resume: the topics and brokers the journaled run wrote (``throttle_set``) and
        the values it recorded before (``throttle_prior``)."""
        prior = list(prior)
        for e in prior:
            if e.get("event") == "throttle_set":
                self.managed_brokers.update(int(b) for b in e.get("broker_rates", {}))
                self.managed_brokers.update(int(b) for b in e.get("log_dir_rates", {}))
                self.managed_topics.update(e.get("leader_replicas", {}))
                self.managed_topics.update(e.get("follower_replicas", {}))
        self.priors.update(Priors.from_events(prior))
        self.managed_brokers.update(b for b in self.priors.brokers if b != DEFAULT_BROKER)
        self.managed_topics.update(self.priors.topics)

    def forget(self) -> None:
        """Read the cluster again at the next sync (at the end of a run)."""
        self.applied = None

    def set_rate(self, rate: int) -> None:
        """A new replication rate for the moves in flight and those to come (from any
        thread): written at the next sync, the one owner of what is on the cluster — the
        rate is part of the keys its caches compare, so a sync under way when the rate
        changes cannot make the next one skip it."""
        self.rate = rate

    def set_broker_rates(self, rates: Mapping[int, int]) -> None:
        """Per-broker rates over ``rate`` (from any thread; brokers not named keep ``rate``):
        written at the next sync, on the brokers the moves in flight need (a broker named
        here gets no throttle that no move needs). Like ``set_rate``, the mapping is part of
        the keys the caches compare, so a change during a sync is never lost."""
        for b, r in rates.items():
            if isinstance(r, bool) or not isinstance(r, int) or r <= 0:
                raise UsageError(f"throttle of broker {b} must be a positive bytes/s, got {r!r}")
        self.broker_rates = dict(rates)

    def rate_of(self, broker: int) -> int | None:
        """The rate a broker of this run's moves gets (its own, else the run's)."""
        return self.broker_rates.get(broker, self.rate)

    def left(self) -> dict[str, Any]:
        """The throttles in scope after the last sync that the run leaves set: an operator's
        values put back (their recorded priors, their list entries) are not the run's."""
        if self.applied is None:
            return {}
        return self.left_in(self.applied)

    def written_scope(self) -> tuple[set[str], set[Any]]:
        """The topics and brokers whose throttles this run wrote or was about to (a prior is
        recorded before the change is sent), and those it could not reach."""
        brokers = self.managed_brokers | set(self.priors.brokers) | set(self.skipped)
        return self.managed_topics | set(self.priors.topics), {b for b in brokers if type(b) is int}

    def left_in(self, current: Mapping[str, Any]) -> dict[str, Any]:
        """Of throttles as ``current_throttles`` gives them (read back, or the last sync's),
        those the run leaves set: the operator's values (their priors) taken out."""
        pr = self.priors
        topics: dict[str, dict[str, str]] = {}
        for t, kv in current.get("topics", {}).items():
            mine = {}
            for k, v in kv.items():
                theirs = entry_set(pr.get("topics", t, k))
                rest = set() if "*" in theirs else entry_set(v) - theirs
                if rest:
                    mine[k] = ",".join(sorted(rest))
            if mine:
                topics[t] = mine
        brokers = {
            b: d
            for b, kv in current.get("brokers", {}).items()
            if (
                d := {
                    k: v
                    for k, v in kv.items()
                    if not (pr.known("brokers", b, k) and pr.get("brokers", b, k) == v)
                }
            )
        }
        return summary({"topics": topics, "brokers": brokers})

    def unrestored(self) -> dict[str, Any]:
        """Operator values recorded for brokers the last sync could not reach."""
        return {
            str(b): kv
            for b, kv in self.priors.brokers.items()
            if b in self.skipped and any(kv.values())
        }

    @staticmethod
    def _busy(
        cluster: Mapping[TopicPartition, PartitionState],
        others: Mapping[TopicPartition, PartitionState],
    ) -> Throttles:
        """What a value found before the first change is taken for (not the operator's):
        list entries of any reassignment in flight; rates of brokers that others' moves need
        (a rate on a broker only this run needs, never changed by it yet, is not its own)."""
        every = throttles_for(move_map({}, {}, cluster))
        theirs = move_map({}, {}, others).values()
        brokers = frozenset(b for m in theirs for b in (*m.sources, *m.destinations))
        return Throttles(every.leader, every.follower, brokers)

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
        # the rate is read once, here, and is part of what the caches compare: a
        # ``set_rate`` from another thread while this sync runs (the panel's slider, the
        # API) is never covered by this sync's caches; the next sync writes it
        rate, overrides = self.rate, self.broker_rates
        per_broker = frozenset(overrides.items())
        ld_given = frozenset(log_dir_brokers)
        given = (
            ld_given,
            frozenset(self.managed_topics),
            frozenset(self.managed_brokers),
            rate,
            per_broker,
        )
        if (
            self.applied is not None
            and not submitting
            and not self.skipped
            and self._given is not None
            and self._given[0] is ours
            and self._given[1] == given
            and self._given[2] == cluster
        ):
            return
        others = {tp: st for tp, st in cluster.items() if tp not in ours}
        required, mine = self._needed(cluster, ours, others, submitting)
        keep = required.brokers - mine
        topics = self.plan_topics | {tp.topic for tp in cluster} | self.managed_topics
        ld = set(ld_given) if self.log_dir_rate is not None else set()
        brokers = self.managed_brokers | set(required.brokers) | ld
        key = (
            required,
            frozenset(keep),
            frozenset(topics),
            frozenset(brokers),
            frozenset(ld),
            rate,
            per_broker,
        )
        if (
            self.applied is not None
            and not submitting
            and self._applied_for == key
            and not self.skipped
        ):
            self._given = (ours, given, dict(cluster))
            return
        self._given = None
        before, after, changes, skipped = sync_throttles(
            self.gw,
            required,
            rate,
            topics,
            brokers,
            keep,
            self.log_dir_rate,
            ld,
            priors=self.priors,
            busy=self._busy(cluster, others),
            on_prior=lambda new: self.emit("throttle_prior", **new.to_json()),
            broker_rates=overrides,
        )
        self._note_skipped(skipped)
        self.applied, self._applied_for = after, key
        if changes[0] or changes[1]:
            self._written(changes, before, after, rate, required, ld)

    def _needed(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        ours: Container[TopicPartition],
        others: Mapping[TopicPartition, PartitionState],
        submitting: Mapping[TopicPartition, tuple[tuple[int, ...], PartitionState]] | None,
    ) -> tuple[Throttles, set[int]]:
        """The throttles every move in flight (and about to be) needs, and the brokers this
        run's moves use among them."""
        targets = {tp: st.target for tp, st in cluster.items() if tp in ours}
        states = {tp: st for tp, st in cluster.items() if tp in ours}
        for tp, (tgt, st) in (submitting or {}).items():
            targets[tp], states[tp] = tuple(tgt), st
        moves = move_map(targets, states, others)
        if self._computed is not None and self._computed[0] == moves:
            # the same moves as the last time (the listing right after a submission shows
            # what was just throttled): the same lists, not built and sorted again
            return self._computed[1], self._computed[2]
        required = throttles_for(moves)
        mine = {b for tp in targets for b in (*moves[tp].sources, *moves[tp].destinations)}
        self._computed = (moves, required, mine)
        return required, mine

    def _written(
        self,
        changes: tuple[ConfigChanges, ConfigChanges],
        before: dict[str, Any],
        after: dict[str, Any],
        rate: int | None,
        required: Throttles,
        ld: set[int],
    ) -> None:
        """What a sync changed: the topics and brokers this run wrote remembered, and
        ``throttle_set`` (or ``throttle_cleared`` when no move needs any) journaled."""
        self.managed_topics |= set(changes[0])
        self.managed_brokers |= {b for b, kv in changes[1].items() if any(kv.values())}
        if (rate is not None and (required.brokers or required.topics)) or ld:
            self.emit("throttle_set", rate=rate, log_dir_rate=self.log_dir_rate, **summary(after))
        else:
            self.emit("throttle_cleared", **summary(before))

    def _note_skipped(self, skipped: dict[Any, str]) -> None:
        """The brokers this sync could not reach: a warning for each new one, a
        ``throttle_broker_back`` for those that answer again."""
        newly = {b: e for b, e in skipped.items() if b not in self.skipped}
        back = [b for b in self.skipped if b not in skipped]
        self.skipped = skipped
        for b, err in sorted(newly.items(), key=lambda x: str(x[0])):
            self.emit(
                "warning",
                broker=b,
                message=f"throttles of broker {b} not synced: it cannot be reached ({err}); "
                "the other brokers go on, and it is synced again once it answers (or "
                "`reassign-kit throttles --clean` fixes it)",
            )
        if back:
            self.emit("throttle_broker_back", brokers=sorted(back, key=str))
