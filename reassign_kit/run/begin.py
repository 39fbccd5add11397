"""The run's start (a part of ``Run``, run/run.py): open the journal (a resume reads it
back: run id, write-ahead originals, elections queued, whether a cancel was under way), read
the cluster, load the moves in the run's order and batches, and reconcile each with what the
cluster shows (complete, adopted in flight, continued, rolling back)."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..cluster.views import partition_sizes, refuse_in_flight
from ..errors import JournalError, ReassignKitError, UsageError
from ..model import PartitionState, TopicPartition, is_complete
from ..moves.journal import Journal, read_events
from ..moves.originals import journal_behind, originals_disagreeing, stepped_partitions
from ..moves.schedule import Item, assign_batches, item_for, order_items
from ..moves.table import MoveState, MoveStatus
from ..pacing.memory import orphan_canaries
from ..snapshot.tier import copied_sizes
from .resume import check_plan_digest, run_started

if TYPE_CHECKING:
    from .shared import RunParts, RunState

PENDING, READY, MOVING = MoveStatus.PENDING, MoveStatus.READY, MoveStatus.MOVING
ROLLING_BACK = MoveStatus.ROLLING_BACK
DONE, CANCELLED, FAILED = MoveStatus.DONE, MoveStatus.CANCELLED, MoveStatus.FAILED


class Begin:
    """Start and resume (see the module docstring)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts

    def min_isr_of(self, topic: str) -> int:
        """A topic's min.insync.replicas for its steps; the gateway is asked once, for the
        plan's topics."""
        if self.shared.min_isr is None:
            self.shared.min_isr = dict(
                self.shared.gw.min_insync_replicas(self.shared.plan.topics())
            )
        if isinstance(self.shared.min_isr, int):
            return self.shared.min_isr
        return self.shared.min_isr.get(topic, 1)

    def begin(self) -> None:
        """Open the journal, read the cluster, load the moves (found complete, adopted on
        resume) and set the throttles the moves in flight need: the first change this run
        makes to the cluster comes last, so a start that fails changes nothing."""
        prior, resuming = self._open_journal()
        if resuming:
            self.shared.elections.replay(prior)  # elections queued before and not finished
        tps = [m.tp for m in self.shared.plan]
        states = self.shared.gw.describe_partitions(tps)
        cluster = self.shared.gw.list_reassignments()
        missing = [tp for tp in tps if tp not in states]
        if missing:
            raise UsageError(
                "unknown partition(s), nothing was sent: " + ", ".join(str(t) for t in missing[:10])
            )
        journaled = self.journaled_submissions(prior) if resuming else {}
        if resuming:
            self._check_originals(journaled, prior, cluster, states)
        foreign = [tp for tp in cluster if tp not in journaled]
        if not resuming:  # the same refusal (message, exit 6) as the preflight's
            refuse_in_flight(foreign, self.shared.options.additional)
        ordered = self._load_moves(states)
        self._journal_start(resuming, ordered, foreign)
        if self.shared.journal is not None and self.shared.journal.torn_bytes:
            self.parts.loop.emit(
                "warning",
                message=f"the journal's last line was torn ({self.shared.journal.torn_bytes} bytes "
                "without a newline: the process died mid-write); it was cut off",
            )
        # a run killed while it was being cancelled resumes as a cancel
        self.shared.resume_cancel = resuming and cancel_interrupted(prior)
        self._reconcile(states, journaled, resuming)
        if resuming:
            self.shared.throttles.remember(prior)
            self.parts.pace.pace_resume(prior)
        self.shared.began = True  # from here on the run may change the cluster
        self.parts.loop.sync_throttles(cluster)
        orphans = orphan_canaries(prior) if resuming else []
        if orphans:  # the journaled run was killed with its probe up: its canary goes
            self.parts.canary.delete_canaries(orphans, orphan=True)
        if self.shared.resume_cancel:
            self.parts.loop.emit(
                "warning",
                message="the journaled run was being cancelled when it ended: the cancel is "
                "resumed (every move it touched goes back to its original replicas)",
            )
            self.parts.run.stop(cancel_inflight=True)

    def _open_journal(self) -> tuple[list[dict[str, Any]], bool]:
        """The journal's earlier events and whether this run resumes them; sets the run id
        and start time (the journaled ones on resume) and opens the journal."""
        prior: list[dict[str, Any]] = []
        if self.shared.journal_path and os.path.exists(self.shared.journal_path):
            prior = read_events(self.shared.journal_path)
        first = next((e for e in prior if e.get("event") == "run_started"), None)
        resuming = self.shared.resume_requested
        if resuming:
            path = str(self.shared.journal_path)
            first = run_started(path, prior, "nothing to resume")
            check_plan_digest(path, first, self.shared.plan)
            self.shared.run_id = first["run_id"]
            self.shared.started_at = float(first["ts"])
        else:
            self.shared.run_id = (
                self.shared.run_id or time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
            )
            self.shared.started_at = self.shared.clock()
        if self.shared.journal_path:
            self.shared.journal = Journal(
                self.shared.journal_path, self.shared.run_id, self.shared.clock, self.shared.secrets
            )
        return prior, resuming

    def _load_moves(self, states: Mapping[TopicPartition, PartitionState]) -> list[Item]:
        """One MoveState per plan move, in the run's order and batches."""
        sizes = self._sizes([m.tp for m in self.shared.plan])
        items = []
        bases: dict[TopicPartition, tuple[int, ...]] = {}
        for m in self.shared.plan:
            st = states[m.tp]
            under = len(st.isr) < len(st.replicas) if st.isr else False
            base = (
                st.replicas
                if not st.reassigning
                else tuple(b for b in st.replicas if b not in st.adding)
            )
            bases[m.tp] = tuple(base)
            items.append(item_for(m.tp, base, m.replicas, st.leader, sizes.get(m.tp, 0), under))
            for b in m.replicas:
                if b not in base:
                    self.shared.inbound_total[b] = self.shared.inbound_total.get(b, 0) + sizes.get(
                        m.tp, 0
                    )
        ordered = order_items(items, self.shared.options.order)
        # the disk ceiling may reorder them: no log dir over it while sources hold copies
        ordered = self.parts.disks.order(ordered, bases)
        ordered = assign_batches(ordered, self.shared.caps)
        self.shared.order = [i.tp for i in ordered]
        self.shared.pos = {tp: i for i, tp in enumerate(self.shared.order)}
        plan_by_tp = self.shared.plan.by_tp()
        emit = self.parts.loop.emit  # one bound method for every move (was one object per move)
        for it in ordered:
            ms = MoveState(plan_by_tp[it.tp], it, emit=emit)
            self.shared.moves[it.tp] = ms
            self.shared.index.add(ms)
        return ordered

    def moves_in_order(self) -> list[MoveState]:
        return [self.shared.moves[tp] for tp in self.shared.order]

    def _journal_start(self, resuming: bool, ordered: list[Item], foreign: list) -> None:
        info = _cluster_info(self.shared.gw)
        self.parts.loop.emit(
            "run_started",
            resumed=resuming,
            plan_digest=self.shared.plan.digest(),
            plan_path=self.shared.plan_path,
            plan=self.shared.plan.to_json_obj() if len(self.shared.plan) <= 20000 else None,
            moves=len(self.shared.plan),
            options=self.shared.options.to_json_obj(),
            mode=self.shared.caps.mode,
            batches=(max((i.batch for i in ordered), default=-1) + 1),
            reassign_kit_version=__version__,
            kafka_version=info.get("kafka_version"),
            cluster=info,
            foreign_in_flight=len(foreign),
        )
        if foreign and self.shared.caps.cluster_max_reassignments is None:
            self.parts.loop.emit(
                "warning",
                message=f"{len(foreign)} other reassignment(s) in flight; this run's caps do "
                "not count them (set --cluster-max-reassignments to)",
            )

    def _reconcile(
        self,
        states: Mapping[TopicPartition, PartitionState],
        journaled: Mapping[TopicPartition, dict],
        resuming: bool,
    ) -> None:
        """Each move against the cluster at start: complete already (or finished while the
        run was away), adopted in flight, or continued from where the cluster shows it."""
        now = self.shared.clock()
        self.shared.dirs.check_placed(
            tp
            for tp in self.shared.dirs.targets
            if is_complete(self.shared.moves[tp].move.replicas, states[tp])
        )
        for tp in self.shared.order:
            ms = self.shared.moves[tp]
            st = states[tp]
            j = journaled.get(tp)
            if self.parts.track.complete(tp, st):
                if j is not None and not j.get("completed"):
                    ms.submitted_at = float(j.get("submitted_ts", now))
                    ms.original = tuple(j.get("original") or ())
                    ms.complete(now, st.replicas, adopted=True)
                elif j is None:
                    ms.complete(now, st.replicas, already=True)
                else:  # journaled complete already
                    ms.completed_at = now
                    ms.restore(MoveStatus.DONE)
            elif (
                self.shared.resume_cancel
                and j is not None
                and j.get("rolled")
                and st.reassigning
                and tuple(st.target) == tuple(j.get("original") or ())
            ):  # its way back, in flight: watched until it is at its original
                ms.submitted_at = float(j.get("submitted_ts", now))
                ms.original = tuple(j["original"])
                ms.cancel_reason = "stop"
                ms.restore(ROLLING_BACK)
            elif resuming and j is not None and st.reassigning:
                ms.submitted_at = float(j.get("submitted_ts", now))
                ms.original = tuple(j.get("original") or ())
                steps = [st.target, *self.plan_steps(ms, st, adopted_target=st.target)]
                ms.adopt(now, st.target, steps, ms.original)
            elif resuming and j is not None and "submitted_ts" in j:
                # submitted before, neither moving nor complete: an earlier step completed
                # or the move was cancelled; continue from what the cluster shows. (Its
                # intent alone, neither moving nor complete: the kill came before the Alter
                # took; it stays pending and is submitted as new, its ``submitted`` written.)
                ms.original = tuple(j.get("original") or st.replicas)
                ms.submitted_at = float(j.get("submitted_ts", now))
                if j.get("step_completed_ts") is not None:  # the gap to its next step
                    ms.step_completed_at = float(j["step_completed_ts"])
                ms.restore(MoveStatus.READY)

    def _check_originals(
        self,
        journaled: Mapping[TopicPartition, dict],
        prior: list[dict[str, Any]],
        in_flight: Mapping[TopicPartition, PartitionState],
        states: Mapping[TopicPartition, PartitionState],
    ) -> None:
        """The journaled originals against the cluster, by cancel's rule
        (``moves.originals``): a resume acting on one the cluster contradicts would later
        roll the partition back onto brokers that never held it. Nothing is sent."""
        recorded = {tp: tuple(j["original"]) for tp, j in journaled.items() if j.get("original")}
        targets = {m.tp: tuple(m.replicas) for m in self.shared.plan}
        bad = originals_disagreeing(recorded, targets, in_flight, states, stepped_partitions(prior))
        bad += journal_behind(prior, targets, in_flight, self.shared.options.throttle is not None)
        if bad:
            raise JournalError(
                f"--resume: refused, nothing sent: the original replicas journaled in "
                f"{self.shared.journal_path} disagree with the cluster (the journal edited, "
                "cut, restored from an older copy or of another run):\n  " + "\n  ".join(bad)
            )

    def journaled_submissions(self, prior: list[dict[str, Any]]) -> dict[TopicPartition, dict]:
        out: dict[TopicPartition, dict] = {}
        for e in prior:
            ev = e.get("event")
            if "topic" not in e:
                continue
            tp = TopicPartition(e["topic"], int(e["partition"]))
            if ev == "intent" and e.get("original"):
                # the write-ahead record: the first one holds the move's original
                self.shared.wal_originals.setdefault(tp, tuple(int(b) for b in e["original"]))
                out.setdefault(tp, {"completed": False})
                out[tp].setdefault("original", e.get("original"))
            elif ev == "submitted":
                j = out.setdefault(tp, {"completed": False})
                j["submitted_ts"] = e["ts"]
                j.setdefault("original", e.get("current"))
            elif ev == "step_completed" and tp in out:
                out[tp]["step_completed_ts"] = e["ts"]  # every journal's event has its ts
            elif ev == "completed" and tp in out:
                out[tp]["completed"] = True
            elif ev in ("rolling_back", "cancelled") and tp in out:
                out[tp]["rolled"] = ev
        return out

    def _sizes(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Bytes per partition (``cluster.views.partition_sizes``): to order and to report."""
        try:
            # what each move copies: a tiered topic's size under KIP-1023 is its untiered tail
            return copied_sizes(self.shared.gw, partition_sizes(self.shared.gw, tps))
        except ReassignKitError as e:
            self.parts.loop.emit("warning", message=f"cannot read partition sizes: {e}")
            return {}

    def plan_steps(
        self, ms: MoveState, st: PartitionState, adopted_target: tuple[int, ...] | None = None
    ) -> list[tuple[int, ...]]:
        base = PartitionState(st.tp, adopted_target or st.replicas, st.isr, st.leader)
        if adopted_target is not None and tuple(adopted_target) == tuple(ms.move.replicas):
            return []
        steps = self.shared.steps_for(ms.move, base, ms.original or base.replicas)
        return [tuple(s) for s in steps] or [tuple(ms.move.replicas)]


def cancel_interrupted(events: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a journal's run was being cancelled when it ended without finishing: a
    ``cancel_started`` after its last ``run_finished`` (or with none)."""
    last_cancel = last_end = -1
    for i, e in enumerate(events):
        kind = e.get("event")
        if kind == "cancel_started":
            last_cancel = i
        elif kind == "run_finished":
            last_end = i
    return last_cancel > last_end


def _cluster_info(gw: Any) -> dict[str, Any]:
    """The gateway's ``cluster_info()`` (Kafka version and cluster id); informative only, so
    a failure is noted rather than fatal."""
    try:
        return dict(gw.cluster_info())
    except Exception as e:  # noqa: BLE001 - informative only
        return {"error": f"{type(e).__name__}: {e}"}
