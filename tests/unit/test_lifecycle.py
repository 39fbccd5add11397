"""The run's lifecycle as one transition table (run/lifecycle.py): every
transition the table refuses is refused — by the pure table (``IllegalTransition``) and by
the ``Run``'s control API (False, nothing changed, nothing journaled) — and a model-based
hypothesis test drives the control API of real runs on the simulator (a drawn control call at
each poll) against the table: each call accepted exactly when the table takes it, one
``lifecycle`` event per transition forming one path from ``created`` to the run's end."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import UsageError
from reassign_kit.model import Move, Plan
from reassign_kit.moves.journal import read_events
from reassign_kit.run import lifecycle as lc
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

CONTROLS = ("start", "pause", "resume", "stop", "cancel")
ILLEGAL = [(s, t) for s in (*lc.LIVE, *sorted(lc.ENDS)) for t in CONTROLS if (s, t) not in lc.TABLE]


@pytest.mark.parametrize(("state", "trigger"), ILLEGAL, ids=[f"{s}-{t}" for s, t in ILLEGAL])
def test_the_table_refuses(state, trigger):
    seen: list = []
    life = lc.Lifecycle(lambda *a, **k: seen.append((a, k)), state=state)
    with pytest.raises(lc.IllegalTransition):
        life.fire(trigger)
    assert life.state == state and seen == []
    assert not life.allows(trigger)


@pytest.mark.parametrize("end", sorted(lc.ENDS))
def test_an_end_is_final(end):
    life = lc.Lifecycle(state=end)
    for t in (*CONTROLS, "finish"):
        with pytest.raises(lc.IllegalTransition):
            life.fire(t, end="done")
        assert life.state == end


def test_finish_needs_an_end_and_unknown_names_are_refused():
    with pytest.raises(lc.IllegalTransition, match="ends in one of"):
        lc.next_state("running", "finish", "running")
    with pytest.raises(lc.IllegalTransition, match="unknown trigger"):
        lc.next_state("running", "explode")
    with pytest.raises(lc.IllegalTransition, match="unknown run state"):
        lc.next_state("sleeping", "start")
    assert issubclass(lc.IllegalTransition, UsageError)  # a clear message, exit 2


def test_each_legal_transition_emits_one_event():
    for (state, trigger), nxt in lc.TABLE.items():
        seen: list = []
        life = lc.Lifecycle(lambda ev, _s=seen, **f: _s.append((ev, f)), state=state)
        assert life.fire(trigger) == nxt
        assert seen == [("lifecycle", {"from": state, "to": nxt, "trigger": trigger})]
    for state in lc.LIVE:
        for end in lc.ENDS:
            assert lc.Lifecycle(state=state).fire("finish", end) == end


def test_the_panels_names():
    assert lc.phase("created") == "starting" and lc.phase("submitted") == "done"
    assert lc.phase("deadline") == "stopped" and lc.phase("paused") == "paused"


# ------------------------------------------------------------------ the Run's control API


def sim_run(tmp_path, sleep=None, **opts) -> tuple[SimCluster, Run]:
    sim = SimCluster(4, bandwidth=4 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(6)], 4 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    opts.setdefault("throttle", MB)
    opts.setdefault("wait", True)
    run = Run(
        sim,
        plan,
        ExecuteOptions(**opts),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sleep or sim.sleep,
    )
    return sim, run


def lifecycle_events(tmp_path) -> list[tuple[str, str, str]]:
    return [
        (e["from"], e["to"], e["trigger"])
        for e in read_events(tmp_path / "run.jsonl")
        if e["event"] == "lifecycle"
    ]


def test_refused_control_calls_change_nothing_and_journal_nothing(tmp_path):
    sim = None
    calls: dict[str, bool] = {}
    flags: dict[str, tuple] = {}

    def at_poll(dt):
        n = len(calls)
        if n == 0:
            calls["resume while running"] = run.resume()
            flags["resume while running"] = (run.shared.paused, run.shared.stop.is_set())
            calls["pause"] = run.pause()
            calls["pause while paused"] = run.pause()
            flags["pause while paused"] = (run.shared.paused, run.shared.stop.is_set())
        elif n == 3:
            calls["stop"] = run.stop()
            calls["pause while stopping"] = run.pause()
            calls["resume while stopping"] = run.resume()
            flags["while stopping"] = (
                run.shared.paused,
                run.shared.stop.is_set(),
                run.shared.cancel_on_stop,
            )
        sim.sleep(dt)

    sim, run = sim_run(tmp_path, sleep=lambda dt: at_poll(dt))
    res = run.run()
    assert calls == {
        "resume while running": False,
        "pause": True,
        "pause while paused": False,
        "stop": True,
        "pause while stopping": False,
        "resume while stopping": False,
    }
    assert flags["resume while running"] == (False, False)
    assert flags["pause while paused"] == (True, False)
    assert flags["while stopping"] == (True, True, False)
    assert res.state == "stopped" and run.phase == "stopped" and run.lifecycle() == "stopped"
    assert lifecycle_events(tmp_path) == [
        ("created", "running", "start"),
        ("running", "paused", "pause"),
        ("paused", "stopping", "stop"),
        ("stopping", "stopped", "finish"),
    ]
    # once ended: every control refused, nothing more journaled
    n = len(read_events(tmp_path / "run.jsonl"))
    assert [run.pause(), run.resume(), run.stop(), run.cancel()] == [False] * 4
    assert len(read_events(tmp_path / "run.jsonl")) == n and run.phase == "stopped"


def test_a_run_not_begun_is_starting_and_a_stop_before_it_begins_holds(tmp_path):
    sim, run = sim_run(tmp_path)
    assert run.phase == "created" and run.lifecycle() == "starting"
    assert run.stop() is True and run.phase == "stopping"
    res = run.run()
    assert res.state == "stopped"
    assert [t for _, _, t in lifecycle_events(tmp_path)][-2:] == ["start", "finish"]


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(st.sampled_from(["pause", "resume", "stop", "cancel", "none"]), max_size=12))
def test_the_control_api_follows_the_table(tmp_path_factory, actions):
    """One drawn control call at each poll of a real run on the simulator; a model of the
    table says which the run must accept. Afterwards: the calls' answers are the model's,
    the journal's lifecycle events are one path from created to the run's end, the end is
    what was asked (cancelled after an accepted cancel, stopped after a stop, else done),
    and a finished run left no throttle."""
    d = tmp_path_factory.mktemp("life")
    todo = list(actions)
    answers: list[tuple[str, bool, bool]] = []  # (call, accepted, the model's answer)
    model = {"state": "running"}

    def at_poll(dt):
        if todo or model["state"] == "paused":
            # once the drawn calls are out, a paused run is resumed (else it waits forever)
            call = todo.pop(0) if todo else "resume"
            if call != "none":
                expected = (model["state"], call) in lc.TABLE
                got = getattr(run, call)()
                answers.append((call, got, expected))
                if expected:
                    model["state"] = lc.TABLE[(model["state"], call)]
        sim.sleep(dt)

    sim, run = sim_run(d, sleep=at_poll)
    res = run.run()
    assert all(got == exp for _, got, exp in answers), answers
    path = lifecycle_events(d)
    assert path[0][:2] == ("created", "running") and path[-1][1] == res.state == run.phase
    assert all(a[1] == b[0] for a, b in zip(path, path[1:], strict=False)), path
    assert all(lc.next_state(f, t, to if t == "finish" else None) == to for f, to, t in path), path
    accepted = [c for c, got, _ in answers if got]
    if "cancel" in accepted:
        assert res.state == "cancelled"
    elif "stop" in accepted:
        assert res.state == "stopped"
    else:
        assert res.state == "done"
    assert res.state != "done" or sim.current_throttles().is_empty()
