"""The panel's words (pure): a run's result, a verify, the partitions behind, the state a
journal alone implies, the moves-over-time series drawn up to now."""

from __future__ import annotations

import html
from typing import Any

from . import figures, status


def state_from_events(events: list[dict[str, Any]]) -> str | None:
    """A run's state from its journal alone (a panel shown beside a run it did not start)."""
    state = None
    for e in events:
        kind = e.get("event")
        if kind == "run_started":
            state = "running"
        elif kind == "paused" and state:
            state = "paused"
        elif kind == "resumed" and state:
            state = "running"
        elif kind == "run_finished":
            state = status.final_state(e.get("state"))
    return state


def up_to(p: figures.ProgressSeries, now: float | None) -> figures.ProgressSeries:
    """The moves-over-time series drawn up to ``now`` (the run goes on: the last counts hold
    until the next event)."""
    if now is None or not p.t or p.t0 is None or now - p.t0 <= p.t[-1]:
        return p
    return figures.ProgressSeries(
        t=[*p.t, now - p.t0],
        done=[*p.done, p.done[-1]],
        moving=[*p.moving, p.moving[-1]],
        pending=[*p.pending, p.pending[-1]],
        cancelled=[*p.cancelled, p.cancelled[-1]],
        total=p.total,
        t0=p.t0,
    )


def table_html(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<i>no partition is behind</i>"
    head = "<tr><th>partition</th><th>state</th><th>behind</th><th>%</th><th>detail</th></tr>"
    body = "".join(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
            html.escape(r["partition"]),
            html.escape(r["state"]),
            figures.human_bytes(r["behind_bytes"]) if r["behind_bytes"] is not None else "?",
            f"{r['percent']:.0f}" if r["percent"] is not None else "",
            html.escape(str(r["detail"])[:80]),
        )
        for r in rows
    )
    return f'<table style="font-size:12px">{head}{body}</table>'


def result_state(result: Any) -> str:
    if result is None:
        return "failed"
    for attr in ("state", "status", "outcome"):
        v = getattr(result, attr, None)
        if isinstance(v, str):
            return v
    return "failed"


def result_error(result: Any) -> Any:
    return getattr(result, "error", None) if result is not None else None


def describe_result(result: Any) -> str:
    state = result_state(result)
    msg = getattr(result, "message", None) or getattr(result, "summary", None)
    text = f"run {state}" + (f": {msg}" if isinstance(msg, str) and msg else "")
    cancelled = list(getattr(result, "cancelled", None) or [])
    rolling = list(getattr(result, "rolling_back", None) or [])
    if cancelled or rolling:  # a cancel: what came back, per partition
        text += "; rolled back to their original replicas: " + (
            ", ".join(map(str, cancelled[:20])) or "none"
        )
        if rolling:
            text += "; NOT back yet (rollback in flight, throttled): " + ", ".join(
                map(str, rolling[:20])
            )
    el = getattr(result, "elections", None) or {}
    if el:  # preferred leader elections (run/elections.py) and the check after them
        text += (
            f"; preferred leaders: {el.get('elected', 0)} elected, {el.get('not_needed', 0)} "
            f"not needed, {el.get('failed', 0)} failed"
        )
        off = getattr(result, "leaders_not_preferred", None) or {}
        if off:
            text += "; NOT led by their preferred replica: " + ", ".join(
                f"{tp} ({why})" for tp, why in list(off.items())[:10]
            )
    return text


def describe_verify(result: Any) -> str:
    lines = getattr(result, "lines", None)
    if callable(lines):
        text = list(lines())
        verdict = {
            True: "verify: done, every move of the plan is complete",
            False: "verify: NOT complete",
        }.get(verify_complete(result), "verify:")
        return "\n".join(
            [verdict, *text[:30], *([f"... {len(text) - 30} more lines"] if len(text) > 30 else [])]
        )
    for attr in ("message", "summary", "text"):
        v = getattr(result, attr, None)
        if isinstance(v, str) and v:
            return v
    return str(result)


def verify_complete(result: Any) -> bool | None:
    """Whether a verify result says every move of the plan is complete (None: not verified)."""
    if result is None:
        return None
    for attr in ("complete", "done", "ok", "is_complete"):
        v = getattr(result, attr, None)
        if isinstance(v, bool):
            return v
        if callable(v):
            try:
                out = v()
            except TypeError:
                continue
            if isinstance(out, bool):
                return out
    code = getattr(result, "exit_code", None)
    return code == 0 if isinstance(code, int) else None


def summary_html(s: figures.PlanSummary) -> str:
    """The plan in a line (moves, bytes, leader changes, brokers) and its validation verdict,
    the first 20 problems listed."""
    verdict = (
        '<span style="color:#1b5e20">valid</span>'
        if s.valid
        else '<span style="color:#b00020">INVALID: nothing will be sent</span>'
    )
    probs = "".join(f"<li>{html.escape(p)}</li>" for p in s.problems[:20])
    more = f"<li>… {len(s.problems) - 20} more</li>" if len(s.problems) > 20 else ""
    return (
        f"<b>plan</b> {s.moves} partition moves, {s.replica_moves} replicas to copy "
        f"({figures.human_bytes(s.bytes_to_move)}), {s.leader_changes} leader changes, "
        f"brokers touched: {', '.join(map(str, s.brokers_touched)) or 'none'}; validation: {verdict}"
        + (f"<ul>{probs}{more}</ul>" if probs else "")
    )
