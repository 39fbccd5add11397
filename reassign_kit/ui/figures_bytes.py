"""Bytes per broker and the partitions furthest behind, for the panel's figures (pure; a part
of ui/figures.py, which re-exports every name): bytes copied in / out per broker from the
journal's ``sample`` events, what the plan needs of each broker, and the table of the
partitions with the most left to copy, bounded to ``MAX_TABLE_ROWS``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..model import TopicPartition
from .figures_events import (
    DONE_EVENTS,
    MAX_TABLE_ROWS,
    as_tp,
    event_tps,
    is_final,
    num,
    sorted_events,
)

# ---------------------------------------------------------------- bytes per broker


def _remaining(ev: Mapping[str, Any]) -> dict[tuple[str, int, int], float]:
    """A ``sample`` event's bytes still to copy per (topic, partition, broker), as
    ``progress.ProgressReport.sample_event`` writes them (``remaining: [[t, p, b, n], ...]``)."""
    out: dict[tuple[str, int, int], float] = {}
    for item in ev.get("remaining") or ():
        try:
            t, p, b, n = item
            out[(str(t), int(p), int(b))] = float(n)
        except (TypeError, ValueError):
            continue
    return out


def broker_bytes(
    events: Iterable[Mapping[str, Any]],
    leaders: Mapping[TopicPartition, int] | None = None,
) -> dict[int, dict[str, float]]:
    """Bytes copied in / out per broker so far, from the journal's ``sample`` events.

    In: for each replica being built, the most it ever had left to copy minus what it has left
    now (a replica that leaves the samples counts as fully copied). Out: the same bytes,
    credited to the partition's leader (followers fetch from it), when ``leaders`` is given.
    A sample may instead carry ``brokers`` (list of ``{broker, bytes_in, bytes_out}`` or a
    mapping broker -> such a dict): the latest one is then taken as is."""
    peak: dict[tuple[str, int, int], float] = {}
    last: dict[tuple[str, int, int], float] = {}
    direct: Any = None
    routes: dict[TopicPartition, tuple[list[int], int | None]] = {}  # new brokers, source
    peak_size: dict[TopicPartition, float] = {}
    copied: dict[TopicPartition, float] = {}
    for ev in sorted_events(events):
        kind = ev.get("event")
        if kind == "submitted" and "target" in ev:
            cur = [int(b) for b in ev.get("current") or ()]
            new = [int(b) for b in ev["target"] if int(b) not in cur]
            for tp in event_tps(ev):
                src = (leaders or {}).get(tp, cur[0] if cur else None)
                routes[tp] = (new, src)
                size = num(ev.get("size_bytes"))
                if size is not None:
                    peak_size[tp] = size
            continue
        if kind in DONE_EVENTS and is_final(ev):
            for tp in event_tps(ev):
                if tp in routes and tp in peak_size:
                    copied[tp] = peak_size[tp] * len(routes[tp][0])
            continue
        if kind != "sample":
            continue
        for row in ev.get("moves") or ():
            tp = as_tp(row)
            b = num(row.get("bytes")) if isinstance(row, Mapping) else None
            if tp is not None and b is not None:
                copied[tp] = max(copied.get(tp, 0.0), b)
        if ev.get("brokers"):
            direct = ev["brokers"]
        if "remaining" in ev:
            rem = _remaining(ev)
            for k in last:
                if k not in rem:
                    rem.setdefault(k, 0.0)
            for k, n in rem.items():
                peak[k] = max(peak.get(k, 0.0), n)
            last = rem
    if direct is not None and not peak and not copied:
        return _direct_broker_bytes(direct)
    out: dict[int, dict[str, float]] = {}
    for tp, nbytes in copied.items():
        new, src = routes.get(tp, ([], None))
        for b in new:
            out.setdefault(b, {"bytes_in": 0.0, "bytes_out": 0.0})["bytes_in"] += nbytes / len(new)
        if src is not None and new:
            out.setdefault(src, {"bytes_in": 0.0, "bytes_out": 0.0})["bytes_out"] += nbytes
    for (t, p, b), top in peak.items():
        copied = max(0.0, top - last.get((t, p, b), 0.0))
        out.setdefault(b, {"bytes_in": 0.0, "bytes_out": 0.0})["bytes_in"] += copied
        src = (leaders or {}).get(TopicPartition(t, p))
        if src is not None:
            out.setdefault(src, {"bytes_in": 0.0, "bytes_out": 0.0})["bytes_out"] += copied
    return dict(sorted(out.items()))


def _direct_broker_bytes(latest: Any) -> dict[int, dict[str, float]]:
    rows: list[tuple[Any, Mapping[str, Any]]]
    if isinstance(latest, Mapping):
        rows = list(latest.items())
    else:
        rows = [(r.get("broker", r.get("id")), r) for r in latest if isinstance(r, Mapping)]
    out: dict[int, dict[str, float]] = {}
    for bid, r in rows:
        try:
            b = int(bid)
        except (TypeError, ValueError):
            continue
        bin_ = next(
            (
                num(r.get(k))
                for k in ("bytes_in", "in_bytes", "copied_in")
                if num(r.get(k)) is not None
            ),
            None,
        )
        bout = next(
            (
                num(r.get(k))
                for k in ("bytes_out", "out_bytes", "copied_out")
                if num(r.get(k)) is not None
            ),
            None,
        )
        out[b] = {"bytes_in": bin_ or 0.0, "bytes_out": bout or 0.0}
    return dict(sorted(out.items()))


def behind_from_samples(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows for ``behind_rows``: the engine's one "how far behind" model over the journal
    (``watch.progress.behind_from_events``)."""
    from ..watch.from_journal import behind_from_events

    return behind_from_events(events)


def planned_broker_bytes(
    moves: Iterable[tuple[Sequence[int], Sequence[int], int]],
) -> dict[int, dict[str, float]]:
    """Bytes each broker must receive / give up: for each (current, target, size) a new replica
    receives ``size`` and a dropped replica gives up ``size``. The plan-summary view."""
    out: dict[int, dict[str, float]] = {}
    for current, target, size in moves:
        cur, tgt = set(current), set(target)
        for b in tgt - cur:
            out.setdefault(b, {"bytes_in": 0.0, "bytes_out": 0.0})["bytes_in"] += size
        for b in cur - tgt:
            out.setdefault(b, {"bytes_in": 0.0, "bytes_out": 0.0})["bytes_out"] += size
    return dict(sorted(out.items()))


# ---------------------------------------------------------------- partitions furthest behind


_BEHIND_KEYS = ("behind_bytes", "bytes_behind", "remaining_bytes", "lag_bytes")


def _field(row: Any, name: str, default: Any = None) -> Any:
    if isinstance(row, Mapping):
        return row.get(name, default)
    return getattr(row, name, default)


def behind_rows(rows: Iterable[Any], limit: int = MAX_TABLE_ROWS) -> list[dict[str, Any]]:
    """The ``limit`` partitions furthest behind, from status / progress rows (mappings or
    objects). Rows with a measured byte lag come first (largest first), then moving rows with no
    measure; done and pending rows are left out."""
    picked: list[tuple[tuple, dict[str, Any]]] = []
    for r in rows:
        state = str(_field(r, "state", _field(r, "status", "")) or "")
        if state.lower().startswith(("done", "pending", "complete")):
            continue
        behind = next(
            (num(_field(r, k)) for k in _BEHIND_KEYS if num(_field(r, k)) is not None), None
        )
        tp = as_tp(r) or as_tp(_field(r, "tp"))
        if tp is None:
            continue
        pct = num(_field(r, "percent", _field(r, "percent_done")))
        row = {
            "partition": str(tp),
            "state": state,
            "behind_bytes": behind,
            "percent": pct,
            "detail": _field(r, "detail", _field(r, "message", "")) or "",
        }
        key = (
            0 if behind is not None else 1,
            -(behind or 0.0),
            pct if pct is not None else 101.0,
            tp,
        )
        picked.append((key, row))
    picked.sort(key=lambda kr: kr[0])
    return [r for _, r in picked[:limit]]
