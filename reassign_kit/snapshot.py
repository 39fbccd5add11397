"""Cluster snapshot: what the planner and the offline validator need to know about a cluster.

The JSON form is a contract (``version`` 1)::

    {"version": 1,
     "brokers": [{"id": 1, "rack": "a"}],
     "topics": [{"name": "t", "min_insync_replicas": 2}],
     (a tiered topic, KIP-405, adds "remote_storage_enable": true, "local_retention_bytes": N,
      "local_retention_ms": N — its configs remote.storage.enable, local.retention.bytes/ms)
     "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3], "size_bytes": 123,
                     "leader": 2, "isr": [2, 3]}]}

``leader`` and ``isr`` (optional; older snapshots have neither) are the partition's state when
the snapshot was taken: the broker leading it (null: none) and its in-sync replicas, both among
its replicas. A demotion plan uses them: a demoted broker may lead a partition it is not the
first replica of (leadership drifts, e.g. after a broker restart), and the new first replica
should be one the controller can elect (in the ISR).

A broker listed with no replicas is a new, empty broker. ``size_bytes`` is what a new replica
copies: the leader's log size from DescribeLogDirs, which for a tiered topic counts only its
local segments (remote ones are not copied by a move). Reading is strict (every problem at
once, each naming the entry at fault); writing is canonical (sorted, fixed key order) so the same
cluster state always gives the same bytes. Big clusters may use the Parquet form instead: a
directory with ``brokers.parquet``, ``topics.parquet`` and ``partitions.parquet`` holding the
same fields, which Spark reads without going through the driver.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .cluster.views import require_permissions
from .errors import InvalidPlanError, UsageError, require_extra
from .model import TopicPartition, read_text

VERSION = 1
# Kafka's own topics; every name starting with "__" is treated as internal (issue 13 #2)
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS or topic.startswith("__")


def _compile(flag: str, pattern: str | None) -> re.Pattern | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as e:
        raise UsageError(f"{flag}: not a valid regular expression {pattern!r}: {e}") from None


@dataclass(frozen=True)
class TopicFilter:
    """Which topics a command works on: ``include`` and ``exclude`` are regular expressions a
    whole topic name must match (Python ``re.fullmatch``, like Java's ``matches``); internal
    topics (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``, any name
    starting with ``__``) are left out unless ``include_internal``."""

    include: str | None = None
    exclude: str | None = None
    include_internal: bool = False

    def __post_init__(self) -> None:
        _compile("--topics-regex", self.include)
        _compile("--exclude-topics-regex", self.exclude)

    def why_excluded(self, topic: str) -> str | None:
        """None when the topic is selected, else the reason it is not."""
        if not self.include_internal and is_internal(topic):
            return "internal (--include-internal plans it)"
        inc = _compile("--topics-regex", self.include)
        if inc is not None and not inc.fullmatch(topic):
            return f"not matched by --topics-regex {self.include!r}"
        exc = _compile("--exclude-topics-regex", self.exclude)
        if exc is not None and exc.fullmatch(topic):
            return f"matched by --exclude-topics-regex {self.exclude!r}"
        return None

    def selects(self, topic: str) -> bool:
        return self.why_excluded(topic) is None

    def split(self, topics: Iterable[str]) -> tuple[list[str], dict[str, str]]:
        """(selected topics, excluded topic -> reason), both sorted."""
        kept, out = [], {}
        for t in sorted(set(topics)):
            why = self.why_excluded(t)
            if why is None:
                kept.append(t)
            else:
                out[t] = why
        return kept, out

    @property
    def is_default(self) -> bool:
        return self == TopicFilter()

    def describe(self) -> dict[str, Any]:
        return {
            "topics_regex": self.include,
            "exclude_topics_regex": self.exclude,
            "include_internal": self.include_internal,
        }


def excluded_summary(
    reasons: Mapping[str, str],
    partitions: Mapping[str, int],
    on_removed: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """What a topic selection left out, for a report: each topic with its reason and partition
    count, and the replicas the excluded topics keep on brokers being removed."""
    return {
        "topics": [
            {"topic": t, "reason": why, "partitions": int(partitions.get(t, 0))}
            for t, why in sorted(reasons.items())
        ],
        "partitions": int(sum(partitions.get(t, 0) for t in reasons)),
        "replicas_left_on_removed_brokers": {
            int(b): int(n) for b, n in sorted((on_removed or {}).items()) if n
        },
    }


_BROKER_KEYS = {"id", "rack", "log_dirs", "cordoned_log_dirs"}
_TIERED_KEYS = ("remote_storage_enable", "local_retention_bytes", "local_retention_ms")
_TOPIC_KEYS = {"name", "min_insync_replicas", *_TIERED_KEYS}
_PARTITION_KEYS = {"topic", "partition", "replicas", "size_bytes", "leader", "isr"}
_TOP_KEYS = {"version", "brokers", "topics", "partitions"}


@dataclass(frozen=True)
class BrokerEntry:
    id: int
    rack: str | None = None
    # KIP-1066 (Kafka 4.3): the broker's log dirs and its ``cordoned.log.dirs`` ("*" = all), as
    # the snapshot read them from its config; None = not recorded (older Kafka, older snapshot)
    log_dirs: tuple[str, ...] | None = None
    cordoned_log_dirs: tuple[str, ...] | None = None

    @property
    def cordoned(self) -> bool:
        """Every log dir cordoned: the broker takes no new replica."""
        c = self.cordoned_log_dirs
        if not c:
            return False
        return "*" in c or (bool(self.log_dirs) and set(self.log_dirs) <= set(c))

    def to_json_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "rack": self.rack}
        for k in ("log_dirs", "cordoned_log_dirs"):
            if getattr(self, k) is not None:
                out[k] = list(getattr(self, k))
        return out


@dataclass(frozen=True)
class TopicEntry:
    name: str
    min_insync_replicas: int | None = None
    # tiered storage (KIP-405): remote.storage.enable and the local retention it keeps; sizes
    # stay the local bytes (what a move copies)
    remote_storage_enable: bool = False
    local_retention_bytes: int | None = None
    local_retention_ms: int | None = None

    def to_json_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "min_insync_replicas": self.min_insync_replicas}
        if self.remote_storage_enable or self.local_retention_bytes is not None:
            out["remote_storage_enable"] = self.remote_storage_enable
        for k in ("local_retention_bytes", "local_retention_ms"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        return out


@dataclass(frozen=True)
class PartitionEntry:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    size_bytes: int = 0
    # the partition's state when recorded (None: not recorded, or no leader)
    leader: int | None = None
    isr: tuple[int, ...] | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class Snapshot:
    """A cluster at one moment: brokers (with racks), topics, partitions (replicas in order)."""

    brokers: tuple[BrokerEntry, ...]
    topics: tuple[TopicEntry, ...]
    partitions: tuple[PartitionEntry, ...] = field(default_factory=tuple)

    @classmethod
    def of(
        cls,
        brokers: Iterable[BrokerEntry],
        topics: Iterable[TopicEntry],
        partitions: Iterable[PartitionEntry],
    ) -> Snapshot:
        """Build in canonical order (brokers by id, topics by name, partitions by topic/partition)."""
        return cls(
            tuple(sorted(brokers, key=lambda b: b.id)),
            tuple(sorted(topics, key=lambda t: t.name)),
            tuple(sorted(partitions, key=lambda p: (p.topic, p.partition))),
        )

    # -- views -----------------------------------------------------------------------------
    def broker_ids(self) -> list[int]:
        return [b.id for b in self.brokers]

    def racks(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self.brokers}

    def cordoned(self) -> frozenset[int]:
        """Brokers whose log dirs are all cordoned (KIP-1066)."""
        return frozenset(b.id for b in self.brokers if b.cordoned)

    def by_tp(self) -> dict[TopicPartition, PartitionEntry]:
        return {p.tp: p for p in self.partitions}

    def select(self, topic_filter: TopicFilter) -> tuple[Snapshot, dict[str, str]]:
        """The snapshot restricted to the selected topics, and what was excluded (and why)."""
        if topic_filter.is_default and not any(is_internal(t.name) for t in self.topics):
            return self, {}
        _, excluded = topic_filter.split(t.name for t in self.topics)
        if not excluded:
            return self, {}
        return (
            Snapshot.of(
                self.brokers,
                [t for t in self.topics if t.name not in excluded],
                [p for p in self.partitions if p.topic not in excluded],
            ),
            excluded,
        )

    def replica_count(self) -> int:
        return sum(len(p.replicas) for p in self.partitions)

    def to_pandas(self):
        """Partitions as a pandas DataFrame (topic, partition, replicas, size_bytes)."""
        import pandas as pd

        return pd.DataFrame(
            {
                "topic": [p.topic for p in self.partitions],
                "partition": [p.partition for p in self.partitions],
                "replicas": [list(p.replicas) for p in self.partitions],
                "size_bytes": [p.size_bytes for p in self.partitions],
            }
        )

    # -- JSON ------------------------------------------------------------------------------
    def to_json_obj(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "brokers": [b.to_json_obj() for b in sorted(self.brokers, key=lambda b: b.id)],
            "topics": [t.to_json_obj() for t in sorted(self.topics, key=lambda t: t.name)],
            "partitions": [
                _partition_obj(p)
                for p in sorted(self.partitions, key=lambda p: (p.topic, p.partition))
            ],
        }

    def to_json(self) -> str:
        """Canonical JSON: one partition per line keeps diffs of big snapshots readable."""
        obj = self.to_json_obj()
        head = {k: obj[k] for k in ("version", "brokers", "topics")}
        lines = [json.dumps(p, separators=(", ", ": ")) for p in obj["partitions"]]
        text = json.dumps(head, separators=(", ", ": "))[:-1]
        if not lines:
            return text + ', "partitions": []}\n'
        return text + ', "partitions": [\n' + ",\n".join(lines) + "\n]}\n"

    def write(self, path: str) -> None:
        """Write JSON, or the Parquet directory form when ``path`` ends with ``.parquet``."""
        if _is_parquet_path(path):
            write_parquet(self, path)
            return
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(self.to_json())
        os.replace(tmp, path)

    @classmethod
    def from_json(cls, text: str, source: str = "snapshot") -> Snapshot:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise InvalidPlanError(
                [f"not valid JSON: {e}"], header=f"{source} is not a snapshot"
            ) from e
        return cls.from_json_obj(obj, source)

    @classmethod
    def from_json_obj(cls, obj: Any, source: str = "snapshot") -> Snapshot:
        problems: list[str] = []
        if not isinstance(obj, dict):
            raise InvalidPlanError(
                ["the top level must be a JSON object"], header=f"{source} is not a snapshot"
            )
        for k in sorted(set(obj) - _TOP_KEYS):
            problems.append(f"unknown top-level key {k!r}")
        if obj.get("version") != VERSION:
            problems.append(f"version must be {VERSION}, got {obj.get('version')!r}")
        brokers = _read_brokers(obj.get("brokers"), problems)
        topics = _read_topics(obj.get("topics"), problems)
        partitions = _read_partitions(obj.get("partitions"), problems, brokers, topics)
        if problems:
            raise InvalidPlanError(problems, header=f"{source} is not a valid snapshot")
        return cls.of(brokers.values(), topics.values(), partitions)

    @classmethod
    def read(cls, path: str) -> Snapshot:
        if _is_parquet_path(path):
            return read_parquet(path)
        return cls.from_json(read_text(path, "snapshot"), source=path)


def _partition_obj(p: PartitionEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "topic": p.topic,
        "partition": p.partition,
        "replicas": list(p.replicas),
        "size_bytes": p.size_bytes,
    }
    if p.leader is not None:
        out["leader"] = p.leader
    if p.isr is not None:
        out["isr"] = list(p.isr)
    return out


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _read_brokers(raw: Any, problems: list[str]) -> dict[int, BrokerEntry]:
    out: dict[int, BrokerEntry] = {}
    if not isinstance(raw, list):
        problems.append("'brokers' must be a list")
        return out
    for i, b in enumerate(raw):
        where = f"brokers[{i}]"
        if not isinstance(b, dict):
            problems.append(f"{where} must be an object")
            continue
        for k in sorted(set(b) - _BROKER_KEYS):
            problems.append(f"{where}: unknown key {k!r}")
        bid, rack = b.get("id"), b.get("rack")
        if not _is_int(bid) or bid < 0:
            problems.append(f"{where}: 'id' must be a non-negative integer, got {bid!r}")
            continue
        if rack is not None and (not isinstance(rack, str) or not rack):
            problems.append(
                f"broker {bid}: 'rack' must be a non-empty string or null, got {rack!r}"
            )
            continue
        if bid in out:
            problems.append(f"broker {bid} is listed twice")
            continue
        dirs = {}
        for k in ("log_dirs", "cordoned_log_dirs"):
            v = b.get(k)
            if v is not None and (
                not isinstance(v, list) or not all(isinstance(d, str) and d for d in v)
            ):
                problems.append(
                    f"broker {bid}: {k!r} must be a list of non-empty strings or null, got {v!r}"
                )
                v = None
            dirs[k] = tuple(v) if v is not None else None
        out[bid] = BrokerEntry(bid, rack, **dirs)
    return out


def _read_topics(raw: Any, problems: list[str]) -> dict[str, TopicEntry]:
    out: dict[str, TopicEntry] = {}
    if not isinstance(raw, list):
        problems.append("'topics' must be a list")
        return out
    for i, t in enumerate(raw):
        where = f"topics[{i}]"
        if not isinstance(t, dict):
            problems.append(f"{where} must be an object")
            continue
        for k in sorted(set(t) - _TOPIC_KEYS):
            problems.append(f"{where}: unknown key {k!r}")
        name, misr = t.get("name"), t.get("min_insync_replicas")
        if not isinstance(name, str) or not name:
            problems.append(f"{where}: 'name' must be a non-empty string, got {name!r}")
            continue
        if misr is not None and (not _is_int(misr) or misr < 1):
            problems.append(
                f"topic {name}: 'min_insync_replicas' must be a positive integer or null, got {misr!r}"
            )
            continue
        remote = t.get("remote_storage_enable", False)
        if not isinstance(remote, bool):
            problems.append(
                f"topic {name}: 'remote_storage_enable' must be true or false, got {remote!r}"
            )
            continue
        bad = False
        for k in ("local_retention_bytes", "local_retention_ms"):
            v = t.get(k)
            if v is not None and (not _is_int(v) or v < -2):
                problems.append(f"topic {name}: {k!r} must be an integer >= -2 or null, got {v!r}")
                bad = True
        if bad:
            continue
        if name in out:
            problems.append(f"topic {name} is listed twice")
            continue
        out[name] = TopicEntry(
            name, misr, remote, t.get("local_retention_bytes"), t.get("local_retention_ms")
        )
    return out


def _read_partitions(
    raw: Any, problems: list[str], brokers: dict[int, BrokerEntry], topics: dict[str, TopicEntry]
) -> list[PartitionEntry]:
    out: list[PartitionEntry] = []
    seen: set[tuple[str, int]] = set()
    if not isinstance(raw, list):
        problems.append("'partitions' must be a list")
        return out
    for i, p in enumerate(raw):
        where = f"partitions[{i}]"
        if not isinstance(p, dict):
            problems.append(f"{where} must be an object")
            continue
        for k in sorted(set(p) - _PARTITION_KEYS):
            problems.append(f"{where}: unknown key {k!r}")
        topic, part, reps, size = (
            p.get("topic"),
            p.get("partition"),
            p.get("replicas"),
            p.get("size_bytes", 0),
        )
        if not isinstance(topic, str) or not topic:
            problems.append(f"{where}: 'topic' must be a non-empty string, got {topic!r}")
            continue
        if not _is_int(part) or part < 0:
            problems.append(
                f"{where} (topic {topic}): 'partition' must be a non-negative integer, got {part!r}"
            )
            continue
        name = f"{topic}-{part}"
        ok = True
        if topic not in topics:
            problems.append(f"partition {name}: topic {topic} is not in 'topics'")
            ok = False
        if (topic, part) in seen:
            problems.append(f"partition {name} is listed twice")
            continue
        seen.add((topic, part))
        if not isinstance(reps, list) or not reps or not all(_is_int(r) for r in reps):
            problems.append(
                f"partition {name}: 'replicas' must be a non-empty list of broker ids, got {reps!r}"
            )
            continue
        if len(set(reps)) != len(reps):
            problems.append(f"partition {name}: duplicate replicas {reps}")
            ok = False
        unknown = sorted({r for r in reps if r not in brokers})
        if unknown:
            problems.append(f"partition {name}: replicas on broker(s) {unknown} not in 'brokers'")
            ok = False
        if not _is_int(size) or size < 0:
            problems.append(
                f"partition {name}: 'size_bytes' must be a non-negative integer, got {size!r}"
            )
            ok = False
        leader, isr = p.get("leader"), p.get("isr")
        if leader is not None and (not _is_int(leader) or leader not in reps):
            problems.append(
                f"partition {name}: 'leader' must be one of its replicas {reps} or null, "
                f"got {leader!r}"
            )
            ok = False
        if isr is not None:
            if not isinstance(isr, list) or not all(_is_int(r) for r in isr):
                problems.append(
                    f"partition {name}: 'isr' must be a list of broker ids or null, got {isr!r}"
                )
                ok = False
            elif len(set(isr)) != len(isr) or not set(isr) <= set(reps):
                problems.append(
                    f"partition {name}: 'isr' {isr} must be distinct replicas of {reps}"
                )
                ok = False
        if ok:
            out.append(
                PartitionEntry(
                    topic, part, tuple(reps), size, leader, tuple(isr) if isr is not None else None
                )
            )
    return out


# -- Parquet ---------------------------------------------------------------------------------
def _is_parquet_path(path: str) -> bool:
    return path.endswith(".parquet") or os.path.isdir(path)


def write_parquet(snap: Snapshot, path: str) -> None:
    """The Parquet directory form: three files Spark can read straight into executors."""
    require_extra("pyarrow.parquet", "a Parquet snapshot")
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    pq.write_table(
        pa.table(
            {
                "id": [b.id for b in snap.brokers],
                "rack": pa.array([b.rack for b in snap.brokers], pa.string()),
                "log_dirs": pa.array(
                    [list(b.log_dirs) if b.log_dirs is not None else None for b in snap.brokers],
                    pa.list_(pa.string()),
                ),
                "cordoned_log_dirs": pa.array(
                    [
                        list(b.cordoned_log_dirs) if b.cordoned_log_dirs is not None else None
                        for b in snap.brokers
                    ],
                    pa.list_(pa.string()),
                ),
            }
        ),
        os.path.join(path, "brokers.parquet"),
    )
    pq.write_table(
        pa.table(
            {
                "name": pa.array([t.name for t in snap.topics], pa.string()),
                "min_insync_replicas": pa.array(
                    [t.min_insync_replicas for t in snap.topics], pa.int32()
                ),
                "remote_storage_enable": pa.array(
                    [t.remote_storage_enable for t in snap.topics], pa.bool_()
                ),
                "local_retention_bytes": pa.array(
                    [t.local_retention_bytes for t in snap.topics], pa.int64()
                ),
                "local_retention_ms": pa.array(
                    [t.local_retention_ms for t in snap.topics], pa.int64()
                ),
            }
        ),
        os.path.join(path, "topics.parquet"),
    )
    pq.write_table(
        pa.table(
            {
                "topic": pa.array([p.topic for p in snap.partitions], pa.string()),
                "partition": pa.array([p.partition for p in snap.partitions], pa.int32()),
                "replicas": pa.array(
                    [list(p.replicas) for p in snap.partitions], pa.list_(pa.int32())
                ),
                "size_bytes": pa.array([p.size_bytes for p in snap.partitions], pa.int64()),
                "leader": pa.array([p.leader for p in snap.partitions], pa.int32()),
                "isr": pa.array(
                    [list(p.isr) if p.isr is not None else None for p in snap.partitions],
                    pa.list_(pa.int32()),
                ),
            }
        ),
        os.path.join(path, "partitions.parquet"),
    )
    with open(os.path.join(path, "_VERSION"), "w", encoding="utf-8") as f:
        f.write(f"{VERSION}\n")


def read_parquet(path: str) -> Snapshot:
    """Read the Parquet form into memory, through the same strict checks as the JSON form."""
    require_extra("pyarrow.parquet", "a Parquet snapshot")
    import pyarrow.parquet as pq

    try:
        brokers = pq.read_table(os.path.join(path, "brokers.parquet")).to_pylist()
        topics = [_tiered_defaults(t) for t in _read_topics_parquet(path)]
        parts = pq.read_table(os.path.join(path, "partitions.parquet")).to_pylist()
    except (OSError, ValueError) as e:
        raise InvalidPlanError(
            [f"cannot read Parquet snapshot {path}: {e}"], header=f"snapshot {path}"
        ) from e
    obj = {"version": VERSION, "brokers": brokers, "topics": topics, "partitions": parts}
    return Snapshot.from_json_obj(obj, source=path)


def _read_topics_parquet(path: str) -> list[dict]:
    import pyarrow.parquet as pq

    return pq.read_table(os.path.join(path, "topics.parquet")).to_pylist()


def _tiered_defaults(t: dict) -> dict:
    """A Parquet row: the tiered columns (absent in older snapshots; null = not set)."""
    t = dict(t)
    if t.get("remote_storage_enable") is None:
        t.pop("remote_storage_enable", None)
    for k in ("local_retention_bytes", "local_retention_ms"):
        if k in t and t[k] is None:
            del t[k]
    return t


def tiered_of(configs: Mapping[str, str]) -> dict[str, Any]:
    """remote.storage.enable and local.retention.bytes / .ms from a topic's effective configs."""
    out: dict[str, Any] = {
        "remote_storage_enable": str(configs.get("remote.storage.enable", "false")).lower()
        == "true"
    }
    for key, field_ in (
        ("local.retention.bytes", "local_retention_bytes"),
        ("local.retention.ms", "local_retention_ms"),
    ):
        v = configs.get(key)
        try:
            out[field_] = int(v) if v is not None and out["remote_storage_enable"] else None
        except ValueError:
            out[field_] = None
    return out


# -- from a live cluster ---------------------------------------------------------------------
def parse_cordons(cfg: Mapping[str, str]) -> tuple[tuple[str, ...] | None, tuple[str, ...] | None]:
    """(log dirs, cordoned log dirs) from a broker's effective config: ``cordoned.log.dirs``
    (KIP-1066, Kafka 4.3: a comma list, "*" = all) is None when the broker does not know it
    (older Kafka: no cordons, no error); ``log.dirs`` else ``log.dir``."""
    raw = cfg.get("log.dirs") or cfg.get("log.dir")
    dirs = tuple(d.strip() for d in raw.split(",") if d.strip()) if raw else None
    if "cordoned.log.dirs" not in cfg:
        return dirs, None
    cordoned = tuple(d.strip() for d in cfg["cordoned.log.dirs"].split(",") if d.strip())
    return dirs, cordoned


def cordons_of(gateway: Any, brokers: list[BrokerEntry]) -> list[BrokerEntry]:
    """The brokers with their log dirs and cordons as their configs say (one DescribeConfigs
    per broker). A broker whose configs cannot be read records none (its cordons unknown)."""
    from .errors import KafkaOperationError

    if not brokers:
        return brokers
    try:
        cfgs = gateway.broker_configs([b.id for b in brokers])
    except KafkaOperationError:
        return brokers
    out = []
    for b in brokers:
        dirs, cordoned = parse_cordons(cfgs.get(b.id, {}))
        out.append(BrokerEntry(b.id, b.rack, dirs, cordoned))
    return out


def take_snapshot(
    gateway: Any,
    topics: Iterable[str] | None = None,
    topic_filter: TopicFilter | None = None,
) -> Snapshot:
    """Record the cluster through the gateway: a handful of Admin calls whatever its size.
    With ``topic_filter``, only the topics it selects (of ``topics``, or of all) are recorded.

    ``size_bytes`` is the leader's log size from DescribeLogDirs (the bytes a new replica must
    copy); when the leader is unknown, the largest replica's log stands in. For a tiered topic
    (``remote.storage.enable``) that is its local log only — DescribeLogDirs reports the local
    segments, and a move copies only those — so nothing here uses a total (remote) size; the
    topic entry records the setting and its local retention."""
    require_permissions(gateway, "snapshot", ["DESCRIBE"])
    brokers = [BrokerEntry(b.id, b.rack) for b in gateway.brokers()]
    brokers = cordons_of(gateway, brokers)
    counts = gateway.topic_partition_counts(list(topics) if topics is not None else None)
    if topic_filter is not None:
        counts = {t: n for t, n in counts.items() if topic_filter.selects(t)}
    tps = [TopicPartition(t, p) for t, n in counts.items() for p in range(n)]
    states = gateway.describe_partitions(tps) if tps else {}
    misr: dict[str, int | None] = {}
    tiered: dict[str, dict[str, Any]] = {}
    if counts:
        # effective configs: min.insync.replicas and the tiered-storage settings (KIP-405)
        cfgs = gateway.topic_configs(sorted(counts))
        for t in counts:
            c = cfgs.get(t, {})
            misr[t] = int(c.get("min.insync.replicas", "1"))
            tiered[t] = tiered_of(c)
    sizes: dict[tuple[int, TopicPartition], int] = {}
    for info in gateway.describe_log_dirs([b.id for b in brokers]) if brokers else []:
        if info.is_future:
            continue
        key = (info.broker, info.tp)
        sizes[key] = max(sizes.get(key, 0), info.size_bytes)
    parts = []
    for tp, st in states.items():
        if st.leader is not None and (st.leader, tp) in sizes:
            size = sizes[(st.leader, tp)]
        else:
            size = max((sizes.get((r, tp), 0) for r in st.replicas), default=0)
        leader = st.leader if st.leader in st.replicas else None  # None / -1: no leader
        # an empty ISR (a gateway that does not report it, or no leader) records nothing
        isr = tuple(b for b in (st.isr or ()) if b in st.replicas) or None
        parts.append(
            PartitionEntry(tp.topic, tp.partition, tuple(st.replicas), int(size), leader, isr)
        )
    topic_entries = [TopicEntry(t, misr.get(t), **tiered.get(t, {})) for t in counts]
    return Snapshot.of(brokers, topic_entries, parts)
