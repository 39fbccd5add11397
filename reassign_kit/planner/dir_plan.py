"""``--balance disks`` (and ``--drain-cordoned`` for a broker with some of its log dirs
cordoned) on a plan the other passes made: each broker's log dirs, shares and room read from
the snapshot, the log-dir pass (``dir_balance``) run per broker over the plan's final replica
lists, and the plan rebuilt with a log dir named for every replica of the partitions it
touches — the broker-level moves and the moves between dirs of one broker (same replicas, new
``log_dirs``). It reads only the final rows and the snapshot on the driver, so both engines —
which give the same rows — give the same dirs; per broker it is a sort and a few steps per
replica, small beside the broker-level passes.

Replicas of topics the selection leaves out count in their dir's bytes and never move. A
replica whose dir the snapshot does not record (an older snapshot) is a
refusal when its broker has more than one dir: the pass never guesses where bytes are."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from ..errors import CapacityError, UsageError
from ..model import ANY_LOG_DIR, Move, Plan, TopicPartition
from ..snapshot.entries import BrokerEntry
from ..snapshot.snapshot import Snapshot
from .dir_balance import BrokerDirPlan, DirReplica, DirSpec, balance_broker
from .params import PlanParams
from .report import PlanResult

SHOWN = 10


def wants_dirs(params: PlanParams, snap: Snapshot) -> bool:
    """The pass runs for ``--balance disks``, and for ``--drain-cordoned`` when a broker has
    some (not all) of its log dirs cordoned: the broker-level drain does not empty those."""
    if "disks" in params.balance:
        return True
    return params.drain_cordoned and any(
        b.cordoned_log_dirs and not b.cordoned for b in snap.brokers
    )


def dir_specs(b: BrokerEntry, seen: Iterable[str]) -> list[DirSpec]:
    """A broker's log dirs: its configs', those it reported bytes for, those holding its
    replicas. Weighted by total bytes when every dir reported them; dirs reporting the same
    total and usable bytes lie on one filesystem (they share its room)."""
    caps = {d: (t, u) for d, t, u in b.log_dir_capacity or ()}
    names = sorted({*(b.log_dirs or ()), *caps, *seen})
    sized = names and all(caps.get(d, (None, None))[0] for d in names)
    cordoned = set(b.cordoned_log_dirs or ())
    out = []
    for d in names:
        t, u = caps.get(d, (None, None))
        fs = (b.id, t, t - u) if t is not None and u is not None else (b.id, d)
        weight = float(t) if sized and t else 1.0
        out.append(DirSpec(d, weight, fs, "*" in cordoned or d in cordoned))
    return out


def fs_room(
    b: BrokerEntry, specs: list[DirSpec], leaving: Mapping[str, int], ceiling: float | None
) -> dict[Hashable, float]:
    """Filesystem -> the bytes it may still take under ``ceiling`` after the replicas that
    leave the broker (``leaving``: dir -> bytes); a filesystem of unknown size is not bound."""
    if not ceiling:
        return {}
    caps = {d: (t, u) for d, t, u in b.log_dir_capacity or ()}
    room: dict[Hashable, float] = {}
    for s in specs:
        t, u = caps.get(s.name, (None, None))
        if t is None or u is None:
            continue
        if s.fs not in room:
            room[s.fs] = ceiling * t - (t - u)
        room[s.fs] += leaving.get(s.name, 0)
    return room


def _replicas(
    snap: Snapshot, finals: Mapping[TopicPartition, tuple[int, ...]], selected: set[str]
) -> tuple[dict[int, list[DirReplica]], dict[int, dict[str, int]], list[str]]:
    """Per broker the replicas it holds after the plan (``now``: the snapshot's dir, None for
    a new one; a left-out topic's replica fixed), the bytes leaving each of its dirs, and
    the replicas held whose dir is unknown."""
    held: dict[int, list[DirReplica]] = {}
    leaving: dict[int, dict[str, int]] = {}
    unknown: list[str] = []
    for p in snap.partitions:
        dirs = p.log_dirs or (None,) * len(p.replicas)
        now = dict(zip(p.replicas, dirs, strict=True))
        final = finals.get(p.tp, p.replicas)
        for b in p.replicas:
            if b not in final and now[b] is not None:
                leaving.setdefault(b, {})
                leaving[b][now[b]] = leaving[b].get(now[b], 0) + p.size_bytes
        for b in final:
            d = now.get(b)
            if b in now and d is None:
                unknown.append(f"{p.tp} on broker {b}")
            held.setdefault(b, []).append(
                DirReplica(p.tp, p.size_bytes, d, fixed=p.topic not in selected)
            )
    return held, leaving, unknown


def plan_dirs(
    snap: Snapshot,
    finals: Mapping[TopicPartition, tuple[int, ...]],
    params: PlanParams,
    ceiling: float | None,
) -> dict[int, BrokerDirPlan]:
    """The pass on every broker (``finals``: the plan's replica lists, the snapshot's for the
    partitions it leaves). Refused (UsageError) when a replica's dir is not recorded on a
    broker of several dirs, or a broker that receives replicas records no dir; CapacityError
    when a replica fits in no dir under the ceiling."""
    selected = {t.name for t in snap.select(params.topic_filter)[0].topics}
    held, leaving, unknown = _replicas(snap, finals, selected)
    balance = "disks" in params.balance
    out: dict[int, BrokerDirPlan] = {}
    problems: list[str] = []
    for b in snap.brokers:
        reps = held.get(b.id, [])
        specs = dir_specs(b, {r.now for r in reps if r.now is not None})
        if len(specs) == 1:  # one dir: every replica is in it, reported or not
            reps = [dataclasses.replace(r, now=specs[0].name) if r.now is None else r
                    for r in reps]  # fmt: skip
        if not specs:
            if reps:
                problems.append(f"broker {b.id}: the snapshot records none of its log dirs")
            continue
        odd = [d.name for d in specs if not d.name.startswith("/")]
        if odd:  # a plan names log dirs by absolute path
            problems.append(f"broker {b.id}: log dir(s) {odd} are not absolute paths")
            continue
        mine = [u for u in unknown if u.endswith(f" on broker {b.id}")]
        if mine and len(specs) > 1:
            problems += [f"{u}: the snapshot does not record its log dir" for u in mine]
            continue
        room = fs_room(b, specs, leaving.get(b.id, {}), ceiling)
        out[b.id] = balance_broker(
            b.id, specs, reps, params.disk_tolerance, room, params.drain_cordoned, balance
        )
    if problems:
        raise UsageError(
            "--balance disks names a log dir for every replica and starts from the dir each "
            "is in (take the snapshot again with reassign-kit snapshot, in its JSON form): "
            + "; ".join(problems[:SHOWN])
            + (f" and {len(problems) - SHOWN} more" if len(problems) > SHOWN else "")
        )
    full = [f"broker {b}: {p}" for b, bp in sorted(out.items()) for p in bp.no_room]
    if full:
        raise CapacityError(
            full[:SHOWN],
            header=f"no log dir has room under the disk ceiling ({ceiling:.0%}) for",
        )
    return out


def with_log_dirs(
    result: PlanResult, snap: Snapshot, params: PlanParams, ceiling: float | None
) -> PlanResult:
    """``result`` with a log dir named for every replica of each move, the moves between
    dirs of one broker added, the rollback (``current``) naming each replica's dir before,
    and the report's ``disk_goal``."""
    planned = {m.tp: tuple(m.replicas) for m in result.plan}
    brokers = plan_dirs(snap, planned, params, ceiling)
    final = {(tp, b): d for b, bp in brokers.items() for tp, d in bp.placed.items()}
    by = snap.by_tp()

    def was(tp: TopicPartition, reps: tuple[int, ...]) -> tuple[str, ...]:
        p = by[tp]
        now = dict(zip(p.replicas, p.log_dirs or (None,) * len(p.replicas), strict=True))
        return tuple(now.get(b) or ANY_LOG_DIR for b in reps)

    def named(tp: TopicPartition, reps: tuple[int, ...]) -> tuple[str, ...]:
        return tuple(final.get((tp, b), ANY_LOG_DIR) for b in reps)

    moves = {m.tp: Move(m.tp, m.replicas, named(m.tp, m.replicas)) for m in result.plan}
    current = {m.tp: Move(m.tp, m.replicas, was(m.tp, m.replicas)) for m in result.current}
    for p in snap.partitions:
        if p.tp in moves or not p.log_dirs:
            continue
        dirs = named(p.tp, p.replicas)
        if any(n != ANY_LOG_DIR and n != d for n, d in zip(dirs, p.log_dirs, strict=True)):
            moves[p.tp] = Move(p.tp, p.replicas, dirs)
            current[p.tp] = Move(p.tp, p.replicas, was(p.tp, p.replicas))
    out = dataclasses.replace(
        result, plan=Plan.of(moves.values()), current=Plan.of(current.values())
    )
    out.disks = disk_report(brokers, snap, params, "disks" in params.balance)
    return out


def disk_report(
    brokers: Mapping[int, BrokerDirPlan], snap: Snapshot, params: PlanParams, goal: bool
) -> dict[str, Any]:
    """Per broker and dir: bytes before / after, share and band; the goal met or the dirs
    outside their band (exit 15); the bytes moved between dirs; brokers whose cordons are
    not known (no KIP-1066 config read: taken as none)."""
    unmet = [o for bp in brokers.values() for o in bp.outside]
    lines = []
    if unmet:
        lines.append(
            f"disks goal (each log dir within {100 * params.disk_tolerance:g}% of its share of "
            f"its broker's bytes) not met: " + ", ".join(unmet[:SHOWN])
            + (f" and {len(unmet) - SHOWN} more" if len(unmet) > SHOWN else "")
        )  # fmt: skip
    return {
        "goal": goal,
        "tolerance": params.disk_tolerance,
        "met": not unmet,
        "unmet": lines,
        "moved_bytes_between_dirs": sum(bp.moved_bytes for bp in brokers.values()),
        "cordons_unknown": sorted(b.id for b in snap.brokers if b.cordoned_log_dirs is None),
        "brokers": {
            str(b): {
                d: {
                    "before": bp.before.get(d, 0),
                    "after": bp.after.get(d, 0),
                    "share": round(bp.share[d]) if d in bp.share else None,
                }
                for d in sorted(bp.after)
            }
            for b, bp in sorted(brokers.items())
        },
    }
