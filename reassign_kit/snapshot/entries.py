"""A snapshot's entries — its brokers, topics and partitions — and their strict readers
(re-exported by snapshot): every problem of a snapshot file at once, each naming the entry at
fault, and its fields in a fixed order for the canonical JSON."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any

from ..model import TopicPartition
from .load import PartitionLoad
from .tier import TierOffsets, read_tier

BROKER_KEYS = {
    "id",
    "rack",
    "log_dirs",
    "cordoned_log_dirs",
    "log_dir_capacity",
    "last_tiered_fetch",
}

DIR_CAPACITY_KEYS = ("log_dir", "total_bytes", "usable_bytes")


TIERED_KEYS = ("remote_storage_enable", "local_retention_bytes", "local_retention_ms")


TOPIC_KEYS = {"name", "min_insync_replicas", *TIERED_KEYS}


PARTITION_KEYS = {
    "topic",
    "partition",
    "replicas",
    "size_bytes",
    "leader",
    "isr",
    "load",
    "tier",
    "log_dirs",
}


@dataclass(frozen=True)
class BrokerEntry:
    id: int
    rack: str | None = None
    # KIP-1066 (Kafka 4.3): the broker's log dirs and its ``cordoned.log.dirs`` ("*" = all), as
    # the snapshot read them from its config; None = not recorded (older Kafka, older snapshot)
    log_dirs: tuple[str, ...] | None = None
    cordoned_log_dirs: tuple[str, ...] | None = None
    # DescribeLogDirs v4+ (Kafka 3.3+): (log dir, total bytes, usable bytes) per online dir,
    # None where the broker did not report it; None = not recorded (older snapshot)
    log_dir_capacity: tuple[tuple[str, int | None, int | None], ...] | None = None
    # KIP-1023 (Kafka 4.3+): follower.fetch.last.tiered.offset.enable, a new replica here
    # starts after the last tiered offset (snapshot.tier); None = not recorded
    last_tiered_fetch: bool | None = None

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
        if self.log_dir_capacity is not None:
            out["log_dir_capacity"] = [
                dict(zip(DIR_CAPACITY_KEYS, c, strict=True)) for c in self.log_dir_capacity
            ]
        if self.last_tiered_fetch is not None:
            out["last_tiered_fetch"] = self.last_tiered_fetch
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
    # the measurements below are named where given: two optional fields of the same shape
    # must not be mistaken for one another by position
    _: KW_ONLY
    # what it costs its brokers (snapshot.load), when the snapshot measured it
    load: PartitionLoad | None = None
    # a tiered partition's offsets and remote bytes (snapshot.tier); None: not recorded
    tier: TierOffsets | None = None
    # the log dir each replica was in (aligned with ``replicas``; None: that one not reported)
    log_dirs: tuple[str | None, ...] | None = None

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


def partition_obj(p: PartitionEntry) -> dict[str, Any]:
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
    if p.load is not None:
        out["load"] = p.load.to_json_obj()
    if p.tier is not None:
        out["tier"] = p.tier.to_json_obj()
    if p.log_dirs is not None:
        out["log_dirs"] = list(p.log_dirs)
    return out


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def read_brokers(raw: Any, problems: list[str]) -> dict[int, BrokerEntry]:
    out: dict[int, BrokerEntry] = {}
    if not isinstance(raw, list):
        problems.append("'brokers' must be a list")
        return out
    for i, b in enumerate(raw):
        where = f"brokers[{i}]"
        if not isinstance(b, dict):
            problems.append(f"{where} must be an object")
            continue
        for k in sorted(set(b) - BROKER_KEYS):
            problems.append(f"{where}: unknown key {k!r}")
        bid, rack = b.get("id"), b.get("rack")
        if not is_int(bid) or bid < 0:
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
        ltf = b.get("last_tiered_fetch")
        if ltf is not None and not isinstance(ltf, bool):
            problems.append(f"broker {bid}: 'last_tiered_fetch' must be true, false or null")
            ltf = None
        caps = read_dir_capacity(b.get("log_dir_capacity"), f"broker {bid}", problems)
        out[bid] = BrokerEntry(bid, rack, **dirs, log_dir_capacity=caps, last_tiered_fetch=ltf)
    return out


def read_dir_capacity(
    raw: Any, where: str, problems: list[str]
) -> tuple[tuple[str, int | None, int | None], ...] | None:
    """``[{"log_dir": "/d", "total_bytes": N|null, "usable_bytes": N|null}]`` read strictly:
    usable within total, each dir once."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        problems.append(f"{where}: 'log_dir_capacity' must be a list, got {raw!r}")
        return None
    out: list[tuple[str, int | None, int | None]] = []
    for c in raw:
        if not isinstance(c, dict) or set(c) - set(DIR_CAPACITY_KEYS):
            problems.append(
                f"{where}: a 'log_dir_capacity' entry must be an object with "
                f"{', '.join(DIR_CAPACITY_KEYS)}, got {c!r}"
            )
            continue
        d, total, usable = (c.get(k) for k in DIR_CAPACITY_KEYS)
        if not isinstance(d, str) or not d or any(d == o[0] for o in out):
            problems.append(f"{where}: log dir {d!r} is not a non-empty path listed once")
            continue
        bad = [
            k
            for k, v in (("total_bytes", total), ("usable_bytes", usable))
            if v is not None and (not is_int(v) or v < 0)
        ]
        if not bad and total is not None and usable is not None and usable > total:
            bad = ["usable_bytes (above total_bytes)"]
        if bad:
            problems.append(
                f"{where}: log dir {d}: {', '.join(bad)} must be a non-negative integer or null"
            )
            continue
        out.append((d, total, usable))
    return tuple(out)


def read_topics(raw: Any, problems: list[str]) -> dict[str, TopicEntry]:
    out: dict[str, TopicEntry] = {}
    if not isinstance(raw, list):
        problems.append("'topics' must be a list")
        return out
    for i, t in enumerate(raw):
        where = f"topics[{i}]"
        if not isinstance(t, dict):
            problems.append(f"{where} must be an object")
            continue
        for k in sorted(set(t) - TOPIC_KEYS):
            problems.append(f"{where}: unknown key {k!r}")
        name, misr = t.get("name"), t.get("min_insync_replicas")
        if not isinstance(name, str) or not name:
            problems.append(f"{where}: 'name' must be a non-empty string, got {name!r}")
            continue
        if misr is not None and (not is_int(misr) or misr < 1):
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
            if v is not None and (not is_int(v) or v < -2):
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


def read_partitions(
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
        for k in sorted(set(p) - PARTITION_KEYS):
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
        if not is_int(part) or part < 0:
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
        if not isinstance(reps, list) or not reps or not all(is_int(r) for r in reps):
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
        if not is_int(size) or size < 0:
            problems.append(
                f"partition {name}: 'size_bytes' must be a non-negative integer, got {size!r}"
            )
            ok = False
        leader, isr = p.get("leader"), p.get("isr")
        ok = state_ok(name, reps, leader, isr, problems) and ok
        n_problems = len(problems)
        tier = read_tier(p.get("tier"), f"partition {name}", problems)
        dirs = read_replica_dirs(p.get("log_dirs"), name, reps, problems)
        if ok and len(problems) == n_problems:
            out.append(
                PartitionEntry(
                    topic,
                    part,
                    tuple(reps),
                    size,
                    leader,
                    tuple(isr) if isr is not None else None,
                    tier=tier,
                    log_dirs=dirs,
                )
            )
    return out


def read_replica_dirs(
    raw: Any, name: str, reps: list[int], problems: list[str]
) -> tuple[str | None, ...] | None:
    """A partition's ``log_dirs``: one absolute path (or null: not reported) per replica."""
    if raw is None:
        return None
    if (
        not isinstance(raw, list)
        or len(raw) != len(reps)
        or not all(d is None or (isinstance(d, str) and d.startswith("/")) for d in raw)
    ):
        problems.append(
            f"partition {name}: 'log_dirs' must be a list of {len(reps)} absolute paths or "
            f"nulls (one per replica), got {raw!r}"
        )
        return None
    return tuple(raw)


def state_ok(name: str, reps: list[int], leader: Any, isr: Any, problems: list[str]) -> bool:
    """A partition's recorded leader and ISR: among its replicas (each problem named)."""
    ok = True
    if leader is not None and (not is_int(leader) or leader not in reps):
        problems.append(
            f"partition {name}: 'leader' must be one of its replicas {reps} or null, got {leader!r}"
        )
        ok = False
    if isr is not None:
        if not isinstance(isr, list) or not all(is_int(r) for r in isr):
            problems.append(
                f"partition {name}: 'isr' must be a list of broker ids or null, got {isr!r}"
            )
            ok = False
        elif len(set(isr)) != len(isr) or not set(isr) <= set(reps):
            problems.append(f"partition {name}: 'isr' {isr} must be distinct replicas of {reps}")
            ok = False
    return ok
