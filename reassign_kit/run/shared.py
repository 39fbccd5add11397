"""What the parts of a run share: ``RunState`` (the run's one state, named) and ``RunParts``
(the parts, each built with the state and the parts it calls).

A part owns the state only it touches (as its own attributes); what two parts or the facade
touch lives here, each field written only by the parts the ownership note in run.py names.
A part reaches another through ``parts`` and its public methods, never its attributes."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..errors import ReassignKitError
from ..health.signals import HealthSource


class RunLock:
    """The run's lock: re-entrant, and it knows whether the calling thread holds it.

    Lock discipline: nothing but the run's own state (and the journal's write) happens under
    it — no listener, no callback. Events emitted under it wait in the loop's outbox;
    ``released`` (the loop's ``deliver``) runs each time a thread lets go of it wholly.
    Before, a listener called under it (the metrics' one, waiting for its own lock) and a
    reader holding that lock and waiting for this one (a scrape asking the status) hung the
    run for good."""

    def __init__(self, released: Callable[[], None] | None = None) -> None:
        self._lock = threading.RLock()
        self._depth = threading.local()  # how deep the calling thread holds it
        self.released = released

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        got = self._lock.acquire(blocking, timeout)
        if got:
            self._depth.n = getattr(self._depth, "n", 0) + 1
        return got

    def release(self) -> None:
        self._depth.n -= 1
        self._lock.release()
        if self._depth.n == 0 and self.released is not None:
            self.released()

    def held(self) -> bool:
        """Whether the calling thread holds the lock."""
        return getattr(self._depth, "n", 0) > 0

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


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
    run_deadline_reported = False  # the run's deadline is journaled once, whatever the policy
    resume_cancel = False  # resuming a run killed during its cancel
    # the thread driving the loop while it runs: the one that hands events to subscribers
    loop_thread: threading.Thread | None = None

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"run state has no field {name!r} (set in Run.__init__?)")


class RunParts:
    """The parts of one run, built once by the facade (``Run.__init__``): ``begin``
    (``Begin``), ``loop`` (``Loop``), ``submit`` (``Submitter``), ``track`` (``Tracker``),
    ``rollback`` (``Rollback``), ``finish`` (``Finisher``), ``pace`` (``Pace``), ``canary``
    (``Canaries``), ``disks`` (``DiskGate``); ``run`` is the facade (its status and stop, which a part may call like any
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
        self.disks: Any = None
