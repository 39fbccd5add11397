"""One status for the panel, derived from the run's lifecycle (pure but for ``run_lifecycle``,
which only reads the Run).

The header, the progress line and the charts' title all come from one ``Status`` built here, so
they can never disagree: one percentage (bytes copied of the bytes the plan copies), and a
line that says only what holds in the state the run is in — a countdown only while it runs,
"paused at 35%" when paused, "done in 1m02s" at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..watch.disk_waits import DiskWaits
from ..watch.text import eta_range_text
from .controls import phase_after_run
from .figures import duration, human_bytes

# the run's lifecycle (the same names in the panel, the journal, the CLI and the API)
LIFECYCLE = (
    "starting",
    "running",
    "pausing",
    "paused",
    "stopping",
    "cancelling",
    "done",
    "cancelled",
    "failed",
)
# states in which the run is still under way (the panel keeps refreshing)
ACTIVE = frozenset({"starting", "running", "pausing", "paused", "stopping", "cancelling"})
# states in which a countdown is meaningful
COUNTING = frozenset({"running"})
FINAL = frozenset({"done", "cancelled", "failed", "stopped"})


def run_lifecycle(run: Any, asked: str | None = None) -> str:
    """The run's lifecycle state now. The ONE place that reads it: the run's own ``lifecycle``
    when it has one, else derived from what ``Run`` exposes (its ``state``, whether it is
    paused, whether a stop or a cancel was asked, its result). ``asked`` is the panel button
    that ended the run ("stop" / "cancel"), for a result that does not say which."""
    own = getattr(run, "lifecycle", None)
    if callable(own):
        own = own()
    if isinstance(own, str) and own:
        return str(getattr(own, "value", own))
    result = run.wait(0) if hasattr(run, "wait") else None
    if result is not None:
        return final_state(getattr(result, "state", None), asked)
    state = getattr(run, "state", "")
    if state == "created":
        return "starting"
    stop = getattr(run, "_stop", None)
    if stop is not None and stop.is_set():
        return "cancelling" if getattr(run, "_cancel_on_stop", False) else "stopping"
    if getattr(run, "_paused", False):
        return "paused"
    return "running"


def final_state(state: str | None, asked: str | None = None) -> str:
    """A finished run's lifecycle state from its result's state (done / stopped / deadline /
    cancelled / failed); a run stopped by the panel's Cancel is cancelled."""
    return phase_after_run(state or "", asked)


def rate(bps: float | None) -> str:
    """A byte rate in the panel's one unit convention (MiB/s etc.)."""
    if bps is None:
        return "rate not measured yet"
    return human_bytes(float(bps)) + "/s"


@dataclass(frozen=True)
class Status:
    """What the panel says about the run now."""

    state: str  # a LIFECYCLE name, or "ready" / "stopped" / "invalid" outside a run
    percent: float  # bytes copied / bytes the plan copies (0..100)
    copied: float
    total: float
    rate_bps: float | None = None
    eta_s: float | None = None
    eta_range_s: tuple[float, float] | None = None
    eta_reason: str | None = None
    eta_label: str | None = None  # the run's own ETA text (the journal's, the CLI's)
    eta_ts: float | None = None  # when the ETA was measured: the finish time is counted from it
    elapsed_s: float | None = None
    done_moves: int = 0
    moves: int = 0
    error: str | None = None
    disk_wait: str | None = None  # watch.disk_waits: a move held for space, a dir over
    stuck: str | None = None  # the first stuck move and its reason (a target broker down)

    @property
    def line(self) -> str:
        """The progress line: only what holds in this state."""
        pct = f"{self.percent:.0f}%"
        amount = f"{human_bytes(self.copied)} of {human_bytes(self.total)} copied"
        moves = f"{self.done_moves}/{self.moves} moves done"
        s = self.state
        if s in ("ready", "invalid"):
            return f"not started: {human_bytes(self.total)} to copy in {self.moves} moves"
        if s == "starting":
            return "starting: reading the cluster, writing the journal"
        if s == "running":
            line = f"running: {pct}, {amount}, {moves}, {rate(self.rate_bps)}, {self.eta_text()}"
            waits = [w for w in (self.stuck, self.disk_wait) if w]
            return "; ".join([line, *waits])
        if s in ("paused", "pausing"):
            return (
                f"paused at {pct} ({amount}, {moves}): nothing new is submitted; moves in "
                "flight go on (throttled)"
            )
        if s == "stopping":
            return f"stopping at {pct} ({amount}): moves in flight finish, nothing new starts"
        if s == "cancelling":
            return f"cancelling at {pct} ({amount}): moves in flight go back to their originals"
        took = duration(self.elapsed_s)
        if s == "done":
            return f"done in {took}: {human_bytes(self.total)} copied, {moves}"
        if s == "cancelled":
            return f"cancelled at {pct} after {took} ({amount}, {moves})"
        if s == "stopped":
            return f"stopped at {pct} after {took} ({amount}, {moves})"
        if s == "failed":
            why = f": {self.error}" if self.error else ""
            return f"failed at {pct} after {took} ({amount}){why}"
        return f"{s}: {pct} ({amount})"

    def eta_text(self) -> str:
        """``ETA 0m49s [0m41s–1m02s], finish 06:45:29 UTC [...]``: the same words as the paced
        CLI's line and the API's summary (watch.progress.eta_range_text)."""
        if self.eta_s is None and self.eta_label:
            return f"ETA {self.eta_label}"
        lo, hi = self.eta_range_s if self.eta_range_s is not None else (None, None)
        return eta_range_text(self.eta_s, self.eta_reason, lo, hi, self.eta_ts)

    @property
    def header(self) -> str:
        """The chart's title: the same percentage as the line."""
        if self.state in ("ready", "invalid"):
            return f"plan: {human_bytes(self.total)} to copy in {self.moves} moves (not started)"
        return (
            f"plan progress: {self.percent:.0f}% done ({human_bytes(self.copied)} of "
            f"{human_bytes(self.total)}; {self.done_moves}/{self.moves} moves), {self.state}"
        )


def _range(sample: Mapping[str, Any]) -> tuple[float, float] | None:
    r = sample.get("eta_range_s")
    if isinstance(r, Sequence) and not isinstance(r, str) and len(r) == 2:
        lo, hi = r
        if isinstance(lo, int | float) and isinstance(hi, int | float):
            return float(lo), float(hi)
    return None


def status_of(
    state: str,
    events: Sequence[Mapping[str, Any]],
    plan_bytes: float,
    moves: int,
    now: float,
    error: str | None = None,
) -> Status:
    """The status in ``state`` from the run's journal events so far: bytes from its latest
    ``sample`` (a done run copied everything), moves done from ``completed`` events, time from
    ``run_started`` to ``run_finished`` (or now)."""
    sample: Mapping[str, Any] | None = None
    started = finished = None
    done: set[tuple[str, int]] = set()
    waits = DiskWaits()
    stuck: dict[tuple[Any, Any], str] = {}  # (topic, partition) -> why, until it ends
    for e in events:
        waits.fold(e)
        kind = e.get("event")
        _fold_stuck(stuck, e)
        if kind == "sample":
            sample = e
        elif kind == "run_started" and started is None:
            started = float(e.get("ts") or 0.0)
        elif kind == "run_finished":
            finished = float(e.get("ts") or 0.0)
        elif kind == "completed" and e.get("final") is not False:
            step, steps = e.get("step"), e.get("steps")
            if isinstance(step, int) and isinstance(steps, int) and step < steps:
                continue
            done.add((str(e.get("topic")), int(e.get("partition") or 0)))
    total = float(plan_bytes)
    copied = 0.0
    if sample is not None and isinstance(sample.get("bytes_total"), int | float):
        total = float(sample["bytes_total"]) or total
        left = sample.get("bytes_left")
        copied = max(0.0, total - float(left)) if isinstance(left, int | float) else 0.0
    if state == "done":
        copied = total
    pct = 100.0 if state == "done" else (100.0 * copied / total if total else 0.0)
    end = finished if finished is not None and state in FINAL else now
    elapsed = (end - started) if started is not None else None
    counting = state in COUNTING and sample is not None
    return Status(
        state=state,
        percent=min(100.0, pct),
        copied=copied,
        total=total,
        rate_bps=sample.get("rate_bps") if counting and sample else None,
        eta_s=sample.get("eta_s") if counting and sample else None,
        eta_range_s=_range(sample) if counting and sample else None,
        eta_reason=sample.get("eta_reason") if counting and sample else None,
        eta_label=str(sample["eta"]) if counting and sample and sample.get("eta") else None,
        eta_ts=float(sample["ts"]) if counting and sample and sample.get("ts") else None,
        elapsed_s=elapsed,
        done_moves=len(done),
        moves=moves,
        error=error,
        disk_wait=waits.line() if state == "running" else None,
        stuck=_stuck_line(stuck) if state == "running" else None,
    )


def _fold_stuck(stuck: dict[tuple[Any, Any], str], e: Mapping[str, Any]) -> None:
    """A ``stuck`` event's move and reason kept until the move ends (or the run does)."""
    kind, tp = e.get("event"), (e.get("topic"), e.get("partition"))
    if kind == "stuck" and e.get("topic") is not None:
        stuck[tp] = str(e.get("reason") or f"no progress for {e.get('no_progress_s')} s")
    elif kind in ("cancelled", "failed") or (kind == "completed" and e.get("final") is not False):
        stuck.pop(tp, None)
    elif kind == "run_finished":
        stuck.clear()


def _stuck_line(stuck: Mapping[tuple[Any, Any], str]) -> str | None:
    """ "a-0 stuck: target broker 4 is down since 12:03:07 (...); 1 more stuck", or None."""
    if not stuck:
        return None
    (topic, partition), why = next(iter(stuck.items()))
    more = f"; {len(stuck) - 1} more stuck" if len(stuck) > 1 else ""
    return f"{topic}-{partition} stuck: {why}{more}"
