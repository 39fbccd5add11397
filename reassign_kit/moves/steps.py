"""KIP-435 replica-level steps: one partition move as a sequence of intermediate replica sets.

Moving every replica of a partition at once makes up to 2×RF replicas fetch together and
keeps the old ones until the slowest new one is in sync. KIP-435 instead moves at most R
(``--parallel-replica-count``) replicas of a partition per step. The KIP puts this in the
controller (never built); reassign_kit submits each step as an ordinary reassignment from the
client and waits for it (``model.is_complete``) before computing the next one.

"Calculating a Reassignment Step" as implemented here (FTR = final target, CR = current):

1. Leader step: if FTR's preferred leader is not a replica yet, the step only brings it in,
   first in the list (so leadership can move to it as soon as the old leader leaves) — plus
   as many further FTR replicas as min.insync.replicas needs, even beyond R.
2. Otherwise drop DR = the first R excess replicas (CR not in FTR; out-of-sync ones first),
   and add NR = the FTR replicas missing, in FTR order, as many as bring the set back to the
   target's size (at most R; when the replication factor grows, R per step). If fewer than
   min.insync.replicas would remain in sync, add more (the KIP's exception to R).
3. TR = CR + NR - DR, ordered FTR members first (in FTR order), then the replicas still to
   leave (in CR order): so the last step is FTR itself, in order.

A reassignment keeps the old replicas until every added one is in sync, so the ISR of a step
only grows until it becomes TR: keeping |TR| >= min(min.insync.replicas, RF) at every step keeps
min.insync.replicas satisfiable throughout. Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..errors import InvalidPlanError, UsageError
from ..model import Move, PartitionState, TopicPartition

Replicas = tuple[int, ...]
T = TypeVar("T")


def _check(current: Sequence[int], target: Sequence[int], r: int, min_isr: int, where: str) -> None:
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        raise UsageError(f"--parallel-replica-count must be a positive integer, got {r!r}")
    if not isinstance(min_isr, int) or min_isr < 1:
        raise UsageError(f"min.insync.replicas must be >= 1{where}, got {min_isr!r}")
    label = where.removeprefix(" for ") or "partition"
    problems = []
    if not target:
        problems.append(f"{label}: the target replica list is empty")
    for name, reps in (("target", target), ("current", current)):
        dup = sorted({b for b in reps if list(reps).count(b) > 1})
        if dup:
            problems.append(f"{label}: {name} replicas repeat broker(s) {dup}")
    if problems:
        raise InvalidPlanError(problems, header="cannot plan replica-level steps")


def next_step(
    current: Sequence[int],
    target: Sequence[int],
    parallel_replica_count: int,
    min_isr: int = 1,
    isr: Iterable[int] | None = None,
) -> Replicas | None:
    """The next step target (TR) from ``current`` towards ``target``; None when already there.

    Only CR and FTR are used (as the KIP says), so a resumed run simply asks again from what
    the cluster shows. ``isr`` defaults to all of ``current`` (a completed step is in sync)."""
    cr, ftr = tuple(current), tuple(target)
    if cr == ftr:
        return None
    r = parallel_replica_count
    need_isr = min(min_isr, len(ftr))  # nothing can do better than the target itself
    in_sync = set(cr) if isr is None else set(isr) & set(cr)
    ftr_set = set(ftr)
    missing = [b for b in ftr if b not in cr]

    if ftr[0] not in cr:  # leader step: bring the new preferred leader in, drop nothing
        extra = max(0, need_isr - len(in_sync) - 1)
        dr: list[int] = []
        nr = [ftr[0], *[b for b in missing if b != ftr[0]][:extra]]
    else:
        excess = [b for b in cr if b not in ftr_set]
        excess.sort(key=lambda b: b in in_sync)  # stable: out-of-sync first, else CR order
        dr = excess[:r]
        kept = [b for b in cr if b not in dr]
        restore = len(ftr) - len(kept)
        n_add = min(len(missing), r, max(0, restore))
        in_sync_kept = len([b for b in kept if b in in_sync])
        n_add = min(len(missing), max(n_add, need_isr - in_sync_kept))
        nr = missing[:n_add]

    members = set(cr) - set(dr) | set(nr)
    return tuple(b for b in ftr if b in members) + tuple(
        b for b in cr if b in members and b not in ftr_set
    )


def plan_steps(
    current: Sequence[int],
    target: Sequence[int],
    parallel_replica_count: int,
    min_isr: int = 1,
    isr: Iterable[int] | None = None,
    tp: TopicPartition | None = None,
) -> list[Replicas]:
    """Every step target from ``current`` to ``target``; the last one equals ``target``.

    Empty when nothing changes. Raises UsageError / InvalidPlanError (naming ``tp``) on
    bad input, before anything could be sent."""
    where = f" for {tp}" if tp is not None else ""
    _check(current, target, parallel_replica_count, min_isr, where)
    steps: list[Replicas] = []
    cr: Replicas = tuple(current)
    in_sync = isr
    limit = 2 * (len(cr) + len(target)) + 2
    while (tr := next_step(cr, target, parallel_replica_count, min_isr, in_sync)) is not None:
        steps.append(tr)
        cr, in_sync = tr, None
        if len(steps) > limit:  # cannot happen: each step drops or adds one; guard the loop
            raise AssertionError(f"step planner did not converge{where}: {steps}")
    return steps


@dataclass(frozen=True)
class Step:
    """One step of one partition move: submit ``target`` while the replicas are ``current``.

    ``index`` is 1-based; ``total`` counts the steps planned from the move's start."""

    tp: TopicPartition
    current: Replicas
    target: Replicas
    index: int = 1
    total: int = 1
    leader: int | None = None

    @property
    def adding(self) -> Replicas:
        return tuple(b for b in self.target if b not in self.current)

    @property
    def removing(self) -> Replicas:
        return tuple(b for b in self.current if b not in self.target)

    @property
    def moves_leader(self) -> bool:
        return leader_moves(self.current, self.target, self.leader)

    @property
    def is_last(self) -> bool:
        return self.index == self.total

    def to_json_obj(self) -> dict:
        """The fields a journal ``step_submitted`` event carries."""
        return {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "step": self.index,
            "steps": self.total,
            "from": list(self.current),
            "replicas": list(self.target),
            "adding": list(self.adding),
            "removing": list(self.removing),
        }


def leader_moves(current: Sequence[int], target: Sequence[int], leader: int | None = None) -> bool:
    """Does this step (once complete and its preferred leader elected) change the leader?

    ``leader`` is the partition's leader now; unknown, the current preferred leader stands in.
    The same definition as ``schedule.item_for`` so the caps count the same thing."""
    if not target:
        return False
    now = leader if leader is not None else (current[0] if current else None)
    return now != target[0]


def steps_for(
    tp: TopicPartition,
    original: Sequence[int],
    current: Sequence[int],
    target: Sequence[int],
    parallel_replica_count: int,
    min_isr: int = 1,
    isr: Iterable[int] | None = None,
    leader: int | None = None,
) -> Step | None:
    """The executor's hook: the next Step of ``tp``'s move, numbered against the plan made
    from ``original`` (the replicas when the move started); None when ``current`` is the target.

    When ``current`` is one of the planned steps the numbering follows that plan; otherwise
    (the cluster changed under us) the remaining steps are re-planned from ``current``."""
    planned = plan_steps(original, target, parallel_replica_count, min_isr, tp=tp)
    _check(current, target, parallel_replica_count, min_isr, f" for {tp}")
    nxt = next_step(current, target, parallel_replica_count, min_isr, isr)
    if nxt is None:
        return None
    cur = tuple(current)
    if cur == tuple(original):
        done = 0
    elif cur in planned:
        done = planned.index(cur) + 1
    else:
        done = 0
        planned = []
    rest = plan_steps(cur, target, parallel_replica_count, min_isr, isr=isr, tp=tp)
    total = max(len(planned), done + len(rest))
    return Step(tp, cur, nxt, done + 1, total, leader)


def collect_batch(
    candidates: Sequence[T],
    slots: int,
    leader_cap: int | None = None,
    moves_leader: Callable[[T], bool] = lambda s: bool(s.moves_leader),  # type: ignore[attr-defined]
    leaders_in_flight: int = 0,
) -> list[T]:
    """KIP-435 "Collecting a reassignment batch": fill ``slots`` with leadership-moving steps
    first (while ``leaders_in_flight`` + taken stays within ``leader_cap``), then the others.

    Leader moves over the cap are left for a later batch; their slots go to moves that keep
    the leader. Order within each group is the candidates' order (deterministic)."""
    if slots <= 0:
        return []
    room = None if leader_cap is None else max(0, leader_cap - leaders_in_flight)
    leaders = [c for c in candidates if moves_leader(c)]
    others = [c for c in candidates if not moves_leader(c)]
    take_leaders = leaders[: slots if room is None else min(slots, room)]
    return take_leaders + others[: slots - len(take_leaders)]


def describe_steps(current: Sequence[int], steps: Sequence[Sequence[int]]) -> list[str]:
    """Human lines like KIP-435's example: ``(5, 6, 2, 3, 4)   // -[0, 1] +[6]``."""
    lines = [f"{tuple(current)}   // starting assignment"]
    prev = tuple(current)
    for s in steps:
        s = tuple(s)
        removed = [b for b in prev if b not in s]
        added = [b for b in s if b not in prev]
        note = []
        if removed:
            note.append(f"-{removed}")
        if added:
            note.append(f"+{added}")
        if not note:
            note.append("reorder")
        if prev and s and s[0] != prev[0]:
            note.append(f"preferred leader {s[0]}")
        lines.append(f"{s}   // {' '.join(note)}")
        prev = s
    return lines


def make_steps_for(
    parallel_replica_count: int,
    min_isr: Mapping[str, int] | Callable[[str], int] | int = 1,
) -> Callable[[Move, PartitionState, tuple[int, ...]], list[Replicas]]:
    """A ``steps_for`` hook for ``execute.Run``: KIP-435 steps with each topic's own
    min.insync.replicas (a mapping topic -> value, a function, or one value for all; topics
    missing from a mapping get 1). The partition's ISR at planning time is taken into account,
    so an under-replicated partition gets enough replicas in its first step."""
    if not isinstance(parallel_replica_count, int) or parallel_replica_count < 1:
        raise UsageError(
            f"--parallel-replica-count must be a positive integer, got {parallel_replica_count!r}"
        )
    if isinstance(min_isr, int):
        lookup: Callable[[str], int] = lambda _t: min_isr  # noqa: E731
    elif callable(min_isr):
        lookup = min_isr
    else:
        table = dict(min_isr)
        lookup = lambda t: table.get(t, 1)  # noqa: E731

    def steps_for_move(
        move: Move, state: PartitionState, original: tuple[int, ...]
    ) -> list[Replicas]:
        isr = state.isr if state.isr else None
        return plan_steps(
            state.replicas,
            move.replicas,
            parallel_replica_count,
            lookup(move.tp.topic),
            isr,
            move.tp,
        ) or [tuple(move.replicas)]

    return steps_for_move


# ---------------------------------------------------------------------------- the Run's hook

StepsFor = Callable[[Move, PartitionState, tuple[int, ...]], list[tuple[int, ...]]]


def single_step(
    move: Move, state: PartitionState, original: tuple[int, ...]
) -> list[tuple[int, ...]]:
    """Default: one step, the final target."""
    return [tuple(move.replicas)]


def steps_hook(
    parallel_replica_count: int | None, min_isr: Mapping[str, int] | Callable[[str], int] | int = 1
) -> StepsFor:
    """The step planner for R: KIP-435 steps (``steps.make_steps_for``, each topic's
    min.insync.replicas) when R is set, else one step per move."""
    if parallel_replica_count is None:
        return single_step
    return make_steps_for(parallel_replica_count, min_isr)
