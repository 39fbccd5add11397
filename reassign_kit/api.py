"""The package-level Python API: every public function (``reassign_kit.plan``, ``execute``,
``progress``, ``verify``, ``cancel``, ``list_reassignments``, ``rollback_plan``) lives here.

One convention for "where is the cluster" (``cluster``): a bootstrap string (``"h:9092"``,
connected with ``command_config``), a client config dict (Java-style properties with
``bootstrap.servers``; the other keys as ``--command-config`` holds them) or a connected
gateway (an ``AdminGateway``, a ``SimCluster``). What a function opens it closes; a gateway
given is left open. ``ops`` keeps the one-shot operations these call."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Plan
    from .moves.results import RunResult
    from .operations.cancel import CancelResult
    from .operations.execute import ExecuteResult, ListResult
    from .operations.verify import VerifyResult
    from .planner.record import Approval
    from .planner.report import PlanResult
    from .planner.rules import Capacity
    from .run.home import Found, RunRecord
    from .run.options import ExecuteOptions
    from .run.preflight import Prepared
    from .run.run import Run
    from .snapshot.filter import TopicFilter
    from .snapshot.history import LoadHistory
    from .snapshot.snapshot import Snapshot
    from .throttles.priors import Priors
    from .watch.report import ProgressReport


__all__ = [
    "StartedRun",
    "cancel",
    "connected",
    "execute",
    "list_reassignments",
    "plan",
    "progress",
    "rollback_plan",
    "start_run",
    "take_snapshot",
    "verify",
]


@contextlib.contextmanager
def connected(
    cluster: Any, command_config: Mapping[str, str] | str | os.PathLike | None = None
) -> Iterator[Any]:
    """The gateway of ``cluster`` (see the module doc), closed on exit when opened here."""
    from .errors import UsageError
    from .operations import execute as ops

    if isinstance(command_config, str | os.PathLike):
        command_config = ops.load_command_config(os.fspath(command_config))
    if isinstance(cluster, str):
        gw = ops.connect(cluster, command_config)
    elif isinstance(cluster, Mapping):
        config = {str(k): str(v) for k, v in cluster.items()}
        bootstrap = config.pop("bootstrap.servers", "")
        if not bootstrap:
            raise UsageError(
                "cluster: a client config dict needs bootstrap.servers (the brokers to connect to)"
            )
        gw = ops.connect(bootstrap, {**(command_config or {}), **config})
    elif cluster is None:
        raise UsageError(
            "cluster: give a bootstrap string, a client config dict with bootstrap.servers, "
            "or a connected gateway"
        )
    else:
        yield cluster
        return
    try:
        yield gw
    finally:
        gw.close()


def _plan_of(plan: Any) -> tuple[Plan, str]:
    from .model import Plan

    if isinstance(plan, str | os.PathLike):
        return Plan.read(os.fspath(plan)), os.fspath(plan)
    return plan, "the plan"


def plan(
    snapshot: Snapshot | str,
    remove_brokers: Iterable[int] = (),
    balance: str | Iterable[str] | None = None,
    replication_factor: int | None = None,
    topics: Iterable[str] = (),
    spark_master: str | None = None,
    engine: str = "spark",
    chunks: int | None = None,
    topic_filter: TopicFilter | None = None,
    demote_brokers: Iterable[int] = (),
    capacity: Capacity | str | None = None,
    bytes_tolerance: float | None = None,
    drain_cordoned: bool = False,
    network_tolerance: float | None = None,
    disk_ceiling: float | None = 0.85,
    disk_tolerance: float | None = None,
) -> PlanResult:
    """A minimal-movement, balanced, rack-aware plan for a snapshot (a ``Snapshot``, or a path
    to its JSON / Parquet form). ``engine="spark"`` (the default) runs in Spark (local mode
    unless ``spark_master``); ``"local"`` runs the same planner in this process. Either way the
    same snapshot and parameters give the same plan. ``topic_filter`` selects the topics planned
    (default: all but the internal ones). ``demote_brokers``: a leaders-only plan (replica order
    only) after which those brokers lead no partition another replica can lead. ``capacity``: a
    capacity file (path) or ``Capacity``: per broker ``disk_bytes`` and optional
    ``max_replicas``, hard limits the plan never exceeds (else ``CapacityError``, exit 3), and
    the weights of each broker's bytes share; with ``balance`` including ``bytes`` every broker
    ends within ``bytes_tolerance`` of its share (None: the planner's default, as ``chunks``).
    ``drain_cordoned``: every broker whose log dirs are all cordoned (KIP-1066, as the snapshot
    recorded them) is drained like a removed one; a cordoned broker never receives a new
    replica either way. ``balance`` may name the network goals (``network``, or its parts
    ``network_in``, ``network_out``, ``leader_load``; the snapshot must carry every partition's
    load): each broker at most ``1 + network_tolerance`` times its share (default 0.10), the
    capacity file's ``network_in_bytes_s`` / ``network_out_bytes_s`` never exceeded
    (``planner.network``). ``disk_ceiling``: no broker's log dirs above this share of their
    filesystem (as the snapshot recorded it, or of the capacity file's ``disk_bytes``) in the
    end state, else ``CapacityError`` naming the dir and the bytes (None: no check). ``disks``:
    log dirs within ``disk_tolerance`` (dir_plan). Neither the planner nor pyspark loads here."""
    from .errors import UsageError
    from .planner.params import (
        DEFAULT_BYTES_TOLERANCE,
        DEFAULT_CHUNKS,
        DEFAULT_NETWORK_TOLERANCE,
        PlanParams,
        parse_balance,
    )
    from .planner.rules import Capacity
    from .snapshot.filter import TopicFilter

    demote = tuple(sorted(set(demote_brokers)))
    if disk_ceiling is not None and not 0 < disk_ceiling <= 1:
        raise UsageError(
            f"--disk-ceiling must be a share above 0 and at most 1, got {disk_ceiling}"
        )
    params = PlanParams(
        remove_brokers=tuple(sorted(set(remove_brokers))),
        balance=("leaders",) if demote else parse_balance(balance),
        replication_factor=replication_factor,
        rf_topics=tuple(sorted(set(topics))),
        chunks=DEFAULT_CHUNKS if chunks is None else chunks,
        topic_filter=topic_filter or TopicFilter(),
        demote_brokers=demote,
        capacity=Capacity.read(capacity) if isinstance(capacity, str) else capacity,
        bytes_tolerance=DEFAULT_BYTES_TOLERANCE if bytes_tolerance is None else bytes_tolerance,
        drain_cordoned=drain_cordoned,
        network_tolerance=DEFAULT_NETWORK_TOLERANCE
        if network_tolerance is None
        else network_tolerance,
        disk_tolerance=PlanParams.disk_tolerance if disk_tolerance is None else disk_tolerance,
    )
    if engine not in ("spark", "local"):
        raise UsageError(f"engine must be 'spark' or 'local', got {engine!r}")
    from .planner.network_plan import balance_network, wants_network

    network = wants_network(params.balance)
    source = _plan_source(snapshot, engine, network)
    result = _engine_plan(source, params, engine, spark_master)
    result = balance_network(result, source, params) if network else result
    _check_disk_ceiling(source, result, disk_ceiling, params.capacity)
    return _with_growth(source, _balance_dirs(source, result, params, disk_ceiling))


def _with_growth(source: Any, result: PlanResult) -> PlanResult:
    """``result`` with the planned partitions' growth rates from the snapshot's loads (none
    from a Parquet path Spark read, or without loads): the plan record carries them to the
    run's disk order."""
    from .snapshot.load import loads_of
    from .snapshot.snapshot import Snapshot

    if isinstance(source, Snapshot):
        loads = loads_of(source.partitions)
        rates = {m.tp: loads[m.tp].growth_bytes_s for m in result.current if m.tp in loads}
        result.growth_bytes_s = rates or None
    return result


def _balance_dirs(source: Any, result: PlanResult, params: Any, ceiling: float | None):
    """The log-dir pass on the driver, after either engine (``planner.dir_plan``)."""
    from .planner.dir_plan import wants_dirs, with_log_dirs
    from .snapshot.snapshot import Snapshot

    snap = source if isinstance(source, Snapshot) else Snapshot.read(source)
    return with_log_dirs(result, snap, params, ceiling) if wants_dirs(params, snap) else result


def _plan_source(snapshot: Snapshot | str, engine: str, network: bool) -> Snapshot | str:
    """The snapshot in memory, or a Parquet path Spark reads itself; a network plan's loads
    are read here and checked before any pass runs."""
    from .planner.network_plan import require_loads
    from .snapshot.snapshot import Snapshot

    source: Snapshot | str = snapshot
    if isinstance(snapshot, str):
        is_parquet = os.path.isdir(snapshot) or snapshot.endswith(".parquet")
        source = snapshot if (engine == "spark" and is_parquet) else Snapshot.read(snapshot)
    if network:
        source = source if isinstance(source, Snapshot) else Snapshot.read(source)
        require_loads(source)
    return source


def _engine_plan(source: Any, params: Any, engine: str, spark_master: str | None) -> PlanResult:
    """The pipeline on the engine asked for (``plan``'s checks done)."""
    from .planner.params import rule_context

    if engine == "local":
        from .planner.in_process import plan_in_process

        return plan_in_process(source, params)
    from .spark.frames import brokers_and_topics
    from .spark.planner import plan_spark
    from .spark.session import get_spark

    rule_context(brokers_and_topics(source), params)  # bad input fails before Spark starts
    return plan_spark(get_spark(spark_master), source, params)


def _check_disk_ceiling(source: Any, result: Any, ceiling: float | None, capacity: Any) -> None:
    """The plan's end state under the disk ceiling on every broker, else CapacityError."""
    from .errors import CapacityError
    from .planner.disk_ceiling import ceiling_problems
    from .snapshot.snapshot import Snapshot

    if not ceiling or not result.changed:
        return
    snap = source if isinstance(source, Snapshot) else Snapshot.read(source)
    problems = ceiling_problems(snap, result.changed, ceiling, capacity)
    if problems:
        raise CapacityError(
            problems,
            header=f"the plan's end state is above the disk ceiling ({ceiling:.0%} of a log dir)",
        )


def take_snapshot(
    cluster: Any,
    topics: Iterable[str] | None = None,
    topic_filter: TopicFilter | None = None,
    sample_load: float | None = None,
    command_config: Mapping[str, str] | str | os.PathLike | None = None,
    history: LoadHistory | None = None,
) -> tuple[Snapshot, dict[str, str]]:
    """The cluster recorded (``cluster``: see the module doc), restricted to ``topics`` and
    ``topic_filter`` (default: all but the internal ones), and what the filter left out.
    ``sample_load`` (seconds): each partition's load measured over that window with the Admin
    API alone (``snapshot.sampler``); what could not be read is named in ``snapshot.load``.
    ``history``: the loads taken from a metrics history instead (``load_history``)."""
    from .errors import UsageError
    from .snapshot.filter import TopicFilter
    from .snapshot.sampler import sample_load as sample
    from .snapshot.snapshot import take_snapshot as record

    if sample_load is not None and not 0 < sample_load < 86_400:
        raise UsageError(f"sample_load: a window of (0, 86400) seconds, got {sample_load}")
    if sample_load is not None and history is not None:
        raise UsageError("--sample-load and --load-from: one source of load, not both")
    if history is not None:
        history.check()
    with connected(cluster, command_config) as gw:
        full = record(gw, list(topics) if topics is not None else None)
        snap, excluded = full.select(topic_filter or TopicFilter())
        if sample_load is not None:
            snap = sample(gw, snap, sample_load)
    if history is not None:
        snap = load_history(snap, history)
    return snap, excluded


def load_history(snap: Snapshot, history: LoadHistory) -> Snapshot:
    """``snap`` with each partition's load from ``history`` (see ``LoadHistory``)."""
    import time

    from .snapshot.history import Window
    from .snapshot.prom_load import load_from_prometheus

    kind, where = history.kind()
    if kind == "prometheus":
        w = Window.ending(
            history.until or time.time(), history.window, history.step, history.quantile
        )
        return load_from_prometheus(where, snap, w)
    from .spark.history import load_from_export
    from .spark.session import get_spark

    return load_from_export(
        get_spark(), where, snap, history.window, history.step, history.quantile, history.until
    )


def rollback_plan(plan: Plan, states: Mapping[Any, Any]) -> Plan:
    """The plan that puts ``plan``'s partitions back where ``states`` say they are now."""
    from .cluster.views import rollback_plan as rb

    return rb(plan, states)


def verify(
    cluster: Any,
    plan: Plan | str | os.PathLike,
    *,
    preserve_throttles: bool = False,
    priors: Priors | None = None,
    elect_leaders: bool = False,
    command_config: Mapping[str, str] | str | None = None,
    state_dir: str | os.PathLike | None = None,
    label: str = "verify",
    source: str | None = None,
) -> VerifyResult:
    """As the CLI's ``--verify``: is every move of ``plan`` complete? Once nothing of it is in
    progress the throttles go; the run's recorded throttle priors (found in the state dir by
    the cluster id and the plan, unless ``priors`` is given) put the operator's values back
    and only the configs that run changed are touched. ``run_state`` of the result says which
    recorded run was found (``label`` names the action in it)."""
    from .operations.verify import verify as verify_plan

    plan, path = _plan_of(plan)
    with connected(cluster, command_config) as gw:
        found, said = (None, []) if priors is not None else _found_run(gw, plan, state_dir, label)
        if found is not None:
            priors = found.throttle_priors()
        res = verify_plan(
            gw,
            plan,
            preserve_throttles=preserve_throttles,
            priors=priors,
            elect_leaders=elect_leaders,
            source=source or path,
        )
        res.run_state = said
        if found is not None and res.exit_code == 0 and res.cleared is not None:
            found.mark_finished("verified")
        return res


def _found_run(
    gateway: Any, plan: Plan | None, state_dir: str | os.PathLike | None, label: str
) -> tuple[Found | None, list[str]]:
    """The run of ``plan`` recorded in the state dir (None without a plan or a record) and
    the lines that say what was found, before anything is done."""
    from .run import home as state

    if plan is None:
        return None, []
    found = state.find(gateway, plan, state_dir)
    if found is None:
        where = state.key_dir(state.state_root(state_dir), gateway.cluster_id(), plan)
        return None, [f"Run state ({label}): no run of this plan recorded under {where}"]
    return found, found.lines(label) + found.origin_lines()


def list_reassignments(
    cluster: Any,
    plan: Plan | str | os.PathLike | None = None,
    *,
    command_config: Mapping[str, str] | str | None = None,
) -> ListResult:
    """Every reassignment in flight (``ops.ListResult``), as the CLI's ``--list``; with
    ``plan``, only its partitions (the plan checked first as ``execute`` checks it)."""
    from .operations import execute as ops

    wanted, source = _plan_of(plan) if plan is not None else (None, "")
    with connected(cluster, command_config) as gw:
        return ops.list_reassignments(gw, wanted, source=source)


def execute(
    cluster: Any = None,
    plan: Plan | str | os.PathLike | None = None,
    *,
    gateway: Any = None,
    bootstrap_servers: str | None = None,
    command_config: Mapping[str, str] | str | None = None,
    journal: str | os.PathLike | None = None,
    resume: bool = False,
    rollback_path: str | os.PathLike | None = "",
    state_dir: str | os.PathLike | None = None,
    expect_plan_hash: str | None = None,
    allow_drift: bool = False,
    plan_record: str | None = None,
    **options: Any,
) -> ExecuteResult | RunResult:
    """``reassign_kit.execute(cluster, plan, **options)``, as the CLI's ``--execute``.

    ``cluster``: the module's convention (``gateway=`` / ``bootstrap_servers=`` name it too),
    with ``command_config`` (its secrets never reach the journal); ``plan``: a Plan or a JSON
    path. The run is recorded in its state dir (``state_dir``, else
    ``$REASSIGN_KIT_STATE_DIR``, else ``./.reassign-kit/runs``) where ``verify`` / ``cancel``
    find it. Options are ``ExecuteOptions``' fields. Only the official tool's (``additional``,
    ``throttle``, ``log_dir_throttle``, ``allow_replication_factor_change``, ``timeout_s``,
    ``elect_leaders``): its single request, an ``ExecuteResult`` (elections off unless
    ``elect_leaders=True``). Any pacing option, ``resume`` or an explicit ``journal``: a
    paced run (``start_run``) that blocks until KIP-1335's return point (or the end with
    ``wait=True``), a ``RunResult``, ``RunError`` if it failed (elections on unless
    ``elect_leaders=False``). ``journal`` None: in the state dir; ``rollback_path`` "": in
    the state dir, None: none. ``expect_plan_hash`` refuses another plan
    (``PlanHashError``); drift since the plan record refuses the run (``PlanDriftError``)
    unless ``allow_drift``."""
    from .model import Plan
    from .planner.record import Approval
    from .run import preflight as pf

    cluster = _one_cluster(cluster, gateway, bootstrap_servers, plan)
    opts = _execute_options(options)  # every option checked before anything is read
    paced = pf.is_paced(options, resume=resume, journal=journal)
    source = os.fspath(plan) if isinstance(plan, str | os.PathLike) else "the plan"
    if isinstance(plan, str | os.PathLike):
        plan = Plan.read(source)
    approval = Approval(expect_plan_hash, allow_drift, plan_record)
    plan_path = os.path.abspath(source) if source != "the plan" else None
    with (
        connected(cluster, command_config) as gw,
        _run_metrics(paced, resume, journal, opts) as metrics,
    ):
        if not paced:
            return _execute_legacy(
                gw,
                plan,
                opts,
                state_dir=state_dir,
                source=source,
                rollback_path=rollback_path,
                elect_leaders=bool(options.get("elect_leaders", False)),
                plan_path=plan_path,
                approval=approval,
            )
        started = start_run(
            gw,
            plan,
            None if resume else opts,
            journal=os.fspath(journal) if journal else None,
            resume=resume,
            rollback_path=None if rollback_path is None else os.fspath(rollback_path),
            state_dir=state_dir,
            source=source,
            plan_path=plan_path,
            approval=approval,
        )
        if metrics is not None:
            metrics.attach(started.run)
        result = started.run.run()
        if started.home is not None and getattr(result, "state", None) == "done":
            started.home.mark_finished("done")
        return result


def _one_cluster(cluster: Any, gateway: Any, bootstrap_servers: Any, plan: Any) -> Any:
    """The one cluster ``execute`` was given (by position or by either name), and a plan."""
    from .errors import UsageError

    given = [c for c in (cluster, gateway, bootstrap_servers) if c is not None]
    if len(given) != 1:
        raise UsageError("execute needs exactly one of cluster, gateway and bootstrap_servers")
    if plan is None:
        raise UsageError("execute needs a plan: a Plan or a reassignment JSON file")
    return given[0]


def _execute_options(options: dict[str, Any]) -> ExecuteOptions:
    """``execute``'s keyword options as ``ExecuteOptions``, validated; an unknown one named."""
    from .errors import UsageError
    from .run.options import ExecuteOptions
    from .run.preflight import OPTION_NAMES

    if "disallow_replication_factor_change" in options:  # the CLI's name for the same thing
        disallow = options.pop("disallow_replication_factor_change")
        options["allow_replication_factor_change"] = not disallow
    unknown = sorted(set(options) - OPTION_NAMES)
    if unknown:
        raise UsageError(
            f"execute: unknown option(s) {', '.join(unknown)}; known: "
            + ", ".join(sorted(OPTION_NAMES | {"disallow_replication_factor_change"}))
        )
    return ExecuteOptions(**options).validate()


def _execute_legacy(
    gateway: Any,
    plan: Plan,
    opts: ExecuteOptions,
    *,
    state_dir: str | os.PathLike | None,
    source: str,
    rollback_path: str | os.PathLike | None,
    elect_leaders: bool,
    plan_path: str | None,
    approval: Approval,
) -> ExecuteResult:
    """The official tool's single request, recorded in the run's home before it is sent."""
    from .model import TopicPartition
    from .operations.execute import execute as execute_once
    from .run import home as state

    with state.recording(
        gateway,
        plan,
        kind="legacy",
        state_dir=state_dir,
        source=source,
        rollback=os.fspath(rollback_path) if rollback_path else None,
        throttle=opts.throttle,
    ) as home:
        res = execute_once(
            gateway,
            plan,
            additional=opts.additional,
            throttle=opts.throttle,
            log_dir_throttle=opts.log_dir_throttle,
            disallow_replication_factor_change=not opts.allow_replication_factor_change,
            require_broker_rf_guard=opts.require_broker_rf_guard,
            timeout_s=opts.timeout_s,
            rollback_path=None if rollback_path is None else home.rollback,
            source=source,
            elect_leaders=elect_leaders,
            plan_path=plan_path,
            approval=approval,
        )
        home.written(
            res.rollback_path,
            res.priors_path if res.priors else None,
            [TopicPartition(r["topic"], r["partition"]) for r in res.rows if r["replaces"]],
        )
        return res


@dataclass
class StartedRun:
    """A paced run checked and ready (``start_run``): its ``run`` (``.run()`` blocks,
    ``.start()`` runs it in the background), what the preflight found (``prepared``), its home
    in the state dir (None on a resume: the home it has is kept) and its journal."""

    prepared: Prepared
    home: RunRecord | None
    journal: str

    @property
    def run(self) -> Run:
        assert self.prepared.run is not None
        return self.prepared.run


def start_run(
    gateway: Any,
    plan: Plan,
    options: ExecuteOptions | None,
    *,
    journal: str | None = None,
    resume: bool = False,
    rollback_path: str | None = "",
    state_dir: str | os.PathLike | None = None,
    source: str = "the plan",
    plan_path: str | None = None,
    approval: Approval | None = None,
    run_id: str | None = None,
    **run_kwargs: Any,
) -> StartedRun:
    """The one start of a paced run that the API, the CLI and the panel share: the run's home
    is recorded before anything is sent (not on a resume), the preflight checks the plan
    against the cluster (validation, others' moves, approval, drift) and builds the ``Run``,
    and the home notes what the preflight wrote. ``options`` None on a resume: the journal's.
    ``journal``: None = in the run's home. ``rollback_path``: "" = in the run's home, None =
    none, else that file. ``run_id``: the run's id, its home's and its
    journal's (a malformed one, or one that already has a home, is refused by name); a resume
    keeps its journal's. A refusal leaves no home behind (``home.recording``)."""
    from .errors import UsageError
    from .run import home as state
    from .run.preflight import preflight
    from .run.resume import first_event, options_from_journal

    if resume:
        if not journal:
            raise UsageError("resume needs the journal of the run to resume (--journal)")
        if options is None:
            options = options_from_journal(journal)
        if run_id is not None:  # a resume goes on under its journal's id, never another
            first = first_event(journal) or {}
            if first.get("run_id") != run_id:
                raise UsageError(
                    f"run id {run_id!r} is not the id of the run journaled at {journal} "
                    f"({first.get('run_id')!r}): a resume keeps its journal's id. Nothing was sent."
                )
    assert options is not None
    if run_id is not None:  # the caller's id names the home and the journal
        state.check_run_id(run_id)
    with state.recording(
        gateway,
        plan,
        enabled=not resume,
        kind="paced",
        state_dir=state_dir,
        source=source,
        rollback=rollback_path or None,
        journal=journal,
        throttle=options.throttle,
        run_id=run_id,
    ) as home:
        journal_path = journal if resume or home is None else home.journal
        assert journal_path is not None
        rb = None if rollback_path is None else home.rollback if home is not None else ""
        # one id: the home's is the journal's, the metrics', the notices'
        run_kwargs["run_id"] = home.run_id if home is not None else run_id
        prepared = preflight(
            gateway,
            plan,
            options,
            journal_path,
            resume=resume,
            rollback_path=rb,
            source=source,
            plan_path=plan_path,
            approval=approval,
            **run_kwargs,
        )
    if home is not None:
        home.written_prepared(prepared, plan)
    return StartedRun(prepared, home, journal_path)


@contextlib.contextmanager
def _run_metrics(paced: bool, resume: bool, journal: Any, opts: Any) -> Iterator[Any]:
    """A paced run's metrics out (``metrics_port`` / ``metrics_textfile``, a resume's
    from its journal), listening / writable before anything is sent; closed on every path
    (the textfile's last write, the server stopped)."""
    if not paced:
        yield None
        return
    from .outputs.metrics import open_metrics
    from .run.resume import options_from_journal

    mo = options_from_journal(os.fspath(journal)) if resume and journal else opts
    metrics = open_metrics(mo.metrics_port, mo.metrics_textfile)
    try:
        yield metrics
    finally:
        if metrics is not None:
            metrics.close()


def progress(
    cluster: Any,
    plan: Plan | str | os.PathLike,
    journal: str | os.PathLike | Iterable[Mapping[str, Any]] | None = None,
    *,
    command_config: Mapping[str, str] | str | None = None,
    window_s: float = 60.0,
) -> ProgressReport:
    """The KIP-179 progress report of ``plan`` on ``cluster`` (the module's convention);
    ``journal`` (path or events) adds steps and rates: see ``watch.progress.report``."""
    from .watch.progress import report

    with connected(cluster, command_config) as gw:
        return report(gw, plan, journal, window_s=window_s)


def cancel(
    cluster: Any,
    plan: Plan | str | os.PathLike | None = None,
    *,
    topics: Iterable[str] | None = None,
    all: bool = False,
    journal: str | os.PathLike | None = None,
    rollback_file: str | os.PathLike | None = None,
    throttle_priors: Priors | None = None,
    preserve_throttles: bool = False,
    throttle: int | None = None,
    timeout_s: float | None = None,
    command_config: Mapping[str, str] | str | None = None,
    state_dir: str | os.PathLike | None = None,
    label: str = "cancel",
    source: str | None = None,
) -> CancelResult:
    """Cancel means rollback, as the CLI's ``--cancel``: every partition of ``plan`` (a Plan
    or a JSON path; or the plan of the run ``journal`` holds), of ``topics`` or ``all`` in
    flight goes back to its ORIGINAL replica list, in order, KIP-435 stepped moves between
    steps included; the cancel waits for it (``timeout_s``, default 5 minutes) and verifies.
    Originals come from ``journal`` / ``rollback_file``, else from the run of ``plan``
    recorded in the state dir (its rollback file, journal and throttle priors; each explicit
    argument wins over what the run recorded), else from the reassignment in flight.
    ``cluster``: the module's convention. The result has, per partition, cancelled,
    completed, rolling back, not moving (``.to_pandas()``); ``run_state``: which recorded run
    was found; ``outcome``: where each partition ended, read from the cluster (the report
    ``--cancel`` prints and the panel shows). To stop a run without rolling back (drain),
    use ``Run.stop()``; to roll a running ``Run`` back, ``Run.cancel()``."""
    from .operations.cancel import ROLLBACK_TIMEOUT_S
    from .operations.cancel import cancel as cancel_plan

    path = "the plan"
    if plan is not None:
        plan, path = _plan_of(plan)
    journal = os.fspath(journal) if journal is not None else None
    rollback_file = os.fspath(rollback_file) if rollback_file is not None else None
    with connected(cluster, command_config) as gw:
        explicit = rollback_file and journal and throttle_priors
        found, said = (None, []) if explicit else _found_run(gw, plan, state_dir, label)
        priors, rate, used_journal = throttle_priors, throttle, journal
        rollback_files = [rollback_file] if rollback_file else []
        if found is not None:
            run = found.origin
            # an explicit file is merged with the run's record, never replaces it
            recorded = run.rollback_file()
            if recorded and os.path.isfile(recorded) and recorded not in rollback_files:
                rollback_files.append(recorded)
            used_journal = journal or run.journal_file()
            if priors is None and not journal:
                priors = found.throttle_priors()
            if rate is None and used_journal is None:
                rate = run.throttle  # a legacy run's rate, for the way back
        res = cancel_plan(
            gw,
            plan,
            topics=topics,
            all=all,
            preserve_throttles=preserve_throttles,
            journal=used_journal,
            rollback_file=rollback_files,
            throttle=rate,
            timeout_s=ROLLBACK_TIMEOUT_S if timeout_s is None else timeout_s,
            priors=priors,
            source=source or path,
        )
        res.run_state = said
        if found is not None and res.exit_code == 0:
            found.mark_finished("cancelled")
        return _with_outcome(gw, plan, used_journal, res)


def _with_outcome(
    gateway: Any, plan: Plan | None, journal: str | None, res: CancelResult
) -> CancelResult:
    """``res.outcome``: the per-partition outcome read from the cluster (``outcome.
    cancel_report``, what ``--cancel`` prints and the panel shows); None without a plan."""
    from .moves.journal import read_events
    from .operations.outcome import cancel_report, plan_from_events

    events = read_events(journal) if journal else []
    plan = plan or plan_from_events(events)
    res.outcome = (
        cancel_report(
            gateway,
            plan,
            events,
            originals=getattr(res, "originals", None),
            started=[*res.reverted, *res.cancelled, *res.rolling_back],
        )
        if plan is not None
        else None
    )
    return res
