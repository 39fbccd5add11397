"""One rollback. Originals from two sources that disagree stop the cancel
(naming both lists); a run SIGKILLed inside its cancel resumes as a cancel; elections owed by
moves that completed are carried out when a paused run is cancelled, and its run_finished
says "cancelled"."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from killfuzz import sim_case

from reassign_kit.cluster.simfile import load
from reassign_kit.cluster.simulate import SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.operations import cancel as cancel_mod
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.rollback import OriginalsConflict
from reassign_kit.run.run import Run

MB = 1024 * 1024
TP = TopicPartition


def _sim() -> SimCluster:
    sim = SimCluster(brokers=[0, 1, 2, 3, 4, 5], bandwidth=1 * MB)
    sim.add_topic("a", [[0, 1, 2], [1, 2, 3], [2, 3, 4]], size_bytes=8 * MB)
    return sim


def test_originals_that_disagree_stop_the_cancel_naming_both(tmp_path):
    sim = _sim()
    plan = Plan.of([Move(TP("a", 0), (3, 4, 5)), Move(TP("a", 1), (4, 5, 0))])
    journal = str(tmp_path / "run.jsonl")
    opts = ExecuteOptions(throttle=MB, wait=False)
    Run(sim, plan, opts, journal, clock=sim.now, sleep=sim.sleep).run()
    assert sim.list_reassignments(), "moves in flight to cancel"
    rollback = tmp_path / "rollback.json"  # a0's order differs from the journal's [0, 1, 2]
    rollback.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": "a", "partition": 0, "replicas": [2, 1, 0]},
                    {"topic": "a", "partition": 1, "replicas": [1, 2, 3]},
                ],
            }
        )
    )
    sent = sim.calls["alter_reassignments"]
    with pytest.raises(OriginalsConflict) as e:
        cancel_mod.cancel(sim, None, journal=journal, rollback_file=str(rollback))
    msg = str(e.value)
    assert "a-0" in msg and "[0, 1, 2]" in msg and "[2, 1, 0]" in msg and "a-1" not in msg
    assert sim.calls["alter_reassignments"] == sent, "nothing sent"
    assert set(sim.list_reassignments()) == {TP("a", 0), TP("a", 1)}


def test_a_run_killed_inside_its_cancel_resumes_as_a_cancel(tmp_path):
    """SIGTERM with --on-interrupt cancel starts the cancel; the process is SIGKILLed right
    after the Alter that cancels the moves in flight (before the Alter back). The resumed
    run is a cancel: every partition at its original, run_finished 'cancelled' — it went on
    toward the targets before."""
    case = sim_case(random.Random(3), tmp_path)
    sim = load(str(case.state))
    for sp in sim.partitions.values():  # long moves: the SIGTERM lands mid-run
        sp.size_bytes = 400 * MB
    from reassign_kit.cluster.simfile import save

    save(sim, str(case.state))
    journal = str(tmp_path / "run.jsonl")
    argv = [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", case.bootstrap]
    execute = argv + ["--execute", "--reassignment-json-file", str(case.plan_path)]
    execute += ["--journal", journal, "--throttle", str(MB), "--wait"]
    execute += ["--on-interrupt", "cancel"]
    env = {**os.environ, "RK_SIM_KILL_AT": "alter_reassignments:2"}
    p = subprocess.Popen(execute, cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if os.path.exists(journal) and any(
                e["event"] == "step_submitted" for e in read_events(journal)
            ):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the run never submitted a move")
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == -9, "SIGKILLed inside its cancel"
    ev = read_events(journal)
    assert not any(e["event"] == "run_finished" for e in ev)
    resume = argv + ["--execute", "--reassignment-json-file", str(case.plan_path)]
    resume += ["--journal", journal, "--resume"]
    r = subprocess.run(resume, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    sim = load(str(case.state))
    for tp, orig in case.originals.items():
        assert tuple(sim.partitions[tp].replicas) == orig, f"{tp} not back at {orig}"
        assert sim.partitions[tp].target is None
    last = read_events(journal)[-1]
    assert last["event"] == "run_finished" and last["state"] == "cancelled", last
    assert any(e["event"] == "cancel_started" for e in ev), "journaled before the kill"


def test_paused_then_cancelled_carries_out_owed_elections_and_says_cancelled(tmp_path):
    """Moves that complete while the run is paused queue their elections (a paused run
    sends no change); a cancel then ended the run with them never sent (a partition led by
    its second replica) and run_finished state=stopped."""
    sim = SimCluster(brokers=[0, 1, 2, 3], bandwidth=4 * MB)
    sim.add_topic("a", [[0, 1, 2], [1, 2, 3]], size_bytes=[1 * MB, 64 * MB])
    # a-0: a new first replica (3 in, 0 out: an election once complete); a-1: a long move
    plan = Plan.of([Move(TP("a", 0), (3, 1, 2)), Move(TP("a", 1), (0, 2, 3))])
    journal = str(tmp_path / "run.jsonl")
    run = Run(sim, plan, ExecuteOptions(throttle=MB, wait=True), journal, clock=sim.now,
              sleep=sim.sleep)  # fmt: skip
    seen = {"paused": False}

    def on(e):
        if e["event"] == "step_submitted" and not seen["paused"]:
            seen["paused"] = True
            run.pause()
        elif e["event"] == "election_queued":
            run.cancel()

    run.subscribe(on)
    res = run.run()
    assert seen["paused"]
    ev = read_events(journal)
    assert any(e["event"] == "election_queued" for e in ev), "a-0 completed while paused"
    assert sim.partitions[TP("a", 0)].leader == 3, "its owed election was carried out"
    assert tuple(sim.partitions[TP("a", 1)].replicas) == (1, 2, 3), "a-1 rolled back"
    assert res.state == "cancelled" and ev[-1]["state"] == "cancelled"
