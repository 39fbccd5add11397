"""The ETA's update on a fixed state of 2,000 moves in flight (KIP-435 steps among them, a
queue behind them, a throttle lowered mid-run so the quota's windows replay): every figure
it gives, at each of a dozen samples, is the one the model gave before its update was made
cheaper (a digest of their exact reprs): the cost work changes no figure."""

from __future__ import annotations

import hashlib

from reassign_kit.cluster.simulate import MB
from reassign_kit.eta.estimate import RunEta
from reassign_kit.eta.model import flows_of, forecast, plan_index
from reassign_kit.model import Move, PartitionState, Plan, TopicPartition
from reassign_kit.moves.schedule import Caps
from reassign_kit.moves.table import MoveStatus

BROKERS = 60
IN_FLIGHT = 2000
QUEUED = 400
CAPS = Caps(batch_size=IN_FLIGHT, incremental=True)


def fixed_index():
    """2,400 moves of 1-3 MB on 60 brokers (RF 2, some RF 3); 2,000 of them in flight, one in
    ten in the first of two KIP-435 steps; the rest queued."""
    states, sizes, moves = {}, {}, []
    for p in range(IN_FLIGHT + QUEUED):
        tp = TopicPartition(f"t{p % 7}", p)
        rf = 3 if p % 5 == 0 else 2
        now = tuple((p + k) % BROKERS for k in range(rf))
        target = tuple((p + 2 * k + 11 + p % 3) % BROKERS for k in range(rf))
        states[tp] = PartitionState(tp, now, now, now[0])
        sizes[tp] = (1 + p % 3) * MB
        moves.append(Move(tp, target))
    index = plan_index(Plan.of(moves), states, sizes, CAPS)
    for n, ms in enumerate(list(index.iter(MoveStatus.PENDING))[:IN_FLIGHT]):
        if n % 10 == 0:  # two steps: the target's first replica added first
            ms.steps = [(*ms.original, ms.move.replicas[0]), tuple(ms.move.replicas)]
        ms.submit(0.0, 0)
        ms.submit_step(0.0, 1, ms.steps[0] if ms.steps else tuple(ms.move.replicas))
    return index


def copied_at(index, ts: float) -> dict:
    """Each new replica's bytes at ``ts``: a pace of its own per partition, none past its
    size."""
    out = {}
    for ms in index.iter(MoveStatus.MOVING):
        for b in ms.step_target:
            if b not in ms.step_from:
                rate = (0.05 + (ms.tp.partition * 7 + b) % 11 / 100) * MB
                out[(ms.tp, b)] = int(min(ms.item.size_bytes, rate * ts))
    return out


def figures() -> list:
    index = fixed_index()
    eta = RunEta(poll_s=1.0)
    out = []
    for k in range(12):
        ts = 1.0 + 5 * k
        cap = 8 * MB if k < 6 else 4 * MB
        if k == 6:
            eta.restart()
        copied = copied_at(index, ts)
        received: dict[int, float] = {}
        left: dict[int, float] = {}
        inflight: dict[int, int] = {}
        for ms in index.iter(MoveStatus.MOVING):
            for b in ms.step_target:
                if b not in ms.step_from:
                    got = copied[(ms.tp, b)]
                    received[b] = received.get(b, 0.0) + got
                    left[b] = left.get(b, 0.0) + ms.item.size_bytes - got
                    inflight[b] = inflight.get(b, 0) + 1
        res = eta.update(
            ts, received, left, inflight, cap, 1.5,
            moves=index, copied=copied, caps=CAPS, r=2, elections=(3, 50), tail_spread=0.3,
        )  # fmt: skip
        out.append((res, eta.low, eta.high, eta.bound, eta.fields()))
    whole = forecast(fixed_index(), 8 * MB, CAPS, 1.5, r=2, poll=1.0, elections=(0, 50))
    out.append(whole)
    return out


def test_the_updates_figures_on_2000_moves_in_flight_are_the_models_before():
    got = figures()
    assert all(f[0][0] is not None for f in got[:-1])  # an ETA at every sample
    digest = hashlib.sha256(repr(got).encode()).hexdigest()
    assert digest == EXPECTED, (digest, got[-3:])


EXPECTED = "55636fb5f9ea9e29fc01b8a8b90d2197a679f733a377becd705d491a2e179d60"


def flow_fields(flows) -> list:
    return [(f.tp, f.src, f.size, f.steps, f.state, f.left, f.srcs) for f in flows]


def test_a_moves_steps_kept_between_samples_are_worked_out_again_when_they_change():
    index = fixed_index()
    known: dict = {}
    copied = copied_at(index, 6.0)
    flows_of(index, copied, 2, known=known)
    moving = list(index.iter(MoveStatus.MOVING))
    one, two = moving[0], moving[1]  # two steps (the first), one step
    assert one.steps and not two.steps
    one.complete_step(one.steps[0], 5.0)  # its second step goes next: its flow is "ready"
    one.submit_step(5.5, 2, one.steps[1])
    two.steps = [(*two.original, two.move.replicas[0]), tuple(two.move.replicas)]  # replanned
    for r in (2, 3):  # and R changed: the queued moves' steps follow it
        got = flows_of(index, copied, r, known=known)
        assert flow_fields(got[0]) == flow_fields(flows_of(index, copied, r)[0])
        assert got[1:] == flows_of(index, copied, r)[1:]
