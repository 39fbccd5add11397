"""Pacing flags of the drop-in CLI (KIP-1335 and reassign_kit's own), registered into
``reassign_cli``: ``--execute`` with any of them goes through ``execute.Run``.

KIP-1335: ``--reassignment-batch-size N`` (0 = legacy single request), ``--incremental``
(needs N > 0), ``--reassignment-poll-interval-ms`` (> 0, default 1000), only with --execute.
Ours: per-broker / leader / cluster caps, ``--order``, deadlines and stuck detection with an
expiry policy, ``--wait``, ``--journal``, ``--resume``. SIGINT / SIGTERM stop submitting and
leave the moves in flight with their throttles (or cancel them: ``--on-interrupt cancel``);
the command that resumes or cancels is printed.
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import sys
import time
from typing import Any

from . import reassign_cli as rc
from .engine.journal import read_events, register_config_secrets
from .engine.preflight import default_journal_path, options_from_journal, prepare
from .engine.run import (
    ON_DEADLINE,
    ExecuteOptions,
    Run,
    RunError,
    RunResult,
)
from .engine.schedule import ORDERS
from .errors import UsageError
from .model import Plan

DESTS = (
    "reassignment_batch_size",
    "incremental",
    "reassignment_poll_interval_ms",
    "max_moves_per_broker",
    "max_leader_moves",
    "cluster_max_reassignments",
    "order",
    "move_deadline",
    "run_deadline",
    "stuck_after",
    "on_deadline",
    "wait",
    "journal",
    "resume",
    "on_interrupt",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("paced execution (KIP-1335 and beyond; --execute only)")
    g.add_argument(
        "--reassignment-batch-size",
        type=rc.int_arg("--reassignment-batch-size", 0),
        default=0,
        metavar="N",
        help="0 (default): the whole plan in one request (legacy). N > 0: contiguous batches of "
        "N partitions in (topic, partition) order, each waited for before the next.",
    )
    g.add_argument(
        "--incremental",
        action="store_true",
        help="With --reassignment-batch-size N > 0: keep at most N of this run's moves in "
        "flight, submitting the next as one completes.",
    )
    g.add_argument(
        "--reassignment-poll-interval-ms",
        type=rc.int_arg("--reassignment-poll-interval-ms", 1),
        default=1000,
        metavar="MS",
        help="Milliseconds between polls (default 1000).",
    )
    g.add_argument(
        "--max-moves-per-broker",
        type=rc.int_arg("--max-moves-per-broker", 1),
        metavar="K",
        help="At most K moves adding to or removing from any one broker at once.",
    )
    g.add_argument(
        "--max-leader-moves",
        type=rc.int_arg("--max-leader-moves", 1),
        metavar="L",
        help="At most L moves that change the partition leader at once.",
    )
    g.add_argument(
        "--cluster-max-reassignments",
        type=rc.int_arg("--cluster-max-reassignments", 1),
        metavar="C",
        help="Submit only while fewer than C reassignments (any run's) are in flight.",
    )
    g.add_argument(
        "--order",
        choices=ORDERS,
        default="topic-partition",
        help="Order of the queue (default topic-partition, as KIP-1335).",
    )
    g.add_argument(
        "--move-deadline",
        type=rc.duration_arg("--move-deadline"),
        metavar="DURATION",
        help="A move still running this long after its submission has expired.",
    )
    g.add_argument(
        "--run-deadline",
        type=rc.duration_arg("--run-deadline"),
        metavar="DURATION",
        help="The whole run has expired after this long.",
    )
    g.add_argument(
        "--stuck-after",
        type=rc.duration_arg("--stuck-after"),
        metavar="DURATION",
        help="A move that copied no bytes for this long is stuck (DescribeLogDirs).",
    )
    g.add_argument(
        "--on-deadline",
        choices=ON_DEADLINE,
        default="wait",
        help="On an expired deadline or a stuck move: report and keep waiting (default), stop "
        "submitting and end the run, or cancel the expired / stuck moves.",
    )
    g.add_argument(
        "--wait",
        action="store_true",
        help="Stay until every move is complete, then clear the throttles "
        "(KIP-1335 returns once the last move is submitted).",
    )
    g.add_argument(
        "--journal",
        metavar="FILE",
        help="The run's JSON-lines journal (default reassign-run-<UTC time>.jsonl).",
    )
    g.add_argument(
        "--resume",
        action="store_true",
        help="Resume the run of --journal (after Ctrl-C, a crash or SIGKILL) with "
        "its options: nothing complete is resubmitted, moves in flight are adopted.",
    )
    g.add_argument(
        "--on-interrupt",
        choices=("leave", "cancel"),
        default="leave",
        help="On Ctrl-C / SIGTERM: leave the moves in flight running with their "
        "throttles (default) or cancel them.",
    )


def claims(args: argparse.Namespace) -> bool:
    """Any pacing flag set (not at its default) makes this a paced run."""
    p_defaults = {
        "reassignment_batch_size": 0,
        "incremental": False,
        "reassignment_poll_interval_ms": 1000,
        "order": "topic-partition",
        "on_deadline": "wait",
        "wait": False,
        "resume": False,
        "on_interrupt": "leave",
    }
    return any(getattr(args, d, None) not in (p_defaults.get(d), None) for d in DESTS)


def options_from_args(args: argparse.Namespace) -> ExecuteOptions:
    if args.incremental and args.reassignment_batch_size <= 0:
        raise UsageError("--incremental requires --reassignment-batch-size > 0")
    return ExecuteOptions(
        batch_size=args.reassignment_batch_size,
        incremental=args.incremental,
        poll_interval_ms=args.reassignment_poll_interval_ms,
        max_moves_per_broker=args.max_moves_per_broker,
        max_leader_moves=args.max_leader_moves,
        cluster_max_reassignments=args.cluster_max_reassignments,
        order=args.order,
        throttle=args.throttle or None,
        move_deadline=args.move_deadline,
        run_deadline=args.run_deadline,
        stuck_after=args.stuck_after,
        on_deadline=args.on_deadline,
        wait=args.wait,
        additional=args.additional,
        allow_replication_factor_change=not args.disallow_replication_factor_change,
        parallel_replica_count=getattr(args, "parallel_replica_count", None),
        cancel_on_stop=args.on_interrupt == "cancel",
        log_dir_throttle=args.replica_alter_log_dirs_throttle,
        timeout_s=args.timeout / 1000,
    ).validate()


def _base_command(args: argparse.Namespace) -> list[str]:
    cmd = ["reassign-kit", "--bootstrap-server", args.bootstrap_server]
    if args.command_config:
        cmd += ["--command-config", args.command_config]
    return cmd


def run_paced(args: argparse.Namespace, gateway: Any, plan: Plan) -> int:
    from . import ops

    if args.command_config:
        register_config_secrets(ops.load_command_config(args.command_config))
    if args.resume:
        if not args.journal:
            raise UsageError("--resume needs --journal (the journal of the run to resume)")
        opts = options_from_journal(args.journal)
    else:
        opts = options_from_args(args)
    journal = args.journal or default_journal_path()
    prepared = prepare(
        gateway,
        plan,
        opts,
        journal,
        resume=args.resume,
        rollback_path=args.rollback_file or "",
        source=args.reassignment_json_file,
        plan_path=os.path.abspath(args.reassignment_json_file),
    )
    run = prepared.run
    if args.resume:
        first = next(e for e in read_events(args.journal) if e.get("event") == "run_started")
        print(f"Resuming run {first['run_id']} from {args.journal} with its options.")
    else:
        print("Current partition replica assignment\n")
        print(prepared.rollback.to_json())
        print(
            f"\nSave this to use as the --reassignment-json-file option during rollback "
            f"(saved to {prepared.rollback_path})"
        )
    caps = opts.caps()
    print(
        f"Paced execution: {caps.mode}"
        + (f", N={caps.batch_size}" if caps.batch_size else "")
        + f", order {opts.order}; journal {journal}"
    )

    run.subscribe(_printer(run))
    interrupted: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        interrupted.append(signum)
        run.stop(cancel_inflight=opts.cancel_on_stop)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            result = run.run()
        except RunError:  # reported below with what was submitted; other errors propagate
            result = run.wait(0)
            if result is None:
                raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    _report(result, args, journal, bool(interrupted))
    if interrupted:
        return 130
    return result.exit_code


def _printer(run: Run):
    """One terminal line per event that matters (the journal has everything)."""

    def tp(e: dict[str, Any]) -> str:
        return f"{e.get('topic')}-{e.get('partition')}"

    def show(e: dict[str, Any]) -> None:
        ev = e["event"]
        stamp = time.strftime("%H:%M:%S", time.localtime(e["ts"]))
        if ev == "submitted":
            batch = f" (batch {e['batch'] + 1})" if e.get("batch") is not None else ""
            line = f"submitted {tp(e)} -> {e['target']}{batch}"
        elif ev == "step_submitted" and e.get("steps", 1) > 1:
            line = f"  step {e['step']}/{e['steps']} of {tp(e)} -> {e['target']}"
        elif ev in ("completed", "adopted", "cancelled", "failed"):
            extra = e.get("reason") or ""
            line = f"{ev} {tp(e)}" + (f": {extra}" if extra else "")
        elif ev in ("stuck", "deadline"):
            what = tp(e) if "topic" in e else "the run"
            line = f"{ev.upper()}: {what} (policy: {e.get('policy')})"
        elif ev in ("warning", "error"):
            line = f"{ev.upper()}: {e.get('message')}"
        elif ev in ("paused", "resumed", "caps_changed"):
            line = ev
        else:
            return
        print(f"[{stamp}] {line}", flush=True)

    return show


def _report(res: RunResult, args: argparse.Namespace, journal: str, interrupted: bool) -> None:
    print(
        f"Run {res.run_id}: {res.state}. Submitted {len(res.submitted)}, complete "
        f"{len(res.completed)}, still moving {len(res.still_moving)}, not submitted "
        f"{len(res.pending)}, cancelled {len(res.cancelled)}, failed {len(res.failed)}."
    )
    for tp, err in list(res.failed.items())[:20]:
        print(f"  failed: {tp}: {err}")
    if res.error:
        print(f"Error: {res.error}", file=sys.stderr)
    rates = res.throttles_left.get("broker_rates") if res.throttles_left else None
    if res.cleanup_error is not None:  # never "No throttle left" when the cleanup failed
        verify = _base_command(args) + [
            "--verify",
            "--reassignment-json-file",
            args.reassignment_json_file,
        ]
        for line in res.cleanup_lines(shlex.join(verify)):
            print(line, file=sys.stderr)
    elif res.still_moving:
        shown = ", ".join(str(t) for t in res.still_moving[:10])
        more = " …" if len(res.still_moving) > 10 else ""
        print(f"Moves still running: {shown}{more}.")
        if rates:
            print(
                f"They keep exactly the throttles they need (rates on brokers "
                f"{', '.join(sorted(rates))}); --verify removes them once complete."
            )
    elif rates:
        print(
            f"Throttles left for other reassignments in flight on brokers {', '.join(sorted(rates))}."
        )
    else:
        print("No throttle left by this run.")
    if res.state in ("stopped", "deadline", "failed") or interrupted:
        base = _base_command(args)
        plan_file = args.reassignment_json_file
        resume = base + [
            "--execute",
            "--reassignment-json-file",
            plan_file,
            "--journal",
            journal,
            "--resume",
        ]
        cancel = base + ["--cancel", "--reassignment-json-file", plan_file]
        print("To resume:  " + shlex.join(resume))
        print("To cancel:  " + shlex.join(cancel))


def check(args: argparse.Namespace, action: str) -> None:
    """KIP-1335's argument rules, at argument validation time (nothing read or sent yet)."""
    if action != "execute":
        return
    if args.incremental and args.reassignment_batch_size <= 0:
        raise UsageError("--incremental requires --reassignment-batch-size > 0")
    if args.resume and not args.journal:
        raise UsageError("--resume needs --journal (the journal of the run to resume)")


def register() -> None:
    if add_arguments in rc.PARSER_EXTENSIONS:
        return
    rc.PARSER_EXTENSIONS.append(add_arguments)
    rc.ARG_CHECKS.append(check)
    rc.ACTION_OPTIONS["execute"].update(DESTS)
    # first: a paced run with --parallel-replica-count is ours (we pass the steps hook on)
    rc.EXECUTE_HANDLERS.insert(0, (claims, run_paced))


register()
