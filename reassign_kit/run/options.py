"""The execute options, declared once.

``ExecuteOptions`` is what a run is started with (journaled in ``run_started``, reused by
``--resume``). Each field carries an ``Option`` in its metadata: the CLI flag and how its
text becomes the field's value, the help, the notebook widget (label, kind, the widget value
meaning "none") and whether it may change while a run goes on (``Run.set_caps``). The CLI
builds its flags from ``cli_options()`` and the panel its controls from ``panel_options()``,
so a new option is added here and nowhere else. ``Option`` and the flags' converters live in
``option_spec`` (re-exported here), the rules a set of options must keep
(``validate``) and what is derived from them (``caps``, the journal's JSON form) in
``options_validate``.
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

from ..errors import UsageError
from ..health.sources import health_source_arg
from ..moves.schedule import ORDERS
from .option_spec import (
    INT64_MAX,
    ON_DEADLINE,
    ON_INTERRUPT,
    PACES,
    Option,
    duration_arg,
    int_arg,
    slo_arg,
)
from .options_disks import DiskOptions
from .options_validate import DerivedOptions, ValidatedOptions


def _opt(default: Any, option: Option) -> Any:
    return field(default=default, metadata={"option": option})


def _none_if_zero(v: Any) -> Any:
    return v or None


@dataclass
class ExecuteOptions(DiskOptions, ValidatedOptions, DerivedOptions):
    """Pacing, caps, throttle, deadlines. Durations in seconds; ``throttle`` in bytes/s.
    ``validate``, ``caps``, ``to_json_obj`` and ``from_json_obj``: options_validate.py."""

    batch_size: int = _opt(
        0,
        Option(
            "0 (default): the whole plan in one request (legacy). N > 0: contiguous batches of "
            "N partitions in (topic, partition) order, each waited for before the next.",
            flag="--reassignment-batch-size",
            type=int_arg("--reassignment-batch-size", 0),
            metavar="N",
            cli_default=0,
            label="batch size",
            widget="int",
            widget_help="KIP-1335 N; 0 = one request (legacy)",
        ),
    )
    incremental: bool = _opt(
        False,
        Option(
            "With --reassignment-batch-size N > 0: keep at most N of this run's moves in "
            "flight, submitting the next as one completes.",
            flag="--incremental",
            action="store_true",
            label="incremental",
            widget="bool",
            widget_help="keep N in flight, refill as moves finish",
        ),
    )
    poll_interval_ms: int = _opt(
        1000,
        Option(
            "Milliseconds between polls (default 1000).",
            flag="--reassignment-poll-interval-ms",
            type=int_arg("--reassignment-poll-interval-ms", 1),
            metavar="MS",
            cli_default=1000,
            label="poll interval (ms)",
            widget="int",
        ),
    )
    max_moves_per_broker: int | None = _opt(
        None,
        Option(
            "At most K moves adding to or removing from any one broker at once (with --pace "
            "adaptive, each broker's maximum: its cap starts at one and grows with its "
            "rate's raises only while its moves copy at their rate).",
            flag="--max-moves-per-broker",
            type=int_arg("--max-moves-per-broker", 1),
            metavar="K",
            label="max moves / broker",
            widget="int",
            unset=0,
            widget_help="0 = no cap",
            live=True,
        ),
    )
    max_leader_moves: int | None = _opt(
        None,
        Option(
            "At most L moves that change the partition leader at once.",
            flag="--max-leader-moves",
            type=int_arg("--max-leader-moves", 1),
            metavar="L",
            label="max leader moves",
            widget="int",
            unset=0,
            widget_help="0 = no cap",
            live=True,
        ),
    )
    cluster_max_reassignments: int | None = _opt(
        None,
        Option(
            "Submit only while fewer than C reassignments (any run's) are in flight.",
            flag="--cluster-max-reassignments",
            type=int_arg("--cluster-max-reassignments", 1),
            metavar="C",
            label="cluster-wide cap",
            widget="int",
            unset=0,
            widget_help="0 = no cap",
            live=True,
        ),
    )
    order: str = _opt(
        "topic-partition",
        Option(
            "Order of the queue (default topic-partition, as KIP-1335).",
            flag="--order",
            choices=ORDERS,
            cli_default="topic-partition",
            label="order",
            widget="choice",
        ),
    )
    throttle: int | None = _opt(
        None,
        Option(
            "Inter-broker replication throttle for the moves (execute). Default: none.",
            flag="--throttle",
            group="official",
            type=int_arg("--throttle", maximum=INT64_MAX),
            metavar="BYTES/S",
            from_cli=_none_if_zero,
            label="throttle (B/s)",
            widget="int",
            unset=-1,
            widget_help="-1 = no throttle",
        ),
    )
    pace: str = _opt(
        "static",
        Option(
            "static (default): every broker at --throttle. adaptive: each broker's "
            "rate between --throttle-floor and --throttle (the ceiling), raised additively "
            "while its produce p99 holds --slo-produce-p99 and halved within seconds when it "
            "does not; new submissions pause while a partition outside the plan is under min "
            "ISR. Health from a canary topic the run produces to (deleted at its end). Each "
            "decision is journaled (pace_decision) and printed.",
            flag="--pace",
            choices=PACES,
            cli_default="static",
            label="pace",
            widget="choice",
        ),
    )
    slo_produce_p99: str | None = _opt(
        None,
        Option(
            "With --pace adaptive: the produce p99 latency objective, absolute (50ms) or "
            "relative to each broker's baseline measured before the first move (+20ms).",
            flag="--slo-produce-p99",
            type=slo_arg("--slo-produce-p99"),
            metavar="LATENCY",
            label="produce p99 objective",
            widget="text",
            unset="",
            widget_help="with pace adaptive: 50ms, or +20ms over the baseline; empty = none",
        ),
    )
    throttle_floor: int | None = _opt(
        None,
        Option(
            "With --pace adaptive: no broker's rate goes below this (bytes/s; default "
            "--throttle / 20).",
            flag="--throttle-floor",
            type=int_arg("--throttle-floor", 1, INT64_MAX),
            metavar="BYTES/S",
            label="pace floor",
            widget="int",
            widget_help="with pace adaptive: no broker's rate below this (MiB/s); "
            "0 = the throttle / 20",
        ),
    )
    pace_settle_s: float = _opt(
        5.0,
        Option("With --pace adaptive: seconds a rate change is given before the next one."),
    )
    move_deadline: float | None = _opt(
        None,
        Option(
            "A move still running this long after its submission has expired.",
            flag="--move-deadline",
            type=duration_arg("--move-deadline"),
            metavar="DURATION",
            label="deadline per move (s)",
            widget="float",
            unset=0.0,
            widget_help="0 = none",
        ),
    )
    run_deadline: float | None = _opt(
        None,
        Option(
            "The whole run has expired after this long.",
            flag="--run-deadline",
            type=duration_arg("--run-deadline"),
            metavar="DURATION",
            label="deadline for the run (s)",
            widget="float",
            unset=0.0,
            widget_help="0 = none",
        ),
    )
    stuck_after: float | None = _opt(
        None,
        Option(
            "A move that copied no bytes for this long is stuck (DescribeLogDirs).",
            flag="--stuck-after",
            type=duration_arg("--stuck-after"),
            metavar="DURATION",
            label="stuck after (s)",
            widget="float",
            unset=0.0,
            widget_help="no bytes copied for this long; 0 = off",
        ),
    )
    on_deadline: str = _opt(
        "wait",
        Option(
            "On an expired deadline or a stuck move: report and keep waiting (default), stop "
            "(drain: submit nothing more, end the run; moves in flight go on, throttled) or "
            "cancel (roll back: the expired / stuck moves, every move of the run on a run "
            "deadline, back to their original replicas, stepped moves included).",
            flag="--on-deadline",
            choices=ON_DEADLINE,
            cli_default="wait",
            label="on deadline",
            widget="choice",
        ),
    )
    wait: bool = _opt(
        False,
        Option(
            "Stay until every move is complete, then clear the throttles "
            "(KIP-1335 returns once the last move is submitted).",
            flag="--wait",
            action="store_true",
        ),
    )
    additional: bool = _opt(
        False,
        Option(
            "Execute even though other reassignments are in progress (a partition in both gets "
            "the new target).",
            flag="--additional",
            group="official",
            action="store_true",
            label="additional (others' moves)",
            widget="bool",
            widget_help="--additional: submit although other reassignments are in progress "
            "(caps do not count them)",
        ),
    )
    allow_replication_factor_change: bool = _opt(
        True,
        Option(
            "Refuse moves that change a partition's replication factor, client- and broker-side "
            "(KIP-860).",
            flag="--disallow-replication-factor-change",
            group="official",
            action="store_true",
            from_cli=lambda disallow: not disallow,
        ),
    )
    require_broker_rf_guard: bool = _opt(
        False,
        Option(
            "Require the broker-side replication-factor guard (KIP-860, AlterPartitionReassignments "
            "v1, Kafka 4.1+): refuse, naming the release needed, when the controller does not "
            "list it (without this flag such a cluster gets the client-side check and a "
            "warning). Implies --disallow-replication-factor-change.",
            flag="--require-broker-rf-guard",
            group="guard",
            action="store_true",
        ),
    )
    parallel_replica_count: int | None = _opt(
        None,
        Option(
            "--execute: move at most R replicas of a partition at once (KIP-435 steps; the new "
            "preferred leader first; min.insync.replicas kept satisfiable). Waits until done.",
            flag="--parallel-replica-count",
            group="steps",
            type=int_arg("--parallel-replica-count", 1),
            metavar="R",
            label="parallel replicas (steps)",
            widget="int",
            unset=0,
            widget_help="KIP-435 R; 0 = whole move at once",
            live=True,
        ),
    )
    elect_leaders: bool = _opt(
        True,
        Option(
            "Preferred leader elections (KIP-460) for the partitions whose preferred leader "
            "(first replica) a move changed, once the move completes: reordering replicas "
            "moves no leadership by itself. Paced runs: on (--no-elect-leaders: off), at most "
            "--max-elections-per-poll per poll, each journaled, then a check that those "
            "partitions are led by their preferred replica. The single legacy request: off "
            "(as kafka-reassign-partitions); --elect-leaders elects at once the moves that "
            "complete at once (replica order only), and --verify --elect-leaders the others "
            "once --verify sees them complete.",
            flag="--elect-leaders",
            group="leaders",
            action=argparse.BooleanOptionalAction,
            label="elect preferred leaders",
            widget="bool",
            widget_help="KIP-460 preferred leader election once a move that changed its "
            "first replica completes (and at Verify)",
        ),
    )
    max_elections_per_poll: int = _opt(
        100,
        Option(
            "At most E preferred leader elections per poll of a paced run, one request "
            "(default 100).",
            flag="--max-elections-per-poll",
            type=int_arg("--max-elections-per-poll", 1),
            metavar="E",
            cli_default=100,
            label="elections / poll",
            widget="int",
            widget_help="preferred leader elections per poll (one request)",
            live=True,
        ),
    )
    min_isr: int | None = _opt(
        None,
        Option("min.insync.replicas to keep satisfiable while stepping (None: each topic's own)."),
    )
    sample_interval: float = _opt(5.0, Option("Seconds between the journal's progress samples."))
    # the observability half: where the adaptive pace reads broker health, and the
    # run's own metrics out (health/sources.py; outputs/metrics.py)
    health_source: str | None = _opt(
        None,
        Option(
            "Where the adaptive pace reads broker health: prometheus:URL (a Prometheus "
            "server's HTTP API), scrape:URL[,URL...] (the brokers' JMX exporters; ID=URL names "
            "an exporter's broker), probe (the default: the tool's own canary, a topic made "
            "for the run and deleted at its end) or probe:TOPIC (the canary kept in TOPIC: "
            "made by the first run, reused by the next, so none starts by creating a topic "
            "while its moves start). A metrics "
            "endpoint that is down, slow or answers garbage falls back to the probe, with a "
            "warning, never to a faster pace.",
            flag="--health-source",
            type=health_source_arg,
            metavar="SOURCE",
        ),
    )
    metrics_port: int | None = _opt(
        None,
        Option(
            "Serve the run's own metrics (bytes left, moves by state, rate and throttle per "
            "broker, ETA, retries, pace decisions) for Prometheus on 127.0.0.1:PORT/metrics "
            "while it runs (prometheus-client).",
            flag="--metrics-port",
            type=int_arg("--metrics-port", 1, 65535),
            metavar="PORT",
        ),
    )
    metrics_textfile: str | None = _opt(
        None,
        Option(
            "Write the same metrics to PATH (node-exporter's textfile collector: a .prom file, "
            "replaced atomically) at every sample and at the end.",
            flag="--metrics-textfile",
            metavar="PATH",
        ),
    )
    cancel_on_stop: bool = _opt(
        False,
        Option(
            "On Ctrl-C / SIGTERM: leave (stop, drain: submit nothing more; moves in flight go "
            "on with their throttles; the default) or cancel (roll back every move of the run "
            "not complete, stepped moves between steps included, to its original replicas, "
            "and wait for it up to --rollback-timeout).",
            flag="--on-interrupt",
            choices=ON_INTERRUPT,
            cli_default="leave",
            from_cli=lambda v: v == "cancel",
        ),
    )
    rollback_timeout: float = _opt(
        300.0,
        Option(
            "How long a cancel waits for the moves it rolls back to reach their original "
            "replicas (default 5m; a second Ctrl-C / SIGTERM ends the wait sooner); what is not "
            "back by then is reported as rolling back, throttled, and `--cancel --journal` "
            "finishes and verifies it.",
            flag="--rollback-timeout",
            type=duration_arg("--rollback-timeout"),
            metavar="DURATION",
        ),
    )
    log_dir_throttle: int | None = _opt(
        None,
        Option(
            "Throttle for moves between log dirs on the same broker (execute).",
            flag="--replica-alter-log-dirs-throttle",
            group="official",
            type=int_arg("--replica-alter-log-dirs-throttle", maximum=INT64_MAX),
            metavar="BYTES/S",
        ),
    )
    timeout_s: float = _opt(
        10.0,
        Option(  # for a replica to appear before its log-dir move
            "How long to wait for a move between log dirs to begin (default 10000).",
            flag="--timeout",
            group="official",
            type=int_arg("--timeout", maximum=INT64_MAX),
            metavar="MS",
            cli_default=10000,
            from_cli=lambda ms: ms / 1000,
        ),
    )


# ----------------------------------------------------------------------- readers


@dataclass(frozen=True)
class Declared:
    """One field with its declaration: ``name`` (the ExecuteOptions field), ``default``."""

    name: str
    default: Any
    option: Option

    @property
    def dest(self) -> str:
        """The argparse destination of the flag (``--on-interrupt`` → ``on_interrupt``)."""
        return (self.option.flag or "").lstrip("-").replace("-", "_")

    def from_cli(self, value: Any) -> Any:
        """The field's value from the parsed flag (None stays None)."""
        if value is None or self.option.from_cli is None:
            return value
        return self.option.from_cli(value)

    def to_widget(self, value: Any) -> Any:
        """A field value as the panel control holds it (None → the "none" sentinel)."""
        return self.option.unset if value is None and self.option.unset is not None else value

    def from_widget(self, value: Any) -> Any:
        """A control's value as the field's value (the "none" sentinel → None)."""
        if self.option.unset is not None and value == self.option.unset:
            return None
        return value


def declared() -> tuple[Declared, ...]:
    """Every ExecuteOptions field with its declaration, in field order."""
    out = []
    for f in fields(ExecuteOptions):
        default = f.default if f.default is not MISSING else None
        out.append(Declared(f.name, default, f.metadata["option"]))
    return tuple(out)


def cli_options(group: str | None = None) -> tuple[Declared, ...]:
    """The fields that are CLI flags (of one ``group`` if given)."""
    return tuple(
        d for d in declared() if d.option.flag and (group is None or d.option.group == group)
    )


def panel_options() -> tuple[Declared, ...]:
    """The fields the notebook panel shows as controls, in field order."""
    return tuple(d for d in declared() if d.option.label)


def live_options() -> tuple[str, ...]:
    """Names of the options that may change while a run goes on (``Run.set_caps``)."""
    return tuple(d.name for d in declared() if d.option.live)


def options_from_cli(args: Any, **overrides: Any) -> ExecuteOptions:
    """ExecuteOptions from parsed CLI arguments (flags absent from ``args`` keep the default),
    validated. ``overrides`` win (e.g. a panel's ``wait=True``)."""
    values: dict[str, Any] = {}
    for d in cli_options():
        if hasattr(args, d.dest):
            values[d.name] = d.from_cli(getattr(args, d.dest))
    values = {k: v for k, v in values.items() if v is not None or d_default(k) is None}
    values.update(overrides)
    return ExecuteOptions(**values).validate()


def d_default(name: str) -> Any:
    """The default of field ``name``."""
    return next(d.default for d in declared() if d.name == name)


def live_changes(changes: dict[str, Any], per_poll: int, r: int | None) -> tuple[int, int | None]:
    """``Run.set_caps``'s two changes that are not caps, taken out of ``changes`` and
    checked: (elections per poll, KIP-435's R), each the current one when not given; a new R
    also sets ``prefer_leader_moves`` (KIP-435's leader-moves-first) unless it is given."""
    per_poll = changes.pop("max_elections_per_poll", per_poll)
    if isinstance(per_poll, bool) or not isinstance(per_poll, int) or per_poll < 1:
        raise UsageError(f"--max-elections-per-poll must be a positive integer, got {per_poll!r}")
    if "parallel_replica_count" in changes:
        r = changes.pop("parallel_replica_count")
        if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 1):
            raise UsageError(
                "--parallel-replica-count must be a positive integer (None = whole move "
                f"at once), got {r!r}"
            )
        changes.setdefault("prefer_leader_moves", r is not None)
    return per_poll, r
