"""The Python API: execute (legacy single request), verify, cancel, list_reassignments.

Usable from a notebook, a script and the CLI alike: every function takes a gateway (``connect``
builds the real one) and returns a result object with ``lines()`` (what the CLI prints),
``exit_code`` where it means something, and ``to_pandas()``. Nothing is sent before the whole
plan validates; throttles are set before a move and removed only when no move needs them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# re-exported: these lived here before cluster/views.py and engine/logdirs.py held them
from .cluster.views import (  # noqa: F401
    METADATA_SETTLE_S,
    cluster_view,
    default_rollback_path,
    in_flight_unless_additional,
    missing_permissions,
    no_reassignment_in_progress,
    partition_sizes,
    replica_log_dirs,
    require_permissions,
    rollback_plan,
)
from .engine import throttle as thr
from .engine.elections import ElectionResult, elect_preferred
from .engine.gcpause import defer_full_collections
from .engine.logdirs import (  # noqa: F401
    RETRIABLE_LOG_DIR_ERRORS,
    log_dir_round,
    log_dir_targets,
    start_log_dir_moves,
)
from .engine.options import ExecuteOptions
from .engine.preflight import preflight, write_rollback  # noqa: F401
from .engine.rollback import (  # noqa: F401 (ROLLBACK_POLL_S, restore_leaders: re-exported)
    ROLLBACK_POLL_S,
    merge_originals,
    restore_leaders,
    roll_back,
)
from .errors import (  # noqa: F401 (ReassignmentInProgressError, EXIT_*: re-exported)
    EXIT_IN_PROGRESS,
    EXIT_MISMATCH,
    KafkaOperationError,
    ReassignKitError,
    ReassignmentInProgressError,
    UsageError,
)
from .model import Move, PartitionState, Plan, TopicPartition, is_complete
from .plan_record import Approval

SETTLE_PAUSE_S = 0.5  # between re-reads of metadata that may lag the controller (see settle)
SETTLE_ATTEMPTS = round(METADATA_SETTLE_S / SETTLE_PAUSE_S)  # 6: the one settle window


# ----------------------------------------------------------------------------- setup


def load_command_config(path: str) -> dict[str, str]:
    """Read a Java-style .properties file (``--command-config``): ``key=value`` / ``key: value``,
    ``#``/``!`` comments, ``\\`` line continuations. Values are secrets: never print them."""
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read().splitlines()
    except OSError as e:
        raise UsageError(f"--command-config {path}: cannot read it: {e.strerror}") from None
    except UnicodeDecodeError as e:  # the bytes may be a secret: only where, never what
        raise UsageError(f"--command-config {path}: not UTF-8 text (byte {e.start})") from None
    props: dict[str, str] = {}
    logical: list[str] = []
    buf = ""
    for line in raw:
        s = line.lstrip()
        if not buf and (not s or s[0] in "#!"):
            continue
        if s.endswith("\\") and not s.endswith("\\\\"):
            buf += s[:-1]
            continue
        logical.append(buf + s)
        buf = ""
    if buf:
        logical.append(buf)
    for n, line in enumerate(logical, 1):
        idx = [i for i in (line.find("="), line.find(":")) if i >= 0]
        if not idx:
            raise UsageError(f"--command-config {path}: entry {n} is not key=value (value hidden)")
        i = min(idx)
        key, value = line[:i].strip(), line[i + 1 :].strip()
        if not key:
            raise UsageError(f"--command-config {path}: entry {n} has an empty key")
        props[key] = value
    return props


def connect(
    bootstrap_servers: str,
    command_config: Mapping[str, str] | str | None = None,
    timeout_s: float = 30,
) -> Any:
    """An ``admin.AdminGateway``; ``command_config`` is a dict or a .properties path.
    ``sim:PATH`` is a simulated cluster kept in a state file (``cluster/simfile.py``: the
    kill-fuzz harness runs the CLI on one)."""
    from .cluster.admin import AdminGateway
    from .cluster.simfile import SIM_PREFIX, FileSim, is_sim

    if is_sim(bootstrap_servers):
        return FileSim(bootstrap_servers[len(SIM_PREFIX) :])

    if isinstance(command_config, str):
        command_config = load_command_config(command_config)
    return AdminGateway(bootstrap_servers, command_config, timeout_s=timeout_s)


def _table(rows: list[dict[str, Any]], columns: list[str]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def _fmt(rs: Iterable[int]) -> str:
    return ",".join(str(r) for r in rs)


# ----------------------------------------------------------------------------- execute


@dataclass
class ExecuteResult:
    rows: list[dict[str, Any]]
    rollback: Plan
    rollback_path: str | None
    throttle_changes: tuple[dict, dict] = ({}, {})
    log_dir_rows: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    priors: thr.Priors = field(default_factory=thr.Priors)
    priors_path: str | None = None
    # --elect-leaders: the elections of the moves that completed at once (replica order only)
    elections: ElectionResult | None = None

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["error"]]

    @property
    def exit_code(self) -> int:
        failed_ld = [r for r in self.log_dir_rows if r["error"]]
        return KafkaOperationError.exit_code if (self.failed or failed_ld) else 0

    def to_pandas(self) -> Any:
        return _table(self.rows, ["topic", "partition", "current", "target", "replaces", "error"])

    def lines(self) -> list[str]:
        out = []
        ok = [r for r in self.rows if not r["error"]]
        for r in self.rows:
            if r["replaces"] is not None and not r["error"]:
                out.append(
                    f"{r['topic']}-{r['partition']}: the new target [{_fmt(r['target'])}] replaces "
                    f"the reassignment in flight to [{_fmt(r['replaces'])}]"
                )
        if ok:
            out.append(
                f"Successfully started partition reassignment{'s' if len(ok) > 1 else ''} for "
                + ",".join(f"{r['topic']}-{r['partition']}" for r in ok)
            )
        if self.failed:
            out.append(
                f"Error reassigning {len(self.failed)} partition(s) (the other "
                f"{len(ok)} in the same request stand):"
            )
            out += [f"  {r['topic']}-{r['partition']}: {r['error']}" for r in self.failed]
        for r in self.log_dir_rows:
            if r["error"]:
                out.append(
                    f"Replica {r['topic']}-{r['partition']} on broker {r['broker']}: move to "
                    f"{r['log_dir']} not started: {r['error']}"
                )
            else:
                out.append(
                    f"Started moving replica {r['topic']}-{r['partition']} on broker "
                    f"{r['broker']} to log dir {r['log_dir']}"
                )
        return out + self.notes


@defer_full_collections
def execute(
    gateway: Any,
    plan: Plan,
    *,
    additional: bool = False,
    throttle: int | None = None,
    log_dir_throttle: int | None = None,
    disallow_replication_factor_change: bool = False,
    timeout_s: float = 10.0,
    rollback_path: str | None = "",
    source: str = "the plan",
    elect_leaders: bool = False,
    require_broker_rf_guard: bool = False,
    plan_path: str | None = None,
    approval: Approval | None = None,
) -> ExecuteResult:
    """Legacy execution, as ``kafka-reassign-partitions --execute``: validate the whole plan,
    refuse when other reassignments are in flight unless ``additional``, write the rollback
    JSON, set the throttles the moves need, submit every move in one request, then start the
    moves between log dirs. Everything before the first change is ``engine.preflight`` (as for
    a paced run). ``rollback_path`` "" = a timestamped file in the working dir, None = do not
    write one (an existing file is never replaced). Pacing lives in ``engine/run.py``.

    Throttles restored, not deleted (issue 14 #11): the value each throttle config had before
    this request changed it (an operator's rate, their entries in a topic's list) is saved,
    before the change, to ``<rollback stem>.throttle-priors.json`` beside the rollback file
    (with the rollback file: without one, only in the result), for ``verify`` / ``cancel``
    (``priors=``, CLI ``--throttle-priors``) and ``reassign-kit throttles --clean --priors``
    to put back. When the submission fails as a whole (the controller refuses or times out:
    an exception) or every partition is rejected, the throttles it set are removed at once
    and the operator's values put back (issue 14 #5).

    ``elect_leaders`` (CLI ``--elect-leaders``; off by default, as the official tool): the
    moves that change only the replica order complete at once in Kafka; they are read back
    (for up to the metadata settle window) and their preferred leaders elected in one request
    (KIP-460), then checked (``ExecuteResult.elections``). A move that copies data is not
    waited for (the request stays a fire-and-forget, as the official tool's): ``verify(...,
    elect_leaders=True)`` elects its preferred leader once it sees it complete."""
    p = preflight(
        gateway,
        plan,
        ExecuteOptions(
            additional=additional,
            throttle=throttle or None,
            log_dir_throttle=log_dir_throttle or None,
            allow_replication_factor_change=not disallow_replication_factor_change,
            require_broker_rf_guard=require_broker_rf_guard,
            timeout_s=timeout_s,
        ),
        rollback_path=rollback_path,
        source=source,
        plan_path=plan_path,
        build_run=False,
        approval=approval,
    )
    in_flight, states, rollback, path = p.in_flight, p.states, p.rollback, p.rollback_path
    assert rollback is not None  # not a resume: the preflight wrote (or skipped) it
    with_dirs = any(m.log_dirs is not None for m in plan)

    targets = {m.tp: m.replicas for m in plan}
    notes: list[str] = []
    changes: tuple[dict, dict] = ({}, {})
    priors = thr.Priors()
    priors_path = thr.priors_path_for(path) if path else None

    def save_priors(new: thr.Priors) -> None:  # before the change is sent
        if priors_path:
            both = thr.Priors()
            both.update(priors)
            both.update(new)
            write_json(priors_path, {"throttle_priors": both.to_json(), "plan_source": source})

    if throttle is not None or log_dir_throttle is not None:
        required = thr.required_throttles(targets, states, in_flight)
        changes = thr.apply_throttles(
            gateway,
            required,
            throttle,
            log_dir_throttle,
            thr.log_dir_brokers(plan),
            in_flight=in_flight,
            priors=priors,
            on_prior=save_priors,
            on_skip=lambda skipped: notes.append(
                "Throttles not set on broker(s) "
                + ", ".join(str(b) for b in sorted(skipped, key=str))
                + ": not reachable (a stopped broker, KAFKA-13392); the moves were submitted "
                "anyway. Once it is back, `reassign-kit throttles --check` shows what is left "
                "and `--verify` or `reassign-kit throttles --clean` removes it."
            ),
        )
        if throttle is not None:
            notes.append(
                f"The inter-broker throttle limit was set to {throttle} B/s on brokers "
                f"{_fmt(sorted(required.brokers))}"
            )
        if log_dir_throttle is not None:
            notes.append(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
        notes.append(
            "Warning: run --verify periodically until the reassignment completes, so that the "
            "throttle is removed."
        )

    def undo_throttles() -> None:
        """Nothing was submitted: remove what was set for it, put the priors back."""
        if changes[0] or changes[1]:
            thr.clear_throttles(gateway, list(changes[0]), list(changes[1]), None, None, priors)

    try:
        results = gateway.alter_reassignments(
            targets, allow_replication_factor_change=not disallow_replication_factor_change
        )
    except BaseException:
        undo_throttles()
        raise
    if (changes[0] or changes[1]) and not any(m.tp in results and not results[m.tp] for m in plan):
        undo_throttles()
        notes = [
            "Nothing was submitted: the throttles set for it were removed (the values there "
            "before put back)."
        ]
    rows = []
    for m in plan:
        prev = in_flight.get(m.tp)
        rows.append(
            {
                "topic": m.topic,
                "partition": m.partition,
                "current": list(states[m.tp].replicas),
                "target": list(m.replicas),
                "replaces": list(prev.target) if prev is not None else None,
                "error": results[m.tp]
                if m.tp in results
                else "no answer from the controller for this partition",
            }
        )

    ok = {TopicPartition(r["topic"], r["partition"]) for r in rows if not r["error"]}
    log_dir_rows = []
    if with_dirs:
        wanted = log_dir_targets(m for m in plan if m.tp in ok)
        log_dir_rows = start_log_dir_moves(gateway, wanted, timeout_s)
    elections = None
    if elect_leaders and ok:
        elections = _elect_reorders(gateway, plan, states, ok, notes)
    if path:
        notes.insert(0, f"The rollback plan (the current assignment) was saved to {path}")
    notes[:0] = p.approval
    if priors and priors_path and ok:
        notes.append(
            f"The throttle configs as they were before were saved to {priors_path}: "
            f"`--verify --throttle-priors {priors_path}` (or `reassign-kit throttles --clean "
            f"--priors {priors_path}`) puts them back instead of deleting them."
        )
    return ExecuteResult(
        rows, rollback, path, changes, log_dir_rows, notes, priors, priors_path, elections
    )


def _elect_reorders(
    gateway: Any,
    plan: Plan,
    states: Mapping[TopicPartition, PartitionState],
    ok: set[TopicPartition],
    notes: list[str],
) -> ElectionResult | None:
    """``execute(elect_leaders=True)``: the submitted moves that changed the preferred leader
    and only the replica order (complete at once in Kafka) are read back until complete and
    elected; those that copy data are named for ``--verify --elect-leaders``."""
    changed = [
        m
        for m in plan
        if m.tp in ok and states[m.tp].replicas and states[m.tp].replicas[0] != m.replicas[0]
    ]
    reorders = {m.tp: m.replicas for m in changed if set(states[m.tp].replicas) == set(m.replicas)}
    copying = [m.tp for m in changed if m.tp not in reorders]
    result = None
    if reorders:
        now = gateway.describe_partitions(list(reorders))
        for _ in range(SETTLE_ATTEMPTS):
            if all(is_complete(t, now.get(tp)) for tp, t in reorders.items()):
                break
            gateway.sleep(SETTLE_PAUSE_S)
            now.update(gateway.describe_partitions(list(reorders)))
        complete = {tp: now[tp] for tp, t in reorders.items() if is_complete(t, now.get(tp))}
        late = [tp for tp in reorders if tp not in complete]
        result = elect_preferred(gateway, complete)
        notes += result.lines()
        copying += late
    if copying:
        notes.append(
            f"{len(copying)} move(s) change their preferred leader once complete (e.g. "
            f"{copying[0]}): run --verify --elect-leaders until the reassignment completes; "
            "it elects their preferred leaders."
        )
    return result


# ----------------------------------------------------------------------------- verify

COMPLETE = "complete"
IN_PROGRESS = "in progress"
MISMATCH = "mismatch"
MISSING = "missing"


@dataclass
class VerifyResult:
    rows: list[dict[str, Any]]
    log_dir_rows: list[dict[str, Any]]
    cleared: tuple[dict, dict] | None
    notes: list[str] = field(default_factory=list)
    # --elect-leaders: the elections of the plan's complete partitions, and the check after
    elections: ElectionResult | None = None

    def _statuses(self) -> set[str]:
        return {r["status"] for r in self.rows} | {r["status"] for r in self.log_dir_rows}

    @property
    def complete(self) -> bool:
        return self._statuses() <= {COMPLETE}

    @property
    def exit_code(self) -> int:
        s = self._statuses()
        if s & {MISMATCH, MISSING}:
            return EXIT_MISMATCH
        if IN_PROGRESS in s:
            return EXIT_IN_PROGRESS
        return 0

    def to_pandas(self) -> Any:
        return _table(
            self.rows, ["topic", "partition", "status", "target", "replicas", "adding", "removing"]
        )

    def lines(self) -> list[str]:
        out = ["Status of partition reassignment:"]
        for r in self.rows:
            tp = f"{r['topic']}-{r['partition']}"
            if r["status"] == COMPLETE:
                out.append(f"Reassignment of partition {tp} is completed.")
            elif r["status"] == IN_PROGRESS:
                out.append(
                    f"Reassignment of partition {tp} is still in progress "
                    f"(replicas {_fmt(r['replicas'])}, adding {_fmt(r['adding'])}, "
                    f"removing {_fmt(r['removing'])})."
                )
            elif r["status"] == MISSING:
                out.append(f"Partition {tp} does not exist in the cluster.")
            else:
                other = r.get("other_target")
                out.append(
                    f"There is an active reassignment of partition {tp} to "
                    f"[{_fmt(other)}], not to the plan's [{_fmt(r['target'])}]."
                    if other
                    else f"There is no active reassignment of partition {tp}, but replica set "
                    f"is [{_fmt(r['replicas'])}] rather than [{_fmt(r['target'])}]."
                )
        if self.log_dir_rows:
            out.append("")
            out.append("Reassignment of replicas between log dirs:")
            for r in self.log_dir_rows:
                rep = f"{r['topic']}-{r['partition']} on broker {r['broker']}"
                if r["status"] == COMPLETE:
                    out.append(f"Reassignment of replica {rep} to {r['log_dir']} is completed.")
                elif r["status"] == IN_PROGRESS:
                    out.append(
                        f"Reassignment of replica {rep} to {r['log_dir']} is still in progress."
                    )
                else:
                    out.append(
                        f"Replica {rep} is in {r['current'] or 'no live log dir'}, "
                        f"not in {r['log_dir']}."
                    )
        return out + self.notes


def _classify(target: tuple[int, ...], st: PartitionState | None) -> str:
    if st is None:
        return MISSING
    if is_complete(target, st):
        return COMPLETE
    if st.reassigning:
        # Moving toward the plan's target (same set): in progress; elsewhere: a mismatch.
        return IN_PROGRESS if set(st.target) == set(target) else MISMATCH
    return MISMATCH


def settle(
    gateway: Any,
    states: dict[TopicPartition, PartitionState],
    suspect: Any,
    attempts: int = SETTLE_ATTEMPTS,
    pause_s: float | None = None,
) -> dict[TopicPartition, PartitionState]:
    """Re-read the partitions for which ``suspect(tp, state)`` holds, a few times: metadata
    reaches brokers asynchronously, so right after a move ends or is cancelled a broker may
    still report the intermediate replica set while the controller says it is not reassigning
    (KIP-860's race, where the official tool reports a false mismatch)."""
    for _ in range(attempts):
        again = [tp for tp, st in states.items() if suspect(tp, st)]
        if not again:
            break
        gateway.sleep(SETTLE_PAUSE_S if pause_s is None else pause_s)  # its clock (model time)
        states.update(gateway.describe_partitions(again))
    return states


def _settled_states(gateway: Any, plan: Plan) -> dict[TopicPartition, PartitionState]:
    targets = {m.tp: m.replicas for m in plan}
    return settle(
        gateway,
        gateway.describe_partitions(list(targets)),
        lambda tp, st: (
            not st.reassigning
            and not is_complete(targets[tp], st)
            and set(targets[tp]) < set(st.replicas)  # target + the replicas being removed
        ),
    )


def verify(
    gateway: Any,
    plan: Plan,
    *,
    preserve_throttles: bool = False,
    priors: thr.Priors | str | None = None,
    elect_leaders: bool = False,
) -> VerifyResult:
    """Is every move of the plan complete (``model.is_complete``), its replicas in the asked log
    dirs? Once nothing of the plan is in progress, clear the throttles of the plan's topics and
    every broker, except what reassignments still in flight elsewhere need; with ``priors``
    (what ``execute`` saved, or a run's journal) the values there before are put back and
    only the configs that run changed are touched (an operator's rate on a broker it never
    throttled stays).

    ``elect_leaders`` (CLI ``--verify --elect-leaders``, the panel's Verify with its "elect
    preferred leaders" box): each complete partition of the plan that another replica than
    its first leads gets a preferred leader election (KIP-460, one request), and every
    complete partition is checked (``VerifyResult.elections``; those not led by their
    preferred replica named with why). The exit code stays the reassignment's."""
    priors = thr.load_priors(priors)
    tps = [m.tp for m in plan]
    require_permissions(gateway, "verify", ["DESCRIBE"])
    states = _settled_states(gateway, plan)
    rows = []
    for m in plan:
        st = states.get(m.tp)
        status = _classify(m.replicas, st)
        rows.append(
            {
                "topic": m.topic,
                "partition": m.partition,
                "status": status,
                "target": list(m.replicas),
                "replicas": list(st.replicas) if st else [],
                "adding": list(st.adding) if st else [],
                "removing": list(st.removing) if st else [],
                "other_target": list(st.target)
                if st is not None and st.reassigning and status == MISMATCH
                else None,
            }
        )
    log_dir_rows = []
    wanted = log_dir_targets(plan)
    if wanted:
        cur, fut = replica_log_dirs(gateway, tps, {b for _, b in wanted})
        for (tp, b), d in sorted(wanted.items()):
            if cur.get((tp, b)) == d and (tp, b) not in fut:
                status = COMPLETE
            elif fut.get((tp, b)) == d or states.get(tp) is not None and states[tp].reassigning:
                status = IN_PROGRESS
            else:
                status = MISMATCH
            log_dir_rows.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "broker": b,
                    "log_dir": d,
                    "current": cur.get((tp, b)),
                    "future": fut.get((tp, b)),
                    "status": status,
                }
            )
    result = VerifyResult(rows, log_dir_rows, None)
    if elect_leaders:
        complete = {
            TopicPartition(r["topic"], r["partition"]): states[
                TopicPartition(r["topic"], r["partition"])
            ]
            for r in rows
            if r["status"] == COMPLETE
        }
        if complete:
            result.elections = elect_preferred(gateway, complete)
            result.notes += result.elections.lines()
    lacking = missing_permissions(gateway, ["DESCRIBE_CONFIGS", "ALTER_CONFIGS"])
    if IN_PROGRESS not in result._statuses() and not preserve_throttles and lacking:
        result.notes.append(
            "Throttles not removed: this client's principal lacks "
            + " and ".join(lacking)
            + " on the CLUSTER resource (kafka-cluster), needed to remove the throttle configs "
            "of brokers and topics. Run --verify again as a principal that has it, so that no "
            "throttle is left."
        )
    elif IN_PROGRESS not in result._statuses() and not preserve_throttles:
        # with the run's priors (its record), only what that run changed is touched (issue 19
        # item 6); without, every broker's rate goes, as the official tool does
        result.cleared = thr.clear_throttles(
            gateway, plan.topics(), priors=priors, only_recorded=priors is not None
        )
        kept = {
            t: kv for t, kv in result.cleared[0].items() if any(v is not None for v in kv.values())
        }
        result.notes.append(
            "Throttles removed from topics "
            + ",".join(plan.topics())
            + " and from brokers no other reassignment in flight needs"
            + (f" (kept for moves still in flight: {', '.join(sorted(kept))})" if kept else "")
            + "."
            + (" The values there before were put back." if priors else "")
        )
    elif preserve_throttles:
        result.notes.append("Throttles preserved (--preserve-throttles).")
    return result


# ----------------------------------------------------------------------------- cancel


ROLLBACK_TIMEOUT_S = 300.0  # how long a cancel waits for the partitions to be back


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
        return _table(rows, ["topic", "partition", "result"])

    def lines(self) -> list[str]:
        out = []
        if self.reverted:
            out.append(
                "Successfully cancelled reassignment of partitions "
                + ",".join(str(tp) for tp in self.reverted)
            )
        if self.log_dir_cancelled:
            out.append(
                "Successfully cancelled movement of replicas between log dirs: "
                + ",".join(f"{tp}@{b}" for tp, b in self.log_dir_cancelled)
            )
        if self.cancelled:
            out.append(
                "Rolled back to their original replica lists (order and preferred leader "
                "included), verified:"
            )
            out += [f"  {tp}: back at its original replicas [{_fmt(self.originals[tp])}]"
                    for tp in self.cancelled]  # fmt: skip
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
                out.append(f"  {tp}: original [{_fmt(orig)}], now [{_fmt(now)}]")
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
        for tp, e in self.leader_not_restored.items():
            out.append(
                f"  {tp}: its original leader {self.originals[tp][0]} could not be elected "
                f"({e}); kafka-leader-election --election-type PREFERRED moves it back"
            )
        if self.cleared is not None:
            out.append("Throttles no remaining reassignment needs were removed.")
        return out


def _originals_from(
    rollback_file: str | None, journal: str | None
) -> tuple[Plan | None, dict[TopicPartition, tuple[int, ...]], set[TopicPartition], int | None]:
    """(the journaled plan, original replica lists, journaled completions, throttle rate)
    from a run's journal and / or a rollback file; where both name a partition they must
    agree (order included), else nothing is sent and both lists are named
    (``rollback.merge_originals``; before, the journal's silently won)."""
    from .engine.resume import journaled_run

    plan, completed, rate = None, set(), None
    sources: dict[str, dict[TopicPartition, tuple[int, ...]]] = {}
    if journal:
        jr = journaled_run(journal)
        plan, completed, rate = jr.plan, jr.completed, jr.options.throttle
        sources[f"the journal {journal}"] = jr.originals
    if rollback_file:
        if not os.path.exists(rollback_file):
            raise UsageError(f"--rollback-file {rollback_file}: no such file")
        rb = {m.tp: tuple(m.replicas) for m in Plan.read(rollback_file)}
        sources[f"--rollback-file {rollback_file}"] = rb
    return plan, merge_originals(sources), completed, rate


def cancel(
    gateway: Any,
    plan: Plan | None = None,
    *,
    topics: Iterable[str] | None = None,
    all: bool = False,
    preserve_throttles: bool = False,
    rollback_file: str | None = None,
    journal: str | None = None,
    throttle: int | None = None,
    timeout_s: float = ROLLBACK_TIMEOUT_S,
    priors: thr.Priors | str | None = None,
) -> CancelResult:
    """Cancel means rollback. The partitions: the plan's (or the plan a ``journal`` holds),
    every partition of ``topics`` in flight, or ``all`` in flight (KIP-455's three levels).

    Each one in flight is cancelled (Kafka puts it back where that reassignment started and
    deletes the replicas it added); then every partition not back at its ORIGINAL replica
    list — the one before the run, which for a KIP-435 stepped move is not where its last step
    started — gets a reassignment back to that list (throttled at ``throttle``, or the
    journal's rate), in order, so the preferred leader is the original one too; the cancel
    waits up to ``timeout_s`` and verifies. Originals come from the run's ``journal``, the
    ``rollback_file`` --execute saved, else (a move in flight) from the cluster. A partition
    already at the plan's target is left there (completed). Throttles removed put back the
    values there before: ``priors`` (legacy --execute's priors file), else the journal's."""
    chosen = [plan is not None, topics is not None, all]
    if sum(chosen) > 1 or (sum(chosen) == 0 and journal is None):
        raise UsageError("cancel needs exactly one of a plan (or a journal), topics, or all")
    require_permissions(
        gateway,
        "cancel",
        ["DESCRIBE", "ALTER"]
        + ([] if preserve_throttles else ["DESCRIBE_CONFIGS", "ALTER_CONFIGS"]),
        hint="" if preserve_throttles else "or cancel with --preserve-throttles",
    )
    j_plan, known, j_completed, j_rate = _originals_from(rollback_file, journal)
    if not any(chosen):  # --journal alone: the journaled run's plan
        plan = j_plan
    if journal is not None and plan is None and topics is None and not all:
        raise UsageError(
            f"--journal {journal}: the journal holds no plan (too large to inline, and its "
            "plan file is gone): give --reassignment-json-file too"
        )
    rate = throttle if throttle is not None else j_rate
    if priors is None and journal is not None:
        from .engine.journal import read_events

        priors = thr.Priors.from_events(read_events(journal))
    priors = thr.load_priors(priors)
    in_flight = gateway.list_reassignments()
    if plan is not None:
        wanted = [m.tp for m in plan]
    elif topics is not None:
        ts = set(topics)
        wanted = sorted(tp for tp in in_flight if tp.topic in ts)
    else:
        wanted = sorted(in_flight)
    targets = {m.tp: tuple(m.replicas) for m in plan} if plan is not None else {}
    # where each started: the journal / rollback file, else the reassignment in flight's own
    originals = {
        tp: tuple(r for r in in_flight[tp].replicas if r not in in_flight[tp].adding)
        for tp in wanted
        if tp in in_flight
    }
    originals.update({tp: o for tp, o in known.items() if tp in set(wanted)})
    moving = [tp for tp in wanted if tp in in_flight]
    results = gateway.alter_reassignments(dict.fromkeys(moving)) if moving else {}
    reverted = [tp for tp in moving if tp in results and results[tp] is None]
    errors = {
        tp: (results.get(tp) or "no answer from the controller")
        for tp in moving
        if tp not in reverted
    }
    # NoReassignmentInProgress: it finished between list and cancel; not an error.
    finished = [tp for tp, e in errors.items() if no_reassignment_in_progress(e)]
    for tp in finished:
        del errors[tp]

    states = gateway.describe_partitions([tp for tp in wanted if tp not in errors])
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
            (
                completed if tp in finished or tp in j_completed or tp in known else not_moving
            ).append(tp)
        elif orig is None or (tp in j_completed and tp not in reverted):
            (unknown if tp in targets and not st.reassigning else not_moving).append(tp)
        elif is_complete(orig, st):
            (cancelled if tp in reverted else not_moving).append(tp)
        else:
            back[tp] = orig
    if back:
        cancelled_back, rolling, refused = roll_back(gateway, back, states, rate, timeout_s, priors)
        cancelled += cancelled_back
        errors.update(refused)
    else:
        rolling = {}
    cancelled.sort(key=wanted.index)
    leader_not_restored = restore_leaders(gateway, {tp: originals[tp] for tp in cancelled})

    log_dir_cancelled: list[tuple[TopicPartition, int]] = []
    if plan is not None and any(m.log_dirs is not None for m in plan):
        brokers = {b for m in plan if m.log_dirs is not None for b in m.replicas}
        cur, fut = replica_log_dirs(gateway, [m.tp for m in plan], brokers)
        back_dirs = {key: cur[key] for key in fut if key in cur}
        if back_dirs:
            res = gateway.alter_replica_log_dirs(back_dirs)
            log_dir_cancelled = sorted(k for k, e in res.items() if e is None)

    cleared = None
    touched = {tp.topic for tp in [*reverted, *back]} | {tp.topic for tp, _ in log_dir_cancelled}
    if not preserve_throttles:
        # as the official tool (and its ReassignPartitionsCommandTest): without
        # --preserve-throttles the throttles go even when nothing was moving any more (e.g.
        # after an earlier --cancel --preserve-throttles), except what moves in flight need;
        # the operator's values recorded before are put back (issue 14 #13)
        named = set(plan.topics()) if plan is not None else set(topics or ())
        cleared = thr.clear_throttles(
            gateway, sorted(touched | named), priors=priors, only_recorded=priors is not None
        )
    return CancelResult(
        cancelled,
        sorted(not_moving),
        errors,
        log_dir_cancelled,
        cleared,
        rollback_file,
        completed=completed,
        rolling_back=rolling,
        unknown=unknown,
        reverted=reverted,
        originals={tp: originals[tp] for tp in cancelled},
        journal=journal,
        leader_not_restored=leader_not_restored,
    )


def cancel_run(gateway: Any, journal: str, **kwargs: Any) -> CancelResult:
    """Roll back the run journaled at ``journal`` (its plan, originals and throttle rate)."""
    return cancel(gateway, None, journal=journal, **kwargs)


# ----------------------------------------------------------------------------- list


@dataclass
class ListResult:
    states: dict[TopicPartition, PartitionState]

    def plan(self) -> Plan:
        """The in-flight reassignments in the input format: each partition's target."""
        return Plan.of(Move(tp, st.target) for tp, st in self.states.items())

    def to_json(self, indent: int | None = None) -> str:
        return self.plan().to_json(indent) if self.states else "{}"

    def to_pandas(self) -> Any:
        rows = [
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "replicas": list(st.replicas),
                "adding": list(st.adding),
                "removing": list(st.removing),
                "target": list(st.target),
            }
            for tp, st in sorted(self.states.items())
        ]
        return _table(rows, ["topic", "partition", "replicas", "adding", "removing", "target"])

    def lines(self) -> list[str]:
        if not self.states:
            return ["No partition reassignments found."]
        out = ["Current partition reassignments:"]
        for tp, st in sorted(self.states.items()):
            out.append(
                f"{tp}: replicas: {_fmt(st.replicas)}. adding: {_fmt(st.adding)}. "
                f"removing: {_fmt(st.removing)}."
            )
        return out


def list_reassignments(gateway: Any) -> ListResult:
    """Every reassignment in flight on the cluster (from the controller)."""
    require_permissions(gateway, "list", ["DESCRIBE"])
    return ListResult(dict(sorted(gateway.list_reassignments().items())))


def write_json(path: str, obj: Any) -> None:
    """Write ``obj`` as JSON atomically (a temporary file, then rename), mode 0600."""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # a leftover .tmp from a killed writer keeps its old mode otherwise
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def progress(gateway: Any, plan: Any, journal: Any = None, **kwargs: Any) -> Any:
    """KIP-179 progress report of ``plan``: see ``progress.report`` (``.to_pandas()``)."""
    from .engine.progress import report

    kwargs.pop("command_config", None)  # a gateway is connected already
    return report(gateway, plan, journal, **kwargs)
