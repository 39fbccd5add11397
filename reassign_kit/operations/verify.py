"""``--verify`` as a function (re-exported by ops): which moves of a plan are complete, in
progress, at another assignment or missing — after letting metadata settle (KIP-860's race) —
and, once nothing of the plan is in flight, the throttles the run set removed and the
operator's values put back (a run's home, its journal or priors file say which)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cluster.views import (
    METADATA_SETTLE_S,
    cluster_view,
    missing_permissions,
    replica_log_dirs,
    require_permissions,
)
from ..errors import EXIT_IN_PROGRESS, EXIT_MISMATCH
from ..model import Move, PartitionState, Plan, TopicPartition, is_complete
from ..run.elections import ElectionResult, elect_preferred
from ..run.logdirs import log_dir_targets
from ..throttles import configs as thr
from ..throttles import priors as priors_mod
from ..validate import validate_plan
from .tables import fmt_replicas, rows_table

SETTLE_PAUSE_S = 0.5  # between re-reads of metadata that may lag the controller (see settle)


SETTLE_ATTEMPTS = round(METADATA_SETTLE_S / SETTLE_PAUSE_S)  # 6: the one settle window


COMPLETE = "complete"


IN_PROGRESS = "in progress"


MISMATCH = "mismatch"


MISSING = "missing"


@dataclass
class VerifyResult:
    rows: list[dict[str, Any]]
    log_dir_rows: list[dict[str, Any]]
    cleared: tuple[dict, dict] | None
    notes: list[str] = field(default_factory=list)
    # --elect-leaders: the elections of the plan's complete partitions, and the check after
    elections: ElectionResult | None = None

    run_state: list[str] = field(default_factory=list)  # which recorded run was used

    def statuses(self) -> set[str]:
        return {r["status"] for r in self.rows} | {r["status"] for r in self.log_dir_rows}

    @property
    def complete(self) -> bool:
        return self.statuses() <= {COMPLETE}

    @property
    def exit_code(self) -> int:
        s = self.statuses()
        if s & {MISMATCH, MISSING}:
            return EXIT_MISMATCH
        if IN_PROGRESS in s:
            return EXIT_IN_PROGRESS
        return 0

    def to_pandas(self) -> Any:
        return rows_table(
            self.rows, ["topic", "partition", "status", "target", "replicas", "adding", "removing"]
        )

    def lines(self) -> list[str]:
        out = ["Status of partition reassignment:"]
        for r in self.rows:
            tp = f"{r['topic']}-{r['partition']}"
            if r["status"] == COMPLETE:
                out.append(f"Reassignment of partition {tp} is completed.")
            elif r["status"] == IN_PROGRESS:
                out.append(
                    f"Reassignment of partition {tp} is still in progress "
                    f"(replicas {fmt_replicas(r['replicas'])}, adding {fmt_replicas(r['adding'])}, "
                    f"removing {fmt_replicas(r['removing'])})."
                )
            elif r["status"] == MISSING:
                out.append(f"Partition {tp} does not exist in the cluster.")
            else:
                other = r.get("other_target")
                out.append(
                    f"There is an active reassignment of partition {tp} to "
                    f"[{fmt_replicas(other)}], not to the plan's [{fmt_replicas(r['target'])}]."
                    if other
                    else f"There is no active reassignment of partition {tp}, but replica set "
                    f"is [{fmt_replicas(r['replicas'])}] rather than [{fmt_replicas(r['target'])}]."
                )
        if self.log_dir_rows:
            out.append("")
            out.append("Reassignment of replicas between log dirs:")
            for r in self.log_dir_rows:
                rep = f"{r['topic']}-{r['partition']} on broker {r['broker']}"
                if r["status"] == COMPLETE:
                    out.append(f"Reassignment of replica {rep} to {r['log_dir']} is completed.")
                elif r["status"] == IN_PROGRESS:
                    out.append(
                        f"Reassignment of replica {rep} to {r['log_dir']} is still in progress."
                    )
                elif r["current"] and not r["future"]:
                    out.append(
                        f"Replica {rep} is in {r['current']}, not in {r['log_dir']}, and not "
                        "moving there: the broker has no future replica for it (the move was "
                        "cancelled, or the broker dropped it). --execute with this plan sends "
                        "it again."
                    )
                else:
                    out.append(
                        f"Replica {rep} is in {r['current'] or 'no live log dir'}, "
                        f"not in {r['log_dir']}."
                    )
        return out + self.notes


def classify(target: tuple[int, ...], st: PartitionState | None) -> str:
    if st is None:
        return MISSING
    if is_complete(target, st):
        return COMPLETE
    if st.reassigning:
        # Moving toward the plan's target (same set): in progress; elsewhere: a mismatch.
        return IN_PROGRESS if set(st.target) == set(target) else MISMATCH
    return MISMATCH


def settle(
    gateway: Any,
    states: dict[TopicPartition, PartitionState],
    suspect: Any,
    attempts: int = SETTLE_ATTEMPTS,
    pause_s: float | None = None,
) -> dict[TopicPartition, PartitionState]:
    """Re-read the partitions for which ``suspect(tp, state)`` holds, a few times: metadata
    reaches brokers asynchronously, so right after a move ends or is cancelled a broker may
    still report the intermediate replica set while the controller says it is not reassigning
    (KIP-860's race, where the official tool reports a false mismatch)."""
    for _ in range(attempts):
        again = [tp for tp, st in states.items() if suspect(tp, st)]
        if not again:
            break
        gateway.sleep(SETTLE_PAUSE_S if pause_s is None else pause_s)  # its clock (model time)
        states.update(gateway.describe_partitions(again))
    return states


def settled_states(gateway: Any, plan: Plan) -> dict[TopicPartition, PartitionState]:
    targets = {m.tp: m.replicas for m in plan}
    return settle(
        gateway,
        gateway.describe_partitions(list(targets)),
        lambda tp, st: (
            not st.reassigning
            and not is_complete(targets[tp], st)
            and set(targets[tp]) < set(st.replicas)  # target + the replicas being removed
        ),
    )


def verify(
    gateway: Any,
    plan: Plan,
    *,
    preserve_throttles: bool = False,
    priors: thr.Priors | str | None = None,
    elect_leaders: bool = False,
    source: str = "the plan",
) -> VerifyResult:
    """Is every move of the plan complete (``model.is_complete``), its replicas in the asked log
    dirs? Once nothing of the plan is in progress, clear the throttles of the plan's topics and
    every broker, except what reassignments still in flight elsewhere need; with ``priors``
    (what ``execute`` saved, or a run's journal) the values there before are put back and
    only the configs that run changed are touched (an operator's rate on a broker it never
    throttled stays).

    ``elect_leaders`` (CLI ``--verify --elect-leaders``, the panel's Verify with its "elect
    preferred leaders" box): each complete partition of the plan that another replica than
    its first leads gets a preferred leader election (KIP-460, one request), and every
    complete partition is checked (``VerifyResult.elections``; those not led by their
    preferred replica named with why). The exit code stays the reassignment's."""
    priors = priors_mod.load_priors(priors)
    require_permissions(gateway, "verify", ["DESCRIBE"])
    # the rules --execute applies: a plan it would refuse changes nothing here either
    validate_plan(plan, cluster_view(gateway, plan), source=source)
    states = settled_states(gateway, plan)
    rows = [move_row(m, states.get(m.tp)) for m in plan]
    log_dir_rows = _log_dir_rows(gateway, plan, states)
    result = VerifyResult(rows, log_dir_rows, None)
    if elect_leaders:
        complete = {
            TopicPartition(r["topic"], r["partition"]): states[
                TopicPartition(r["topic"], r["partition"])
            ]
            for r in rows
            if r["status"] == COMPLETE
        }
        if complete:
            result.elections = elect_preferred(gateway, complete)
            result.notes += result.elections.lines()
    if not preserve_throttles and IN_PROGRESS not in result.statuses():
        _clear_throttles(gateway, plan, priors, result)
    elif preserve_throttles:
        result.notes.append("Throttles preserved (--preserve-throttles).")
    return result


def move_row(m: Move, st: PartitionState | None) -> dict[str, Any]:
    """One move's row: its status and where the partition is."""
    status = classify(m.replicas, st)
    return {
        "topic": m.topic,
        "partition": m.partition,
        "status": status,
        "target": list(m.replicas),
        "replicas": list(st.replicas) if st else [],
        "adding": list(st.adding) if st else [],
        "removing": list(st.removing) if st else [],
        "other_target": list(st.target)
        if st is not None and st.reassigning and status == MISMATCH
        else None,
    }


def _log_dir_rows(
    gateway: Any, plan: Plan, states: Mapping[TopicPartition, PartitionState]
) -> list[dict[str, Any]]:
    """One row per replica the plan puts in a named log dir: there, on its way, or not."""
    wanted = log_dir_targets(plan)
    if not wanted:
        return []
    cur, fut = replica_log_dirs(gateway, [m.tp for m in plan], {b for _, b in wanted})
    rows = []
    for (tp, b), d in sorted(wanted.items()):
        if cur.get((tp, b)) == d and (tp, b) not in fut:
            status = COMPLETE
        elif fut.get((tp, b)) == d or states.get(tp) is not None and states[tp].reassigning:
            status = IN_PROGRESS
        else:
            status = MISMATCH
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "broker": b,
                "log_dir": d,
                "current": cur.get((tp, b)),
                "future": fut.get((tp, b)),
                "status": status,
            }
        )
    return rows


def _clear_throttles(gateway: Any, plan: Plan, priors: Any, result: VerifyResult) -> None:
    """Nothing of the plan in progress: its throttles go (the operator's values put back with
    the run's priors), or the principal lacking the rights to is said."""
    lacking = missing_permissions(gateway, ["DESCRIBE_CONFIGS", "ALTER_CONFIGS"])
    if lacking:
        result.notes.append(
            "Throttles not removed: this client's principal lacks "
            + " and ".join(lacking)
            + " on the CLUSTER resource (kafka-cluster), needed to remove the throttle configs "
            "of brokers and topics. Run --verify again as a principal that has it, so that no "
            "throttle is left."
        )
        return
    # with the run's priors (its record), only what that run changed is touched;
    # without, every broker's rate goes, as the official tool does
    result.cleared = thr.clear_throttles(
        gateway, plan.topics(), priors=priors, only_recorded=priors is not None
    )
    kept = {t: kv for t, kv in result.cleared[0].items() if any(v is not None for v in kv.values())}
    result.notes.append(
        "Throttles removed from topics "
        + ",".join(plan.topics())
        + " and from brokers no other reassignment in flight needs"
        + (f" (kept for moves still in flight: {', '.join(sorted(kept))})" if kept else "")
        + "."
        + (" The values there before were put back." if priors else "")
    )
