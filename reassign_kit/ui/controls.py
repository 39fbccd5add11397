"""Which panel buttons and controls make sense in which phase of a run (pure, so it is
unit-tested alone).

The panel has one phase at a time; every button's ``disabled`` flag is derived from it here and
nowhere else, so a button can never be clickable in a phase where its action would be refused.
"""

from __future__ import annotations

from ..run.options import live_options

BUTTONS = ("execute", "resume_run", "pause", "resume", "stop", "cancel", "verify")

# phase -> buttons enabled in it
_ENABLED: dict[str, frozenset[str]] = {
    "invalid": frozenset(),  # the plan failed validation: nothing may be sent
    "ready": frozenset({"execute", "verify"}),
    "running": frozenset({"pause", "stop", "cancel"}),
    "paused": frozenset({"resume", "stop", "cancel"}),
    "starting": frozenset({"pause", "stop", "cancel"}),
    "pausing": frozenset({"resume", "stop", "cancel"}),
    "stopping": frozenset(),  # stop / cancel asked, waiting for the worker to leave
    "cancelling": frozenset(),
    "verifying": frozenset(),
    "done": frozenset({"verify"}),
    "cancelled": frozenset({"execute", "verify"}),
    # moves in flight go on (throttled): a fresh Execute would collide with them, so only
    # Resume-from-journal (adopts them) or Verify
    "stopped": frozenset({"verify"}),
    "failed": frozenset({"execute", "verify"}),
}

# phases in which a run may be resumed from its journal (when there is one for the plan)
_RESUMABLE = frozenset({"ready", "cancelled", "stopped", "failed"})

# controls that stay editable while a run goes on: caps the executor re-reads at its next
# scheduling decision (``Run.set_caps``), as KIP-435's dynamic configs
LIVE_CONTROLS = live_options()  # declared with the options (run/options.py)
# ... and two more the run can change: the throttle (``Run.set_throttle``, a run started with
# one) and the batch size N (``Run.set_caps``, within its pacing mode)
RUN_CONTROLS = (*LIVE_CONTROLS, "throttle", "batch_size")
RUNNING = frozenset({"starting", "running", "pausing", "paused"})

# why a control is locked while a run goes on (shown on hover)
LOCK_REASONS: dict[str, str] = {
    "incremental": "the pacing mode (one request / batches / incremental) is fixed for a run",
    "poll_interval_ms": "the run's loop period is fixed when it starts",
    "order": "the order of the moves is fixed when the run starts",
    "move_deadline": "deadlines are fixed when the run starts",
    "run_deadline": "deadlines are fixed when the run starts",
    "stuck_after": "fixed when the run starts",
    "on_deadline": "fixed when the run starts",
    "additional": "checked once, before the first submission",
    "elect_leaders": "fixed for the run (elections / poll can change)",
    "pace": "the pace (static / adaptive) is fixed when the run starts",
    "slo_produce_p99": "the adaptive pace's objective is fixed when the run starts",
    "throttle_floor": "the adaptive pace's floor is fixed when the run starts",
    "throttle": "this run started without a throttle: Stop, then Resume from journal or "
    "Execute with one",
    "batch_size": "one-request (legacy) runs have no batch size to change",
}
BUSY_REASON = "the run is ending (stop / cancel in progress)"

PHASES = tuple(_ENABLED)


def enabled_buttons(phase: str, resumable: bool = False) -> frozenset[str]:
    """The buttons a user may press in ``phase`` (unknown phases enable nothing);
    ``resumable``: a journal of an unfinished run of this plan exists."""
    on = _ENABLED.get(phase, frozenset())
    if resumable and phase in _RESUMABLE:
        on = on | {"resume_run"}
    elif phase == "stopped":  # no journal to resume from: a new run is all that is left
        on = on | {"execute"}
    return on


def editable_controls(
    phase: str,
    names: tuple[str, ...] | list[str],
    throttled: bool = False,
    batched: bool = False,
) -> frozenset[str]:
    """The pacing controls a user may change in ``phase``: all before a run; while one runs
    or is paused, what the run can change (the live caps, the throttle of a run started with
    one, the batch size of a batched run); none otherwise."""
    if phase in ("ready", "cancelled", "stopped", "failed"):
        return frozenset(names)
    if phase in RUNNING:
        live = set(LIVE_CONTROLS) | ({"throttle"} if throttled else set())
        live |= {"batch_size"} if batched else set()
        return frozenset(n for n in names if n in live)
    return frozenset()


def lock_reasons(phase: str) -> dict[str, str]:
    """Why each control that is locked in ``phase`` is."""
    if phase in RUNNING:
        return dict(LOCK_REASONS)
    if phase == "invalid":
        return {}
    return dict.fromkeys(LOCK_REASONS, BUSY_REASON) | dict.fromkeys(LIVE_CONTROLS, BUSY_REASON)


def phase_after_run(state: str, asked: str | None = None) -> str:
    """Panel phase for the final state a Run reports (done / stopped / deadline / failed ...);
    ``asked`` is the button that ended it ("stop" or "cancel"), since both end as "stopped"."""
    s = (state or "").lower()
    if s in ("done", "complete", "completed", "finished", "succeeded", "success"):
        return "done"
    if s in ("cancelled", "canceled"):
        return "cancelled"
    if s in ("stopped", "interrupted", "deadline"):
        return "cancelled" if asked == "cancel" else "stopped"
    return "failed"
