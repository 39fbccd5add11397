"""Riding through transient cluster faults: every admin call of a run's loop is retried a
bounded number of times with exponential backoff (tenacity), each retry journaled as a
``retry`` event (the call, the attempt, the error, the wait). The backoff sleeps through the
run's own sleep, so on the simulator it passes in model time.

A call that still fails after its retries raises as before; the run's loop then decides (it
goes on at its next poll unless a deadline expired or the user stopped it)."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from ..errors import KafkaOperationError

KILL_ENV = "RK_KILL_AT"  # tests only: see _kill_point
ATTEMPTS = 4  # per call: the first try and 3 retries
WAIT_MIN_S, WAIT_MAX_S = 0.5, 8.0

# the gateway calls a run makes while it goes on (cluster reads, submissions, configs)
LOOP_CALLS = frozenset(
    {
        "brokers",
        "describe_partitions",
        "list_reassignments",
        "alter_reassignments",
        "describe_log_dirs",
        "alter_replica_log_dirs",
        "topic_configs",
        "broker_configs",
        "throttle_configs",
        "alter_topic_configs",
        "alter_broker_configs",
        "elect_preferred_leaders",
        "min_insync_replicas",
        "broker_log_dirs",
    }
)


# the calls that change the cluster: the journal is committed before each is sent
CHANGE_CALLS = frozenset(
    {
        "alter_reassignments",
        "alter_replica_log_dirs",
        "alter_topic_configs",
        "alter_broker_configs",
        "elect_preferred_leaders",
    }
)


class RetryingGateway:
    """``gateway`` with the loop's calls retried (``LOOP_CALLS``); every other attribute is
    the gateway's own (a simulator's clock, its counters). ``before_change`` runs before every
    call that changes the cluster (``CHANGE_CALLS``): the run commits its journal there, so the
    events that describe a change are on disk before the change is sent."""

    def __init__(
        self,
        gateway: Any,
        sleep: Callable[[float], None],
        emit: Callable[..., Any],
        attempts: int = ATTEMPTS,
        before_change: Callable[[], None] | None = None,
    ):
        self._gw = gateway
        self._sleep = sleep
        self._emit = emit
        self._attempts = attempts
        self._before_change = before_change

    @property
    def wrapped(self) -> Any:
        return self._gw

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._gw, name)
        if name not in LOOP_CALLS or not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            if name in CHANGE_CALLS and self._before_change is not None:
                self._before_change()

            def journal(state: Any) -> None:
                err = state.outcome.exception()
                self._emit(
                    "retry",
                    call=name,
                    attempt=state.attempt_number,
                    error=f"{type(err).__name__}: {err}",
                    wait_s=round(state.next_action.sleep, 3),
                )

            try:
                for attempt in Retrying(
                    stop=stop_after_attempt(self._attempts),
                    wait=wait_exponential(multiplier=WAIT_MIN_S, min=WAIT_MIN_S, max=WAIT_MAX_S),
                    retry=retry_if_exception_type(KafkaOperationError),
                    sleep=self._sleep,
                    before_sleep=journal,
                    reraise=True,
                ):
                    with attempt:
                        return attr(*args, **kwargs)
                raise AssertionError("unreachable")  # pragma: no cover - reraise=True
            finally:
                if name in CHANGE_CALLS and _KILL:
                    _kill_point(name)

        return call


_KILL = os.environ.get(KILL_ENV, "")
_kill_seen: dict[str, int] = {}


def _kill_point(name: str) -> None:
    """``RK_KILL_AT=<call>:<n>`` (tests only: the kill-fuzz harness on a real cluster): the
    process SIGKILLs itself right after the n-th change call ``<call>`` (``any``: every
    change call) returned — e.g. between an Alter and the journal line that records it."""
    if not _KILL:
        return
    call, _, n = _KILL.rpartition(":")
    if call not in ("any", name):
        return
    _kill_seen[call] = _kill_seen.get(call, 0) + 1
    if _kill_seen[call] == int(n):
        os.kill(os.getpid(), signal.SIGKILL)
