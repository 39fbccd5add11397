"""What a run spends between copies, measured (for ``eta.estimate.RunEta``): the gap
from a completion to the submission it lets go (the run's admin calls), from a KIP-435
step's completion to its move's next step, and what a step that only drops replicas takes
(no byte to copy, still a controller round: 1.3-2 s on the sandbox). The medians of the last
20 of each go into the simulation of what is left (``eta_model.simulate``). Pure."""

from __future__ import annotations

import bisect
import itertools
import math
import statistics

from ..model import TopicPartition
from ..moves.table import MoveIndex, MoveState, MoveStatus

RECENT_DONE = 50  # completions a submission's gap is measured against
MAX_GAP_S = 30.0  # a longer gap is a pause or a stop, not the run's overhead


class Overheads:
    """The gaps and drop-only steps measured so far (``observe`` at every sample)."""

    def __init__(self) -> None:
        self._subs: dict[TopicPartition, float | None] = {}  # submission seen per move
        self.gaps: list[float] = []
        self.step_gaps: list[float] = []  # from a step's completion to its move's next step
        self.drops: list[float] = []  # a step that only drops replicas: submission to done
        self._drops_seen: set[tuple[TopicPartition, int]] = set()

    def observe(self, moves: MoveIndex) -> None:
        """Seconds from a completion to the submission it lets go: a move's first step
        against the latest completion of a move (the last ``RECENT_DONE`` done, newest
        first, without walking the others); a later KIP-435 step against its own move's
        step completion (``step_completed_at``). And how long a step that only drops
        replicas takes, submission to completion (no byte to copy, still a controller
        round: 1.3-2 s on the sandbox)."""
        done_ms = list(
            itertools.islice(reversed(moves.by_status[MoveStatus.DONE].values()), RECENT_DONE)
        )
        done = sorted(ms.completed_at for ms in done_ms if ms.completed_at is not None)
        seen: dict[TopicPartition, float | None] = {}
        for ms in moves.iter(MoveStatus.MOVING):
            sub = ms.step_submitted_at if ms.step_submitted_at is not None else ms.submitted_at
            if sub is not None and self._subs.get(ms.tp, -math.inf) != sub:
                if ms.step >= 2 and ms.step_completed_at is not None:
                    g = sub - ms.step_completed_at
                    if 0.0 <= g <= MAX_GAP_S:
                        self.step_gaps = [*self.step_gaps[-19:], g]
                    if _drops_only(ms, ms.step - 1) and ms.step_took_s is not None:
                        self._drop((ms.tp, ms.step - 1), ms.step_took_s)
                else:
                    k = bisect.bisect_right(done, sub + 1e-9)
                    if k and 0.0 <= sub - done[k - 1] <= MAX_GAP_S:
                        self.gaps = [*self.gaps[-19:], sub - done[k - 1]]
            seen[ms.tp] = sub
        self._subs = seen
        for ms in moves.iter(MoveStatus.READY):  # a step just completed
            if ms.step >= 1 and _drops_only(ms, ms.step) and ms.step_took_s is not None:
                self._drop((ms.tp, ms.step), ms.step_took_s)
        for ms in done_ms:  # a move whose last step dropped replicas
            n = len(ms.steps)
            if n >= 2 and _drops_only(ms, n) and ms.completed_at is not None:
                if ms.step_submitted_at is not None and (ms.tp, n) not in self._drops_seen:
                    self._drop((ms.tp, n), ms.completed_at - ms.step_submitted_at)
                    if len(self._drops_seen) > 4 * RECENT_DONE:
                        self._drops_seen.clear()

    def _drop(self, key: tuple[TopicPartition, int], took: float) -> None:
        if key not in self._drops_seen and 0.0 <= took <= MAX_GAP_S:
            self._drops_seen.add(key)
            self.drops = [*self.drops[-19:], took]

    def gap(self) -> float:
        """The median measured gap before a move's first step (0 before one is)."""
        return statistics.median(self.gaps) if self.gaps else 0.0

    def step_gap(self) -> float:
        """The median measured gap before a later step (the slots' gap before one is)."""
        return statistics.median(self.step_gaps) if self.step_gaps else self.gap()

    def drop_s(self) -> float | None:
        """The median measured time of a step that only drops replicas (None: the
        completion lag, before one is)."""
        return statistics.median(self.drops) if self.drops else None


def _drops_only(ms: MoveState, k: int) -> bool:
    """Step ``k`` (1-based) of ``ms`` adds no replica: it copies nothing."""
    if not 1 <= k <= len(ms.steps):
        return False
    before = ms.steps[k - 2] if k >= 2 else ms.original
    return not any(b not in before for b in ms.steps[k - 1])
