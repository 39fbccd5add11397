"""Tracking (a part of ``Run``, run/run.py): each move against the cluster at every
poll (a step complete, the move complete, lost), bytes copied sampled for stuck detection,
the target brokers that are down (a move into one is stuck, with that reason, not waiting),
and the fields the run hands to the ETA (eta/estimate.py's ``RunEta``)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..cluster.views import METADATA_SETTLE_S
from ..errors import ReassignKitError
from ..model import PartitionState, TopicPartition, is_complete
from ..moves.table import MoveState, MoveStatus
from ..watch.progress import replica_bytes_copied
from ..watch.text import eta_text

if TYPE_CHECKING:
    from .shared import RunParts, RunState

LOST_AFTER_POLLS = 3  # a move seen neither reassigning nor at its target this often is lost
# a poll whose update completed this many moves or steps turns a wave over (their slots are
# refilled in the same poll): a sample due then is taken at the next poll instead, so that
# the heaviest poll of a run does not also carry the ETA's work (``Tracker.maybe_sample``)
WAVE_MOVES = 256
PENDING, READY, MOVING = MoveStatus.PENDING, MoveStatus.READY, MoveStatus.MOVING
ROLLING_BACK = MoveStatus.ROLLING_BACK
DONE, CANCELLED, FAILED = MoveStatus.DONE, MoveStatus.CANCELLED, MoveStatus.FAILED


class Tracker:
    """Tracking (see the module docstring)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts
        # target brokers seen down at a sample -> (since when, why): not in the cluster's
        # broker list (stopped, fenced)
        self.down: dict[int, tuple[float, str]] = {}
        self.turned = 0  # moves and steps the last ``update`` completed
        self.sample_owed = False  # a sample due at a wave's poll: taken at the next poll

    def complete(self, tp: TopicPartition, st: PartitionState | None) -> bool:
        """``model.is_complete`` plus, for a move with log dirs, its replicas in those dirs."""
        return self.shared.dirs.complete(tp, is_complete(self.shared.moves[tp].move.replicas, st))

    def update(self, states: Mapping[TopicPartition, PartitionState], now: float) -> None:
        """Each move watched against its state now (called under the run's lock: what it
        emits is heard at the lock's release, so its events are held as they come)."""
        with self.parts.loop.holding_deliveries():
            self.turned = self._update(states, now)

    def _update(self, states: Mapping[TopicPartition, PartitionState], now: float) -> int:
        turned = 0
        for ms in self.shared.index.of(MOVING, READY, ROLLING_BACK):
            tp = ms.tp
            st = states.get(tp)
            if st is None:
                ms.fail("partition no longer exists")
                continue
            if ms.status is READY:
                continue
            if ms.status is ROLLING_BACK:
                self.parts.rollback.update_rollback(ms, st, now)
                continue
            target = ms.step_target
            if is_complete(target, st):
                ms.lost_polls, ms.lost_since = 0, None
                # at its step's target, so at the move's exactly when its replicas are the
                # move's: ``is_complete`` of the move, not asked of the same state again
                at_move = tuple(st.replicas) == tuple(ms.move.replicas)
                final = ms.step >= len(ms.steps) or at_move
                if final and not self.shared.dirs.complete(tp, at_move):
                    continue  # replicas in place, still moving between log dirs
                self._landed(ms, target, now)
                turned += 1
                if final:
                    ms.complete(now, st.replicas)
                else:
                    ms.complete_step(st.replicas, now)
            elif not st.reassigning:
                if self.seen_lost(ms, now):
                    ms.fail(
                        f"no longer reassigning and not at its target {list(ms.step_target)} "
                        f"(replicas {list(st.replicas)}): cancelled or replaced outside this run"
                    )
            else:
                ms.lost_polls, ms.lost_since = 0, None
        return turned

    def _landed(self, ms: MoveState, target: tuple[int, ...], now: float) -> None:
        """The step in flight of ``ms`` (to ``target``) completed: its new replicas hold the
        partition (and the time since a sample saw its last byte in is one more completion
        lag)."""
        self.shared.lag.landed(ms.tp, now)
        landed, start, size = self.shared.inbound_landed, ms.step_from, ms.item.size_bytes
        for b in target:
            if b not in start:
                landed[b] = landed.get(b, 0) + size

    @staticmethod
    def seen_lost(ms: MoveState, now: float) -> bool:
        """Counts one more poll at which ``ms`` is neither reassigning nor where it should be;
        lost only once metadata had time to settle (as ops.settle waits) and it was seen so at
        several polls: right after a move ends a broker may still show the intermediate set."""
        ms.lost_polls += 1
        ms.lost_since = now if ms.lost_since is None else ms.lost_since
        return ms.lost_polls >= LOST_AFTER_POLLS and now - ms.lost_since >= METADATA_SETTLE_S

    def maybe_sample(self, now: float, force: bool) -> None:
        """Bytes copied by the moves in flight (DescribeLogDirs, one call), at a bounded rate
        (and at every poll when stuck detection is on). A sample due at a poll that turned a
        wave over (``WAVE_MOVES``) is taken at the next poll, whatever that one turns over."""
        moving = self.shared.index.of(MOVING)
        due = now - self.shared.last_sample >= self.shared.options.sample_interval
        if due and not force and not self.sample_owed and self.turned >= WAVE_MOVES:
            due, self.sample_owed = False, True
        if not moving or not (force or due or self.shared.options.stuck_after is not None):
            return
        adding = {ms.tp: {b for b in ms.step_target if b not in ms.step_from} for ms in moving}
        # best effort, no retries (the next sample comes soon): a broker that cannot answer
        # leaves its own moves unmeasured — waiting, never "stuck" — and the others measured
        per_replica, failed = replica_bytes_copied(self.shared.gw.wrapped, adding)
        copied: dict[TopicPartition, int] = {}
        for (tp, _b), n in per_replica.items():
            copied[tp] = copied.get(tp, 0) + n
        self.watch_targets(set().union(*adding.values()), now)
        if failed.keys() - self.down.keys():
            self.parts.loop.emit(
                "warning",
                message="cannot sample progress on broker(s) "
                + ", ".join(f"{b} ({e})" for b, e in sorted(failed.items()))
                + "; their moves count as waiting",
            )
        for ms in moving:
            if self.down_reason(ms) is not None:
                continue  # no progress while a target is down: stuck after --stuck-after
            if adding[ms.tp] & failed.keys():
                ms.progress_at = now  # unknown is not stuck
                continue
            b = copied.get(ms.move.tp, 0)
            if ms.bytes_copied is None or b > ms.bytes_copied:
                ms.progress_at = now if ms.bytes_copied is not None or b > 0 else ms.progress_at
            ms.bytes_copied = b
        if due or force:
            self.shared.last_sample = now
            self.sample_owed = False
            rows = [
                {
                    **_tpf(ms.move.tp),
                    "bytes": ms.bytes_copied,
                    "size": ms.item.size_bytes,
                    "step": ms.step,
                }
                for ms in moving[:200]
            ]
            counts = self.parts.run.status()
            self.parts.loop.emit(
                "sample",
                done=counts.done,
                moving=counts.moving,
                pending=counts.pending,
                bytes_copied=sum(copied.values()),
                moves=rows,
                **self.eta_fields(now, moving, per_replica),
            )

    def watch_targets(self, targets: set[int], now: float) -> None:
        """Which of ``targets`` are down now, from one DescribeCluster (best effort, no
        retries: when the cluster itself does not answer nothing is concluded): a broker not
        in its list (stopped, or fenced once its session expired). A broker that only fails
        DescribeLogDirs may still be copying: its moves stay unmeasured, not down."""
        try:
            live = {b.id for b in self.shared.gw.wrapped.brokers()}
        except ReassignKitError:
            return
        for b in targets:
            if b not in live:
                self.down.setdefault(b, (now, "not in the cluster's broker list"))
            else:
                self.down.pop(b, None)

    def down_reason(self, ms: MoveState) -> str | None:
        """ "target broker 4 is down since 12:03:07 (...)" when a broker the step in flight of
        ``ms`` copies to is down, else None."""
        for b in ms.step_target:
            if b not in ms.step_from and b in self.down:
                since, why = self.down[b]
                return f"target broker {b} is down since {clock_text(since)} ({why})"
        return None

    def dead_targets(self, tps: Iterable[TopicPartition]) -> list[tuple[MoveState, list[int]]]:
        """The moves among ``tps`` whose step in flight copies to a broker that is down, with
        those brokers (what a cancel of them cannot undo there)."""
        out = []
        for tp in tps:
            ms = self.shared.moves[tp]
            dead = [b for b in ms.step_target if b not in ms.step_from and b in self.down]
            if dead:
                out.append((ms, dead))
        return out

    def eta_fields(
        self,
        now: float,
        moving: list[MoveState],
        per_replica: Mapping[tuple[TopicPartition, int], int],
    ) -> dict[str, Any]:
        """The run's ETA at this sample (``eta.RunEta``): per broker, bytes received
        (completed steps + what the moves in flight copied, capped at their size) and bytes
        still to come in (moves that failed or were cancelled no longer count)."""
        received = {b: float(n) for b, n in self.shared.inbound_landed.items()}
        prev = self.shared.eta.meter.points[-1][0] if self.shared.eta.meter.points else now
        steps: dict[TopicPartition, tuple[int, float, float | None]] = {}
        for ms in moving:
            need = 0.0  # what its new replicas still need (the most any one does)
            for b in ms.step_target:
                if b not in ms.step_from:
                    got = min(per_replica.get((ms.tp, b), 0), ms.item.size_bytes)
                    received[b] = received.get(b, 0.0) + got
                    need = max(need, float(ms.item.size_bytes - got))
            steps[ms.tp] = (ms.step, need, ms.step_submitted_at)
        self.shared.lag.sampled(now, prev, steps)
        total = dict(self.shared.inbound_total)
        for ms in self.shared.index.of(MoveStatus.FAILED, MoveStatus.CANCELLED):
            for b in ms.move.replicas:
                if b not in ms.original and b in total:
                    total[b] -= ms.item.size_bytes
        left = {b: max(0.0, n - received.get(b, 0.0)) for b, n in total.items()}
        inflight: dict[int, int] = {}
        for ms in moving:
            for b in ms.step_target:
                if b not in ms.step_from:
                    inflight[b] = inflight.get(b, 0) + 1
        cap = self.shared.throttles.rate if self.shared.throttles.active else None
        # the last move is complete a completion lag after its last byte (the follower
        # joins the ISR, the controller ends the reassignment, a poll sees it), as
        # ``eta_lag.LagMeter`` measures it
        poll_s = self.shared.options.poll_interval_ms / 1000
        tail, spread = self.shared.lag.tail(poll_s, not any(left.values()), now)
        eta, why, _ = self.shared.eta.update(
            now, received, left, inflight, cap, tail,
            moves=self.shared.index, copied=per_replica, caps=self.shared.caps, r=self.shared.r,
            elections=(self.shared.elections.pending, self.shared.elections.per_poll)
            if self.shared.elections.enabled else None, tail_spread=spread,
        )  # fmt: skip
        all_in = sum(total.values())
        return {
            "received": {str(b): round(n) for b, n in sorted(received.items())},
            "busy": {str(b): round(n, 3) for b, n in sorted(self.shared.eta.busy.items())},
            "inflight": {str(b): n for b, n in sorted(inflight.items())},
            "throttle": cap,
            "tail_s": round(tail, 3),
            "landed_bytes": sum(self.shared.inbound_landed.values()),
            "left": {str(b): round(n) for b, n in sorted(left.items())},
            "bytes_left": round(sum(left.values())),
            "bytes_total": all_in,
            "rate_bps": None
            if self.shared.eta.total_rate is None
            else round(self.shared.eta.total_rate),
            "eta_s": None if eta is None else round(eta, 1),
            "eta_reason": why,
            "eta": eta_text(eta, why),
            **self.shared.eta.fields(),
        }


def clock_text(ts: float) -> str:
    """HH:MM:SS of a run's clock reading (local time, as the run's printed lines)."""
    return time.strftime("%H:%M:%S", time.localtime(ts))


def cancel_notes(dead: Sequence[tuple[MoveState, list[int]]]) -> list[str]:
    """What a cancel of moves into down brokers did and did not undo, one line per move."""
    return [
        f"{ms.tp}: cancelled its move into down broker(s) {', '.join(map(str, bs))}: the "
        f"partition goes back to {list(ms.original or ms.step_from)} (undone); not undone "
        "until the broker returns: the partial copy there (Kafka deletes it when the broker "
        "is back) and the broker's throttle (`reassign-kit throttles --clean` once it is back)"
        for ms, bs in dead
    ]


def _tpf(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}
