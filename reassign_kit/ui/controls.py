"""Which panel buttons make sense in which phase of a run (pure, so it is unit-tested alone).

The panel has one phase at a time; every button's ``disabled`` flag is derived from it here and
nowhere else, so a button can never be clickable in a phase where its action would be refused.
"""

from __future__ import annotations

BUTTONS = ("execute", "pause", "resume", "cancel", "verify")

# phase -> buttons enabled in it
_ENABLED: dict[str, frozenset[str]] = {
    "invalid": frozenset(),  # the plan failed validation: nothing may be sent
    "ready": frozenset({"execute", "verify"}),
    "running": frozenset({"pause", "cancel"}),
    "paused": frozenset({"resume", "cancel"}),
    "stopping": frozenset(),  # cancel asked, waiting for the worker to leave
    "verifying": frozenset(),
    "done": frozenset({"verify"}),
    "cancelled": frozenset({"execute", "verify"}),  # execute again resumes from the journal
    "failed": frozenset({"execute", "verify"}),
}

PHASES = tuple(_ENABLED)


def enabled_buttons(phase: str) -> frozenset[str]:
    """The buttons a user may press in ``phase`` (unknown phases enable nothing)."""
    return _ENABLED.get(phase, frozenset())


def phase_after_run(state: str) -> str:
    """Panel phase for the final state a Run reports (done / cancelled / stopped / failed ...)."""
    s = (state or "").lower()
    if s in ("done", "complete", "completed", "finished", "succeeded", "success"):
        return "done"
    if s in ("cancelled", "canceled", "stopped", "interrupted"):
        return "cancelled"
    return "failed"
