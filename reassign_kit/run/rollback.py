"""Rollback: the one way back to a move's original replica list, used by
every cancel path — the paced run's (``Run.cancel()``, ``--on-interrupt cancel``,
``--on-deadline cancel``, the panel and the API, a resumed interrupted cancel) through
``RollbackPart``, and the one-shot ``--cancel`` (``ops.cancel``) through ``merge_originals``,
``roll_back`` and ``restore_leaders``.

Rules kept here: a move's original comes from the run's write-ahead record (or the
rollback file; when two sources disagree nothing is sent and both lists are named); the
step in flight is cancelled first, then the original list is submitted (throttled, after its
own write-ahead ``intent`` line), and a move is reported ``cancelled`` only once the cluster
shows exactly its original list, in order (so never with more replicas than it had).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..cluster.views import no_reassignment_in_progress
from ..errors import KafkaOperationError, UsageError
from ..model import PartitionState, TopicPartition, is_complete
from ..moves.table import MoveState, MoveStatus
from ..throttles import configs as thr

if TYPE_CHECKING:
    from .shared import RunParts, RunState

MOVING, READY = MoveStatus.MOVING, MoveStatus.READY
ROLLING_BACK = MoveStatus.ROLLING_BACK
ROLLBACK_POLL_S = 1.0


class OriginalsConflict(UsageError):
    """Two sources of a partition's original replicas (the run's journal, a rollback file)
    disagree: nothing is sent; both lists are named."""


def merge_originals(
    sources: Mapping[str, Mapping[TopicPartition, tuple[int, ...]]],
) -> dict[TopicPartition, tuple[int, ...]]:
    """One original per partition from every source (name -> originals); a partition two
    sources give different lists for (order included) stops the cancel, naming both."""
    out: dict[TopicPartition, tuple[int, ...]] = {}
    seen: dict[TopicPartition, str] = {}
    conflicts: list[str] = []
    for name, originals in sources.items():
        for tp, orig in originals.items():
            orig = tuple(orig)
            if tp in out and out[tp] != orig:
                conflicts.append(f"{tp}: {seen[tp]} says {list(out[tp])}, {name} says {list(orig)}")
                continue
            out.setdefault(tp, orig)
            seen.setdefault(tp, name)
    if conflicts:
        shown = "; ".join(conflicts[:20]) + (" …" if len(conflicts) > 20 else "")
        raise OriginalsConflict(
            f"the original replica lists disagree for {len(conflicts)} partition(s), nothing "
            f"was sent: {shown}. Give only the source you trust (--journal or --rollback-file)"
        )
    return out


def kip455_original(st: PartitionState) -> tuple[int, ...]:
    """KIP-455's original replica SET of a partition reassigning (``replicas - adding``);
    its order is not known (Kafka lists the target first)."""
    return tuple(b for b in st.replicas if b not in st.adding)


def restore_leaders(
    gateway: Any, originals: Mapping[TopicPartition, tuple[int, ...]]
) -> dict[TopicPartition, str]:
    """Partitions back at their original replica lists but led by another replica (a step
    dropped the original leader and the way back kept the one that took over: Kafka moves
    leadership by itself only when the leader leaves) get a preferred-leader election
    (KIP-460). Returns the partitions it failed for, with the error."""
    if not originals:
        return {}
    states = gateway.describe_partitions(list(originals))
    off = [
        tp
        for tp, orig in originals.items()
        if (st := states.get(tp)) is not None and st.leader is not None and st.leader != orig[0]
    ]
    if not off:
        return {}
    try:
        res = gateway.elect_preferred_leaders(off)
    except KafkaOperationError as e:
        return dict.fromkeys(off, str(e))
    return {tp: str(res[tp]) for tp in off if res.get(tp)}


def roll_back(
    gateway: Any,
    back: Mapping[TopicPartition, tuple[int, ...]],
    states: Mapping[TopicPartition, PartitionState],
    rate: int | None,
    timeout_s: float,
    priors: thr.Priors | None = None,
) -> tuple[
    list[TopicPartition],
    dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]],
    dict[TopicPartition, str],
]:
    """Submit each partition's original list (throttles first, when a rate is known: the way
    back may copy a replica a step dropped) and wait, bounded, until the cluster shows it.
    Returns (back at original, still rolling back: (original, now), refused: error). The
    values the throttles had before are recorded into ``priors`` (when given), so the end
    puts them back and touches no other config."""
    if rate is not None:
        others = {tp: st for tp, st in gateway.list_reassignments().items() if tp not in back}
        thr.apply_throttles(
            gateway, thr.required_throttles(back, states, others), rate, priors=priors
        )
    res = gateway.alter_reassignments(dict(back), allow_replication_factor_change=True)
    refused = {
        tp: f"rollback to [{','.join(map(str, o))}] refused: "
        f"{res.get(tp) or 'no answer from the controller'}"
        for tp, o in back.items()
        if tp not in res or res[tp] is not None
    }
    waiting = {tp: o for tp, o in back.items() if tp not in refused}
    done: list[TopicPartition] = []
    deadline = gateway.now() + timeout_s
    now_states: dict[TopicPartition, PartitionState] = {}
    while waiting:
        now_states = gateway.describe_partitions(list(waiting))
        for tp in [tp for tp, o in waiting.items() if is_complete(o, now_states.get(tp))]:
            done.append(tp)
            del waiting[tp]
        if not waiting or gateway.now() >= deadline:
            break
        gateway.sleep(ROLLBACK_POLL_S)
    rolling = {
        tp: (o, tuple(now_states[tp].replicas) if tp in now_states else ())
        for tp, o in waiting.items()
    }
    return done, rolling, refused


def _tpf(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}


class Rollback:
    """The paced run's rollback (a part of ``Run``: it reads and changes the run's moves)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts

    def update_rollback(self, ms: MoveState, st: PartitionState, now: float) -> None:
        """A move rolling back: cancelled once the cluster shows its original replicas (in
        order, not reassigning); failed if its reassignment ended elsewhere (seen so after
        the metadata settle window, as a lost move)."""
        if is_complete(ms.original, st):
            self._back_at_original(ms, st, ms.cancel_reason or "cancel")
        elif not st.reassigning:
            if self.parts.track.seen_lost(ms, now):
                ms.fail(
                    f"rollback to {list(ms.original)} ended at {list(st.replicas)}: "
                    "cancelled or replaced outside this run"
                )
        else:
            ms.lost_polls, ms.lost_since = 0, None

    def _back_at_original(self, ms: MoveState, st: PartitionState, reason: str) -> None:
        """A cancelled move is at its original replica list: ``cancelled``. When another
        replica still leads (a step dropped the original leader, and the way back kept the one
        that took over), its preferred — original — leader is elected (KIP-460): Kafka moves
        leadership by itself only when the leader leaves the replica set."""
        lead = ms.original[0]
        if st.leader is not None and st.leader != lead:
            try:
                err = self.shared.gw.elect_preferred_leaders([ms.tp]).get(ms.tp)
            except KafkaOperationError as e:
                err = str(e)
            if err:
                self.parts.loop.emit(
                    "warning",
                    **_tpf(ms.tp),
                    message=f"{ms.tp}: back at its original replicas, led by {st.leader}; "
                    f"electing its original leader {lead} failed: {err} (kafka-leader-election "
                    "--election-type PREFERRED, or Kafka's auto leader rebalance, moves it)",
                )
            else:
                self.parts.loop.emit(
                    "leader_elected", **_tpf(ms.tp), leader=lead, previous=st.leader
                )
        ms.cancel(reason, replicas=st.replicas)

    def cancel(self, tps: Sequence[TopicPartition], reason: str) -> None:
        """Cancel means rollback: every move among ``tps`` that is under way (a step in
        flight, or between steps) goes back to its original replica list, in order.

        The step in flight is cancelled first (Kafka puts the partition back where that step
        started and deletes the replicas it added); then the original list is submitted as a
        reassignment (throttled like any move) and watched until the cluster shows it
        (``_update_rollback``). A move that finished just before the cancel reached the
        controller ("no reassignment in progress") and is at its target is reported as what it
        is: completed."""
        mine = [
            self.shared.moves[tp] for tp in tps if self.shared.moves[tp].status in (MOVING, READY)
        ]
        if not mine:
            return
        inflight = [ms.tp for ms in mine if ms.status is MOVING]
        res = self.shared.gw.alter_reassignments(dict.fromkeys(inflight)) if inflight else {}
        self.shared.dirty = True
        states = self.shared.gw.describe_partitions([ms.tp for ms in mine])
        now = self.shared.clock()
        back: dict[TopicPartition, tuple[tuple[int, ...], PartitionState]] = {}
        for ms in mine:
            tp, err, st = ms.tp, res.get(ms.tp), states.get(ms.tp)
            if err and not no_reassignment_in_progress(err):
                self.parts.loop.emit("error", **_tpf(tp), message=f"{tp}: cancel failed: {err}")
                continue
            if st is None:
                ms.fail("partition no longer exists")
                continue
            if not st.reassigning and self.parts.track.complete(tp, st):
                ms.complete(now, st.replicas)  # it finished before the cancel reached it
                continue
            if not ms.original:  # adopted without a journaled original: where the cancel left it
                self.parts.loop.emit(
                    "warning",
                    **_tpf(tp),
                    message=f"{tp}: its original replicas are not journaled; cancelled at "
                    f"{list(st.replicas)}",
                )
                ms.original = tuple(st.replicas)
            if is_complete(ms.original, st):
                self._back_at_original(ms, st, reason)
                continue
            back[tp] = (tuple(ms.original), st)
        if not back:
            return
        # write-ahead: where each goes back to, on disk before the throttles and the Alter
        for tp, (orig, _) in back.items():
            self.parts.loop.emit("intent", **_tpf(tp), action="rollback", original=list(orig))
        # the way back copies data when a step dropped an original replica: throttle it first
        self.parts.loop.sync_throttles(self.shared.gw.list_reassignments(), back)
        results = self.shared.gw.alter_reassignments(
            {tp: orig for tp, (orig, _) in back.items()}, allow_replication_factor_change=True
        )
        for tp, (orig, st) in back.items():
            ms = self.shared.moves[tp]
            err = results.get(tp, "no answer from the controller")
            if err:
                ms.fail(f"rollback to {list(orig)} refused: {err}")
                continue
            ms.roll_back(reason, st.replicas)

    def await_rollbacks(self) -> None:
        """At the end of a run: wait (at most ``options.rollback_timeout``, polling at the
        run's interval) for the moves rolling back to reach their original replicas, keeping
        their throttles; what is not back by then is reported as rolling back."""
        if not self.shared.index.count(ROLLING_BACK):
            return
        sleep = self.shared.sleep_fn or self.shared.abandon.wait
        deadline = self.shared.clock() + self.shared.options.rollback_timeout
        while True:
            if self.shared.abandon.is_set():
                left = self.shared.index.of(ROLLING_BACK)
                self.parts.loop.emit(
                    "warning",
                    message=f"stopped waiting for {len(left)} rollback(s) (asked again, e.g. a "
                    f"second Ctrl-C; e.g. {left[0].tp}); the rollback goes on, throttled: "
                    "`--cancel --journal` waits for it and verifies",
                )
                return
            try:
                tps = [ms.tp for ms in self.shared.index.of(MOVING, READY, ROLLING_BACK)]
                states = self.shared.gw.describe_partitions(tps)
                with self.shared.lock:
                    self.parts.track.update(states, self.shared.clock())
                if not self.shared.index.count(ROLLING_BACK):
                    return
                self.parts.loop.sync_throttles(self.shared.gw.list_reassignments())
                self.parts.loop.commit_before_change()
            except KafkaOperationError as e:
                self.parts.loop.emit("warning", message=f"while waiting for the rollback: {e}")
            if self.shared.clock() >= deadline:
                left = self.shared.index.of(ROLLING_BACK)
                self.parts.loop.emit(
                    "warning",
                    message=f"{len(left)} move(s) not back at their original replicas after "
                    f"{self.shared.options.rollback_timeout:g}s (e.g. {left[0].tp}); the rollback goes "
                    "on, throttled: `--cancel --journal` waits for it and verifies",
                )
                return
            sleep(self.shared.options.poll_interval_ms / 1000.0)
