"""A paced run's lifecycle as one transition table: the states a ``Run`` goes
through, what moves it from one to the next, and nothing else. Pure (no I/O, no clock):
``Run`` (run/run.py) fires the triggers under its lock and journals one ``lifecycle``
event per transition (``from``, ``to``, ``trigger``); the panel shows ``phase()`` of it.

States: ``created`` (built, its loop not begun), ``running``, ``paused`` (submits nothing,
still watches and keeps the throttles right), ``stopping`` (a stop asked: the drain, the
moves in flight go on), ``cancelling`` (a cancel asked: the moves it touched go back to
their originals); and the ends, which ``RunResult.state`` reports: ``done``, ``submitted``
(KIP-1335's return point: every move submitted, the run not waiting), ``stopped``,
``cancelled``, ``deadline``, ``failed``. An end is final: nothing leaves it.

The table (``TABLE``; ``*`` = every end in ``ENDS``)::

    from \\ trigger  start    pause   resume   stop        cancel       finish
    created          running  paused  -        stopping    cancelling   *
    running          -        paused  -        stopping    cancelling   *
    paused           paused   -       running  stopping    cancelling   *
    stopping         stopping -       -        stopping    cancelling   *
    cancelling       cancell. -       -        cancelling  cancelling   *
    <an end>         -        -       -        -           -            -

``start`` from ``paused`` / ``stopping`` / ``cancelling``: a pause, stop or cancel asked
before the loop began holds once it begins. A second ``stop`` or ``cancel`` while stopping or
cancelling is a transition to the same state (a second Ctrl-C: the run's end stops waiting
for its rollbacks); ``Run`` fires it once, while the end waits, and takes any other repeat as
done already (nothing journaled), so a caller stopping on every event cannot keep it going. ``-``: refused (``IllegalTransition``): a resume of a run that is not
paused, a pause while it stops, anything once it has ended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import UsageError

CREATED, RUNNING, PAUSED = "created", "running", "paused"
STOPPING, CANCELLING = "stopping", "cancelling"
ENDS = frozenset({"done", "submitted", "stopped", "cancelled", "deadline", "failed"})
LIVE = (CREATED, RUNNING, PAUSED, STOPPING, CANCELLING)
STATES = frozenset(LIVE) | ENDS
TRIGGERS = ("start", "pause", "resume", "stop", "cancel", "finish")

# (state, trigger) -> next state; "finish" goes to the end it is given (any of ENDS)
TABLE: Mapping[tuple[str, str], str] = {
    (CREATED, "start"): RUNNING,
    (CREATED, "pause"): PAUSED,
    (CREATED, "stop"): STOPPING,
    (CREATED, "cancel"): CANCELLING,
    (RUNNING, "pause"): PAUSED,
    (RUNNING, "stop"): STOPPING,
    (RUNNING, "cancel"): CANCELLING,
    (PAUSED, "start"): PAUSED,
    (PAUSED, "resume"): RUNNING,
    (PAUSED, "stop"): STOPPING,
    (PAUSED, "cancel"): CANCELLING,
    (STOPPING, "start"): STOPPING,
    (STOPPING, "stop"): STOPPING,
    (STOPPING, "cancel"): CANCELLING,
    (CANCELLING, "start"): CANCELLING,
    (CANCELLING, "stop"): CANCELLING,
    (CANCELLING, "cancel"): CANCELLING,
}

# the panel's name of each state (ui/status.py LIFECYCLE): a run not begun is starting; an
# end reported as submitted is done (its moves go on, as KIP-1335's tool leaves them), one
# that hit its deadline stopped
_PHASE = {CREATED: "starting", "submitted": "done", "deadline": "stopped"}


class IllegalTransition(UsageError):
    """A trigger the run's state does not take (see the module's table)."""


def next_state(state: str, trigger: str, end: str | None = None) -> str:
    """The state ``trigger`` leads to from ``state`` (``end``: the end ``finish`` reaches);
    raises ``IllegalTransition`` for one the table refuses."""
    if state not in STATES:
        raise IllegalTransition(f"unknown run state {state!r}")
    if trigger == "finish":
        if state in ENDS:
            raise IllegalTransition(f"the run has already ended ({state})")
        if end not in ENDS:
            raise IllegalTransition(f"a run ends in one of {sorted(ENDS)}, not {end!r}")
        return end
    if trigger not in TRIGGERS:
        raise IllegalTransition(f"unknown trigger {trigger!r}")
    nxt = TABLE.get((state, trigger))
    if nxt is None:
        why = "it has ended" if state in ENDS else f"it is {state}"
        raise IllegalTransition(f"cannot {trigger} the run: {why}")
    return nxt


def phase(state: str) -> str:
    """The panel's name for ``state`` (starting, running, paused, stopping, cancelling,
    done, stopped, cancelled, failed)."""
    return _PHASE.get(state, state)


class Lifecycle:
    """One run's state; ``fire`` moves it by the table and hands the transition to ``emit``
    (``emit("lifecycle", from_=..., ...)`` is journaled by the run). Not locked: the run
    fires under its own lock."""

    def __init__(self, emit: Callable[..., Any] | None = None, state: str = CREATED):
        if state not in STATES:
            raise IllegalTransition(f"unknown run state {state!r}")
        self.state = state
        self._emit = emit

    @property
    def ended(self) -> bool:
        return self.state in ENDS

    def allows(self, trigger: str) -> bool:
        """Whether ``trigger`` is a transition now (``finish``: whether the run may end)."""
        if trigger == "finish":
            return self.state not in ENDS
        return (self.state, trigger) in TABLE

    def fire(self, trigger: str, end: str | None = None, **fields: Any) -> str:
        """Move by ``trigger`` (``end`` for ``finish``); one ``lifecycle`` event per
        transition, with ``fields``. Raises ``IllegalTransition`` (nothing changed, nothing
        emitted) for one the table refuses."""
        before = self.state
        self.state = next_state(before, trigger, end)
        if self._emit is not None:
            self._emit(
                "lifecycle", **{"from": before, "to": self.state, "trigger": trigger}, **fields
            )
        return self.state
