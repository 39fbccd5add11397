"""A simulated cluster that outlives a process: ``--bootstrap-server sim:PATH``.

The kill-fuzz harness (tests/killfuzz.py) runs the real CLI as a subprocess and SIGKILLs it;
the cluster it acts on must survive the kill exactly as a real one would. ``FileSim`` loads a
``SimCluster`` pickled at PATH, and writes it back (atomically: a temporary file, then a
rename) right after every call that changes it — a reassignment, a config, an election, the
passing of model time — so the file always holds what the cluster had "received" when the
process died. One process uses a state file at a time (the harness runs them one after the
other).

Kill points, for tests only: with ``RK_SIM_KILL_AT=<call>:<n>`` (``<call>`` a gateway method
name, or ``any`` for every call) the process SIGKILLs itself right after the ``n``-th such
call returned (its effect saved): e.g. ``alter_reassignments:1`` kills the tool between its
first Alter and the journal line that records it. ``<call>:<n>:before`` kills it right
before the ``n``-th such call is sent instead (e.g. ``alter_reassignments:2:before``: a KIP-435
move between two steps, its next step written ahead but not sent). Nothing else reads the
variable.
"""

from __future__ import annotations

import os
import pickle
import signal
from typing import Any

from .simulate import SimCluster

SIM_PREFIX = "sim:"
KILL_ENV = "RK_SIM_KILL_AT"

# the calls after which the model's state changed (and is written back)
CHANGING = frozenset(
    {
        "alter_reassignments",
        "alter_replica_log_dirs",
        "alter_topic_configs",
        "alter_broker_configs",
        "elect_preferred_leaders",
        "sleep",
        "add_topic",
        "stall",
    }
)


def is_sim(bootstrap: str | None) -> bool:
    return bool(bootstrap) and str(bootstrap).startswith(SIM_PREFIX)


def save(sim: SimCluster, path: str) -> None:
    """Write ``sim`` to ``path`` atomically (a reader never sees half a state).

    No fsync: the harness kills processes, not the machine, and a killed process's writes are
    already in the page cache; an fsync per simulated sleep was most of a slow run's time."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        pickle.dump(sim, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, path)


def load(path: str) -> SimCluster:
    from ..errors import UsageError

    try:
        with open(path, "rb") as f:
            sim = pickle.load(f)  # noqa: S301 - a state file this tool's own tests wrote
    except OSError as e:
        raise UsageError(f"--bootstrap-server {SIM_PREFIX}{path}: cannot read it: {e}") from None
    if not isinstance(sim, SimCluster):
        raise UsageError(f"--bootstrap-server {SIM_PREFIX}{path}: not a simulated cluster")
    return sim


class FileSim:
    """``SimCluster`` at ``path`` behind the gateway interface, written back after every
    change (see the module docstring)."""

    def __init__(self, path: str):
        self.path = path
        self.sim = load(path)
        self._kill_call, self._kill_n, self._kill_before = _kill_point(os.environ.get(KILL_ENV))
        self._seen = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.sim, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._kill_before:
                self._maybe_die(name)
            try:
                return attr(*args, **kwargs)
            finally:
                if name in CHANGING:
                    save(self.sim, self.path)
                if not self._kill_before:
                    self._maybe_die(name)

        return call

    def close(self) -> None:
        save(self.sim, self.path)

    def _maybe_die(self, name: str) -> None:
        if self._kill_n is None or (self._kill_call not in ("any", name)):
            return
        self._seen += 1
        if self._seen == self._kill_n:
            os.kill(os.getpid(), signal.SIGKILL)


def _kill_point(spec: str | None) -> tuple[str, int | None, bool]:
    """``<call>:<n>[:before]`` -> (call, n, before)."""
    if not spec:
        return "", None, False
    before = spec.endswith(":before")
    call, _, n = spec.removesuffix(":before").rpartition(":")
    return (call or "any"), int(n), before
