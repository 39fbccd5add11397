"""Where a partition's bytes are (tiered storage, KIP-405) and what a move copies.

A partition of a tiered topic keeps its old segments in remote storage and only its newest
ones on the leader's disk. A new replica does not fetch the remote part: the leader answers
its first fetch below the local log start with OFFSET_MOVED_TO_TIERED_STORAGE, the follower
rebuilds its state (leader epochs, producer snapshot) from the remote storage and copies the
leader's local log only. With KIP-1023 (``follower.fetch.last.tiered.offset.enable`` on the
new replica's broker, Kafka 4.3+) it starts after the last tiered offset and copies only what
is not yet in remote storage.

``TierOffsets`` are the ListOffsets answers the snapshot records for a tiered partition: log
start (earliest, remote included), local log start (earliest-local, KIP-405), the last tiered
offset (KIP-1005; -1: nothing tiered yet) and the log end; ``remote_bytes`` is estimated from
them and the leader's local bytes (the local log's bytes per offset). ``move_bytes`` is the one
function every count of a move's bytes uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..errors import KafkaOperationError

TIER_KEYS = ("log_start", "local_log_start", "tiered", "log_end", "remote_bytes")


@dataclass(frozen=True)
class TierOffsets:
    """A tiered partition's offsets as its leader listed them (None: not listed, e.g. a
    release without KIP-1005's latest-tiered spec)."""

    log_start: int | None = None
    local_log_start: int | None = None
    tiered: int | None = None
    log_end: int | None = None
    remote_bytes: int | None = None

    def to_json_obj(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in TIER_KEYS if getattr(self, k) is not None}


@dataclass(frozen=True)
class MoveBytes:
    """What one new replica of a partition costs: ``copied`` over the replication link (what
    the replication throttle paces, what the what-if and the ETA count) and ``remote_catchup``,
    read by the new replica from remote storage rather than from the leader (its auxiliary
    state; zero for an untiered topic). ``total`` is the partition's whole size, local and
    remote, what a tool blind to tiering would count."""

    copied: int
    remote_catchup: int
    total: int


# the auxiliary state a follower reads from remote storage before it fetches (leader-epoch
# checkpoint and producer snapshot of one segment): small and fixed beside the segments
REMOTE_AUX_BYTES = 64 * 1024


def estimate_remote_bytes(local_bytes: int, t: TierOffsets) -> int | None:
    """Bytes below the local log start (only in remote storage), at the local log's bytes per
    offset; None when the offsets needed are missing or inconsistent (nothing is guessed)."""
    if t.log_start is None or t.local_log_start is None or t.log_end is None:
        return None
    local_n = t.log_end - t.local_log_start
    remote_n = t.local_log_start - t.log_start
    if local_n <= 0 or remote_n < 0 or local_bytes < 0:
        return 0 if remote_n == 0 else None
    return round(local_bytes * remote_n / local_n)


def move_bytes(
    size_bytes: int,
    tier: TierOffsets | None,
    remote_storage: bool,
    last_tiered_fetch: bool = False,
) -> MoveBytes:
    """The bytes a new replica of a partition copies. ``size_bytes``: the leader's local log
    (DescribeLogDirs); ``tier``: its offsets (None: not recorded); ``remote_storage``: its
    topic's remote.storage.enable; ``last_tiered_fetch``: KIP-1023 on the new replica's broker.

    Untiered (or offsets unknown): the whole local log. Tiered: the local log from the local
    log start, or, under KIP-1023, from the offset after the last tiered one (at the local
    log's bytes per offset), plus the remote catch-up term."""
    size = max(0, int(size_bytes))
    if not remote_storage or tier is None:
        return MoveBytes(size, 0, size)
    remote = tier.remote_bytes or 0
    copied = size
    if (
        last_tiered_fetch
        and tier.tiered is not None
        and tier.tiered >= 0
        and tier.local_log_start is not None
        and tier.log_end is not None
        and tier.log_end > tier.local_log_start
    ):
        untiered = max(0, tier.log_end - max(tier.tiered + 1, tier.local_log_start))
        copied = min(size, round(size * untiered / (tier.log_end - tier.local_log_start)))
    tiered_any = tier.tiered is not None and tier.tiered >= 0  # offset 0 tiered counts
    catchup = REMOTE_AUX_BYTES if (remote > 0 or tiered_any) else 0
    return MoveBytes(copied, catchup, size + remote)


def read_tier(raw: Any, where: str, problems: list[str]) -> TierOffsets | None:
    """A partition's ``tier`` object, strictly: non-negative integers (``tiered`` may be -1,
    nothing tiered yet), known keys only; every problem named with ``where``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"{where}: 'tier' must be an object, got {type(raw).__name__}")
        return None
    for k in sorted(set(raw) - set(TIER_KEYS)):
        problems.append(f"{where}: unknown key {k!r} in 'tier'")
    vals: dict[str, int] = {}
    for k in TIER_KEYS:
        v = raw.get(k)
        if v is None:
            continue
        low = -1 if k == "tiered" else 0
        if not isinstance(v, int) or isinstance(v, bool) or v < low:
            problems.append(f"{where}: tier {k!r} must be an integer >= {low}, got {v!r}")
            continue
        vals[k] = v
    t = TierOffsets(**vals)
    order = [x for x in (t.log_start, t.local_log_start, t.log_end) if x is not None]
    if order != sorted(order):
        problems.append(
            f"{where}: tier offsets out of order (log_start <= local_log_start <= log_end)"
        )
    return t


# the broker config of KIP-1023 (Kafka 4.3+), read per broker into the snapshot
LAST_TIERED_FETCH = "follower.fetch.last.tiered.offset.enable"
# the topic config of KIP-405
REMOTE_ENABLE = "remote.storage.enable"


def last_tiered_fetch_of(cfg: dict[str, str]) -> bool | None:
    """KIP-1023 on a broker as its configs say; None when the broker does not know it."""
    v = cfg.get(LAST_TIERED_FETCH)
    return None if v is None else str(v).strip().lower() == "true"


def with_tiers(gateway: Any, parts: Sequence[Any], tiered_topics: set[str]) -> list[Any]:
    """The partitions of tiered topics with their offsets (one ListOffsets round per spec)
    and remote bytes estimated from them; the others as they are. Offsets that cannot be
    read leave the partition without (the copied bytes then count its whole local log)."""
    tps = [p.tp for p in parts if p.topic in tiered_topics]
    if not tps:
        return list(parts)
    try:
        offsets = gateway.tier_offsets(tps)
    except KafkaOperationError:
        return list(parts)
    out = []
    for p in parts:
        got = offsets.get(p.tp) if p.topic in tiered_topics else None
        if not got:
            out.append(p)
            continue
        problems: list[str] = []
        # checked as a snapshot file's tier is: offsets a broker gave out of order (a
        # truncation between two ListOffsets rounds) are not recorded, never written
        t = read_tier({k: got[k] for k in TIER_KEYS if k in got}, str(p.tp), problems)
        if t is None or problems:
            out.append(p)
            continue
        out.append(replace(p, tier=replace(t, remote_bytes=estimate_remote_bytes(p.size_bytes, t))))
    return out


def move_bytes_of(snapshot: Any) -> dict[Any, MoveBytes]:
    """Per partition of ``snapshot`` the bytes a new replica of it copies (``move_bytes``).
    KIP-1023 counts only when every broker has it on: where the new replica lands is not
    known here, and a broker without it copies the whole local log."""
    remote = {t.name for t in snapshot.topics if t.remote_storage_enable}
    brokers = list(snapshot.brokers)
    kip1023 = bool(brokers) and all(b.last_tiered_fetch is True for b in brokers)
    return {
        p.tp: move_bytes(p.size_bytes, p.tier, p.topic in remote, kip1023)
        for p in snapshot.partitions
    }


def copied_sizes(gateway: Any, sizes: Mapping[Any, int]) -> dict[Any, int]:
    """Live partition sizes (``cluster.views.partition_sizes``: local logs) as the bytes a
    move copies: the same unless KIP-1023 is on on every live broker, when a tiered
    partition's size becomes what lies after its last tiered offset (``move_bytes``). Reads
    the brokers' configs first (one round): nothing more is asked of a cluster without it.
    Anything that cannot be read leaves the sizes as they are (never a guess below them)."""
    out = dict(sizes)
    if not out:
        return out
    try:
        brokers = [b.id for b in gateway.brokers()]
        cfgs = gateway.broker_configs(brokers)
        if not brokers or not all(last_tiered_fetch_of(cfgs.get(b, {})) for b in brokers):
            return out
        topics = sorted({tp.topic for tp in out})
        tcfg = gateway.topic_configs(topics)
        remote = {
            t for t in topics if str(tcfg.get(t, {}).get(REMOTE_ENABLE, "")).lower() == "true"
        }
        offsets = gateway.tier_offsets([tp for tp in out if tp.topic in remote])
    except KafkaOperationError:
        return out
    for tp, got in offsets.items():
        if tp in out and got:
            t = TierOffsets(**{k: got[k] for k in TIER_KEYS if k in got})
            out[tp] = move_bytes(out[tp], t, True, last_tiered_fetch=True).copied
    return out


def tier_columns(partitions: Sequence[Any]) -> dict[str, Any]:
    """The partitions' tier offsets as nullable ``tier_<key>`` int64 columns of the Parquet
    form (all null: none recorded)."""
    import pyarrow as pa

    tiers = [p.tier for p in partitions]
    return {
        f"tier_{k}": pa.array([None if t is None else getattr(t, k) for t in tiers], pa.int64())
        for k in TIER_KEYS
    }


def tier_of_row(row: dict[str, Any]) -> dict[str, Any]:
    """A Parquet partition row: its ``tier_<key>`` columns (absent in older snapshots, null
    where not recorded) back into the JSON form's ``tier`` object, read as strictly."""
    cols = {k: row.pop(f"tier_{k}", None) for k in TIER_KEYS}
    vals = {k: v for k, v in cols.items() if v is not None}
    if vals:
        row["tier"] = vals
    return row
