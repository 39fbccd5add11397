"""The drop-in CLI: the actions and flags of Apache Kafka's ``kafka-reassign-partitions`` with the
same meaning, so a runbook written for it works with ``reassign-kit`` in its place, plus exit
codes that mean something. ``reassign_kit.cli`` dispatches here; ``main(argv) -> int``.

Options are declared in groups by ``build_parser`` and checked per action by ``ACTION_OPTIONS``:
a module adding flags (e.g. pacing) adds them to a group and lists them for its action.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import ops, validate
from .errors import InvalidPlanError, ReassignKitError, UsageError
from .model import Plan

PROG = "reassign-kit"

EXIT_CODES = f"""\
exit codes:
  0   done: the action succeeded; for --verify every move (and log-dir move) is complete
  1   unexpected error
  2   usage error: bad options or option combinations
  3   invalid plan: the reassignment JSON failed validation (every problem is listed;
      nothing was sent to the cluster)
  4   the cluster refused or failed an operation (for --execute / --cancel: some
      partitions failed; the others in the same request stand, as reported)
  6   --execute refused: other reassignments are in progress and --additional is not set
  7   paced --execute ended early: a deadline expired, a move was rejected or lost
  8   paced --execute could not clear its throttles at the end: they may be left (the
      message names them and the command that removes them)
  {ops.EXIT_IN_PROGRESS}  --verify: some moves are still in progress
  {ops.EXIT_MISMATCH}  --verify: some partitions are neither complete nor moving toward the
      plan (other replicas, another reassignment, or a missing partition)
  130 interrupted (Ctrl-C / SIGTERM); a paced run prints how to resume or cancel
"""

ACTIONS = ("generate", "execute", "verify", "cancel", "list", "progress")

# Which options (argparse dest) each action accepts, besides the connection options.
# Other modules extend these sets when they add flags for an action.
ACTION_OPTIONS: dict[str, set[str]] = {
    "execute": {
        "reassignment_json_file",
        "throttle",
        "replica_alter_log_dirs_throttle",
        "additional",
        "disallow_replication_factor_change",
        "timeout",
        "rollback_file",
    },
    "verify": {"reassignment_json_file", "preserve_throttles"},
    "cancel": {
        "reassignment_json_file",
        "preserve_throttles",
        "all",
        "topics",
        "timeout",
        "rollback_file",
    },
    "list": {"output"},
    "generate": {"topics_to_move_json_file", "broker_list", "disable_rack_aware"},
}
COMMON = {"bootstrap_server", "command_config", "help"}

# Hooks: other modules (paced execution) register a handler for --execute when their flags are
# set: fn(args) -> bool says "mine", and run(args, gateway, plan) -> int does it.
EXECUTE_HANDLERS: list[tuple[Callable[[argparse.Namespace], bool], Callable[..., int]]] = []
PARSER_EXTENSIONS: list[Callable[[argparse.ArgumentParser], None]] = []
# Actions implemented elsewhere (e.g. --progress in progress_cli): fn(args, gateway, plan) -> int.
ACTION_HANDLERS: dict[str, Callable[..., int]] = {}
# Extra argument rules of other modules: fn(args, action) raises UsageError (before any I/O).
ARG_CHECKS: list[Callable[[argparse.Namespace, str], None]] = []


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage + message, exit 2 (as argparse) but catchable
        raise UsageError(message)


def int_arg(name: str, minimum: int = 0) -> Callable[[str], int]:
    """An argparse type: an integer >= ``minimum``, the error naming the option."""

    def conv(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, not {s!r}") from None
        if v < minimum:
            rule = ">= 0" if minimum == 0 else f">= {minimum}" if minimum > 1 else "> 0"
            raise argparse.ArgumentTypeError(f"{name} must be {rule}, not {v}")
        return v

    return conv


def duration_arg(name: str) -> Callable[[str], float]:
    """An argparse type: seconds > 0, or a number with s / m / h."""

    def conv(s: str) -> float:
        mult = {"s": 1, "m": 60, "h": 3600}.get(s[-1:].lower(), None)
        num = s[:-1] if mult else s
        try:
            v = float(num) * (mult or 1)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be a duration like 90, 90s, 15m or 2h, not {s!r}"
            ) from None
        if not v > 0:
            raise argparse.ArgumentTypeError(f"{name} must be > 0, not {s}")
        return v

    return conv


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description=(
            "Move Kafka partitions between brokers and log dirs. Drop-in for "
            "kafka-reassign-partitions: same actions, flags and JSON files, plus meaningful exit "
            "codes, cancel by topic or --all, and a rollback file."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    a = p.add_argument_group("actions (exactly one)")
    a.add_argument(
        "--execute", action="store_true", help="Start the reassignment in --reassignment-json-file."
    )
    a.add_argument(
        "--verify",
        action="store_true",
        help="Check whether the reassignment is complete; once nothing of it is in progress, "
        "remove the throttles (unless --preserve-throttles).",
    )
    a.add_argument(
        "--cancel",
        action="store_true",
        help="Cancel the reassignments of the plan's partitions (or --topics, or --all); "
        "already-moved replicas in the ISR stay (KIP-455).",
    )
    a.add_argument(
        "--list", action="store_true", help="List the reassignments in progress (table, then JSON)."
    )
    a.add_argument(
        "--generate",
        action="store_true",
        help="Generate a candidate plan (handled by `reassign-kit plan`).",
    )

    c = p.add_argument_group("connection")
    c.add_argument(
        "--bootstrap-server", metavar="HOST:PORT[,…]", help="REQUIRED: the brokers to connect to."
    )
    c.add_argument(
        "--command-config",
        metavar="FILE",
        help="Admin client properties (security.protocol, sasl.*, ssl.*). Never echoed.",
    )

    o = p.add_argument_group("options")
    o.add_argument(
        "--reassignment-json-file", metavar="FILE", help='The plan: {"version":1,"partitions":[…]}.'
    )
    o.add_argument(
        "--throttle",
        type=int_arg("--throttle"),
        metavar="BYTES/S",
        help="Inter-broker replication throttle for the moves (execute). Default: none.",
    )
    o.add_argument(
        "--replica-alter-log-dirs-throttle",
        type=int_arg("--replica-alter-log-dirs-throttle"),
        metavar="BYTES/S",
        help="Throttle for moves between log dirs on the same broker (execute).",
    )
    o.add_argument(
        "--additional",
        action="store_true",
        help="Execute even though other reassignments are in progress (a partition in both gets the new target).",
    )
    o.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="Do not remove throttles (verify, cancel).",
    )
    o.add_argument(
        "--disallow-replication-factor-change",
        action="store_true",
        help="Refuse moves that change a partition's replication factor, client- and broker-side (KIP-860).",
    )
    o.add_argument(
        "--timeout",
        type=int_arg("--timeout"),
        default=10000,
        metavar="MS",
        help="How long to wait for a move between log dirs to begin (default 10000).",
    )
    o.add_argument(
        "--all", action="store_true", help="Cancel every reassignment in progress (cancel)."
    )
    o.add_argument(
        "--topics",
        metavar="T1,T2",
        help="Cancel every reassignment in progress of these topics (cancel).",
    )
    o.add_argument(
        "--rollback-file",
        metavar="FILE",
        help="Where --execute saves the current assignment (default: "
        "reassign-rollback-<UTC time>.json); with --cancel, named in the advice printed.",
    )
    o.add_argument(
        "--output", choices=("text", "json"), default="text", help="--list output format."
    )
    g = p.add_argument_group("generate (see `reassign-kit plan`)")
    g.add_argument("--topics-to-move-json-file", metavar="FILE")
    g.add_argument("--broker-list", metavar="1,2,3")
    g.add_argument("--disable-rack-aware", action="store_true")
    # register flags: pacing first (its handler goes before the steps one), then --progress,
    # --parallel-replica-count
    from . import paced_cli, progress_cli  # noqa: F401
    from .plan_cli import register as register_generate

    register_generate()  # --generate: the minimal-movement planner (plan_cli)

    for ext in PARSER_EXTENSIONS:
        ext(p)
    return p


def _flag(dest: str) -> str:
    return "--" + dest.replace("_", "-")


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The action, after the official tool's combination rules (exactly one action, the
    options each action accepts, what each needs)."""
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        raise UsageError(
            "Command must include exactly one action: --generate, --execute, --verify, --cancel, or --list"
            + (f" (got {', '.join(_flag(a) for a in chosen)})" if chosen else "")
        )
    action = chosen[0]
    allowed = ACTION_OPTIONS.get(action, set()) | COMMON | set(ACTIONS)
    for dest, value in vars(args).items():
        if dest in allowed or value == p.get_default(dest):
            continue
        raise UsageError(f"Option {_flag(dest)} can't be used with action --{action}")
    if not args.bootstrap_server:
        raise UsageError("--bootstrap-server is required")
    if action in ("execute", "verify") and not args.reassignment_json_file:
        raise UsageError(f"--{action} needs --reassignment-json-file")
    if action == "cancel":
        n = sum([bool(args.reassignment_json_file), bool(args.topics), bool(args.all)])
        if n != 1:
            raise UsageError(
                "--cancel needs exactly one of --reassignment-json-file, --topics or --all"
            )
    for chk in ARG_CHECKS:
        chk(args, action)
    return action


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
            with open(path, encoding="utf-8") as f:
                moves, _ = validate.parse_plan_partial(f.read(), path)
        except (OSError, InvalidPlanError):
            raise e from None
        if not moves:
            raise
        gateway = None
        try:  # the cluster is only asked, never told; if it cannot answer, the file's problems stand
            gateway = ops.connect(args.bootstrap_server, args.command_config)
            partial = Plan.of(moves)
            extra = validate.plan_problems(
                partial, ops.cluster_view(gateway, partial),
                disallow_replication_factor_change=args.disallow_replication_factor_change,
            )
        except Exception:
            raise e from None
        finally:
            if gateway is not None:
                gateway.close()
        raise InvalidPlanError(e.problems + extra, header=f"{path} is not a valid reassignment plan") from None


def _run(args: argparse.Namespace, action: str) -> int:
    plan = _read_plan_or_report_all(args.reassignment_json_file, args) if args.reassignment_json_file else None
    gateway = ops.connect(args.bootstrap_server, args.command_config)
    try:
        if action in ACTION_HANDLERS:
            return ACTION_HANDLERS[action](args, gateway, plan)
        if action == "execute":
            assert plan is not None
            for mine, run in EXECUTE_HANDLERS:
                if mine(args):
                    return run(args, gateway, plan)
            rollback_path = args.rollback_file or ops.default_rollback_path()
            res = ops.execute(
                gateway,
                plan,
                additional=args.additional,
                throttle=args.throttle,
                log_dir_throttle=args.replica_alter_log_dirs_throttle,
                disallow_replication_factor_change=args.disallow_replication_factor_change,
                timeout_s=args.timeout / 1000,
                rollback_path=rollback_path,
                source=args.reassignment_json_file,
            )
            print("Current partition replica assignment\n")
            print(res.rollback.to_json())
            print(
                f"\nSave this to use as the --reassignment-json-file option during rollback "
                f"(saved to {res.rollback_path})"
            )
            _print([line for line in res.lines() if not line.startswith("The rollback plan")])
            return res.exit_code
        if action == "verify":
            assert plan is not None
            vres = ops.verify(gateway, plan, preserve_throttles=args.preserve_throttles)
            _print(vres.lines())
            return vres.exit_code
        if action == "cancel":
            topics = (
                [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None
            )
            if args.topics is not None and not topics:
                raise UsageError("--topics needs at least one topic name")
            cres = ops.cancel(
                gateway,
                plan,
                topics=topics,
                all=args.all,
                preserve_throttles=args.preserve_throttles,
                rollback_file=args.rollback_file,
            )
            _print(cres.lines())
            return cres.exit_code
        if action == "list":
            lres = ops.list_reassignments(gateway)
            if args.output == "json":
                print(lres.to_json())
            else:
                _print(lres.lines())
                if lres.states:
                    print("\nAs a reassignment JSON (the targets):")
                    print(lres.to_json())
            return 0
        raise UsageError(f"unknown action {action}")
    finally:
        gateway.close()


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
