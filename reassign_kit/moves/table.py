"""The life of one partition move, as a state machine (the shape of Cruise Control's
``ExecutionTask`` / ``ExecutionTaskState``): a status enum, one table of the allowed
transitions, and one method per transition that checks the table, changes the status and
writes exactly one journal event. So ``completed`` is written in exactly one place, and
``replay`` turns a journal back into the statuses it recorded.

::

    PENDING --submit (submitted)--> READY --submit_step (step_submitted)--> MOVING
    MOVING --complete_step (step_completed)--> READY        (KIP-435: the next step waits)
    PENDING | READY | MOVING --complete (completed)--> DONE
    PENDING | READY | MOVING --adopt (adopted)--> MOVING    (resume: a move found in flight)
    READY | MOVING --roll_back (rolling_back)--> ROLLING_BACK  (cancel = rollback: the move in
                                        flight cancelled, the original replicas resubmitted)
    READY | MOVING | ROLLING_BACK --cancel (cancelled)--> CANCELLED  (back at its original
                                        replicas, in their order)
    PENDING | READY | MOVING | ROLLING_BACK --fail (failed)--> FAILED
    PENDING | READY --reject (error, with the target)--> FAILED  (the controller refused it)

The one change of status that is not a transition is ``restore``: on resume a move's status
is read back from its journal and the cluster, and the journal already holds its events.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from ..errors import IllegalTransition
from ..model import Move, TopicPartition
from .schedule import Item


class MoveStatus(StrEnum):
    """Where a move is; the values are the strings the status rows always showed."""

    PENDING = "pending"  # not submitted yet
    READY = "ready"  # submitted, no step in flight: its next step may be submitted
    MOVING = "moving"  # a step (or the whole move) in flight on the cluster
    ROLLING_BACK = "rolling_back"  # cancelled: on its way back to its original replicas
    DONE = "done"
    CANCELLED = "cancelled"  # back at its original replicas (order included)
    FAILED = "failed"

    @property
    def final(self) -> bool:
        return self in (MoveStatus.DONE, MoveStatus.CANCELLED, MoveStatus.FAILED)


P, R, M = MoveStatus.PENDING, MoveStatus.READY, MoveStatus.MOVING
STATUS_VALUES = tuple((s, s.value) for s in MoveStatus)
RB = MoveStatus.ROLLING_BACK


@dataclass(frozen=True)
class Transition:
    """One allowed change: from any of ``sources`` to ``target``, writing ``event``."""

    sources: frozenset[MoveStatus]
    target: MoveStatus
    event: str


TRANSITIONS: dict[str, Transition] = {
    "submit": Transition(frozenset({P}), R, "submitted"),
    "submit_step": Transition(frozenset({R}), M, "step_submitted"),
    "complete_step": Transition(frozenset({M}), R, "step_completed"),
    "complete": Transition(frozenset({P, R, M}), MoveStatus.DONE, "completed"),
    "adopt": Transition(frozenset({P, R, M}), M, "adopted"),
    "roll_back": Transition(frozenset({R, M}), RB, "rolling_back"),
    "cancel": Transition(frozenset({R, M, RB}), MoveStatus.CANCELLED, "cancelled"),
    "fail": Transition(frozenset({P, R, M, RB}), MoveStatus.FAILED, "failed"),
    "reject": Transition(frozenset({P, R}), MoveStatus.FAILED, "error"),
}


def _no_journal(event: str, **fields: Any) -> dict[str, Any]:
    return {"event": event, **fields}


Emit = Callable[..., Any]


class MoveIndex:
    """The run's moves by status, kept up to date by the transitions themselves, so that a
    poll looks only at the moves in flight and the status counts cost nothing (the
    loop used to scan the whole plan several times per poll). Within a status, moves keep the
    order in which they entered it; pending moves therefore stay in plan order."""

    def __init__(self) -> None:
        self.by_status: dict[MoveStatus, dict[TopicPartition, MoveState]] = {
            s: {} for s in MoveStatus
        }
        self.submitted = 0  # moves ever submitted (their first step accepted)
        # of the pending moves: how many move a leader, and the bytes their new replicas take
        # in (size x new replicas, at least one); kept by add / moved, so the ETA's tally of
        # the queue beyond what it simulates costs nothing per pending move at each sample
        self.pending_leaders = 0
        self.pending_copy = 0
        self._copy: dict[TopicPartition, int] = {}  # each pending move's share of pending_copy
        # moves that left each status since its dict was last rebuilt (``moved``)
        self.left: dict[MoveStatus, int] = dict.fromkeys(MoveStatus, 0)
        # the counts by status, published whole after each change: read from any thread
        # without a lock (a scrape, ``Run.status``), never half-way through a transition. A
        # published dict is never changed: each change publishes a changed copy (a status
        # is a str, so the enum member finds its value's key)
        self._counts: dict[str, int] = self.counts()
        self.snapshot: Mapping[str, int] = MappingProxyType(self._counts)
        self._held = 0  # inside ``holding``: the counts published once, at its end

    def add(self, ms: MoveState) -> None:
        ms.index = self
        self.by_status[ms.status][ms.tp] = ms
        self.submitted += ms.submitted_at is not None
        if ms.status is P:
            self._tally(ms, 1)
        self._publish(None, ms.status)

    def moved(self, ms: MoveState, before: MoveStatus) -> None:
        was = self.by_status[before]
        was.pop(ms.tp, None)
        self.left[before] += 1
        if self.left[before] > 1024 + len(was) // 16:
            # a dict keeps the slots of what left it until it grows again, and every iteration
            # walks them from the start: the queue, which only shrinks, was walked past every
            # move submitted so far at each poll
            self.by_status[before] = dict(was)
            self.left[before] = 0
        self.by_status[ms.status][ms.tp] = ms
        if before is P:
            if ms.submitted_at is not None:
                self.submitted += 1
            self._tally(ms, -1)
        if ms.status is P:
            self._tally(ms, 1)
        if not self._held:
            self._publish(before, ms.status)

    @contextmanager
    def holding(self) -> Iterator[None]:
        """The transitions inside publish the counts once, when it ends (counted then): a
        reader meanwhile sees those from before it, whole. For one thread's run of
        transitions (a wave's 2,000 submissions, its completions), which no reader waits on;
        the caller makes sure no other thread holds it at the same time."""
        self._held += 1
        try:
            yield
        finally:
            self._held -= 1
            if not self._held:
                self._counts = self.counts()
                self.snapshot = MappingProxyType(self._counts)

    def _publish(self, before: MoveStatus | None, after: MoveStatus) -> None:
        """The counts after one move left ``before`` (None: added) for ``after``, published
        as a new dict (two counts changed, not all of them counted again)."""
        counts = self._counts.copy()
        if before is not None:
            counts[before] -= 1
        counts[after] += 1
        self._counts = counts
        self.snapshot = MappingProxyType(counts)

    def _tally(self, ms: MoveState, sign: int) -> None:
        self.pending_leaders += sign * ms.item.moves_leader
        if sign > 0:
            self._copy[ms.tp] = n = copy_bytes(ms)
        else:  # what it added when it became pending (its item and target do not change)
            n = self._copy.pop(ms.tp, None)
            n = copy_bytes(ms) if n is None else n
        self.pending_copy += sign * n

    def of(self, *statuses: MoveStatus) -> list[MoveState]:
        return [ms for s in statuses for ms in self.by_status[s].values()]

    def iter(self, status: MoveStatus) -> Iterator[MoveState]:
        """The moves of one status, lazily (nothing may change a status while it is read)."""
        return iter(self.by_status[status].values())

    def count(self, *statuses: MoveStatus) -> int:
        return sum(len(self.by_status[s]) for s in statuses)

    def counts(self) -> dict[str, int]:
        # the enum's ``value`` (a descriptor) read once, in STATUS_VALUES
        return {v: len(self.by_status[s]) for s, v in STATUS_VALUES}


def copy_bytes(ms: MoveState) -> int:
    """The bytes a move's new replicas take in: its size per target replica among the brokers
    it changes (at least one)."""
    return ms.item.size_bytes * max(1, sum(b in ms.item.brokers for b in ms.move.replicas))


@dataclass
class MoveState:
    """One move of a run: its status (changed only by the transition methods) and what the
    loop tracks about it (steps, times, bytes copied)."""

    move: Move
    item: Item
    emit: Emit = field(default=_no_journal, repr=False, compare=False)
    status: MoveStatus = MoveStatus.PENDING
    steps: list[tuple[int, ...]] = field(default_factory=list)
    step: int = 0  # 1-based index of the step in flight (or last completed)
    original: tuple[int, ...] = ()
    submitted_at: float | None = None
    step_submitted_at: float | None = None
    # the last KIP-435 step completed: when, and how long it took from its submission (the
    # ETA measures the gap to the next step and what a step dropping replicas costs)
    step_completed_at: float | None = None
    step_took_s: float | None = None
    completed_at: float | None = None
    bytes_copied: int | None = None
    progress_at: float | None = None
    lost_polls: int = 0
    lost_since: float | None = None  # first poll it was seen neither moving nor at its target
    stuck_reported: bool = False
    deadline_reported: bool = False
    error: str | None = None
    cancel_reason: str | None = None  # why it is rolling back (stop, deadline, ...)
    replan: bool = False  # R changed: plan the steps left again at the next step boundary
    index: MoveIndex | None = field(default=None, repr=False, compare=False)
    # the move's partition, held (read ~14 times per move turned over)
    tp: TopicPartition = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.tp = self.move.tp

    @property
    def step_target(self) -> tuple[int, ...]:
        if self.steps and 1 <= self.step <= len(self.steps):
            return self.steps[self.step - 1]
        return tuple(self.move.replicas)

    @property
    def step_from(self) -> tuple[int, ...]:
        """The replicas the step in flight started from."""
        if self.step >= 2 and len(self.steps) >= self.step - 1:
            return self.steps[self.step - 2]
        return self.original

    def duration(self, now: float) -> float | None:
        """Seconds since the first submission (None if never submitted; ``submitted_at`` may
        be 0.0 on a model clock, so no truthiness test)."""
        return None if self.submitted_at is None else round(now - self.submitted_at, 3)

    def row(self) -> dict[str, Any]:
        """The move as a status row (``Run.status().rows``)."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "status": self.status.value,
            "step": self.step,
            "steps": len(self.steps) or 1,
            "target": list(self.move.replicas),
            "batch": self.item.batch,
            "size_bytes": self.item.size_bytes,
            "bytes_copied": self.bytes_copied,
            "submitted_at": self.submitted_at,
            "completed_at": self.completed_at,
            "error": self.error,
        }

    # ---- the transitions ---------------------------------------------------------------

    def _go(self, name: str, **fields: Any) -> None:
        t = TRANSITIONS[name]
        if self.status not in t.sources:
            raise IllegalTransition(f"{self.tp}: cannot {name} a move that is {self.status}")
        before, self.status = self.status, t.target
        if self.index is not None:
            self.index.moved(self, before)
        self.emit(t.event, topic=self.tp.topic, partition=self.tp.partition, **fields)

    def submit(self, now: float, batch: int | None) -> None:
        """Its first step was accepted by the controller: the move is under way."""
        self.submitted_at = now
        self._go("submit", **self._submitted(batch))

    def submit_step(self, now: float, step: int, target: tuple[int, ...]) -> None:
        """Step ``step`` (1-based) of ``self.steps`` was accepted; it is in flight now."""
        self._step_started(now, step)
        self._go("submit_step", **self._stepped(step, target))

    def _submitted(self, batch: int | None) -> dict[str, Any]:
        """The ``submitted`` event's fields (``submit`` and ``submit_first`` write the same)."""
        item = self.item
        return {
            "target": list(self.move.replicas),
            "current": list(self.original),
            "batch": batch,
            "size_bytes": item.size_bytes,
            "moves_leader": item.moves_leader,
            "brokers": sorted(item.brokers),
        }

    def _stepped(self, step: int, target: tuple[int, ...]) -> dict[str, Any]:
        """The ``step_submitted`` event's fields."""
        return {"step": step, "steps": len(self.steps), "target": list(target)}

    def _step_started(self, now: float, step: int) -> None:
        self.step = step
        self.step_submitted_at = now
        self.progress_at = now
        self.bytes_copied = None
        self.stuck_reported = False

    def submit_first(
        self, now: float, batch: int | None, step: int, target: tuple[int, ...]
    ) -> None:
        """``submit`` then ``submit_step``: its first step accepted, the move under way and
        that step in flight. The same two events in the same order; the index moves it once
        (a wave's poll submits 2,000: each moved twice was a tenth of their transitions)."""
        first, then = TRANSITIONS["submit"], TRANSITIONS["submit_step"]
        if self.status not in first.sources:
            raise IllegalTransition(f"{self.tp}: cannot submit a move that is {self.status}")
        self.submitted_at = now
        self._step_started(now, step)
        before, self.status = self.status, then.target  # READY (first.target) between the two
        if self.index is not None:
            self.index.moved(self, before)
        tp = self.tp
        self.emit(first.event, topic=tp.topic, partition=tp.partition, **self._submitted(batch))
        self.emit(then.event, topic=tp.topic, partition=tp.partition, **self._stepped(step, target))

    def complete_step(self, replicas: Iterable[int], now: float | None = None) -> None:
        """Step ``self.step`` is at its target (seen at ``now``): the next step may go. The
        event carries ``step_s``, the step's time from its submission (journals before it
        have none: their readers take the event's ``ts``)."""
        self.lost_polls, self.lost_since = 0, None
        took = None
        if now is not None:
            self.step_completed_at = now
            if self.step_submitted_at is not None:
                took = round(max(0.0, now - self.step_submitted_at), 3)
        self.step_took_s = took
        fields: dict[str, Any] = {"step_s": took} if took is not None else {}
        self._go(
            "complete_step",
            step=self.step,
            steps=len(self.steps),
            replicas=list(replicas),
            **fields,
        )

    def complete(self, now: float, replicas: Iterable[int], **how: Any) -> None:
        """At its target (and in its log dirs): done. ``how``: ``adopted`` / ``already``
        (found complete at start) — the one place a ``completed`` event is written."""
        self.completed_at = now
        self.lost_polls, self.lost_since = 0, None
        if "already" not in how:
            how["duration_s"] = self.duration(now)
        self._go("complete", replicas=list(replicas), **how)

    def adopt(
        self, now: float, target: tuple[int, ...], steps: list[tuple[int, ...]], original: tuple
    ) -> None:
        """Resume found it in flight: it is ours again, at step 1 of ``steps``."""
        self.original = tuple(original)
        self.steps = steps
        self.step = 1
        self.step_submitted_at = now
        self.progress_at = now
        self._go("adopt", target=list(target), step=1, steps=len(steps))

    def roll_back(self, reason: str, replicas: Iterable[int]) -> None:
        """Cancelled (``reason``): the step in flight, if any, was cancelled and a
        reassignment back to ``self.original`` submitted; ``replicas``: where it was then."""
        self.lost_polls, self.lost_since = 0, None
        self.cancel_reason = reason
        self._go("roll_back", reason=reason, replicas=list(replicas), original=list(self.original))

    def cancel(self, reason: str, replicas: Iterable[int] | None = None) -> None:
        """Back at its original replicas (``replicas``: as the cluster shows them)."""
        fields: dict[str, Any] = {"reason": reason}
        if replicas is not None:
            fields["replicas"] = list(replicas)
        self._go("cancel", **fields)

    def fail(self, reason: str) -> None:
        self.error = reason
        self._go("fail", reason=reason)

    def reject(self, error: str, target: tuple[int, ...], step: int) -> None:
        """The controller refused its submission (journaled as the ``error`` it always was)."""
        self.error = error
        self._go(
            "reject",
            message=f"{self.tp}: submission rejected: {error}",
            target=list(target),
            step=step,
            steps=len(self.steps),
        )

    def restore(self, status: MoveStatus) -> None:
        """Not a transition: on resume, the status read back from the journal and the
        cluster (the journal holds its events already, so none is written)."""
        before, self.status = self.status, status
        if self.index is not None:
            self.index.moved(self, before)


# ---- replay -------------------------------------------------------------------------------

_BY_EVENT = {t.event: name for name, t in TRANSITIONS.items()}


def transition_of(event: Mapping[str, Any]) -> str | None:
    """The transition a journal event records (None: not a move's transition). ``error`` is
    a rejection only with the ``target`` it carries (a failed cancel is an error too)."""
    kind = event.get("event")
    if "topic" not in event or kind not in _BY_EVENT:
        return None
    if kind == "error" and "target" not in event:
        return None
    return _BY_EVENT[kind]


def replay(events: Iterable[Mapping[str, Any]]) -> dict[TopicPartition, MoveStatus]:
    """Each move's status from a journal's events, through the same table (an event the
    table does not allow from the replayed status raises ``IllegalTransition``)."""
    out: dict[TopicPartition, MoveStatus] = {}
    for e in events:
        name = transition_of(e)
        if name is None:
            continue
        tp = TopicPartition(e["topic"], int(e["partition"]))
        t = TRANSITIONS[name]
        cur = out.get(tp, MoveStatus.PENDING)
        if cur not in t.sources:
            raise IllegalTransition(f"{tp}: journal has {t.event} while {cur}")
        out[tp] = t.target
    return out
