"""`reassign-kit snapshot | plan | validate`: record a cluster, plan from the record, validate
a plan against it — offline, with planning and big validations running on Spark.

    reassign-kit snapshot --bootstrap-server B [--command-config F] [--sample-load 5m]
        --output S.json
    reassign-kit plan --snapshot S.json [--remove-brokers 1,2] [--balance replicas,leaders,bytes]
        [--demote-brokers 3] [--drain-cordoned] [--capacity capacity.json [--bytes-tolerance 0.05]]
        [--replication-factor N --topics t1,t2] [--spark-master URL] --output plan.json
        [--report report.json] [--rollback rollback.json]
    reassign-kit validate --snapshot S.json --reassignment-json-file plan.json
        [--disallow-replication-factor-change] [--remove-brokers 1,2] [--capacity capacity.json]

Each takes a topic selection: [--topics-regex RE] [--exclude-topics-regex RE]
[--include-internal] (internal topics such as __consumer_offsets are left out by default).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

from ..api import plan as make_plan
from ..api import take_snapshot as record
from ..cluster.views import require_permissions
from ..errors import EXIT_GOAL_NOT_MET, InvalidPlanError, UsageError
from ..model import Plan
from ..operations.execute import connect
from ..planner.in_process import generate
from ..planner.params import DEFAULT_BYTES_TOLERANCE, DEFAULT_CHUNKS
from ..planner.record import PlanRecord, plan_hash, record_path
from ..planner.report import format_report, unmet_goals
from ..planner.rules import Capacity, RuleContext, plan_problems_offline, selection_problems
from ..run.option_spec import duration_arg, share_arg
from ..snapshot.filter import TopicFilter
from ..snapshot.history import LoadHistory
from ..snapshot.snapshot import Snapshot, take_snapshot

SPARK_VALIDATE_MIN_MOVES = 20_000  # below this an in-process pass is faster than Spark start-up


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise UsageError(f"{self.prog}: {message}")


def _int_list(flag: str):
    def conv(text: str) -> list[int]:
        try:
            out = [int(x) for x in text.split(",") if x.strip()]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} takes broker ids like 1,2,3, got {text!r}"
            ) from None
        if any(b < 0 for b in out):
            raise argparse.ArgumentTypeError(f"{flag}: broker ids are non-negative, got {text!r}")
        return out

    return conv


def _tolerance_of(flag: str):
    def conv(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{flag} takes a fraction like 0.05, got {text!r}"
            ) from None
        if not 0 <= v < 1:
            raise argparse.ArgumentTypeError(f"{flag} must be in [0, 1), got {text!r}")
        return v

    return conv


_tolerance = _tolerance_of("--bytes-tolerance")


def _topics(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def add_topic_selection(p) -> None:
    """--topics-regex / --exclude-topics-regex / --include-internal."""
    p.add_argument(
        "--topics-regex",
        metavar="RE",
        help="only topics whose whole name matches this regular expression",
    )
    p.add_argument(
        "--exclude-topics-regex",
        metavar="RE",
        help="leave out topics whose whole name matches this regular expression",
    )
    p.add_argument(
        "--include-internal",
        action="store_true",
        help="also internal topics (__consumer_offsets, __transaction_state, "
        "__share_group_state, any name starting with __), left out by default",
    )


def topic_filter(args: argparse.Namespace) -> TopicFilter:
    return TopicFilter(
        include=getattr(args, "topics_regex", None),
        exclude=getattr(args, "exclude_topics_regex", None),
        include_internal=bool(getattr(args, "include_internal", False)),
    )


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="reassign-kit", description="snapshot, plan and validate")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    _add_snapshot(sub)
    _add_plan(sub)
    _add_validate(sub)
    return p


def _add_snapshot(sub: Any) -> None:
    s = sub.add_parser("snapshot", help="record brokers, topics, partitions and sizes")
    s.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="the brokers to ask"
    )
    s.add_argument(
        "--command-config",
        metavar="FILE",
        help="admin client .properties (security.protocol, sasl.*, ssl.*); never echoed",
    )
    s.add_argument("--topics", type=_topics, help="only these topics (default: all)")
    s.add_argument("--output", required=True, help="S.json, or a directory ending in .parquet")
    s.add_argument(
        "--sample-load",
        type=duration_arg("--sample-load"),
        metavar="DURATION",
        help="also measure each partition's load over this window (90, 90s, 5m) with the "
        "Admin API alone: produce bytes/s and messages/s, consumer fetch bytes/s and groups, "
        "size growth; longer than the groups' commit interval many times over",
    )
    _add_load_history(s)
    add_topic_selection(s)


def _days_or_duration(name: str):
    """A duration as ``duration_arg`` takes it, or in days (7d)."""
    conv = duration_arg(name)

    def days(s: str) -> float:
        if s[-1:].lower() != "d":
            return conv(s)
        try:
            return conv(str(float(s[:-1]) * 86_400))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be a duration like 90s, 15m, 2h or 7d, not {s!r}"
            ) from None

    return days


def _add_load_history(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--load-from",
        metavar="SOURCE",
        help="each partition's load from a metrics history instead of a live sample: "
        "prometheus:URL (the JMX exporter's kafka_log_log_* series, kafka_exporter's "
        "kafka_consumergroup_current_offset) or parquet:PATH (an export of timestamp, topic, "
        "partition, metric, value, reduced on Spark)",
    )
    s.add_argument(
        "--load-window",
        type=_days_or_duration("--load-window"),
        default=7 * 86_400.0,
        metavar="DURATION",
        help="with --load-from: the history taken, up to now (an export: its last sample); "
        "default 7d",
    )
    s.add_argument(
        "--load-quantile",
        default="p95",
        metavar="Q",
        help="with --load-from: the quantile of the rates over the window (p50, p95, p99.9, "
        "mean, max); default p95",
    )
    s.add_argument(
        "--load-step",
        type=_days_or_duration("--load-step"),
        default=300.0,
        metavar="DURATION",
        help="with --load-from: the rates' interval (default 5m, Cruise Control's window)",
    )


def _add_plan(sub: Any) -> None:
    pl = sub.add_parser("plan", help="a minimal-movement, balanced, rack-aware plan")
    pl.add_argument(
        "--snapshot",
        required=True,
        metavar="S.json",
        help="the cluster to plan for (`reassign-kit snapshot`), JSON or a .parquet directory",
    )
    _plan_goals(pl)
    _plan_disk_options(pl)
    _plan_engine_and_outputs(pl)
    add_topic_selection(pl)


def _plan_goals(pl: argparse.ArgumentParser) -> None:
    """What the plan does: drain, balance, demote, fit capacity, change replication factors."""
    pl.add_argument(
        "--remove-brokers",
        type=_int_list("--remove-brokers"),
        default=[],
        metavar="1,2",
        help="decommission: move every replica off these brokers",
    )
    pl.add_argument(
        "--balance",
        default="replicas,leaders",
        help="goals: replicas,leaders,bytes,network (network = network_in,network_out,"
        "leader_load: needs a snapshot taken with --sample-load),disks (each broker's log "
        "dirs within --disk-tolerance of their share, a dir named for every replica moved)",
    )
    pl.add_argument(
        "--network-tolerance",
        type=float,
        default=None,
        metavar="F",
        help="with --balance network: each broker's network in / out / leader load at most "
        "(1 + F) x its share (default 0.1); the capacity file's network_in_bytes_s and "
        "network_out_bytes_s are hard limits",
    )
    pl.add_argument(
        "--demote-brokers",
        type=_int_list("--demote-brokers"),
        default=[],
        help="a leaders-only plan (replica order only, nothing copied): these brokers lead no "
        "partition another replica can lead (before maintenance)",
    )
    pl.add_argument(
        "--capacity",
        metavar="FILE",
        help="capacity file (JSON, see README): per broker disk_bytes and optional "
        "max_replicas, hard limits the plan never exceeds; weighs --balance bytes",
    )
    pl.add_argument(
        "--bytes-tolerance",
        type=_tolerance,
        default=DEFAULT_BYTES_TOLERANCE,
        metavar="F",
        help="with --balance bytes: each broker's bytes within this fraction of its share "
        f"(capacity share, equal without --capacity; default {DEFAULT_BYTES_TOLERANCE})",
    )
    pl.add_argument(
        "--replication-factor",
        type=int,
        metavar="N",
        help="change the replication factor of the --topics to N",
    )
    pl.add_argument(
        "--topics",
        type=_topics,
        default=[],
        metavar="T1,T2",
        help="with --replication-factor: the topics whose replication factor changes",
    )


def _plan_disk_options(pl: argparse.ArgumentParser) -> None:
    """The log dirs: the ceiling, their balance inside each broker, cordoned ones drained."""
    pl.add_argument(
        "--disk-ceiling",
        type=share_arg("--disk-ceiling"),
        default=0.85,
        metavar="SHARE",
        help="refuse an end state leaving a broker's log dirs above this share of their "
        "filesystem (the snapshot's DescribeLogDirs sizes, or --capacity; default 0.85)",
    )
    pl.add_argument(
        "--drain-cordoned",
        action="store_true",
        help="drain every broker whose log dirs are all cordoned (KIP-1066 cordoned.log.dirs, "
        "as the snapshot recorded it), and every cordoned log dir of the others into their "
        "other dirs; a cordoned broker or dir never receives a replica either way",
    )
    pl.add_argument(
        "--disk-tolerance",
        type=_tolerance_of("--disk-tolerance"),
        default=None,
        metavar="F",
        help="with --balance disks: each log dir's bytes within this fraction of its share of "
        "its broker's bytes (by the dirs' sizes when known, else equal; default 0.1)",
    )


def _plan_engine_and_outputs(pl: argparse.ArgumentParser) -> None:
    """Where the plan is computed and what is written (the plan, its report and rollback)."""
    pl.add_argument("--spark-master", help="any spark.master (default local[2])")
    pl.add_argument(
        "--engine",
        choices=("spark", "local"),
        default="spark",
        help="spark (default) or local: the same planner in this process",
    )
    pl.add_argument("--chunks", type=int, default=None, help="hash buckets planned independently")
    pl.add_argument(
        "--output",
        required=True,
        metavar="PLAN.json",
        help="the plan, in kafka-reassign-partitions' JSON; its record (hash, the state it was "
        "planned from) is written beside it as PLAN.record.json",
    )
    pl.add_argument("--report", help="write the plan report (JSON) here")
    pl.add_argument(
        "--rollback", help="write the current assignment of the planned partitions here"
    )
    pl.add_argument(
        "--quiet", action="store_true", help="print only the last line (partitions, sha256)"
    )
    pl.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show Spark's and the JVM's log lines here (else in the log file named at the end)",
    )


def _add_validate(sub: Any) -> None:
    v = sub.add_parser("validate", help="check a plan against a snapshot")
    v.add_argument(
        "--snapshot", required=True, metavar="S.json", help="the cluster to check against"
    )
    v.add_argument(
        "--reassignment-json-file", required=True, metavar="FILE", help="the plan to check"
    )
    v.add_argument(
        "--disallow-replication-factor-change",
        action="store_true",
        help="also reject moves that change a partition's replication factor",
    )
    v.add_argument(
        "--remove-brokers",
        type=_int_list("--remove-brokers"),
        default=[],
        help="also reject targets on these brokers",
    )
    v.add_argument(
        "--capacity",
        metavar="FILE",
        help="also reject a plan leaving a broker over its disk_bytes / max_replicas",
    )
    v.add_argument("--spark-master", help="any spark.master (default local[2])")
    v.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show Spark's and the JVM's log lines here (else in the log file named at the end)",
    )
    v.add_argument(
        "--engine",
        choices=("auto", "spark", "local"),
        default="auto",
        help=f"auto: Spark from {SPARK_VALIDATE_MIN_MOVES} moves or with --spark-master",
    )
    add_topic_selection(v)


def check_output(path: str, flag: str, directory_ok: bool = False) -> None:
    """An output file's folder must exist (and the path must not be a folder, unless
    ``directory_ok``: a Parquet snapshot): said before anything is read, planned or asked."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{flag} {path}: the directory {parent} does not exist (create it first)")
    if os.path.isdir(path) and not directory_ok:
        raise UsageError(f"{flag} {path}: is a directory, not a file")


def write_output(flag: str, path: str, write) -> None:
    """``write()``; an OSError (disk full, no permission) becomes a UsageError naming the
    option and the file."""
    try:
        write()
    except OSError as e:
        raise UsageError(f"{flag} {path}: cannot write it: {e.strerror or e}") from None


def _snapshot(args: argparse.Namespace) -> int:

    check_output(args.output, "--output", directory_ok=True)
    selection = topic_filter(args)
    history = None
    if args.load_from is not None and args.sample_load is not None:
        raise UsageError("--sample-load and --load-from: one source of load, not both")
    if args.load_from is not None:
        history = LoadHistory(args.load_from, args.load_window, args.load_quantile, args.load_step)
        history.check()  # before the cluster is asked anything
    gw = connect(args.bootstrap_server, args.command_config)
    try:
        snap, excluded = record(gw, args.topics, selection, args.sample_load, history=history)
    finally:
        gw.close()
    write_output("--output", args.output, lambda: snap.write(args.output))
    print(
        f"snapshot: {len(snap.brokers)} brokers, {len(snap.topics)} topics, "
        f"{len(snap.partitions)} partitions, {snap.replica_count()} replicas -> {args.output}"
    )
    if snap.load is not None:
        print(
            f"snapshot: load ({snap.load.source}) over {snap.load.seconds:.1f}s for "
            f"{sum(p.load is not None for p in snap.partitions)} of {len(snap.partitions)} "
            "partitions"
        )
        for what in snap.load.unread:
            print(f"snapshot: load not read: {what}", file=sys.stderr)
    unreported = snap.unreported_capacity()
    if unreported:  # said once: the ceiling then needs --capacity for these brokers
        print(
            f"snapshot: broker(s) {', '.join(map(str, unreported))} report no log dir sizes "
            "(DescribeLogDirs v4+, Kafka 3.3+); a disk ceiling needs --capacity for them",
            file=sys.stderr,
        )
    if excluded:
        print(
            f"snapshot: excluded {len(excluded)} topic(s): "
            + ", ".join(f"{t} ({why})" for t, why in excluded.items()),
            file=sys.stderr,
        )
    return 0


def _plan(args: argparse.Namespace) -> int:

    if args.topics and args.replication_factor is None:
        raise UsageError(
            "--topics needs --replication-factor (it names the topics whose RF changes)"
        )
    for flag, path in (
        ("--output", args.output),
        ("--report", args.report),
        ("--rollback", args.rollback),
    ):
        if path:
            check_output(path, flag)
    result = make_plan(
        args.snapshot,
        remove_brokers=args.remove_brokers,
        balance=args.balance,
        replication_factor=args.replication_factor,
        topics=args.topics,
        spark_master=args.spark_master,
        engine=args.engine,
        chunks=args.chunks or DEFAULT_CHUNKS,
        topic_filter=topic_filter(args),
        demote_brokers=args.demote_brokers,
        capacity=Capacity.read(args.capacity) if args.capacity else None,
        bytes_tolerance=args.bytes_tolerance,
        drain_cordoned=args.drain_cordoned,
        network_tolerance=args.network_tolerance,
        disk_ceiling=args.disk_ceiling,
        disk_tolerance=args.disk_tolerance,
    )
    report = result.report()
    unmet = unmet_goals(report)
    if not len(result.plan) and not unmet:
        print("plan: nothing to move; the cluster already meets the goals", file=sys.stderr)
    write_output("--output", args.output, lambda: result.plan.write(args.output))
    report["plan_sha256"] = plan_hash(result.plan)
    if args.report:
        write_output("--report", args.report, lambda: _write_json(args.report, report))
    if args.rollback:
        write_output("--rollback", args.rollback, lambda: result.current.write(args.rollback))
    record = PlanRecord.for_result(result, snapshot=args.snapshot)
    record_file = record_path(args.output)
    write_output("--output", record_file, lambda: record.write(record_file))
    if not args.quiet:
        print(format_report(report))
    print(
        f"plan: {len(result.plan)} partition(s) -> {args.output} (sha256 {record.plan_sha256}; "
        f"the state it was planned from: {record_file})"
    )
    if unmet:  # written (it may still help), but not done: a distinct exit code says so
        for line in unmet:
            print(f"plan: {line}", file=sys.stderr)
        print(
            f"plan: {len(result.plan)} partition(s) written, but a stated goal is not met "
            f"(exit {EXIT_GOAL_NOT_MET})",
            file=sys.stderr,
        )
        return EXIT_GOAL_NOT_MET
    return 0


def _write_json(path: str, obj: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def _validate(args: argparse.Namespace) -> int:

    plan_ = Plan.read(args.reassignment_json_file)
    snap = Snapshot.read(args.snapshot)
    unknown = sorted(set(args.remove_brokers) - set(snap.broker_ids()))
    if unknown:
        raise UsageError(f"--remove-brokers: broker(s) {unknown} are not in the snapshot")
    ctx = RuleContext(snap.racks(), frozenset(args.remove_brokers), cordoned=snap.cordoned())
    capacity = Capacity.read(args.capacity) if args.capacity else None
    if capacity is not None:
        capacity.check_brokers(snap.broker_ids(), args.remove_brokers)
    engine = args.engine
    if engine == "auto":
        engine = (
            "spark" if (args.spark_master or len(plan_) >= SPARK_VALIDATE_MIN_MOVES) else "local"
        )
    if engine == "spark":
        from ..spark.session import get_spark
        from ..spark.validate import validate_spark

        problems = validate_spark(
            get_spark(args.spark_master),
            snap,
            plan_,
            ctx,
            args.disallow_replication_factor_change,
            capacity=capacity,
        )
    else:
        problems = plan_problems_offline(
            plan_, snap, ctx, args.disallow_replication_factor_change, capacity
        )
    # moves of topics the selection leaves out (internal ones by default) are problems too
    problems = [*problems, *selection_problems(plan_, topic_filter(args))]
    if problems:
        raise InvalidPlanError(
            problems, header=f"{args.reassignment_json_file} is not valid for {args.snapshot}"
        )
    print(f"{args.reassignment_json_file}: valid ({len(plan_)} partition(s), checked on {engine})")
    return 0


# -- `--generate` of the drop-in CLI (cli.reassign), with this planner ------------------------
def read_topics_to_move(path: str) -> list[str]:
    """``{"topics": [{"topic": "t"}], "version": 1}``, read strictly (every problem at once)."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise UsageError(f"--topics-to-move-json-file: cannot read {path}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise InvalidPlanError(
            [f"not UTF-8 text (byte {e.start}: {e.reason})"],
            header=f"{path} is not a topics-to-move file",
        ) from None
    except json.JSONDecodeError as e:
        raise InvalidPlanError(
            [f"not valid JSON: {e}"], header=f"{path} is not a topics-to-move file"
        ) from e
    problems: list[str] = []
    topics: list[str] = []
    if not isinstance(doc, dict):
        raise InvalidPlanError(
            ["the top level must be a JSON object"], header=f"{path} is not a topics-to-move file"
        )
    if doc.get("version", 1) != 1:
        problems.append(f"unsupported version {doc.get('version')!r}; only 1 is known")
    for k in sorted(set(doc) - {"topics", "version"}):
        problems.append(f"unknown field '{k}' (expected 'topics' and 'version')")
    entries = doc.get("topics")
    if not isinstance(entries, list) or not entries:
        problems.append("'topics' must be a non-empty array of {\"topic\": name}")
        entries = []
    for i, e in enumerate(entries):
        name = e.get("topic") if isinstance(e, dict) else None
        if not isinstance(name, str) or not name:
            problems.append(f"topics[{i}]: needs a non-empty string 'topic'")
        elif name in topics:
            problems.append(f"topics[{i}]: topic {name} is listed twice")
        else:
            topics.append(name)
    if problems:
        raise InvalidPlanError(problems, header=f"{path} is not a valid topics-to-move file")
    return topics


def check_generate(args: argparse.Namespace) -> None:
    """--generate's arguments, checked before anything connects."""
    if not args.topics_to_move_json_file or not args.broker_list:
        raise UsageError(
            "--generate needs --topics-to-move-json-file and --broker-list (the partitions are "
            "placed by the minimal-movement planner of `reassign-kit plan`)"
        )
    try:
        brokers = [int(b) for b in args.broker_list.split(",") if b.strip()]
    except ValueError:
        raise UsageError(
            f"--broker-list takes broker ids like 1,2,3, got {args.broker_list!r}"
        ) from None
    if not brokers or any(b < 0 for b in brokers):
        raise UsageError(
            f"--broker-list takes non-negative broker ids like 1,2,3, got {args.broker_list!r}"
        )
    read_topics_to_move(args.topics_to_move_json_file)
    if getattr(args, "capacity", None):
        Capacity.read(args.capacity)  # a bad file fails before anything connects


def run_generate(args: argparse.Namespace, gateway: Any, _plan: Any = None) -> int:
    """The official tool's --generate output (current, then proposed assignment), computed by
    the minimal-movement planner instead of a from-scratch placement."""
    check_generate(args)
    brokers = [int(b) for b in args.broker_list.split(",") if b.strip()]
    topics = read_topics_to_move(args.topics_to_move_json_file)
    require_permissions(gateway, "generate", ["DESCRIBE"])  # else its topics seem missing
    known = gateway.topic_partition_counts(None)
    missing = [t for t in topics if t not in known]
    if missing:
        raise UsageError(
            f"--topics-to-move-json-file: topic(s) {missing} do not exist in the cluster"
        )
    snap = take_snapshot(gateway, topics)
    if args.disable_rack_aware:
        snap = dataclasses.replace(
            snap, brokers=tuple(dataclasses.replace(b, rack=None) for b in snap.brokers)
        )
    selection = topic_filter(args)
    kept, excluded = selection.split(topics)
    if excluded:
        print(
            "--generate: left out " + ", ".join(f"{t} ({why})" for t, why in excluded.items()),
            file=sys.stderr,
        )
    if not kept:  # an empty proposal would read as "nothing to move"
        raise UsageError(
            "--generate: the topic selection leaves out every topic of "
            f"--topics-to-move-json-file ({'; '.join(f'{t}: {w}' for t, w in excluded.items())})"
        )
    capacity = Capacity.read(args.capacity) if getattr(args, "capacity", None) else None
    current, proposed = generate(snap, topics, brokers, selection, capacity)
    print("Current partition replica assignment")
    print(current.to_json())
    print()
    print("Proposed partition reassignment configuration")
    print(proposed.to_json())
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if getattr(args, "verbose", False):
        os.environ["RK_VERBOSE"] = "1"  # Spark's and the JVM's lines stay on the terminal
    code = {"snapshot": _snapshot, "plan": _plan, "validate": _validate}[args.cmd](args)
    from ..spark.session import log_path

    if log_path():
        print(f"{args.cmd}: Spark's and the JVM's log: {log_path()} (-v shows it here)")
    return code
