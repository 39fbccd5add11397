"""The real CLI, SIGKILLed as a process, on a simulated cluster kept in a state file
(``--bootstrap-server sim:PATH``). A regression test (a partition found reassigning
after a kill between the Alter and its journal line took target + original as its original,
and a cancel left it with six replicas), and a small sample of the kill-fuzz harness (the
1,000 kill points run in ``make chaos``: tests/chaos/test_kill_fuzz_table.py)."""

from __future__ import annotations

import json
import random

from killfuzz import Counts, cli, killed, run_sim, sim_case

from reassign_kit.cluster.simfile import load
from reassign_kit.model import TopicPartition
from reassign_kit.moves.journal import read_events


def test_killed_after_its_first_alter_resumed_then_cancelled_is_back_at_its_originals(tmp_path):
    case = sim_case(random.Random(7), tmp_path)
    plan = {m.tp: tuple(m.replicas) for m in case.plan}
    moving = [tp for tp, tgt in plan.items() if set(tgt) != set(case.originals[tp])]
    assert moving, "the plan replaces replicas"
    journal = str(tmp_path / "run.jsonl")
    execute = ["--execute", "--reassignment-json-file", str(case.plan_path)]
    execute += ["--journal", journal, "--throttle", str(1024 * 1024)]
    # SIGKILL right after the first Alter returned: its 'submitted' line never written
    p = cli(case.bootstrap, execute, tmp_path, kill_at="alter_reassignments:1")
    assert killed(p), p.stdout + p.stderr
    assert not any(e["event"] == "submitted" for e in read_events(journal))
    in_flight = load(str(case.state)).list_reassignments()
    assert in_flight, "the Alter reached the cluster"
    # resumed (it returns once every move is submitted: KIP-1335), then cancelled
    resume = ["--execute", "--reassignment-json-file", str(case.plan_path)]
    resume += ["--journal", journal, "--resume"]
    p = cli(case.bootstrap, resume, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert load(str(case.state)).list_reassignments(), "moves in flight to cancel"
    p = cli(case.bootstrap, ["--cancel", "--journal", journal], tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    sim = load(str(case.state))
    for tp, orig in case.originals.items():
        sp = sim.partitions[tp]
        assert sp.target is None, f"{tp} still reassigning"
        if tp in in_flight:
            assert tuple(sp.replicas) == orig, f"{tp}: {sp.replicas}, original {orig}"
        assert len(sp.replicas) <= len(orig)
    # every original the journal holds is the partition's list before the run
    for e in read_events(journal):
        if e["event"] in ("intent", "rolling_back"):
            assert (
                tuple(e["original"]) == case.originals[TopicPartition(e["topic"], e["partition"])]
            )


def test_kill_fuzz_sample(tmp_path):
    """20 kill points at least (random calls of execute, resume and cancel), each trial ended
    by a resume or a cancel let run: nothing wrong, nothing left. Every fourth trial runs
    the CLI with ``python -m`` (the others fork it: the same code, a real process killed)."""
    total = Counts()
    seed = 1000
    while total.kill_points < 20 and total.trials < 60:
        total.add(run_sim([seed], tmp_path, fork=seed % 4 != 0))
        seed += 1
    report = json.dumps({"trials": total.trials, "kill_points": total.kill_points})
    assert total.kill_points >= 20, report
    assert total.bad == 0, "\n".join(total.failures)
    assert not total.failures, "\n".join(total.failures)


def test_killed_between_an_intent_and_its_alter_the_resume_submits_it_as_new(tmp_path):
    """SIGKILL right before the first Alter is sent, its write-ahead ``intent`` on disk: the
    cluster never saw it. The resume submitted such a move as a later KIP-435 step of a move
    submitted before (``step_submitted`` with no ``submitted``): the journal then named no
    target nor size for it (``--progress`` on it, the ETA's replay, the metrics' counts read
    it as never submitted). The sandbox's SIGKILL test caught it once in CI."""
    case = sim_case(random.Random(7), tmp_path)
    plan = {m.tp: tuple(m.replicas) for m in case.plan}
    moving = {tp for tp, tgt in plan.items() if set(tgt) != set(case.originals[tp])}
    journal = str(tmp_path / "run.jsonl")
    execute = ["--execute", "--reassignment-json-file", str(case.plan_path)]
    execute += ["--journal", journal, "--throttle", str(1024 * 1024)]
    p = cli(case.bootstrap, execute, tmp_path, kill_at="alter_reassignments:1:before")
    assert killed(p), p.stdout + p.stderr
    before = read_events(journal)
    intents = {TopicPartition(e["topic"], e["partition"]) for e in before if e["event"] == "intent"}
    assert intents, "the intent was written before the Alter"
    assert not any(e["event"] == "submitted" for e in before)
    assert not load(str(case.state)).list_reassignments(), "the Alter never reached the cluster"
    resume = ["--execute", "--reassignment-json-file", str(case.plan_path)]
    resume += ["--journal", journal, "--resume"]
    p = cli(case.bootstrap, resume, tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    after = read_events(journal)[len(before) :]
    submitted = [
        TopicPartition(e["topic"], e["partition"]) for e in after if e["event"] == "submitted"
    ]
    assert sorted(submitted) == sorted(set(submitted))
    assert intents <= set(submitted), intents - set(submitted)
    for e in after:
        if e["event"] == "submitted":
            assert e.get("target") and e.get("size_bytes") is not None, e
    assert (
        set(submitted)
        | {TopicPartition(e["topic"], e["partition"]) for e in after if e["event"] == "completed"}
        >= moving
    )
