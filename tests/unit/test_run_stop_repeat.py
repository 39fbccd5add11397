"""A stop asked again and again (a listener that stops the run on every event it hears) is
idempotent: the run ends, its journal holds one stop transition."""

from __future__ import annotations

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

# far more events than a run of six moves journals; past it the listener lets go, so a run
# that would never end ends and the assertions below say why
EVENTS_CAP = 2000


def sim_run(tmp_path, **opts) -> tuple[SimCluster, Run]:
    sim = SimCluster(4, bandwidth=4 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(6)], 4 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    run = Run(
        sim,
        plan,
        ExecuteOptions(throttle=MB, wait=True, **opts),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    return sim, run


def stop_on_every_event(run: Run, trigger_event: str, call: str) -> dict[str, int]:
    seen = {"after": 0, "calls": 0}

    def listener(rec):
        if rec.get("event") == trigger_event:
            seen["after"] = max(seen["after"], 1)
        if seen["after"] and seen["after"] < EVENTS_CAP:
            seen["after"] += 1
            seen["calls"] += 1
            getattr(run, call)()

    run.subscribe(listener)
    return seen


def test_a_listener_stopping_the_run_on_every_event_lets_it_end(tmp_path):
    sim, run = sim_run(tmp_path)
    seen = stop_on_every_event(run, "submitted", "stop")
    res = run.run()
    events = read_events(tmp_path / "run.jsonl")
    stops = [e for e in events if e["event"] == "lifecycle" and e["trigger"] == "stop"]
    assert seen["calls"] >= 2, seen  # the listener did stop it, again and again
    assert seen["after"] < EVENTS_CAP, seen
    assert res.state == "stopped" and run.phase == "stopped"
    assert [(e["from"], e["to"]) for e in stops] == [("running", "stopping")]
    assert len(events) < EVENTS_CAP


def test_a_listener_cancelling_on_every_event_lets_the_cancel_end(tmp_path):
    sim, run = sim_run(tmp_path)
    seen = stop_on_every_event(run, "submitted", "cancel")
    res = run.run()
    events = read_events(tmp_path / "run.jsonl")
    cancels = [e for e in events if e["event"] == "lifecycle" and e["trigger"] == "cancel"]
    assert seen["calls"] >= 2, seen
    assert seen["after"] < EVENTS_CAP, seen
    assert res.state == "cancelled" and run.phase == "cancelled"
    # the first cancel, and at most the one repeat that stops waiting for the rollbacks
    assert [(e["from"], e["to"]) for e in cancels][:1] == [("running", "cancelling")]
    assert len(cancels) <= 2, cancels
    assert len(events) < EVENTS_CAP
