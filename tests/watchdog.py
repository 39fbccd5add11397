"""A watchdog for runs driven on a thread (``Run.start()``): the test fails, naming where each
thread stands, when the run's loop stops polling for ``stall_s`` seconds of wall time or the
run has not ended after ``limit_s`` — never a test that hangs until the suite's timeout.

A poll is one ``list_reassignments`` call on the gateway the run was given (every poll makes
one), counted by wrapping that call on the gateway itself before the run is built."""

from __future__ import annotations

import faulthandler
import tempfile
import threading
import time
from typing import Any

import pytest


class Watchdog:
    """Counts the polls of a run on ``gateway``; ``wait(run)`` returns its result or fails."""

    def __init__(self, gateway: Any, stall_s: float = 20.0, limit_s: float = 300.0) -> None:
        self.stall_s = stall_s
        self.limit_s = limit_s
        self.polls = 0
        self._last = time.monotonic()
        real = gateway.list_reassignments

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.polls += 1
            self._last = time.monotonic()
            return real(*args, **kwargs)

        gateway.list_reassignments = counted  # the instance's, shadowing its class's method

    def stalled_for(self) -> float:
        """Wall seconds since the last poll began."""
        return time.monotonic() - self._last

    def wait(self, run: Any, step_s: float = 0.2) -> Any:
        """The run's result once it ends; ``pytest.fail`` (with every thread's stack) when its
        loop stopped polling or it outlived ``limit_s``."""
        began = time.monotonic()
        while True:
            res = run.wait(step_s)
            if res is not None:
                return res
            if self.stalled_for() > self.stall_s:
                why = f"no poll for {self.stall_s:g}s of wall time after {self.polls} poll(s)"
            elif time.monotonic() - began > self.limit_s:
                why = f"not ended after {self.limit_s:g}s ({self.polls} polls)"
            else:
                continue
            pytest.fail(f"the run's loop stopped advancing: {why}; threads:\n{_stacks()}")


def _stacks() -> str:
    """Every thread's stack, as faulthandler prints it (where a deadlock waits)."""
    with tempfile.TemporaryFile("w+") as f:
        faulthandler.dump_traceback(file=f, all_threads=True)
        f.seek(0)
        return f.read()


def hammer(fn: Any, stop: threading.Event, name: str = "rk-test-hammer") -> threading.Thread:
    """``fn()`` called in a tight loop on a daemon thread until ``stop`` is set; the count of
    calls in the thread's ``calls`` attribute."""

    def loop() -> None:
        while not stop.is_set():
            t.calls += 1  # type: ignore[attr-defined]
            fn()

    t = threading.Thread(target=loop, name=name, daemon=True)
    t.calls = 0  # type: ignore[attr-defined]
    t.start()
    return t
