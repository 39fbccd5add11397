"""The adaptive pace's controller (pacing/controller.py): pure, so its promises are
checked as properties over random health histories — rates stay within [floor, ceiling], no
increase without a fresh in-objective signal, a decrease within the reaction window of a
signal over the objective, a pause exactly while a partition outside the plan is under min
ISR, and no signal (None / degraded) never makes the pace faster."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.errors import UsageError
from reassign_kit.health.signals import BrokerHealth, HealthSample
from reassign_kit.model import TopicPartition
from reassign_kit.pacing.controller import (
    AIM,
    MAX_JUMP,
    REACTION_S,
    ROOM,
    Bounds,
    Controller,
    Objective,
    cap_start,
    pace_line,
)
from reassign_kit.pacing.ramp import RAMP_STEPS

TP = TopicPartition
BROKERS = (0, 1, 2)
PLAN = frozenset({TP("moving", 0), TP("moving", 1)})
OUTSIDE = (TP("other", 0), TP("other", 1))
FLOOR, CEILING = 1_000, 100_000


def sample(ts, p99s, degraded=None, under=None):
    return HealthSample(
        ts=ts,
        source="test",
        brokers={b: BrokerHealth(b, produce_p99_ms=v) for b, v in p99s.items()},
        under_min_isr=under,
        degraded=degraded,
    )


steps = st.lists(
    st.tuples(
        st.floats(0.2, 12.0),  # time since the previous poll
        st.floats(0.0, 20.0),  # how old the sample is at the poll
        st.fixed_dictionaries({b: st.one_of(st.none(), st.floats(1.0, 200.0)) for b in BROKERS}),
        st.booleans(),  # degraded
        st.one_of(
            st.none(),
            st.sets(st.sampled_from(sorted(PLAN) + list(OUTSIDE))).map(frozenset),
        ),
        st.booleans(),  # the source gave no sample at all
        st.one_of(st.none(), st.sets(st.sampled_from(BROKERS))),  # brokers the run loads
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(steps, st.sampled_from([5.0, 10.0, 29.0]))
def test_the_controllers_promises_hold_over_any_health_history(history, settle_s):
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, PLAN, settle_s=settle_s)
    now = 1000.0
    paused = False
    over_since: dict[int, float] = {}  # the test's own account of each broker's run over
    worst: dict[int, float] = {}
    cut: set[int] = set()  # brokers decreased once
    for dt, age, p99s, degraded, under, missing, busy in history:
        now += dt
        s = None if missing else sample(now - age, p99s, "sick" if degraded else None, under)
        before = dict(c.rates)
        changed_before = dict(c.changed_at)
        held_before = dict(c.held_worst)  # the readings each broker's next raise rests on
        if s is not None:  # the test's own account of each broker's worst since its change
            for b, v in p99s.items():
                if v is not None and (busy is None or b in busy):
                    worst[b] = max(worst.get(b, 0.0), v)
        decisions = c.step(s, now, busy)
        # 1. rates within the bounds, always
        assert all(FLOOR <= r <= CEILING for r in c.rates.values())
        by_broker = {d.broker: d for d in decisions if d.broker is not None}
        for b, r in c.rates.items():
            if r != before[b]:  # every change is a decision saying so
                assert by_broker[b].old_rate == before[b] and by_broker[b].new_rate == r
        for d in decisions:
            if d.action == "increase":
                # 2. an increase needs a fresh, measured, in-objective, undegraded signal
                assert s is not None and not s.degraded
                assert busy is None or d.broker in busy  # under the run's load only
                p99 = s.brokers[d.broker].produce_p99_ms
                assert p99 is not None and p99 <= 50.0
                assert now - s.ts <= c.stale_s
                assert s.ts - changed_before.get(d.broker, -1e18) >= settle_s
                assert d.signals["produce_p99_ms"] == p99 and d.reason
                # before the broker's first decrease x2, or up to x limit / the worst p99
                # since its last change (at most MAX_JUMP); + step after it; and with the
                # readings it rests on over half the limit, no further than AIM of it by them
                held = max(held_before.get(d.broker, 0.0), p99) / 50.0
                if d.broker in cut:
                    want = d.old_rate + c.step_bps
                else:
                    jump = min(MAX_JUMP, max(2.0, 50.0 / max(worst.get(d.broker, 50.0), 1e-9)))
                    want = d.old_rate * jump
                if held > ROOM:
                    want = min(want, d.old_rate * AIM / held)
                    assert d.new_rate * held <= AIM * d.old_rate + 1  # the aim, not past it
                if d.new_rate > d.old_rate:
                    assert d.new_rate == int(min(CEILING, max(FLOOR, want)))
            if d.action == "decrease":
                assert s is not None and s.brokers[d.broker].produce_p99_ms > 50.0
                cut.add(d.broker)
            worst.pop(d.broker, None)
        # 3. a signal over the objective for persist_s is acted on at once, or a decrease was
        # made within settle_s before it (persist_s + settle_s <= the 30 s reaction bound);
        # never a decrease on a run over shorter than persist_s
        if s is not None:
            for b, v in p99s.items():
                if v is None:
                    continue
                if v <= 50.0:
                    over_since.pop(b, None)
                    continue
                held = s.ts - over_since.setdefault(b, s.ts)
                decreased = b in by_broker and by_broker[b].action == "decrease"
                assert held >= c.persist_s or not decreased
                if held >= c.persist_s and before[b] > FLOOR:
                    recent = s.ts - c.last_decrease.get(b, -1e18) < settle_s
                    assert decreased or recent
                assert c.persist_s + settle_s <= REACTION_S
        # 4. paused iff a partition outside the plan is under min ISR (last measured)
        if s is not None and s.under_min_isr is not None:
            paused = bool(s.under_min_isr - PLAN)
        assert c.paused == paused
        for d in decisions:
            if d.action in ("pause", "resume"):
                assert d.reason and d.broker is None


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.5, 3.0), st.floats(20.0, 55.0), st.floats(20.0, 55.0)),
        min_size=5,
        max_size=60,
    )
)
def test_a_raise_never_aims_past_the_limit_its_readings_foretell(history):
    """Readings near the limit (20-55 ms of 50): every raise, slow start or additive, keeps
    new rate x the worst reading it rests on / old rate within AIM of the limit (latency
    linear in the rate), and none is made from readings at AIM of the limit or more."""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), [0, 1], start=10_000)
    now = 0.0
    for dt, p0, p1 in history:
        now += dt
        held = dict(c.held_worst)
        for d in c.step(sample(now, {0: p0, 1: p1}), now):
            if d.action != "increase":
                continue
            worst = max(held.get(d.broker, 0.0), (p0, p1)[d.broker]) / 50.0
            assert worst < AIM
            if worst > ROOM:
                assert d.new_rate * worst <= AIM * d.old_rate + 1, (d, worst)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0.5, 10.0),
            st.fixed_dictionaries({b: st.one_of(st.none(), st.floats(1, 40)) for b in BROKERS}),
        ),
        max_size=40,
    )
)
def test_no_signal_never_makes_the_pace_faster(history):
    """Every sample degraded (the source is sick): however good its numbers, no increase."""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, settle_s=1.0)
    start = dict(c.rates)
    now = 0.0
    for dt, p99s in history:
        now += dt
        c.step(sample(now, p99s, degraded="prometheus: timeout"), now)
        c.step(None, now)
        c.step(sample(now, dict.fromkeys(BROKERS)), now)  # measured nothing
    assert all(c.rates[b] <= start[b] for b in BROKERS)


def test_aimd_one_broker_backed_off_the_others_raised():
    c = Controller(  # the readings sit at the limit: the aim (below) off
        Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, settle_s=5.0, start=20_000, persist_s=0,
        aim=None,
    )  # fmt: skip
    assert c.step(sample(5.0, {0: 50.0, 1: 50.0, 2: 50.0}), 5.0) == []  # the load starts
    d0 = c.step(sample(10.0, {0: 50.0, 1: 50.0, 2: 90.0}), 10.0)
    assert d0[0].reason == (  # no change before: no time since one
        "produce p99 50.0 ms within the objective 50.0 ms (slow start: x2 until a first decrease)"
    )
    assert c.rates == {0: 40_000, 1: 40_000, 2: 10_000}  # slow start x2; x0.5
    c.step(sample(11.0, {0: 50.0, 1: 50.0, 2: 90.0}), 11.0)  # within settle: no change
    assert c.rates == {0: 40_000, 1: 40_000, 2: 10_000}
    ds = c.step(sample(16.0, {0: 50.0, 1: 50.0, 2: 90.0}), 16.0)
    assert c.rates == {0: 80_000, 1: 80_000, 2: 5_000}
    c.step(sample(22.0, {0: 90.0, 1: 50.0, 2: 50.0}), 22.0)  # broker 0 over: its slow start ends
    assert c.rates == {0: 40_000, 1: 100_000, 2: 14_900}  # 2: +step (99,000 / 10) after a decrease
    first = c.step(sample(30.0, {0: 50.0}), 30.0)[0]  # broker 0: additive now, 8 s after
    assert first.new_rate == 49_900
    assert (
        first.reason == "produce p99 50.0 ms within the objective 50.0 ms 8 s after the last change"
    )
    line = pace_line({"event": "pace_decision", **[d for d in ds if d.broker == 2][0].to_event()})
    assert line.startswith("pace broker 2: 10000 -> 5000 B/s (decrease): produce p99 90.0 ms")


def test_the_first_raise_waits_for_a_window_that_saw_the_runs_load():
    """bench-pacing run 15: every broker doubled 1.2 s into the run on a probe p99 of 19-41
    ms from messages sent before the moves' fetchers ran; the load's p99 then reached 4.8 s
    (static 128 MiB/s, the start rate: 38 ms). The start rate is a change like any: a raise
    needs a sample settle_s after the run's moves first loaded the broker; a broker not
    loaded yet starts its clock when it is. (The readings sit at the limit: no room; the aim
    off.)"""
    c = Controller(
        Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, start=40_000, persist_s=0, aim=None
    )
    for t in (1.2, 3.0, 5.9):
        assert c.step(sample(t, {0: 50.0, 1: 50.0, 2: 50.0}), t, busy={0, 1}) == []
    assert c.rates == dict.fromkeys(BROKERS, 40_000)
    raised = c.step(sample(6.3, {0: 50.0, 1: 50.0, 2: 50.0}), 6.3, busy={0, 1, 2})
    assert sorted(d.broker for d in raised) == [0, 1]  # 2 was loaded only now
    assert c.step(sample(11.0, {0: 50.0, 1: 50.0, 2: 50.0}), 11.0, busy={0, 1, 2}) == []
    later = c.step(sample(11.4, {0: 50.0, 1: 50.0, 2: 50.0}), 11.4, busy={0, 1, 2})
    assert {(d.broker, d.action) for d in later} == {(b, "increase") for b in BROKERS}


def test_a_raise_needs_the_objective_held_for_raise_persist_s():
    """bench-pacing run 16: the probe's windows at the start rate read a p99 of 83-144 ms
    (their 95% lower bounds 41-69 ms: not over an objective of 50 ms for a decrease), then
    one window read 7.5 ms, and every broker was doubled on it; the load's p99 reached 3.3 s.
    A raise now needs every fresh sample within the objective for raise_persist_s (6 s); a
    point p99 over the objective restarts the count (a degraded sample too), and so does the
    raise itself. (The readings sit at the limit, the aim off: with room, a raise needs
    less, below.)"""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), [0], start=40_000, aim=None)
    assert c.raise_persist_s == 6.0

    def at(t, p99, low=None, degraded=None):
        h = BrokerHealth(0, produce_p99_ms=p99, produce_p99_low_ms=low)
        return c.step(HealthSample(ts=t, source="test", brokers={0: h}, degraded=degraded), t)

    assert at(0.0, 50.0) == []  # loaded from now
    for t in (5.0, 6.0, 8.0, 10.9):
        assert at(t, 50.0) == []  # fresh from 5.0: held 5.9 s, not yet
    assert at(11.0, 135.0, low=41.0) == []  # over by its p99, not by its bound: no decrease
    assert c.rates[0] == 40_000
    assert at(12.0, 7.5) == [] and at(17.9, 50.0) == []  # held again from 12.0: 5.9 s
    assert at(18.0, 50.0, degraded="probe: 1 of 4 partitions") == []
    assert at(20.0, 50.0) == [] and at(25.9, 50.0) == []
    (d,) = at(26.0, 50.0)
    assert (d.action, d.new_rate) == ("increase", 80_000)
    assert at(31.0, 50.0) == [] and at(36.9, 50.0) == []  # the new rate's own 6 s
    (d,) = at(37.0, 50.0)
    assert d.action == "increase"


def test_with_room_a_raise_comes_at_the_first_window_that_saw_the_load_and_goes_further():
    """A run nothing objects to paid a fixed toll against the static rate at its ceiling: a raise waited raise_persist_s after the first window
    that saw the load, doubled, and ramped over ten 1-s steps. With every p99 since the
    broker's last change at most half its limit, the first fresh window suffices, the rate
    goes up by limit / worst (at most MAX_JUMP) and the ramp takes that share of its steps; a
    reading over the objective since the last change (run 16: 83-144 ms, then one window of
    7.5 ms) keeps the whole persistence and the doubling."""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), [0, 1], start=10_000)

    def at(t, p0, p1=None):
        hs = {0: BrokerHealth(0, produce_p99_ms=p0), 1: BrokerHealth(1, produce_p99_ms=p1)}
        return c.step(HealthSample(ts=t, source="test", brokers=hs), t)

    assert at(0.0, 15.0, 120.0) == []  # loaded from now; broker 1 over (not for persist_s)
    assert at(4.9, 12.5, 7.5) == []  # not fresh yet (settle_s after the load)
    (d,) = at(5.0, 12.5, 7.5)  # broker 0: worst 15 ms of 50 -> x3.33, in 3 steps
    assert (d.broker, d.old_rate, d.new_rate) == (0, 10_000, 33_333)
    assert c.ramp_steps[0] == 3 and "x3.33" in d.reason and "worst p99 15.0 ms" in d.reason
    assert at(9.9, 5.0, 7.5) == []  # broker 0 settles; broker 1 held from 5.0: 4.9 s of 6
    (d0,) = at(10.0, 5.0, 7.5)  # broker 0: worst 5 ms -> at most MAX_JUMP
    assert (d0.broker, d0.new_rate) == (0, min(CEILING, int(33_333 * MAX_JUMP)))
    assert c.ramp_steps[0] == 2  # the fewest steps a raise takes
    (d1,) = at(11.0, 5.0, 7.5)  # broker 1: the whole persistence, doubled
    assert (d1.broker, d1.new_rate) == (1, 20_000) and c.ramp_steps[1] == RAMP_STEPS


def test_without_room_a_raise_aims_below_the_limit_its_readings_foretell():
    """bench_pace_ladder, tight (p99 10 ms + 1.5 ms per MB/s, objective 50 ms): a broker that
    read 35 ms was doubled by slow start, which latency linear in the rate reads at 60 ms and
    more, and Kafka's quota kept that breach's loud second in its 11-s rhythm at every lower
    rate. With its readings over half the limit, a raise goes no further than AIM of the limit
    by their worst (20,000 x 0.9 x 50 / 35); from AIM of the limit up, none at all. A reading
    over the objective before them (a burst that did not last) does not bar it."""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), [0, 1], start=20_000)
    assert c.aim == AIM == 0.9

    def at(t, p0, p1):
        hs = {0: BrokerHealth(0, produce_p99_ms=p0), 1: BrokerHealth(1, produce_p99_ms=p1)}
        return c.step(HealthSample(ts=t, source="test", brokers=hs), t)

    assert at(0.0, 120.0, 46.0) == []  # loaded from now; broker 0 over, not for persist_s
    assert at(5.0, 35.0, 46.0) == []  # fresh: held from here
    assert at(10.9, 35.0, 46.0) == []  # broker 0: the whole persistence (120 ms since the
    (d,) = at(11.0, 35.0, 46.0)  # last change), but the aim from the readings held since 5.0
    assert (d.broker, d.new_rate) == (0, int(20_000 * AIM * 50.0 / 35.0))
    assert "slow start: x1.29" in d.reason
    for t in (15.0, 20.0, 30.0):  # broker 1 at 0.92 of the limit: past its aim already
        assert not [d for d in at(t, 36.0, 46.0) if d.broker == 1]
    assert c.rates[1] == 20_000
    with pytest.raises(UsageError, match="aim"):
        Controller(Objective(50.0), Bounds(FLOOR, CEILING), [0], aim=1.5)


def test_an_unmeasured_sample_restarts_the_count_a_raise_needs():
    """A raise needs the objective held at every fresh sample for persist_s; a sample in
    which the broker was not measured (no canary message delivered or pending in the window:
    the probe reading nothing of it) held nothing. Before, the count ran on across it: within
    at 5 s, unmeasured from 6 to 10 s, within at 11 s, and the rate was doubled at 11 s on
    two readings 6 s apart. (The readings sit at the limit: the aim off.)"""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), [0], start=40_000, aim=None)

    def at(t, p99):
        h = BrokerHealth(0, produce_p99_ms=p99)
        return c.step(HealthSample(ts=t, source="test", brokers={0: h}), t)

    assert at(0.0, 50.0) == [] and at(5.0, 50.0) == []  # loaded from 0, fresh from 5
    for t in (6.0, 8.0, 10.0):
        assert at(t, None) == []
    assert at(11.0, 50.0) == [] and at(16.9, 50.0) == []  # held from 11.0: 5.9 s
    assert c.rates[0] == 40_000
    (d,) = at(17.0, 50.0)
    assert (d.action, d.new_rate) == ("increase", 80_000)


def test_a_burst_shorter_than_persist_s_slows_nobody_a_lasting_one_does():
    """bench-pacing (idle sandbox): the moves' fetchers starting and the canary topic being
    created made every broker's probe p99 185-277 ms 1.2 s into the run, and every broker was
    halved; the load's latency was back to its baseline within 3 s. A run over the objective
    shorter than persist_s changes nothing; one that lasts is acted on, and names how long it
    lasted."""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, start=40_000)
    assert c.persist_s == 11.0
    for t, p99 in ((1.2, 185.0), (2.0, 150.0), (4.0, 120.0), (6.1, 30.0)):
        assert not [d for d in c.step(sample(t, {0: p99}), t) if d.action == "decrease"]
    assert c.rates[0] >= 40_000
    for t in (10.0, 12.0, 15.9, 20.9):  # over again from 10 s: held 10.9 s, not yet
        assert not [d for d in c.step(sample(t, {0: 90.0}), t) if d.action == "decrease"]
    (d,) = c.step(sample(21.0, {0: 90.0}), 21.0)
    assert (d.action, d.new_rate) == ("decrease", c.rates[0])
    assert d.reason.endswith("over the objective 50.0 ms for 11 s")


def test_a_loud_phase_of_the_quotas_rhythm_slows_nobody():
    """bench-pacing run 20: Kafka's replication quota (11 one-second windows) lets the
    fetchers copy at full speed and then not at all, and the load's latency is loud and quiet
    in that rhythm at every throttle (static 32 MiB/s too). The probe's 5-s windows read a
    loud phase of 2-7 s as over for 7-12 s; with 6 s to wait, the first adaptive row halved
    every broker 8 s in and its source again at 36 s, and took 67.6 s where static 128 took
    34.8 s. Over for 10 s then within, over again for 10 s: no decrease; over for a whole
    cycle (11 s): one."""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), [0], start=40_000)

    def over(t0, t1):
        out = []
        t = t0
        while t <= t1:
            out += c.step(sample(t, {0: 120.0}), t)
            t += 1.0
        return out

    assert over(1.0, 11.0) == []  # 10 s over
    assert c.step(sample(12.0, {0: 20.0}), 12.0) == []  # a quiet phase's window
    assert over(13.0, 23.0) == []  # 10 s over again
    assert c.step(sample(24.0, {0: 20.0}), 24.0) == []
    assert c.rates[0] == 40_000
    (d,) = over(25.0, 37.0)  # over for 11 s at 36
    assert (d.action, d.new_rate, d.ts) == ("decrease", 20_000, 36.0)


@settings(max_examples=150, deadline=None)
@given(steps, st.integers(1, 12), st.lists(st.sets(st.sampled_from(BROKERS)), min_size=60))
def test_the_caps_promises_hold_over_any_health_history(history, cap_max, bounds):
    """With caps on moves: each starts at one and stays within [1, cap_max]; a cap rises only
    in a raise and only where the bytes showed the moves through its broker copy at their rate
    (``bound``): in slow start by at most ``MAX_JUMP`` and only on readings under ``AIM`` of
    the limit, after a first decrease never past ``AIM`` of the limit by the readings it rests
    on by more than half a move; a decrease cuts the rate or, at the floor, the cap."""
    c = Controller(Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, PLAN, cap_max=cap_max)
    assert set(c.caps.values()) == {cap_start(cap_max)} == {1}
    now = 1000.0
    for (dt, age, p99s, degraded, under, missing, busy), bound in zip(
        history, bounds, strict=False
    ):
        now += dt
        s = None if missing else sample(now - age, p99s, "sick" if degraded else None, under)
        before, held_before = dict(c.caps), dict(c.held_worst)
        decreased = set(c.last_decrease)
        for d in c.step(s, now, busy, bound):
            assert all(1 <= v <= cap_max for v in c.caps.values())
            if d.broker is None:
                continue
            assert (d.old_cap, d.new_cap) == (before[d.broker], c.caps[d.broker])
            if d.action == "increase":
                assert s is not None
                near = max(held_before.get(d.broker, 0.0), s.brokers[d.broker].produce_p99_ms)
                if d.new_cap > d.old_cap:
                    assert d.broker in bound
                if d.new_cap > d.old_cap and d.broker not in decreased:
                    assert d.new_cap <= MAX_JUMP * d.old_cap and near / 50.0 < AIM
                elif d.new_cap > d.old_cap:
                    assert d.new_cap <= int(d.old_cap * MAX_JUMP)
                    if near / 50.0 > ROOM:
                        assert d.new_cap <= d.old_cap * AIM / (near / 50.0) + 0.5
            else:
                assert d.action == "decrease" and d.new_cap <= d.old_cap
                if d.new_cap < d.old_cap:
                    assert d.old_rate == d.new_rate == FLOOR
                else:
                    assert d.new_rate < d.old_rate


def test_caps_start_at_one_and_rise_only_where_the_rate_binds():
    """--max-moves-per-broker with --pace adaptive: the maximum of each broker's cap (issue
    22: "the caps as maxima"). Each starts at one move (a run without caps' first seconds); a
    raise lifts a broker's cap with its rate only where its moves copied at their rate (the
    bytes, ``bound``): by the room in slow start (x4 at a fifth of the limit), doubled near it
    while under the aim. A broker whose moves moved short of their rates (the disks bound
    them) keeps its cap while its rate rises; one the moves only remove (not loaded) keeps its
    rate, its cap raised where its moves copy at another end's rate. A decrease cuts the rate
    first, the cap once the rate is at the floor; the operator's new maximum brings caps
    down."""
    assert [cap_start(m) for m in range(1, 9)] == [1] * 8
    c = Controller(
        Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, start=CEILING // 4, persist_s=0,
        cap_max=8,
    )  # fmt: skip
    assert c.caps == {0: 1, 1: 1, 2: 1}
    load = {0: 10.0, 1: 10.0, 2: 30.0}
    assert not c.step(sample(10.0, load), 10.0, busy={0, 1, 2})  # no bytes read yet
    ups = {d.broker: d for d in c.step(sample(16.0, load), 16.0, busy={0, 1, 2}, bound={0, 2})}
    # broker 0 at its rate with room (10 of 50 ms): the rate x4 (the ceiling), the cap too
    assert (ups[0].new_rate, ups[0].old_cap, ups[0].new_cap) == (CEILING, 1, 4)
    assert "its moves at once 1 -> 4" in ups[0].reason
    # broker 1 as healthy but its moves short of their rate: the rate rises, the cap holds
    assert (ups[1].new_rate, ups[1].old_cap, ups[1].new_cap) == (CEILING, 1, 1)
    assert "moves at once" not in ups[1].reason
    # broker 2 at 30 of 50 ms (over the room, under the aim): the cap doubled
    assert (ups[2].old_cap, ups[2].new_cap) == (1, 2)
    (d,) = c.step(sample(22.0, {0: 90.0}), 22.0, busy={0}, bound={0})  # over: the rate first
    assert (d.action, d.new_rate, d.old_cap, d.new_cap) == ("decrease", CEILING // 2, 4, 4)
    assert "moves at once" not in d.reason
    c.rates[0] = FLOOR
    (d,) = c.step(sample(28.0, {0: 90.0}), 28.0, busy={0})  # at the floor: the moves at once
    assert (d.old_rate, d.new_rate, d.old_cap, d.new_cap) == (FLOOR, FLOOR, 4, 2)
    assert "its moves at once 4 -> 2, its rate at the floor" in d.reason
    line = pace_line({"event": "pace_decision", **d.to_event()})
    assert f"pace broker 0: {FLOOR} B/s kept, cap 4 -> 2 moves (decrease)" in line
    # broker 1 no longer loaded (its moves only remove it): where they copy at another end's
    # rate its cap rises (its rate kept: its reading says nothing of the run's load)
    (d,) = c.step(sample(34.0, {1: 10.0}), 34.0, busy={0}, bound={1})
    assert (d.broker, d.old_rate, d.new_rate, d.old_cap, d.new_cap) == (1, CEILING, CEILING, 1, 4)
    assert not c.step(sample(40.0, {1: 10.0}), 40.0, busy={0}, bound=())  # no evidence: holds
    c.set_cap_max(3)  # the operator's new maximum brings caps down
    assert c.caps == {0: 2, 1: 3, 2: 2}
    c.set_cap_max(None)
    assert c.caps == {}


def test_a_cap_doubles_on_the_bytes_before_a_window_that_saw_the_load():
    """Before a window that saw the run's load (settle_s after it reached the broker), a
    loaded broker whose moves copy at their rate (``bound``) and that reads within the
    objective has its cap doubled, its rate kept: the moves it adds take no more than the
    rates written, which bind the copy. No room is claimed on such a reading (x2, not by the
    room: 10 of 50 ms would be x4), none above the aim, none over the objective, none without
    the bytes' evidence, and once: the next rise waits for a fresh window after it. The cap
    that waited for that window held one move in the cluster for its first 6 s
    (bench_pace_ladder: 1.50x on the 15-s rung with headroom)."""
    c = Controller(
        Objective(50.0), Bounds(FLOOR, CEILING), (0, 1, 2, 3), start=CEILING // 4,
        persist_s=0, cap_max=8,
    )  # fmt: skip
    load = {0: 10.0, 1: 46.0, 2: 60.0, 3: 10.0}  # 1: over the aim (0.9 x 50); 2: over
    ups = {d.broker: d for d in c.step(sample(1.0, load), 1.0, busy={0, 1, 2, 3}, bound={0, 1, 2})}
    assert {b: d.action for b, d in ups.items()} == {0: "increase", 2: "decrease"}
    d = ups[0]
    assert (d.action, d.old_rate, d.new_rate, d.old_cap, d.new_cap) == (
        "increase", CEILING // 4, CEILING // 4, 1, 2,
    )  # fmt: skip
    assert "before a window that saw their load: its moves at once 1 -> 2, its rate kept" in (
        d.reason
    )
    assert c.caps == {0: 2, 1: 1, 2: 1, 3: 1}
    # the next reading before the window: held (the rise waits for a window after it)
    assert not c.step(sample(3.0, {0: 10.0}), 3.0, busy={0, 1, 2, 3}, bound={0})
    # a degraded source never makes the pace faster, the bytes alone neither
    deg = Controller(Objective(50.0), Bounds(FLOOR, CEILING), (0,), start=CEILING // 4, cap_max=8)
    assert not deg.step(sample(1.0, {0: 10.0}, degraded="probe lost"), 1.0, busy={0}, bound={0})
    assert deg.caps == {0: 1}
    # only in slow start: a broker cut before the run's bytes reached it (over on its own)
    # waits for a window that saw them (the caps' property found it doubled after the cut)
    cut = Controller(
        Objective(50.0), Bounds(FLOOR, CEILING), (0,), start=CEILING // 4, persist_s=0,
        cap_max=8,
    )  # fmt: skip
    assert [d.action for d in cut.step(sample(1.0, {0: 60.0}), 1.0, busy=set())] == ["decrease"]
    assert not cut.step(sample(7.0, {0: 10.0}), 7.0, busy={0}, bound={0})
    assert cut.caps == {0: 1}


def test_persist_s_keeps_the_reaction_bound():
    with pytest.raises(UsageError, match="persist_s"):
        Controller(Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, settle_s=25, persist_s=6)
    assert Controller(Objective(50.0), Bounds(FLOOR, CEILING), BROKERS, settle_s=29).persist_s == 1


def test_relative_objective_waits_for_the_baseline():
    c = Controller(Objective.parse("+20ms"), Bounds(FLOOR, CEILING), (0, 1), baseline_samples=3)
    assert c.needs_baseline and c.limit_of(0) is None
    assert c.step(sample(1.0, {0: 500.0, 1: 500.0}), 1.0) == []  # no objective yet: no change
    for t, (a, b) in enumerate([(5.0, 8.0), (7.0, 9.0), (6.0, 30.0)]):
        c.observe_baseline(sample(float(t), {0: a, 1: b}))
    assert c.baseline_ready()
    d = c.fix_baseline(3.0)
    assert d.action == "baseline" and c.limit_of(0) == 26.0 and c.limit_of(1) == 29.0


@pytest.mark.parametrize(
    "text, ms, rel",
    [("50ms", 50.0, False), ("50", 50.0, False), ("0.05s", 50.0, False), ("+20ms", 20.0, True)],
)
def test_objective_parse(text, ms, rel):
    o = Objective.parse(text)
    assert (o.value_ms, o.relative) == (ms, rel)
    assert Objective.parse(str(o)) == o


@pytest.mark.parametrize("text", ["", "fast", "-5ms", "0ms", "50 km", "+"])
def test_objective_refused_by_name(text):
    with pytest.raises(UsageError, match="--slo-produce-p99"):
        Objective.parse(text)


def test_bounds_refused_by_name():
    with pytest.raises(UsageError, match="--throttle-floor"):
        Bounds(10, 5)
