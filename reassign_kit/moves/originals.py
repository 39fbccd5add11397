"""Recorded originals against the cluster: the rule a cancel and a resume both apply before
they act on an original replica list a journal or a rollback file holds (read back from a
disk, so edited, truncated, planted or another run's until the cluster says otherwise).

Pure: the cluster's state is given."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..model import PartitionState, TopicPartition


def _fmt(rs: Iterable[int]) -> str:
    return ",".join(str(r) for r in rs)


def stepped_partitions(events: Iterable[Mapping[str, Any]]) -> set[TopicPartition]:
    """The partitions a journal shows moved in KIP-435 steps: between two steps the cluster
    holds neither the original nor the target, only brokers of the two."""
    out = set()
    for e in events:
        if "topic" in e and (e.get("event") == "step_completed" or int(e.get("steps") or 1) > 1):
            out.add(TopicPartition(e["topic"], int(e["partition"])))
    return out


def originals_disagreeing(
    recorded: Mapping[TopicPartition, tuple[int, ...]],
    targets: Mapping[TopicPartition, tuple[int, ...]],
    in_flight: Mapping[TopicPartition, PartitionState],
    states: Mapping[TopicPartition, PartitionState],
    stepped: set[TopicPartition],
) -> list[str]:
    """Each recorded original (journal, rollback file) the cluster contradicts, named. Every
    broker the partition is on now (for one in flight: where its reassignment started,
    ``replicas - adding``) must be in the recorded original or the plan's target (a move,
    a KIP-455 cancel that kept an added replica, or a stepped move between steps only mix the
    two); and a move in flight that is not stepped still holds every original broker. An
    original that names a broker the partition was never on, or drops one it is on, was
    edited, truncated or planted, or belongs to another run: a cancel must not move a
    partition onto it."""
    bad = []
    for tp, orig in recorded.items():
        allowed = set(orig) | set(targets.get(tp, ()))
        if tp in in_flight:
            r = in_flight[tp]
            now = set(r.replicas) - set(r.adding)
            what = f"replicas [{_fmt(r.replicas)}] adding [{_fmt(r.adding)}]"
            # where it goes is the plan's (a step of it): not another tool's or run's move;
            # known only when the plan is (a cancel of --topics / --all has none)
            goes = set(r.replicas) - set(r.removing)
            ok = (
                now <= allowed
                and (tp not in targets or goes <= allowed)
                and (tp in stepped or set(orig) <= set(r.replicas))
            )
        elif tp in states:
            now = set(states[tp].replicas)
            what = f"replicas [{_fmt(states[tp].replicas)}]"
            ok = now <= allowed
        else:
            continue  # the partition does not exist: reported as such, nothing sent for it
        if not ok:
            bad.append(f"{tp}: recorded original [{_fmt(orig)}], the cluster has {what}")
    return bad


def journal_behind(
    events: Iterable[Mapping[str, Any]],
    targets: Mapping[TopicPartition, tuple[int, ...]],
    in_flight: Mapping[TopicPartition, PartitionState],
    throttled: bool,
) -> list[str]:
    """What the cluster shows of a run that its journal does not: a partition in flight to
    the plan's target with no record of the run sending it (its write-ahead ``intent``
    precedes every Alter), or moves in flight of a run with a throttle and no record of the
    operator's throttles (``throttle_prior`` precedes the first throttle set, which precedes
    the first Alter). Such a journal was cut or restored from an older copy: acting on it
    would lose the operator's values and the order of the originals."""
    sent, priors = set(), False
    for e in events:
        kind = e.get("event")
        if kind in ("intent", "submitted", "adopted") and "topic" in e:
            sent.add(TopicPartition(e["topic"], int(e["partition"])))
        priors = priors or kind == "throttle_prior"
    ours = [
        tp
        for tp, r in in_flight.items()
        if tp in targets and set(r.replicas) - set(r.removing) == set(targets[tp])
    ]
    bad = [f"{tp}: in flight to the plan's target, no record of it sent" for tp in ours
           if tp not in sent]  # fmt: skip
    if throttled and ours and not priors:
        bad.append("throttles set for moves in flight, no record of the operator's before")
    return bad


def recorded_dirs(
    rollbacks: Mapping[str, Iterable[Any]],
) -> tuple[dict[tuple[TopicPartition, int], str], dict[tuple[TopicPartition, int], str]]:
    """Each replica's original log dir as the rollback files (name -> their moves) recorded
    it before anything was sent ("any": not recorded), and every replica two files disagree
    on, named: such a replica is left where it is (a cancel never guesses a dir)."""
    out: dict[tuple[TopicPartition, int], str] = {}
    seen: dict[tuple[TopicPartition, int], str] = {}
    bad: dict[tuple[TopicPartition, int], str] = {}
    for name, moves in rollbacks.items():
        for m in moves:
            for b, d in zip(m.replicas, m.log_dirs or (), strict=False):
                key = (m.tp, b)
                if d == "any" or key in bad:
                    continue
                if key in out and out[key] != d:
                    bad[key] = f"{m.tp} on broker {b}: {seen[key]} says {out[key]}, {name} says {d}"
                    del out[key]
                    continue
                out[key], seen[key] = d, name
    return out, bad


def dirs_back(
    original: Mapping[tuple[TopicPartition, int], str],
    targets: Mapping[tuple[TopicPartition, int], str],
    cur: Mapping[tuple[TopicPartition, int], str],
    fut: Mapping[tuple[TopicPartition, int], str],
    tps: Iterable[TopicPartition],
    left: Iterable[TopicPartition],
) -> dict[tuple[TopicPartition, int], str]:
    """Where a cancel sends each replica of ``tps`` between log dirs (the cluster's ``cur``
    and ``fut`` dirs given): back to its recorded ``original`` dir unless there already, no
    move under way; a replica with no original recorded, moving, stays in its current dir
    (its move cancelled). A partition of ``left`` (kept at its target: its replicas there and
    each in the dir the plan names, ``targets``) is not touched."""
    want = set(tps)
    named: dict[TopicPartition, list[tuple[tuple[TopicPartition, int], str]]] = {}
    for k, d in targets.items():
        named.setdefault(k[0], []).append((k, d))
    placed = {
        tp
        for tp in set(left) & want
        if all(cur.get(k) == d and k not in fut for k, d in named.get(tp, ()))
    }
    out: dict[tuple[TopicPartition, int], str] = {}
    for key in sorted({*cur, *fut}):
        if key[0] not in want or key[0] in placed or key not in cur:
            continue  # a replica only in a future dir does not exist yet
        d = original.get(key)
        if d is not None and (cur[key] != d or key in fut):
            out[key] = d
        elif d is None and key in fut:
            out[key] = cur[key]
    return out


def dirs_contradicted(
    original: Mapping[tuple[TopicPartition, int], str],
    targets: Mapping[tuple[TopicPartition, int], str],
    cur: Mapping[tuple[TopicPartition, int], str],
) -> dict[tuple[TopicPartition, int], str]:
    """Each recorded original dir the cluster contradicts, named: a replica the plan keeps on
    its broker (a dir named for it) can only be in its original dir or the plan's; one in a
    third dir while the record names another was moved by another tool, or the record was
    edited or planted. A cancel does not move such a replica (a re-created replica, on a
    broker the plan left, lands where the broker puts it: its original is taken)."""
    return {
        key: f"{key[0]} on broker {key[1]}: recorded original dir {d}, the cluster has it in "
        f"{cur[key]} and the plan names {targets[key]}"
        for key, d in sorted(original.items())
        if key in targets
        and key in cur
        and d not in (cur[key], targets[key])
        and cur[key] != targets[key]
    }
