"""The throttle janitor: every throttle config on the cluster that no
reassignment in flight needs — ours or another tool's, left by a run that died, or set on a
broker that was down when its run ended — with where its value comes from; and their removal.

Only values set on a topic or on a broker itself are removed (a topic list is narrowed to what
the moves in flight need); the cluster default and a broker's server.properties are reported,
never touched. Given what a run recorded as there before (its journal's ``throttle_prior``
events, or legacy ``--execute``'s priors file), a value that differs from it is put back
instead of deleted, and the operator's own value (equal to its prior) is not reported. A broker
that cannot be asked (down) is named, not guessed. ``cli/throttles.py`` only prints."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..cluster.config import (
    BROKER_THROTTLE_KEYS,
    FOLLOWER_REPLICAS,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
)
from ..cluster.gateway import BROKER_SOURCE, DEFAULT_BROKER, TOPIC_SOURCE, ConfigChanges
from ..cluster.views import cluster_view
from ..model import Plan
from ..validate import validate_plan
from .configs import entry_set, move_map, throttles_for
from .priors import Priors

# what each source means, for people
SOURCES = {
    TOPIC_SOURCE: "set on the topic",
    BROKER_SOURCE: "set on the broker",
    "default": "the cluster default (kafka-configs --entity-default)",
    "static": "the broker's server.properties",
}


@dataclass(frozen=True)
class Stray:
    """A throttle config no reassignment in flight needs: ``resource`` "topic", "broker" or
    "default" (the cluster default), its ``name``, ``key``, ``value``, the part of it no move
    needs (``unneeded``: list entries, or the whole rate), its ``source`` and, when a run
    recorded what was there before, ``prior`` (``restore`` True: put back, not deleted)."""

    resource: str
    name: str
    key: str
    value: str
    unneeded: str
    source: str
    prior: str | None = None
    restore: bool = False

    @property
    def removable(self) -> bool:
        """Set on the topic or broker itself: this tool may change it."""
        return self.source in (TOPIC_SOURCE, BROKER_SOURCE)

    def line(self) -> str:
        part = "" if self.unneeded == self.value else f" (not needed: {self.unneeded})"
        back = f"; before the run: {self.prior or 'not set'}" if self.restore else ""
        return (
            f"  {self.resource} {self.name}: {self.key}={self.value}{part} "
            f"[{self.source}: {SOURCES.get(self.source, self.source)}{back}]"
        )


@dataclass
class ThrottleCheck:
    strays: list[Stray]
    unreachable: dict[int, str]  # brokers that could not be asked -> error
    cleaned: tuple[ConfigChanges, ConfigChanges] | None = None
    # --clean with the runs' records: strays no recorded run changed, left as they are
    kept: list[Stray] = field(default_factory=list)

    @property
    def left(self) -> list[Stray]:
        """What is still set that no move needs (after ``clean``: what it may not touch)."""
        return self.strays if self.cleaned is None else [s for s in self.strays if not s.removable]

    @property
    def exit_code(self) -> int:
        """8 (as a run that could not clear its throttles) while any is left, else 0."""
        from ..errors import ThrottleCleanupError

        return ThrottleCleanupError.exit_code if self.left or self.unreachable else 0

    def lines(self) -> list[str]:
        out = []
        if not self.strays:
            out.append("No throttle config is set that no reassignment in flight needs.")
        else:
            out.append(
                f"{len(self.strays)} throttle config(s) no reassignment in flight needs "
                "(an operator's, another tool's, or left by a run):"
            )
            out += [s.line() for s in self.strays]
        if self.cleaned is not None:
            n = sum(len(kv) for ch in self.cleaned for kv in ch.values())
            out.append(f"Changed {n} config(s) (deleted, narrowed, or put back at its prior).")
            for s in self.left:
                out.append(
                    f"  left as it is: {s.resource} {s.name} {s.key} "
                    f"({SOURCES.get(s.source, s.source)}: change it there)"
                )
            for s in self.kept:
                out.append(
                    f"  left as it is: {s.resource} {s.name} {s.key}={s.value} (no recorded "
                    "run changed it: give --journal / --throttle-priors of the run that did)"
                )
        for b, e in sorted(self.unreachable.items()):
            out.append(f"Broker {b} could not be asked ({e}): check again once it is back.")
        return out

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "strays": [dict(s.__dict__, removable=s.removable) for s in self.strays],
            "unreachable": {str(b): e for b, e in self.unreachable.items()},
            "cleaned": None
            if self.cleaned is None
            else {
                "topics": self.cleaned[0],
                "brokers": {str(b): kv for b, kv in self.cleaned[1].items()},
            },
        }


@dataclass(frozen=True)
class PlanScope:
    """The throttles of one plan: its topics' list entries of its partitions, and the rates
    of the brokers its moves involve (each partition's targets and current replicas)."""

    source: str
    partitions: dict[str, frozenset[int]]  # topic -> the plan's partitions of it
    brokers: frozenset[int]

    def owns_entry(self, topic: str, entry: str) -> bool:
        """A list entry ``partition:broker`` (or ``*``) of one of the plan's partitions."""
        part = entry.split(":", 1)[0]
        return entry == "*" or (part.isdigit() and int(part) in self.partitions.get(topic, ()))


def plan_scope(gateway: Any, plan: Plan, source: str) -> PlanScope:
    """The scope of ``plan`` on the cluster, after the rules --execute applies to it (an
    invalid plan is ``InvalidPlanError``, exit 3, the partition or broker named: nothing is
    changed then). Read-only calls."""
    view = cluster_view(gateway, plan)
    validate_plan(plan, view, source=source)
    parts: dict[str, set[int]] = {}
    brokers: set[int] = set()
    for m in plan:
        parts.setdefault(m.topic, set()).add(m.partition)
        st = view.states.get(m.tp)
        brokers.update(m.replicas, st.replicas if st is not None else (), st.adding if st else ())
    return PlanScope(source, {t: frozenset(p) for t, p in parts.items()}, frozenset(brokers))


def check_throttles(
    gateway: Any,
    priors: Priors | None = None,
    brokers: Iterable[int] | None = None,
    scope: PlanScope | None = None,
) -> ThrottleCheck:
    """Every throttle config no reassignment in flight needs: entries of topic lists no move
    needs (``*`` on a topic with nothing moving), rates of brokers no move involves, log-dir
    rates of brokers with no replica moving between log dirs, a cluster-default rate while
    nothing moves. ``brokers``: default the live ones. ``scope``: only the plan's (its topics'
    entries of its partitions, its brokers' rates; the cluster default is not its). A few Admin
    calls whatever the size."""
    priors = priors or Priors()
    topics = sorted(gateway.topic_partition_counts())
    brokers = sorted(b.id for b in gateway.brokers()) if brokers is None else sorted(brokers)
    if scope is not None:
        topics = [t for t in topics if t in scope.partitions]
        brokers = [b for b in brokers if b in scope.brokers]
    cfg = gateway.throttle_configs(topics, brokers)
    live = [b for b in brokers if b not in cfg.unreachable]
    in_flight = gateway.list_reassignments()
    need = throttles_for(move_map({}, {}, in_flight))
    moving_topics = {tp.topic for tp in in_flight}
    ld_busy = {r.broker for r in gateway.describe_log_dirs(live) if r.is_future} if live else set()
    strays: list[Stray] = []
    for t in topics:
        for key, needed in (
            (LEADER_REPLICAS, need.leader.get(t)),
            (FOLLOWER_REPLICAS, need.follower.get(t)),
        ):
            cv = cfg.topics.get(t, {}).get(key)
            if cv is None:
                continue
            have = entry_set(cv.value)
            operator = entry_set(priors.get("topics", t, key))
            if "*" in have:
                extra = set() if t in moving_topics or "*" in operator else have
            else:
                extra = have - entry_set(needed) - operator
            if scope is not None:
                extra = {e for e in extra if scope.owns_entry(t, e)}
            if extra:
                strays.append(Stray("topic", t, key, cv.value, ",".join(sorted(extra)), cv.source))
    for b in live:
        for key in BROKER_THROTTLE_KEYS:
            cv = cfg.brokers.get(b, {}).get(key)
            if cv is None:
                continue
            busy = b in ld_busy if key == LOG_DIR_RATE else b in need.brokers
            known = priors.known("brokers", b, key)
            prior = priors.get("brokers", b, key)
            if busy or (known and prior == cv.value):
                continue  # a move needs it, or it is the operator's own, as before the run
            strays.append(Stray("broker", str(b), key, cv.value, cv.value, cv.source, prior, known))
    if not in_flight and scope is None:
        for key, cv in cfg.default.items():
            if priors.get("brokers", DEFAULT_BROKER, key) != cv.value:
                strays.append(Stray("default", DEFAULT_BROKER, key, cv.value, cv.value, cv.source))
    return ThrottleCheck(strays, dict(cfg.unreachable))


def clean_throttles(
    gateway: Any,
    priors: Priors | None = None,
    check: ThrottleCheck | None = None,
    only_recorded: bool = False,
    scope: PlanScope | None = None,
) -> ThrottleCheck:
    """Remove what ``check_throttles`` finds (checked now unless given) that is set on the topic
    or broker itself: a list narrowed to what the moves need (deleted when nothing is left), a
    rate deleted, or put back at its prior when ``priors`` know one. The cluster default and
    server.properties values are left as they are (reported). ``only_recorded`` (the runs'
    records found): only the configs ``priors`` record — those the runs changed —
    are changed; the others are reported as kept. ``scope``: only the plan's throttles."""
    check = check or check_throttles(gateway, priors, scope=scope)
    tch: ConfigChanges = {}
    bch: ConfigChanges = {}
    pr = priors or Priors()
    for s in check.strays:
        if not s.removable:
            continue
        part = "topics" if s.resource == "topic" else "brokers"
        name = s.name if s.resource == "topic" else int(s.name)
        if only_recorded and not pr.known(part, name, s.key):
            check.kept.append(s)
            continue
        if s.resource == "topic":
            left = entry_set(s.value) - entry_set(s.unneeded)
            tch.setdefault(s.name, {})[s.key] = ",".join(sorted(left)) or None
        else:
            bch.setdefault(int(s.name), {})[s.key] = s.prior if s.restore else None
    if tch:
        gateway.alter_topic_configs(tch)
    if bch:
        gateway.alter_broker_configs(bch)
    check.cleaned = (tch, bch)
    return check
