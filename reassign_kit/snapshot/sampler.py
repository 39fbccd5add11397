"""``sample_load``: a snapshot's partitions measured over a window with the Admin API alone
(ListOffsets, DescribeLogDirs, ListGroups, OffsetFetch), read twice — at the window's start and
at its end — and turned into rates by ``snapshot.load.rates``. Nothing is installed in the
brokers and nothing is produced or consumed: the cluster's own offsets are the evidence.

A broker whose log dirs cannot be read, a partition whose offsets cannot be listed, a group
whose offsets cannot be fetched: each is named in the snapshot's ``LoadWindow.unread`` (and
its partitions carry no load), never filled in."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..cluster.views import require_permissions
from ..model import TopicPartition
from .load import LoadWindow, Reading, rates
from .snapshot import Snapshot

SOURCE = "sample"


def read_once(gateway: Any, snap: Snapshot) -> Reading:
    """One reading of the snapshot's partitions: offsets, leader sizes, every group's
    committed offsets (the groups listed now)."""
    tps = [p.tp for p in snap.partitions]
    before = gateway.now()
    offsets = gateway.log_offsets(tps)
    reading = Reading(at=(before + gateway.now()) / 2)
    reading.start.update(offsets.start)
    reading.end.update(offsets.end)
    reading.unread.extend(f"partition {tp}: {why}" for tp, why in sorted(offsets.errors.items()))
    logs, broken = gateway.broker_replica_logs(snap.broker_ids(), tps)
    reading.unread.extend(f"broker {b}: {why}" for b, why in sorted(broken.items()))
    reading.size.update(leader_sizes(snap, logs, broken))
    listed = gateway.consumer_groups()
    reading.unread.extend(listed.errors)
    for g in listed.groups:
        t0 = gateway.now()
        try:
            committed = gateway.group_offsets(g)
        except Exception as e:  # noqa: BLE001 - a group that cannot be read is named
            reading.unread.append(f"group {g}: {e}")
            continue
        reading.groups[g] = ((t0 + gateway.now()) / 2, committed)
    return reading


def leader_sizes(snap: Snapshot, logs: list[Any], broken: dict[int, str]) -> dict:
    """Each partition's log size on its leader (recorded in the snapshot); without a leader,
    the largest replica's — but only when every replica's broker answered, else unknown."""
    by: dict[tuple[int, TopicPartition], int] = {}
    for info in logs:
        if not info.is_future:
            key = (info.broker, info.tp)
            by[key] = max(by.get(key, 0), int(info.size_bytes))
    out: dict[TopicPartition, int] = {}
    for p in snap.partitions:
        if p.leader is not None and (p.leader, p.tp) in by:
            out[p.tp] = by[(p.leader, p.tp)]
        elif p.leader is None and not any(r in broken for r in p.replicas):
            sizes = [by[(r, p.tp)] for r in p.replicas if (r, p.tp) in by]
            if sizes:
                out[p.tp] = max(sizes)
    return out


def sample_load(gateway: Any, snap: Snapshot, seconds: float) -> Snapshot:
    """``snap`` with each partition's load measured over ``seconds`` (the gateway's clock and
    sleep), and the window with what could not be read."""
    require_permissions(gateway, "snapshot --sample-load", ["DESCRIBE"])
    first = read_once(gateway, snap)
    gateway.sleep(max(0.0, seconds - (gateway.now() - first.at)))
    last = read_once(gateway, snap)
    loads, unread = rates([p.tp for p in snap.partitions], first, last)
    parts = [dataclasses.replace(p, load=loads.get(p.tp)) for p in snap.partitions]
    window = LoadWindow(SOURCE, first.at, last.at - first.at, tuple(unread))
    return Snapshot.of(snap.brokers, snap.topics, parts, window)
