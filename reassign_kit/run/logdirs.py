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
# A move the broker accepted and then dropped (no future replica, the replica still elsewhere:
# Kafka 4.3.1 was seen doing it, twice in our CI runs) is sent again this many times before it
# fails its partition: sending the same dir again is a no-op for a move already under way or
# done, and a bound keeps the run from fighting another tool that moves the replica back.
MAX_RESENDS = 2


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


class LogDirMoves:
    """A paced run's moves between log dirs (the plan's ``log_dirs``): a partition's are
    queued once its final replica set is in flight, started as the official tool does (retried
    while the new replica does not exist, up to ``timeout_s``: its --timeout), and the
    partition counts as complete only once every replica sits in its dir, no future log left.
    A started move the broker no longer has (dropped, or moved back by another tool) in two
    rounds running is sent again, up to ``MAX_RESENDS`` times: without that the run waited for
    it forever.

    ``moves`` is the run's ``tp -> MoveState``; a log-dir move that cannot start fails its
    partition's move (``MoveState.fail``); ``emit`` journals ``log_dir_started`` and
    ``log_dir_resent``."""

    def __init__(
        self,
        gateway: Any,
        plan: Iterable[Move],
        moves: Mapping[TopicPartition, Any],
        timeout_s: float,
        emit: Any,
    ):
        self.gw = gateway
        self.moves = moves
        self.timeout_s = timeout_s
        self.emit = emit
        self.targets: dict[TopicPartition, dict[int, str]] = {}
        for (tp, b), d in log_dir_targets(plan).items():
            self.targets.setdefault(tp, {})[b] = d
        self.pending: dict[tuple[TopicPartition, int], tuple[str, float]] = {}
        self.registered: set[TopicPartition] = set()
        self.started: set[tuple[TopicPartition, int]] = set()
        self.placed: set[TopicPartition] = set()
        self.resent: dict[tuple[TopicPartition, int], int] = {}
        # seen dropped in the last round: sent again only if the next round agrees (a read
        # while the broker swaps the finished future log in can show neither)
        self.suspect: set[tuple[TopicPartition, int]] = set()

    def complete(self, tp: TopicPartition, replicas_complete: bool) -> bool:
        """``replicas_complete`` (``model.is_complete``) and, with log dirs, placed in them."""
        return replicas_complete and (tp not in self.targets or tp in self.placed)

    def check_placed(self, tps: Iterable[TopicPartition]) -> dict[tuple[TopicPartition, int], str]:
        """Mark those of ``tps`` whose replicas are all in their dirs, no future replica left
        (one DescribeLogDirs round). Returns the started replicas of the others that are not
        moving: no future replica, in another dir of a broker that answered -> that dir."""
        from ..cluster.views import replica_log_dirs

        tps = sorted(tp for tp in tps if tp in self.targets)
        if not tps:
            return {}
        brokers = {b for tp in tps for b in self.targets[tp]}
        cur, fut = replica_log_dirs(self.gw, tps, brokers)
        self.placed |= {
            tp
            for tp in tps
            if all(
                cur.get((tp, b)) == d and (tp, b) not in fut for b, d in self.targets[tp].items()
            )
        }
        return {
            (tp, b): now_in
            for tp in tps
            if tp not in self.placed
            for b, d in self.targets[tp].items()
            if (tp, b) in self.started
            and (tp, b) not in fut
            and (now_in := cur.get((tp, b))) is not None
            and now_in != d
        }

    def _resend(self, dropped: Mapping[tuple[TopicPartition, int], str], now: float) -> None:
        """Queue again each started move the broker no longer has (journaled), or fail its
        partition once it was sent again ``MAX_RESENDS`` times."""
        for (tp, b), now_in in sorted(dropped.items()):
            if self.moves[tp].status != "moving":
                continue  # another of its replicas failed it in this round
            d = self.targets[tp][b]
            n = self.resent.get((tp, b), 0)
            if n >= MAX_RESENDS:
                self.moves[tp].fail(
                    f"the replica on broker {b} is in {now_in}, not moving to log dir {d}: "
                    f"the broker has no future replica for it after {n + 1} sends (dropped "
                    "by the broker, or moved back by another tool)"
                )
                continue
            self.resent[(tp, b)] = n + 1
            self.started.discard((tp, b))
            self.pending[(tp, b)] = (d, now + self.timeout_s)
            self.emit(
                "log_dir_resent", topic=tp.topic, partition=tp.partition, broker=b,
                log_dir=d, found_in=now_in, resend=n + 1,
            )  # fmt: skip

    def _at_final(self, tp: TopicPartition) -> bool:
        ms = self.moves[tp]
        return ms.status == "moving" and tuple(ms.step_target) == tuple(ms.move.replicas)

    def register(self, now: float) -> None:
        """Queue the log-dir moves of partitions whose final replica set is in flight (right
        after submission, after an adoption on resume), each with its --timeout deadline."""
        for tp in self.targets.keys() - self.registered:
            if self._at_final(tp):
                self.registered.add(tp)
                for b, d in self.targets[tp].items():
                    self.pending[(tp, b)] = (d, now + self.timeout_s)

    def drive(self, now: float) -> None:
        """One round: start what is queued (AlterReplicaLogDirs), fail what timed out, and
        see which partitions have their replicas in place."""
        if not self.targets:
            return
        self.register(now)
        if self.pending:
            settled = log_dir_round(self.gw, {k: d for k, (d, _) in self.pending.items()})
            for (tp, b), (d, deadline) in list(self.pending.items()):
                if (tp, b) in settled:
                    err = settled[(tp, b)]
                elif now > deadline:
                    err = (
                        f"timed out after {self.timeout_s:g}s waiting for the replica "
                        "to appear (--timeout)"
                    )
                else:
                    continue
                del self.pending[(tp, b)]
                if err is None:
                    self.started.add((tp, b))
                    self.emit(
                        "log_dir_started", topic=tp.topic, partition=tp.partition, broker=b,
                        log_dir=d,
                    )  # fmt: skip
                    continue
                if self.moves[tp].status == "moving":  # not failed by another replica already
                    self.moves[tp].fail(f"moving the replica on broker {b} to log dir {d}: {err}")
        waiting = [
            tp
            for tp in self.registered - self.placed
            if self.moves[tp].status == "moving"
            and all((tp, b) in self.started for b in self.targets[tp])
        ]
        dropped = self.check_placed(waiting)
        self._resend({k: d for k, d in dropped.items() if k in self.suspect}, now)
        self.suspect = {k for k in dropped if k not in self.suspect}

    def brokers(self, submitting: Mapping[TopicPartition, Any]) -> set[int]:
        """Brokers that move (or are about to move: ``submitting``, tp -> (target, state)) a
        replica of this run between log dirs: moves at their final replica set, not placed."""
        tps = {
            tp
            for tp, (tgt, _) in submitting.items()
            if tp in self.targets and tuple(tgt) == tuple(self.moves[tp].move.replicas)
        }
        tps |= {tp for tp in self.targets if self._at_final(tp) and tp not in self.placed}
        return {b for tp in tps for b in self.targets[tp]}
