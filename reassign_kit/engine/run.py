"""The paced executor: poll → schedule → throttle → submit → journal, until the plan is
submitted (KIP-1335's return point) or complete (``wait``).

``Run`` is used alike by the CLI (``run()`` in the main thread, signals call ``stop()``) and by
the notebook panel (``start()`` in a worker thread; buttons call ``pause()`` / ``resume()`` /
``stop()`` / ``set_caps()`` from the UI thread). Every decision comes from ``schedule.decide``
(pure); every cluster call goes through a ``gateway.Gateway``, so the same loop runs against
Kafka (``admin.AdminGateway``) and against ``simulate.SimCluster``.

Invariants kept on every exit path (done, error, deadline, stop, Ctrl-C / SIGTERM): the
throttles on the cluster are those the moves still in flight need (no more, no less), and a
move is only submitted after the throttle it needs is set. The journal plus the cluster are
the whole state: ``Run(..., resume=True)`` after a SIGKILL resubmits nothing complete, adopts
moves still in flight and keeps the caps.
"""

from __future__ import annotations

import logging
import os
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict
from typing import Any

from .. import __version__
from ..cluster.gateway import Gateway
from ..cluster.views import (
    METADATA_SETTLE_S,
    no_reassignment_in_progress,
    partition_sizes,
    refuse_in_flight,
)
from ..errors import JournalError, KafkaOperationError, ReassignKitError, UsageError
from ..model import PartitionState, Plan, TopicPartition, is_complete
from . import deadlines
from . import throttle as thr
from .elections import Elections
from .eta import RunEta
from .gcpause import between_polls, freeze_heap, thaw_heap
from .journal import Journal, read_events
from .logdirs import LogDirMoves
from .moves import MoveIndex, MoveState, MoveStatus
from .options import ON_DEADLINE, ExecuteOptions, cli_options  # noqa: F401 (ON_DEADLINE: re-exported)
from .progress import eta_text, replica_bytes_copied
from .results import RunError, RunResult, RunStatus
from .retry import RetryingGateway
from .schedule import Caps, Item, assign_batches, decide, item_for, order_items
from .steps import StepsFor, steps_hook

log = logging.getLogger(__name__)

PENDING, READY, MOVING = MoveStatus.PENDING, MoveStatus.READY, MoveStatus.MOVING
ROLLING_BACK = MoveStatus.ROLLING_BACK
DONE, CANCELLED, FAILED = MoveStatus.DONE, MoveStatus.CANCELLED, MoveStatus.FAILED
CLEANUP_RETRY_S = 60.0  # the final cleanup asks a broker that did not answer again, this long
CLEANUP_RETRY_EVERY_S = 3.0
LOST_AFTER_POLLS = 3  # a move seen neither reassigning nor at its target this often is lost


# ---------------------------------------------------------------------------- the Run


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
    ):
        self.gw = gateway
        self.plan = plan
        self.options = (options or ExecuteOptions()).validate()
        self.journal_path = os.fspath(journal_path) if journal_path is not None else None
        self.resume_requested = resume
        self.plan_path = plan_path
        self._clock = clock
        self._sleep_fn = sleep
        # KIP-435 steps: each topic's min.insync.replicas from ``min_isr``, else
        # options.min_isr, else the gateway's (read once, when the first step is planned)
        self._min_isr = (
            (dict(min_isr) if isinstance(min_isr, Mapping) else min_isr)
            if min_isr is not None
            else self.options.min_isr
        )
        self._r = self.options.parallel_replica_count
        self._steps_for = steps_for or steps_hook(self._r, self._min_isr_of)
        self._secrets = tuple(secrets)
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
        self.waiting_reason: str | None = None
        self.run_id = run_id or ""
        self._started_at: float | None = None
        self._moves: dict[TopicPartition, MoveState] = {}
        self._order: list[TopicPartition] = []
        self._pos: dict[TopicPartition, int] = {}  # plan order of each move
        self._index = MoveIndex()  # the moves by status, kept by the transitions
        self._inflight_items: dict[TopicPartition, tuple[tuple, Item]] = {}
        # every admin call of the loop retried with backoff, each retry journaled
        self.gw = RetryingGateway(
            gateway, self._sleep, self._emit, before_change=self._commit_before_change
        )
        self._throttles = thr.ThrottleKeeper(
            self.gw, plan.topics(), self.options.throttle, self.options.log_dir_throttle, self._emit
        )
        self._last_sample = -1e18
        # the run's ETA (issue 12): per broker, bytes its new replicas must receive (from the
        # plan, once) and have received by completed steps (counted as they complete)
        self._inbound_total: dict[int, int] = {}
        self._inbound_landed: dict[int, int] = {}
        self._eta = RunEta(poll_s=self.options.poll_interval_ms / 1000)
        # from a move's last byte (as a sample saw it) to its completion: added to the ETA
        self._full_at: dict[TopicPartition, float] = {}
        self._lags: list[float] = []
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

    def pause(self) -> None:
        """Stop submitting; keep watching completions and keep throttles right."""
        with self._lock:
            if not self._paused:
                self._paused = True
                self._emit("paused")
        self._wake.set()

    def resume(self) -> None:
        with self._lock:
            if self._paused:
                self._paused = False
                self._emit("resumed")
        self._wake.set()

    def stop(self, cancel_inflight: bool = False) -> None:
        """Stop (drain): submit nothing more and end the run; moves in flight keep running
        with their throttles (a stepped move's later steps are not submitted: Resume continues
        it). With ``cancel_inflight`` (or ``--on-interrupt cancel``) it is ``cancel()``. Asked
        again while the run's end waits for a cancel's rollbacks (a second Ctrl-C), it stops
        waiting: they go on, throttled, reported as rolling back."""
        with self._lock:
            if self._stop.is_set() and self._finishing:
                self._abandon.set()
            self._cancel_on_stop = self._cancel_on_stop or cancel_inflight
        self._stop.set()
        self._wake.set()

    def cancel(self) -> None:
        """Cancel (roll back): end the run and bring every move it touched and did not
        complete back to its original replica list, in order — the step in flight cancelled,
        a stepped move between steps included — waiting for it up to
        ``options.rollback_timeout``; each move is reported cancelled (back at its original),
        completed (it finished before the cancel reached it) or rolling back."""
        self.stop(cancel_inflight=True)

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
            per_poll = changes.pop("max_elections_per_poll", self._elections.per_poll)
            if isinstance(per_poll, bool) or not isinstance(per_poll, int) or per_poll < 1:
                raise UsageError(
                    f"--max-elections-per-poll must be a positive integer, got {per_poll!r}"
                )
            r_given = "parallel_replica_count" in changes
            r = changes.pop("parallel_replica_count", self._r)
            if r_given:
                if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 1):
                    raise UsageError(
                        "--parallel-replica-count must be a positive integer (None = whole move "
                        f"at once), got {r!r}"
                    )
                changes.setdefault("prefer_leader_moves", r is not None)
            new = self._caps.with_changes(**changes)
            if new.mode != self._caps.mode and self.state not in ("created",):
                raise UsageError(
                    f"cannot switch pacing mode from {self._caps.mode} to {new.mode} during a run"
                )
            self._caps = new
            self._elections.per_poll = per_poll
            if r_given and r != self._r:
                self._r = r
                self._steps_for = steps_hook(r, self._min_isr_of)
                for ms in self._index.of(MOVING, READY):
                    ms.replan = True
            self._emit(
                "caps_changed",
                caps={
                    **asdict(new),
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
            self._eta.restart()
            self._emit("throttle_changed", rate=rate)
        self._wake.set()

    @property
    def parallel_replica_count(self) -> int | None:
        """KIP-435's R now in force (None = whole move at once)."""
        return self._r

    def _min_isr_of(self, topic: str) -> int:
        """A topic's min.insync.replicas for its steps; the gateway is asked once, for the
        plan's topics."""
        if self._min_isr is None:
            self._min_isr = dict(self.gw.min_insync_replicas(self.plan.topics()))
        if isinstance(self._min_isr, int):
            return self._min_isr
        return self._min_isr.get(topic, 1)

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
        interrupted: BaseException | None = None
        try:
            self._begin()
            self.state = "running"
            freeze_heap(self)  # the plan's objects out of the full collections (gcpause)
            while True:
                # a full garbage collection due in the poll runs after it (gcpause)
                with between_polls():
                    try:
                        done = self._poll()
                        self._commit()  # group commit: one fsync per poll
                    except JournalError as e:
                        self._drain(e)
                        done = False
                if self._draining and not self._index.count(MOVING):
                    assert self._journal_error is not None
                    raise self._journal_error  # drained: the run fails on the journal error
                if done and not self._draining:
                    break
                self._sleep(self.options.poll_interval_ms / 1000.0)
        except KeyboardInterrupt as e:
            interrupted = e
            self._stop.set()
            self._end_state = "stopped"
        except ReassignKitError as e:
            self._exc = e
            self._fail(str(e))
        except Exception as e:  # noqa: BLE001 - recorded, throttles fixed, then re-raised as RunError
            self._fail(f"{type(e).__name__}: {e}")
        finally:
            self._finish()
        assert self._result is not None
        if interrupted is not None:
            raise interrupted
        if self._result.state == "failed":
            if self._exc is not None:
                raise self._exc
            raise RunError(self._result.error or "the run failed")
        return self._result

    def _poll(self) -> bool:
        """One iteration; a cluster fault that outlasted the calls' retries ends the run only
        when the run deadline has passed (or the user stopped it): else it is journaled and
        the next poll tries again. The poll's journal lines go to the OS together, at its
        end or before it sends a change (``Journal.batch``)."""
        try:
            with self._journal.batch() if self._journal is not None else nullcontext():
                return self._step_once()
        except KafkaOperationError as e:
            if self._stop.is_set():
                self._end_state = self._end_state or "stopped"
                return True
            o, now = self.options, self._clock()
            started = self._started_at if self._started_at is not None else now
            if o.run_deadline is not None and now - started > o.run_deadline:
                raise
            self._emit(
                "warning", message=f"poll failed after retries ({e}); trying again at the next poll"
            )
            return False

    def _sleep(self, seconds: float) -> None:
        if self._stop.is_set():
            return
        if self._sleep_fn is not None:
            self._sleep_fn(seconds)
        else:
            self._wake.wait(seconds)
            self._wake.clear()

    def _fail(self, msg: str) -> None:
        self._error = msg
        self._end_state = "failed"
        self._emit("error", message=msg)

    # ---- begin / resume -------------------------------------------------------------------

    def _begin(self) -> None:
        """Open the journal, read the cluster, load the moves (found complete, adopted on
        resume) and set the throttles the moves in flight need: the first change this run
        makes to the cluster comes last, so a start that fails changes nothing."""
        prior, resuming = self._open_journal()
        if resuming:
            self._elections.replay(prior)  # elections queued before and not finished
        tps = [m.tp for m in self.plan]
        states = self.gw.describe_partitions(tps)
        cluster = self.gw.list_reassignments()
        missing = [tp for tp in tps if tp not in states]
        if missing:
            raise UsageError(
                "unknown partition(s), nothing was sent: " + ", ".join(str(t) for t in missing[:10])
            )
        journaled = self._journaled_submissions(prior) if resuming else {}
        foreign = [tp for tp in cluster if tp not in journaled]
        if not resuming:  # the same refusal (message, exit 6) as the preflight's
            refuse_in_flight(foreign, self.options.additional)
        ordered = self._load_moves(states)
        self._journal_start(resuming, ordered, foreign)
        if self._journal is not None and self._journal.torn_bytes:
            self._emit(
                "warning",
                message=f"the journal's last line was torn ({self._journal.torn_bytes} bytes "
                "without a newline: the process died mid-write); it was cut off",
            )
        self._reconcile(states, journaled, resuming)
        if resuming:
            self._throttles.remember(prior)
        self._began = True  # from here on the run may change the cluster
        self._sync_throttles(cluster)

    def _open_journal(self) -> tuple[list[dict[str, Any]], bool]:
        """The journal's earlier events and whether this run resumes them; sets the run id
        and start time (the journaled ones on resume) and opens the journal."""
        prior: list[dict[str, Any]] = []
        if self.journal_path and os.path.exists(self.journal_path):
            prior = read_events(self.journal_path)
        first = next((e for e in prior if e.get("event") == "run_started"), None)
        resuming = self.resume_requested and first is not None
        if self.resume_requested and first is None:
            raise UsageError(f"--resume: no run_started event in journal {self.journal_path}")
        if resuming:
            if first.get("plan_digest") != self.plan.digest():
                raise UsageError(
                    f"--resume: the plan differs from the one journaled in {self.journal_path}"
                )
            self.run_id = first["run_id"]
            self._started_at = float(first["ts"])
        else:
            self.run_id = self.run_id or time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
            self._started_at = self._clock()
        if self.journal_path:
            self._journal = Journal(self.journal_path, self.run_id, self._clock, self._secrets)
        return prior, resuming

    def _load_moves(self, states: Mapping[TopicPartition, PartitionState]) -> list[Item]:
        """One MoveState per plan move, in the run's order and batches."""
        sizes = self._sizes([m.tp for m in self.plan])
        items = []
        for m in self.plan:
            st = states[m.tp]
            under = len(st.isr) < len(st.replicas) if st.isr else False
            base = (
                st.replicas
                if not st.reassigning
                else tuple(b for b in st.replicas if b not in st.adding)
            )
            items.append(item_for(m.tp, base, m.replicas, st.leader, sizes.get(m.tp, 0), under))
            for b in m.replicas:
                if b not in base:
                    self._inbound_total[b] = self._inbound_total.get(b, 0) + sizes.get(m.tp, 0)
        ordered = assign_batches(order_items(items, self.options.order), self._caps)
        self._order = [i.tp for i in ordered]
        self._pos = {tp: i for i, tp in enumerate(self._order)}
        plan_by_tp = self.plan.by_tp()
        emit = self._emit  # one bound method for every move (was one object per move)
        for it in ordered:
            ms = MoveState(plan_by_tp[it.tp], it, emit=emit)
            self._moves[it.tp] = ms
            self._index.add(ms)
        return ordered

    def _moves_in_order(self) -> list[MoveState]:
        return [self._moves[tp] for tp in self._order]

    def _journal_start(self, resuming: bool, ordered: list[Item], foreign: list) -> None:
        info = _cluster_info(self.gw)
        self._emit(
            "run_started",
            resumed=resuming,
            plan_digest=self.plan.digest(),
            plan_path=self.plan_path,
            plan=self.plan.to_json_obj() if len(self.plan) <= 20000 else None,
            moves=len(self.plan),
            options=self.options.to_json_obj(),
            mode=self._caps.mode,
            batches=(max((i.batch for i in ordered), default=-1) + 1),
            reassign_kit_version=__version__,
            kafka_version=info.get("kafka_version"),
            cluster=info,
            foreign_in_flight=len(foreign),
        )
        if foreign and self._caps.cluster_max_reassignments is None:
            self._emit(
                "warning",
                message=f"{len(foreign)} other reassignment(s) in flight; this run's caps do "
                "not count them (set --cluster-max-reassignments to)",
            )

    def _reconcile(
        self,
        states: Mapping[TopicPartition, PartitionState],
        journaled: Mapping[TopicPartition, dict],
        resuming: bool,
    ) -> None:
        """Each move against the cluster at start: complete already (or finished while the
        run was away), adopted in flight, or continued from where the cluster shows it."""
        now = self._clock()
        self._dirs.check_placed(
            tp
            for tp in self._dirs.targets
            if is_complete(self._moves[tp].move.replicas, states[tp])
        )
        for tp in self._order:
            ms = self._moves[tp]
            st = states[tp]
            j = journaled.get(tp)
            if self._complete(tp, st):
                if j is not None and not j.get("completed"):
                    ms.submitted_at = float(j.get("submitted_ts", now))
                    ms.original = tuple(j.get("original") or ())
                    ms.complete(now, st.replicas, adopted=True)
                elif j is None:
                    ms.complete(now, st.replicas, already=True)
                else:  # journaled complete already
                    ms.completed_at = now
                    ms.restore(MoveStatus.DONE)
            elif resuming and j is not None and st.reassigning:
                ms.submitted_at = float(j.get("submitted_ts", now))
                ms.original = tuple(j.get("original") or ())
                steps = [st.target, *self._plan_steps(ms, st, adopted_target=st.target)]
                ms.adopt(now, st.target, steps, ms.original)
            elif resuming and j is not None:
                # submitted before, neither moving nor complete: an earlier step completed
                # or the move was cancelled; continue from what the cluster shows
                ms.original = tuple(j.get("original") or st.replicas)
                ms.submitted_at = float(j.get("submitted_ts", now))
                ms.restore(MoveStatus.READY)

    def _journaled_submissions(self, prior: list[dict[str, Any]]) -> dict[TopicPartition, dict]:
        out: dict[TopicPartition, dict] = {}
        for e in prior:
            ev = e.get("event")
            if "topic" not in e:
                continue
            tp = TopicPartition(e["topic"], int(e["partition"]))
            if ev == "submitted":
                out.setdefault(tp, {}).update(
                    submitted_ts=e["ts"], original=e.get("current"), completed=False
                )
            elif ev == "completed" and tp in out:
                out[tp]["completed"] = True
        return out

    def _sizes(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Bytes per partition (``cluster.views.partition_sizes``): to order and to report."""
        try:
            return partition_sizes(self.gw, tps)
        except ReassignKitError as e:
            self._emit("warning", message=f"cannot read partition sizes: {e}")
            return {}

    def _plan_steps(
        self, ms: MoveState, st: PartitionState, adopted_target: tuple[int, ...] | None = None
    ) -> list[tuple[int, ...]]:
        base = PartitionState(st.tp, adopted_target or st.replicas, st.isr, st.leader)
        if adopted_target is not None and tuple(adopted_target) == tuple(ms.move.replicas):
            return []
        steps = self._steps_for(ms.move, base, ms.original or base.replicas)
        return [tuple(s) for s in steps] or [tuple(ms.move.replicas)]

    # ---- one iteration --------------------------------------------------------------------

    def _step_once(self) -> bool:
        """Poll, update, decide, submit; True when the loop should end."""
        cluster = self.gw.list_reassignments()
        watch = [ms.tp for ms in self._index.of(MOVING, READY, ROLLING_BACK)]
        states = self.gw.describe_partitions(watch) if watch else {}
        now = self._clock()
        with self._lock:
            self._dirs.drive(now)
            self._update(states, now)
        self._maybe_sample(now, force=False)
        self._check_deadlines(now)
        if self._stop.is_set():
            self._end_state = self._end_state or "stopped"
            return True
        if self._end_state is not None:
            return True
        if not self._paused and not self._stop_submitting:
            self._schedule(cluster, states, now)
            if self._end_state is not None:
                return True
        self._sync_throttles(self.gw.list_reassignments() if self._dirty else cluster)
        if not self._paused and not self._draining:  # a change: not while paused / draining
            self._elections.poll()  # at most --max-elections-per-poll, one request
        return self._finished()

    _dirty = False
    _began = False  # the start went through: the run may have changed the cluster
    _exc: ReassignKitError | None = None
    _deadline_hit = False

    def _complete(self, tp: TopicPartition, st: PartitionState | None) -> bool:
        """``model.is_complete`` plus, for a move with log dirs, its replicas in those dirs."""
        return self._dirs.complete(tp, is_complete(self._moves[tp].move.replicas, st))

    def _update(self, states: Mapping[TopicPartition, PartitionState], now: float) -> None:
        for ms in self._index.of(MOVING, READY, ROLLING_BACK):
            tp = ms.tp
            st = states.get(tp)
            if st is None:
                ms.fail("partition no longer exists")
                continue
            if ms.status == "ready":
                continue
            if ms.status is ROLLING_BACK:
                self._update_rollback(ms, st, now)
                continue
            if is_complete(ms.step_target, st):
                ms.lost_polls, ms.lost_since = 0, None
                final = ms.step >= len(ms.steps) or tuple(st.replicas) == tuple(ms.move.replicas)
                if final and not self._complete(tp, st):
                    continue  # replicas in place, still moving between log dirs
                self._landed(ms, now)
                if final:
                    ms.complete(now, st.replicas)
                else:
                    ms.complete_step(st.replicas)
            elif not st.reassigning:
                if self._seen_lost(ms, now):
                    ms.fail(
                        f"no longer reassigning and not at its target {list(ms.step_target)} "
                        f"(replicas {list(st.replicas)}): cancelled or replaced outside this run"
                    )
            else:
                ms.lost_polls, ms.lost_since = 0, None

    def _landed(self, ms: MoveState, now: float) -> None:
        """The step in flight of ``ms`` completed: its new replicas hold the partition (and
        the time since a sample saw its last byte in is one more completion lag)."""
        full = self._full_at.pop(ms.tp, None)
        if full is not None:
            self._lags = [*self._lags[-19:], now - full]
        for b in ms.step_target:
            if b not in ms.step_from:
                self._inbound_landed[b] = self._inbound_landed.get(b, 0) + ms.item.size_bytes

    @staticmethod
    def _seen_lost(ms: MoveState, now: float) -> bool:
        """Counts one more poll at which ``ms`` is neither reassigning nor where it should be;
        lost only once metadata had time to settle (as ops.settle waits) and it was seen so at
        several polls: right after a move ends a broker may still show the intermediate set."""
        ms.lost_polls += 1
        ms.lost_since = now if ms.lost_since is None else ms.lost_since
        return ms.lost_polls >= LOST_AFTER_POLLS and now - ms.lost_since >= METADATA_SETTLE_S

    def _update_rollback(self, ms: MoveState, st: PartitionState, now: float) -> None:
        """A move rolling back: cancelled once the cluster shows its original replicas (in
        order, not reassigning); failed if its reassignment ended elsewhere (seen so after
        the metadata settle window, as a lost move)."""
        if is_complete(ms.original, st):
            self._back_at_original(ms, st, ms.cancel_reason or "cancel")
        elif not st.reassigning:
            if self._seen_lost(ms, now):
                ms.fail(
                    f"rollback to {list(ms.original)} ended at {list(st.replicas)}: "
                    "cancelled or replaced outside this run"
                )
        else:
            ms.lost_polls, ms.lost_since = 0, None

    def _back_at_original(self, ms: MoveState, st: PartitionState, reason: str) -> None:
        """A cancelled move is at its original replica list: ``cancelled``. When another
        replica still leads (a step dropped the original leader, and the way back kept the one
        that took over), its preferred — original — leader is elected (KIP-460): Kafka moves
        leadership by itself only when the leader leaves the replica set."""
        lead = ms.original[0]
        if st.leader is not None and st.leader != lead:
            try:
                err = self.gw.elect_preferred_leaders([ms.tp]).get(ms.tp)
            except KafkaOperationError as e:
                err = str(e)
            if err:
                self._emit(
                    "warning",
                    **_tpf(ms.tp),
                    message=f"{ms.tp}: back at its original replicas, led by {st.leader}; "
                    f"electing its original leader {lead} failed: {err} (kafka-leader-election "
                    "--election-type PREFERRED, or Kafka's auto leader rebalance, moves it)",
                )
            else:
                self._emit("leader_elected", **_tpf(ms.tp), leader=lead, previous=st.leader)
        ms.cancel(reason, replicas=st.replicas)

    def _schedule(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        states: Mapping[TopicPartition, PartitionState],
        now: float,
    ) -> None:
        """Ask ``schedule.decide`` what may start now (new moves and next steps) and submit it."""
        with self._lock:
            caps = self._caps
        ready_items, ready_states = self._next_steps(states, now)
        if not self._index.count(PENDING) and not ready_items:
            self.waiting_reason = None
            return
        inflight = _InflightItems(self)  # built only if a cap reads them
        # read lazily by decide, only as far as it needs (not the whole plan at every poll)
        pending = (ms.item for ms in self._index.iter(PENDING))
        d = decide(pending, inflight, caps, ready=ready_items, cluster_inflight=len(cluster))
        self.waiting_reason = d.waiting_reason
        if d.submit:
            self._submit(cluster, d.submit, ready_states, d.batch if caps.mode == "batch" else None)

    def _next_steps(
        self, states: Mapping[TopicPartition, PartitionState], now: float
    ) -> tuple[list[Item], dict[TopicPartition, PartitionState]]:
        """The next steps of moves between steps (they hold a slot), as schedule items, with
        the states they start from; steps planned again where R changed or the replicas are
        not where the last step left them; a move found complete completes here."""
        items: list[Item] = []
        ready_states: dict[TopicPartition, PartitionState] = {}
        ready_tps = sorted((ms.tp for ms in self._index.of(READY)), key=self._pos.__getitem__)
        if not ready_tps:
            return items, ready_states
        fresh = {tp: states[tp] for tp in ready_tps if tp in states}
        missing = [tp for tp in ready_tps if tp not in fresh]
        if missing:
            fresh.update(self.gw.describe_partitions(missing))
        for tp in ready_tps:
            st = fresh.get(tp)
            ms = self._moves[tp]
            if st is None:
                continue
            if not ms.steps or ms.step == 0 or tuple(st.replicas) != ms.step_target:
                ms.steps = self._plan_steps(ms, st)
                ms.step = 0
            elif ms.replan:  # R changed: the steps done stay, those left are planned anew
                ms.steps = ms.steps[: ms.step] + self._plan_steps(ms, st)
            ms.replan = False
            if self._complete(tp, st):
                ms.complete(now, st.replicas)
                continue
            nxt = ms.steps[ms.step] if ms.step < len(ms.steps) else tuple(ms.move.replicas)
            ready_states[tp] = st
            it = item_for(tp, st.replicas, nxt, st.leader, ms.item.size_bytes)
            items.append(
                Item(
                    tp,
                    it.brokers,
                    it.moves_leader,
                    ms.item.size_bytes,
                    ms.item.under_replicated,
                    ms.item.batch,
                )
            )
        return items, ready_states

    def _submit(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        tps: Sequence[TopicPartition],
        ready_states: Mapping[TopicPartition, PartitionState],
        batch: int | None,
    ) -> None:
        """Set the throttles the moves need, then submit each one's next step in one request;
        a rejected submission fails its move and ends the run."""
        new_tps = [tp for tp in tps if self._moves[tp].status == "pending"]
        new_states = self.gw.describe_partitions(new_tps) if new_tps else {}
        targets: dict[TopicPartition, tuple[int, ...]] = {}
        steps_info: dict[TopicPartition, int] = {}
        for tp in tps:
            ms = self._moves[tp]
            st = ready_states.get(tp) or new_states.get(tp)
            if st is None:
                ms.fail("partition no longer exists")
                continue
            if ms.status == "pending":
                ms.original = tuple(st.replicas)
                ms.steps = self._plan_steps(ms, st)
                ms.step = 0
            nxt_i = ms.step + 1
            targets[tp] = ms.steps[nxt_i - 1] if nxt_i <= len(ms.steps) else tuple(ms.move.replicas)
            steps_info[tp] = nxt_i
        if not targets:
            return
        # throttles first: the moves about to start must never run unthrottled
        self._sync_throttles(
            cluster,
            {tp: (tgt, ready_states.get(tp) or new_states[tp]) for tp, tgt in targets.items()},
        )
        results = self.gw.alter_reassignments(
            targets, allow_replication_factor_change=self.options.allow_replication_factor_change
        )
        self._dirty = True
        now = self._clock()
        errors: dict[TopicPartition, str] = {}
        for tp, tgt in targets.items():
            ms = self._moves[tp]
            err = results.get(tp, "no answer from the controller")
            if err:
                errors[tp] = err
                ms.reject(err, tgt, steps_info[tp])
                continue
            if ms.submitted_at is None:
                ms.submit(now, batch)
            ms.submit_step(now, steps_info[tp], tgt)
        self._dirs.register(now)  # so that the run cannot return before they begin
        if errors:
            tp0, e0 = next(iter(errors.items()))
            submitted = self._index.submitted
            self._fail(
                f"{len(errors)} submission(s) rejected, e.g. {tp0}: {e0}; the run stopped "
                f"after submitting {submitted} move(s) (see the journal)"
            )

    def _inflight_item(self, ms: MoveState) -> Item:
        """The step in flight as a schedule item (kept per step: asked for at every poll)."""
        key = (ms.step_from, ms.step_target)
        cached = self._inflight_items.get(ms.tp)
        if cached is not None and cached[0] == key:
            return cached[1]
        it = item_for(ms.move.tp, ms.step_from, ms.step_target)
        item = Item(
            ms.move.tp,
            it.brokers,
            it.moves_leader,
            ms.item.size_bytes,
            ms.item.under_replicated,
            ms.item.batch,
        )
        self._inflight_items[ms.tp] = (key, item)
        return item

    def _finished(self) -> bool:
        idx = self._index
        if idx.count(FAILED) and self._end_state is None:
            bad = idx.of(FAILED)[0]
            self._fail(f"{bad.move.tp}: {bad.error}")
            return True
        if self._elections.pending:  # elections due: sent before the run ends
            return False
        if idx.count(DONE, CANCELLED) == len(self._moves):
            self._end_state = self._end_state or ("deadline" if self._deadline_hit else "done")
            return True
        if self.options.wait or self._dirs.pending:  # a log-dir move not begun would be lost
            return False
        # KIP-1335: return once every move is submitted; multi-step moves must be driven on
        if idx.count(PENDING, READY, ROLLING_BACK):
            return False
        if any(ms.step < len(ms.steps) for ms in idx.of(MOVING)):
            return False
        if self._elections.enabled and any(
            ms.original and set(ms.original) == set(ms.move.replicas) for ms in idx.of(MOVING)
        ):
            return False  # replica order only: complete at once, then elected by this run
        self._end_state = "submitted"
        return True

    # ---- deadlines and stuck detection ------------------------------------------------------

    def _check_deadlines(self, now: float) -> None:
        """Report what expired (``deadlines.check``) and apply ``--on-deadline``."""
        o = self.options
        moving = self._index.of(MOVING)
        expired = deadlines.check(
            moving, o, now, self._started_at, self._end_state is not None, self._emit
        )
        if o.on_deadline == "wait" or not expired:
            return
        self._deadline_hit = True
        if o.on_deadline == "stop":
            self._stop_submitting = True
            self._end_state = "deadline"
            return
        if o.on_deadline == "cancel":
            victims = [ms for ms, _ in expired.moves]
            if expired.run:  # every move of the run not complete, between steps included
                victims = self._index.of(MOVING, READY)
                self._end_state = "deadline"
            self._cancel([ms.move.tp for ms in victims], reason="deadline")

    def _cancel(self, tps: Sequence[TopicPartition], reason: str) -> None:
        """Cancel means rollback: every move among ``tps`` that is under way (a step in
        flight, or between steps) goes back to its original replica list, in order.

        The step in flight is cancelled first (Kafka puts the partition back where that step
        started and deletes the replicas it added); then the original list is submitted as a
        reassignment (throttled like any move) and watched until the cluster shows it
        (``_update_rollback``). A move that finished just before the cancel reached the
        controller ("no reassignment in progress") and is at its target is reported as what it
        is: completed."""
        mine = [self._moves[tp] for tp in tps if self._moves[tp].status in (MOVING, READY)]
        if not mine:
            return
        inflight = [ms.tp for ms in mine if ms.status is MOVING]
        res = self.gw.alter_reassignments(dict.fromkeys(inflight)) if inflight else {}
        self._dirty = True
        states = self.gw.describe_partitions([ms.tp for ms in mine])
        now = self._clock()
        back: dict[TopicPartition, tuple[tuple[int, ...], PartitionState]] = {}
        for ms in mine:
            tp, err, st = ms.tp, res.get(ms.tp), states.get(ms.tp)
            if err and not no_reassignment_in_progress(err):
                self._emit("error", **_tpf(tp), message=f"{tp}: cancel failed: {err}")
                continue
            if st is None:
                ms.fail("partition no longer exists")
                continue
            if not st.reassigning and self._complete(tp, st):
                ms.complete(now, st.replicas)  # it finished before the cancel reached it
                continue
            if not ms.original:  # adopted without a journaled original: where the cancel left it
                self._emit(
                    "warning",
                    **_tpf(tp),
                    message=f"{tp}: its original replicas are not journaled; cancelled at "
                    f"{list(st.replicas)}",
                )
                ms.original = tuple(st.replicas)
            if is_complete(ms.original, st):
                self._back_at_original(ms, st, reason)
                continue
            back[tp] = (tuple(ms.original), st)
        if not back:
            return
        # the way back copies data when a step dropped an original replica: throttle it first
        self._sync_throttles(self.gw.list_reassignments(), back)
        results = self.gw.alter_reassignments(
            {tp: orig for tp, (orig, _) in back.items()}, allow_replication_factor_change=True
        )
        for tp, (orig, st) in back.items():
            ms = self._moves[tp]
            err = results.get(tp, "no answer from the controller")
            if err:
                ms.fail(f"rollback to {list(orig)} refused: {err}")
                continue
            ms.roll_back(reason, st.replicas)

    def _await_rollbacks(self) -> None:
        """At the end of a run: wait (at most ``options.rollback_timeout``, polling at the
        run's interval) for the moves rolling back to reach their original replicas, keeping
        their throttles; what is not back by then is reported as rolling back."""
        if not self._index.count(ROLLING_BACK):
            return
        sleep = self._sleep_fn or self._abandon.wait
        deadline = self._clock() + self.options.rollback_timeout
        while True:
            if self._abandon.is_set():
                left = self._index.of(ROLLING_BACK)
                self._emit(
                    "warning",
                    message=f"stopped waiting for {len(left)} rollback(s) (asked again, e.g. a "
                    f"second Ctrl-C; e.g. {left[0].tp}); the rollback goes on, throttled: "
                    "`--cancel --journal` waits for it and verifies",
                )
                return
            try:
                tps = [ms.tp for ms in self._index.of(MOVING, READY, ROLLING_BACK)]
                states = self.gw.describe_partitions(tps)
                with self._lock:
                    self._update(states, self._clock())
                if not self._index.count(ROLLING_BACK):
                    return
                self._sync_throttles(self.gw.list_reassignments())
                self._commit_before_change()
            except KafkaOperationError as e:
                self._emit("warning", message=f"while waiting for the rollback: {e}")
            if self._clock() >= deadline:
                left = self._index.of(ROLLING_BACK)
                self._emit(
                    "warning",
                    message=f"{len(left)} move(s) not back at their original replicas after "
                    f"{self.options.rollback_timeout:g}s (e.g. {left[0].tp}); the rollback goes "
                    "on, throttled: `--cancel --journal` waits for it and verifies",
                )
                return
            sleep(self.options.poll_interval_ms / 1000.0)

    def _maybe_sample(self, now: float, force: bool) -> None:
        """Bytes copied by the moves in flight (DescribeLogDirs, one call), at a bounded rate
        (and at every poll when stuck detection is on)."""
        moving = self._index.of(MOVING)
        due = now - self._last_sample >= self.options.sample_interval
        if not moving or not (force or due or self.options.stuck_after is not None):
            return
        adding = {ms.tp: {b for b in ms.step_target if b not in ms.step_from} for ms in moving}
        # best effort, no retries (the next sample comes soon): a broker that cannot answer
        # leaves its own moves unmeasured — waiting, never "stuck" — and the others measured
        per_replica, failed = replica_bytes_copied(self.gw.wrapped, adding)
        copied: dict[TopicPartition, int] = {}
        for (tp, _b), n in per_replica.items():
            copied[tp] = copied.get(tp, 0) + n
        if failed:
            self._emit(
                "warning",
                message="cannot sample progress on broker(s) "
                + ", ".join(f"{b} ({e})" for b, e in sorted(failed.items()))
                + "; their moves count as waiting",
            )
        for ms in moving:
            if adding[ms.tp] & failed.keys():
                ms.progress_at = now  # unknown is not stuck
                continue
            b = copied.get(ms.move.tp, 0)
            if ms.bytes_copied is None or b > ms.bytes_copied:
                ms.progress_at = now if ms.bytes_copied is not None or b > 0 else ms.progress_at
            ms.bytes_copied = b
        if due or force:
            self._last_sample = now
            rows = [
                {
                    **_tpf(ms.move.tp),
                    "bytes": ms.bytes_copied,
                    "size": ms.item.size_bytes,
                    "step": ms.step,
                }
                for ms in moving[:200]
            ]
            counts = self.status()
            self._emit(
                "sample",
                done=counts.done,
                moving=counts.moving,
                pending=counts.pending,
                bytes_copied=sum(copied.values()),
                moves=rows,
                **self._eta_fields(now, moving, per_replica),
            )

    def _eta_fields(
        self,
        now: float,
        moving: list[MoveState],
        per_replica: Mapping[tuple[TopicPartition, int], int],
    ) -> dict[str, Any]:
        """The run's ETA at this sample (``eta.RunEta``): per broker, bytes received
        (completed steps + what the moves in flight copied, capped at their size) and bytes
        still to come in (moves that failed or were cancelled no longer count)."""
        received = {b: float(n) for b, n in self._inbound_landed.items()}
        for ms in moving:
            full = True
            for b in ms.step_target:
                if b not in ms.step_from:
                    got = min(per_replica.get((ms.tp, b), 0), ms.item.size_bytes)
                    received[b] = received.get(b, 0.0) + got
                    full = full and got >= ms.item.size_bytes
            if full and ms.tp not in self._full_at:
                self._full_at[ms.tp] = now
        total = dict(self._inbound_total)
        for ms in self._index.of(MoveStatus.FAILED, MoveStatus.CANCELLED):
            for b in ms.move.replicas:
                if b not in ms.original and b in total:
                    total[b] -= ms.item.size_bytes
        left = {b: max(0.0, n - received.get(b, 0.0)) for b, n in total.items()}
        inflight: dict[int, int] = {}
        for ms in moving:
            for b in ms.step_target:
                if b not in ms.step_from:
                    inflight[b] = inflight.get(b, 0) + 1
        cap = self._throttles.rate if self._throttles.active else None
        # the last move is complete a completion lag after its last byte (the follower
        # joins the ISR, the controller ends the reassignment, a poll sees it): the median
        # measured so far, else half a poll interval
        poll_s = self.options.poll_interval_ms / 1000
        tail = statistics.median(self._lags) if self._lags else poll_s / 2
        if self._full_at and not any(left.values()):  # every byte in: the lag runs down
            tail = max(0.0, tail - (now - max(self._full_at.values())))
        eta, why, _ = self._eta.update(
            now, received, left, inflight, cap, tail,
            moves=self._index, copied=per_replica, caps=self._caps, r=self._r,
            elections=(self._elections.pending, self._elections.per_poll)
            if self._elections.enabled else None,
        )  # fmt: skip
        all_in = sum(total.values())
        return {
            "received": {str(b): round(n) for b, n in sorted(received.items())},
            "busy": {str(b): round(n, 3) for b, n in sorted(self._eta.busy.items())},
            "inflight": {str(b): n for b, n in sorted(inflight.items())},
            "throttle": cap,
            "tail_s": round(tail, 3),
            "landed_bytes": sum(self._inbound_landed.values()),
            "left": {str(b): round(n) for b, n in sorted(left.items())},
            "bytes_left": round(sum(left.values())),
            "bytes_total": all_in,
            "rate_bps": None if self._eta.total_rate is None else round(self._eta.total_rate),
            "eta_s": None if eta is None else round(eta, 1),
            "eta_reason": why,
            "eta": eta_text(eta, why),
            **self._eta.fields(),
        }

    # ---- throttles ----------------------------------------------------------------------------

    def _sync_throttles(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        submitting: Mapping[TopicPartition, tuple[tuple[int, ...], PartitionState]] | None = None,
    ) -> None:
        """The cluster's throttles made exactly what the moves in flight (``cluster``) plus
        ``submitting`` (target, current state) need (``throttle.ThrottleKeeper``)."""
        self._dirty = False
        ld = self._dirs.brokers(submitting or {}) if self.options.log_dir_throttle else ()
        self._throttles.sync(cluster, self._moves, ld, submitting)

    # ---- the end ------------------------------------------------------------------------------

    def _finish(self) -> None:
        """``_finish_run``, after which ``wait()`` always returns (even when finishing failed
        in a way nothing else caught: the result then says so)."""
        self._finishing = True
        thaw_heap(self)
        try:
            self._finish_run()
        finally:
            if self._result is None:
                self._result = RunResult.of(
                    "failed",
                    self.run_id,
                    self.journal_path,
                    [self._moves[tp] for tp in self._order],
                    set(),
                    self._throttles.left(),
                    self._error or "the run could not finish",
                    None,
                )
            if self._journal is not None:
                self._journal.close()
            self._done.set()

    def _finish_run(self) -> None:
        """Every exit path: cancel if asked, leave exactly the throttles still needed, report.
        A run whose start failed changed nothing, so it touches nothing now either (another
        run's throttles stay); a throttle cleanup that fails is reported as such."""
        state = self._end_state or ("stopped" if self._stop.is_set() else "failed")
        idle: set[TopicPartition] = set()
        touched: list[TopicPartition] = []  # what a user's cancel acted on
        cleanup_error: str | None = None
        last_known = self._throttles.left()
        try:
            if not self._began:
                pass
            elif self._cancel_on_stop and self._stop.is_set():  # Ctrl-C / SIGTERM / cancel()
                touched = [ms.tp for ms in self._index.of(MOVING, READY)]
                try:
                    self._cancel(touched, reason="stop")
                except KafkaOperationError as e:  # reported; the throttles are still made right
                    self._error = self._error or f"cancel failed: {e}"
                    self._emit("error", message=f"cancel failed: {e}")
            if self._began:
                self._await_rollbacks()  # a cancel here, on a deadline or earlier in the run
            # cancelled by the user in the poll that reached KIP-1335's return point: the run
            # did not finish, it was stopped (before: "done", exit 0, for a run rolled back)
            rolled = (CANCELLED, ROLLING_BACK)
            if state in ("submitted", "done") and any(
                self._moves[tp].status in rolled for tp in touched
            ):
                state = "stopped"
            cluster = self.gw.list_reassignments() if self._began else {}
            watch = [ms.tp for ms in self._index.of(MOVING, READY, ROLLING_BACK)]
            if watch and self._began:
                states = self.gw.describe_partitions(watch)
                with self._lock:
                    self._update(states, self._clock())
                    # between steps or lost: nothing of theirs in flight, reported as pending
                    idle = {
                        tp
                        for tp in watch
                        if self._moves[tp].status == "moving"
                        and (st := states.get(tp)) is not None
                        and not st.reassigning
                    }
            if self._began:
                self._throttles.forget()
                try:
                    self._sync_throttles(cluster)
                    # the last chance to clean up: a broker just back (restarted moments ago)
                    # may not answer yet; ask again for a bounded time before giving up
                    deadline = self._clock() + CLEANUP_RETRY_S
                    while self._throttles.skipped and self._clock() < deadline:
                        self.gw.wrapped.sleep(CLEANUP_RETRY_EVERY_S)
                        self._throttles.forget()
                        self._sync_throttles(self.gw.list_reassignments())
                    if self._throttles.skipped:  # down brokers: their throttles wait for them
                        left_on = ", ".join(
                            str(b) for b in sorted(self._throttles.skipped, key=str)
                        )
                        cleanup_error = (
                            f"throttles of broker(s) {left_on} not cleaned up: not reachable for "
                            f"{CLEANUP_RETRY_S:g} s. Once back, `reassign-kit throttles --clean"
                            + (f" --journal {self.journal_path}" if self.journal_path else "")
                            + "` removes them (putting back the values there before)"
                        )
                        self._emit("warning", message=cleanup_error)
                except Exception as e:  # noqa: BLE001 - reported: throttles may be left
                    cleanup_error = f"{type(e).__name__}: {e}"
                    self._emit("error", message=f"throttle cleanup failed: {cleanup_error}")
                    self._throttles.applied = None
            if state == "submitted" and all(
                ms.status in ("done", "cancelled") for ms in self._moves.values()
            ):
                state = "done"
            if self._began:
                try:  # the leaders of the partitions elected: their preferred replicas?
                    self._elections.finish(self.gw.wrapped.sleep)
                except KafkaOperationError as e:
                    self._emit("warning", message=f"cannot check the elected leaders: {e}")
        except BaseException as e:  # noqa: BLE001 - the report must still be written
            self._emit("error", message=f"while finishing: {type(e).__name__}: {e}")
            if self._error is None:
                self._error = f"while finishing: {e}"
        self.state = state
        # after a failed cleanup, what was set after the last sync that went through may be left
        left = self._throttles.left() if cleanup_error is None else last_known
        if cleanup_error is not None and self._error is None:
            self._error = f"throttle cleanup failed: {cleanup_error}"
        self._result = RunResult.of(
            state,
            self.run_id,
            self.journal_path,
            [self._moves[tp] for tp in self._order],
            idle,
            left,
            self._error,
            cleanup_error,
        )
        r = self._result
        self._report_elections(r)
        self._emit(
            "run_finished",
            state=state,
            completed=len(r.completed),
            still_moving=len(r.still_moving),
            pending=len(r.pending),
            failed=len(r.failed),
            cancelled=len(r.cancelled),
            rolling_back=len(r.rolling_back),
            throttles_left=left,
            error=self._error,
        )

    def _report_elections(self, r: RunResult) -> None:
        """The elections' part of the result: counts, what is left and the check."""
        el = self._elections
        if not el.enabled:
            return
        r.elections = {**el.counts, "pending": el.pending}
        r.elections_pending = list(el.queue)
        r.elections_not_due = [
            ms.tp
            for ms in self._index.of(MOVING, READY)
            if not ms.original or ms.original[0] != ms.move.replicas[0]
        ]
        if el.check is not None:
            r.leaders_checked = len(el.check.checked)
            r.leaders_not_preferred = {
                tp: why for tp, (_, _, why) in el.check.not_preferred.items()
            }

    # ---- events -------------------------------------------------------------------------------

    def _commit(self) -> None:
        """fsync the journal; a journal that cannot be written ends the run (it is raised
        here, in the loop), since nothing more may be sent that the journal does not record."""
        if self._journal_error is not None:
            raise self._journal_error
        if self._journal is not None:
            try:
                self._journal.commit()
            except JournalError as e:
                self._journal_error = self._journal_error or e
                raise

    def _drain(self, error: JournalError) -> None:
        """The journal cannot be written: submit nothing more (nothing may happen that the
        journal does not record), let the moves in flight finish with their throttles, then
        fail on the journal error (cleaning the throttles up) — the cluster ends with each
        partition at its target or where it was, and no throttle left."""
        self._journal_error = self._journal_error or error
        if self._draining:
            return
        self._draining = True
        self._stop_submitting = True
        log.error("%s; no more moves are submitted, waiting for those in flight", error)
        # _emit skips the broken journal (_journal_error is set) and tells the subscribers
        self._emit("warning", message=f"{error} (not journaled)")

    def _commit_before_change(self) -> None:
        """Before any change is sent: the events describing it are on disk. While finishing
        (cleanup after a failure) or draining after a journal failure (only throttles of
        moves in flight change then), a broken journal does not stop the change."""
        if self._finishing or self._draining:
            if self._journal_error is None and self._journal is not None:
                try:
                    self._journal.commit()
                except JournalError as e:
                    self._journal_error = e
            return
        self._commit()

    def _emit(self, event: str, **fields_: Any) -> dict[str, Any]:
        rec: dict[str, Any] | None = None
        if self._journal is not None and self._journal_error is None:
            try:
                rec = self._journal.write(event, **fields_)
            except JournalError as e:  # raised in the loop at its next commit; never lost
                self._journal_error = e
        if rec is None:
            from .journal import redact

            rec = redact(
                {"ts": self._clock(), "event": event, "run_id": self.run_id, **fields_},
                self._secrets,
            )
        for fn in list(self._subscribers):
            try:
                fn(rec)
            except Exception:  # noqa: BLE001 - a broken subscriber must not stop the run
                log.exception("subscriber failed on %s", event)
        return rec


class _InflightItems:
    """The run's steps in flight as schedule items for ``decide``: counted at once, built
    (``Run._inflight_item``) only if ``decide`` reads them — under a broker or leader cap, in
    batch mode (issue 12: building 2,000 at every poll was a third of a quiet poll)."""

    def __init__(self, run: Run):
        self._run = run
        self._n = run._index.count(MOVING)
        self._items: list[Item] | None = None

    def __len__(self) -> int:
        return self._n

    def __iter__(self) -> Iterator[Item]:
        if self._items is None:
            run = self._run
            moving = run._index.of(MOVING)
            self._items = [run._inflight_item(ms) for ms in moving]
            if len(run._inflight_items) > 2 * len(moving):  # moves no longer in flight
                keep = {ms.tp for ms in moving}
                run._inflight_items = {tp: v for tp, v in run._inflight_items.items() if tp in keep}
        return iter(self._items)


def _tpf(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}


def _cluster_info(gw: Any) -> dict[str, Any]:
    """The gateway's ``cluster_info()`` (Kafka version and cluster id); informative only, so
    a failure is noted rather than fatal."""
    try:
        return dict(gw.cluster_info())
    except Exception as e:  # noqa: BLE001 - informative only
        return {"error": f"{type(e).__name__}: {e}"}
