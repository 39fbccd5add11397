"""Which panel buttons and controls make sense in which phase of a run (pure, so it is
unit-tested alone).

The panel has one phase at a time; every button's ``disabled`` flag is derived from it here and
nowhere else, so a button can never be clickable in a phase where its action would be refused.
"""

from __future__ import annotations

from ..engine.options import live_options

BUTTONS = ("execute", "resume_run", "pause", "resume", "stop", "cancel", "verify")

# phase -> buttons enabled in it
_ENABLED: dict[str, frozenset[str]] = {
    "invalid": frozenset(),  # the plan failed validation: nothing may be sent
    "ready": frozenset({"execute", "verify"}),
    "running": frozenset({"pause", "stop", "cancel"}),
    "paused": frozenset({"resume", "stop", "cancel"}),
    "stopping": frozenset(),  # stop / cancel asked, waiting for the worker to leave
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
LIVE_CONTROLS = live_options()  # declared with the options (engine/options.py)

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


def editable_controls(phase: str, names: tuple[str, ...] | list[str]) -> frozenset[str]:
    """The pacing controls a user may change in ``phase``: all before a run, the live caps
    while one runs or is paused, none otherwise."""
    if phase in ("ready", "cancelled", "stopped", "failed"):
        return frozenset(names)
    if phase in ("running", "paused"):
        return frozenset(n for n in names if n in LIVE_CONTROLS)
    return frozenset()


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
