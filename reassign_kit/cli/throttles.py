"""`reassign-kit throttles`: the janitor. ``--check`` lists the throttle configs
no reassignment in flight needs (ours or another tool's) with where each comes from, exit 8
when any is set; ``--clean`` removes those set on a topic or broker itself (put back at their
prior with ``--journal`` / ``--throttle-priors``). The logic is ``throttles.janitor``; this module
only prints."""

from __future__ import annotations

import argparse
import json

from ..cluster.views import require_permissions
from ..errors import UsageError
from ..model import Plan
from ..operations.execute import connect
from ..run import home as state
from ..throttles import janitor
from ..throttles.priors import load_priors


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="reassign-kit throttles",
        description="Throttle configs no reassignment in flight needs: list them with their "
        "source (--check, exit 8 when any is set) or remove them (--clean).",
    )
    p.add_argument(
        "--bootstrap-server", required=True, metavar="HOST:PORT", help="the brokers to connect to"
    )
    p.add_argument("--command-config", metavar="FILE", help="client .properties (security)")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--check", action="store_true", help="list them; exit 8 if any")
    action.add_argument(
        "--clean",
        action="store_true",
        help="remove those set on a topic or broker itself (a list narrowed to what moves "
        "need); the cluster default and server.properties values are reported, not touched",
    )
    priors = p.add_mutually_exclusive_group()
    priors.add_argument(
        "--journal",
        metavar="FILE",
        help="a run's journal: what it recorded as there before (throttle_prior) is the "
        "operator's (not reported) and --clean puts it back instead of deleting",
    )
    priors.add_argument(
        "--throttle-priors", metavar="FILE", help="the same from legacy --execute's priors file"
    )
    p.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where runs keep their state (default $REASSIGN_KIT_STATE_DIR, else "
        "./.reassign-kit/runs): without --journal / --throttle-priors, the priors of the "
        "unfinished runs recorded there for this cluster are used (which ones is said)",
    )
    p.add_argument(
        "--reassignment-json-file",
        metavar="FILE",
        help="only the throttles of this plan: its topics' replica-list entries of its "
        "partitions and the rates of the brokers its moves involve (targets and current "
        "replicas); the plan is checked first with the rules of --execute (an invalid one is "
        "exit 3, nothing changed)",
    )
    p.add_argument(
        "--output", choices=("text", "json"), default="text", help="text (default) or JSON"
    )
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    path = args.reassignment_json_file
    if path is not None and not path.strip():
        raise UsageError("--reassignment-json-file needs a file path (an empty one is no plan)")
    plan = Plan.read(path) if path is not None else None  # refused before connecting
    priors = load_priors(args.journal or args.throttle_priors)
    gw = connect(args.bootstrap_server, args.command_config)
    found: list[str] = []
    scope: janitor.PlanScope | None = None
    try:
        needed = ["DESCRIBE", "DESCRIBE_CONFIGS"] + (["ALTER_CONFIGS"] if args.clean else [])
        require_permissions(gw, "throttles", needed)
        # the plan checked against the cluster before anything is changed
        scope = janitor.plan_scope(gw, plan, path) if plan is not None else None
        recorded = False
        if priors is None:  # the runs recorded for this cluster say what was the operator's
            priors, found = state.cluster_priors(gw, args.state_dir)
            recorded = priors is not None
        if args.clean:
            result = janitor.clean_throttles(gw, priors, only_recorded=recorded, scope=scope)
        else:
            result = janitor.check_throttles(gw, priors, scope=scope)
    finally:
        gw.close()
    if scope is not None:
        found.append(
            f"Only the throttles of {path}: topic(s) {', '.join(sorted(scope.partitions))}, "
            f"broker(s) {', '.join(str(b) for b in sorted(scope.brokers))}."
        )
    if args.output == "json":
        print(json.dumps(result.to_json_obj(), indent=2))
    else:
        print("\n".join([*found, *result.lines()]))
    return result.exit_code
