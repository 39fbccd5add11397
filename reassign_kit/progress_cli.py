"""CLI pieces of KIP-179 and KIP-435 for the drop-in tool (registered into ``reassign_cli``):

- ``--progress --reassignment-json-file F --bootstrap-server B``: the progress report of the
  plan, printed once (exit 0, as KIP-179 says: "print the progress, then exit immediately"),
  or refreshed in place with ``--watch`` until the plan is done; ``--output json`` for scripts;
  ``--progress-journal J`` takes rates and step numbers from a run's journal.
- ``--execute --parallel-replica-count R``: each partition move goes in KIP-435 steps of at
  most R replicas, with each topic's min.insync.replicas kept satisfiable. A pacing handler
  registered before this one (batch size, caps) that claims the arguments must pass
  ``args.parallel_replica_count`` in ``ExecuteOptions`` (the ``Run`` plans the steps).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from . import reassign_cli as rc
from .errors import UsageError
from .model import Plan


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("progress (KIP-179) and replica-level steps (KIP-435)")
    g.add_argument(
        "--progress",
        action="store_true",
        help="Report per partition and broker of --reassignment-json-file: In sync, Behind "
        "(bytes, from DescribeLogDirs; ISR based), Unknown topic/partition/broker, Broker does "
        "not host this partition; Done/Pending/Moving per partition; rates and ETA. Exit 0.",
    )
    g.add_argument(
        "--watch", action="store_true", help="--progress: refresh in place until the plan is done."
    )
    g.add_argument(
        "--progress-interval",
        type=rc.duration_arg("--progress-interval"),
        default=2.0,
        metavar="SECONDS",
        help="--progress --watch: seconds between reports (default 2).",
    )
    g.add_argument(
        "--progress-journal",
        metavar="FILE",
        help="--progress: a run's journal, for step numbers and rates from its samples "
        "(--journal works too).",
    )
    g.add_argument(
        "--parallel-replica-count",
        type=rc.int_arg("--parallel-replica-count", 1),
        metavar="R",
        help="--execute: move at most R replicas of a partition at once (KIP-435 steps; the new "
        "preferred leader first; min.insync.replicas kept satisfiable). Waits until done.",
    )


def _journal_events(path: str | None) -> list[dict[str, Any]]:
    if not path:
        return []
    from .engine.journal import read_events

    if not os.path.exists(path):
        raise UsageError(f"journal {path}: no such file")
    return read_events(path)


def run_progress(args: argparse.Namespace, gateway: Any, plan: Plan | None) -> int:
    """``--progress``: print the report (or watch it); 0 whatever the plan's state."""
    from .engine import progress as pg

    if plan is None:
        raise UsageError("--progress needs --reassignment-json-file")
    journal = args.progress_journal or getattr(args, "journal", None)  # paced_cli's --journal
    if args.watch:
        if args.output == "json":
            raise UsageError("--watch draws a table; use --output json without --watch")

        def events() -> list[dict[str, Any]]:
            return _journal_events(journal)

        pg.watch(gateway, plan, interval_s=args.progress_interval, events=events)
        return 0
    report = pg.progress(gateway, plan, _journal_events(journal))
    if args.output == "json":
        print(json.dumps(report.to_json_obj(), indent=2, default=str))
    else:
        print(report.render_text())
    return 0


def _claims_steps(args: argparse.Namespace) -> bool:
    return getattr(args, "parallel_replica_count", None) is not None


def run_steps_execute(args: argparse.Namespace, gateway: Any, plan: Plan) -> int:
    """``--execute --parallel-replica-count R``: run the plan through ``execute.Run`` with
    KIP-435 steps, journaling every step, until every move is complete."""
    from . import ops
    from .engine.run import ExecuteOptions, Run
    from .engine.steps import describe_steps, plan_steps
    from .validate import validate_plan

    r = args.parallel_replica_count
    # nothing is read beyond what validation needs, and nothing sent, before the plan validates
    view = ops.cluster_view(gateway, plan)
    validate_plan(
        plan,
        view,
        disallow_replication_factor_change=args.disallow_replication_factor_change,
        source=args.reassignment_json_file,
    )
    ops.in_flight_unless_additional(gateway, args.additional)  # the official tool's refusal
    min_isr = gateway.min_insync_replicas(plan.topics())
    states = gateway.describe_partitions([m.tp for m in plan])
    print(f"Replica-level steps (--parallel-replica-count {r}):")
    for m in plan:
        st = states.get(m.tp)
        if st is None:
            continue  # validation (in Run) names it
        steps = plan_steps(
            st.replicas, m.replicas, r, min_isr.get(m.tp.topic, 1), st.isr or None, m.tp
        )
        print(f"  {m.tp} (min.insync.replicas {min_isr.get(m.tp.topic, 1)}):")
        for line in describe_steps(st.replicas, steps):
            print(f"    {line}")
    rollback_path = args.rollback_file or ops.default_rollback_path()
    ops.write_json(rollback_path, ops.rollback_plan(plan, states).to_json_obj())
    print(f"Rollback plan saved to {rollback_path}")
    journal = os.environ.get("RK_JOURNAL") or rollback_path.removesuffix(".json") + ".journal.jsonl"
    opts = ExecuteOptions(
        throttle=args.throttle or None,
        additional=args.additional,
        allow_replication_factor_change=not args.disallow_replication_factor_change,
        parallel_replica_count=r,
        wait=True,
    )
    run = Run(gateway, plan, opts, journal, min_isr=min_isr)
    print(f"Journal: {journal}")
    result = run.run()
    print(f"Run {result.run_id}: {result.state}; {len(result.completed)} move(s) complete")
    return 0 if result.state == "done" else 1


def register() -> None:
    """Add the flags, the ``progress`` action and the ``--parallel-replica-count`` handler."""
    if add_arguments in rc.PARSER_EXTENSIONS:
        return
    rc.PARSER_EXTENSIONS.append(add_arguments)
    rc.ACTION_OPTIONS.setdefault("progress", set()).update(
        {
            "reassignment_json_file",
            "watch",
            "progress_interval",
            "progress_journal",
            "journal",
            "output",
        }
    )
    rc.ACTION_OPTIONS["execute"].add("parallel_replica_count")
    rc.ACTION_HANDLERS["progress"] = run_progress
    rc.EXECUTE_HANDLERS.append((_claims_steps, run_steps_execute))


register()

if __name__ == "__main__":  # pragma: no cover
    sys.exit(rc.main())
