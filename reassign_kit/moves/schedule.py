"""Pacing policies: which partition moves to submit next (pure: values in, decisions out).

KIP-1335 gives two policies beside the legacy single request: contiguous *batches* of N moves
(batch k+1 only after every move of batch k is complete) and *incremental* (at most N of this
run's moves in flight, refilled as slots free). reassign_kit adds caps that the KIP leaves
open: moves in or out of any one broker, leader movements, and a cluster-wide cap that counts
every reassignment in flight (other runs' too). Caps are passed to every decision, so a change
takes effect at the next one. No clocks, no I/O: the executor and the simulator drive this.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field, replace

from ..errors import UsageError
from ..model import TopicPartition

ORDERS = ("topic-partition", "largest-first", "smallest-first", "under-replicated-last")
MODES = ("legacy", "batch", "incremental")


@dataclass(frozen=True)
class Caps:
    """Everything that bounds concurrency. ``batch_size`` is KIP-1335's N (0 = legacy)."""

    batch_size: int = 0
    incremental: bool = False
    max_moves_per_broker: int | None = None
    max_leader_moves: int | None = None
    cluster_max_reassignments: int | None = None
    # KIP-435 "collecting a batch": leadership-moving steps first, up to the leader cap
    prefer_leader_moves: bool = False
    # per broker, below max_moves_per_broker: the adaptive pace's (pacing/controller.py),
    # raised with a broker's rate and halved at its floor; (broker, cap) pairs, hashable
    broker_caps: tuple[tuple[int, int], ...] = ()

    def cap_of(self, broker: int) -> int | None:
        """Broker ``broker``'s cap on moves through it (None: none)."""
        for b, c in self.broker_caps:
            if b == broker:
                return c if self.max_moves_per_broker is None else min(c, self.max_moves_per_broker)
        return self.max_moves_per_broker

    @property
    def mode(self) -> str:
        if self.batch_size == 0:
            return "legacy"
        return "incremental" if self.incremental else "batch"

    def validate(self) -> Caps:
        """Raise UsageError naming the option at fault; return self so it chains."""
        if not isinstance(self.batch_size, int) or self.batch_size < 0:
            raise UsageError(f"--reassignment-batch-size must be >= 0, got {self.batch_size}")
        if self.incremental and self.batch_size <= 0:
            raise UsageError("--incremental requires --reassignment-batch-size > 0")
        for name, v in (
            ("--max-moves-per-broker", self.max_moves_per_broker),
            ("--max-leader-moves", self.max_leader_moves),
            ("--cluster-max-reassignments", self.cluster_max_reassignments),
        ):
            if v is not None and (not isinstance(v, int) or v < 1):
                raise UsageError(f"{name} must be a positive integer, got {v}")
        return self

    def with_changes(self, **changes) -> Caps:
        """A copy with some caps changed (None keeps, explicit values replace); validated."""
        return replace(self, **changes).validate()


@dataclass(frozen=True)
class Item:
    """One schedulable unit: a partition move, or the next step of one already holding a slot.

    ``brokers`` are the brokers that the move adds a replica to or removes one from (the ones
    a per-broker cap counts); ``moves_leader`` says the preferred leader changes."""

    tp: TopicPartition
    brokers: frozenset[int] = frozenset()
    moves_leader: bool = False
    size_bytes: int = 0
    under_replicated: bool = False
    batch: int = 0


def item_for(
    tp: TopicPartition,
    current: Sequence[int],
    target: Sequence[int],
    leader: int | None = None,
    size_bytes: int = 0,
    under_replicated: bool = False,
) -> Item:
    """Describe moving ``tp`` from ``current`` to ``target`` for the scheduler."""
    brokers = frozenset(set(current) ^ set(target))
    now_leader = leader if leader is not None else (current[0] if current else None)
    moves_leader = bool(target) and now_leader != target[0]
    return Item(tp, brokers, moves_leader, size_bytes, under_replicated)


def order_items(items: Iterable[Item], strategy: str = "topic-partition") -> list[Item]:
    """Deterministic order: ties always fall back to (topic, partition), never file order."""
    items = list(items)
    if strategy == "topic-partition":
        key = lambda i: (i.tp,)  # noqa: E731
    elif strategy == "largest-first":
        key = lambda i: (-i.size_bytes, i.tp)  # noqa: E731
    elif strategy == "smallest-first":
        key = lambda i: (i.size_bytes, i.tp)  # noqa: E731
    elif strategy == "under-replicated-last":
        key = lambda i: (i.under_replicated, i.tp)  # noqa: E731
    else:
        raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {strategy!r}")
    return sorted(items, key=key)


def assign_batches(ordered: Sequence[Item], caps: Caps) -> list[Item]:
    """Number contiguous batches of ``caps.batch_size`` in batch mode (0 for every item otherwise)."""
    if caps.mode != "batch":
        return [replace(i, batch=0) for i in ordered]
    n = caps.batch_size
    return [replace(it, batch=k // n) for k, it in enumerate(ordered)]


@dataclass(frozen=True)
class Decision:
    """What to submit now, in order, and why the first waiting move is waiting."""

    submit: tuple[TopicPartition, ...] = ()
    waiting_reason: str | None = None
    batch: int | None = None
    cluster_cap_reached: bool = False
    blocked: dict[TopicPartition, str] = field(default_factory=dict)


def decide(
    pending: Iterable[Item],
    inflight: Sequence[Item] | Collection[Item],
    caps: Caps,
    *,
    ready: Sequence[Item] = (),
    cluster_inflight: int = 0,
) -> Decision:
    """Pick what to submit now.

    ``pending``: moves not yet submitted, in run order (with batch numbers, which never
    decrease along it). Read lazily, only as far as the decision needs (a poll
    costs what it submits, not the plan): up to the incremental cap, to the end of the
    current batch, to the first move the cluster-wide cap stops; the whole of it only in
    legacy mode, with ``prefer_leader_moves``, or while broker / leader caps block moves.
    ``inflight``: this run's moves reassigning now (they hold slots and broker load): its
    length is always taken, its items are read only under a broker or leader cap and in
    batch mode (``len`` and ``iter`` are all it needs: it may build them lazily).
    ``ready``: this run's moves between two steps: they hold a slot, their next step needs
    broker / leader / cluster room but no new slot; they go before any new move.
    ``cluster_inflight``: every reassignment in flight on the cluster (ours included).

    A move is skipped only when a broker or leader cap blocks it; later moves may then go
    ahead of it (the partition-count cap and batch boundaries never let them).
    """
    n_cap = caps.batch_size if caps.mode == "incremental" else None
    slots_used = len(inflight) + len(ready)
    room = _Room(caps, inflight, cluster_inflight)
    for it in _prefer(caps, ready):
        why = room.fits(it)
        if why is None:
            room.take(it)
        else:
            room.blocked[it.tp] = why

    batch, candidates, reason = _batch_of(pending, inflight, ready, caps)
    new_taken = 0
    for it in _prefer(caps, candidates):
        if n_cap is not None and slots_used + new_taken >= n_cap:
            reason = reason or f"{n_cap} moves in flight (the incremental cap)"
            break
        why = room.fits(it)
        if why is not None:
            room.blocked[it.tp] = why
            reason = reason or why
            if why == "cluster-wide cap reached":
                break
            continue
        room.take(it)
        new_taken += 1

    if reason is None and room.blocked:
        reason = next(iter(room.blocked.values()))
    return Decision(tuple(room.chosen), reason, batch, room.cluster_full(), room.blocked)


class _Room:
    """What one decision leaves under the caps: the brokers' and leaders' moves (in flight
    and chosen now), the cluster-wide room, the moves chosen and those a cap blocked."""

    def __init__(self, caps: Caps, inflight: Iterable[Item], cluster_inflight: int) -> None:
        self.caps = caps
        self.broker_load: Counter[int] = Counter()
        self.leaders = 0
        self.chosen: list[TopicPartition] = []
        self.blocked: dict[TopicPartition, str] = {}
        # the moves in flight are read only where a cap weighs them (the count alone
        # otherwise; with 2,000 in flight, reading them was a third of a quiet poll)
        self.per_broker = caps.max_moves_per_broker is not None or bool(caps.broker_caps)
        if self.per_broker or caps.max_leader_moves is not None:
            for it in inflight:
                self.broker_load.update(it.brokers)
                self.leaders += it.moves_leader
        self.cluster_room = (
            caps.cluster_max_reassignments - cluster_inflight
            if caps.cluster_max_reassignments is not None
            else None
        )

    def cluster_full(self) -> bool:
        return self.cluster_room is not None and self.cluster_room - len(self.chosen) <= 0

    def fits(self, it: Item) -> str | None:
        """None when ``it`` may go now, else the cap that blocks it."""
        caps = self.caps
        if self.cluster_full():
            return "cluster-wide cap reached"
        if self.per_broker:
            for b in sorted(it.brokers):
                cap = caps.cap_of(b)
                if cap is not None and self.broker_load[b] >= cap:
                    return f"broker {b} at its cap of {cap} moves"
        if (
            it.moves_leader
            and caps.max_leader_moves is not None
            and self.leaders >= caps.max_leader_moves
        ):
            return f"leader-movement cap of {caps.max_leader_moves} reached"
        return None

    def take(self, it: Item) -> None:
        self.chosen.append(it.tp)
        self.broker_load.update(it.brokers)
        self.leaders += it.moves_leader


def _prefer(caps: Caps, items: Iterable[Item]) -> Iterable[Item]:
    """Leader moves first under ``prefer_leader_moves``, else the order given."""
    if not caps.prefer_leader_moves:
        return items
    items = list(items)
    return [i for i in items if i.moves_leader] + [i for i in items if not i.moves_leader]


def _batch_of(
    pending: Iterable[Item],
    inflight: Sequence[Item] | Collection[Item],
    ready: Sequence[Item],
    caps: Caps,
) -> tuple[int | None, Iterable[Item], str | None]:
    """The new moves that may go now, read lazily: in batch mode only the current batch's
    (none while an earlier batch is in flight: the batch, the moves and why not)."""
    batch: int | None = None
    reason: str | None = None
    rest = iter(pending)
    first = next(rest, None)
    candidates: Iterable[Item] = () if first is None else itertools.chain((first,), rest)
    if caps.mode == "batch" and (first is not None or len(inflight) or ready):
        # batch numbers never decrease along ``pending``: its first move has its lowest
        batch = min(i.batch for i in (*(() if first is None else (first,)), *inflight, *ready))
        if first is not None and first.batch != batch:
            reason = f"waiting for batch {batch} to complete"
            candidates = ()
        else:
            candidates = itertools.takewhile(lambda i: i.batch == batch, candidates)
    return batch, candidates, reason


def plan_batches(ordered: Sequence[Item], caps: Caps) -> list[list[TopicPartition]]:
    """The batches a batch-mode run will submit (one batch in legacy mode): for display."""
    numbered = assign_batches(ordered, caps)
    out: list[list[TopicPartition]] = []
    for it in numbered:
        if it.batch >= len(out):
            out.append([])
        out[it.batch].append(it.tp)
    return out
