"""``--cancel`` as a function (re-exported by ops): cancel = roll back. Each partition of
the plan (of a journal, ``--topics``, ``--all``) in flight is cancelled and brought back to
its ORIGINAL replica list, in order, through the one rollback (run/rollback.py); originals
from the journal, the rollback file or the run's home, and refused by name when they
disagree."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.views import (
    cluster_view,
    no_reassignment_in_progress,
    replica_log_dirs,
    require_permissions,
)
from ..errors import EXIT_IN_PROGRESS, JournalError, KafkaOperationError, UsageError
from ..model import PartitionState, Plan, TopicPartition, is_complete
from ..moves.journal import read_events
from ..moves.originals import (
    dirs_back,
    dirs_contradicted,
    journal_behind,
    originals_disagreeing,
    recorded_dirs,
    stepped_partitions,
)
from ..run.logdirs import log_dir_targets, start_log_dir_moves
from ..run.rollback import merge_originals, restore_leaders, roll_back
from ..throttles import configs as thr
from ..throttles import priors as priors_mod
from ..validate import validate_plan
from .tables import fmt_replicas, rows_table

ROLLBACK_TIMEOUT_S = 300.0
# a replica the rollback re-creates on its original broker is asked into its original dir
# until it exists (as --execute does), at most this long
LOG_DIR_BACK_TIMEOUT_S = 30.0
NO_PLAN_IN_JOURNAL = (
    "the journal holds no plan (too large to inline, and its plan file is gone): give "
    "--reassignment-json-file too"
)  # how long a cancel waits for the partitions to be back


# a canary the journal names while its run is still writing the journal (not deleted)
CANARY_LIVE = "its run is still writing the journal and deletes it at its end"


@dataclass
class CancelResult:
    """Per partition: ``cancelled`` (back at its original replica list, in order, verified),
    ``completed`` (it finished before the cancel reached it: left at its target),
    ``not_moving`` (untouched, nothing to do), ``rolling_back`` (original, replicas now: not
    back within the wait; the reassignment back is in flight), ``unknown`` (neither moving
    nor at the plan's target, and no journal or rollback file says where it started),
    ``errors``. ``reverted``: the partitions whose reassignment in flight was cancelled."""

    cancelled: list[TopicPartition]
    not_moving: list[TopicPartition]
    errors: dict[TopicPartition, str]
    log_dir_cancelled: list[tuple[TopicPartition, int]]
    cleared: tuple[dict, dict] | None
    rollback_file: str | None = None
    completed: list[TopicPartition] = field(default_factory=list)
    rolling_back: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]] = field(
        default_factory=dict
    )
    unknown: list[TopicPartition] = field(default_factory=list)
    reverted: list[TopicPartition] = field(default_factory=list)
    originals: dict[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    journal: str | None = None
    # back at their original list but still led by another replica: the preferred-leader
    # election that should have moved leadership back failed (partition -> error)
    leader_not_restored: dict[TopicPartition, str] = field(default_factory=dict)
    # the probe's canary topics the journaled run left (killed with its probe up): topic ->
    # None when deleted now (or already gone), else why not
    canaries: dict[str, str | None] = field(default_factory=dict)
    # replica -> the log dir it was sent back to (its original, recorded before the run)
    log_dirs_back: dict[tuple[TopicPartition, int], str] = field(default_factory=dict)

    # the cancelled partitions whose original came from a record (journal, rollback file):
    # their order is known; the others' is the cluster's (KIP-455 keeps the set, not the order)
    order_recorded: set[TopicPartition] = field(default_factory=set)
    run_state: list[str] = field(default_factory=list)  # which recorded run was used
    outcome: Any = None  # where each partition ended (operations.outcome.CancelReport)
    # the throttle configs read back from the cluster after the clean-up (``configs.summary``
    # plus ``unreachable``): what the message about throttles left says, never the journal
    throttles_after: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        if self.errors:
            return KafkaOperationError.exit_code
        return EXIT_IN_PROGRESS if self.rolling_back else 0

    def to_pandas(self) -> Any:
        rows = [
            {"topic": tp.topic, "partition": tp.partition, "result": result}
            for result, tps in (
                ("cancelled", self.cancelled),
                ("completed", self.completed),
                ("rolling back", self.rolling_back),
                ("original unknown", self.unknown),
                ("not moving", self.not_moving),
            )
            for tp in tps
        ]
        rows += [
            {"topic": tp.topic, "partition": tp.partition, "result": e}
            for tp, e in self.errors.items()
        ]
        return rows_table(rows, ["topic", "partition", "result"])

    def lines(self) -> list[str]:
        """What was cancelled, where each partition is now, then what was cleaned up."""
        return [*self.cancel_lines(), *self.where_lines(), *self.cleanup_lines()]

    def cancel_lines(self) -> list[str]:
        """The cancels sent (KIP-455's, the log dirs')."""
        out = []
        # "cancelled" only for those back at their originals; the others are said as in flight
        back = [tp for tp in self.reverted if tp not in self.rolling_back]
        pending = [tp for tp in self.reverted if tp in self.rolling_back]
        if back:
            out.append(
                "Successfully cancelled reassignment of partitions " + ",".join(map(str, back))
            )
        if pending:
            out.append(
                "Cancelled the reassignment in flight of partitions "
                + ",".join(map(str, pending))
                + ": not back at their original replicas yet (below)"
            )
        if self.log_dir_cancelled:
            out.append(
                "Successfully cancelled movement of replicas between log dirs: "
                + ",".join(f"{tp}@{b}" for tp, b in self.log_dir_cancelled)
            )
        if self.log_dirs_back:
            out.append(
                "Sent replicas back to their original log dirs: "
                + ", ".join(f"{tp}@{b} -> {d}" for (tp, b), d in sorted(self.log_dirs_back.items()))
            )
        return out

    def where_lines(self) -> list[str]:
        """Where each partition is now: back (order known or not), kept, untouched, in flight
        back, unknown."""
        out = []
        ordered = [tp for tp in self.cancelled if tp in self.order_recorded]
        unordered = [tp for tp in self.cancelled if tp not in self.order_recorded]
        if ordered:
            out.append(
                "Rolled back to their original replica lists (order and preferred leader "
                "included, as recorded), verified:"
            )
            out += [f"  {tp}: back at its original replicas [{fmt_replicas(self.originals[tp])}]"
                    for tp in ordered]  # fmt: skip
        if unordered:
            out.append(
                "Rolled back to their original replica sets (order unknown: no journal or "
                "rollback file recorded it), verified:"
            )
            out += [f"  {tp}: back at its original replicas [{fmt_replicas(self.originals[tp])}]"
                    for tp in unordered]  # fmt: skip
        if self.completed:
            out.append(
                "Completed before the cancel reached them (left at their target): "
                + ",".join(str(tp) for tp in self.completed)
            )
        if self.not_moving:
            out.append(
                "Not moving, nothing to cancel: " + ",".join(str(tp) for tp in self.not_moving)
            )
        if not (self.reverted or self.cancelled or self.log_dir_cancelled or self.errors) and not (
            self.rolling_back
        ):
            out.append("None of the specified partition reassignments are active.")
        for tp, e in self.errors.items():
            out.append(f"Could not cancel {tp}: {e}")
        if self.rolling_back:
            out.append(
                "Not back at their original replicas yet (the reassignment back is in flight, "
                "throttled); run the same --cancel again to wait for it and verify:"
            )
            for tp, (orig, now) in self.rolling_back.items():
                out.append(f"  {tp}: original [{fmt_replicas(orig)}], now [{fmt_replicas(now)}]")
        if self.unknown:
            out.append(
                "Not moving and not at the plan's target, left as they are: without the run's "
                "journal or rollback file nothing tells a move not started from a KIP-435 "
                "stepped move stopped between steps: " + ",".join(str(tp) for tp in self.unknown)
            )
            out.append(
                "  Give the run's --journal, or the --rollback-file --execute saved, to bring "
                "them back to their original replicas"
                + (f" ({self.rollback_file})." if self.rollback_file else ".")
            )
        return out

    def cleanup_lines(self) -> list[str]:
        """Leaders not restored, the throttles and the probe's canary topics."""
        out = []
        for tp, e in self.leader_not_restored.items():
            out.append(
                f"  {tp}: its original leader {self.originals[tp][0]} could not be elected "
                f"({e}); kafka-leader-election --election-type PREFERRED moves it back"
            )
        if self.cleared is not None:
            out.append(throttles_left_line(self.throttles_after))
        for topic, err in self.canaries.items():
            if err is None:
                out.append(f"Deleted the probe's canary topic {topic} the journaled run left.")
            elif err == CANARY_LIVE:
                out.append(f"Left the probe's canary topic {topic}: {CANARY_LIVE}.")
            else:
                out.append(
                    f"Could not delete the probe's canary topic {topic} the journaled run "
                    f"left ({err}): run the same --cancel again, or delete it by hand."
                )
        return out


def originals_from(
    rollback_files: str | Sequence[str] | None, journal: str | None
) -> tuple[Plan | None, dict[TopicPartition, tuple[int, ...]], set[TopicPartition], int | None]:
    """(the journaled plan, original replica lists, journaled completions, throttle rate)
    from a run's journal and / or rollback files (an explicit one and the run's recorded one
    are merged, never one replacing the other); where two name a partition they must agree
    (order included), else nothing is sent and both lists are named
    (``rollback.merge_originals``)."""
    if isinstance(rollback_files, str):
        rollback_files = [rollback_files]
    from ..run.resume import journaled_run

    plan, completed, rate = None, set(), None
    sources: dict[str, dict[TopicPartition, tuple[int, ...]]] = {}
    if journal:
        jr = journaled_run(journal)
        plan, completed, rate = jr.plan, jr.completed, jr.options.throttle
        sources[f"the journal {journal}"] = jr.originals
    for rollback_file in dict.fromkeys(rollback_files or []):
        if not os.path.isfile(rollback_file):
            raise UsageError(f"--rollback-file {rollback_file}: no such file")
        rb = {m.tp: tuple(m.replicas) for m in Plan.read(rollback_file)}
        sources[f"the rollback file {rollback_file}"] = rb
    return plan, merge_originals(sources), completed, rate


def cancel(
    gateway: Any,
    plan: Plan | None = None,
    *,
    topics: Iterable[str] | None = None,
    all: bool = False,
    preserve_throttles: bool = False,
    rollback_file: str | Sequence[str] | None = None,
    journal: str | None = None,
    throttle: int | None = None,
    timeout_s: float = ROLLBACK_TIMEOUT_S,
    priors: thr.Priors | str | None = None,
    source: str = "the plan",
) -> CancelResult:
    """Cancel means rollback: the plan's partitions (or the journal's plan's), of ``topics``
    or ``all`` in flight are cancelled (KIP-455), then each not back at its ORIGINAL replica
    list gets a reassignment back to it, in order, throttled at ``throttle`` (or the journal's
    rate), waited for (``timeout_s``) and verified. Originals: the ``journal`` and rollback
    files, checked against the cluster first (``JournalError``), else the move in flight's
    own. Throttles removed put back ``priors`` (else the journal's)."""
    chosen = [plan is not None, topics is not None, all]
    if sum(chosen) > 1 or (sum(chosen) == 0 and journal is None):
        raise UsageError("cancel needs exactly one of a plan (or a journal), topics, or all")
    configs = [] if preserve_throttles else ["DESCRIBE_CONFIGS", "ALTER_CONFIGS"]
    hint = "" if preserve_throttles else "or cancel with --preserve-throttles"
    require_permissions(gateway, "cancel", ["DESCRIBE", "ALTER", *configs], hint=hint)
    rollback_files = [rollback_file] if isinstance(rollback_file, str) else rollback_file or []
    rec = _Recorded.read(list(rollback_files), journal, priors)
    if not any(chosen):  # --journal alone: the journaled run's plan
        plan = rec.plan
    if journal is not None and plan is None and topics is None and not all:
        raise UsageError(f"--journal {journal}: {NO_PLAN_IN_JOURNAL}")
    if plan is not None:  # the rules --execute applies: a plan it would refuse changes nothing
        validate_plan(plan, cluster_view(gateway, plan), source=source)
    rec.same_plan(plan, journal, source)
    known, events, priors, rate = rec.originals, rec.events, rec.priors, rec.rate_or(throttle)
    in_flight = gateway.list_reassignments()
    wanted = _wanted(plan, topics, in_flight)
    targets = {m.tp: tuple(m.replicas) for m in plan} if plan is not None else {}
    recorded = {tp: o for tp, o in known.items() if tp in set(wanted)}
    _refuse_contradicted(gateway, recorded, targets, in_flight, events, rec.throttled)
    originals = _originals(wanted, in_flight, recorded)
    reverted, errors, finished = _cancel_in_flight(gateway, wanted, in_flight)
    states = gateway.describe_partitions([tp for tp in wanted if tp not in errors])
    sorted_out = _sort_out(
        wanted, states, originals, targets, errors, reverted, set(finished) | rec.completed, known
    )
    cancelled, completed, not_moving, unknown, back = sorted_out
    rolling: dict = {}
    if back:
        cancelled_back, rolling, refused = roll_back(gateway, back, states, rate, timeout_s, priors)
        cancelled += cancelled_back
        errors.update(refused)
    cancelled.sort(key=wanted.index)
    leader_not_restored = restore_leaders(gateway, {tp: originals[tp] for tp in cancelled})
    log_dir_cancelled, dirs_sent = _log_dirs_back(gateway, plan, rec, completed, errors)
    cleared, after = None, None
    if not preserve_throttles:
        touched = {tp.topic for tp in [*reverted, *back, *(k[0] for k in log_dir_cancelled)]}
        named = set(plan.topics()) if plan is not None else set(topics or ())
        cleared, after = _clear_throttles(gateway, sorted(touched | named), priors)
    return CancelResult(
        cancelled,
        sorted(not_moving),
        errors,
        log_dir_cancelled,
        cleared,
        ", ".join(rollback_files) or None,
        completed=completed,
        rolling_back=rolling,
        unknown=unknown,
        reverted=reverted,
        originals={tp: originals[tp] for tp in cancelled},
        order_recorded={tp for tp in cancelled if tp in recorded},
        journal=journal,
        log_dirs_back=dirs_sent,
        leader_not_restored=leader_not_restored,
        canaries=_canaries_left(gateway, journal, events),
        throttles_after=after,
    )


@dataclass
class _Recorded:
    """What the run's records say: its plan, originals, completions, rate, events, priors."""

    plan: Plan | None
    originals: dict[TopicPartition, tuple[int, ...]]
    completed: set[TopicPartition]
    rate: int | None
    events: list[dict[str, Any]] | None
    priors: Any
    throttled: bool = False  # the journaled run set throttles
    # each replica's original log dir, as the rollback files recorded it
    dirs: dict[tuple[TopicPartition, int], str] = field(default_factory=dict)
    dirs_disagreeing: dict[tuple[TopicPartition, int], str] = field(default_factory=dict)

    def same_plan(self, plan: Plan | None, journal: str | None, source: str) -> None:
        """A plan given with a journal is the journaled run's (else: usage error, exit 2)."""
        if plan is not None and self.plan is not None and self.plan.digest() != plan.digest():
            raise UsageError(
                f"--journal {journal}: its run is of another plan than {source}; nothing was sent"
            )

    def rate_or(self, throttle: int | None) -> int | None:
        """The rate for the way back: the one given, else the journal's."""
        return throttle if throttle is not None else self.rate

    @classmethod
    def read(cls, rollback_files: list[str], journal: str | None, priors: Any) -> _Recorded:
        plan, known, completed, rate = originals_from(rollback_files, journal)
        # read once: the throttle priors, the steps and the canaries left
        events = read_events(journal) if journal is not None else None
        if priors is None and events is not None:
            priors = thr.Priors.from_events(events)
        loaded = priors_mod.load_priors(priors)
        dirs, bad = recorded_dirs({f: Plan.read(f) for f in dict.fromkeys(rollback_files)})
        return cls(plan, known, completed, rate, events, loaded, rate is not None, dirs, bad)


def _originals(
    wanted: list[TopicPartition],
    in_flight: Mapping[TopicPartition, PartitionState],
    recorded: Mapping[TopicPartition, tuple[int, ...]],
) -> dict[TopicPartition, tuple[int, ...]]:
    """Where each started: the recorded original, else the reassignment in flight's own."""
    out = {
        tp: tuple(r for r in in_flight[tp].replicas if r not in in_flight[tp].adding)
        for tp in wanted
        if tp in in_flight
    }
    out.update(recorded)
    return out


def _wanted(
    plan: Plan | None, topics: Iterable[str] | None, in_flight: Mapping[TopicPartition, Any]
) -> list[TopicPartition]:
    """The partitions to cancel: the plan's, else those of ``topics`` in flight, else all."""
    if plan is not None:
        return [m.tp for m in plan]
    if topics is not None:
        ts = set(topics)
        return sorted(tp for tp in in_flight if tp.topic in ts)
    return sorted(in_flight)


def _cancel_in_flight(
    gateway: Any, wanted: list[TopicPartition], in_flight: Mapping[TopicPartition, Any]
) -> tuple[list[TopicPartition], dict[TopicPartition, str], list[TopicPartition]]:
    """KIP-455's cancel of the wanted moves in flight: (reverted, errors, finished between
    the listing and the cancel — NoReassignmentInProgress, not an error)."""
    moving = [tp for tp in wanted if tp in in_flight]
    results = gateway.alter_reassignments(dict.fromkeys(moving)) if moving else {}
    reverted = [tp for tp in moving if tp in results and results[tp] is None]
    errors = {
        tp: (results.get(tp) or "no answer from the controller")
        for tp in moving
        if tp not in reverted
    }
    finished = [tp for tp, e in errors.items() if no_reassignment_in_progress(e)]
    for tp in finished:
        del errors[tp]
    return reverted, errors, finished


def _refuse_contradicted(
    gateway: Any,
    recorded: Mapping[TopicPartition, tuple[int, ...]],
    targets: Mapping[TopicPartition, tuple[int, ...]],
    in_flight: Mapping[TopicPartition, PartitionState],
    events: list[dict[str, Any]] | None,
    throttled: bool,
) -> None:
    """Nothing is sent when a recorded original disagrees with the cluster, nor when the
    journal is behind it (``moves.originals.journal_behind``)."""
    bad = [] if events is None else journal_behind(events, targets, in_flight, throttled)
    if recorded:
        states = gateway.describe_partitions([tp for tp in recorded if tp not in in_flight])
        stepped = stepped_partitions(events or [])
        bad += originals_disagreeing(recorded, targets, in_flight, states, stepped)
    if bad:
        raise JournalError(
            "cancel: refused, nothing sent: the recorded original replicas disagree with the "
            "cluster (a journal or rollback file edited, cut, restored from an older copy, "
            "planted or of another run):\n  " + "\n  ".join(bad)
        )


def _sort_out(
    wanted: list[TopicPartition],
    states: Mapping[TopicPartition, PartitionState],
    originals: Mapping[TopicPartition, tuple[int, ...]],
    targets: Mapping[TopicPartition, tuple[int, ...]],
    errors: dict[TopicPartition, str],
    reverted: list[TopicPartition],
    done: set[TopicPartition],
    known: Mapping[TopicPartition, tuple[int, ...]],
) -> tuple[list, list, list, list, dict[TopicPartition, tuple[int, ...]]]:
    """(cancelled, completed, not moving, original unknown, to roll back) after the cancel of
    the moves in flight; a partition that does not exist is added to ``errors``."""
    cancelled: list[TopicPartition] = []
    completed: list[TopicPartition] = []
    not_moving: list[TopicPartition] = []
    unknown: list[TopicPartition] = []
    back: dict[TopicPartition, tuple[int, ...]] = {}
    for tp in wanted:
        if tp in errors:
            continue
        st, orig = states.get(tp), originals.get(tp)
        if st is None:
            errors[tp] = "the partition does not exist"
        elif tp in targets and tp not in reverted and is_complete(targets[tp], st):
            (completed if tp in done or tp in known else not_moving).append(tp)
        elif orig is None or (tp in done and tp not in reverted):
            (unknown if tp in targets and not st.reassigning else not_moving).append(tp)
        elif is_complete(orig, st):
            (cancelled if tp in reverted else not_moving).append(tp)
        else:
            back[tp] = orig
    return cancelled, completed, not_moving, unknown, back


def _clear_throttles(
    gateway: Any, topics: list[str], priors: thr.Priors | None
) -> tuple[Any, dict[str, Any]]:
    """As the official tool (and its ReassignPartitionsCommandTest): without
    --preserve-throttles the throttles go even when nothing was moving any more (e.g. after an
    earlier --cancel --preserve-throttles), except what moves in flight need; the operator's
    values recorded before are put back. With what the cluster holds afterwards, read back."""
    cleared = thr.clear_throttles(gateway, topics, priors=priors, only_recorded=priors is not None)
    return cleared, throttles_read_back(gateway, topics, cleared)


def throttles_read_back(
    gateway: Any, topics: list[str], written: tuple[Any, Any] = ({}, {})
) -> dict[str, Any]:
    """The throttle configs on every broker and on ``topics`` as the cluster holds them now
    (once the removals ``written`` show), in the journal's shape, with the brokers that
    could not be read (``unreachable``)."""
    brokers = [b.id for b in gateway.brokers()]
    now = thr.read_settled(gateway, topics, brokers, written)
    return {**thr.summary(now), "unreachable": dict(now.get("unreachable") or {})}


def throttles_left_line(after: Mapping[str, Any] | None) -> str:
    """What the brokers' configs read after the clean-up say is left: "no throttle left" only
    when they were read, every broker answered and none holds a rate or a list."""
    if after is None:
        return "Throttles no remaining reassignment needs were removed (not read back)."
    parts = []
    rates = sorted({**after.get("broker_rates", {}), **after.get("log_dir_rates", {})}, key=int)
    if rates:
        parts.append("a rate on brokers " + ", ".join(rates))
    lists = sorted({*after.get("leader_replicas", {}), *after.get("follower_replicas", {})})
    if lists:
        parts.append("replica lists on topics " + ", ".join(lists))
    unread = sorted(str(b) for b in after.get("unreachable", {}))
    if unread:
        parts.append("brokers " + ", ".join(unread) + " not read (their throttles unknown)")
    if not parts:
        return (
            "Throttles no remaining reassignment needs were removed; read back: no throttle left."
        )
    return (
        "Throttles no remaining reassignment needs were removed; read back, throttles left: "
        + "; ".join(parts)
        + " (the values there before the run, put back, or what moves in flight need)."
    )


def _log_dirs_back(
    gateway: Any,
    plan: Plan | None,
    rec: _Recorded,
    completed: list[TopicPartition],
    errors: dict[TopicPartition, str],
) -> tuple[list[tuple[TopicPartition, int]], dict[tuple[TopicPartition, int], str]]:
    """Every replica of the plan's partitions back in its original log dir (the rollback
    file's, recorded before the run sent anything), its move between dirs in flight
    cancelled; a partition completed (replicas and dirs at the plan's) is left. Returns the
    moves in flight cancelled in place and the replicas sent back (key -> original dir);
    a replica the broker refuses, or two records disagree on, is an error of its partition."""
    if plan is None or (all(m.log_dirs is None for m in plan) and not rec.dirs):
        return [], {}
    for (tp, _), line in sorted(rec.dirs_disagreeing.items()):
        errors.setdefault(tp, f"original log dirs disagree: {line}")
    tps = [m.tp for m in plan]
    brokers = {b for m in plan for b in m.replicas} | {b for _, b in rec.dirs}
    cur, fut = replica_log_dirs(gateway, tps, brokers)
    targets = log_dir_targets(plan)
    bad = dirs_contradicted(rec.dirs, targets, cur)
    for (tp, _), line in bad.items():
        errors.setdefault(tp, f"not sent back to its original log dir: {line}")
    trusted = {k: d for k, d in rec.dirs.items() if k not in bad}
    back = dirs_back(trusted, targets, cur, fut, tps, completed)
    if not back:
        return [], {}
    rows = start_log_dir_moves(gateway, back, LOG_DIR_BACK_TIMEOUT_S)
    for r in rows:
        if r["error"] is not None:
            tp = TopicPartition(r["topic"], r["partition"])
            errors.setdefault(
                tp, f"the replica on broker {r['broker']} not sent back to {r['log_dir']}: "
                f"{r['error']}"
            )  # fmt: skip
    sent = {(TopicPartition(r["topic"], r["partition"]), r["broker"]): r["log_dir"]
            for r in rows if r["error"] is None}  # fmt: skip
    in_place = sorted(k for k, d in sent.items() if cur.get(k) == d)
    return in_place, {k: d for k, d in sent.items() if cur.get(k) != d}


def _canaries_left(
    gateway: Any, journal: str | None, events: list[dict[str, Any]] | None
) -> dict[str, str | None]:
    """The probe's canary topics a run killed with its probe up (--pace adaptive) left."""
    if events is None:
        return {}
    from ..cluster.probe import CANARY_PREFIX, delete_canaries
    from ..moves.journal import writer_alive
    from ..pacing.memory import orphan_canaries

    left = [t for t in orphan_canaries(events) if t.startswith(CANARY_PREFIX)]
    if left and writer_alive(journal):  # a live run's own canary: it deletes it at its end
        return dict.fromkeys(left, CANARY_LIVE)
    return delete_canaries(gateway, left)


def cancel_run(gateway: Any, journal: str, **kwargs: Any) -> CancelResult:
    """Roll back the run journaled at ``journal`` (its plan, originals and throttle rate)."""
    return cancel(gateway, None, journal=journal, **kwargs)
