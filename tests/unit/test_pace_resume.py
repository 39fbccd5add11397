"""An adaptive run interrupted and resumed goes on from the pace its journal holds:
a broker the run had backed off keeps its low rate (before: the ceiling was written to every
broker of the moves in flight as their throttles were set again, then the floor, then the
middle of the bounds), and a relative objective keeps the baseline measured before the first
move (before: measured again with the moves copying, so a broker slow by then got a looser
limit and was raised). On the simulator with a latency model (test_pace_run.SimLatency)."""

from __future__ import annotations

import pytest
from test_pace_run import SimLatency, cluster

from reassign_kit.cluster.simulate import MB
from reassign_kit.moves.journal import read_events
from reassign_kit.pacing.memory import pace_memory
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

SICK_AT, STOP_AT = 20.0, 60.0  # simulated seconds


def options() -> ExecuteOptions:
    return ExecuteOptions(
        batch_size=4,
        incremental=True,
        throttle=8 * MB,
        throttle_floor=MB // 4,
        pace="adaptive",
        slo_produce_p99="+20ms",
        wait=True,
    )


def test_a_resumed_adaptive_run_keeps_the_journaled_rates_and_baseline(tmp_path):
    sim, plan = cluster(8, 40 * MB)
    health = SimLatency(sim)
    j = str(tmp_path / "j.jsonl")
    real_sleep = sim.sleep

    def sleep(dt: float) -> None:  # broker 3 turns slow, then the operator hits Ctrl-C
        if sim.now() >= SICK_AT:
            health.extra_ms[3] = 100.0
        if sim.now() >= STOP_AT:
            raise KeyboardInterrupt
        real_sleep(dt)

    first = Run(sim, plan, options(), j, clock=sim.now, sleep=sleep, health=health)
    with pytest.raises(KeyboardInterrupt):
        first.run()
    before = read_events(j)
    mem = pace_memory(before)
    assert mem is not None and mem.baseline == {0: 10.0, 1: 10.0, 2: 10.0, 3: 10.0}
    assert mem.written[3] < mem.written[0], mem  # broker 3 was backed off
    assert sim.list_reassignments(), "moves still in flight when the run was interrupted"
    resumed_at = sim.now()

    def sleep2(dt: float) -> None:
        if sim.now() > resumed_at + 3000:
            raise AssertionError("the resumed run did not end")
        real_sleep(dt)

    again = Run(sim, plan, options(), j, resume=True, clock=sim.now, sleep=sleep2, health=health)
    assert again.run().state == "done"
    after = read_events(j)[len(before) :]
    # the baseline is the one measured before the first move, not measured again
    bases = [e for e in after if e["event"] == "pace_decision" and e["action"] == "baseline"]
    assert [e["signals"]["baseline_ms"] for e in bases] == [{str(b): 10.0 for b in range(4)}]
    assert "taken over" in bases[0]["reason"]
    # broker 3 is never written more than it had until the resumed pace raises it (it does
    # not: it is still over its limit); the others do not drop to the floor meanwhile
    first_dec = {
        b: min(
            (e["ts"] for e in after if e["event"] == "pace_decision" and e.get("broker") == b),
            default=float("inf"),
        )
        for b in range(4)
    }
    # the rates in force on the brokers from the resume on: the last write before it, then
    # each write (the simulator records a write when the configs change)
    hist = sim.throttle_history
    k = max(i for i, (ts, _) in enumerate(hist) if ts <= resumed_at + 1e-9)
    in_force = [(resumed_at, hist[k][1].broker_rates)] + [
        (ts, th.broker_rates) for ts, th in hist[k + 1 :]
    ]
    for b in range(4):
        seen = [r[b] for ts, r in in_force if b in r and ts < first_dec[b]]
        assert seen, b
        if b == 3:
            assert max(seen) <= mem.written[3], (b, seen, mem)
        else:
            assert min(seen) >= min(mem.written[b], mem.rates[b]), (b, seen, mem)
    assert not any(
        e["action"] == "increase"
        for e in after
        if e["event"] == "pace_decision" and e.get("broker") == 3
    )
    assert sim.throttles.broker_rates == {} and not any(sim.broker_cfg.values())
    started = next(e for e in after if e["event"] == "pace_started")
    assert started["resumed_from"]["written"]["3"] == mem.written[3]


def test_pace_memory_reads_the_last_state_of_each_broker():
    ev = [
        {"event": "pace_started", "start_rate": 100},
        {"event": "pace_decision", "action": "baseline", "signals": {"baseline_ms": {"1": 9.0}}},
        {"event": "pace_sample", "brokers": {"1": {"rate": 100, "written": 100}}},
        {"event": "pace_decision", "action": "increase", "broker": 1, "new_rate": 200},
        {"event": "pace_sample", "brokers": {"1": {"rate": 200, "written": 140}}},
        {"event": "pace_decision", "action": "decrease", "broker": 1, "new_rate": 70, "new_cap": 2},
    ]
    mem = pace_memory(ev)
    # a decrease is written at once; a raise ramps (the sample says how far it got)
    assert mem is not None and (mem.rates, mem.written, mem.caps) == ({1: 70}, {1: 70}, {1: 2})
    assert mem.baseline == {1: 9.0}
    again = [*ev, {"event": "pace_started", "resumed_from": mem.to_event()}]
    assert pace_memory(again) == mem  # a resumed run's start carries what it took over
    assert pace_memory([{"event": "run_started"}]) is None  # no adaptive pace journaled
