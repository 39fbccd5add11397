"""The paced executor's facade: ``Run`` — start, pause, resume, stop, cancel, set caps and
throttle, subscribe, status, wait — over the parts that do the work, poll → schedule →
throttle → submit → journal, until the plan is submitted (KIP-1335's return point) or
complete (``wait``).

The CLI calls ``run()`` (signals call ``stop()``), the panel ``start()`` (a worker thread; its
buttons call the controls). Decisions come from ``schedule.decide`` (pure); cluster calls go
through a ``gateway.Gateway`` (Kafka or ``simulate.SimCluster``).

Ownership (one run state: this object's attributes; each part is a mixin with one job):

- the facade (here): the control flags (``_stop``, ``_paused``, ``_abandon``,
  ``_cancel_on_stop``, ``_caps``, ``_r``), subscribers, the result and ``_done``;
  the only writers of those from other threads, under ``_lock``.
- ``begin.BeginPart``: the run id, the journal's opening, the moves' order and their state
  at start (``_moves``, ``_order``, ``_pos``, ``_index``), write-ahead originals read back.
- ``loop.LoopPart``: one poll; the journal's commits (``_journal_error``, ``_draining``);
  ``_end_state``; deadlines.
- ``submit.SubmitPart``: originals at submission, the write-ahead ``intent``, the Alter.
- ``track.TrackPart``: each move's progress against the cluster; the ETA's inputs
  (``_inbound_*``, ``_lag``: engine/eta.py's ``RunEta`` owns the ETA).
- ``rollback.RollbackPart``: the way back to each move's original (every cancel path).
- ``finish.FinishPart``: the end on every path (cancel, elections owed, throttle cleanup
  with retries, result).
- ``throttle_keeper.ThrottleKeeper`` (``_throttles``): the one owner of the throttles on the
  cluster; ``set_throttle`` (and the pace's per-broker rates) hand it a rate, its sync writes it.
- ``pace.PacePart`` (``_pacer``, ``_health``, ``_pace_hold``): ``--pace adaptive``: health
  sampled each poll, per-broker rates and a hold on submissions (engine/pacing.py decides).
- ``lifecycle.Lifecycle`` (``_life``): the run's state by one transition table; the controls,
  the start and the end move it (refused ones return False), one ``lifecycle`` event each.

Invariants kept on every exit path (done, error, deadline, stop, Ctrl-C / SIGTERM): the
throttles on the cluster are those the moves still in flight need (no more, no less), and a
move is only submitted after the throttle it needs is set and its original is on disk. The
journal plus the cluster are the whole state: ``Run(..., resume=True)`` after a SIGKILL
resubmits nothing complete, adopts moves still in flight (with their write-ahead originals),
keeps the caps, and resumes an interrupted cancel as a cancel.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ..cluster.gateway import Gateway
from ..errors import JournalError, ReassignKitError, UsageError
from ..eta.estimate import RunEta
from ..eta.lag import LagMeter
from ..health.signals import HealthSource
from ..model import Plan, TopicPartition
from ..moves.journal import Journal
from ..moves.results import RunResult, RunStatus
from ..moves.schedule import Caps, Item
from ..moves.steps import StepsFor, steps_hook
from ..moves.table import MoveIndex, MoveState, MoveStatus
from ..pacing.pace import PacePart
from ..throttles.keeper import ThrottleKeeper
from .begin import BeginPart
from .elections import Elections
from .finish import FinishPart
from .lifecycle import Lifecycle, phase
from .logdirs import LogDirMoves
from .loop import LoopPart
from .options import ExecuteOptions, live_changes
from .retry import RetryingGateway
from .rollback import RollbackPart
from .submit import SubmitPart
from .track import TrackPart

log = logging.getLogger(__name__)


class Run(BeginPart, LoopPart, SubmitPart, TrackPart, RollbackPart, FinishPart, PacePart):
    """One paced execution of a plan. See the module docstring."""

    def __init__(
        self,
        gateway: Gateway,
        plan: Plan,
        options: ExecuteOptions | None = None,
        journal_path: str | os.PathLike | None = None,
        *,
        resume: bool = False,
        run_id: str | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] | None = None,
        steps_for: StepsFor | None = None,
        plan_path: str | None = None,
        secrets: Sequence[str] = (),
        min_isr: Mapping[str, int] | int | None = None,
        health: HealthSource | None = None,
    ):
        self.gw = gateway
        self.plan = plan
        self.options = (options or ExecuteOptions()).validate()
        self.journal_path = os.fspath(journal_path) if journal_path is not None else None
        self.resume_requested = resume
        self.plan_path = plan_path
        self._clock = clock
        self._sleep_fn = sleep
        # KIP-435 steps: min.insync.replicas from ``min_isr``, options.min_isr or the gateway
        self._min_isr = (
            (dict(min_isr) if isinstance(min_isr, Mapping) else min_isr)
            if min_isr is not None
            else self.options.min_isr
        )
        self._r = self.options.parallel_replica_count
        self._steps_for = steps_for or steps_hook(self._r, self._min_isr_of)
        self._secrets = tuple(secrets)
        self._health = health  # --pace adaptive: the run's (closed at its end); None: a probe
        self._caps = self.options.caps()
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._abandon = threading.Event()  # a second stop/cancel: stop waiting for rollbacks
        self._cancel_on_stop = self.options.cancel_on_stop
        self._paused = False
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._result: RunResult | None = None
        self.state = "created"
        # the lifecycle (engine/lifecycle.py's table): every control call and the run's
        # start and end move it, one ``lifecycle`` event per transition; refused otherwise
        self._life = Lifecycle(self._emit)
        self.waiting_reason: str | None = None
        self.run_id = run_id or ""
        self._started_at: float | None = None
        self._moves: dict[TopicPartition, MoveState] = {}
        self._order: list[TopicPartition] = []
        self._pos: dict[TopicPartition, int] = {}  # plan order of each move
        self._index = MoveIndex()  # the moves by status, kept by the transitions
        self._inflight_items: dict[TopicPartition, tuple[tuple, Item]] = {}
        # write-ahead originals read back from the journal on resume
        self._wal_originals: dict[TopicPartition, tuple[int, ...]] = {}
        self._order_unknown: set[TopicPartition] = set()  # originals from KIP-455's set
        # every admin call of the loop retried with backoff, each retry journaled
        self.gw = RetryingGateway(
            gateway, self._sleep, self._emit, before_change=self._commit_before_change
        )
        self._throttles = ThrottleKeeper(
            self.gw, plan.topics(), self.options.throttle, self.options.log_dir_throttle, self._emit
        )
        self._last_sample = -1e18
        # the run's ETA: per broker, bytes its new replicas must receive (from the
        # plan, once) and have received by completed steps (counted as they complete)
        self._inbound_total: dict[int, int] = {}
        self._inbound_landed: dict[int, int] = {}
        self._eta = RunEta(poll_s=self.options.poll_interval_ms / 1000)
        # from a move's last byte (as a sample saw it) to its completion: added to the ETA
        self._lag = LagMeter()  # the completion lag (``eta_lag``)
        self._journal: Journal | None = None
        self._journal_error: JournalError | None = None  # the first failed journal write
        self._finishing = False
        self._draining = False  # the journal failed: finish the moves in flight, then fail
        self._stop_submitting = False
        self._end_state: str | None = None
        self._error: str | None = None
        # moves between log dirs (the plan's log_dirs), as ops.execute starts them for the
        # legacy request; a move is complete only when its replicas are also in those dirs
        self._dirs = LogDirMoves(self.gw, plan, self._moves, self.options.timeout_s, self._emit)
        # preferred leader elections once a move that changed its first replica completes
        # (engine/elections.py): it hears every ``completed`` event
        self._elections = Elections(
            self.gw,
            self._emit,
            lambda tp: self._moves[tp].original,
            lambda tp: self._moves[tp].move.replicas,
            enabled=self.options.elect_leaders,
            per_poll=self.options.max_elections_per_poll,
        )
        self._subscribers.append(self._elections.on_event)

    # ---- control, from any thread ---------------------------------------------------------

    def start(self) -> Run:
        """Run the loop in a worker thread (for the notebook panel)."""
        self._thread = threading.Thread(target=self._run_safe, name="reassign-run", daemon=True)
        self._thread.start()
        return self

    def pause(self) -> bool:
        """Stop submitting; keep watching completions and keep throttles right. False (and
        nothing done) when the lifecycle refuses it: already paused, stopping, ended."""
        with self._lock:
            if not self._fire("pause"):
                return False
            self._paused = True
            self._emit("paused")
        self._wake.set()
        return True

    def resume(self) -> bool:
        """Submit again after ``pause()``; False (nothing done) when the run is not paused."""
        with self._lock:
            if not self._fire("resume"):
                return False
            self._paused = False
            self._emit("resumed")
        self._wake.set()
        return True

    def stop(self, cancel_inflight: bool = False) -> None:
        """Stop (drain): submit nothing more and end the run; moves in flight keep running
        with their throttles (a stepped move's later steps are not submitted: Resume continues
        it). With ``cancel_inflight`` (or ``--on-interrupt cancel``) it is ``cancel()``. Asked
        again while the run's end waits for a cancel's rollbacks (a second Ctrl-C), it stops
        waiting: they go on, throttled, reported as rolling back. False (nothing done) once
        the run has ended."""
        with self._lock:
            cancel = self._cancel_on_stop or cancel_inflight
            if not self._fire("cancel" if cancel else "stop"):
                return False
            if self._stop.is_set() and self._finishing:
                self._abandon.set()
            self._cancel_on_stop = cancel
        self._stop.set()
        self._wake.set()
        return True

    def cancel(self) -> bool:
        """Cancel (roll back): end the run and bring every move it touched and did not
        complete back to its original replica list, in order — the step in flight cancelled,
        a stepped move between steps included — waiting for it up to
        ``options.rollback_timeout``; each move is reported cancelled (back at its original),
        completed (it finished before the cancel reached it) or rolling back. False (nothing
        done) once the run has ended."""
        return self.stop(cancel_inflight=True)

    @property
    def phase(self) -> str:
        """The lifecycle state now (engine/lifecycle.py: created, running, paused, stopping,
        cancelling, or the end: done, submitted, stopped, cancelled, deadline, failed)."""
        return self._life.state

    def lifecycle(self) -> str:
        """The panel's name for the lifecycle state (``lifecycle.phase``)."""
        return phase(self._life.state)

    def set_caps(self, **changes: Any) -> Caps:
        """Change caps (batch_size, incremental, max_moves_per_broker, max_leader_moves,
        cluster_max_reassignments, parallel_replica_count, max_elections_per_poll); effective
        at the next decision (the next poll's elections), journaled as ``caps_changed``.

        A new ``parallel_replica_count`` R (None = whole move at once; it also switches
        KIP-435's leader-moves-first batch collection, unless ``prefer_leader_moves`` is given)
        applies to moves not yet started, and to moves part-way through their steps from their
        next step on: the steps left are planned again from the replicas the cluster shows once
        the step in flight completes (as KIP-435 computes each step from CR and FTR); the step
        in flight is never touched. A ``steps_for`` given to the constructor is replaced by
        KIP-435 steps with the new R."""
        with self._lock:
            r_given = "parallel_replica_count" in changes
            per_poll, r = live_changes(changes, self._elections.per_poll, self._r)
            new = self._caps.with_changes(**changes)
            if new.mode != self._caps.mode and self.state not in ("created",):
                raise UsageError(
                    f"cannot switch pacing mode from {self._caps.mode} to {new.mode} during a run"
                )
            self._caps = self._pace_caps(new, changes)  # --pace adaptive: brokers' own caps
            self._elections.per_poll = per_poll
            if r_given and r != self._r:
                self._r = r
                self._steps_for = steps_hook(r, self._min_isr_of)
                for ms in self._index.of(MoveStatus.MOVING, MoveStatus.READY):
                    ms.replan = True
            self._emit(
                "caps_changed",
                caps={
                    **asdict(self._caps),
                    "parallel_replica_count": self._r,
                    "max_elections_per_poll": per_poll,
                },
            )
        self._wake.set()
        return new

    def set_throttle(self, rate: int) -> None:
        """A new replication throttle (bytes/s) for the rest of the run, as the official
        tool's ``--execute --additional --throttle``: the brokers of the moves in flight get it
        at the next poll, later moves from the start; journaled as ``throttle_changed``.
        Only a run started with a throttle has one to change."""
        if isinstance(rate, bool) or not isinstance(rate, int) or rate <= 0:
            raise UsageError(f"throttle must be a positive number of bytes/s, got {rate!r}")
        with self._lock:
            if not self._throttles.active or self.options.throttle is None:
                raise UsageError("this run has no throttle to change (start it with --throttle)")
            self._throttles.set_rate(rate)
            self._pace_ceiling(rate)  # --pace adaptive: the new ceiling
            self._eta.restart()
            self._emit("throttle_changed", rate=rate)
        self._wake.set()

    @property
    def parallel_replica_count(self) -> int | None:
        """KIP-435's R now in force (None = whole move at once)."""
        return self._r

    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> None:
        """``fn(event)`` for every journal event, called from the loop's thread."""
        with self._lock:
            self._subscribers.append(fn)

    def status(self) -> RunStatus:
        """Counts and one row per move, now (safe from any thread)."""
        with self._lock:
            return RunStatus.of(
                self.state,
                self.run_id,
                self._moves_in_order,
                self.waiting_reason,
                counts=self._index.counts(),
                total=len(self._order),
            )

    def wait(self, timeout: float | None = None) -> RunResult | None:
        """Block until the run ends; its result (None on timeout)."""
        self._done.wait(timeout)
        return self._result

    @property
    def caps(self) -> Caps:
        return self._caps

    # ---- the loop -------------------------------------------------------------------------

    def _run_safe(self) -> None:
        try:
            self.run()
        except ReassignKitError:
            pass  # recorded in the result and the journal
        except Exception:  # noqa: BLE001 - a worker thread must not die silently
            log.exception("run %s failed", self.run_id)

    def run(self) -> RunResult:
        """Run to the end in the calling thread; raise RunError if it ended on an error."""
        return self._drive()

    _dirty = False
    _throttles_fresh = False  # set by a clean submission: its sync covered this poll
    _began = False  # the start went through: the run may have changed the cluster
    _exc: ReassignKitError | None = None
    _deadline_hit = False
    _resume_cancel = False  # resuming a run killed during its cancel
