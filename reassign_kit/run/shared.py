"""What the parts of a run share: ``RunState`` (the run's one state, named) and ``RunParts``
(the parts, each built with the state and the parts it calls).

A part owns the state only it touches (as its own attributes); what two parts or the facade
touch lives here, each field written only by the parts the ownership note in run.py names.
A part reaches another through ``parts`` and its public methods, never its attributes."""

from __future__ import annotations

import threading
from typing import Any

from ..errors import ReassignKitError
from ..health.signals import HealthSource


class RunState:
    """The run's shared state. The facade's constructor sets every field below that has no
    default; the defaults are what a run starts with."""

    # --pace adaptive: the run's health source (closed at its end; None: a probe), a hold on
    # new submissions (no sample yet, baseline not measured, or a pause) and the thread
    # opening the source
    health: HealthSource | None = None
    pace_hold = False
    health_opener: threading.Thread | None = None
    dirty = False
    throttles_fresh = False  # set by a clean submission: its sync covered this poll
    began = False  # the start went through: the run may have changed the cluster
    exc: ReassignKitError | None = None
    deadline_hit = False
    resume_cancel = False  # resuming a run killed during its cancel

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"run state has no field {name!r} (set in Run.__init__?)")


class RunParts:
    """The parts of one run, built once by the facade (``Run.__init__``): ``begin``
    (``Begin``), ``loop`` (``Loop``), ``submit`` (``Submitter``), ``track`` (``Tracker``),
    ``rollback`` (``Rollback``), ``finish`` (``Finisher``), ``pace`` (``Pace``), ``canary``
    (``Canaries``); ``run`` is the facade (its status and stop, which a part may call like any
    caller). Typed loosely here: the parts import this module, not the other way round."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.begin: Any = None
        self.loop: Any = None
        self.submit: Any = None
        self.track: Any = None
        self.rollback: Any = None
        self.finish: Any = None
        self.pace: Any = None
        self.canary: Any = None
