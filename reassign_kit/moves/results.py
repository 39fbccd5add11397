"""What a run reports: ``RunStatus`` while it goes on (``Run.status()``), ``RunResult`` when
it ends (the CLI's summary and exit code), ``RunError`` when it ended on an error."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from ..errors import RunError, ThrottleCleanupError
from ..model import TopicPartition


@dataclass
class RunStatus:
    """Counts now, and the rows (one per move, in plan order) built only when asked for: the
    counts come from the run's index by status, so a status call costs nothing per move."""

    state: str
    run_id: str
    done: int
    moving: int
    pending: int
    failed: int
    cancelled: int
    total: int
    waiting_reason: str | None
    rolling_back: int = 0  # cancelled, on their way back to their original replicas
    _moves: Callable[[], Sequence[Any]] = field(repr=False, default=tuple)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [ms.row() for ms in self._moves()]

    @classmethod
    def of(
        cls,
        state: str,
        run_id: str,
        moves: Sequence[Any] | Callable[[], Sequence[Any]],
        waiting_reason: str | None,
        counts: Mapping[str, int] | None = None,
        total: int | None = None,
    ) -> RunStatus:
        """From the run's moves in order (``moves.MoveState``, or a function returning them)
        and, when known, the counts by status; a move between steps counts as moving, and so
        does one rolling back (also counted in ``rolling_back``)."""
        get = moves if callable(moves) else (lambda: moves)
        if counts is None:
            counts = {}
            for ms in get():
                counts[str(ms.status.value)] = counts.get(str(ms.status.value), 0) + 1
        return cls(
            state,
            run_id,
            counts.get("done", 0),
            counts.get("moving", 0) + counts.get("ready", 0) + counts.get("rolling_back", 0),
            counts.get("pending", 0),
            counts.get("failed", 0),
            counts.get("cancelled", 0),
            total if total is not None else sum(counts.values()),
            waiting_reason,
            rolling_back=counts.get("rolling_back", 0),
            _moves=get,
        )

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows)


@dataclass
class RunResult:
    state: str  # done | submitted | stopped | cancelled | deadline | failed
    run_id: str
    journal_path: str | None
    submitted: list[TopicPartition]
    completed: list[TopicPartition]
    still_moving: list[TopicPartition]
    pending: list[TopicPartition]
    failed: dict[TopicPartition, str]
    cancelled: list[TopicPartition]  # rolled back: at their original replicas, in order
    throttles_left: dict[str, Any]
    error: str | None = None
    cleanup_error: str | None = None  # the final throttle cleanup failed: throttles may be left
    # cancelled, but not back at their original replicas when the run ended (the rollback
    # still in flight, with its throttles; ``--cancel --journal`` finishes and verifies it)
    rolling_back: list[TopicPartition] = field(default_factory=list)
    # submitted, but between two KIP-435 steps when the run ended (Stop drains): at an
    # intermediate replica set, nothing in flight. Also in ``pending`` (their next step was
    # not submitted); --resume goes on from there, the cancel rolls them back.
    between_steps: list[TopicPartition] = field(default_factory=list)
    # preferred leader elections (run/elections.py): counts (elected, not_needed, failed,
    # pending), queued but not sent (the run stopped first), moves not complete at the end
    # whose preferred leader changes (elected by --resume or --verify --elect-leaders once
    # complete), partitions checked and those not led by their preferred replica (why)
    elections: dict[str, int] = field(default_factory=dict)
    elections_pending: list[TopicPartition] = field(default_factory=list)
    elections_not_due: list[TopicPartition] = field(default_factory=list)
    leaders_checked: int = 0
    leaders_not_preferred: dict[TopicPartition, str] = field(default_factory=dict)
    # ``throttles_left`` was read back from the brokers after the cleanup (else: believed)
    throttles_read_back: bool = False

    @classmethod
    def of(
        cls,
        state: str,
        run_id: str,
        journal_path: str | None,
        moves: Sequence[Any],
        idle: Set[TopicPartition],
        throttles_left: dict[str, Any],
        error: str | None,
        cleanup_error: str | None,
    ) -> RunResult:
        """From the run's moves in order (``moves.MoveState``); ``idle``: moves with nothing
        in flight on the cluster at the end (between steps, or lost), reported as pending."""

        def having(*statuses: str) -> list[TopicPartition]:
            return [ms.tp for ms in moves if ms.status in statuses and ms.tp not in idle]

        return cls(
            state=state,
            run_id=run_id,
            journal_path=journal_path,
            submitted=[ms.tp for ms in moves if ms.submitted_at is not None],
            completed=having("done"),
            still_moving=having("moving"),
            pending=[ms.tp for ms in moves if ms.status in ("pending", "ready") or ms.tp in idle],
            failed={ms.tp: ms.error or "" for ms in moves if ms.status == "failed"},
            cancelled=having("cancelled"),
            throttles_left=throttles_left,
            error=error,
            cleanup_error=cleanup_error,
            rolling_back=having("rolling_back"),
            between_steps=[
                ms.tp
                for ms in moves
                if ms.submitted_at is not None
                and (ms.status == "ready" or (ms.status == "moving" and ms.tp in idle))
            ],
        )

    @property
    def not_submitted(self) -> list[TopicPartition]:
        """Moves never submitted (``pending`` without those between steps)."""
        between = set(self.between_steps)
        return [tp for tp in self.pending if tp not in between]

    @property
    def ok(self) -> bool:
        return self.state in ("done", "submitted")

    @property
    def exit_code(self) -> int:
        if self.cleanup_error is not None:  # someone must act: it comes first
            return ThrottleCleanupError.exit_code
        return (
            0
            if self.ok
            else (130 if self.state in ("stopped", "cancelled") else RunError.exit_code)
        )

    def cleanup_lines(self, command: str = "reassign-kit --verify on the plan") -> list[str]:
        """When the final throttle cleanup failed: what may be left and what removes it
        (``command``: the --verify command line, which clears them once nothing moves)."""
        if self.cleanup_error is None:
            return []
        left = self.throttles_left or {}
        topics = sorted({*left.get("leader_replicas", {}), *left.get("follower_replicas", {})})
        brokers = sorted({*left.get("broker_rates", {}), *left.get("log_dir_rates", {})}, key=int)
        what = []
        if topics:
            what.append("the throttled-replica lists of topic(s) " + ", ".join(topics))
        if brokers:
            what.append("the throttle rates of broker(s) " + ", ".join(brokers))
        return [
            f"Throttle cleanup FAILED ({self.cleanup_error}); still set, as far as this run "
            f"knows: {' and '.join(what) or 'the throttles of the plan topics and brokers'}.",
            f"Once nothing of the plan moves, remove them with: {command}",
        ]

    def to_pandas(self):
        import pandas as pd

        rows = [{"partition": str(t), "status": "completed"} for t in self.completed]
        rows += [{"partition": str(t), "status": "moving"} for t in self.still_moving]
        rows += [{"partition": str(t), "status": "pending"} for t in self.not_submitted]
        rows += [{"partition": str(t), "status": "between steps"} for t in self.between_steps]
        rows += [{"partition": str(t), "status": "cancelled"} for t in self.cancelled]
        rows += [{"partition": str(t), "status": "rolling back"} for t in self.rolling_back]
        rows += [
            {"partition": str(t), "status": "failed", "error": e} for t, e in self.failed.items()
        ]
        return pd.DataFrame(rows)
