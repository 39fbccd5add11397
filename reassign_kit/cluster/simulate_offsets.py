"""``SimCluster``'s offsets (a part of it, cluster/simulate.py, as ``admin_offsets`` is of
``AdminGateway``): what the load sampler reads. The model has no producers and no consumer
groups: every partition's log ends where its bytes do (one offset per ``OFFSET_BYTES``) and
stays there, so a sample of the model measures no traffic; a partition led by a down broker
is named, as a real cluster's ListOffsets would fail for it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..model import TopicPartition
from .admin_offsets import GroupList, Offsets

OFFSET_BYTES = 1000


class OffsetsPart:
    """A part of ``SimCluster``: its ``partitions``, ``down`` and ``describe_log_dirs``."""

    partitions: dict[TopicPartition, Any]
    down: set[int]

    def log_offsets(self, tps: Iterable[TopicPartition]) -> Offsets:
        out = Offsets()
        for tp in tps:
            sp = self.partitions.get(tp)
            if sp is None:
                out.errors[tp] = "list offsets: UNKNOWN_TOPIC_OR_PARTITION"
            elif sp.leader is None or sp.leader in self.down:
                out.errors[tp] = "list offsets: LEADER_NOT_AVAILABLE"
            else:
                out.start[tp] = 0
                out.end[tp] = sp.size_bytes // OFFSET_BYTES
        return out

    def consumer_groups(self) -> GroupList:
        return GroupList((), ())

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        return {}

    def broker_replica_logs(
        self, brokers: Iterable[int], tps: Iterable[TopicPartition] | None = None
    ) -> tuple[list[Any], dict[int, str]]:
        brokers = list(brokers)
        broken = {b: f"describe log dirs: broker {b} is down" for b in brokers if b in self.down}
        up = [b for b in brokers if b not in broken]
        return self.describe_log_dirs(up, tps), broken  # type: ignore[attr-defined]
