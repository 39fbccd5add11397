"""A journal is validated, not parsed hopefully: a resume checks its journaled originals
against the cluster by cancel's rule (refusing the partition by name, exit 12, nothing sent),
and a line damaged in any field — a flipped byte, an edited value sealed again, a cut inside
the first line, a flipped plan digest — is exit 12 naming the file and the line before
anything is sent, through ``--resume``, ``--cancel --journal`` and ``--progress``. On the
simulator."""

from __future__ import annotations

import json

import pytest
from test_cancel_trust import A0, A1, cluster, plan, stopped_in_flight

from reassign_kit.cli import reassign as cli
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.errors import JournalError
from reassign_kit.moves.journal import read_events
from reassign_kit.moves.journal_rules import OPTIONS, STATES, seal, unseal
from reassign_kit.operations import execute as ops
from reassign_kit.run import lifecycle
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}


def events_of(path) -> list[dict]:
    return [json.loads(unseal(line)[0]) for line in open(path, encoding="utf-8")]


def rewrite(path, events: list[dict]) -> None:
    """The journal written again, every line sealed: as an editor who knows the format
    would (the fields themselves must then be what is refused)."""
    with open(path, "w", encoding="utf-8") as f:
        for e in events:
            f.write(seal(json.dumps(e, separators=(",", ":"))) + "\n")


def alters(sim) -> dict:
    return {k: v for k, v in sim.calls.items() if k.startswith("alter")}


def resume(sim, p, journal) -> Run:
    return Run(sim, p, ExecuteOptions(throttle=1 << 20, wait=True), journal, resume=True,
               clock=sim.now, sleep=sim.sleep)  # fmt: skip


def test_the_rules_name_every_option_and_state_their_writers_have():
    assert set(OPTIONS) == set(ExecuteOptions().to_json_obj())
    assert STATES == lifecycle.STATES


def test_a_resume_whose_journaled_original_was_edited_is_refused_by_partition(tmp_path):
    sim = cluster()
    journal = tmp_path / "run.jsonl"
    stopped_in_flight(sim, plan(A0, A1), journal)
    events = events_of(journal)
    for e in events:  # a-1's [1, 0] -> [1, 2]: broker 2 never held it before the run
        if e.get("topic") == "a" and e.get("partition") == 1:
            for key in ("original", "current"):
                if e.get(key) == [1, 0]:
                    e[key] = [1, 2]
    rewrite(journal, events)
    before = alters(sim)
    with pytest.raises(JournalError, match=r"a-1: recorded original \[1,2\]"):
        resume(sim, plan(A0, A1), journal).run()
    assert alters(sim) == before  # nothing sent, the throttles included
    assert set(sim.list_reassignments()) == {A0, A1}


def test_the_same_journal_unedited_resumes_to_done(tmp_path):
    sim = cluster()
    journal = tmp_path / "run.jsonl"
    stopped_in_flight(sim, plan(A0, A1), journal)
    res = resume(sim, plan(A0, A1), journal).run()
    assert res.state == "done" and sim.assignment() == {A0: (2, 3), A1: (3, 2)}


@pytest.fixture
def stopped(tmp_path, monkeypatch):
    """A run stopped with both moves in flight, an operator's rate on broker 1, the CLI
    connected to the same simulated cluster."""
    sim = cluster()
    sim.alter_broker_configs({1: dict(OPERATOR)})
    journal = tmp_path / "run.jsonl"
    stopped_in_flight(sim, plan(A0, A1), journal)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan(A0, A1).to_json())
    monkeypatch.setattr(ops, "connect", lambda *a, **k: sim)
    monkeypatch.chdir(tmp_path)
    return sim, journal, str(plan_file)


ACTIONS = {
    "resume": lambda j, p: ["--execute", "--resume", "--journal", j, "--reassignment-json-file", p],
    "cancel": lambda j, p: ["--cancel", "--journal", j],
    "progress": lambda j, p: ["--progress", "--reassignment-json-file", p,
                              "--progress-journal", j],
}  # fmt: skip


def flip_digest(events: list[dict]) -> int:
    d = events[0]["plan_digest"]
    events[0]["plan_digest"] = ("0" if d[0] != "0" else "1") + d[1:]
    return 1


def rename_option(events: list[dict]) -> int:
    opts = events[0]["options"]
    opts["throttle_"] = opts.pop("throttle")
    return 1


def bad_prior(events: list[dict]) -> int:
    i = next(n for n, e in enumerate(events) if e["event"] == "throttle_prior")
    events[i]["brokers"]["1"][LEADER_RATE] = "77777?7"
    return i + 1


def huge_rate(events: list[dict]) -> int:
    i = next(n for n, e in enumerate(events) if e["event"] == "throttle_set")
    events[i]["rate"] = 2**63
    return i + 1


def unknown_state(events: list[dict]) -> int:
    i = next(n for n, e in enumerate(events) if e["event"] == "lifecycle")
    events[i]["to"] = "runing"
    return i + 1


def bad_broker(events: list[dict]) -> int:
    i = next(n for n, e in enumerate(events) if e["event"] == "submitted")
    events[i]["target"] = [2, 2**31]
    return i + 1


EDITS = [flip_digest, rename_option, bad_prior, huge_rate, unknown_state, bad_broker]


@pytest.mark.parametrize("action", sorted(ACTIONS))
@pytest.mark.parametrize("edit", EDITS, ids=[e.__name__ for e in EDITS])
def test_an_edited_field_is_exit_12_naming_the_line(stopped, capsys, action, edit):
    sim, journal, plan_file = stopped
    events = events_of(journal)
    line = edit(events)
    rewrite(journal, events)
    before, rates = alters(sim), sim.broker_configs([1])[1]
    code = cli.main(["--bootstrap-server", "sim:9092", *ACTIONS[action](str(journal), plan_file)])
    out, err = capsys.readouterr()
    assert code == 12, (code, out[-400:], err[-400:])
    assert f"{journal}:{line}: " in err and "Traceback" not in err
    assert alters(sim) == before and sim.broker_configs([1])[1] == rates


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_flipped_byte_and_a_cut_first_line_are_exit_12(stopped, capsys, action):
    sim, journal, plan_file = stopped
    data = journal.read_bytes()
    first_nl = data.index(b"\n")
    for damaged, line in [
        (data[:40] + bytes([data[40] ^ 0x04]) + data[41:], 1),  # inside the digest's line
        (data[: first_nl + 60] + b"X" + data[first_nl + 61 :], 2),
        (data[: first_nl // 2], 1),  # cut inside the first line
    ]:
        journal.write_bytes(damaged)
        before = alters(sim)
        code = cli.main(["--bootstrap-server", "sim:9092",
                         *ACTIONS[action](str(journal), plan_file)])  # fmt: skip
        out, err = capsys.readouterr()
        assert code == 12, (line, code, out[-400:], err[-400:])
        assert f"{journal}:{line}: " in err and "Traceback" not in err
        assert alters(sim) == before


def test_read_events_refuses_a_line_of_another_run(tmp_path):
    journal = tmp_path / "run.jsonl"
    stopped_in_flight(cluster(), plan(A0), journal)
    events = events_of(journal)
    events[-1]["run_id"] = "another-run"
    rewrite(journal, events)
    with pytest.raises(JournalError, match=rf"run\.jsonl:{len(events)}: run id 'another-run'"):
        read_events(journal)


@pytest.mark.parametrize("action", ["cancel", "resume"])
def test_a_journal_cut_behind_the_cluster_is_refused_and_the_operators_rate_stays(
    stopped, capsys, action
):
    """Cut after its first intent (a restored disk): the cluster has moves in flight and
    throttles the journal has no record of; acting on it deleted the operator's rate."""
    sim, journal, plan_file = stopped
    events = events_of(journal)
    first_intent = next(n for n, e in enumerate(events) if e["event"] == "intent")
    rewrite(journal, events[: first_intent + 1])
    before = alters(sim)
    code = cli.main(["--bootstrap-server", "sim:9092", *ACTIONS[action](str(journal), plan_file)])
    out, err = capsys.readouterr()
    assert code == 12, (code, out[-400:], err[-400:])
    assert "a-1: in flight to the plan's target, no record of it sent" in err
    assert alters(sim) == before and set(sim.list_reassignments()) == {A0, A1}


def test_another_runs_journal_is_refused_by_cancel(tmp_path, monkeypatch, capsys):
    """A journal of another plan's run planted at --journal: its partition is in flight to
    a target its plan never named (this cluster's run), so it is not that run's move."""
    sim = cluster()
    stopped_in_flight(sim, plan(A0, A1), tmp_path / "ours.jsonl")
    other = cluster()
    theirs = tmp_path / "theirs.jsonl"
    from reassign_kit.model import Move, Plan

    stopped_in_flight(other, Plan.of([Move(A0, (1, 2))]), theirs)
    monkeypatch.setattr(ops, "connect", lambda *a, **k: sim)
    before = alters(sim)
    code = cli.main(["--bootstrap-server", "sim:9092", "--cancel", "--journal", str(theirs)])
    out, err = capsys.readouterr()
    assert code == 12 and "a-0: recorded original [0,1]" in err, (code, out, err)
    assert alters(sim) == before
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan(A0, A1).to_json())
    code = cli.main(["--bootstrap-server", "sim:9092", "--cancel", "--reassignment-json-file",
                     str(plan_file), "--journal", str(theirs)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 2 and "its run is of another plan" in err, (code, out, err)
    assert alters(sim) == before
