"""Paced ``--execute`` (KIP-1335, KIP-435 steps and reassign_kit's own options): every flag
comes from ``run.options``; this module turns them into one ``preflight`` + ``Run`` and
prints what happens.

Any pacing or step option makes a run paced (``is_paced``): ``--parallel-replica-count R``
alone too, so R gets every pacing, throttle, timeout, journal and signal option. SIGINT /
SIGTERM stop (drain: submit nothing more; moves in flight go on with their throttles) or, with
``--on-interrupt cancel``, cancel (roll back every move not complete to its original replicas);
the command that resumes or cancels (rolls back from the journal) is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ..api import StartedRun, start_run
from ..errors import EXIT_INTERRUPTED, RunError, UsageError
from ..model import Plan
from ..moves.journal import read_events
from ..moves.results import RunResult
from ..moves.steps import describe_steps, plan_steps
from ..outputs.metrics import open_metrics
from ..outputs.notify import Notifier
from ..pacing.controller import pace_line
from ..planner.record import Approval
from ..run.options import ExecuteOptions, cli_options, options_from_cli
from ..run.resume import options_from_journal
from ..run.run import Run
from ..watch.text import run_progress_line
from .live import LiveState, LiveView, wants_live

PACED_GROUPS = ("paced", "steps")


def is_paced(args: argparse.Namespace) -> bool:
    """Any pacing or step option away from its default, or a journal / resume, makes a run
    paced; otherwise --execute is the official tool's single request."""
    if getattr(args, "journal", None) or getattr(args, "resume", False):
        return True
    for d in cli_options():
        if d.option.group in PACED_GROUPS and hasattr(args, d.dest):
            value = getattr(args, d.dest)
            default = d.option.cli_default if d.option.cli_default is not None else None
            if value not in (default, None, False):
                return True
    return False


def options_from_args(args: argparse.Namespace) -> ExecuteOptions:
    """The run's options from the parsed flags (one translation: ``run.options``)."""
    if args.incremental and args.reassignment_batch_size <= 0:
        raise UsageError("--incremental requires --reassignment-batch-size > 0")
    return options_from_cli(args)


def check(args: argparse.Namespace) -> None:
    """KIP-1335's argument rules, at argument validation time (nothing read or sent yet)."""
    if args.incremental and args.reassignment_batch_size <= 0:
        raise UsageError("--incremental requires --reassignment-batch-size > 0")
    if args.resume and not args.journal:
        raise UsageError("--resume needs --journal (the journal of the run to resume)")
    if not args.resume and is_paced(args):  # --pace and its companions, before connecting
        options_from_args(args)


def _base_command(args: argparse.Namespace) -> list[str]:
    cmd = ["reassign-kit", "--bootstrap-server", args.bootstrap_server]
    if args.command_config:
        cmd += ["--command-config", args.command_config]
    return cmd


def run_paced(args: argparse.Namespace, gateway: Any, plan: Plan) -> int:
    if args.resume:
        if not args.journal:
            raise UsageError("--resume needs --journal (the journal of the run to resume)")
        opts = options_from_journal(args.journal)  # the metrics listener opens with them
    else:
        opts = options_from_args(args)
    # the run's metrics out: listening / writable before anything is sent
    metrics = open_metrics(opts.metrics_port, opts.metrics_textfile)
    started = _start(args, gateway, plan, opts)
    live = (
        LiveView(LiveState(len(plan.moves), opts.sample_interval), sys.stdout)
        if wants_live(sys.stdout)
        else None
    )
    result, interrupted = _run_watched(started.prepared.run, args, opts, live, metrics)
    journal, home = started.journal, started.home
    _report(result, args, journal, bool(interrupted))
    if home is not None and result.state == "done" and not interrupted:
        home.mark_finished("done")
    if interrupted and result.cleanup_error is None:  # a cleanup left undone says so: exit 8
        return EXIT_INTERRUPTED
    return result.exit_code


def _start(args: argparse.Namespace, gateway: Any, plan: Plan, opts: ExecuteOptions) -> StartedRun:
    """The run prepared (approved, its state home and rollback written) and what it will do
    printed, as the official tool prints before it sends."""
    started = start_run(
        gateway,
        plan,
        opts,
        journal=args.journal,
        resume=args.resume,
        rollback_path=args.rollback_file or "",
        state_dir=getattr(args, "state_dir", None),
        source=args.reassignment_json_file,
        plan_path=os.path.abspath(args.reassignment_json_file),
        approval=Approval(
            getattr(args, "expect_plan_hash", None),
            bool(getattr(args, "allow_drift", False)),
            getattr(args, "plan_record", None),
        ),
    )
    prepared, home = started.prepared, started.home
    journal = started.journal
    if home is not None:
        print(f"Run state: {home.dir}")
    for line in prepared.approval:
        print(line)
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
    if opts.parallel_replica_count and not args.resume:
        _print_steps(prepared, opts.parallel_replica_count)
    print(f"{paced_header(opts)}; journal {journal}")
    return started


def paced_header(opts: ExecuteOptions) -> str:
    """What bounds the run, in one line: the mode, the order, the pace and every cap set."""
    caps = opts.caps()
    parts = [
        f"Paced execution: {caps.mode}" + (f", N={caps.batch_size}" if caps.batch_size else "")
    ]
    parts.append(f"order {opts.order}")
    if opts.pace == "adaptive":
        slo = str(opts.slo_produce_p99)
        slo = f"the baseline {slo}" if slo.startswith("+") else slo
        parts.append(f"pace adaptive (produce p99 objective {slo})")
    if caps.max_moves_per_broker is not None:
        grown = ", each from 1 as its moves copy at their rate" if opts.pace == "adaptive" else ""
        parts.append(f"at most {caps.max_moves_per_broker} moves per broker{grown}")
    if caps.max_leader_moves is not None:
        parts.append(f"at most {caps.max_leader_moves} leader moves")
    if caps.cluster_max_reassignments is not None:
        parts.append(f"at most {caps.cluster_max_reassignments} reassignments in the cluster")
    return ", ".join(parts)


def _run_watched(
    run: Run,
    args: argparse.Namespace,
    opts: ExecuteOptions,
    live: LiveView | None,
    metrics: Any,
) -> tuple[RunResult, list[int]]:
    """The run to its end with its watchers (the printer or live view, the notifier, the
    metrics) and the SIGINT / SIGTERM handler; the result and the signals received."""
    run.subscribe(_printer(run, progress_lines=live is None))
    if live is not None:
        run.subscribe(live.state.on_event)
    notifier = Notifier(args.notify) if getattr(args, "notify", None) else None
    if notifier:
        run.subscribe(notifier.on_event)
    if metrics is not None:
        metrics.attach(run)
        if metrics.port is not None:
            print(f"Metrics: http://127.0.0.1:{metrics.port}/metrics")
    interrupted: list[int] = []
    on_signal = signal_handler(run, opts.cancel_on_stop, interrupted)
    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with live if live is not None else contextlib.nullcontext():
            try:
                result = run.run()
            except RunError:  # reported below with what was submitted; others propagate
                result = run.wait(0)
                if result is None:
                    raise
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        if notifier:
            notifier.close()
        if metrics is not None:
            metrics.close()  # the textfile's last write (the run's end)
    return result, interrupted


def signal_handler(
    run: Run, cancel_on_stop: bool, interrupted: list[int]
) -> Callable[[int, Any], None]:
    """SIGINT / SIGTERM: stop the run (``cancel_on_stop``: cancel it), noting each signal in
    ``interrupted``. A handler runs in the main thread between two of its bytecodes, which may
    be inside the journal's write, its lock held, or a print: it only records the signal and
    asks for the stop on a thread of its own, which waits for that lock. Before, the stop was
    asked in the handler, journaled its lifecycle event under the lock the interrupted write
    held, and the run hung for good (a fresh-clone CI run: SIGINT right after two
    submissions, no exit in 120 s)."""

    def stop(again: bool) -> None:
        if again:
            print("Interrupted again: no longer waiting for the rollback (it goes on).", flush=True)
        run.stop(cancel_inflight=cancel_on_stop)

    def on_signal(signum: int, _frame: Any) -> None:
        interrupted.append(signum)
        again = len(interrupted) == 2 and cancel_on_stop
        threading.Thread(target=stop, args=(again,), name="rk-signal", daemon=True).start()

    return on_signal


def _print_steps(prepared: Any, r: int) -> None:
    """The KIP-435 steps of every move, printed before anything is sent."""
    print(f"Replica-level steps (--parallel-replica-count {r}):")
    for m in prepared.plan:
        st = prepared.states.get(m.tp)
        if st is None:
            continue
        min_isr = (prepared.min_isr or {}).get(m.tp.topic, 1)
        steps = plan_steps(st.replicas, m.replicas, r, min_isr, st.isr or None, m.tp)
        print(f"  {m.tp} (min.insync.replicas {min_isr}):")
        for line in describe_steps(st.replicas, steps):
            print(f"    {line}")


PROGRESS_EVERY_S = 30.0  # the paced run's progress line (its samples come every 5 s)


def _printer(run: Run, progress_lines: bool = True):
    """One terminal line per event that matters (the journal has everything); a progress
    line every ``PROGRESS_EVERY_S`` unless the live view shows the progress."""

    last_progress = [-1e18]  # ts of the last progress line printed

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
            if ev == "cancelled" and e.get("replicas") is not None:
                line += f" (back at its original replicas {e['replicas']})"
        elif ev == "rolling_back":
            line = f"rolling back {tp(e)}: {e.get('replicas')} -> {e.get('original')}"
        elif ev in ("stuck", "deadline"):
            what = tp(e) if "topic" in e else "the run"
            why = f": {e['reason']}" if e.get("reason") else ""
            line = f"{ev.upper()}: {what}{why} (policy: {e.get('policy')})"
        elif ev in ("warning", "error"):
            line = f"{ev.upper()}: {e.get('message')}"
        elif ev == "leader_elected" and e.get("result") == "elected":
            line = (
                f"leader of {tp(e)}: {e.get('previous')} -> {e.get('leader')} (preferred, elected)"
            )
        elif ev == "election_failed":
            final = "" if e.get("final") else f" (attempt {e.get('attempt')}, tried again)"
            line = f"ELECTION FAILED: {tp(e)}: {e.get('why') or e.get('error')}{final}"
        elif ev in ("paused", "resumed", "caps_changed"):
            line = ev
        elif ev == "pace_decision":
            line = pace_line(e)
        elif ev == "pace_started":
            line = (
                f"pace adaptive: objective produce p99 {e.get('objective')}, rates "
                f"{e.get('floor')}..{e.get('ceiling')} B/s per broker, start {e.get('start_rate')}"
                f" (+{e.get('step')} / x0.5), health from {e.get('source')}"
            )
        elif ev == "throttle_changed":
            line = f"throttle changed to {e.get('rate')} B/s"
        elif ev == "sample" and progress_lines and e["ts"] - last_progress[0] >= PROGRESS_EVERY_S:
            line = run_progress_line(e) or ""
            if not line:
                return
            last_progress[0] = e["ts"]
        else:
            return
        print(f"[{stamp}] {line}", flush=True)

    return show


def _report_elections(res: RunResult, args: argparse.Namespace) -> None:
    """The preferred leader elections: counts, the check, and what is left to elect."""
    el = res.elections
    if not el:
        return
    print(
        f"Preferred leader elections: {el.get('elected', 0)} elected, "
        f"{el.get('not_needed', 0)} not needed (led by it already), {el.get('failed', 0)} "
        f"failed, {el.get('pending', 0)} not sent."
    )
    if res.leaders_checked:
        print(
            f"Leaders checked: {res.leaders_checked - len(res.leaders_not_preferred)} of "
            f"{res.leaders_checked} led by their preferred replica."
        )
    for tp, why in list(res.leaders_not_preferred.items())[:20]:
        print(f"  NOT led by its preferred replica: {tp}: {why}")
    left = len(res.elections_pending) + len(res.elections_not_due)
    if left:
        verify = _base_command(args) + [
            "--verify",
            "--elect-leaders",
            "--reassignment-json-file",
            args.reassignment_json_file,
        ]
        print(
            f"{left} partition(s) still to be led by their new preferred replica (moves not "
            f"complete when the run returned, or elections not sent): once complete, "
            f"{shlex.join(verify)} elects them."
        )


def _report(res: RunResult, args: argparse.Namespace, journal: str, interrupted: bool) -> None:
    print(
        f"Run {res.run_id}: {res.state}. Submitted {len(res.submitted)}, complete "
        f"{len(res.completed)}, still moving {len(res.still_moving)}, between steps "
        f"{len(res.between_steps)}, not submitted {len(res.not_submitted)}, cancelled (back at "
        f"their original replicas) {len(res.cancelled)}, failed {len(res.failed)}."
    )
    if res.between_steps:
        shown = ", ".join(str(t) for t in res.between_steps[:10])
        print(
            f"Between two KIP-435 steps (an intermediate replica set, nothing in flight): "
            f"{shown}{' …' if len(res.between_steps) > 10 else ''}; --resume goes on with "
            "their next step, the cancel command rolls them back to their original replicas."
        )
    if res.rolling_back:
        shown = ", ".join(str(t) for t in res.rolling_back[:10])
        print(
            f"Not back at their original replicas within --rollback-timeout: {shown}"
            f"{' …' if len(res.rolling_back) > 10 else ''}; the rollback goes on, throttled. "
            "The cancel command below waits for it and verifies."
        )
    for tp, err in list(res.failed.items())[:20]:
        print(f"  failed: {tp}: {err}")
    _report_elections(res, args)
    if res.error:
        print(f"Error: {res.error}", file=sys.stderr)
    left = res.throttles_left or {}
    rates = {**(left.get("broker_rates") or {}), **(left.get("log_dir_rates") or {})}
    lists = sorted({*(left.get("leader_replicas") or {}), *(left.get("follower_replicas") or {})})
    lists_and_rates = "; ".join(
        ([f"rates on brokers {', '.join(sorted(rates, key=str))}"] if rates else [])
        + ([f"replica lists on topics {', '.join(lists[:10])}"] if lists else [])
    )
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
    elif not res.throttles_read_back:  # "none left" only from the brokers, never believed
        print(
            "Throttles left by this run: not read back from the brokers; "
            "`reassign-kit throttles --check` reads them."
        )
    elif rates or lists:
        print(f"Throttles left for other reassignments in flight (read back): {lists_and_rates}.")
    else:
        print("No throttle left by this run (read back from the topics and brokers it throttled).")
    if res.state in ("stopped", "cancelled", "deadline", "failed") or interrupted:
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
        cancel = base + ["--cancel", "--reassignment-json-file", plan_file, "--journal", journal]
        print("To resume:  " + shlex.join(resume))
        print("To cancel:  " + shlex.join(cancel) + "   # roll back to the original replicas")
