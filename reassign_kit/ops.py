"""The Python API: execute (legacy single request), verify, cancel, list_reassignments.

Usable from a notebook, a script and the CLI alike: every function takes a gateway (``connect``
builds the real one) and returns a result object with ``lines()`` (what the CLI prints),
``exit_code`` where it means something, and ``to_pandas()``. Nothing is sent before the whole
plan validates; throttles are set before a move and removed only when no move needs them.
"""

from __future__ import annotations

import json
import os
import time
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
from .engine.logdirs import (  # noqa: F401
    RETRIABLE_LOG_DIR_ERRORS,
    log_dir_round,
    log_dir_targets,
    start_log_dir_moves,
)
from .engine.options import ExecuteOptions
from .engine.preflight import preflight, write_rollback  # noqa: F401
from .errors import (  # noqa: F401 (ReassignmentInProgressError, EXIT_*: re-exported)
    EXIT_IN_PROGRESS,
    EXIT_MISMATCH,
    KafkaOperationError,
    ReassignKitError,
    ReassignmentInProgressError,
    UsageError,
)
from .model import Move, PartitionState, Plan, TopicPartition, is_complete

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
    """An ``admin.AdminGateway``; ``command_config`` is a dict or a .properties path."""
    from .cluster.admin import AdminGateway

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
) -> ExecuteResult:
    """Legacy execution, as ``kafka-reassign-partitions --execute``: validate the whole plan,
    refuse when other reassignments are in flight unless ``additional``, write the rollback
    JSON, set the throttles the moves need, submit every move in one request, then start the
    moves between log dirs. Everything before the first change is ``engine.preflight`` (as for
    a paced run). ``rollback_path`` "" = a timestamped file in the working dir, None = do not
    write one (an existing file is never replaced). Pacing lives in ``engine/run.py``."""
    p = preflight(
        gateway,
        plan,
        ExecuteOptions(
            additional=additional,
            throttle=throttle or None,
            log_dir_throttle=log_dir_throttle or None,
            allow_replication_factor_change=not disallow_replication_factor_change,
            timeout_s=timeout_s,
        ),
        rollback_path=rollback_path,
        source=source,
        build_run=False,
    )
    in_flight, states, rollback, path = p.in_flight, p.states, p.rollback, p.rollback_path
    assert rollback is not None  # not a resume: the preflight wrote (or skipped) it
    with_dirs = any(m.log_dirs is not None for m in plan)

    targets = {m.tp: m.replicas for m in plan}
    notes: list[str] = []
    changes: tuple[dict, dict] = ({}, {})
    if throttle is not None or log_dir_throttle is not None:
        required = thr.required_throttles(targets, states, in_flight)
        changes = thr.apply_throttles(
            gateway, required, throttle, log_dir_throttle, thr.log_dir_brokers(plan)
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

    results = gateway.alter_reassignments(
        targets, allow_replication_factor_change=not disallow_replication_factor_change
    )
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
    if path:
        notes.insert(0, f"The rollback plan (the current assignment) was saved to {path}")
    return ExecuteResult(rows, rollback, path, changes, log_dir_rows, notes)


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
        time.sleep(SETTLE_PAUSE_S if pause_s is None else pause_s)
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


def verify(gateway: Any, plan: Plan, *, preserve_throttles: bool = False) -> VerifyResult:
    """Is every move of the plan complete (``model.is_complete``), its replicas in the asked log
    dirs? Once nothing of the plan is in progress, clear the throttles of the plan's topics and
    every broker, except what reassignments still in flight elsewhere need."""
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
        result.cleared = thr.clear_throttles(gateway, plan.topics())
        kept = {
            t: kv for t, kv in result.cleared[0].items() if any(v is not None for v in kv.values())
        }
        result.notes.append(
            "Throttles removed from topics "
            + ",".join(plan.topics())
            + " and from brokers no other reassignment in flight needs"
            + (f" (kept for moves still in flight: {', '.join(sorted(kept))})" if kept else "")
            + "."
        )
    elif preserve_throttles:
        result.notes.append("Throttles preserved (--preserve-throttles).")
    return result


# ----------------------------------------------------------------------------- cancel


@dataclass
class CancelResult:
    cancelled: list[TopicPartition]
    not_moving: list[TopicPartition]
    errors: dict[TopicPartition, str]
    grown: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]]
    log_dir_cancelled: list[tuple[TopicPartition, int]]
    cleared: tuple[dict, dict] | None
    rollback_file: str | None = None

    @property
    def exit_code(self) -> int:
        return KafkaOperationError.exit_code if self.errors else 0

    def to_pandas(self) -> Any:
        rows = [
            {"topic": tp.topic, "partition": tp.partition, "result": "cancelled"}
            for tp in self.cancelled
        ]
        rows += [
            {"topic": tp.topic, "partition": tp.partition, "result": "not moving"}
            for tp in self.not_moving
        ]
        rows += [
            {"topic": tp.topic, "partition": tp.partition, "result": e}
            for tp, e in self.errors.items()
        ]
        return _table(rows, ["topic", "partition", "result"])

    def lines(self) -> list[str]:
        out = []
        if self.cancelled:
            out.append(
                "Successfully cancelled reassignment of partitions "
                + ",".join(str(tp) for tp in self.cancelled)
            )
        if self.log_dir_cancelled:
            out.append(
                "Successfully cancelled movement of replicas between log dirs: "
                + ",".join(f"{tp}@{b}" for tp, b in self.log_dir_cancelled)
            )
        if self.not_moving:
            out.append(
                "Not moving, nothing to cancel: " + ",".join(str(tp) for tp in self.not_moving)
            )
        if not self.cancelled and not self.log_dir_cancelled and not self.errors:
            out.append("None of the specified partition reassignments are active.")
        for tp, e in self.errors.items():
            out.append(f"Could not cancel {tp}: {e}")
        if self.grown:
            out.append(
                "Note: a cancelled reassignment keeps the new replicas that already joined the "
                "ISR (KIP-455), so these partitions now have more replicas than before:"
            )
            for tp, (before, after) in self.grown.items():
                out.append(f"  {tp}: was [{_fmt(before)}], now [{_fmt(after)}]")
            out.append(
                "  Run the rollback plan to return them to their original replicas"
                + (
                    f": {self.rollback_file}"
                    if self.rollback_file
                    else " (the file --execute saved)."
                )
            )
        if self.cleared is not None:
            out.append("Throttles no remaining reassignment needs were removed.")
        return out


def cancel(
    gateway: Any,
    plan: Plan | None = None,
    *,
    topics: Iterable[str] | None = None,
    all: bool = False,
    preserve_throttles: bool = False,
    rollback_file: str | None = None,
) -> CancelResult:
    """Cancel the reassignments of the plan's partitions, of every partition of ``topics``, or
    ``all`` of them (KIP-455's three levels). Only partitions actually moving are sent."""
    chosen = [plan is not None, topics is not None, all]
    if sum(chosen) != 1:
        raise UsageError("cancel needs exactly one of a plan, topics, or all")
    require_permissions(
        gateway,
        "cancel",
        ["DESCRIBE", "ALTER"]
        + ([] if preserve_throttles else ["DESCRIBE_CONFIGS", "ALTER_CONFIGS"]),
        hint="" if preserve_throttles else "or cancel with --preserve-throttles",
    )
    in_flight = gateway.list_reassignments()
    if plan is not None:
        wanted = [m.tp for m in plan]
    elif topics is not None:
        ts = set(topics)
        wanted = sorted(tp for tp in in_flight if tp.topic in ts)
    else:
        wanted = sorted(in_flight)
    moving = [tp for tp in wanted if tp in in_flight]
    not_moving = [tp for tp in wanted if tp not in in_flight]
    results = gateway.alter_reassignments(dict.fromkeys(moving)) if moving else {}
    cancelled = [tp for tp in moving if results.get(tp) is None and tp in results]
    errors = {
        tp: (results.get(tp) or "no answer from the controller")
        for tp in moving
        if tp not in cancelled
    }
    # NoReassignmentInProgress: it finished between list and cancel; not an error.
    for tp in [tp for tp, e in errors.items() if no_reassignment_in_progress(e)]:
        del errors[tp]
        not_moving.append(tp)

    log_dir_cancelled: list[tuple[TopicPartition, int]] = []
    if plan is not None and any(m.log_dirs is not None for m in plan):
        brokers = {b for m in plan if m.log_dirs is not None for b in m.replicas}
        cur, fut = replica_log_dirs(gateway, [m.tp for m in plan], brokers)
        back = {key: cur[key] for key in fut if key in cur}
        if back:
            res = gateway.alter_replica_log_dirs(back)
            log_dir_cancelled = sorted(k for k, e in res.items() if e is None)

    grown = {}
    if cancelled:
        originals = {
            tp: tuple(r for r in in_flight[tp].replicas if r not in in_flight[tp].adding)
            for tp in cancelled
        }
        after = settle(
            gateway,
            gateway.describe_partitions(cancelled),
            lambda tp, st: st.reassigning or len(st.replicas) > len(originals[tp]),
        )
        for tp in cancelled:
            now = after.get(tp)
            if now is not None and len(now.replicas) > len(originals[tp]):
                grown[tp] = (originals[tp], now.replicas)

    cleared = None
    if not preserve_throttles and (cancelled or log_dir_cancelled):
        cleared = thr.clear_throttles(
            gateway,
            sorted({tp.topic for tp in cancelled} | {tp.topic for tp, _ in log_dir_cancelled}),
        )
    return CancelResult(
        cancelled, sorted(not_moving), errors, grown, log_dir_cancelled, cleared, rollback_file
    )


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
