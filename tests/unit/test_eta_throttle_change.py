"""A paced run's throttle changed mid-run (``Run.set_throttle``: the ETA bench's
throttle-change shape, and what an operator does with the official tool's ``--execute
--additional --throttle``): the brokers of the moves in flight get the new rate at the next
poll, the journal says so, and the moves then copy at it."""

from __future__ import annotations

import pytest

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import UsageError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TP = TopicPartition


def test_set_throttle_mid_run_reaches_the_brokers_and_the_journal(tmp_path):
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.5)
    sim.add_topic("a", [[0], [1]], 40 * MB)
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (3,))])
    j = str(tmp_path / "j.jsonl")
    opts = ExecuteOptions(batch_size=2, incremental=True, throttle=MB, wait=True)
    run = Run(sim, plan, opts, j, clock=sim.now, sleep=sim.sleep)
    seen: list[int | None] = []

    def on(e):
        if e["event"] == "sample" and sim.now() >= 10 and not seen:
            seen.append(run.set_throttle(4 * MB))

    run.subscribe(on)
    res = run.run()
    assert res.state == "done"
    ev = read_events(j)
    changed = [e for e in ev if e["event"] == "throttle_changed"]
    assert [e["rate"] for e in changed] == [4 * MB]
    rates = {r for _, th in sim.throttle_history for r in th.broker_rates.values()}
    assert rates == {MB, 4 * MB}  # written to the brokers, not only remembered
    # ~10 s at 1 MiB/s then 30 MiB at 4 MiB/s: well under the 40 s it takes at 1 MiB/s
    assert sim.now() < 25


def test_set_throttle_refuses_a_run_without_one_and_bad_values(tmp_path):
    sim = SimCluster(4)
    sim.add_topic("a", [[0]], MB)
    plan = Plan.of([Move(TP("a", 0), (2,))])
    run = Run(sim, plan, ExecuteOptions(), None, clock=sim.now, sleep=sim.sleep)
    with pytest.raises(UsageError, match="no throttle"):
        run.set_throttle(MB)
    throttled = Run(sim, plan, ExecuteOptions(throttle=MB), None, clock=sim.now, sleep=sim.sleep)
    with pytest.raises(UsageError, match="positive"):
        throttled.set_throttle(0)


def test_set_throttle_during_the_loops_own_sync_is_never_lost(tmp_path):
    """The new rate arrives while the loop's throttle sync is writing the
    old one (another thread: the panel's slider, the API). The sync then cached the old
    rate's key over the reset set_rate made, and the next syncs skipped: the brokers kept
    the old rate to the end of the move."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.5)
    sim.add_topic("a", [[0], [1]], 40 * MB)
    plan = Plan.of([Move(TP("a", 0), (2,)), Move(TP("a", 1), (3,))])
    opts = ExecuteOptions(batch_size=2, incremental=True, throttle=MB, wait=True)
    real_alter = sim.alter_broker_configs
    state = {"fired": False, "samples_after": 0, "rates": None}

    class Racing:
        """The simulator, with set_throttle landing inside the first broker config write."""

        def __getattr__(self, name):
            return getattr(sim, name)

        def alter_broker_configs(self, changes):
            if not state["fired"]:
                state["fired"] = True
                run.set_throttle(4 * MB)  # as from the UI thread, mid-sync
            return real_alter(changes)

    run = Run(Racing(), plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep)

    def on(e):
        if e["event"] == "sample" and state["fired"]:
            state["samples_after"] += 1
            if state["samples_after"] <= 3:  # the next polls, the moves still copying
                state["rates"] = dict(sim.throttles.broker_rates)

    run.subscribe(on)
    run.run()
    assert state["fired"] and state["rates"], "the race happened and was observed"
    assert set(state["rates"].values()) == {4 * MB}, state["rates"]
