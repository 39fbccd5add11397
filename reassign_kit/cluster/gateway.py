"""The cluster contract: the one ``Gateway`` protocol the engine, the operations and the panel
use. ``admin.AdminGateway`` implements it against real Kafka and ``simulate.SimCluster``
against a model, so the same code runs on both (a test compares both with the protocol).
Per-partition failures are ``PartitionError`` values with an ``ErrorCode``.

Every method is one or a few Admin calls whatever the plan's size: callers ask about the
partitions that matter, never one call per partition.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from ..model import PartitionState, TopicPartition
from .capabilities import Capabilities


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


@dataclass(frozen=True)
class DirCapacity:
    """One log dir's filesystem as DescribeLogDirs v4+ (Kafka 3.3+) reports it: total and
    usable (free to Kafka) bytes; None = not reported (an older broker)."""

    total_bytes: int | None
    usable_bytes: int | None

    @property
    def used_bytes(self) -> int | None:
        """Everything on the filesystem (not only Kafka's logs): what a ceiling weighs."""
        if self.total_bytes is None or self.usable_bytes is None:
            return None
        return self.total_bytes - self.usable_bytes


# Where a throttle config's value comes from (Kafka's ConfigSource, the layers throttles meet)
TOPIC_SOURCE = "topic"  # DYNAMIC_TOPIC_CONFIG: set on the topic
BROKER_SOURCE = "dynamic broker"  # DYNAMIC_BROKER_CONFIG: set for this broker
DEFAULT_SOURCE = "default"  # DYNAMIC_DEFAULT_BROKER_CONFIG: the cluster default (<default>)
STATIC_SOURCE = "static"  # STATIC_BROKER_CONFIG: the broker's server.properties
DEFAULT_BROKER = "<default>"  # the cluster-default broker entity, as a broker key in changes


@dataclass(frozen=True)
class ConfigValue:
    """A config's value and where it comes from (``*_SOURCE``)."""

    value: str
    source: str


@dataclass
class ThrottleConfigs:
    """The throttle configs set on some topics, brokers and the cluster default, each with its
    source. ``brokers``: a broker's own dynamic value, else its static one (server.properties);
    the cluster default appears under ``default`` only; Kafka's built-in defaults (no
    throttle) nowhere. ``unreachable``: brokers that could not be asked (id -> error)."""

    topics: dict[str, dict[str, ConfigValue]] = field(default_factory=dict)
    brokers: dict[int, dict[str, ConfigValue]] = field(default_factory=dict)
    default: dict[str, ConfigValue] = field(default_factory=dict)
    unreachable: dict[int, str] = field(default_factory=dict)


class ErrorCode(Enum):
    """Kafka's per-partition error codes that the tool decides on (the protocol's numbers;
    kafka-python's ``Errors.for_code`` names them). Compared by identity, never by text."""

    UNKNOWN = -1
    REQUEST_TIMED_OUT = 7
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    NOT_CONTROLLER = 41
    REASSIGNMENT_IN_PROGRESS = 60
    NO_REASSIGNMENT_IN_PROGRESS = 85

    @classmethod
    def of(cls, code: int) -> ErrorCode:
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN


class PartitionError(str):
    """One partition's failure in a batch request. It reads as the broker's text (what people,
    journals and JSON see, unchanged) and carries ``code`` for decisions."""

    code: ErrorCode

    def __new__(cls, code: ErrorCode, text: str) -> PartitionError:
        obj = super().__new__(cls, text)
        obj.code = code
        return obj

    def __reduce__(self) -> tuple[Any, ...]:
        return (PartitionError, (self.code, str(self)))


def is_error(error: str | None, code: ErrorCode) -> bool:
    """Whether a per-partition result is the failure ``code`` (by identity of the code)."""
    return isinstance(error, PartitionError) and error.code is code


# Kafka's operations on the CLUSTER resource (AclOperation names), all a principal may hold
CLUSTER_OPERATIONS = frozenset(
    {
        "ALTER",
        "ALTER_CONFIGS",
        "CLUSTER_ACTION",
        "CREATE",
        "DESCRIBE",
        "DESCRIBE_CONFIGS",
        "IDEMPOTENT_WRITE",
    }
)

# Kafka's operations on a TOPIC resource
TOPIC_OPERATIONS = frozenset(
    {"ALTER", "ALTER_CONFIGS", "CREATE", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "READ", "WRITE"}
)


class Gateway(Protocol):
    """Everything the engine, the operations, progress and the panel ask of a cluster: the
    admin gateway implements it against Kafka, the simulator against a model (in model time).
    Nobody probes for a method: what is here is what exists."""

    def brokers(self) -> list[BrokerInfo]:
        """The live brokers (id, host, port, rack)."""

    def cluster_info(self) -> dict[str, Any]:
        """Cluster id, controller and the Kafka version (for the journal's run_started)."""

    def cluster_id(self) -> str:
        """The cluster's id (DescribeCluster), one cheap call: a run's state is kept under it."""

    def capabilities(self) -> Capabilities:
        """What the brokers report they support (ApiVersions, features, config names):
        what decides which newer features may be used (``cluster.capabilities``)."""

    def topic_partition_counts(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        """Topic name -> partition count (all topics when ``topics`` is None)."""

    def describe_partitions(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, PartitionState]:
        """Replicas, ISR, leader and adding/removing for the given partitions (missing ones
        absent)."""

    def list_reassignments(
        self, tps: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionState]:
        """The reassignments in flight (of ``tps``, or every one)."""

    def alter_reassignments(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, str | None]:
        """Submit (replicas) or cancel (None) reassignments; per partition None or a
        ``PartitionError``."""

    def describe_log_dirs(
        self, brokers: Iterable[int], tps: Iterable[TopicPartition] | None = None
    ) -> list[ReplicaLogInfo]:
        """Replica logs on ``brokers`` (only ``tps`` when given)."""

    def broker_log_dirs(self, brokers: Iterable[int] | None = None) -> dict[int, list[str]]:
        """Each broker's log dirs."""

    def log_dir_capacity(self, brokers: Iterable[int]) -> dict[int, dict[str, DirCapacity]]:
        """Each online log dir's total and usable bytes (one DescribeLogDirs per broker, no
        partitions asked); a broker that does not answer is absent."""

    def elect_preferred_leaders(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, str | None]:
        """Preferred leader election (KIP-460) for ``tps``: per partition None (its first
        replica leads now, or did already) or the error."""

    def alter_replica_log_dirs(
        self, assignments: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], str | None]:
        """Move replicas between log dirs of their broker; per replica None or the error."""

    def tier_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, dict[str, int]]:
        """Tiered storage (KIP-405/1005): per partition the offsets its leader lists by name
        (log_start, local_log_start, tiered, log_end); a spec the cluster lacks is absent."""

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        """Each topic's min.insync.replicas (the broker default where not set)."""

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """The dynamic configs of ``topics``."""

    def broker_configs(self, brokers: Iterable[int]) -> dict[int, dict[str, str]]:
        """The dynamic per-broker configs of ``brokers``."""

    def throttle_configs(self, topics: Iterable[str], brokers: Iterable[int]) -> ThrottleConfigs:
        """The throttle configs of ``topics``, ``brokers`` and the cluster default with their
        sources (static ones are shown, never changed). A broker that cannot be asked (down)
        is named in ``unreachable`` instead of failing the call."""

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, str | None]]) -> None:
        """Incremental alter: SET a value, DELETE on None."""

    def alter_broker_configs(self, changes: Mapping[int, Mapping[str, str | None]]) -> None:
        """Incremental alter of per-broker configs: SET a value, DELETE on None. The key
        ``DEFAULT_BROKER`` is the cluster-default entity."""

    def cluster_permissions(self) -> frozenset[str] | None:
        """The operations the client's principal may perform on the cluster resource, in
        Kafka's names (``CLUSTER_OPERATIONS``): asked before anything is sent, so a missing
        right is reported up front. Empty when it may not even DESCRIBE the cluster; None
        when the cluster does not say."""

    def topic_permissions(self, topics: Iterable[str]) -> dict[str, frozenset[str]] | None:
        """Per topic, the operations the client's principal may perform on it
        (``TOPIC_OPERATIONS`` names; empty when it may not see the topic); None when the
        cluster does not say. Asked for topics known to exist (never creates one)."""

    def now(self) -> float:
        """The gateway's clock: wall time for Kafka, model time for the simulator."""

    def sleep(self, seconds: float) -> None:
        """Wait on the gateway's clock."""

    def close(self) -> None:
        """Release the clients (idempotent)."""


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
