"""Deadlines and stuck moves: which of a run's moves in flight have run past
``--move-deadline``, copied nothing for ``--stuck-after`` (a move into a target broker that
is down copies nothing: its ``stuck`` event says so as its reason), and whether the whole run is past
``--run-deadline``. Each is reported once (journaled ``deadline`` / ``stuck``); what happens
next is ``--on-deadline``'s policy, applied by the run."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..moves.table import MoveState
from .options import ExecuteOptions


@dataclass
class Expired:
    """What expired in this poll: moves (with why) and whether the run did."""

    moves: list[tuple[MoveState, str]] = field(default_factory=list)
    run: bool = False

    def __bool__(self) -> bool:
        return bool(self.moves) or self.run


def check(
    moving: Iterable[MoveState],
    options: ExecuteOptions,
    now: float,
    started_at: float | None,
    ended: bool,
    emit: Callable[..., Any],
    why_stuck: Callable[[MoveState], str | None] = lambda ms: None,
) -> Expired:
    """Newly expired moves and run (``ended``: the run already has an end state, so its
    deadline no longer counts); every new expiry journaled once through ``emit``."""
    o = options
    out = Expired()
    moving = list(moving)
    for ms in moving if o.move_deadline is not None else ():
        if (
            ms.submitted_at is not None
            and now - ms.submitted_at > o.move_deadline
            and not ms.deadline_reported
        ):
            ms.deadline_reported = True
            emit(
                "deadline",
                topic=ms.tp.topic,
                partition=ms.tp.partition,
                scope="move",
                after_s=o.move_deadline,
                policy=o.on_deadline,
            )
            out.moves.append((ms, "move deadline"))
    for ms in moving if o.stuck_after is not None else ():
        if (
            ms.progress_at is not None
            and now - ms.progress_at > o.stuck_after
            and not ms.stuck_reported
        ):
            ms.stuck_reported = True
            idle = round(now - ms.progress_at, 3)
            emit(
                "stuck",
                topic=ms.tp.topic,
                partition=ms.tp.partition,
                reason=why_stuck(ms) or f"no bytes copied for {idle:g} s",
                no_progress_s=idle,
                bytes_copied=ms.bytes_copied,
                policy=o.on_deadline,
            )
            out.moves.append((ms, "stuck"))
    out.run = (
        o.run_deadline is not None
        and started_at is not None
        and now - started_at > o.run_deadline
        and not ended
    )
    if out.run:
        emit("deadline", scope="run", after_s=o.run_deadline, policy=o.on_deadline)
    return out
