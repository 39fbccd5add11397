"""The drop-in CLI's arguments (cli/reassign.py runs them): every flag of
``kafka-reassign-partitions`` and ours, declared statically (the execute options from
``run.options``, the one declaration the panel reads too), ``ACTION_OPTIONS`` (which flags
each action accepts) and ``check_args``, the official tool's combination rules, refused by
name before anything is read or sent."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ..errors import UsageError, format_exit_codes
from ..outputs.notify import check_url
from ..planner.record import expected_hash
from ..run.options import cli_options
from . import paced, progress
from . import plan as plan_cmd

PROG = "reassign-kit"


ACTIONS = ("generate", "execute", "verify", "cancel", "list", "progress")

# Which options (argparse dest) each action accepts, besides the connection options.
# Other modules extend these sets when they add flags for an action.
EXECUTE_FLAGS = {d.dest for d in cli_options()}  # run.options: the one declaration
# Which options (argparse dest) each action accepts, besides the connection options.
ACTION_OPTIONS: dict[str, set[str]] = {
    "execute": EXECUTE_FLAGS
    | {"reassignment_json_file", "rollback_file", "journal", "resume", "dry_run", "calibration"}
    | {"output", "state_dir"}
    | {"expect_plan_hash", "allow_drift", "plan_record", "notify"},
    "verify": {
        "reassignment_json_file",
        "preserve_throttles",
        "throttle_priors",
        "elect_leaders",
        "state_dir",
    },
    "cancel": {
        "state_dir",
        "reassignment_json_file",
        "preserve_throttles",
        "throttle_priors",
        "all",
        "topics",
        "timeout",
        "rollback_file",
        "journal",
        "throttle",
        "rollback_timeout",
        "notify",
    },
    "list": {"output", "state_dir", "reassignment_json_file"},
    "generate": {
        "topics_to_move_json_file",
        "broker_list",
        "disable_rack_aware",
        "topics_regex",
        "exclude_topics_regex",
        "include_internal",
    },
    "progress": {
        "reassignment_json_file",
        "watch",
        "progress_interval",
        "progress_journal",
        "journal",
        "output",
    },
}
COMMON = {"bootstrap_server", "command_config", "help"}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # usage + message, exit 2 (as argparse) but catchable
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description=(
            "Move Kafka partitions between brokers and log dirs. Drop-in for "
            "kafka-reassign-partitions: same actions, flags and JSON files, plus meaningful exit "
            "codes, cancel by topic or --all, and a rollback file."
        ),
        epilog=format_exit_codes(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    _add_actions(p)
    _add_connection_and_options(p)
    _add_generate(p)
    _add_execute_options(p)
    _add_what_if_and_approval(p)
    _add_notify_and_journal(p)
    progress.add_arguments(p)
    return p


def _add_actions(p: argparse.ArgumentParser) -> None:
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
        help="Cancel = roll back: the plan's partitions (the plan of --journal, or --topics, or "
        "--all) go back to their ORIGINAL replica lists, in order (so the preferred leader "
        "too), KIP-435 stepped moves between steps included: each reassignment in flight is "
        "cancelled (Kafka 4.3 puts the partition back where that reassignment started and "
        "deletes the replicas it added, even those already in the ISR), then the original "
        "list is submitted (throttled with --throttle or the journal's rate), waited for "
        "(--rollback-timeout) and verified; a partition that completed is left at its target. "
        "Originals: from --journal (the run's), --rollback-file (what --execute saved), else "
        "from the run of the plan recorded in the state dir (see --state-dir), else from the "
        "reassignment in flight. (Stop, the drain, is Ctrl-C / SIGTERM of a paced "
        "run without --on-interrupt cancel.)",
    )
    a.add_argument(
        "--list",
        action="store_true",
        help="List the reassignments in progress (table, then JSON); with "
        "--reassignment-json-file, only those of that plan's partitions (the plan checked "
        "first with the rules of --execute: an invalid one is exit 3, nothing listed).",
    )
    a.add_argument(
        "--generate",
        action="store_true",
        help="Generate a candidate plan (handled by `reassign-kit plan`).",
    )


def _add_connection_and_options(p: argparse.ArgumentParser) -> None:
    """Where the cluster is, and the options the official tool's actions share."""
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
        "--reassignment-json-file",
        metavar="FILE",
        help='The plan: {"version":1,"partitions":[…]} (--execute, --verify, --cancel, '
        "--progress; with --list, the partitions to list).",
    )
    o.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="Do not remove throttles (verify, cancel).",
    )
    o.add_argument(
        "--throttle-priors",
        metavar="FILE",
        help="The throttle configs as they were before --execute (the .throttle-priors.json "
        "it saved beside its rollback file, or a paced run's journal): verify and cancel put "
        "those values back instead of deleting the throttles.",
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
        help="Where --execute saves the current assignment (default: rollback.json in the "
        "run's state dir, see --state-dir); with --cancel, the original replica lists to "
        "roll back to (default: the run's, found by the plan).",
    )
    o.add_argument(
        "--state-dir",
        metavar="DIR",
        help="Where runs keep their state (default $REASSIGN_KIT_STATE_DIR, else "
        "./.reassign-kit/runs): --execute records its rollback file, throttle priors and "
        "journal under <DIR>/<cluster id>/<plan hash>/<run id>/ before anything is sent; "
        "--verify, --cancel and --list find them there by the plan (say which run), so the "
        "operator's throttle values come back exactly and a cancel restores the original "
        "replica order. Explicit --rollback-file / --journal / --throttle-priors win.",
    )
    o.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="Output format of --list, --progress and --execute --dry-run.",
    )


def _add_generate(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("generate (see `reassign-kit plan`)")
    g.add_argument(
        "--topics-to-move-json-file",
        metavar="FILE",
        help='--generate: the topics to place, {"topics": [{"topic": "t"}], "version": 1}',
    )
    g.add_argument(
        "--broker-list", metavar="1,2,3", help="--generate: the brokers to place them on"
    )
    g.add_argument(
        "--disable-rack-aware",
        action="store_true",
        help="--generate: ignore broker.rack when placing replicas",
    )
    g.add_argument(
        "--capacity",
        metavar="FILE",
        help="capacity file (see `reassign-kit plan --capacity`): the proposal keeps every "
        "broker within its disk_bytes and max_replicas, counted over the topics to move (the "
        "only ones --generate reads); for whole-broker limits use `reassign-kit plan`",
    )
    plan_cmd.add_topic_selection(g)


def _add_execute_options(p: argparse.ArgumentParser) -> None:
    # the execute options: one declaration (run.options) that the panel reads too
    titles = {
        "official": "execute (kafka-reassign-partitions' own options)",
        "paced": "paced execution (KIP-1335 and beyond; --execute only)",
        "steps": "replica-level steps (KIP-435; --execute)",
        "leaders": "preferred leader elections (KIP-460; --execute, --verify)",
        "guard": "replication-factor guard (KIP-860; --execute)",
    }
    groups: dict[str, argparse._ArgumentGroup] = {}
    for d in cli_options():
        grp = d.option.group
        if grp not in groups:
            groups[grp] = p.add_argument_group(titles.get(grp, grp))
        groups[grp].add_argument(d.option.flag, **d.option.argparse_kwargs())


def _add_what_if_and_approval(p: argparse.ArgumentParser) -> None:
    """What --execute predicts without sending, and what it checks before it sends."""
    w = p.add_argument_group("what-if (--execute --dry-run: nothing is sent)")
    w.add_argument(
        "--dry-run",
        action="store_true",
        help="Predict how long the plan takes with the options given and with the other "
        "pacing policies (the run's own ETA model of the whole plan: its partitions, their "
        "sizes, the throttle, the calibration); send nothing. "
        "--output json: {predicted_seconds, policies: [{policy, seconds}]}.",
    )
    w.add_argument(
        "--calibration",
        metavar="FILE",
        help="Rates and per-move cost learned from earlier journals (`reassign-kit calibrate`); "
        "default: calibration.json beside --journal when there is one.",
    )
    ap = p.add_argument_group("plans run as approved (--execute, legacy and paced)")
    ap.add_argument(
        "--expect-plan-hash",
        metavar="SHA256",
        help="Refuse (exit 13, nothing sent) unless the plan's content hash is this one: the "
        "sha256 `reassign-kit plan` printed and wrote to the plan's record (canonical JSON, so "
        "key order and whitespace do not count; a `sha256:` prefix is accepted).",
    )
    ap.add_argument(
        "--allow-drift",
        action="store_true",
        help="Run even though the cluster changed since the plan was made (partitions whose "
        "replicas changed, brokers gone, topics deleted); the drift is printed first. Without "
        "it such a run is refused (exit 14), naming each drifted partition.",
    )
    ap.add_argument(
        "--plan-record",
        metavar="FILE",
        help="The plan record to check drift against (default: PLAN.record.json beside the "
        "plan, written by `reassign-kit plan`; a plan without one is not drift-checked).",
    )


def _add_notify_and_journal(p: argparse.ArgumentParser) -> None:
    p.add_argument_group("notifications (--execute, --cancel)").add_argument(
        "--notify",
        metavar="URL",
        help="POST a small JSON document (Slack-compatible: its 'text', plus 'event', "
        "'run_id', counts) to this http(s) URL when the run starts, a move is stuck, and "
        "when it fails, is cancelled or finishes. A failed post (a redirect too: none is "
        "followed) never fails the run; the URL (a webhook's token) is never journaled or "
        "printed.",
    )
    j = p.add_argument_group("journal (paced --execute)")
    j.add_argument(
        "--journal",
        metavar="FILE",
        help="The run's JSON-lines journal (default journal.jsonl in the run's state dir, "
        "see --state-dir); with "
        "--progress, rates and step numbers come from it; with --cancel, the run to roll back "
        "(its plan, each move's original replicas, its throttle rate).",
    )
    j.add_argument(
        "--resume",
        action="store_true",
        help="Resume the run of --journal (after Ctrl-C, a crash or SIGKILL) with "
        "its options: nothing complete is resubmitted, moves in flight are adopted.",
    )


def _check_approval_and_files(args: argparse.Namespace, action: str) -> None:
    """Values that would silently turn a check off or write somewhere else, refused by
    option before anything is read or sent."""
    if getattr(args, "expect_plan_hash", None) is not None:
        expected_hash(args.expect_plan_hash)
    if getattr(args, "plan_record", None) is not None and not args.plan_record.strip():
        raise UsageError(
            "--plan-record needs a file path (an empty one would skip the drift check)"
        )
    rollback = getattr(args, "rollback_file", None)
    if action == "execute" and rollback is not None:
        if not rollback.strip():
            raise UsageError("--rollback-file needs a file path")
        if os.path.isdir(rollback):  # else a taken name's "-2" suffix lands beside the dir
            raise UsageError(
                f"--rollback-file {rollback} is a directory: it takes the path of a file to create"
            )


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
    plan = getattr(args, "reassignment_json_file", None)
    if plan is not None and not plan.strip():  # an unset variable: no plan, never "all"
        raise UsageError("--reassignment-json-file needs a file path (an empty one is no plan)")
    if action in ("execute", "verify") and not args.reassignment_json_file:
        raise UsageError(f"--{action} needs --reassignment-json-file")
    if action == "cancel":
        n = sum([bool(args.reassignment_json_file), bool(args.topics), bool(args.all)])
        if n > 1 or (n == 0 and not args.journal):
            raise UsageError(
                "--cancel needs exactly one of --reassignment-json-file, --topics or --all "
                "(or --journal alone: the journaled run's plan)"
            )
    if getattr(args, "notify", None) is not None:  # "" too: an empty URL is no webhook
        try:
            check_url(args.notify)
        except ValueError as e:
            raise UsageError(str(e)) from None
    _check_approval_and_files(args, action)
    if action == "execute":
        paced.check(args)
    if action == "generate":
        plan_cmd.check_generate(args)
    return action
