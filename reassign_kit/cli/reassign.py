"""The drop-in CLI: the actions and flags of Apache Kafka's ``kafka-reassign-partitions`` with the
same meaning, so a runbook written for it works with ``reassign-kit`` in its place, plus exit
codes that mean something. ``reassign_kit.cli`` dispatches here; ``main(argv) -> int``.

Static: every flag is declared in ``cli/reassign_args`` (the execute options from
``run.options``, the one declaration the panel reads too; re-exported here), whose
``ACTION_OPTIONS`` says which flags each action accepts; ``HANDLERS`` here says which function
runs it. No module adds itself to these at import.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import api, model, validate, whatif
from ..cluster.views import cluster_view
from ..errors import (
    InvalidPlanError,
    ReassignKitError,
    UsageError,
    missing_extra,
)
from ..model import Plan, TopicPartition
from ..operations import execute as ops
from ..outputs.notify import Notifier
from ..planner.record import Approval
from ..run import home as state
from . import paced, progress
from . import plan as plan_cmd
from .reassign_args import (
    PROG,
    build_parser,
    check_args,
)


def _print(lines: Sequence[str]) -> None:
    for line in lines:
        print(line)


def _read_plan_or_report_all(path: str, args: argparse.Namespace) -> Plan:
    """Plan.read; when the file has problems, also check its well-formed entries against the
    cluster (read-only metadata calls) so that every problem is reported at once."""
    try:
        return Plan.read(path)
    except InvalidPlanError as e:
        try:
            # the same size limit: a file too big is refused unread, not read again here
            moves, _ = model.parse_plan_partial(model.read_text(path, "reassignment plan"), path)
        except (OSError, ValueError, InvalidPlanError):
            raise e from None
        if not moves:
            raise
        gateway = None
        try:  # the cluster is only asked, never told; if it cannot answer, the file's problems stand
            gateway = ops.connect(args.bootstrap_server, args.command_config)
            partial = Plan.of(moves)
            extra = validate.plan_problems(
                partial,
                cluster_view(gateway, partial),
                disallow_replication_factor_change=args.disallow_replication_factor_change,
            )
        except Exception:
            raise e from None
        finally:
            if gateway is not None:
                gateway.close()
        raise InvalidPlanError(
            e.problems + extra, header=f"{path} is not a valid reassignment plan"
        ) from None


def _run(args: argparse.Namespace, action: str) -> int:
    plan = (
        _read_plan_or_report_all(args.reassignment_json_file, args)
        if args.reassignment_json_file
        else None
    )
    gateway = ops.connect(args.bootstrap_server, args.command_config)
    try:
        return HANDLERS[action](args, gateway, plan)
    finally:
        gateway.close()


def _execute(args: argparse.Namespace, gateway: Any, plan: Plan | None) -> int:
    """A paced run when any pacing or step option is set (``paced.is_paced``), else the
    official tool's single request."""
    assert plan is not None
    if args.dry_run:
        return _dry_run(args, gateway, plan)
    if paced.is_paced(args):
        return paced.run_paced(args, gateway, plan)
    notifier = Notifier(args.notify) if args.notify else None
    try:
        code = _execute_legacy(args, gateway, plan, notifier)
    except ReassignKitError as e:
        if notifier:
            notifier.post("failed", f"--execute of {args.reassignment_json_file} failed: {e}")
        raise
    finally:
        if notifier:
            notifier.close()
    return code


def _execute_legacy(
    args: argparse.Namespace, gateway: Any, plan: Plan, notifier: Notifier | None
) -> int:
    """The official tool's single request (and its notifications)."""
    with state.recording(  # the run's home, before anything is sent (a clear error if not)
        gateway,
        plan,
        kind="legacy",
        state_dir=args.state_dir,
        source=args.reassignment_json_file,
        rollback=args.rollback_file,
        throttle=args.throttle,
    ) as home:
        res = ops.execute(
            gateway,
            plan,
            additional=args.additional,
            throttle=args.throttle,
            log_dir_throttle=args.replica_alter_log_dirs_throttle,
            disallow_replication_factor_change=args.disallow_replication_factor_change,
            require_broker_rf_guard=args.require_broker_rf_guard,
            timeout_s=args.timeout / 1000,
            rollback_path=home.rollback,
            source=args.reassignment_json_file,
            elect_leaders=bool(args.elect_leaders),  # legacy: off unless --elect-leaders
            plan_path=args.reassignment_json_file,
            approval=approval_from_args(args),
            say=_print,
        )
    home.written(
        res.rollback_path,
        res.priors_path if res.priors else None,
        [TopicPartition(r["topic"], r["partition"]) for r in res.rows if r["replaces"]],
    )
    print("Current partition replica assignment\n")
    print(res.rollback.to_json())
    print(
        f"\nSave this to use as the --reassignment-json-file option during rollback "
        f"(saved to {res.rollback_path})"
    )
    _print([line for line in res.lines() if not line.startswith("The rollback plan")])
    print(
        f"Run state: {home.dir} (--verify / --cancel with this plan find it: the originals "
        "and the throttle values before the run)"
    )
    if notifier:
        bad = sum(1 for r in res.rows if r.get("error"))
        event, verb = ("failed", "failed for") if res.exit_code else ("finished", "submitted")
        what = f"run {home.run_id}: --execute of {args.reassignment_json_file}: "
        what += (
            f"{len(res.rows) - bad} move(s) submitted, {bad} refused"
            if res.exit_code
            else f"{len(res.rows)} move(s) {verb}"
        )
        notifier.post(
            event,
            what + " (the single legacy request; --verify follows them)",
            run_id=home.run_id,  # its home's id in the state dir, as a paced run's
            moves=len(res.rows),
            refused=bad,
        )
    return res.exit_code


def approval_from_args(args: argparse.Namespace) -> Approval:
    """--expect-plan-hash / --allow-drift / --plan-record as the preflight's ``Approval``."""
    return Approval(
        expect_plan_hash=getattr(args, "expect_plan_hash", None),
        allow_drift=bool(getattr(args, "allow_drift", False)),
        record=getattr(args, "plan_record", None),
    )


def _dry_run(args: argparse.Namespace, gateway: Any, plan: Plan) -> int:
    """``--execute --dry-run``: the plan validated and its makespan predicted per pacing
    policy; read-only calls only."""
    opts = paced.options_from_args(args)
    view = cluster_view(gateway, plan)
    validate.validate_plan(
        plan,
        view,
        disallow_replication_factor_change=not opts.allow_replication_factor_change,
        source=args.reassignment_json_file,
    )
    cal_path = args.calibration or whatif.calibration_beside(args.journal)
    res = whatif.what_if(gateway, plan, opts, cal_path, view=view)
    if args.output == "json":
        print(json.dumps(res.to_json_obj(), indent=2))
        return 0
    for line in res.lines():
        print(line)
    return 0


def _verify(args: argparse.Namespace, gateway: Any, plan: Plan | None) -> int:
    assert plan is not None
    vres = api.verify(
        gateway,
        plan,
        preserve_throttles=args.preserve_throttles,
        priors=args.throttle_priors,
        elect_leaders=bool(args.elect_leaders),
        state_dir=args.state_dir,
        label="--verify",
        source=args.reassignment_json_file,
    )
    _print(vres.run_state)
    _print(vres.lines())
    return vres.exit_code


def _cancel(args: argparse.Namespace, gateway: Any, plan: Plan | None) -> int:
    topics = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None
    if args.topics is not None and not topics:
        raise UsageError("--topics needs at least one topic name")
    cres = api.cancel(
        gateway,
        plan,
        topics=topics,
        all=args.all,
        journal=args.journal,
        rollback_file=args.rollback_file,
        throttle_priors=args.throttle_priors,
        preserve_throttles=args.preserve_throttles,
        throttle=args.throttle,
        timeout_s=args.rollback_timeout or None,
        state_dir=args.state_dir,
        label="--cancel",
        source=args.reassignment_json_file,
    )
    _print(cres.run_state)
    _print(cres.lines())
    if cres.outcome is not None:  # the same per-partition outcome the panel shows
        _print(["", *cres.outcome.lines()])
    if args.notify:
        notifier = Notifier(args.notify)
        notifier.post(
            "cancelled" if cres.exit_code == 0 else "failed",
            "--cancel: " + (cres.lines()[-1] if cres.lines() else f"exit {cres.exit_code}"),
            exit_code=cres.exit_code,
        )
        notifier.close()
    return cres.exit_code


def _list(args: argparse.Namespace, gateway: Any, plan: Plan | None) -> int:
    """--list; with a plan, only its partitions (the plan checked as --execute checks it)."""
    lres = ops.list_reassignments(gateway, plan, source=args.reassignment_json_file or "")
    if args.output == "json":
        print(lres.to_json())
    else:
        if plan is not None:
            print(
                f"Of the {len(plan)} partition(s) of {args.reassignment_json_file}, "
                f"{len(lres.states)} have a reassignment in progress."
            )
        _print(lres.lines())
        if lres.states:
            print("\nAs a reassignment JSON (the targets):")
            print(lres.to_json())
        _print(state.runs_in_flight_lines(gateway, lres.states, args.state_dir))
    return 0


# action -> handler(args, gateway, plan) -> exit code: a plain table, filled here only
HANDLERS: dict[str, Callable[[argparse.Namespace, Any, Plan | None], int]] = {
    "execute": _execute,
    "verify": _verify,
    "cancel": _cancel,
    "list": _list,
    "progress": progress.run_progress,
    "generate": plan_cmd.run_generate,
}


def main(argv: list[str] | None = None) -> int:
    p = build_parser()
    try:
        args = p.parse_args(argv)
        action = check_args(p, args)
    except UsageError as e:
        p.print_usage(sys.stderr)
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return UsageError.exit_code
    except SystemExit as e:  # --help
        return int(e.code or 0)
    try:
        return _run(args, action)
    except ReassignKitError as e:
        print(f"Error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except ImportError as e:  # an optional dependency: name the extra, never a traceback
        found = missing_extra(e)
        if found is None or os.environ.get("RK_DEBUG"):
            raise
        print(f"Error: {found}", file=sys.stderr)
        return found.exit_code
    except Exception as e:  # a bug or an unexpected client failure: a message, not a traceback
        if os.environ.get("RK_DEBUG"):
            raise
        print(
            f"Error: unexpected {type(e).__name__}: {e} (set RK_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return 1


def dump_json(obj: Any) -> str:
    return json.dumps(obj, indent=2)


if __name__ == "__main__":
    sys.exit(main())
