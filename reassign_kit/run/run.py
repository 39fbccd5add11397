"""The paced executor's facade: ``Run`` — start, pause, resume, stop, cancel, set caps and
throttle, subscribe, status, wait — over the parts that do the work, poll → schedule →
throttle → submit → journal, until the plan is submitted (KIP-1335's return point) or
complete (``wait``).

The CLI calls ``run()`` (signals call ``stop()``), the panel ``start()`` (a worker thread; its
buttons call the controls). Decisions come from ``schedule.decide`` (pure); cluster calls go
through a ``gateway.Gateway`` (Kafka or ``simulate.SimCluster``).

Ownership. ``Run`` holds its parts (``self.parts``: ``shared.RunParts``), each built with the
run's shared state (``self.shared``: ``shared.RunState``) and the parts it calls; a part calls
another through its public methods only, and keeps what only it touches as its own attributes.

- ``begin.Begin``: the journal's opening, the moves' order and their state at start,
  write-ahead originals read back on a resume.
- ``loop.Loop``: the poll loop, the journal's commits, events to subscribers, deadlines.
- ``submit.Submitter``: originals at submission, the write-ahead ``intent``, the Alter.
- ``track.Tracker``: each move's progress against the cluster; the ETA's inputs (the ETA
  itself is ``eta.estimate.RunEta``, held in the state).
- ``rollback.Rollback``: the way back to each move's original (every cancel path).
- ``finish.Finisher``: the end on every path (cancel, elections owed, throttle cleanup with
  retries, the result).
- ``disks.DiskGate``: the disk ceiling before each submission (moves held for space).
- ``pace.Pace`` (its controller, ramp and memory its own): ``--pace adaptive``, health sampled
  each poll, per-broker rates and a hold on submissions; ``canary.Canaries``: the probe's
  canary topics.
- Collaborators held in the state: ``throttles.keeper.ThrottleKeeper`` (``throttles``: the
  one owner of the throttles on the cluster), ``lifecycle.Lifecycle`` (``life``: the run's
  state by one transition table), ``elections.Elections``, ``logdirs.LogDirMoves`` (``dirs``).

Who writes which field of the shared state after the constructor (the facade sets them all
first; the control flags, under ``lock``, from any thread):

- Begin: began, resume_cancel; with the facade: journal, min_isr, order, pos, run_id,
  started_at
- Loop: deadline_hit, exc, loop_thread; with the facade: draining, end_state, journal_error,
  stop_submitting; with Finisher and the facade: error, state
- Submitter: waiting_reason (with the facade); with Loop: throttles_fresh; with Loop and
  Rollback: dirty (a change was sent: re-read the cluster)
- Tracker: last_sample (with the facade)
- Finisher: finishing, result (with the facade)
- Pace: health_opener, pace_hold; with the facade: caps, health
- the facade only: the inputs (gw, plan, options, journal_path, clock, ...), the control
  flags (stop, paused, abandon, cancel_on_stop, wake, done) and the collections the parts
  mutate in place (moves, index, inflight_items, subscribers, ...)

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
from ..throttles.keeper import ThrottleKeeper
from .begin import Begin
from .canary import Canaries
from .disks import DiskGate
from .elections import Elections
from .finish import Finisher
from .lifecycle import CANCELLING, STOPPING, Lifecycle, phase
from .logdirs import LogDirMoves
from .loop import Loop
from .options import ExecuteOptions, live_changes
from .pace import Pace
from .retry import RetryingGateway
from .rollback import Rollback
from .shared import RunLock, RunParts, RunState
from .submit import Submitter
from .track import Tracker

log = logging.getLogger(__name__)


class Run:
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
        growth_rates: Mapping[TopicPartition, float] | None = None,
    ):
        self.shared = shared = RunState()
        self.parts = parts = RunParts(self)
        parts.begin = Begin(shared, parts)
        parts.loop = Loop(shared, parts)
        parts.submit = Submitter(shared, parts)
        parts.track = Tracker(shared, parts)
        parts.rollback = Rollback(shared, parts)
        parts.finish = Finisher(shared, parts)
        parts.pace = Pace(shared, parts)
        parts.canary = Canaries(shared, parts)
        parts.disks = DiskGate(shared, parts)
        parts.disks.growth.recorded = dict(growth_rates or {})
        self.shared.gw = gateway
        self.shared.plan = plan
        self.shared.options = (options or ExecuteOptions()).validate()
        self.shared.journal_path = os.fspath(journal_path) if journal_path is not None else None
        self.shared.resume_requested = resume
        self.shared.plan_path = plan_path
        self.shared.clock = clock
        self.shared.sleep_fn = sleep
        # KIP-435 steps: min.insync.replicas from ``min_isr``, options.min_isr or the gateway
        self.shared.min_isr = (
            (dict(min_isr) if isinstance(min_isr, Mapping) else min_isr)
            if min_isr is not None
            else self.shared.options.min_isr
        )
        self.shared.r = self.shared.options.parallel_replica_count
        self.shared.steps_for = steps_for or steps_hook(self.shared.r, self.parts.begin.min_isr_of)
        self.shared.secrets = tuple(secrets)
        self.shared.health = health  # --pace adaptive: the run's (closed at its end); None: a probe
        self.shared.caps = self.shared.options.caps()
        self._controls()
        self._moves(run_id)
        self._collaborators(gateway, plan)

    def _controls(self) -> None:
        """The control flags (set from any thread, under ``lock``), the subscribers, the
        lifecycle and the result awaited."""
        # listeners never run under it: its release hands them what was emitted under it
        self.shared.lock = RunLock(released=self.parts.loop.deliver)
        self.shared.wake = threading.Event()
        self.shared.stop = threading.Event()
        self.shared.abandon = threading.Event()  # a second stop/cancel: stop waiting for rollbacks
        self.shared.cancel_on_stop = self.shared.options.cancel_on_stop
        self.shared.paused = False
        # (listener, the kinds of event it hears, None: every one), in the order they came
        self.shared.subscribers: list[
            tuple[Callable[[dict[str, Any]], None], frozenset[str] | None]
        ] = []
        self.shared.thread: threading.Thread | None = None
        self.shared.done = threading.Event()
        self.shared.result: RunResult | None = None
        self.shared.state = "created"
        # the lifecycle (run/lifecycle.py's table): every control call and the run's
        # start and end move it, one ``lifecycle`` event per transition; refused otherwise
        self.shared.life = Lifecycle(self.parts.loop.emit)
        self.shared.waiting_reason: str | None = None

    def _moves(self, run_id: str | None) -> None:
        """The run's name and the moves' state, filled by the start (``Begin``)."""
        self.shared.run_id = run_id or ""
        self.shared.started_at: float | None = None
        self.shared.moves: dict[TopicPartition, MoveState] = {}
        self.shared.order: list[TopicPartition] = []
        self.shared.pos: dict[TopicPartition, int] = {}  # plan order of each move
        self.shared.index = MoveIndex()  # the moves by status, kept by the transitions
        self.shared.inflight_items: dict[TopicPartition, tuple[tuple, Item]] = {}
        # write-ahead originals read back from the journal on resume
        self.shared.wal_originals: dict[TopicPartition, tuple[int, ...]] = {}
        self.shared.order_unknown: set[TopicPartition] = set()  # originals from KIP-455's set

    def _collaborators(self, gateway: Gateway, plan: Plan) -> None:
        """What the parts share to reach the cluster (the retrying gateway, the throttle
        keeper, log-dir moves, elections), the ETA's inputs and the run's end state."""
        # every admin call of the loop retried with backoff, each retry journaled
        self.shared.gw = RetryingGateway(
            gateway,
            self.parts.loop.sleep,
            self.parts.loop.emit,
            before_change=self.parts.loop.commit_before_change,
        )
        self.shared.throttles = ThrottleKeeper(
            self.shared.gw,
            plan.topics(),
            self.shared.options.throttle,
            self.shared.options.log_dir_throttle,
            self.parts.loop.emit,
        )
        self.shared.last_sample = -1e18
        # the run's ETA: per broker, bytes its new replicas must receive (from the
        # plan, once) and have received by completed steps (counted as they complete)
        self.shared.inbound_total: dict[int, int] = {}
        self.shared.inbound_landed: dict[int, int] = {}
        self.shared.eta = RunEta(poll_s=self.shared.options.poll_interval_ms / 1000)
        # from a move's last byte (as a sample saw it) to its completion: added to the ETA
        self.shared.lag = LagMeter()  # the completion lag (``eta_lag``)
        self.shared.journal: Journal | None = None
        self.shared.journal_error: JournalError | None = None  # the first failed journal write
        self.shared.finishing = False
        self.shared.draining = False  # the journal failed: finish the moves in flight, then fail
        self.shared.stop_submitting = False
        self.shared.end_state: str | None = None
        self.shared.error: str | None = None
        # moves between log dirs (the plan's log_dirs), as ops.execute starts them for the
        # legacy request; a move is complete only when its replicas are also in those dirs
        self.shared.dirs = LogDirMoves(
            self.shared.gw,
            plan,
            self.shared.moves,
            self.shared.options.timeout_s,
            self.parts.loop.emit,
        )
        # preferred leader elections once a move that changed its first replica completes
        # (run/elections.py): it hears every ``completed`` event
        self.shared.elections = Elections(
            self.shared.gw,
            self.parts.loop.emit,
            lambda tp: self.shared.moves[tp].original,
            lambda tp: self.shared.moves[tp].move.replicas,
            enabled=self.shared.options.elect_leaders,
            per_poll=self.shared.options.max_elections_per_poll,
        )
        self.shared.subscribers.append((self.shared.elections.on_event, Elections.HEARS))

    # ---- what callers read of the run ------------------------------------------------------

    @property
    def gw(self) -> Gateway:
        return self.shared.gw

    @property
    def plan(self) -> Plan:
        return self.shared.plan

    @property
    def options(self) -> ExecuteOptions:
        return self.shared.options

    @property
    def run_id(self) -> str:
        return self.shared.run_id

    @property
    def state(self) -> str:
        return self.shared.state

    @property
    def journal_path(self) -> str | None:
        return self.shared.journal_path

    @property
    def waiting_reason(self) -> str | None:
        return self.shared.waiting_reason

    # ---- control, from any thread ---------------------------------------------------------

    def start(self) -> Run:
        """Run the loop in a worker thread (for the notebook panel)."""
        self.shared.thread = threading.Thread(
            target=self._run_safe, name="reassign-run", daemon=True
        )
        self.shared.thread.start()
        return self

    def pause(self) -> bool:
        """Stop submitting; keep watching completions and keep throttles right. False (and
        nothing done) when the lifecycle refuses it: already paused, stopping, ended."""
        with self.shared.lock:
            if not self.parts.loop.fire("pause"):
                return False
            self.shared.paused = True
            self.parts.loop.emit("paused")
        self.shared.wake.set()
        return True

    def resume(self) -> bool:
        """Submit again after ``pause()``; False (nothing done) when the run is not paused."""
        with self.shared.lock:
            if not self.parts.loop.fire("resume"):
                return False
            self.shared.paused = False
            self.parts.loop.emit("resumed")
        self.shared.wake.set()
        return True

    def stop(self, cancel_inflight: bool = False) -> None:
        """Stop (drain): submit nothing more and end the run; moves in flight keep running
        with their throttles (a stepped move's later steps are not submitted: Resume continues
        it). With ``cancel_inflight`` (or ``--on-interrupt cancel``) it is ``cancel()``. Asked
        again while the run's end waits for a cancel's rollbacks (a second Ctrl-C), it stops
        waiting: they go on, throttled, reported as rolling back. False (nothing done) once
        the run has ended."""
        with self.shared.lock:
            cancel = self.shared.cancel_on_stop or cancel_inflight
            if self.shared.life.state == (CANCELLING if cancel else STOPPING):
                return self._asked_again()
            if not self.parts.loop.fire("cancel" if cancel else "stop"):
                return False
            if self.shared.stop.is_set() and self.shared.finishing:
                self.shared.abandon.set()
            self.shared.cancel_on_stop = cancel
        self.shared.stop.set()
        self.shared.wake.set()
        return True

    def _asked_again(self) -> bool:
        """The same stop asked again (under the lock): changes nothing and journals nothing,
        but the first repeat while the end waits for rollbacks, which stops that wait. A
        listener that stops the run on every event journaled one transition per event, each
        heard by it again, and the run never ended."""
        if self.shared.finishing and not self.shared.abandon.is_set():
            self.parts.loop.fire("cancel" if self.shared.cancel_on_stop else "stop")
            self.shared.abandon.set()
            self.shared.wake.set()
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
        """The lifecycle state now (run/lifecycle.py: created, running, paused, stopping,
        cancelling, or the end: done, submitted, stopped, cancelled, deadline, failed)."""
        return self.shared.life.state

    def lifecycle(self) -> str:
        """The panel's name for the lifecycle state (``lifecycle.phase``)."""
        return phase(self.shared.life.state)

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
        with self.shared.lock:
            r_given = "parallel_replica_count" in changes
            per_poll, r = live_changes(changes, self.shared.elections.per_poll, self.shared.r)
            new = self.shared.caps.with_changes(**changes)
            if new.mode != self.shared.caps.mode and self.shared.state not in ("created",):
                raise UsageError(
                    f"cannot switch pacing mode from {self.shared.caps.mode} to {new.mode} during a run"
                )
            self.shared.caps = self.parts.pace.pace_caps(
                new, changes
            )  # --pace adaptive: brokers' own caps
            self.shared.elections.per_poll = per_poll
            if r_given and r != self.shared.r:
                self.shared.r = r
                self.shared.steps_for = steps_hook(r, self.parts.begin.min_isr_of)
                for ms in self.shared.index.of(MoveStatus.MOVING, MoveStatus.READY):
                    ms.replan = True
            self.parts.loop.emit(
                "caps_changed",
                caps={
                    **asdict(self.shared.caps),
                    "parallel_replica_count": self.shared.r,
                    "max_elections_per_poll": per_poll,
                },
            )
        self.shared.wake.set()
        return new

    def set_throttle(self, rate: int) -> None:
        """A new replication throttle (bytes/s) for the rest of the run, as the official
        tool's ``--execute --additional --throttle``: the brokers of the moves in flight get it
        at the next poll, later moves from the start; journaled as ``throttle_changed``.
        Only a run started with a throttle has one to change."""
        if isinstance(rate, bool) or not isinstance(rate, int) or rate <= 0:
            raise UsageError(f"throttle must be a positive number of bytes/s, got {rate!r}")
        with self.shared.lock:
            if not self.shared.throttles.active or self.shared.options.throttle is None:
                raise UsageError("this run has no throttle to change (start it with --throttle)")
            self.shared.throttles.set_rate(rate)
            self.parts.pace.pace_ceiling(rate)  # --pace adaptive: the new ceiling
            self.shared.eta.restart()
            self.parts.loop.emit("throttle_changed", rate=rate)
        self.shared.wake.set()

    def set_broker_throttles(self, rates: Mapping[int, int]) -> None:
        """Per-broker replication rates (--pace adaptive's lever, and an operator's): see
        ``Pace.set_broker_throttles``."""
        self.parts.pace.set_broker_throttles(rates)

    @property
    def parallel_replica_count(self) -> int | None:
        """KIP-435's R now in force (None = whole move at once)."""
        return self.shared.r

    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> None:
        """``fn(event)`` for every journal event, in order, never under the run's lock: from
        the loop's thread while it runs (before or after it, from the thread that emitted)."""
        with self.shared.lock:
            self.shared.subscribers.append((fn, None))

    def status(self) -> RunStatus:
        """Counts and one row per move, now (safe from any thread). Lock-free: the counts are
        the index's last published snapshot, so a reader (a scrape holding its own lock)
        never waits on the run, which may be emitting into that reader's listener."""
        return RunStatus.of(
            self.shared.state,
            self.shared.run_id,
            self.parts.begin.moves_in_order,
            self.shared.waiting_reason,
            counts=self.shared.index.snapshot,
            total=len(self.shared.order),
        )

    def wait(self, timeout: float | None = None) -> RunResult | None:
        """Block until the run ends; its result (None on timeout)."""
        self.shared.done.wait(timeout)
        return self.shared.result

    @property
    def caps(self) -> Caps:
        return self.shared.caps

    # ---- the loop -------------------------------------------------------------------------

    def _run_safe(self) -> None:
        try:
            self.run()
        except ReassignKitError:
            pass  # recorded in the result and the journal
        except Exception:  # noqa: BLE001 - a worker thread must not die silently
            log.exception("run %s failed", self.shared.run_id)

    def run(self) -> RunResult:
        """Run to the end in the calling thread; raise RunError if it ended on an error."""
        return self.parts.loop.drive()
