"""Submission (a part of ``Run``, run/run.py): what may start now (``schedule.decide``),
each move's original taken (never the union of a partition already reassigning), its intent
and original written ahead, its throttles set, then one AlterPartitionReassignments."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..model import PartitionState, TopicPartition
from ..moves.schedule import Item, decide, item_for
from ..moves.table import MoveState, MoveStatus

if TYPE_CHECKING:
    from .shared import RunParts, RunState

PENDING, READY, MOVING = MoveStatus.PENDING, MoveStatus.READY, MoveStatus.MOVING
ROLLING_BACK = MoveStatus.ROLLING_BACK
DONE, CANCELLED, FAILED = MoveStatus.DONE, MoveStatus.CANCELLED, MoveStatus.FAILED


class Submitter:
    """Scheduling and submission (see the module docstring)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts

    def schedule(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        states: Mapping[TopicPartition, PartitionState],
        now: float,
    ) -> None:
        """Ask ``schedule.decide`` what may start now (new moves and next steps) and submit it."""
        with self.shared.lock:
            caps = self.shared.caps
        ready_items, ready_states = self._next_steps(states, now)
        if not self.shared.index.count(PENDING) and not ready_items:
            self.shared.waiting_reason = None
            return
        inflight = _InflightItems(self)  # built only if a cap reads them
        # read lazily by decide, only as far as it needs (not the whole plan at every poll)
        pending = (ms.item for ms in self.shared.index.iter(PENDING))
        d = decide(pending, inflight, caps, ready=ready_items, cluster_inflight=len(cluster))
        self.shared.waiting_reason = d.waiting_reason
        if d.submit:
            self._submit(cluster, d.submit, ready_states, d.batch if caps.mode == "batch" else None)

    def _next_steps(
        self, states: Mapping[TopicPartition, PartitionState], now: float
    ) -> tuple[list[Item], dict[TopicPartition, PartitionState]]:
        """The next steps of moves between steps (they hold a slot), as schedule items, with
        the states they start from; steps planned again where R changed or the replicas are
        not where the last step left them; a move found complete completes here."""
        items: list[Item] = []
        ready_states: dict[TopicPartition, PartitionState] = {}
        ready_tps = sorted(
            (ms.tp for ms in self.shared.index.of(READY)), key=self.shared.pos.__getitem__
        )
        if not ready_tps:
            return items, ready_states
        fresh = {tp: states[tp] for tp in ready_tps if tp in states}
        missing = [tp for tp in ready_tps if tp not in fresh]
        if missing:
            fresh.update(self.shared.gw.describe_partitions(missing))
        for tp in ready_tps:
            st = fresh.get(tp)
            ms = self.shared.moves[tp]
            if st is None:
                continue
            if not ms.steps or ms.step == 0 or tuple(st.replicas) != ms.step_target:
                ms.steps = self.parts.begin.plan_steps(ms, st)
                ms.step = 0
            elif ms.replan:  # R changed: the steps done stay, those left are planned anew
                ms.steps = ms.steps[: ms.step] + self.parts.begin.plan_steps(ms, st)
            ms.replan = False
            if self.parts.track.complete(tp, st):
                ms.complete(now, st.replicas)
                continue
            nxt = ms.steps[ms.step] if ms.step < len(ms.steps) else tuple(ms.move.replicas)
            ready_states[tp] = st
            it = item_for(tp, st.replicas, nxt, st.leader, ms.item.size_bytes)
            items.append(
                Item(
                    tp,
                    it.brokers,
                    it.moves_leader,
                    ms.item.size_bytes,
                    ms.item.under_replicated,
                    ms.item.batch,
                )
            )
        return items, ready_states

    def _room_for(
        self, tps: Sequence[TopicPartition], ready_states: Mapping[TopicPartition, PartitionState]
    ) -> tuple[Sequence[TopicPartition], Mapping[TopicPartition, PartitionState]]:
        """The moves of ``tps`` the disk ceiling lets go now (why the others wait becomes the
        waiting reason), and the states of the new ones (read here, once)."""
        new_tps = [tp for tp in tps if self.shared.moves[tp].status is PENDING]
        new_states = self.shared.gw.describe_partitions(new_tps) if new_tps else {}
        current = {
            tp: st.replicas
            for tp in tps
            if (st := ready_states.get(tp) or new_states.get(tp)) is not None
        }
        admitted, held = self.parts.disks.admit(tps, current)
        if held is not None:
            self.shared.waiting_reason = held
        return admitted, new_states

    def _submit(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        tps: Sequence[TopicPartition],
        ready_states: Mapping[TopicPartition, PartitionState],
        batch: int | None,
    ) -> None:
        """Set the throttles the moves need, then submit each one's next step in one request;
        a rejected submission fails its move and ends the run."""
        tps, new_states = self._room_for(tps, ready_states)
        targets: dict[TopicPartition, tuple[int, ...]] = {}
        steps_info: dict[TopicPartition, int] = {}
        for tp in tps:
            ms = self.shared.moves[tp]
            st = ready_states.get(tp) or new_states.get(tp)
            if st is None:
                ms.fail("partition no longer exists")
                continue
            if ms.status is PENDING:
                original = self._original_at_submit(ms, st)
                if original is None:
                    continue  # refused by name (already reassigning, no original known)
                ms.original = original
                ms.steps = self.parts.begin.plan_steps(ms, st)
                ms.step = 0
            nxt_i = ms.step + 1
            targets[tp] = ms.steps[nxt_i - 1] if nxt_i <= len(ms.steps) else tuple(ms.move.replicas)
            steps_info[tp] = nxt_i
        if not targets:
            return
        self._write_ahead(targets, steps_info)
        # throttles first: the moves about to start must never run unthrottled
        changed_before = self.shared.dirty  # a change of this poll the listing does not show yet
        self.parts.loop.sync_throttles(
            cluster,
            {tp: (tgt, ready_states.get(tp) or new_states[tp]) for tp, tgt in targets.items()},
        )
        results = self.shared.gw.alter_reassignments(
            targets,
            allow_replication_factor_change=self.shared.options.allow_replication_factor_change,
        )
        self.shared.dirty = True
        now = self.shared.clock()
        errors: dict[TopicPartition, str] = {}
        with self.parts.loop.holding_deliveries():
            for tp, tgt in targets.items():
                ms = self.shared.moves[tp]
                err = results.get(tp, "no answer from the controller")
                if err:
                    errors[tp] = err
                    ms.reject(err, tgt, steps_info[tp])
                    continue
                if ms.submitted_at is None:
                    ms.submit_first(now, batch, steps_info[tp], tgt)
                else:
                    ms.submit_step(now, steps_info[tp], tgt)
        self.shared.dirs.register(now)  # so that the run cannot return before they begin
        # every move accepted, nothing else changed in this poll: the throttles just set are
        # those of the cluster's listing at this poll's start plus what was sent
        self.shared.throttles_fresh = not errors and not changed_before
        if errors:
            tp0, e0 = next(iter(errors.items()))
            submitted = self.shared.index.submitted
            self.parts.loop.fail(
                f"{len(errors)} submission(s) rejected, e.g. {tp0}: {e0}; the run stopped "
                f"after submitting {submitted} move(s) (see the journal)"
            )

    def _write_ahead(
        self, targets: Mapping[TopicPartition, tuple[int, ...]], steps: Mapping[TopicPartition, int]
    ) -> None:
        """Each move's intent and what undoes it — its original replica list, in order — in
        the journal, fsynced (the gateway commits it before any change), before the
        throttles and the Alter are sent: a SIGKILL right after the Alter leaves the original
        on disk for the resume and the cancel. Heard by the subscribers together, at the end."""
        emit = self.parts.loop.emit
        with self.parts.loop.holding_deliveries():
            for tp, tgt in targets.items():
                emit(
                    "intent",
                    topic=tp.topic,
                    partition=tp.partition,
                    action="alter",
                    original=list(self.shared.moves[tp].original),
                    target=list(tgt),
                    step=steps[tp],
                    order_known=tp not in self.shared.order_unknown,
                )

    def _original_at_submit(self, ms: MoveState, st: PartitionState) -> tuple[int, ...] | None:
        """The replicas a move starts from: the cluster's list when nothing is reassigning
        it (this run's write-ahead record, if it has one); for a partition found already reassigning (an Alter that timed out on the client
        but was applied, another tool's move) the write-ahead record of this run's journal,
        else KIP-455's ``replicas - adding`` (the right set; Kafka lists the target first,
        so its order is unknown) when adopted explicitly (``--additional``), else refused by
        name. Never ``replicas`` of a reassigning partition: that is target + original."""
        wal = self.shared.wal_originals.get(ms.tp)
        if not st.reassigning:
            # a move whose intent alone was journaled before a kill: the list it recorded
            # before anything was sent (a KIP-435 step may have taken since)
            return wal or tuple(st.replicas)
        if wal:
            return wal
        kip455 = tuple(b for b in st.replicas if b not in st.adding)
        if self.shared.options.additional and kip455:
            self.shared.order_unknown.add(ms.tp)
            self.parts.loop.emit(
                "warning",
                **_tpf(ms.tp),
                message=f"{ms.tp}: already reassigning (replicas {list(st.replicas)}, adding "
                f"{list(st.adding)}); adopted with the original replica set {list(kip455)} "
                "from KIP-455 (its order is not known: a cancel restores the set in this order)",
            )
            return kip455
        ms.fail(
            f"already reassigning (replicas {list(st.replicas)}, adding {list(st.adding)}) "
            "and this run's journal has no record of its original replicas: refused (another "
            "reassignment is in flight; --additional adopts it with the original set "
            f"{list(kip455)} from KIP-455, order unknown)"
        )
        return None

    def inflight_item(self, ms: MoveState) -> Item:
        """The step in flight as a schedule item (kept per step: asked for at every poll)."""
        key = (ms.step_from, ms.step_target)
        cached = self.shared.inflight_items.get(ms.tp)
        if cached is not None and cached[0] == key:
            return cached[1]
        it = item_for(ms.move.tp, ms.step_from, ms.step_target)
        item = Item(
            ms.move.tp,
            it.brokers,
            it.moves_leader,
            ms.item.size_bytes,
            ms.item.under_replicated,
            ms.item.batch,
        )
        self.shared.inflight_items[ms.tp] = (key, item)
        return item


class _InflightItems:
    """The run's steps in flight as schedule items for ``decide``: counted at once, built
    (``Submitter.inflight_item``) only if ``decide`` reads them — under a broker or leader
    cap, in batch mode (building them all at every poll is most of a quiet poll's work)."""

    def __init__(self, submitter: Submitter):
        self._submitter = submitter
        self._n = submitter.shared.index.count(MOVING)
        self._items: list[Item] | None = None

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Item]:
        if self._items is None:
            shared = self._submitter.shared
            moving = shared.index.of(MOVING)
            self._items = [self._submitter.inflight_item(ms) for ms in moving]
            if len(shared.inflight_items) > 2 * len(moving):  # moves no longer in flight
                keep = {ms.tp for ms in moving}
                shared.inflight_items = {
                    tp: v for tp, v in shared.inflight_items.items() if tp in keep
                }
        return iter(self._items)


def _tpf(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}
