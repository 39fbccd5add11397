"""The run's loop (a part of ``Run``, run/run.py): one poll — read the cluster, update
the moves, sample, apply deadlines, schedule and submit, keep the throttles exact, elect —
and the journal's discipline around it (group commit per poll, commit before any change,
drain when the journal cannot be written)."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from ..errors import JournalError, KafkaOperationError, ReassignKitError, RunError
from ..model import PartitionState, TopicPartition
from ..moves.results import RunResult
from ..moves.table import MoveStatus
from . import deadlines
from .gcpause import between_polls, freeze_heap
from .lifecycle import IllegalTransition

if TYPE_CHECKING:
    from .shared import RunParts, RunState

log = logging.getLogger("reassign_kit.run.run")

PENDING, READY, MOVING = MoveStatus.PENDING, MoveStatus.READY, MoveStatus.MOVING
ROLLING_BACK = MoveStatus.ROLLING_BACK
DONE, CANCELLED, FAILED = MoveStatus.DONE, MoveStatus.CANCELLED, MoveStatus.FAILED


class Loop:
    """The loop (see the module docstring)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts
        # events emitted, not yet handed to the subscribers (``deliver``), in order
        self._outbox: deque[dict[str, Any]] = deque()
        self._delivering = threading.Lock()  # held by the one thread handing them out
        self._held = 0  # inside ``holding_deliveries`` (the loop's thread): queued until its end

    def drive(self) -> RunResult:
        """``Run.run()``: the loop (``_drive``) on this thread, which hands the run's events to
        the subscribers while it runs; those left are handed out once it ends."""
        self.shared.loop_thread = threading.current_thread()
        try:
            return self._drive()
        finally:
            self.shared.loop_thread = None
            self.deliver()

    def _drive(self) -> RunResult:
        """Start, poll until the end, finish on every path; raise RunError if the run ended on
        an error (KeyboardInterrupt again after finishing)."""
        interrupted: BaseException | None = None
        try:
            self.parts.begin.begin()
            self.shared.state = "running"
            self.fire("start")  # a pause / stop / cancel asked before it began holds
            freeze_heap(self.shared)  # the plan's objects out of the full collections (gcpause)
            while True:
                # a full garbage collection due in the poll runs after it (gcpause)
                with between_polls(self.shared):
                    try:
                        done = self.poll()
                        self._commit()  # group commit: one fsync per poll
                    except JournalError as e:
                        self._drain(e)
                        done = False
                self.deliver()  # what control calls from other threads queued
                if self.shared.draining and not self.shared.index.count(MOVING):
                    assert self.shared.journal_error is not None
                    raise self.shared.journal_error  # drained: the run fails on the journal error
                if done and not self.shared.draining:
                    break
                self.sleep(self.shared.options.poll_interval_ms / 1000.0)
        except KeyboardInterrupt as e:
            interrupted = e
            self.shared.stop.set()
            self.shared.end_state = "stopped"
        except ReassignKitError as e:
            self.shared.exc = e
            self.fail(str(e))
        except Exception as e:  # noqa: BLE001 - recorded, throttles fixed, then re-raised as RunError
            self.fail(f"{type(e).__name__}: {e}")
        finally:
            self.parts.finish.finish()
        assert self.shared.result is not None
        if interrupted is not None:
            raise interrupted
        if self.shared.result.state == "failed":
            if self.shared.exc is not None:
                raise self.shared.exc
            raise RunError(self.shared.result.error or "the run failed")
        return self.shared.result

    def poll(self) -> bool:
        """One iteration; a cluster fault that outlasted the calls' retries ends the run only
        when the run deadline has passed (or the user stopped it): else it is journaled and
        the next poll tries again. The poll's journal lines go to the OS together, at its
        end or before it sends a change (``Journal.batch``)."""
        try:
            with self.shared.journal.batch() if self.shared.journal is not None else nullcontext():
                return self.step_once()
        except KafkaOperationError as e:
            if self.shared.stop.is_set():
                self.shared.end_state = self.shared.end_state or "stopped"
                return True
            o, now = self.shared.options, self.shared.clock()
            started = self.shared.started_at if self.shared.started_at is not None else now
            if o.run_deadline is not None and now - started > o.run_deadline:
                raise
            self.emit(
                "warning", message=f"poll failed after retries ({e}); trying again at the next poll"
            )
            return False

    def fire(self, trigger: str, end: str | None = None) -> bool:
        """Move the lifecycle (run/lifecycle.py) under ``_lock``; False when its table
        refuses ``trigger`` (nothing changed, nothing journaled)."""
        with self.shared.lock:
            try:
                self.shared.life.fire(trigger, end)
            except IllegalTransition:
                return False
            return True

    def sleep(self, seconds: float) -> None:
        if self.shared.stop.is_set():
            return
        if self.shared.sleep_fn is not None:
            self.shared.sleep_fn(seconds)
        else:
            self.shared.wake.wait(seconds)
            self.shared.wake.clear()

    def fail(self, msg: str) -> None:
        self.shared.error = msg
        self.shared.end_state = "failed"
        self.emit("error", message=msg)

    def step_once(self) -> bool:
        """Poll, update, decide, submit; True when the loop should end."""
        self.shared.throttles_fresh = False
        cluster = self.shared.gw.list_reassignments()
        watch = [ms.tp for ms in self.shared.index.of(MOVING, READY, ROLLING_BACK)]
        states = self.shared.gw.describe_partitions(watch) if watch else {}
        now = self.shared.clock()
        with self.shared.lock:
            self.shared.dirs.drive(now)
            self.parts.track.update(states, now)
        self.parts.track.maybe_sample(now, force=False)
        self.parts.pace.pace(now)  # --pace adaptive: per-broker rates, a hold (run/pace.py)
        self._check_deadlines(now)
        if self.shared.stop.is_set():
            self.shared.end_state = self.shared.end_state or "stopped"
            return True
        if self.shared.end_state is not None:
            return True
        if not self.shared.paused and not self.shared.stop_submitting and not self.shared.pace_hold:
            self.parts.submit.schedule(cluster, states, now)
            if self.shared.end_state is not None:
                return True
        if self.shared.throttles_fresh:
            # the submission just made them exactly what ``cluster`` plus what it sent need,
            # and nothing else changed the moves in this poll: the next poll's listing checks
            # them (a second listing and sync of 2,000 moves, ~10 ms)
            self.shared.throttles_fresh = self.shared.dirty = False
        else:
            self.sync_throttles(
                self.shared.gw.list_reassignments() if self.shared.dirty else cluster
            )
        if (
            not self.shared.paused and not self.shared.draining
        ):  # a change: not while paused / draining
            self.shared.elections.poll()  # at most --max-elections-per-poll, one request
        return self._finished()

    def _finished(self) -> bool:
        idx = self.shared.index
        if idx.count(FAILED) and self.shared.end_state is None:
            bad = idx.of(FAILED)[0]
            self.fail(f"{bad.move.tp}: {bad.error}")
            return True
        if self.shared.elections.pending:  # elections due: sent before the run ends
            return False
        if idx.count(DONE, CANCELLED) == len(self.shared.moves):
            self.shared.end_state = self.shared.end_state or (
                "deadline" if self.shared.deadline_hit else "done"
            )
            return True
        if (
            self.shared.options.wait or self.shared.dirs.pending
        ):  # a log-dir move not begun would be lost
            return False
        # KIP-1335: return once every move is submitted; multi-step moves must be driven on
        if idx.count(PENDING, READY, ROLLING_BACK):
            return False
        if any(ms.step < len(ms.steps) for ms in idx.of(MOVING)):
            return False
        if self.shared.elections.enabled and any(
            ms.original and set(ms.original) == set(ms.move.replicas) for ms in idx.of(MOVING)
        ):
            return False  # replica order only: complete at once, then elected by this run
        self.shared.end_state = "submitted"
        return True

    def _check_deadlines(self, now: float) -> None:
        """Report what expired (``deadlines.check``) and apply ``--on-deadline``."""
        o = self.shared.options
        moving = self.shared.index.of(MOVING)
        expired = deadlines.check(
            moving,
            o,
            now,
            self.shared.started_at,
            self.shared.end_state is not None or self.shared.run_deadline_reported,
            self.emit,
            self.parts.track.down_reason,
        )
        self.shared.run_deadline_reported |= expired.run
        if o.on_deadline == "wait" or not expired:
            return
        self.shared.deadline_hit = True
        if o.on_deadline == "stop":
            self.shared.stop_submitting = True
            self.shared.end_state = "deadline"
            return
        if o.on_deadline == "cancel":
            victims = [ms for ms, _ in expired.moves]
            if expired.run:  # every move of the run not complete, between steps included
                victims = self.shared.index.of(MOVING, READY)
                self.shared.end_state = "deadline"
                self.emit("cancel_started", moves=len(victims), reason="deadline")
            tps = [ms.move.tp for ms in victims]
            self.parts.rollback.cancel(tps, reason="deadline")
            self.parts.finish.report_dead_targets(tps)

    def sync_throttles(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        submitting: Mapping[TopicPartition, tuple[tuple[int, ...], PartitionState]] | None = None,
    ) -> None:
        """The cluster's throttles made exactly what the moves in flight (``cluster``) plus
        ``submitting`` (target, current state) need (``throttle_keeper.ThrottleKeeper``)."""
        self.shared.dirty = False
        ld = (
            self.shared.dirs.brokers(submitting or {})
            if self.shared.options.log_dir_throttle
            else ()
        )
        self.shared.throttles.sync(cluster, self.shared.moves, ld, submitting)

    def _commit(self) -> None:
        """fsync the journal; a journal that cannot be written ends the run (it is raised
        here, in the loop), since nothing more may be sent that the journal does not record."""
        if self.shared.journal_error is not None:
            raise self.shared.journal_error
        if self.shared.journal is not None:
            try:
                self.shared.journal.commit()
            except JournalError as e:
                self.shared.journal_error = self.shared.journal_error or e
                raise

    def _drain(self, error: JournalError) -> None:
        """The journal cannot be written: submit nothing more (nothing may happen that the
        journal does not record), let the moves in flight finish with their throttles, then
        fail on the journal error (cleaning the throttles up) — the cluster ends with each
        partition at its target or where it was, and no throttle left."""
        self.shared.journal_error = self.shared.journal_error or error
        if self.shared.draining:
            return
        self.shared.draining = True
        self.shared.stop_submitting = True
        log.error("%s; no more moves are submitted, waiting for those in flight", error)
        # _emit skips the broken journal (_journal_error is set) and tells the subscribers
        self.emit("warning", message=f"{error} (not journaled)")

    def commit_before_change(self) -> None:
        """Before any change is sent: the events describing it are on disk. While finishing
        (cleanup after a failure) or draining after a journal failure (only throttles of
        moves in flight change then), a broken journal does not stop the change."""
        if self.shared.finishing or self.shared.draining:
            if self.shared.journal_error is None and self.shared.journal is not None:
                try:
                    self.shared.journal.commit()
                except JournalError as e:
                    self.shared.journal_error = e
            return
        self._commit()

    def emit(self, event: str, **fields_: Any) -> dict[str, Any]:
        """Journal the event (write-ahead: it is in the journal when this returns) and queue
        it for the subscribers, who hear it at once unless the run's lock is held (then when
        it is released: ``deliver``)."""
        rec: dict[str, Any] | None = None
        journal = self.shared.journal
        if journal is not None and self.shared.journal_error is None:
            try:
                rec = journal.record(event, fields_)
            except JournalError as e:  # raised in the loop at its next commit; never lost
                self.shared.journal_error = e
        if rec is None:
            from ..moves.journal import redact

            rec = redact(
                {
                    "ts": self.shared.clock(),
                    "event": event,
                    "run_id": self.shared.run_id,
                    **fields_,
                },
                self.shared.secrets,
            )
        self._outbox.append(rec)
        if not self._held:
            self.deliver()
        return rec

    @contextmanager
    def holding_deliveries(self) -> Iterator[None]:
        """The events emitted inside reach the subscribers together when it ends, in order, as
        those emitted under the run's lock do: for the loop's runs of events to which no
        subscriber answers with an event of its own (a wave's 2,000 intents, its
        submissions), so the journal's order is the same, and for those emitted under the
        lock anyway (the tracker's update); a delivery per event was a tenth of a wave's poll.
        The index's counts are published once too (``MoveIndex.holding``), before the
        delivery. Only the loop's thread holds them (another thread's events wait for it
        anyway; and so no two threads hold the index)."""
        if self.shared.loop_thread is not threading.current_thread():
            yield
            return
        self._held += 1
        try:
            with self.shared.index.holding():  # the counts a listener reads: published first
                yield
        finally:
            self._held -= 1
            if not self._held:
                self.deliver()

    def deliver(self) -> None:
        """The queued events to the subscribers, in order. Never under the run's lock (a
        listener may wait on a lock whose holder waits on the run's); while the loop runs,
        only from its thread (others leave theirs queued for it); one thread at a time."""
        if self.shared.lock.held():
            return  # the release of the lock delivers them (``RunLock.released``)
        owner = self.shared.loop_thread
        if owner is not None and owner is not threading.current_thread():
            return
        # a thread that finds another delivering leaves its events to it: that one looks
        # at the outbox again after letting go, so nothing queued is left behind
        # on the loop's thread, what a listener emits meanwhile (an election queued for a
        # completed move) is left to this drain, not offered to a delivery of its own
        mine = owner is not None
        while self._outbox and self._delivering.acquire(blocking=False):
            self._held += mine
            try:
                # each (listener, the kinds of event it hears or None: all); only ever appended
                # to, so a copy is taken again only when it grew (one added while delivering
                # hears the events after it), not once per event
                subs = self.shared.subscribers
                heard = list(subs)
                while self._outbox:
                    rec = self._outbox.popleft()
                    if len(heard) != len(subs):
                        heard = list(subs)
                    kind = rec.get("event")
                    for fn, kinds in heard:
                        if kinds is not None and kind not in kinds:
                            continue
                        try:
                            fn(rec)
                        except Exception as e:  # noqa: BLE001 - a broken subscriber must not stop the run
                            self._listener_failed(fn, str(kind), e)
            finally:
                self._held -= mine
                self._delivering.release()

    def _listener_failed(self, fn: Any, event: str, error: Exception) -> None:
        """A subscriber raised: said once, on one line (its name and the error; the traceback
        at DEBUG), its later failures counted. Before, every failure logged a traceback: a
        listener that fails on every event (its output closed, its disk full) printed one per
        event for the whole run."""
        failures: dict[int, int] = self.__dict__.setdefault("_listener_failures", {})
        n = failures[id(fn)] = failures.get(id(fn), 0) + 1
        if n == 1:
            name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
            log.warning(
                "a listener of the run (%s) failed on its %s event: %s: %s; the run goes on "
                "(its later failures are not shown)",
                name,
                event,
                type(error).__name__,
                error,
            )
            log.debug("the listener's traceback", exc_info=error)
