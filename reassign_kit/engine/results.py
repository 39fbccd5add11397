"""What a run reports: ``RunStatus`` while it goes on (``Run.status()``), ``RunResult`` when
it ends (the CLI's summary and exit code), ``RunError`` when it ended on an error."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import ReassignKitError
from ..model import TopicPartition


class RunError(ReassignKitError):
    """The run stopped on an error (a rejected submission, a lost move, a deadline)."""

    exit_code = 7


@dataclass
class RunStatus:
    state: str
    run_id: str
    done: int
    moving: int
    pending: int
    failed: int
    cancelled: int
    total: int
    waiting_reason: str | None
    rows: list[dict[str, Any]]

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows)


@dataclass
class RunResult:
    state: str  # done | submitted | stopped | deadline | failed
    run_id: str
    journal_path: str | None
    submitted: list[TopicPartition]
    completed: list[TopicPartition]
    still_moving: list[TopicPartition]
    pending: list[TopicPartition]
    failed: dict[TopicPartition, str]
    cancelled: list[TopicPartition]
    throttles_left: dict[str, Any]
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.state in ("done", "submitted")

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else (130 if self.state == "stopped" else RunError.exit_code)

    def to_pandas(self):
        import pandas as pd

        rows = [{"partition": str(t), "status": "completed"} for t in self.completed]
        rows += [{"partition": str(t), "status": "moving"} for t in self.still_moving]
        rows += [{"partition": str(t), "status": "pending"} for t in self.pending]
        rows += [{"partition": str(t), "status": "cancelled"} for t in self.cancelled]
        rows += [
            {"partition": str(t), "status": "failed", "error": e} for t, e in self.failed.items()
        ]
        return pd.DataFrame(rows)
