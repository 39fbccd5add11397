"""A plan's end state against the disk ceiling: each broker's log dirs, as the snapshot
recorded their filesystems (total and usable bytes, DescribeLogDirs v4+), after the plan's
moves; every filesystem left above the ceiling is named with its bytes.

The snapshot does not say which dir of a broker a replica is in, nor which dir the broker
will give a new one: a broker whose dirs lie on one filesystem (dirs reporting the same
total and usable bytes) is exact; a broker with several filesystems is weighed as their sum
(the run weighs each dir as it goes, run/disks.py). A capacity file's ``disk_bytes`` for a
broker replaces what its dirs report: the ceiling is then a share of ``disk_bytes``, over the
bytes of the replicas the snapshot puts on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..model import TopicPartition
from ..moves.ceiling import DirKey, DiskMove, Disks, end_state_problems
from ..snapshot.snapshot import Snapshot
from .rules import Capacity


def broker_disks(
    snap: Snapshot, ceiling: float, capacity: Capacity | None = None
) -> tuple[Disks, dict[int, DirKey]]:
    """Each broker's disk as one key (its filesystem, or the sum of its filesystems, or its
    capacity file entry) with its used bytes and ceiling; brokers of unknown size left out."""
    total: dict[DirKey, int] = {}
    used: dict[DirKey, int] = {}
    key_of: dict[int, DirKey] = {}
    held: dict[int, int] = {}
    for p in snap.partitions:
        for b in p.replicas:
            held[b] = held.get(b, 0) + p.size_bytes
    for b in snap.brokers:
        disk = capacity.disk(b.id) if capacity is not None else None
        if disk is not None:
            key_of[b.id] = (b.id, "(disk_bytes of the capacity file)")
            total[key_of[b.id]], used[key_of[b.id]] = disk, held.get(b.id, 0)
            continue
        caps = b.log_dir_capacity or ()
        if not caps or any(t is None or u is None for _, t, u in caps):
            continue  # not reported: not weighed (the snapshot says which brokers)
        # dirs reporting the same bytes share a filesystem: counted once, by the first name
        fs = {(t, t - u): d for d, t, u in sorted(caps, reverse=True)}
        if len(fs) == 1:
            key_of[b.id] = (b.id, next(iter(fs.values())))
        else:
            key_of[b.id] = (b.id, "log dirs " + ", ".join(sorted(fs.values())))
        total[key_of[b.id]] = sum(t for t, _ in fs)
        used[key_of[b.id]] = sum(u for _, u in fs)
    return Disks.of(total, used, ceiling), key_of


def ceiling_problems(
    snap: Snapshot,
    changed: Iterable[tuple],
    ceiling: float | None,
    capacity: Capacity | None = None,
) -> list[str]:
    """Every broker disk the plan's end state leaves above ``ceiling`` (None: no check).
    ``changed``: the plan's moves as (topic, partition, old replicas, new replicas, size)."""
    if not ceiling:
        return []
    disks, key_of = broker_disks(snap, ceiling, capacity)
    if not key_of:
        return []
    moves = []
    for topic, partition, old, new, size in changed:
        adds = tuple(key_of[b] for b in new if b not in old and b in key_of)
        frees = tuple(key_of[b] for b in old if b not in new and b in key_of)
        if adds or frees:
            moves.append(DiskMove(TopicPartition(topic, partition), int(size), adds, frees))
    return end_state_problems(moves, disks)
