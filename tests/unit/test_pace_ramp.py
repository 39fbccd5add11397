"""A raise of the adaptive pace reaches the brokers in ten 1-s steps (pacing/controller.py
``Ramp``; seen in bench-pacing: each raise written in one step let Kafka's replication quota
— an average over 11 one-second windows — admit the new rate's credit at once, and the load's
latency spiked the second after). A decrease is written at once; a new target during a ramp
starts from where the ramp is, never jumping; every written rate lies between the old and the
new target."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.pacing.ramp import RAMP_STEP_S, RAMP_STEPS, Ramp


def test_a_raise_in_ten_steps_a_decrease_at_once():
    r = Ramp({1: 10_000, 2: 10_000}, now=0.0)
    r.retarget({1: 20_000, 2: 5_000}, now=100.0)
    assert r.at(100.0) == {1: 11_000, 2: 5_000}  # the first tenth at once; the cut whole
    assert r.at(104.5)[1] == 15_000
    assert r.at(100.0 + (RAMP_STEPS - 1) * RAMP_STEP_S)[1] == 20_000
    assert r.at(1e6)[1] == 20_000


def test_a_new_target_mid_ramp_starts_from_where_it_is():
    r = Ramp({1: 10_000}, now=0.0)
    r.retarget({1: 20_000}, now=0.0)
    at = r.at(4.0)[1]  # 15,000
    r.retarget({1: 40_000}, now=4.0)
    assert at < r.at(4.0)[1] <= at + (40_000 - at) // RAMP_STEPS + 1
    r.retarget({1: 12_000}, now=5.0)
    assert r.at(5.0)[1] == 12_000  # below where it was: at once


@settings(max_examples=200, deadline=None)
@given(
    start=st.integers(1, 10**9),
    changes=st.lists(st.tuples(st.floats(0.0, 20.0), st.integers(1, 10**9)), max_size=12),
    probes=st.lists(st.floats(0.0, 5.0), min_size=1, max_size=8),
)
def test_written_rates_never_jump_past_a_tenth_of_a_raise(start, changes, probes):
    r = Ramp({7: start}, now=0.0)
    now, last = 0.0, start
    for dt, target in changes:
        now += dt
        cur = r.at(now)[7]
        r.retarget({7: target}, now)
        first = r.at(now)[7]
        if target < cur:
            assert first == target
        else:
            assert cur <= first <= cur + (target - cur) // RAMP_STEPS + 1
        prev = first
        for p in sorted(probes):
            v = r.at(now + p)[7]
            assert min(cur, target) <= v <= max(cur, target)
            assert v >= prev  # a ramp only rises
            prev = v
        last = target
    assert r.at(now + RAMP_STEPS * RAMP_STEP_S)[7] == last


def test_a_raise_with_room_takes_the_steps_the_controller_gives():
    """The controller writes a raise with room in fewer steps (``Controller.ramp_steps``):
    three steps reach the target in three seconds, each a third of the way; steps out of
    1..RAMP_STEPS are clamped; a broker not named keeps the ten steps."""
    r = Ramp({1: 10_000, 2: 10_000, 3: 10_000}, now=0.0)
    r.retarget({1: 40_000, 2: 40_000, 3: 40_000}, now=0.0, steps={1: 3, 2: 0})
    assert [r.at(float(t))[1] for t in range(4)] == [20_000, 30_000, 40_000, 40_000]
    assert r.at(0.0)[2] == 40_000  # 0 steps: clamped to one
    assert r.at(0.0)[3] == 13_000 and r.at((RAMP_STEPS - 1) * RAMP_STEP_S)[3] == 40_000
