"""Demotion by reorder: the recorded leader / ISR of the partitions a demoted
broker holds, and what the demoted brokers still lead after the plan, with the true reason."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from .rows import Changed


def demote_states(partitions: Iterable, demoted: frozenset) -> dict:
    """(topic, partition) -> (leader, ISR) of the partitions a demoted broker holds whose state
    the snapshot records (what a demotion needs beyond the replica order)."""
    if not demoted:
        return {}
    return {
        (p.topic, p.partition): (p.leader, p.isr)
        for p in partitions
        if (p.leader is not None or p.isr is not None) and any(b in demoted for b in p.replicas)
    }


def demoted_leading_after(
    partitions: Iterable, changed: Iterable[Changed], demoted: frozenset
) -> dict[int, int]:
    """Demoted broker -> partitions it will still lead once the plan is executed with its
    elections: a planned partition is led by its new first replica when that one is in the
    recorded ISR (or none is recorded), else by its leader as recorded; a partition the plan
    leaves is led by its recorded leader (else its first replica)."""
    target = {(t, p): new for t, p, _, new, _ in changed}
    out: dict[int, int] = {b: 0 for b in demoted}
    for p in partitions:
        new = target.get((p.topic, p.partition))
        if new is None:
            lead = p.leader if p.leader is not None else p.replicas[0]
        elif p.isr is None or new[0] in p.isr or p.leader is None:
            lead = new[0]
        else:
            lead = p.leader
        if lead in demoted:
            out[lead] += 1
    return {b: n for b, n in out.items() if n}


def _led_after(p, new: Sequence[int] | None) -> int:
    """Who leads a partition once a plan's elections ran (see ``demoted_leading_after``)."""
    if new is None:
        return p.leader if p.leader is not None else p.replicas[0]
    if p.isr is None or new[0] in p.isr or p.leader is None:
        return new[0]
    return p.leader


def demoted_left(
    partitions: Iterable,
    changed: Iterable[Changed],
    demoted: frozenset,
    excluded: Mapping[str, str],
    limit: int = 100,
) -> dict:
    """The partitions a demoted broker will still lead after the plan, each with the true
    reason: its topic is filtered out; only demoted brokers hold it; the demoted
    broker is its only in-sync replica (as the snapshot recorded the ISR). ``partitions``: the
    partitions the demoted brokers hold, of every topic (selected or not)."""
    target = {(t, p): new for t, p, _, new, _ in changed}
    rows: list[dict] = []
    why_count: dict[str, int] = defaultdict(int)
    for p in sorted(partitions, key=lambda p: (p.topic, p.partition)):
        if not p.replicas:
            continue
        if p.topic in excluded:
            lead = _led_after(p, None)
            kind, why = (
                "topic-filtered-out",
                f"topic {p.topic} is filtered out: {excluded[p.topic]}",
            )
        else:
            lead = _led_after(p, target.get((p.topic, p.partition)))
            others = [b for b in p.replicas if b not in demoted]
            if not others:
                kind, why = (
                    "only-demoted-replicas",
                    (f"only demoted brokers hold it (replicas {list(p.replicas)})"),
                )
            elif p.isr is not None and not any(b in p.isr for b in others):
                kind, why = (
                    "only-in-sync-replica",
                    (f"broker {lead} is its only in-sync replica (ISR {list(p.isr)})"),
                )
            else:
                kind, why = "not-planned", "the plan leaves it led by a demoted broker"
        if lead not in demoted:
            continue
        why_count[kind] += 1
        if len(rows) < limit:
            rows.append(
                {
                    "partition": f"{p.topic}-{p.partition}",
                    "broker": lead,
                    "reason": kind,
                    "why": why,
                }
            )
    return {"count": sum(why_count.values()), "by_reason": dict(why_count), "partitions": rows}
