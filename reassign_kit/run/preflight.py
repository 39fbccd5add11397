"""One preflight for every way a run starts: the CLI (legacy, paced and stepped), the Python
API (``reassign_kit.execute``) and the notebook panel.

Before anything is sent to the cluster: read the plan (the file's problems and the cluster's
reported together), validate it against the cluster, refuse others' moves in flight unless
``additional`` (one message, exit code 6, wherever the run starts), write the rollback file
(never over an earlier one: a taken name gets the next free ``-2``, ``-3``... suffix), resolve
each topic's min.insync.replicas for KIP-435 steps and build the ``Run``. Everything it found
comes back in one ``Prepared`` value, so no caller repeats any of it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, fields
from typing import Any

from ..cluster.capabilities import RF_GUARD, degraded, refused, say_once
from ..cluster.views import (
    cluster_view,
    default_rollback_path,
    in_flight_unless_additional,
    replica_log_dirs,
    require_permissions,
    require_topic_permissions,
    rollback_plan,
)
from ..errors import InvalidPlanError, KafkaOperationError, UsageError
from ..model import PartitionState, Plan, TopicPartition, parse_plan_partial
from ..planner.record import Approval, PlanRecord, check_hash, drift, refuse_drift
from ..validate import ClusterView, plan_problems, validate_plan
from .gcpause import defer_full_collections
from .options import ExecuteOptions, cli_options
from .run import Run

# the options kafka-reassign-partitions has too, and --elect-leaders (the legacy request's
# opt-in, a paced run's opt-out): alone, they make the legacy single request
LEGACY_OPTIONS = frozenset(
    d.name for d in cli_options() if d.option.group in ("official", "leaders", "guard")
)
OPTION_NAMES = frozenset(f.name for f in fields(ExecuteOptions))


def default_journal_path() -> str:
    return time.strftime("reassign-run-%Y%m%dT%H%M%SZ.jsonl", time.gmtime())


# ----------------------------------------------------------------------- reading the plan


def read_plan(path: str, gateway: Any = None, *, allow_rf_change: bool = True) -> Plan:
    """``Plan.read``; when the file has problems and a gateway is given, its well-formed
    entries are also checked against the cluster (read-only metadata calls) so that every
    problem is reported in one ``InvalidPlanError``. If the cluster cannot answer, the file's
    problems stand alone."""
    try:
        return Plan.read(path)
    except InvalidPlanError as e:
        if gateway is None:
            raise
        try:
            with open(path, encoding="utf-8") as f:
                moves, _ = parse_plan_partial(f.read(), path)
        except (OSError, ValueError, InvalidPlanError):
            raise e from None
        if not moves:
            raise
        try:  # the cluster is only asked, never told
            partial = Plan.of(moves)
            extra = plan_problems(
                partial,
                cluster_view(gateway, partial),
                disallow_replication_factor_change=not allow_rf_change,
            )
        except Exception:  # noqa: BLE001 - the file's problems are the answer then
            raise e from None
        raise InvalidPlanError(
            e.problems + extra, header=f"{path} is not a valid reassignment plan"
        ) from None


# ----------------------------------------------------------------------- plans as approved


def check_approval(
    gateway: Any, plan: Plan, approval: Approval, plan_path: str | None, source: str
) -> list[str]:
    """Before anything is sent: the plan's hash is the approved one
    (``PlanHashError``, 13), and the cluster has not drifted since the plan record beside it
    (``PlanDriftError``, 14, naming each drifted partition, gone broker and deleted topic)
    unless ``allow_drift``. A plan with no record (a plain Kafka-format file) has no known
    basis: its drift is not checked, and the returned note says so. Read-only calls."""
    return approve(gateway, plan, approval, plan_path, source)[0]


def approve(
    gateway: Any, plan: Plan, approval: Approval, plan_path: str | None, source: str
) -> tuple[list[str], PlanRecord | None]:
    """``check_approval``'s lines, and the plan record it checked (None: none)."""
    check_hash(plan, approval.expect_plan_hash, source)
    record_file = approval.record_for(plan_path)
    if record_file is None:
        return [
            f"no plan record beside {source}: drift since it was planned is not checked "
            "(`reassign-kit plan` writes one); the rollback file holds the state it starts from"
        ], None
    record = PlanRecord.read(record_file)
    topics = set(record.topics) | {tp.topic for tp in record.partitions}
    counts = gateway.topic_partition_counts(sorted(topics)) if topics else {}
    states = gateway.describe_partitions([tp for tp in record.partitions if tp.topic in counts])
    live = [b.id for b in gateway.brokers()]
    found = drift(record, plan, states, live, counts.keys())
    lines = refuse_drift(found, source, record_file, approval.allow_drift)
    if record.growth and not record.rates_for(plan):  # --allow-drift past an edited plan
        lines.append(
            f"{record_file}: its growth rates describe another plan (sha256 "
            f"{record.plan_sha256}): not used; the run measures its own"
        )
    return lines, record


# ----------------------------------------------------------------------- the rollback file


def write_rollback(rollback: Plan, rollback_path: str | None) -> str | None:
    """Write the rollback plan without ever replacing an earlier one: ``rollback_path`` ""
    = a timestamped file in the working dir, None = none; a path that exists already gets
    the first free ``<stem>-2<ext>``, ``<stem>-3<ext>``... (the first rollback of an output
    folder holds the assignment before anything moved). Created with mode 0600 (it describes
    the cluster: its owner's to share). Returns the path written."""
    if rollback_path is None:
        return None
    wanted = rollback_path or default_rollback_path()
    if os.path.isdir(wanted):  # its name is taken: the "-2" below would land beside it
        raise UsageError(
            f"--rollback-file {wanted} is a directory: it takes the path of a file to create"
        )
    stem, ext = os.path.splitext(wanted)
    n = 1
    while True:
        path = wanted if n == 1 else f"{stem}-{n}{ext}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # owner only
        except FileExistsError:
            n += 1
            continue
        except OSError as e:
            raise UsageError(f"--rollback-file {path}: cannot write it: {e.strerror}") from None
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(rollback.to_json(indent=2) + "\n")
        return path


# ----------------------------------------------------------------------- preflight


@dataclass
class Prepared:
    """What the preflight checked, read and wrote; ``run`` is None when not asked for (the
    legacy single request builds no Run)."""

    plan: Plan
    options: ExecuteOptions
    view: ClusterView
    in_flight: dict[TopicPartition, PartitionState]
    states: dict[TopicPartition, PartitionState]  # in-flight partitions at their originals
    rollback: Plan | None
    rollback_path: str | None
    min_isr: dict[str, int] | None = None
    journal_path: str | None = None
    run: Run | None = None
    notes: list[str] = field(default_factory=list)
    approval: list[str] = field(default_factory=list)  # the hash / drift check's lines


@defer_full_collections
def preflight(
    gateway: Any,
    plan: Plan | str | os.PathLike,
    options: ExecuteOptions | None = None,
    journal_path: str | None = None,
    *,
    resume: bool = False,
    rollback_path: str | None = "",
    source: str | None = None,
    plan_path: str | None = None,
    build_run: bool = True,
    approval: Approval | None = None,
    **run_kwargs: Any,
) -> Prepared:
    """Everything before the first submission, whoever starts the run. Raises (nothing sent)
    ``InvalidPlanError`` (3) for a bad plan, ``ReassignmentInProgressError`` (6) for others'
    moves in flight without ``additional``, ``UsageError`` (2) for an unwritable rollback.

    ``rollback_path``: "" = a timestamped file in the working dir, None = none; never
    written on resume. ``approval``: the plan's expected hash and the drift check
    (``check_approval``; by default the record beside ``plan_path``, if any, is checked).
    ``run_kwargs`` go to ``Run`` (``clock``, ``sleep``, ``steps_for``);
    a simulator's own clock is used when none is given."""
    opts = (options or ExecuteOptions()).validate()
    # before the plan is even read: a denied user sees why, not "no topic"
    _require_execute(gateway, opts)
    if isinstance(plan, str | os.PathLike):
        path = os.fspath(plan)
        plan = read_plan(path, gateway, allow_rf_change=opts.allow_replication_factor_change)
        source = source or path
        plan_path = plan_path or os.path.abspath(path)
    source = source or "the plan"
    approval_notes, record = approve(gateway, plan, approval or Approval(), plan_path, source)
    view = cluster_view(gateway, plan)
    validate_plan(
        plan,
        view,
        disallow_replication_factor_change=not opts.allow_replication_factor_change,
        source=source,
    )
    warnings = rf_guard_check(gateway, opts)
    _require_throttled_topics(gateway, plan, opts)
    in_flight: dict[TopicPartition, PartitionState] = {}
    rollback, path_written = None, None
    states = dict(view.states)
    if not resume:
        in_flight, states, rollback, path_written = _originals(
            gateway, plan, view, opts, rollback_path
        )
    min_isr = None  # read now when steps are asked for (else by the Run if R is set later)
    if opts.parallel_replica_count is not None and opts.min_isr is None:
        min_isr = dict(gateway.min_insync_replicas(plan.topics()))
    prepared = Prepared(
        plan, opts, view, in_flight, states, rollback, path_written, min_isr, journal_path
    )
    prepared.notes += warnings
    prepared.approval = approval_notes
    if path_written:
        prepared.notes.append(
            f"The rollback plan (the current assignment) was saved to {path_written}"
        )
    if build_run:
        # the run goes on the gateway's clock: wall time, or the simulator's model time
        run_kwargs.setdefault("clock", gateway.now)
        run_kwargs.setdefault("sleep", gateway.sleep)
        # the disk ceiling's order at the start counts growth from the record's rates
        if record is not None and record.rates_for(plan):
            run_kwargs.setdefault("growth_rates", record.rates_for(plan))
        prepared.run = Run(
            gateway,
            plan,
            opts,
            journal_path,
            resume=resume,
            plan_path=plan_path,
            min_isr=min_isr,
            **run_kwargs,
        )
    return prepared


def _require_execute(gateway: Any, opts: ExecuteOptions) -> None:
    """The cluster permissions an execute needs (configs too when it throttles)."""
    throttled = opts.throttle is not None or opts.log_dir_throttle is not None
    require_permissions(
        gateway,
        "execute",
        ["DESCRIBE", "ALTER"] + (["DESCRIBE_CONFIGS", "ALTER_CONFIGS"] if throttled else []),
        hint="or run without --throttle" if throttled else "",
    )


def _require_throttled_topics(gateway: Any, plan: Plan, opts: ExecuteOptions) -> None:
    """With --throttle the plan's topics get throttled-replica lists: their configs' rights."""
    if opts.throttle is not None:
        require_topic_permissions(
            gateway,
            "execute",
            plan.topics(),
            ["DESCRIBE_CONFIGS", "ALTER_CONFIGS"],
            "set the replication throttle on the plan's topics (or run without --throttle)",
        )


def _originals(
    gateway: Any, plan: Plan, view: ClusterView, opts: ExecuteOptions, rollback_path: str | None
) -> tuple[
    dict[TopicPartition, PartitionState], dict[TopicPartition, PartitionState], Plan, str | None
]:
    """A new run's starting point: others' moves in flight (refused unless ``additional``),
    the partitions at their originals (an in-flight one at its own), the rollback plan and
    where it was written."""
    in_flight = in_flight_unless_additional(gateway, opts.additional)
    states = {tp: in_flight.get(tp, st) for tp, st in view.states.items()}
    cur_dirs = None
    if any(m.log_dirs is not None for m in plan):
        brokers = {r for m in plan for r in m.replicas} | {
            r for m in plan for r in states[m.tp].replicas
        }
        cur_dirs = replica_log_dirs(gateway, [m.tp for m in plan], brokers)[0]
    rollback = rollback_plan(plan, states, cur_dirs)
    return in_flight, states, rollback, write_rollback(rollback, rollback_path)


def rf_guard_check(gateway: Any, opts: ExecuteOptions) -> list[str]:
    """--disallow-replication-factor-change on a controller that does not list
    AlterPartitionReassignments v1 (KIP-860): the plan has been checked client-side already
    (``validate_plan``), so the run goes on with requests at v0 and says so once, by name;
    with --require-broker-rf-guard it is refused (nothing sent) naming the release needed.
    Returns the warnings said (for the API's and the panel's notes)."""
    if opts.allow_replication_factor_change:
        return []
    caps = gateway.capabilities()
    if caps.has(RF_GUARD):
        return []
    if opts.require_broker_rf_guard:
        raise KafkaOperationError(refused(RF_GUARD, "--require-broker-rf-guard"))
    text = degraded(RF_GUARD)
    say_once(text)
    return [text]


def is_paced(options: dict, *, resume: bool = False, journal: object = None) -> bool:
    """Whether API options make a paced run: ``resume``, an explicit ``journal`` or any option
    the official tool lacks set to other than its default (else: the legacy request)."""
    default = ExecuteOptions()
    return (
        resume
        or bool(journal)
        or any(k not in LEGACY_OPTIONS and v != getattr(default, k) for k, v in options.items())
    )
