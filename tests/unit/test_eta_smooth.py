"""The run's pace is read off a smooth model (seen in bench_eta). The pace
(``eta_pace.RunPace``) is the difference of the model's seconds of work left at two states,
up to 22 s apart, over the wall time between. The model put every completion on the run's next
poll (a 0.5 s grid from the sample), so that work moved in whole polls and the pace by up to
0.5 s / span at a time: one source of the sample-to-sample wander of bench_eta's spread (the
median move of the finish it gave, replayed on its journals: 0.41 -> 0.21 s, 0.55 -> 0.29 s;
the larger swings are the quota's stalls at the bottleneck end). The pace's model now counts
the wait for a poll as its expectation (half a poll): the work left falls as the bytes do."""

from __future__ import annotations

import pytest

from reassign_kit.cluster.simulate import MB
from reassign_kit.eta.estimate import RunEta
from reassign_kit.eta.model import Flow, simulate
from reassign_kit.model import Move, TopicPartition
from reassign_kit.moves.schedule import Caps, item_for
from reassign_kit.moves.table import MoveIndex, MoveState

TP = TopicPartition
RATE = 2 * MB
POLL_S = 0.5
# the sandbox's samples: every 1 s asked, 1.02-1.2 s apart (the run's own admin calls)
GAPS = [1.03, 1.17, 1.02, 1.21, 1.05, 1.12, 1.02, 1.19, 1.04, 1.09]


def _moves(n: int, size: int) -> tuple[MoveIndex, list[MoveState]]:
    index, out = MoveIndex(), []
    for p in range(n):
        tp = TP("s", p)
        ms = MoveState(Move(tp, (2,)), item_for(tp, (1,), (2,), 1, size))
        ms.original, ms.steps = (1,), [(2,)]
        index.add(ms)
        out.append(ms)
    return index, out


def test_a_steady_copy_sampled_unevenly_reads_a_steady_pace():
    """Three moves of 40 MiB from broker 1 to broker 2, one at a time, copying at exactly the
    throttle, sampled at the sandbox's uneven intervals: the true pace is 1 at every sample.
    Before, the pace read 0.96-1.00 (the work left on the polls' grid); now 1 within 1%, and
    the finish it gives stays put."""
    size = 40 * MB
    index, moves = _moves(3, size)
    moves[0].submit(0.0, 0)
    moves[0].submit_step(0.0, 1, (2,))
    eta = RunEta(poll_s=POLL_S)
    ts, paces, finishes = 0.0, [], []
    for k in range(18):
        ts += GAPS[k % len(GAPS)]
        got = RATE * ts
        eta.update(
            ts, {2: got}, {2: 3 * size - got}, {2: 1}, RATE, POLL_S / 2,
            moves=index, copied={(moves[0].tp, 2): int(got)}, caps=Caps(batch_size=1),
        )  # fmt: skip
        f = eta.fields()
        if f["run_pace"] is not None:
            paces.append(eta.paced.value)
            finishes.append(ts + eta.eta)
    assert len(paces) >= 8, paces
    assert all(abs(p - 1.0) <= 0.01 for p in paces), paces
    assert max(finishes) - min(finishes) <= 0.3, finishes


def test_the_pace_model_counts_half_a_poll_per_completion_off_the_grid():
    """``simulate(on_polls=False)``: a completion seen half a poll after it (the wait
    expected), so the seconds left fall as the bytes left do; on the grid they stay put
    for up to a poll, then drop by one."""
    tp = TP("s", 0)
    item = item_for(tp, (1,), (2,), 1, 10 * MB)

    def left(n: float, on_polls: bool) -> float:
        f = Flow(tp, item, 1, 10 * MB, [(2,)], "moving", {2: n}, srcs=[1])
        return simulate([f], RATE, Caps(), POLL_S / 2, poll=POLL_S, on_polls=on_polls).seconds

    smooth = [left(n * MB, False) for n in (4.0, 3.8, 3.6, 3.4)]
    assert [round(b - a, 6) for a, b in zip(smooth, smooth[1:], strict=False)] == [-0.1] * 3
    assert smooth[0] == pytest.approx(2.0 + POLL_S / 2)
    grid = [left(n * MB, True) for n in (4.0, 3.8, 3.6, 3.4)]
    assert len(set(grid)) < len(grid)  # the grid: a step function of the bytes
