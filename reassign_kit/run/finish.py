"""The run's end (a part of ``Run``, run/run.py), on every exit path: the cancel if one
was asked (journaled ``cancel_started`` first), the rollbacks awaited, the elections owed
carried out, the throttles made exactly what is still needed — each final step retried on a
transient error, and a cleanup that cannot finish reported with what is left and the command
that cleans it (exit 8) — then the result and ``run_finished``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_fixed

from ..errors import KafkaOperationError
from ..model import TopicPartition
from ..moves.results import RunResult
from ..moves.table import MoveStatus
from ..throttles.configs import SETTLE_EVERY_S, SETTLE_ROUNDS, current_throttles
from .gcpause import thaw_heap
from .track import cancel_notes

if TYPE_CHECKING:
    from .shared import RunParts, RunState

CLEANUP_RETRY_S = 60.0  # the final cleanup asks a broker that did not answer again, this long
CLEANUP_RETRY_EVERY_S = 3.0
FINAL_ATTEMPTS = 5  # rounds of retries of each final step (each retried by the gateway too)
OWED_ELECTION_ROUNDS = 5  # at the end: rounds of the elections still owed, a pause between
OWED_ELECTION_PAUSE_S = 1.0
PENDING, READY, MOVING = MoveStatus.PENDING, MoveStatus.READY, MoveStatus.MOVING
ROLLING_BACK = MoveStatus.ROLLING_BACK
DONE, CANCELLED, FAILED = MoveStatus.DONE, MoveStatus.CANCELLED, MoveStatus.FAILED


@dataclass
class _Ending:
    """What the end has found so far: each step adds to it, and a step that fails leaves what
    the steps before it found (the cleanup and the report still use it)."""

    state: str
    idle: set[TopicPartition] = field(default_factory=set)
    touched: list[TopicPartition] = field(default_factory=list)  # what a user's cancel acted on
    cancelled_run: bool = False
    cluster: Any = None  # the reassignments the cluster lists at the end


class Finisher:
    """The end of a run (see the module docstring)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts

    def finish(self) -> None:
        """``_finish_run``, after which ``wait()`` always returns (even when finishing failed
        in a way nothing else caught: the result then says so)."""
        self.shared.finishing = True
        thaw_heap(self.shared)
        try:
            self._finish_run()
        finally:
            self.parts.pace.pace_close()  # the probe's canary topic deleted (--pace adaptive)
            if self.shared.result is None:
                self.shared.result = RunResult.of(
                    "failed",
                    self.shared.run_id,
                    self.shared.journal_path,
                    [self.shared.moves[tp] for tp in self.shared.order],
                    set(),
                    self.shared.throttles.left(),
                    self.shared.error or "the run could not finish",
                    None,
                )
            if self.shared.journal is not None:
                self.shared.journal.close()
            self.parts.loop.deliver()  # a waiter woken by ``done`` finds every event heard
            self.shared.done.set()

    def _finish_run(self) -> None:
        """Every exit path: cancel if asked, leave exactly the throttles still needed, report.
        A run whose start failed changed nothing, so it touches nothing now either (another
        run's throttles stay). Each final step retries a transient error (``_final``); the
        throttle cleanup runs even when a step before it failed, and a cleanup that cannot
        finish is reported with what is left and the command that cleans it (exit 8)."""
        end = _Ending(
            self.shared.end_state or ("stopped" if self.shared.stop.is_set() else "failed")
        )
        cleanup_error: str | None = None
        last_known = self.shared.throttles.left()
        try:
            self._wind_down(end)
        except BaseException as e:  # noqa: BLE001 - the cleanup and the report still run
            self._note_error(e)
        if self.shared.began:
            cleanup_error = self._cleanup_throttles(end.cluster)
        try:
            self._settle(end)
        except BaseException as e:  # noqa: BLE001 - the report must still be written
            self._note_error(e)
        self._report(end, cleanup_error, last_known)

    def _note_error(self, e: BaseException) -> None:
        self.parts.loop.emit("error", message=f"while finishing: {type(e).__name__}: {e}")
        if self.shared.error is None:
            self.shared.error = f"while finishing: {e}"

    def _wind_down(self, end: _Ending) -> None:
        """The cancel if one was asked, the rollbacks awaited, the cluster's reassignments
        and the moves' partitions read (for the cleanup and the result)."""
        if self.shared.began and self.shared.cancel_on_stop and self.shared.stop.is_set():
            self._cancel_on_stop(end)
        if self.shared.began:
            self.parts.rollback.await_rollbacks()  # a cancel here, on a deadline or earlier in the run
        # cancelled by the user in the poll that reached KIP-1335's return point: the run
        # did not finish, it was stopped (before: "done", exit 0, for a run rolled back)
        rolled = (CANCELLED, ROLLING_BACK)
        if end.state in ("submitted", "done") and any(
            self.shared.moves[tp].status in rolled for tp in end.touched
        ):
            end.state = "stopped"
        if self.shared.began:
            end.cluster = self._final(self.shared.gw.list_reassignments, "listing reassignments")
            end.idle = self._final(self._final_states, "reading the moves' partitions")

    def _cancel_on_stop(self, end: _Ending) -> None:
        """Ctrl-C / SIGTERM / cancel(): journaled (and fsynced before the first Alter back) so
        that a SIGKILL from here on resumes as a cancel."""
        end.touched = [ms.tp for ms in self.shared.index.of(MOVING, READY)]
        end.cancelled_run = True
        self.parts.loop.emit("cancel_started", moves=len(end.touched), reason="stop")
        try:
            self._final(
                lambda: self.parts.rollback.cancel(end.touched, reason="stop"), "the cancel"
            )
        except KafkaOperationError as e:  # reported; the throttles are still made right
            self.shared.error = self.shared.error or f"cancel failed: {e}"
            self.parts.loop.emit("error", message=f"cancel failed: {e}")
        self.report_dead_targets(end.touched)

    def report_dead_targets(self, tps: list[TopicPartition]) -> None:
        """A cancel of moves into target brokers that are down: said plainly what it undid
        (the partition back at its original replicas) and what waits for the broker."""
        for line in cancel_notes(self.parts.track.dead_targets(tps)):
            self.parts.loop.emit("warning", message=line)

    def _settle(self, end: _Ending) -> None:
        """The end state named, the elections still owed carried out and the leaders
        elected checked."""
        if end.state == "submitted" and all(
            ms.status in ("done", "cancelled") for ms in self.shared.moves.values()
        ):
            end.state = "done"
        if end.cancelled_run and end.state in ("stopped", "submitted", "done"):
            end.state = "cancelled"  # run_finished says what the panel / CLI asked for
        if self.shared.began and self.shared.journal_error is None:
            self._owed_elections()
        if self.shared.began:
            try:  # the leaders of the partitions elected: their preferred replicas?
                self.shared.elections.finish(self.shared.gw.wrapped.sleep)
            except KafkaOperationError as e:
                self.parts.loop.emit("warning", message=f"cannot check the elected leaders: {e}")

    def _report(self, end: _Ending, cleanup_error: str | None, last_known: Any) -> None:
        """The lifecycle's end, the result and ``run_finished``."""
        state = end.state
        self.shared.state = state
        self.parts.loop.fire("finish", state)  # the lifecycle's end: one transition, first
        # after a failed cleanup, what was set after the last sync that went through may be left
        left = self.shared.throttles.left() if cleanup_error is None else last_known
        read_back = False
        if cleanup_error is None and self.shared.began:  # what is left: the brokers say
            left, cleanup_error = self._read_back(left)
            read_back = cleanup_error is None
        if cleanup_error is not None and self.shared.error is None:
            self.shared.error = f"throttle cleanup failed: {cleanup_error}"
        self.shared.result = RunResult.of(
            state,
            self.shared.run_id,
            self.shared.journal_path,
            [self.shared.moves[tp] for tp in self.shared.order],
            end.idle,
            left,
            self.shared.error,
            cleanup_error,
        )
        r = self.shared.result
        r.throttles_read_back = read_back or not self.shared.began  # a run never begun set none
        self._report_elections(r)
        self.parts.loop.emit(
            "run_finished",
            state=state,
            completed=len(r.completed),
            still_moving=len(r.still_moving),
            pending=len(r.pending),
            failed=len(r.failed),
            cancelled=len(r.cancelled),
            rolling_back=len(r.rolling_back),
            throttles_left=left,
            error=self.shared.error,
        )

    def _read_back(self, believed: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        """The throttles this run leaves, read back from the topics and brokers it wrote after
        the cleanup (the operator's values taken out), never what the run believes it set; an
        error (exit 8) when a broker cannot be read or holds what the run believes removed."""
        keeper = self.shared.throttles
        topics, brokers = keeper.written_scope()
        if not topics and not brokers:
            return believed, None  # the run never wrote a throttle
        for settle in range(SETTLE_ROUNDS + 1):
            try:
                now = self._final(
                    lambda: current_throttles(self.shared.gw, sorted(topics), sorted(brokers)),
                    "reading the throttles back",
                )
            except Exception as e:  # noqa: BLE001 - reported: what is left is unknown
                return believed, f"the throttles could not be read back ({type(e).__name__}: {e})"
            left = keeper.left_in(now)
            if now.get("unreachable") or not _not_in(left, believed):
                break
            if settle < SETTLE_ROUNDS:  # a broker may not have applied the removal yet
                self.shared.gw.wrapped.sleep(SETTLE_EVERY_S)
        unread = sorted(str(b) for b in now.get("unreachable") or {})
        if unread:
            left["unreachable"] = {str(b): str(e) for b, e in now["unreachable"].items()}
            return left, (
                f"broker(s) {', '.join(unread)} could not be read back after the cleanup: "
                "whether a throttle of this run is left there is unknown"
            )
        extra = _not_in(left, believed)
        if extra:
            self.parts.loop.emit("error", message=f"throttles read back after the cleanup: {extra}")
            return left, f"read back after the cleanup, still set: {extra}"
        return left, None

    def _final(self, fn: Any, what: str) -> Any:
        """``fn()`` with a transient cluster error retried (tenacity, ``FINAL_ATTEMPTS``
        rounds, each already retried by the run's gateway): the last steps of a run are its
        last chance, so a blip there must not skip them."""

        def note(rs: Any) -> None:
            self.parts.loop.emit(
                "retry",
                call=what,
                attempt=rs.attempt_number,
                error=str(rs.outcome.exception()),
                wait_s=CLEANUP_RETRY_EVERY_S,
            )

        for attempt in Retrying(
            stop=stop_after_attempt(FINAL_ATTEMPTS),
            wait=wait_fixed(CLEANUP_RETRY_EVERY_S),
            retry=retry_if_exception_type(KafkaOperationError),
            sleep=self.shared.gw.wrapped.sleep,
            before_sleep=note,
            reraise=True,
        ):
            with attempt:
                return fn()
        raise AssertionError("unreachable")  # pragma: no cover - reraise=True

    def _final_states(self) -> set[TopicPartition]:
        """The moves still watched read once more; those between steps or lost (nothing of
        theirs in flight) are returned, reported as pending."""
        watch = [ms.tp for ms in self.shared.index.of(MOVING, READY, ROLLING_BACK)]
        if not watch:
            return set()
        states = self.shared.gw.describe_partitions(watch)
        with self.shared.lock:
            self.parts.track.update(states, self.shared.clock())
            return {
                tp
                for tp in watch
                if self.shared.moves[tp].status == "moving"
                and (st := states.get(tp)) is not None
                and not st.reassigning
            }

    def _cleanup_throttles(self, cluster: Any) -> str | None:
        """The throttles made exactly what the moves still in flight need, retried; what
        could not be cleaned up is named with the command that does it (None: clean)."""
        clean = "`reassign-kit throttles --clean" + (
            f" --journal {self.shared.journal_path}`" if self.shared.journal_path else "`"
        )
        known = self.shared.throttles.left()  # what the last sync that went through set
        self.shared.throttles.forget()
        try:
            if cluster is None:
                cluster = self._final(self.shared.gw.list_reassignments, "listing reassignments")
            self._final(lambda: self.parts.loop.sync_throttles(cluster), "the throttle cleanup")
            # the last chance to clean up: a broker just back (restarted moments ago) may not
            # answer yet; ask again for a bounded time before giving up
            # a broker the run saw down while it ran is not waited for: a stop must not hang
            # on a dead target (its throttle is reported below)
            deadline = self.shared.clock() + CLEANUP_RETRY_S
            while self._wait_for_skipped() and self.shared.clock() < deadline:
                self.shared.gw.wrapped.sleep(CLEANUP_RETRY_EVERY_S)
                self.shared.throttles.forget()
                self._final(
                    lambda: self.parts.loop.sync_throttles(self.shared.gw.list_reassignments()),
                    "the throttle cleanup",
                )
        except Exception as e:  # noqa: BLE001 - reported: throttles may be left
            left = self.shared.throttles.left() or known
            msg = (
                f"{type(e).__name__}: {e} (after {FINAL_ATTEMPTS} rounds of retries); left "
                f"as the last sync set them: {_left_text(left)}. {clean} removes them "
                "(putting back the values there before)"
            )
            self.parts.loop.emit("error", message=f"throttle cleanup failed: {msg}")
            self.shared.throttles.applied = None
            return msg
        if self.shared.throttles.skipped:  # down brokers: their throttles wait for them
            left_on = ", ".join(str(b) for b in sorted(self.shared.throttles.skipped, key=str))
            msg = (
                f"throttles of broker(s) {left_on} not cleaned up: not reachable for "
                f"{CLEANUP_RETRY_S:g} s. Once back, {clean} removes them (putting back the "
                "values there before)"
            )
            self.parts.loop.emit("warning", message=msg)
            return msg
        return None

    def _wait_for_skipped(self) -> bool:
        """Brokers the cleanup skipped that may be just back (not seen down during the run)."""
        return any(b not in self.parts.track.down for b in self.shared.throttles.skipped)

    def _owed_elections(self) -> None:
        """Elections queued for moves that completed (also just before a stop or a cancel,
        and those a resumed run replayed) are carried out before the run ends, a bounded
        number of rounds; what is still queued is reported as owed (``elections_pending``)."""
        el = self.shared.elections
        for _ in range(OWED_ELECTION_ROUNDS):
            if not el.pending:
                return
            try:
                while el.pending:
                    before = el.pending
                    el.poll()
                    if el.pending >= before:
                        break  # transient failures: retried after a pause
            except KafkaOperationError as e:
                self.parts.loop.emit("warning", message=f"owed elections: {e}")
            if el.pending:
                self.shared.gw.wrapped.sleep(OWED_ELECTION_PAUSE_S)

    def _report_elections(self, r: RunResult) -> None:
        """The elections' part of the result: counts, what is left and the check."""
        el = self.shared.elections
        if not el.enabled:
            return
        r.elections = {**el.counts, "pending": el.pending}
        r.elections_pending = list(el.queue)
        r.elections_not_due = [
            ms.tp
            for ms in self.shared.index.of(MOVING, READY)
            if not ms.original or ms.original[0] != ms.move.replicas[0]
        ]
        if el.check is not None:
            r.leaders_checked = len(el.check.checked)
            r.leaders_not_preferred = {
                tp: why for tp, (_, _, why) in el.check.not_preferred.items()
            }


def _left_text(left: Any) -> str:
    """The throttles left, short: which brokers carry a rate, which topics a list."""
    if not left:
        return "unknown (read them with `reassign-kit throttles --check`)"
    rates = sorted(str(b) for b in (left.get("broker_rates") or {}))
    topics = sorted({*(left.get("leader_replicas") or {}), *(left.get("follower_replicas") or {})})
    parts = []
    if rates:
        parts.append("rates on broker(s) " + ", ".join(rates))
    if topics:
        parts.append("replica lists on topic(s) " + ", ".join(topics[:10]))
    return "; ".join(parts) or "none recorded"


def _not_in(read: Mapping[str, Any], believed: Mapping[str, Any]) -> str:
    """What the read-back holds that the run does not believe it left, short ("" if none)."""
    out = []
    for key, what in (
        ("broker_rates", "a rate on broker"),
        ("log_dir_rates", "a log-dir rate on broker"),
        ("leader_replicas", "a leader list on topic"),
        ("follower_replicas", "a follower list on topic"),
    ):
        theirs = believed.get(key) or {}
        names = sorted((n for n, v in (read.get(key) or {}).items() if theirs.get(n) != v), key=str)
        out += [f"{what} {n}" for n in names[:10]] + (["…"] if len(names) > 10 else [])
    return ", ".join(out)
