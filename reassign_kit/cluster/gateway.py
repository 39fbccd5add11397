"""The small interface that ``execute`` needs from a cluster. ``admin.AdminGateway`` implements
it against real Kafka and ``simulate`` against a model, so the same scheduling code runs on both.

Every method is one or a few Admin calls whatever the plan's size: callers ask about the
partitions that matter, never one call per partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..model import PartitionState, TopicPartition


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class ReplicaLogInfo:
    """One replica's log as DescribeLogDirs reports it."""

    broker: int
    tp: TopicPartition
    log_dir: str
    size_bytes: int
    offset_lag: int
    is_future: bool


class Gateway(Protocol):
    def brokers(self) -> list[BrokerInfo]: ...

    def topic_partition_counts(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        """Topic name -> partition count (all topics when ``topics`` is None)."""

    def describe_partitions(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, PartitionState]:
        """Replicas, ISR, leader and adding/removing for the given partitions (missing ones absent)."""

    def list_reassignments(self) -> dict[TopicPartition, PartitionState]:
        """Every reassignment in flight on the cluster."""

    def alter_reassignments(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, str | None]:
        """Submit (replicas) or cancel (None) reassignments; per partition None or the broker's error."""

    def describe_log_dirs(self, brokers: Iterable[int]) -> list[ReplicaLogInfo]: ...


ConfigChanges = dict[Any, dict[str, str | None]]  # resource -> {key: value, or None = delete}


def alter_in_place(store: dict[Any, dict[str, str]], changes: ConfigChanges) -> None:
    """What incremental_alter_configs does to configs (name -> {key: value}): SET a value,
    DELETE on None; a name left with no key is dropped. Pure model, shared by the simulator
    and the throttle code."""
    for name, kv in changes.items():
        cfg = store.setdefault(name, {})
        for k, v in kv.items():
            if v is None:
                cfg.pop(k, None)
            else:
                cfg[k] = v
        if not cfg:
            del store[name]
