"""Moves between log dirs (KIP-113's AlterReplicaLogDirs), as the official tool does them:
a replica is asked to move once it exists on its broker (a reassignment creates it some time
after submission), retried while the broker answers "not there yet". Shared by the legacy
request (``ops.execute``) and the paced run."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..model import ANY_LOG_DIR, Move, TopicPartition

RETRIABLE_LOG_DIR_ERRORS = ("ReplicaNotAvailable", "KafkaStorage", "no answer")


def log_dir_targets(moves: Iterable[Move]) -> dict[tuple[TopicPartition, int], str]:
    """(partition, broker) -> the log dir the plan asks for (entries with "any" left out)."""
    return {
        (m.tp, b): d
        for m in moves
        if m.log_dirs is not None
        for b, d in zip(m.replicas, m.log_dirs, strict=False)
        if d != ANY_LOG_DIR
    }


def log_dir_round(
    gateway: Any, pending: Mapping[tuple[TopicPartition, int], str]
) -> dict[tuple[TopicPartition, int], str | None]:
    """One AlterReplicaLogDirs for ``pending``: the replicas it settled (None = the move began,
    else the broker's error). A replica the reassignment has not created yet
    (ReplicaNotAvailable, ...) is left out, to be asked again, as the official tool does."""
    res = gateway.alter_replica_log_dirs(pending) if pending else {}
    out: dict[tuple[TopicPartition, int], str | None] = {}
    for key in pending:
        err = res.get(key, "no answer")
        if err is None or err not in RETRIABLE_LOG_DIR_ERRORS:
            out[key] = err
    return out


def start_log_dir_moves(
    gateway: Any, wanted: Mapping[tuple[TopicPartition, int], str], timeout_s: float
) -> list[dict[str, Any]]:
    """AlterReplicaLogDirs until each replica exists on its broker (a new replica appears only
    once the reassignment creates it), as the official tool; give up after ``timeout_s``."""
    pending = dict(wanted)
    errors: dict[tuple[TopicPartition, int], str | None] = {}
    deadline = time.monotonic() + timeout_s
    while pending:
        for key, err in log_dir_round(gateway, pending).items():
            errors[key] = err
            del pending[key]
        if not pending or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    for key in pending:
        errors[key] = (
            f"timed out after {timeout_s:g}s waiting for the replica to appear (--timeout)"
        )
    return [
        {
            "topic": tp.topic,
            "partition": tp.partition,
            "broker": b,
            "log_dir": wanted[(tp, b)],
            "error": e,
        }
        for (tp, b), e in sorted(errors.items())
    ]
