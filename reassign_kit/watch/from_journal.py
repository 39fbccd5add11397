"""What a run's journal says of its progress (watch/progress.py's family): its samples of
bytes copied, its KIP-435 steps, its ETA as the run computed it (``eta.RunEta``), and the
moves behind. Pure: events in, figures out."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..eta.ends import window_rates
from ..eta.estimate import ETA_WINDOW_S
from ..model import TopicPartition
from .report import ReplicaKey, Sample
from .text import number


def samples_from_events(events: Iterable[Mapping[str, Any]]) -> list[Sample]:
    """The journal's ``sample`` events, in either of two forms:

    - ``remaining: [[topic, partition, broker, bytes], ...]`` (``ProgressReport.sample_event``):
      bytes still to copy per replica;
    - ``moves: [{topic, partition, bytes, step, ...}, ...]`` (``execute.Run``): bytes copied so
      far by the step in flight; kept as (topic, partition, -step) -> -bytes, so that a drop of
      "remaining" is bytes copied and a new step starts a new series."""
    out = []
    for e in events:
        if e.get("event") != "sample" or "ts" not in e:
            continue
        rem: dict[ReplicaKey, int] = {}
        for item in e.get("remaining") or ():
            try:
                t, p, b, n = item
                rem[(str(t), int(p), int(b))] = int(n)
            except (TypeError, ValueError):
                continue
        for m in e.get("moves") or ():
            try:
                step = int(m.get("step") or 1)
                rem[(str(m["topic"]), int(m["partition"]), -max(1, step))] = -int(m["bytes"] or 0)
            except (TypeError, ValueError, KeyError, AttributeError):
                continue
        if rem:
            out.append(Sample(float(e["ts"]), rem))
    return out


def steps_from_events(events: Iterable[Mapping[str, Any]]) -> dict[TopicPartition, tuple[int, int]]:
    """Latest (step, of steps) per partition from ``step_submitted`` events; a partition's
    later plain ``submitted``/``completed`` without step fields does not erase it."""
    out: dict[TopicPartition, tuple[int, int]] = {}
    for e in events:
        if e.get("event") != "step_submitted" or "topic" not in e:
            continue
        i = e.get("step", e.get("index"))
        n = e.get("steps", e.get("total"))
        if isinstance(i, int) and isinstance(n, int):
            out[TopicPartition(e["topic"], int(e["partition"]))] = (i, n)
    return out


def rates_from_events(
    events: Iterable[Mapping[str, Any]], window_s: float = ETA_WINDOW_S
) -> dict[str, Any] | None:
    """The run's ETA as its journal's latest ``sample`` carrying one says (``eta.RunEta``):
    {ts, eta, low, high, reason, rates (per broker, over the window), total_rate, cap,
    changed (the throttle changed after it), tail}, or None without such a sample."""
    events = list(events)
    hist: list[tuple[float, dict[int, float], dict[int, float]]] = []
    last: Mapping[str, Any] | None = None
    changed_to = None
    for e in sorted(events, key=lambda e: float(e.get("ts") or 0.0)):
        if e.get("event") == "throttle_changed":
            changed_to = e.get("rate")
            continue
        if e.get("event") != "sample" or not isinstance(e.get("received"), Mapping):
            continue
        try:
            rec = {int(b): float(n) for b, n in e["received"].items()}
            busy = {int(b): float(n) for b, n in (e.get("busy") or {}).items()}
            hist.append((float(e["ts"]), rec, busy))
            last, changed_to = e, None
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
    if last is None:
        return None
    rates, _ = window_rates(hist[:-1], hist[-1], window_s)
    cap = changed_to if changed_to is not None else last.get("throttle")
    rng = last.get("eta_range_s")
    eta = number(last.get("eta_s"))
    low, high = (
        (number(rng[0]), number(rng[1]))
        if isinstance(rng, list | tuple) and len(rng) == 2
        else (eta, eta)
    )
    return {
        "ts": float(last["ts"]),
        "eta": eta,
        "low": low if low is not None else eta,
        "high": high if high is not None else eta,
        "reason": last.get("eta_reason") if isinstance(last.get("eta_reason"), str) else None,
        "rates": rates,
        "total_rate": number(last.get("rate_bps")),
        "cap": float(cap) if isinstance(cap, int | float) and cap else None,
        "changed": changed_to is not None,
        "tail": float(number(last.get("tail_s")) or 0.0),
        "bytes_left": number(last.get("bytes_left")),
    }


def event_tp(e: Mapping[str, Any]) -> TopicPartition | None:
    try:
        return TopicPartition(str(e["topic"]), int(e["partition"]))
    except (KeyError, TypeError, ValueError):
        return None


def behind_from_events(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """How far behind each moving partition is, from a journal's latest ``sample``: bytes it
    still has to copy (summed over its new replicas) and the percentage copied so far; one
    row per partition (``topic``, ``partition``, ``state``, ``behind_bytes``, ``percent``,
    ``detail``). Both sample forms count: ``remaining`` per replica
    (``ProgressReport.sample_event``) and ``moves`` with bytes copied (``Run``'s samples,
    against the partition's size times its new replicas). Finished moves are left out."""
    peak: dict[TopicPartition, float] = {}
    latest: dict[tuple[str, int, int], float] = {}
    finished: set[TopicPartition] = set()
    moves_rows: dict[TopicPartition, Mapping[str, Any]] = {}
    n_new: dict[TopicPartition, int] = {}
    for e in sorted(events, key=lambda e: float(e.get("ts") or 0.0)):
        kind, tp = e.get("event"), event_tp(e)
        if kind == "submitted" and "target" in e and tp is not None:
            cur = set(e.get("current") or ())
            n_new[tp] = max(1, len([b for b in e["target"] if b not in cur]))
        if kind == "sample" and "moves" in e:
            moves_rows = {
                t: row
                for row in e.get("moves") or ()
                if isinstance(row, Mapping) and (t := event_tp(row)) is not None
            }
        if kind == "sample" and "remaining" in e:
            latest = {}
            for item in e.get("remaining") or ():
                try:
                    t, p, b, n = item
                    latest[(str(t), int(p), int(b))] = float(n)
                except (TypeError, ValueError):
                    continue
            per: dict[TopicPartition, float] = {}
            for (t, p, _b), n in latest.items():
                per[TopicPartition(t, p)] = per.get(TopicPartition(t, p), 0.0) + n
            for t, n in per.items():
                peak[t] = max(peak.get(t, 0.0), n)
        elif tp is not None and (
            (kind == "completed" and not is_intermediate_step(e)) or kind in ("cancelled", "failed")
        ):
            finished.add(tp)
    per_tp: dict[TopicPartition, list[tuple[int, float]]] = {}
    for (t, p, b), n in latest.items():
        per_tp.setdefault(TopicPartition(t, p), []).append((b, n))
    rows = []
    for tp, row in moves_rows.items():
        if tp in finished or tp in per_tp:
            continue
        size, got = number(row.get("size")), number(row.get("bytes"))
        if size is None or got is None:
            continue
        want = size * n_new.get(tp, 1)
        step = row.get("step")
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "state": "moving",
                "behind_bytes": max(0.0, want - got),
                "percent": 100.0 * got / want if want else None,
                "detail": f"step {step}" if step else "",
            }
        )
    for tp, reps in per_tp.items():
        if tp in finished:
            continue
        left = sum(n for _, n in reps)
        top = peak.get(tp, 0.0)
        behind = sorted(b for b, n in reps if n > 0)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "state": "moving" if left else "catching up",
                "behind_bytes": left,
                "percent": (100.0 * (1 - left / top)) if top else None,
                "detail": f"new replica(s) on broker(s) {behind} behind" if behind else "",
            }
        )
    return rows


def is_intermediate_step(e: Mapping[str, Any]) -> bool:
    """A ``completed`` of an intermediate step does not finish the move."""
    if e.get("final") is False:
        return True
    step, steps = e.get("step"), e.get("steps")
    return isinstance(step, int) and isinstance(steps, int) and step < steps
