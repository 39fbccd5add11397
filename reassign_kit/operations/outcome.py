"""Where each partition of a plan ended after a cancel, read from the cluster.

One report for every cancel path — the panel's Cancel, ``--cancel`` and the API — so that what
the operator reads is what the cluster holds: per partition, ``rolled back`` (at its original
replicas after the run submitted it), ``kept at target`` (it completed before or despite the
cancel), ``never started`` (at its original, never submitted), ``rolling back`` (still in
flight back) or ``elsewhere`` (neither: named, never hidden); with the leader it has now and
whether the preferred-leader election a kept move owes was carried out or is still owed.

``partition_outcomes`` is pure (plan, originals, cluster states, journal events in; rows out);
``cancel_report`` reads the cluster and, with ``elect=True``, carries out the elections owed
(``run.elections.elect_preferred``, KIP-460) before reading it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import PartitionState, Plan, TopicPartition

ROLLED_BACK = "rolled back"
KEPT = "kept at target"
NEVER_STARTED = "never started"
ROLLING_BACK = "rolling back"
ELSEWHERE = "elsewhere"


@dataclass(frozen=True)
class Outcome:
    """One partition after a cancel."""

    tp: TopicPartition
    outcome: str
    replicas: tuple[int, ...]  # the cluster's list now
    original: tuple[int, ...]
    target: tuple[int, ...]
    leader: int | None
    election: str = ""  # kept moves: "not needed" | "carried out" | "owed" | "failed: …"

    def as_dict(self) -> dict[str, Any]:
        return {
            "partition": str(self.tp),
            "outcome": self.outcome,
            "replicas": list(self.replicas),
            "original": list(self.original),
            "target": list(self.target),
            "leader": self.leader,
            "election": self.election,
        }


@dataclass
class CancelReport:
    """Per-partition outcomes of a cancel, in plan order."""

    rows: list[Outcome] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r.outcome] = out.get(r.outcome, 0) + 1
        return out

    @property
    def owed(self) -> list[TopicPartition]:
        """Kept moves whose preferred leader does not lead (an election still owed)."""
        return [r.tp for r in self.rows if r.election.startswith(("owed", "failed"))]

    def lines(self) -> list[str]:
        """The report as the CLI prints it."""
        c = self.counts()
        head = ", ".join(f"{n} {k}" for k, n in sorted(c.items())) or "no partition"
        out = [f"cancel: {head}"]
        for r in self.rows:
            el = f"; election {r.election}" if r.election else ""
            out.append(f"  {r.tp}: {r.outcome}, replicas {list(r.replicas)}, leader {r.leader}{el}")
        if self.owed:
            out.append(
                "preferred-leader elections owed (run `--verify --elect-leaders`): "
                + ", ".join(map(str, self.owed))
            )
        return out

    def to_json_obj(self) -> dict[str, Any]:
        return {"counts": self.counts(), "partitions": [r.as_dict() for r in self.rows]}

    def to_pandas(self) -> Any:
        import pandas as pd

        return pd.DataFrame([r.as_dict() for r in self.rows])


def submitted_partitions(events: Iterable[Mapping[str, Any]]) -> set[TopicPartition]:
    """Partitions a run's journal shows it sent (a move's intent, submission or adoption)."""
    out: set[TopicPartition] = set()
    for e in events:
        if e.get("event") in ("intent", "submitted", "step_submitted", "adopted"):
            if "topic" in e and e.get("partition") is not None:
                out.add(TopicPartition(str(e["topic"]), int(e["partition"])))
    return out


def journal_originals(events: Iterable[Mapping[str, Any]]) -> dict[TopicPartition, tuple]:
    """Each partition's original replica list as the run journaled it (the first record)."""
    out: dict[TopicPartition, tuple[int, ...]] = {}
    for e in events:
        if e.get("event") not in ("intent", "submitted", "adopted"):
            continue
        orig = e.get("original") or e.get("current")
        if "topic" in e and e.get("partition") is not None and orig:
            out.setdefault(
                TopicPartition(str(e["topic"]), int(e["partition"])), tuple(int(b) for b in orig)
            )
    return out


def plan_from_events(events: Iterable[Mapping[str, Any]]) -> Plan | None:
    """The plan a run's journal submitted (each move's ``target``, in submission order), for a
    report of a cancel given only ``--journal``; None when it submitted nothing."""
    from ..model import Move

    targets: dict[TopicPartition, tuple[int, ...]] = {}
    for e in events:
        if e.get("event") in ("submitted", "adopted") and e.get("target"):
            if "topic" in e and e.get("partition") is not None:
                tp = TopicPartition(str(e["topic"]), int(e["partition"]))
                targets.setdefault(tp, tuple(int(b) for b in e["target"]))
    return Plan.of([Move(tp, t) for tp, t in targets.items()]) if targets else None


def partition_outcomes(
    plan: Plan,
    originals: Mapping[TopicPartition, Sequence[int]],
    states: Mapping[TopicPartition, PartitionState],
    submitted: Iterable[TopicPartition],
    elections: Mapping[TopicPartition, str] | None = None,
) -> CancelReport:
    """Each plan partition's outcome from the cluster's ``states`` (pure)."""
    sent = set(submitted)
    rows: list[Outcome] = []
    for m in plan:
        tp = m.tp
        st = states.get(tp)
        orig = tuple(originals.get(tp, ()))
        target = tuple(m.replicas)
        reps = tuple(st.replicas) if st is not None else ()
        leader = st.leader if st is not None else None
        election = ""
        if st is not None and st.reassigning:
            outcome = ROLLING_BACK
        elif reps == target and (tp in sent or reps != orig):
            outcome = KEPT
            given = (elections or {}).get(tp)
            if leader == target[0]:
                election = given if given == "carried out" else "not needed"
            else:
                election = given if given and given.startswith("failed") else "owed"
        elif orig and reps == orig:
            outcome = ROLLED_BACK if tp in sent else NEVER_STARTED
        else:
            outcome = ELSEWHERE
        rows.append(Outcome(tp, outcome, reps, orig, target, leader, election))
    return CancelReport(rows)


def cancel_report(
    gateway: Any,
    plan: Plan,
    events: Iterable[Mapping[str, Any]] = (),
    originals: Mapping[TopicPartition, Sequence[int]] | None = None,
    elect: bool = False,
    started: Iterable[TopicPartition] = (),
) -> CancelReport:
    """Read the plan's partitions from the cluster and say where each ended. Originals: the
    run's journal (``events``), else ``originals`` (a rollback file, the replicas before the
    run) for partitions the journal does not name. ``elect``: carry out
    the preferred-leader elections kept moves still owe (one request), then read again.
    ``started``: the partitions the cancel itself found moving or sent back (a legacy run
    journals nothing: without them its rolled-back partitions were said "never started")."""
    from ..run.elections import elect_preferred

    evs = list(events)
    orig = {**dict(originals or {}), **journal_originals(evs)}
    tps = [m.tp for m in plan]
    states = gateway.describe_partitions(tps)
    sent = submitted_partitions(evs) | set(started)
    report = partition_outcomes(plan, orig, states, sent)
    owed = {r.tp: states[r.tp] for r in report.rows if r.election == "owed"}
    if not (elect and owed):
        return report
    res = elect_preferred(gateway, owed)
    done = {tp: "carried out" for tp in res.elected}
    done.update({tp: f"failed: {err}" for tp, err in res.failed.items()})
    return partition_outcomes(plan, orig, gateway.describe_partitions(tps), sent, done)
