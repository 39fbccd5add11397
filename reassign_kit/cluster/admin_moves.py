"""``AdminGateway``'s moves (a part of it, cluster/admin.py): partitions described, the
reassignments listed and altered (AlterPartitionReassignments, v1 with KIP-860's guard when
the controller lists it), the log dirs described and altered (KIP-113), preferred leaders
elected (KIP-460)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import KafkaOperationError
from ..model import PartitionState, TopicPartition
from .admin_errors import err_text, kp_text
from .capabilities import RF_GUARD, degraded, say_once
from .gateway import DirCapacity, ErrorCode, PartitionError, ReplicaLogInfo


class MovesPart:
    """A part of ``AdminGateway`` (see the module docstring): its clients (``ck``, ``kp``),
    ``timeout_s`` and helpers are the gateway's."""

    def describe_partitions(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, PartitionState]:
        """Replicas / ISR / leader from metadata; adding / removing (and the replica list of a
        reassigning partition) from the controller, which is authoritative (KIP-860's race)."""
        tps = set(tps)
        if not tps:
            return {}
        md = self._metadata({tp.topic for tp in tps})
        moving = self.list_reassignments(tps)
        out: dict[TopicPartition, PartitionState] = {}
        for tp in tps:
            t = md.get(tp.topic)
            p = t.partitions.get(tp.partition) if t is not None else None
            if p is None:
                continue
            leader = p.leader if p.leader is not None and p.leader >= 0 else None
            m = moving.get(tp)
            out[tp] = PartitionState(
                tp,
                tuple(m.replicas if m else p.replicas),
                tuple(p.isrs),
                leader,
                m.adding if m else (),
                m.removing if m else (),
            )
        return out

    def list_reassignments(
        self, tps: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionState]:
        from kafka.structs import TopicPartition as KTP

        arg = None if tps is None else [KTP(tp.topic, tp.partition) for tp in tps]
        if arg is not None and not arg:
            return {}
        raw = self._kp_call(
            "list partition reassignments",
            self.kp.list_partition_reassignments,
            arg,
            timeout_ms=int(self.timeout_s * 1000),
        )
        out = {}
        for ktp, r in raw.items():
            tp = TopicPartition(ktp.topic, ktp.partition)
            out[tp] = PartitionState(
                tp,
                tuple(r["replicas"]),
                adding=tuple(r["adding_replicas"]),
                removing=tuple(r["removing_replicas"]),
            )
        return out

    def alter_reassignments(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, str | None]:
        """One AlterPartitionReassignments request to the controller. Per partition: None when
        accepted, else the broker's error name and message. ``allow_replication_factor_change``
        False is sent as request v1 (KIP-860) when the brokers list it; when they list only v0
        (every release before 4.1) the request goes out at v0 and the guard is the client-side
        check the preflight ran (``validate_plan``), said once by name; the preflight refuses
        instead when the user required the broker-side guard."""
        if not targets:
            return {}
        broker_guard = not allow_replication_factor_change
        if broker_guard and not self.capabilities().has(RF_GUARD):
            say_once(degraded(RF_GUARD))
            broker_guard = False
        import kafka.errors as Errors
        from kafka.protocol.admin import AlterPartitionReassignmentsRequest as Req

        by_topic: dict[str, list[Any]] = defaultdict(list)
        for tp, replicas in sorted(targets.items()):
            by_topic[tp.topic].append(
                Req.ReassignableTopic.ReassignablePartition(
                    partition_index=tp.partition,
                    replicas=None if replicas is None else [int(r) for r in replicas],
                )
            )
        kwargs: dict[str, Any] = {
            "timeout_ms": int(self.timeout_s * 1000),
            "topics": [Req.ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        }
        if broker_guard:
            kwargs["allow_replication_factor_change"] = False
            kwargs["min_version"] = 1
        request = Req(**kwargs)
        admin = self.kp

        def top_level(r: Any) -> Any:
            yield Errors.for_code(r.error_code)

        try:
            response = admin._manager.run(
                admin._send_request_to_controller, request, top_level, False
            )
        except Errors.IncompatibleBrokerVersion:
            # the brokers listed v1 when asked, the controller answering now does not (a
            # rolling downgrade, a failover to an older controller): nothing was sent
            self._caps = None
            raise KafkaOperationError(
                "the controller does not list AlterPartitionReassignments v1 "
                f"(AllowReplicationFactorChange, {RF_GUARD.kip}, Kafka {RF_GUARD.since}+) although "
                "the brokers did when asked: it cannot honour the broker-side replication-factor "
                "guard. Nothing was submitted; run again (the client-side check applies) or "
                "upgrade the cluster"
            ) from None
        except Errors.KafkaError as e:
            self._drop_kp()
            raise KafkaOperationError(f"alter partition reassignments: {kp_text(e)}") from None
        if response.error_code:
            err = Errors.for_code(response.error_code)
            raise KafkaOperationError(
                f"the controller refused the reassignment request: {err.__name__}"
                f"{': ' + response.error_message if response.error_message else ''}"
            )
        out: dict[TopicPartition, str | None] = {}
        for t in response.responses:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.error_code:
                    name = Errors.for_code(p.error_code).__name__.removesuffix("Error")
                    text = f"{name}: {p.error_message}" if p.error_message else name
                    out[tp] = PartitionError(ErrorCode.of(p.error_code), text)
                else:
                    out[tp] = None
        return out

    def _describe_log_dirs_raw(
        self, brokers: Iterable[int] | None, tps: Iterable[TopicPartition] | None
    ) -> list[dict[str, Any]]:
        topic_parts: dict[str, list[int]] | None = None
        if tps is not None:
            topic_parts = defaultdict(list)
            for tp in tps:
                topic_parts[tp.topic].append(tp.partition)
            topic_parts = dict(topic_parts)
        return self._kp_call(
            "describe log dirs",
            self.kp.describe_log_dirs,
            topic_partitions=topic_parts,
            brokers=None if brokers is None else list(brokers),
        )

    def describe_log_dirs(
        self, brokers: Iterable[int], tps: Iterable[TopicPartition] | None = None
    ) -> list[ReplicaLogInfo]:
        """Every replica log (current and future) on the given brokers, optionally only for
        the given partitions (one request per broker)."""
        out = []
        for b in self._describe_log_dirs_raw(brokers, tps):
            for d in b["log_dirs"]:
                if d.get("error_code"):
                    continue  # an offline log dir holds nothing we can move
                for t in d.get("topics", ()):
                    for p in t.get("partitions", ()):
                        out.append(
                            ReplicaLogInfo(
                                broker=b["broker"],
                                tp=TopicPartition(t["name"], p["partition_index"]),
                                log_dir=d["log_dir"],
                                size_bytes=p["partition_size"],
                                offset_lag=p["offset_lag"],
                                is_future=p["is_future_key"],
                            )
                        )
        return out

    def broker_log_dirs(self, brokers: Iterable[int] | None = None) -> dict[int, list[str]]:
        """Broker -> its online log dirs (for ``validate.ClusterView.log_dirs``)."""
        out: dict[int, list[str]] = {}
        raw = self._describe_log_dirs_raw(brokers, [])
        for b in raw:
            out[b["broker"]] = sorted(
                d["log_dir"] for d in b["log_dirs"] if not d.get("error_code")
            )
        return out

    def log_dir_capacity(self, brokers: Iterable[int]) -> dict[int, dict[str, DirCapacity]]:
        """DescribeLogDirs v4+ TotalBytes / UsableBytes per online log dir; -1 (an older
        broker, or a field it left out) is None: unknown, never zero."""
        out: dict[int, dict[str, DirCapacity]] = {}
        for b in self._describe_log_dirs_raw(brokers, []):
            dirs = {}
            for d in b["log_dirs"]:
                if d.get("error_code"):
                    continue
                total, usable = d.get("total_bytes", -1), d.get("usable_bytes", -1)
                dirs[d["log_dir"]] = DirCapacity(
                    total if isinstance(total, int) and total >= 0 else None,
                    usable if isinstance(usable, int) and usable >= 0 else None,
                )
            out[b["broker"]] = dirs
        return out

    def elect_preferred_leaders(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, str | None]:
        """One ElectLeaders request (KIP-460, preferred). ELECTION_NOT_NEEDED (the first
        replica leads already) is success."""
        tps = list(tps)
        if not tps:
            return {}
        from confluent_kafka import ElectionType
        from confluent_kafka import TopicPartition as CkTopicPartition

        # no request_timeout / operation_timeout: confluent-kafka 2.16.1's binding raises
        # SystemError on either keyword; _wait bounds the wait instead
        fut = self.ck.elect_leaders(
            ElectionType.PREFERRED, [CkTopicPartition(tp.topic, tp.partition) for tp in tps]
        )
        res = self._wait(fut, "elect preferred leaders")
        out: dict[TopicPartition, str | None] = dict.fromkeys(tps, "no answer from the cluster")
        for ck_tp, err in res.items():
            tp = TopicPartition(ck_tp.topic, ck_tp.partition)
            text = None if err is None else err_text(err)
            if text is not None and "ELECTION_NOT_NEEDED" in text.upper().replace(" ", "_"):
                text = None
            out[tp] = text
        return out

    def alter_replica_log_dirs(
        self, assignments: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], str | None]:
        """(partition, broker) -> absolute log dir; per replica None or the broker's error."""
        if not assignments:
            return {}
        import kafka.errors as Errors
        from kafka.structs import TopicPartitionReplica

        raw = self._kp_call(
            "alter replica log dirs",
            self.kp.alter_replica_log_dirs,
            {
                TopicPartitionReplica(tp.topic, tp.partition, broker): d
                for (tp, broker), d in assignments.items()
            },
        )
        out: dict[tuple[TopicPartition, int], str | None] = {}
        for tpr, err in raw.items():
            key = (TopicPartition(tpr.topic, tpr.partition), tpr.broker_id)
            out[key] = None if err is Errors.NoError else err.__name__.removesuffix("Error")
        return out
