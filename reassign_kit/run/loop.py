"""The run's loop (a part of ``Run``, engine/run.py): one poll — read the cluster, update
the moves, sample, apply deadlines, schedule and submit, keep the throttles exact, elect —
and the journal's discipline around it (group commit per poll, commit before any change,
drain when the journal cannot be written)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from contextlib import nullcontext
from typing import Any

from ..errors import JournalError, KafkaOperationError, ReassignKitError, RunError
from ..model import PartitionState, TopicPartition
from ..moves.results import RunResult
from ..moves.table import MoveStatus
from . import deadlines
from .gcpause import between_polls, freeze_heap
from .lifecycle import IllegalTransition

log = logging.getLogger("reassign_kit.run.run")

PENDING, READY, MOVING = MoveStatus.PENDING, MoveStatus.READY, MoveStatus.MOVING
ROLLING_BACK = MoveStatus.ROLLING_BACK
DONE, CANCELLED, FAILED = MoveStatus.DONE, MoveStatus.CANCELLED, MoveStatus.FAILED


class LoopPart:
    """The loop (see the module docstring)."""

    def _drive(self) -> RunResult:
        """``Run.run()``: start, poll until the end, finish on every path; raise RunError if
        the run ended on an error (KeyboardInterrupt again after finishing)."""
        interrupted: BaseException | None = None
        try:
            self._begin()
            self.state = "running"
            self._fire("start")  # a pause / stop / cancel asked before it began holds
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

    def _fire(self, trigger: str, end: str | None = None) -> bool:
        """Move the lifecycle (engine/lifecycle.py) under ``_lock``; False when its table
        refuses ``trigger`` (nothing changed, nothing journaled)."""
        with self._lock:
            try:
                self._life.fire(trigger, end)
            except IllegalTransition:
                return False
            return True

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

    def _step_once(self) -> bool:
        """Poll, update, decide, submit; True when the loop should end."""
        self._throttles_fresh = False
        cluster = self.gw.list_reassignments()
        watch = [ms.tp for ms in self._index.of(MOVING, READY, ROLLING_BACK)]
        states = self.gw.describe_partitions(watch) if watch else {}
        now = self._clock()
        with self._lock:
            self._dirs.drive(now)
            self._update(states, now)
        self._maybe_sample(now, force=False)
        self._pace(now)  # --pace adaptive: per-broker rates, a hold (engine/pace.py)
        self._check_deadlines(now)
        if self._stop.is_set():
            self._end_state = self._end_state or "stopped"
            return True
        if self._end_state is not None:
            return True
        if not self._paused and not self._stop_submitting and not self._pace_hold:
            self._schedule(cluster, states, now)
            if self._end_state is not None:
                return True
        if self._throttles_fresh:
            # the submission just made them exactly what ``cluster`` plus what it sent need,
            # and nothing else changed the moves in this poll: the next poll's listing checks
            # them (a second listing and sync of 2,000 moves, ~10 ms)
            self._throttles_fresh = self._dirty = False
        else:
            self._sync_throttles(self.gw.list_reassignments() if self._dirty else cluster)
        if not self._paused and not self._draining:  # a change: not while paused / draining
            self._elections.poll()  # at most --max-elections-per-poll, one request
        return self._finished()

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
                self._emit("cancel_started", moves=len(victims), reason="deadline")
            self._cancel([ms.move.tp for ms in victims], reason="deadline")

    def _sync_throttles(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        submitting: Mapping[TopicPartition, tuple[tuple[int, ...], PartitionState]] | None = None,
    ) -> None:
        """The cluster's throttles made exactly what the moves in flight (``cluster``) plus
        ``submitting`` (target, current state) need (``throttle_keeper.ThrottleKeeper``)."""
        self._dirty = False
        ld = self._dirs.brokers(submitting or {}) if self.options.log_dir_throttle else ()
        self._throttles.sync(cluster, self._moves, ld, submitting)

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
            from ..moves.journal import redact

            rec = redact(
                {"ts": self._clock(), "event": event, "run_id": self.run_id, **fields_},
                self._secrets,
            )
        for fn in list(self._subscribers):
            try:
                fn(rec)
            except Exception as e:  # noqa: BLE001 - a broken subscriber must not stop the run
                self._listener_failed(fn, event, e)
        return rec

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
