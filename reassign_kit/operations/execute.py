"""The Python API: execute (legacy single request), verify, cancel, list_reassignments.

Usable from a notebook, a script and the CLI alike: every function takes a gateway (``connect``
builds the real one) and returns a result object with ``lines()`` (what the CLI prints),
``exit_code`` where it means something, and ``to_pandas()``. Nothing is sent before the whole
plan validates; throttles are set before a move and removed only when no move needs them.

Verify and cancel live in ``ops_verify`` and ``ops_cancel`` (their names importable from here
too), the result tables' pieces in ``ops_tables``; here the connection, the legacy execute,
the listing.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# re-exported: these lived here before cluster/views.py and run/logdirs.py held them
from ..cluster.views import (
    cluster_view,
    require_permissions,
)
from ..errors import (
    KafkaOperationError,
    UsageError,
)
from ..model import Move, PartitionState, Plan, TopicPartition, is_complete
from ..planner.record import Approval
from ..run.elections import ElectionResult, elect_preferred
from ..run.gcpause import defer_full_collections
from ..run.logdirs import (
    log_dir_targets,
    start_log_dir_moves,
)
from ..run.options import ExecuteOptions
from ..run.preflight import preflight
from ..throttles import configs as thr
from ..throttles import priors as priors_mod
from ..validate import validate_plan
from .tables import (
    fmt_replicas,
    rows_table,
)
from .verify import (
    SETTLE_ATTEMPTS,
    SETTLE_PAUSE_S,
)

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
    from ..cluster.admin import AdminGateway
    from ..cluster.simfile import SIM_PREFIX, FileSim, is_sim

    if is_sim(bootstrap_servers):
        return FileSim(bootstrap_servers[len(SIM_PREFIX) :])

    if isinstance(command_config, str):
        command_config = load_command_config(command_config)
    return AdminGateway(bootstrap_servers, command_config, timeout_s=timeout_s)


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
        return rows_table(
            self.rows, ["topic", "partition", "current", "target", "replaces", "error"]
        )

    def lines(self) -> list[str]:
        out = []
        ok = [r for r in self.rows if not r["error"]]
        for r in self.rows:
            if r["replaces"] is not None and not r["error"]:
                out.append(
                    f"{r['topic']}-{r['partition']}: the new target [{fmt_replicas(r['target'])}] replaces "
                    f"the reassignment in flight to [{fmt_replicas(r['replaces'])}]"
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
    say: Callable[[list[str]], None] | None = None,
) -> ExecuteResult:
    """Legacy execution, as ``kafka-reassign-partitions --execute``: validate the plan
    (``run.preflight``), refuse other reassignments in flight unless ``additional``, write the
    rollback JSON (``rollback_path`` "" = a timestamped file here, None = none), set the
    throttles the moves need (the values they replace saved first, for verify / cancel /
    ``throttles --clean`` to put back), submit every move in one request (a refusal of all
    removes the throttles at once), then start the moves between log dirs. ``elect_leaders``:
    the moves that only reorder replicas get their preferred leaders elected (KIP-460).
    ``say``: hears the approval's lines (the plan's drift under --allow-drift) once the checks
    pass and before anything is sent; without it they lead the result's notes."""
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
    if say is not None:  # the drift run despite is said before a throttle or a move is sent
        say(list(p.approval))
    with_dirs = any(m.log_dirs is not None for m in plan)
    notes: list[str] = []
    priors = thr.Priors()
    priors_path = priors_mod.priors_path_for(path) if path else None
    changes: tuple[dict, dict] = ({}, {})
    if throttle is not None or log_dir_throttle is not None:
        changes = _set_throttles(
            gateway, plan, p, throttle, log_dir_throttle, priors, priors_path, source, notes
        )
    results = _submit(gateway, plan, not disallow_replication_factor_change, changes, priors)
    if results is None:
        notes = [
            "Nothing was submitted: the throttles set for it were removed (the values there "
            "before put back)."
        ]
        results = {}
    rows = _rows(plan, in_flight, states, results)
    ok = {TopicPartition(r["topic"], r["partition"]) for r in rows if not r["error"]}
    log_dir_rows = []
    if with_dirs:
        wanted = log_dir_targets(m for m in plan if m.tp in ok)
        log_dir_rows = start_log_dir_moves(gateway, wanted, timeout_s)
    elections = None
    if elect_leaders and ok:
        elections = _elect_reorders(gateway, plan, states, ok, notes)
    notes = _framed(
        notes, [] if say else list(p.approval), path, priors_path if priors and ok else None
    )
    return ExecuteResult(
        rows, rollback, path, changes, log_dir_rows, notes, priors, priors_path, elections
    )


def _framed(
    notes: list[str], approval: list[str], rollback_path: str | None, priors_path: str | None
) -> list[str]:
    """The result's notes: the approval's lines (when not said before the send), where the
    rollback plan and the throttle priors were saved."""
    head = [*approval]
    if rollback_path:
        head.append(f"The rollback plan (the current assignment) was saved to {rollback_path}")
    tail = []
    if priors_path:
        tail.append(
            f"The throttle configs as they were before were saved to {priors_path}: "
            f"`--verify --throttle-priors {priors_path}` (or `reassign-kit throttles --clean "
            f"--priors {priors_path}`) puts them back instead of deleting them."
        )
    return [*head, *notes, *tail]


def _set_throttles(
    gateway: Any,
    plan: Plan,
    p: Any,
    throttle: int | None,
    log_dir_throttle: int | None,
    priors: thr.Priors,
    priors_path: str | None,
    source: str,
    notes: list[str],
) -> tuple[dict, dict]:
    """The throttles the plan's moves need, set before anything is submitted; the values they
    replace saved first (``priors_path``); what was done said in ``notes``."""

    def save_priors(new: thr.Priors) -> None:  # before the change is sent
        if priors_path:
            both = thr.Priors()
            both.update(priors)
            both.update(new)
            write_json(priors_path, {"throttle_priors": both.to_json(), "plan_source": source})

    required = thr.required_throttles({m.tp: m.replicas for m in plan}, p.states, p.in_flight)
    changes = thr.apply_throttles(
        gateway,
        required,
        throttle,
        log_dir_throttle,
        thr.log_dir_brokers(plan),
        in_flight=p.in_flight,
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
            f"{fmt_replicas(sorted(required.brokers))}"
        )
    if log_dir_throttle is not None:
        notes.append(f"The replica-alter-dir throttle limit was set to {log_dir_throttle} B/s")
    notes.append(
        "Warning: run --verify periodically until the reassignment completes, so that the "
        "throttle is removed."
    )
    return changes


def _submit(
    gateway: Any,
    plan: Plan,
    allow_rf_change: bool,
    changes: tuple[dict, dict],
    priors: thr.Priors,
) -> dict[TopicPartition, str | None] | None:
    """Every move in one request; None when nothing was accepted and the throttles set for it
    were removed (the operator's values put back), as when the request itself failed."""

    def undo_throttles() -> None:
        if changes[0] or changes[1]:
            thr.clear_throttles(gateway, list(changes[0]), list(changes[1]), None, None, priors)

    try:
        results = gateway.alter_reassignments(
            {m.tp: m.replicas for m in plan}, allow_replication_factor_change=allow_rf_change
        )
    except BaseException:
        undo_throttles()
        raise
    if (changes[0] or changes[1]) and not any(m.tp in results and not results[m.tp] for m in plan):
        undo_throttles()
        return None
    return results


def _rows(
    plan: Plan,
    in_flight: Mapping[TopicPartition, Any],
    states: Mapping[TopicPartition, Any],
    results: Mapping[TopicPartition, str | None],
) -> list[dict[str, Any]]:
    """One row per move: where it was, where it goes, what it replaced, the controller's
    answer."""
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
    return rows


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
        return rows_table(rows, ["topic", "partition", "replicas", "adding", "removing", "target"])

    def lines(self) -> list[str]:
        if not self.states:
            return ["No partition reassignments found."]
        out = ["Current partition reassignments:"]
        for tp, st in sorted(self.states.items()):
            out.append(
                f"{tp}: replicas: {fmt_replicas(st.replicas)}. adding: {fmt_replicas(st.adding)}. "
                f"removing: {fmt_replicas(st.removing)}."
            )
        return out


def list_reassignments(
    gateway: Any, plan: Plan | None = None, source: str = "the plan"
) -> ListResult:
    """Every reassignment in flight on the cluster (from the controller); with ``plan``, only
    those of its partitions, after the rules --execute applies to it (``InvalidPlanError``,
    exit 3, the partition or broker named)."""
    require_permissions(gateway, "list", ["DESCRIBE"])
    if plan is not None:
        validate_plan(plan, cluster_view(gateway, plan), source=source)
    states = gateway.list_reassignments()
    if plan is not None:
        wanted = {m.tp for m in plan}
        states = {tp: st for tp, st in states.items() if tp in wanted}
    return ListResult(dict(sorted(states.items())))


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
    from ..watch.progress import report

    kwargs.pop("command_config", None)  # a gateway is connected already
    return report(gateway, plan, journal, **kwargs)
