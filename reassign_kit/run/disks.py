"""The disk ceiling held by the run (a part of ``Run``, run/run.py): before each submission
the target brokers' log dirs are read (DescribeLogDirs v4+: total and usable bytes) and a move
that would take a dir over the ceiling — counting what the moves in flight still write there —
is held, with every move after it (moves/ceiling.py says why that order never waits for space
it cannot get). A held move is journaled (``disk_hold``, with the numbers) and shown as the
run's waiting reason ("waiting for space on broker 3 /data-1 ..."); it goes on by itself once
space frees (``disk_release``). A dir found over the ceiling anyway (another writer) pauses
every new submission and is reported (``disk_over_ceiling``, then ``disk_below_ceiling``).

Fail closed: a target broker that reported its dirs' sizes in this run and then reports none
(down, or not answering) holds the moves into it (one that never answered is not weighed, as
before: the run goes on and warns of its throttles); a dir whose size the broker does not
report (Kafka before 3.3) is said once (``disk_unknown``) and not weighed. Two dirs of one broker reporting the same total and usable bytes are taken
for one filesystem (the sandbox's dirs share one): their bytes are counted once, together.

Growth while moving (``Growth``): the partitions' sizes are recorded at the start and again
every ``GROWTH_EVERY_S`` while moves wait; a move counts, beside its size, what its partition
grows by at the measured rate while its copy runs (``ceiling.growth_during``: bounded). Until
a partition has two readings its rate is the one the plan record holds (the snapshot's loads,
``Run(growth_rates=...)``), so the order computed at the start counts growth too; a partition
with neither counts none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..cluster.gateway import DirCapacity
from ..errors import InvalidPlanError, KafkaOperationError
from ..model import Move, TopicPartition
from ..moves.ceiling import (
    DirKey,
    DiskMove,
    Disks,
    dir_name,
    fmt_bytes,
    growth_during,
    hold_reason,
    order_within_ceiling,
)
from ..moves.schedule import Item
from ..moves.table import MoveStatus

if TYPE_CHECKING:
    from .shared import RunParts, RunState

READY, MOVING = MoveStatus.READY, MoveStatus.MOVING
GROWTH_EVERY_S = 30.0  # how often the sizes of the moves still waiting are read again
UNTHROTTLED_BPS = 100 * 1024 * 1024  # a copy's speed when no throttle says (the what-if's)


class Growth:
    """Each partition's size as recorded (first and latest reading, with their times) and the
    rate between them: bytes/s, net of retention, never below zero; before two readings, the
    rate recorded with the plan (``recorded``), if any."""

    def __init__(self, recorded: Mapping[TopicPartition, float] | None = None) -> None:
        self.first: dict[TopicPartition, tuple[float, int]] = {}
        self.last: dict[TopicPartition, tuple[float, int]] = {}
        self.read_at: float | None = None
        self.recorded: dict[TopicPartition, float] = dict(recorded or {})

    def record(self, now: float, sizes: Mapping[TopicPartition, int]) -> None:
        self.read_at = now
        for tp, size in sizes.items():
            self.first.setdefault(tp, (now, size))
            self.last[tp] = (now, size)

    def due(self, now: float) -> bool:
        return self.read_at is None or now - self.read_at >= GROWTH_EVERY_S

    def rate(self, tp: TopicPartition) -> float | None:
        (t0, s0), (t1, s1) = self.first.get(tp, (0.0, 0)), self.last.get(tp, (0.0, 0))
        if t1 <= t0:
            got = self.recorded.get(tp)
            return None if got is None else max(0.0, got)
        return max(0.0, (s1 - s0) / (t1 - t0))

    def size(self, tp: TopicPartition, at_rest: int) -> int:
        """Its size as last read (the size the plan knew, when larger or never read)."""
        return max(at_rest, int(self.last.get(tp, (0.0, 0))[1]))

    def bytes_while_moving(self, tp: TopicPartition, size: int, copy_bps: float) -> int:
        return growth_during(self.size(tp, size), self.rate(tp), copy_bps)


def sizes_of(logs) -> dict[TopicPartition, int]:
    """Each partition's size: its largest current replica log (a follower may lag)."""
    out: dict[TopicPartition, int] = {}
    for i in logs:
        if not i.is_future:
            out[i.tp] = max(out.get(i.tp, 0), i.size_bytes)
    return out


def filesystems(
    caps: Mapping[int, Mapping[str, DirCapacity]],
) -> tuple[dict[DirKey, DirKey], dict[DirKey, int], dict[DirKey, int]]:
    """Each dir's filesystem (its broker's first dir with the same total and usable bytes),
    and each filesystem's total and used bytes (dirs of unknown size left out)."""
    fs_of: dict[DirKey, DirKey] = {}
    total: dict[DirKey, int] = {}
    used: dict[DirKey, int] = {}
    for b, dirs in caps.items():
        seen: dict[tuple[int, int], DirKey] = {}
        for d in sorted(dirs):
            c = dirs[d]
            if c.total_bytes is None or c.used_bytes is None:
                continue
            key = seen.setdefault((c.total_bytes, c.used_bytes), (b, d))
            fs_of[(b, d)] = key
            total[key], used[key] = c.total_bytes, c.used_bytes
    return fs_of, total, used


class DiskGate:
    """The ceiling before each submission (see the module docstring)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts
        self.held: dict[TopicPartition, str] = {}  # moves held now, and the dir that holds them
        self.over: set[DirKey] = set()  # filesystems reported over the ceiling
        self.unknown: set[int] = set()  # brokers said once to report no sizes
        self.sized: set[int] = set()  # brokers that reported sizes in this run
        self.moves: dict[TopicPartition, Move] | None = None  # the plan's, read once
        self.targets: set[int] | None = None  # the brokers the plan's moves end on
        self.growth = Growth()

    def move(self, tp: TopicPartition) -> Move:
        if self.moves is None:
            self.moves = self.shared.plan.by_tp()
        return self.moves[tp]

    def order(
        self, items: Sequence[Item], base: Mapping[TopicPartition, Sequence[int]]
    ) -> list[Item]:
        """``items`` reordered so that, run one after another, no filesystem goes over the
        ceiling while sources hold their copies (the given order when it already holds);
        when no order does, the given one, journaled (``disk_no_order``): the gate then holds
        what would cross, in view. ``base``: each move's replicas before it."""
        ceiling = self.shared.options.disk_ceiling
        brokers = sorted({b for it in items for b in it.brokers})
        if not ceiling or not brokers:
            return list(items)
        try:
            caps = self._capacity(brokers)
            fs_of, total, used = filesystems(caps)
            if not total:  # no size known: nothing to order by
                return list(items)
            logs = self.shared.gw.wrapped.describe_log_dirs(brokers, [it.tp for it in items])
        except KafkaOperationError as e:
            self.parts.loop.emit("disk_no_order", reason=f"log dir sizes unreadable: {e}")
            return list(items)
        disks = Disks.of(total, used, ceiling)
        where = {(i.broker, i.tp): (i.broker, i.log_dir) for i in logs if not i.is_future}
        self.growth.record(self.shared.clock(), sizes_of(logs))
        moves = []
        for it in items:
            target = self.move(it.tp).replicas
            adds = [
                self._dir_for(it.tp, b, caps, fs_of, disks) for b in target if b not in base[it.tp]
            ]
            frees = [
                fs_of.get(where.get((b, it.tp), (b, ""))) for b in base[it.tp] if b not in target
            ]
            moves.append(
                DiskMove(
                    it.tp,
                    self.growth.size(it.tp, it.size_bytes),
                    tuple(k for k in adds if k),
                    tuple(k for k in frees if k),
                    self._growth_of(it.tp, it.size_bytes),
                )
            )
        try:
            order = order_within_ceiling(moves, disks)
        except InvalidPlanError as e:
            self.parts.loop.emit("disk_no_order", reason="; ".join(map(str, e.problems)))
            return list(items)
        by_tp = {it.tp: it for it in items}
        return [by_tp[m.tp] for m in order]

    def admit(
        self, tps: Sequence[TopicPartition], current: Mapping[TopicPartition, Sequence[int]]
    ) -> tuple[list[TopicPartition], str | None]:
        """The moves of ``tps`` (in order) that may be submitted now, and why the first of the
        others waits (None: all go). ``current``: each one's replicas now; a move adds a
        replica on each broker of its target not among them (a superset of any KIP-435
        step's)."""
        ceiling = self.shared.options.disk_ceiling
        adds = {
            tp: tuple(
                b for b in self.shared.moves[tp].move.replicas if b not in current.get(tp, ())
            )
            for tp in tps
        }
        # every broker a move of the plan adds a replica to is read (one over the ceiling
        # pauses all), but those that report no sizes only once (said, then not weighed)
        if self.targets is None:
            self.targets = {b for m in self.shared.plan for b in m.replicas}
        targets = sorted((self.targets | {b for bs in adds.values() for b in bs}) - self.unknown)
        if not ceiling or not any(adds.values()) or not targets:
            return list(tps), None
        caps = self._capacity(targets)
        fs_of, total, used = filesystems(caps)
        disks = Disks.of(total, used, ceiling)
        self.sized.update(b for b, _ in fs_of)
        self._say_unknown(caps)
        paused = self._over(disks)
        self._record_growth(tps, current)
        remaining = self._inflight_remaining(caps, fs_of, disks)
        admitted: list[TopicPartition] = []
        for tp in tps:
            why = paused or self._hold(tp, adds[tp], caps, fs_of, disks, remaining)
            if why is not None:
                return admitted, why
            if tp in self.held:
                self.parts.loop.emit("disk_release", **_tpf(tp), log_dir=self.held.pop(tp))
            admitted.append(tp)
        return admitted, None

    def _growth_of(self, tp: TopicPartition, size: int) -> int:
        copy_bps = float(self.shared.options.throttle or UNTHROTTLED_BPS)
        return self.growth.bytes_while_moving(tp, size, copy_bps)

    def _record_growth(
        self, tps: Sequence[TopicPartition], current: Mapping[TopicPartition, Sequence[int]]
    ) -> None:
        """The waiting moves' sizes again, from the brokers holding them, every GROWTH_EVERY_S
        (unretried: a failed read keeps the rates recorded so far)."""
        now = self.shared.clock()
        holders = sorted({b for tp in tps for b in current.get(tp, ())})
        if not holders or not self.growth.due(now):
            return
        try:
            logs = self.shared.gw.wrapped.describe_log_dirs(holders, list(tps))
        except KafkaOperationError:
            return
        self.growth.record(now, sizes_of(logs))

    def _capacity(self, brokers: Sequence[int]) -> dict[int, Mapping[str, DirCapacity]]:
        """The brokers' log dirs, unretried (the next poll asks again); when the call fails,
        broker by broker: one that does not answer is left out, and moves into it wait."""
        gw = self.shared.gw.wrapped
        try:
            return dict(gw.log_dir_capacity(brokers))
        except KafkaOperationError:
            out: dict[int, Mapping[str, DirCapacity]] = {}
            for b in brokers:
                try:
                    out.update(gw.log_dir_capacity([b]))
                except KafkaOperationError:
                    continue
            return out

    def _dir_for(
        self,
        tp: TopicPartition,
        b: int,
        caps: Mapping[int, Mapping[str, DirCapacity]],
        fs_of,
        disks,
    ) -> DirKey | None:
        """Where the new replica on ``b`` is counted: the dir the plan names, else the
        broker's filesystem with the least room (the broker picks; assume the worst)."""
        move = self.move(tp)
        named = dict(zip(move.replicas, move.log_dirs or (), strict=False)).get(b)
        if named and named != "any":
            return fs_of.get((b, named))
        keys = {fs_of[(b, d)] for d in caps.get(b, {}) if (b, d) in fs_of}
        if not keys:
            return None
        return min(keys, key=lambda k: (disks.headroom(k, disks.used), k))

    def _hold(self, tp, adds, caps, fs_of, disks, remaining) -> str | None:
        """Why ``tp`` waits (journaled when it starts waiting), else None with its bytes
        counted as written into its dirs by this decision."""
        ms = self.shared.moves[tp]
        size = self.growth.size(tp, ms.item.size_bytes)
        grows = self._growth_of(tp, size)
        missing = [b for b in adds if b in self.sized and not caps.get(b)]
        if missing:
            return self._held(
                tp,
                f"broker {missing[0]}",
                f"waiting for broker {missing[0]}: it reports no log dirs (down or not answering)",
                {},
            )
        keys = tuple(k for b in adds if (k := self._dir_for(tp, b, caps, fs_of, disks)) is not None)
        why = hold_reason(DiskMove(tp, size, keys, growth_bytes=grows), disks, remaining)
        if why is not None:
            k = next(
                k
                for k in sorted(set(keys))
                if why.startswith(f"waiting for space on {dir_name(k)}")
            )
            free = disks.limit[k] - disks.used[k] - remaining.get(k, 0)
            return self._held(
                tp,
                dir_name(k),
                why,
                {
                    "broker": k[0],
                    "dir": k[1],
                    "needs_bytes": size + grows,
                    "growth_bytes": grows,
                    "free_bytes": max(free, 0),
                    "used_bytes": disks.used[k],
                    "in_flight_bytes": remaining.get(k, 0),
                    "limit_bytes": disks.limit[k],
                },
            )
        for k in keys:
            remaining[k] = remaining.get(k, 0) + size + grows
        return None

    def _held(self, tp: TopicPartition, where: str, why: str, numbers: dict) -> str:
        if self.held.get(tp) != where:
            self.held[tp] = where
            self.parts.loop.emit("disk_hold", **_tpf(tp), log_dir=where, reason=why, **numbers)
        return why

    def _over(self, disks: Disks) -> str | None:
        """Filesystems over the ceiling now (another writer): reported once each; while any
        is, no new submission."""
        now = {k for k, lim in disks.limit.items() if disks.used[k] > lim}
        for k in sorted(now - self.over):
            self.parts.loop.emit(
                "disk_over_ceiling",
                broker=k[0],
                dir=k[1],
                used_bytes=disks.used[k],
                limit_bytes=disks.limit[k],
            )
        for k in sorted(self.over - now):
            self.parts.loop.emit(
                "disk_below_ceiling", broker=k[0], dir=k[1], used_bytes=disks.used.get(k)
            )
        self.over = now
        if not now:
            return None
        k = min(now)
        return (
            f"new submissions paused: {dir_name(k)} holds {fmt_bytes(disks.used[k])}, above its "
            f"ceiling of {fmt_bytes(disks.limit[k])}"
        )

    def _inflight_remaining(self, caps, fs_of, disks) -> dict[DirKey, int]:
        """What the moves in flight may still write into each filesystem: their size less what
        their new replicas copied (the tracker's last sample), per new replica."""
        out: dict[DirKey, int] = {}
        for ms in self.shared.index.of(MOVING, READY):
            adding = [b for b in ms.move.replicas if b not in set(ms.original or ())]
            if not adding:
                continue
            copied = (ms.bytes_copied or 0) / len(adding)
            for b in adding:
                k = self._dir_for(ms.tp, b, caps, fs_of, disks)
                size = self.growth.size(ms.tp, ms.item.size_bytes)
                need = size + self._growth_of(ms.tp, size)
                if k is not None:
                    out[k] = out.get(k, 0) + max(0, int(need - copied))
        return out

    def _say_unknown(self, caps: Mapping[int, Mapping[str, DirCapacity]]) -> None:
        """Brokers reporting no sizes, said once (one event) and not asked again."""
        new = sorted(
            b
            for b in caps
            if b not in self.unknown and all(c.total_bytes is None for c in caps[b].values())
        )
        if new:
            self.unknown.update(new)
            self.parts.loop.emit(
                "disk_unknown",
                broker_ids=new,
                reason="no log dir sizes reported (DescribeLogDirs v4+, Kafka 3.3+): these "
                "brokers' dirs are not weighed against the ceiling",
            )


def _tpf(tp: TopicPartition) -> dict:
    return {"topic": tp.topic, "partition": tp.partition}
