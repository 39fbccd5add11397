"""``api.start_run(..., run_id=X)``: the run's home in the state directory and its journal carry
X (the home got a new id of its own while the journal had X); a malformed id, or one that
already has a home, is refused by name before anything is sent or written."""

from __future__ import annotations

import json
import os

import pytest

from reassign_kit import api
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import UsageError
from reassign_kit.model import Move, Plan
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions


def _sim_and_plan() -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    return sim, plan


def test_an_explicit_run_id_names_the_home_and_the_journal(tmp_path):
    sim, plan = _sim_and_plan()
    started = api.start_run(
        sim, plan, ExecuteOptions(wait=True), state_dir=tmp_path / "state", run_id="nightly-42"
    )
    result = started.run.run()
    assert started.home is not None
    assert result.state == "done", result
    record = json.loads(open(os.path.join(started.home.dir, "run.json")).read())
    ids = {
        "home dir": os.path.basename(started.home.dir),
        "home record": record["run_id"],
        "run": started.run.run_id,
    }
    ids |= {f"journal line {i}": e["run_id"] for i, e in enumerate(read_events(started.journal))}
    assert set(ids.values()) == {"nightly-42"}, ids


@pytest.mark.parametrize(
    "bad", ["", "..", ".", "a/b", "../escape", "x\n", "t\u0000", "a b", "é", "x" * 129, 7]
)
def test_a_malformed_run_id_is_refused_by_name_with_nothing_written(tmp_path, bad):
    sim, plan = _sim_and_plan()
    before = dict(sim.calls)
    with pytest.raises(UsageError, match="is not a run id") as e:
        api.start_run(sim, plan, ExecuteOptions(wait=True), state_dir=tmp_path / "s", run_id=bad)
    assert repr(bad) in str(e.value)
    assert not (tmp_path / "s").exists() and dict(sim.calls) == before


def test_the_same_run_id_twice_keeps_the_first_runs_home(tmp_path):
    sim, plan = _sim_and_plan()
    first = api.start_run(sim, plan, ExecuteOptions(wait=True), state_dir=tmp_path, run_id="r1")
    record = open(os.path.join(first.home.dir, "run.json")).read()
    with pytest.raises(UsageError, match="'r1' already has a home"):
        api.start_run(sim, plan, ExecuteOptions(wait=True), state_dir=tmp_path, run_id="r1")
    assert open(os.path.join(first.home.dir, "run.json")).read() == record


def test_a_resume_under_another_id_is_refused_by_name(tmp_path):
    """A resume goes on under its journal's id: another one given is refused, not ignored."""
    sim, plan = _sim_and_plan()
    first = api.start_run(sim, plan, ExecuteOptions(wait=True), state_dir=tmp_path, run_id="r1")
    first.run.run()
    journal = open(first.journal).read()
    with pytest.raises(
        UsageError, match=r"run id 'r2' is not the id of the run journaled at .*'r1'"
    ):
        api.start_run(sim, plan, None, journal=first.journal, resume=True, run_id="r2")
    assert open(first.journal).read() == journal
