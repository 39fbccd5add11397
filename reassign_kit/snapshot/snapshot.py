"""Cluster snapshot: what the planner and the offline validator need to know about a cluster.

The JSON form is a contract (``version`` 1)::

    {"version": 1,
     "brokers": [{"id": 1, "rack": "a"}],
     (a broker may add "log_dirs": [...], "cordoned_log_dirs": [...] from its configs, and
      "log_dir_capacity": [{"log_dir": "/d", "total_bytes": N, "usable_bytes": N}] from
      DescribeLogDirs v4+, Kafka 3.3+; null bytes: the broker did not report them)
     "topics": [{"name": "t", "min_insync_replicas": 2}],
     (a tiered topic, KIP-405, adds "remote_storage_enable": true, "local_retention_bytes": N,
      "local_retention_ms": N — its configs remote.storage.enable, local.retention.bytes/ms)
     "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3], "size_bytes": 123,
                     "leader": 2, "isr": [2, 3]}]}

A snapshot taken with ``--sample-load`` (or given loads another way) adds, per partition, an
optional ``"load": {"produce_bytes_s": F, "produce_msgs_s": F, "fetch_bytes_s": F,
"consumer_groups": N, "growth_bytes_s": F}`` and at the top level an optional
``"load": {"source": "sample", "started": EPOCH_S, "seconds": F, "unread": ["broker 3: ..."]}``
naming the window and every partition, broker or group that could not be read (see
``snapshot.load`` for the formulas). Snapshots without them load as before: no load known.

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
same fields, which Spark reads without going through the driver (the loads as nullable
``load_<field>`` columns of ``partitions.parquet``, the window as ``load.parquet``).

The entries and their readers are in ``snapshot_entries``, the topic selection in
``snapshot_filter`` (their names importable from here too); here ``Snapshot``, its JSON and
Parquet forms, and ``take_snapshot`` from a live cluster.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cluster.views import require_permissions
from ..errors import InvalidPlanError, require_extra
from ..model import TopicPartition, read_text
from .entries import (
    BrokerEntry,
    PartitionEntry,
    TopicEntry,
    partition_obj,
    read_brokers,
    read_partitions,
    read_topics,
)
from .filter import (
    TopicFilter,
    is_internal,
)
from .load import LOAD_KEYS, LoadWindow, read_window, with_loads
from .tier import last_tiered_fetch_of, tier_columns, tier_of_row, with_tiers

VERSION = 1
_TOP_KEYS = {"version", "brokers", "topics", "partitions", "load"}


@dataclass(frozen=True)
class Snapshot:
    """A cluster at one moment: brokers (with racks), topics, partitions (replicas in order)."""

    brokers: tuple[BrokerEntry, ...]
    topics: tuple[TopicEntry, ...]
    partitions: tuple[PartitionEntry, ...] = field(default_factory=tuple)
    # the window the partitions' loads were measured over (None: no load measured)
    load: LoadWindow | None = None

    @classmethod
    def of(
        cls,
        brokers: Iterable[BrokerEntry],
        topics: Iterable[TopicEntry],
        partitions: Iterable[PartitionEntry],
        load: LoadWindow | None = None,
    ) -> Snapshot:
        """Build in canonical order (brokers by id, topics by name, partitions by topic/partition)."""
        return cls(
            tuple(sorted(brokers, key=lambda b: b.id)),
            tuple(sorted(topics, key=lambda t: t.name)),
            tuple(sorted(partitions, key=lambda p: (p.topic, p.partition))),
            load,
        )

    # -- views -----------------------------------------------------------------------------
    def broker_ids(self) -> list[int]:
        return [b.id for b in self.brokers]

    def racks(self) -> dict[int, str | None]:
        return {b.id: b.rack for b in self.brokers}

    def unreported_capacity(self) -> list[int]:
        """Brokers whose log dirs' sizes are not recorded (older Kafka, older snapshot)."""
        return [
            b.id
            for b in self.brokers
            if not b.log_dir_capacity or any(c[1] is None for c in b.log_dir_capacity)
        ]

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
                self.load,
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
        out: dict[str, Any] = {
            "version": VERSION,
            "brokers": [b.to_json_obj() for b in sorted(self.brokers, key=lambda b: b.id)],
            "topics": [t.to_json_obj() for t in sorted(self.topics, key=lambda t: t.name)],
            "partitions": [
                partition_obj(p)
                for p in sorted(self.partitions, key=lambda p: (p.topic, p.partition))
            ],
        }
        if self.load is not None:
            out["load"] = self.load.to_json_obj()
        return out

    def to_json(self) -> str:
        """Canonical JSON: one partition per line keeps diffs of big snapshots readable."""
        obj = self.to_json_obj()
        head = {k: obj[k] for k in ("version", "brokers", "topics", "load") if k in obj}
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
        except RecursionError:  # nested thousands deep: no snapshot is
            raise InvalidPlanError(
                ["not valid JSON: nested too deeply"], header=f"{source} is not a snapshot"
            ) from None
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
        brokers = read_brokers(obj.get("brokers"), problems)
        topics = read_topics(obj.get("topics"), problems)
        partitions = read_partitions(obj.get("partitions"), problems, brokers, topics)
        partitions = with_loads(partitions, obj.get("partitions"), problems)
        load = read_window(obj.get("load"), problems)
        if problems:
            raise InvalidPlanError(problems, header=f"{source} is not a valid snapshot")
        return cls.of(brokers.values(), topics.values(), partitions, load)

    @classmethod
    def read(cls, path: str) -> Snapshot:
        if _is_parquet_path(path):
            return read_parquet(path)
        return cls.from_json(read_text(path, "snapshot"), source=path)


# -- Parquet ---------------------------------------------------------------------------------
def _is_parquet_path(path: str) -> bool:
    return path.endswith(".parquet") or os.path.isdir(path)


def write_parquet(snap: Snapshot, path: str) -> None:
    """The Parquet directory form: three files Spark can read straight into executors."""
    require_extra("pyarrow.parquet", "a Parquet snapshot")
    import pyarrow.parquet as pq

    os.makedirs(path, exist_ok=True)
    pq.write_table(_brokers_table(snap), os.path.join(path, "brokers.parquet"))
    pq.write_table(_topics_table(snap), os.path.join(path, "topics.parquet"))
    pq.write_table(_partitions_table(snap), os.path.join(path, "partitions.parquet"))
    window = os.path.join(path, "load.parquet")
    if snap.load is not None:
        import pyarrow as pa

        pq.write_table(pa.Table.from_pylist([snap.load.to_json_obj()]), window)
    elif os.path.exists(window):  # an older sample's window must not stay beside new rows
        os.remove(window)
    with open(os.path.join(path, "_VERSION"), "w", encoding="utf-8") as f:
        f.write(f"{VERSION}\n")


def _brokers_table(snap: Snapshot) -> Any:
    import pyarrow as pa

    return pa.table(
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
            "log_dir_capacity": pa.array(
                [b.to_json_obj().get("log_dir_capacity") for b in snap.brokers],
                pa.list_(
                    pa.struct(
                        [
                            ("log_dir", pa.string()),
                            ("total_bytes", pa.int64()),
                            ("usable_bytes", pa.int64()),
                        ]
                    )
                ),
            ),
            "last_tiered_fetch": pa.array([b.last_tiered_fetch for b in snap.brokers], pa.bool_()),
        }
    )


def _topics_table(snap: Snapshot) -> Any:
    import pyarrow as pa

    return pa.table(
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
            "local_retention_ms": pa.array([t.local_retention_ms for t in snap.topics], pa.int64()),
        }
    )


def _partitions_table(snap: Snapshot) -> Any:
    import pyarrow as pa

    return pa.table(
        {
            "topic": pa.array([p.topic for p in snap.partitions], pa.string()),
            "partition": pa.array([p.partition for p in snap.partitions], pa.int32()),
            "replicas": pa.array([list(p.replicas) for p in snap.partitions], pa.list_(pa.int32())),
            "size_bytes": pa.array([p.size_bytes for p in snap.partitions], pa.int64()),
            "leader": pa.array([p.leader for p in snap.partitions], pa.int32()),
            "isr": pa.array(
                [list(p.isr) if p.isr is not None else None for p in snap.partitions],
                pa.list_(pa.int32()),
            ),
            # each replica's log dir (--balance disks starts from it); null: not recorded
            "log_dirs": pa.array(
                [list(p.log_dirs) if p.log_dirs is not None else None for p in snap.partitions],
                pa.list_(pa.string()),
            ),
            **load_columns(snap),
            **tier_columns(snap.partitions),
        }
    )


def read_parquet(path: str) -> Snapshot:
    """Read the Parquet form into memory, through the same strict checks as the JSON form."""
    require_extra("pyarrow.parquet", "a Parquet snapshot")
    import pyarrow.parquet as pq

    try:
        brokers = pq.read_table(os.path.join(path, "brokers.parquet")).to_pylist()
        topics = [_tiered_defaults(t) for t in _read_topics_parquet(path)]
        parts = [
            tier_of_row(_load_of_row(p))
            for p in pq.read_table(os.path.join(path, "partitions.parquet")).to_pylist()
        ]
        window = os.path.join(path, "load.parquet")
        load = pq.read_table(window).to_pylist() if os.path.exists(window) else [None]
    except (OSError, ValueError) as e:
        raise InvalidPlanError(
            [f"cannot read Parquet snapshot {path}: {e}"], header=f"snapshot {path}"
        ) from e
    obj = {"version": VERSION, "brokers": brokers, "topics": topics, "partitions": parts}
    if len(load) != 1:
        raise InvalidPlanError(
            [f"load.parquet must hold one row, has {len(load)}"], header=f"snapshot {path}"
        )
    if load[0] is not None:
        obj["load"] = load[0]
    return Snapshot.from_json_obj(obj, source=path)


def load_columns(snap: Snapshot) -> dict[str, Any]:
    """The partitions' loads as nullable ``load_<field>`` columns (all null: none recorded)."""
    import pyarrow as pa

    loads = [p.load for p in snap.partitions]
    return {
        f"load_{k}": pa.array(
            [getattr(x, k) if x is not None else None for x in loads],
            pa.int32() if k == "consumer_groups" else pa.float64(),
        )
        for k in LOAD_KEYS
    }


def _load_of_row(row: dict) -> dict:
    """A Parquet partition row: its ``load_<field>`` columns (absent in older snapshots, null
    where no load was recorded) back into the JSON form's ``load`` object."""
    cols = {k: row.pop(f"load_{k}", None) for k in LOAD_KEYS}
    if any(v is not None for v in cols.values()):
        row["load"] = cols
    return row


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
    from ..errors import KafkaOperationError

    if not brokers:
        return brokers
    try:
        cfgs = gateway.broker_configs([b.id for b in brokers])
    except KafkaOperationError:
        return brokers
    out = []
    for b in brokers:
        dirs, cordoned = parse_cordons(cfgs.get(b.id, {}))
        ltf = last_tiered_fetch_of(cfgs.get(b.id, {}))
        out.append(BrokerEntry(b.id, b.rack, dirs, cordoned, last_tiered_fetch=ltf))
    return out


def capacity_of(gateway: Any, brokers: list[BrokerEntry]) -> list[BrokerEntry]:
    """The brokers with each online log dir's total and usable bytes (one DescribeLogDirs per
    broker); a broker that does not answer records none (unknown, never zero)."""
    from dataclasses import replace

    from ..errors import KafkaOperationError

    if not brokers:
        return brokers
    try:
        caps = gateway.log_dir_capacity([b.id for b in brokers])
    except KafkaOperationError:
        return brokers
    return [
        replace(
            b,
            log_dir_capacity=tuple(
                (d, c.total_bytes, c.usable_bytes) for d, c in sorted(caps[b.id].items())
            ),
        )
        if caps.get(b.id)
        else b
        for b in brokers
    ]


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
    brokers = capacity_of(gateway, cordons_of(gateway, brokers))
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
    where: dict[tuple[int, TopicPartition], str] = {}
    for info in gateway.describe_log_dirs([b.id for b in brokers]) if brokers else []:
        if info.is_future:
            continue
        key = (info.broker, info.tp)
        sizes[key] = max(sizes.get(key, 0), info.size_bytes)
        where[key] = info.log_dir
    parts = []
    for tp, st in states.items():
        if st.leader is not None and (st.leader, tp) in sizes:
            size = sizes[(st.leader, tp)]
        else:
            size = max((sizes.get((r, tp), 0) for r in st.replicas), default=0)
        leader = st.leader if st.leader in st.replicas else None  # None / -1: no leader
        # an empty ISR (a gateway that does not report it, or no leader) records nothing
        isr = tuple(b for b in (st.isr or ()) if b in st.replicas) or None
        # the dir each replica is in (the log-dir pass of --balance disks starts there)
        dirs = tuple(where.get((r, tp)) for r in st.replicas)
        parts.append(
            PartitionEntry(
                tp.topic,
                tp.partition,
                tuple(st.replicas),
                int(size),
                leader,
                isr,
                log_dirs=dirs if any(dirs) else None,
            )  # fmt: skip
        )
    topic_entries = [TopicEntry(t, misr.get(t), **tiered.get(t, {})) for t in counts]
    parts = with_tiers(gateway, parts, {t.name for t in topic_entries if t.remote_storage_enable})
    return Snapshot.of(brokers, topic_entries, parts)
