"""``AdminGateway``'s offsets (a part of it, cluster/admin.py): log start and end offsets
(ListOffsets), the consumer groups and their committed offsets (ListGroups,
OffsetFetch), and each broker's replica sizes read broker by broker. What the load sampler
reads (``snapshot.load``): every call answers per item, so a partition, a group or a broker
that cannot be read is named beside what could be."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..errors import KafkaOperationError
from ..model import TopicPartition
from .admin_errors import err_text, kp_text
from .gateway import ReplicaLogInfo

COORDINATOR_ATTEMPTS = 5  # a group's coordinator that is moving: asked again, this often
COORDINATOR_PAUSE_S = 1.0


@dataclass(frozen=True)
class Offsets:
    """Per partition: its log start and end offsets, or why they could not be read."""

    start: dict[TopicPartition, int] = field(default_factory=dict)
    end: dict[TopicPartition, int] = field(default_factory=dict)
    errors: dict[TopicPartition, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupList:
    """The consumer groups the brokers listed, and the brokers' errors (a broker whose
    groups could not be listed: its groups are missing)."""

    groups: tuple[str, ...]
    errors: tuple[str, ...]


class OffsetsPart:
    """A part of ``AdminGateway`` (see the module docstring): its clients (``ck``, ``kp``),
    ``timeout_s`` and helpers are the gateway's."""

    def log_offsets(self, tps: Iterable[TopicPartition]) -> Offsets:
        """Earliest and latest offsets of the partitions: two ListOffsets rounds."""
        from confluent_kafka import TopicPartition as CTP
        from confluent_kafka.admin import OffsetSpec

        tps = list(tps)
        out = Offsets()
        if not tps:
            return out
        for spec, into in ((OffsetSpec.earliest(), out.start), (OffsetSpec.latest(), out.end)):
            try:
                futures = self.ck.list_offsets(
                    {CTP(tp.topic, tp.partition): spec for tp in tps},
                    request_timeout=self.timeout_s,
                )
            except Exception as e:  # noqa: BLE001 - librdkafka refused the request: every partition
                for tp in tps:
                    out.errors[tp] = f"list offsets: {err_text(e)}"
                continue
            for ctp, fut in futures.items():
                tp = TopicPartition(ctp.topic, ctp.partition)
                try:
                    into[tp] = int(fut.result(timeout=self.timeout_s).offset)
                except Exception as e:  # noqa: BLE001 - one partition's error, named
                    out.errors[tp] = f"list offsets: {err_text(e)}"
        for tp in out.errors:
            out.start.pop(tp, None)
            out.end.pop(tp, None)
        return out

    def consumer_groups(self) -> GroupList:
        """Every consumer group (ListGroups sent to every broker)."""
        try:
            res = self._wait(
                self.ck.list_consumer_groups(request_timeout=self.timeout_s), "list groups"
            )
        except KafkaOperationError as e:
            return GroupList((), (str(e),))
        groups = tuple(sorted({g.group_id for g in res.valid}))
        return GroupList(groups, tuple(f"list groups: {err_text(e)}" for e in res.errors))

    def group_offsets(self, group: str) -> dict[TopicPartition, int]:
        """The committed offsets of one group (OffsetFetch); a partition it never committed
        is absent. Raises ``KafkaOperationError`` naming the group when it cannot be read.

        Sent through kafka-python: librdkafka's admin client crashes the process (a NULL
        consumer group dereferenced) when the coordinator answers NOT_COORDINATOR, which it
        does while the offsets topic is created or its leadership moves. A coordinator that
        is moving is asked again, with a fresh client (the old one caches the coordinator)."""
        from kafka.errors import KafkaError

        what = f"committed offsets of group {group}"
        for attempt in range(1, COORDINATOR_ATTEMPTS + 1):
            try:
                res = self.kp.list_group_offsets({group: None})
                break
            except KafkaError as e:
                self._drop_kp()
                if not getattr(e, "retriable", False) or attempt == COORDINATOR_ATTEMPTS:
                    raise KafkaOperationError(f"{what}: {kp_text(e)}") from None
                self.sleep(COORDINATOR_PAUSE_S)
        out: dict[TopicPartition, int] = {}
        for ktp, om in (res.get(group) or {}).items():
            if om.offset >= 0:  # -1: nothing committed
                out[TopicPartition(ktp.topic, ktp.partition)] = int(om.offset)
        return out

    def broker_replica_logs(
        self, brokers: Iterable[int], tps: Iterable[TopicPartition] | None = None
    ) -> tuple[list[ReplicaLogInfo], dict[int, str]]:
        """DescribeLogDirs broker by broker: the replica logs of those that answered, and
        why each other broker could not be read."""
        logs: list[ReplicaLogInfo] = []
        errors: dict[int, str] = {}
        tps = None if tps is None else list(tps)
        for b in brokers:
            try:
                logs.extend(self.describe_log_dirs([b], tps))
            except KafkaOperationError as e:
                errors[b] = str(e)
        return logs, errors
