"""Leadership that takes effect: preferred leader elections (KIP-460) once a move
that changed a partition's first replica completes — paced (a cap per poll), journaled,
replayed after a crash, checked afterwards — on by default in paced runs
(``elect_leaders=False`` / ``--no-elect-leaders`` opts out) and opt-in for the drop-in's
single request (``--elect-leaders``: at once for replica-order-only moves, at ``--verify``
for the others). All on the simulator, whose leaders behave as Kafka's: a completed move keeps
its leader while the leader stays in the replica set."""

from __future__ import annotations

import pytest
from killfuzz import cli, killed, path_of, sim_file

from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cluster.simfile import load
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import KafkaOperationError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.operations import execute as ops
from reassign_kit.operations import verify as verify_mod
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

N = 8


def cluster() -> SimCluster:
    """8 partitions of RF 2 on 4 brokers, each led by its first replica p % 4."""
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(N)], 1 * MB)
    return sim


def leaders(sim: SimCluster) -> dict[TopicPartition, int | None]:
    return {tp: sp.leader for tp, sp in sim.partitions.items()}


def preferred(sim: SimCluster) -> dict[TopicPartition, int]:
    return {tp: sp.replicas[0] for tp, sp in sim.partitions.items()}


def copying_plan(sim: SimCluster) -> Plan:
    """(p, p+1) -> (p+2, p): one replica copied, the leader p stays in the set (so Kafka keeps
    it leading) while the preferred leader becomes p+2."""
    return Plan.of(
        Move(tp, ((sp.replicas[0] + 2) % 4, sp.replicas[0])) for tp, sp in sim.partitions.items()
    )


def reorder_plan(sim: SimCluster) -> Plan:
    """Replica order only (a demotion): (p, p+1) -> (p+1, p). Nothing to copy."""
    return Plan.of(Move(tp, tuple(reversed(sp.replicas))) for tp, sp in sim.partitions.items())


def run(sim: SimCluster, plan: Plan, journal, **opts) -> Run:
    return Run(sim, plan, ExecuteOptions(**opts), journal, clock=sim.now, sleep=sim.sleep)


def events(path, *kinds: str) -> list[dict]:
    return [e for e in read_events(path) if e["event"] in kinds]


def record_elections(sim: SimCluster) -> list[list[TopicPartition]]:
    """Every election request's partitions, in order."""
    real = sim.elect_preferred_leaders
    calls: list[list[TopicPartition]] = []

    def elect(tps):
        tps = list(tps)
        calls.append(tps)
        return real(tps)

    sim.elect_preferred_leaders = elect
    return calls


# ------------------------------------------------------------------------ paced runs


def test_a_paced_run_elects_each_moved_partitions_preferred_leader_after_it_completes(tmp_path):
    sim = cluster()
    plan = copying_plan(sim)
    before = leaders(sim)
    journal = tmp_path / "run.jsonl"
    res = run(sim, plan, journal, throttle=MB, wait=True).run()

    assert res.state == "done"
    assert all(before[m.tp] != m.replicas[0] for m in plan)  # the move alone moves no leader
    assert leaders(sim) == {m.tp: m.replicas[0] for m in plan}
    assert res.elections == {"elected": N, "not_needed": 0, "failed": 0, "pending": 0}
    assert res.leaders_checked == N and res.leaders_not_preferred == {}
    # each election comes after its move's completion, queued then elected, in the journal
    evs = read_events(journal)
    pos = {(e["event"], e.get("topic"), e.get("partition")): i for i, e in enumerate(evs)}
    for m in plan:
        done = pos[("completed", m.topic, m.partition)]
        queued = pos[("election_queued", m.topic, m.partition)]
        elected = pos[("leader_elected", m.topic, m.partition)]
        assert done < queued < elected
    el = {(e["topic"], e["partition"]): e for e in events(journal, "leader_elected")}
    for m in plan:
        e = el[(m.topic, m.partition)]
        assert (e["result"], e["leader"], e["previous"]) == ("elected", m.replicas[0], before[m.tp])
    [check] = events(journal, "leaders_checked")
    assert (check["checked"], check["preferred"], check["not_preferred"]) == (N, N, 0)


def test_elections_are_capped_per_poll_and_a_leaders_only_plan_just_elects(tmp_path):
    sim = cluster()
    plan = reorder_plan(sim)
    calls = record_elections(sim)
    res = run(sim, plan, tmp_path / "run.jsonl", max_elections_per_poll=3).run()

    # no --wait: the reorders complete at once, and the run ends once they are elected
    assert res.state == "done"
    assert [len(c) for c in calls] == [3, 3, 2]
    assert sorted(tp for c in calls for tp in c) == sorted(m.tp for m in plan)
    assert leaders(sim) == preferred(sim) == {m.tp: m.replicas[0] for m in plan}
    assert sim.calls["alter_reassignments"] == 1  # one submission, nothing copied
    assert sim.current_throttles().is_empty()


def test_a_move_that_keeps_its_first_replica_is_not_elected(tmp_path):
    """(p, p+1) -> (p, p+2): the preferred leader did not change; nothing to elect."""
    sim = cluster()
    plan = Plan.of(
        Move(tp, (sp.replicas[0], (sp.replicas[0] + 2) % 4)) for tp, sp in sim.partitions.items()
    )
    calls = record_elections(sim)
    journal = tmp_path / "run.jsonl"
    res = run(sim, plan, journal, throttle=MB, wait=True).run()
    assert res.state == "done" and calls == []
    assert events(journal, "election_queued", "leader_elected") == []
    assert res.elections == {"elected": 0, "not_needed": 0, "failed": 0, "pending": 0}


def test_opt_out_elects_nothing(tmp_path):
    sim = cluster()
    plan = copying_plan(sim)
    before = leaders(sim)
    calls = record_elections(sim)
    journal = tmp_path / "run.jsonl"
    res = run(sim, plan, journal, throttle=MB, wait=True, elect_leaders=False).run()
    assert res.state == "done" and calls == []
    assert leaders(sim) == before  # leadership stays where it was, as without elections
    assert events(journal, "election_queued", "leader_elected", "leaders_checked") == []
    assert res.elections == {}


def test_a_run_killed_between_elections_resumes_them_from_the_journal(tmp_path):
    """The CLI SIGKILLed right before its second election request (its intent written ahead,
    the request not sent), then ``--resume``d with the run's own options."""
    sim = cluster()
    plan = reorder_plan(sim)
    bootstrap = sim_file(sim, tmp_path)
    plan.write(str(tmp_path / "plan.json"))
    journal = tmp_path / "run.jsonl"
    run = ["--execute", "--reassignment-json-file", str(tmp_path / "plan.json")]
    run += ["--journal", str(journal)]
    p = cli(bootstrap, [*run, "--max-elections-per-poll", "3"], tmp_path,
            kill_at="elect_preferred_leaders:2:before", fork=True)  # fmt: skip
    assert killed(p), p.stdout + p.stderr
    sim = load(path_of(bootstrap))
    assert sim.calls["elect_leaders"] == 1 and len(events(journal, "leader_elected")) == 3
    assert len(events(journal, "election_queued")) == N
    first = {TopicPartition(e["topic"], e["partition"]) for e in events(journal, "leader_elected")}
    assert sum(sim.partitions[m.tp].leader == m.replicas[0] for m in plan) == 3
    cut = len(read_events(journal))

    p = cli(bootstrap, [*run, "--resume"], tmp_path, fork=True)  # the run's own options
    assert p.returncode == 0, p.stdout + p.stderr
    sim = load(path_of(bootstrap))
    assert read_events(journal)[-1]["state"] == "done"
    assert leaders(sim) == {m.tp: m.replicas[0] for m in plan}
    # the 5 not elected before the kill, none of the 3 done again; the cap kept
    sent = [e["partitions"] for e in read_events(journal)[cut:]
            if e["event"] == "intent" and e.get("action") == "elect"]  # fmt: skip
    assert sim.calls["elect_leaders"] == 1 + len(sent)
    assert sorted(tp for s in sent for tp in s) == sorted(
        str(m.tp) for m in plan if m.tp not in first
    )
    assert all(len(s) <= 3 for s in sent)
    [check] = events(journal, "leaders_checked")
    assert check["checked"] == N and check["not_preferred"] == 0


def test_not_available_is_reported_with_why_and_not_needed_is_success(tmp_path):
    sim = cluster()
    plan = reorder_plan(sim)
    tp_out, tp_already = TopicPartition("a", 0), TopicPartition("a", 1)
    real = sim.elect_preferred_leaders

    def elect(tps):
        tps = list(tps)
        # the preferred replica of a-0 drops out of the ISR before the election: Kafka answers
        # PREFERRED_LEADER_NOT_AVAILABLE
        sp = sim.partitions[tp_out]
        sp.isr = [b for b in sp.isr if b != sp.replicas[0]]
        out = real([tp for tp in tps if tp != tp_already])
        if tp_already in tps:  # another election got there first: ELECTION_NOT_NEEDED
            sim.partitions[tp_already].leader = sim.partitions[tp_already].replicas[0]
            out[tp_already] = "ElectionNotNeeded: Leader election not needed for topic partition"
        return out

    sim.elect_preferred_leaders = elect
    journal = tmp_path / "run.jsonl"
    res = run(sim, plan, journal).run()
    assert res.state == "done"  # the moves are done; the leader is reported, not failed
    assert res.elections == {"elected": N - 2, "not_needed": 1, "failed": 1, "pending": 0}
    assert list(res.leaders_not_preferred) == [tp_out]
    assert "preferred replica 1 is not in the ISR [0]" in res.leaders_not_preferred[tp_out]
    [failed] = events(journal, "election_failed")
    assert failed["final"] and "PREFERRED_LEADER_NOT_AVAILABLE" in failed["error"]
    assert failed["why"] == "its preferred replica 1 is not in the ISR [0]"
    [nn] = [e for e in events(journal, "leader_elected") if e["partition"] == 1]
    assert nn["result"] == "not_needed"
    [check] = events(journal, "leaders_checked")
    assert check["not_preferred"] == 1 and check["not_preferred_partitions"][0]["partition"] == 0


def test_a_failed_election_request_is_retried(tmp_path):
    sim = cluster()
    plan = reorder_plan(sim)
    real = sim.elect_preferred_leaders
    failures = [KafkaOperationError("elect preferred leaders: timed out")] * 5

    def elect(tps):
        if failures:  # 4 attempts per call (retry.py), then the next poll tries again
            raise failures.pop()
        return real(tps)

    sim.elect_preferred_leaders = elect
    journal = tmp_path / "run.jsonl"
    res = run(sim, plan, journal).run()
    assert res.state == "done" and failures == []
    assert leaders(sim) == {m.tp: m.replicas[0] for m in plan}
    retries = [e for e in events(journal, "retry") if e["call"] == "elect_preferred_leaders"]
    assert len(retries) == 4  # 3 in the first poll, then 1 in the next
    again = events(journal, "election_failed")
    assert again and all(not e["final"] for e in again)


def test_a_paused_run_elects_nothing_until_resumed(tmp_path):
    sim = cluster()
    plan = reorder_plan(sim)
    calls = record_elections(sim)
    polls = {"n": 0}
    runs: list[Run] = []

    def sleep(dt):
        sim.sleep(dt)
        if 0 < polls["n"] <= 3:  # paused: no election sent, however many polls pass
            assert calls == []
            polls["n"] += 1
            if polls["n"] > 3:
                runs[0].resume()

    def on_event(e):
        if e["event"] == "election_queued" and polls["n"] == 0:
            polls["n"] = 1
            runs[0].pause()

    r = Run(sim, plan, ExecuteOptions(), tmp_path / "run.jsonl", clock=sim.now, sleep=sleep)
    runs.append(r)
    r.subscribe(on_event)
    res = r.run()
    assert res.state == "done" and polls["n"] > 3
    assert leaders(sim) == {m.tp: m.replicas[0] for m in plan}


# ------------------------------------------------------------------------ the drop-in


def test_legacy_execute_elects_nothing_by_default(tmp_path):
    sim = cluster()
    before = leaders(sim)
    calls = record_elections(sim)
    res = ops.execute(sim, reorder_plan(sim), rollback_path=None)
    assert res.exit_code == 0 and res.elections is None and calls == []
    assert leaders(sim) == before


def test_legacy_elect_leaders_elects_reorders_at_once_and_verify_the_copies(tmp_path):
    sim = cluster()
    reorder = Plan.of(list(reorder_plan(sim))[:4])
    copying = Plan.of(list(copying_plan(sim))[4:])
    plan = Plan.of([*reorder, *copying])
    res = ops.execute(sim, plan, throttle=MB, rollback_path=None, elect_leaders=True)
    assert res.exit_code == 0
    assert sorted(res.elections.elected) == sorted(m.tp for m in reorder)
    assert all(sim.partitions[m.tp].leader == m.replicas[0] for m in reorder)
    assert all(sim.partitions[m.tp].leader != m.replicas[0] for m in copying)
    assert any("--verify --elect-leaders" in n for n in res.lines())

    v = verify_mod.verify(sim, plan, elect_leaders=True)  # still copying: nothing to elect yet
    assert not v.complete and v.elections is not None
    assert sorted(v.elections.check.checked) == sorted(m.tp for m in reorder)
    sim.sleep(60)
    v = verify_mod.verify(sim, plan, elect_leaders=True)
    assert v.complete and sorted(v.elections.elected) == sorted(m.tp for m in copying)
    assert leaders(sim) == {m.tp: m.replicas[0] for m in plan}
    assert any("Leaders checked: 8 of 8" in line for line in v.lines())


def test_cli_flags_elect_leaders_legacy_and_no_elect_leaders_paced(tmp_path, monkeypatch, capsys):
    """The drop-in's flags through the real parser and handlers, on the simulator."""
    sim = cluster()
    monkeypatch.setattr(reassign_cli.ops, "connect", lambda *a, **k: sim)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(reorder_plan(sim).to_json())
    base = ["--bootstrap-server", "sim:1", "--reassignment-json-file", str(plan_file)]
    before = leaders(sim)

    # --no-elect-leaders alone keeps the legacy request (not paced), which elects nothing
    rc = reassign_cli.main(
        ["--execute", *base, "--no-elect-leaders", "--rollback-file", str(tmp_path / "rb.json")]
    )
    assert rc == 0 and leaders(sim) == before
    rc = reassign_cli.main(["--verify", *base, "--elect-leaders"])
    out = capsys.readouterr().out
    assert rc == 0 and "Preferred leader elections (KIP-460): 8 elected" in out
    assert leaders(sim) == preferred(sim)

    # a paced run back to the original order: elections on by default, off when asked
    back = str(tmp_path / "rb.json")  # the rollback file: the original order
    journal = tmp_path / "run.jsonl"
    paced = ["--bootstrap-server", "sim:1", "--reassignment-json-file", back]
    paced += ["--reassignment-poll-interval-ms", "20", "--rollback-file", str(tmp_path / "r2")]
    rc = reassign_cli.main(
        ["--execute", *paced, "--journal", str(journal), "--no-elect-leaders", "--wait"]
    )
    assert rc == 0 and events(journal, "leader_elected") == []
    assert leaders(sim) == {tp: (b + 1) % 4 for tp, b in before.items()}  # not moved back
    journal2 = tmp_path / "run2.jsonl"
    paced[-1] = str(tmp_path / "r3")
    rc = reassign_cli.main(["--execute", *paced, "--journal", str(journal2), "--wait"])
    out = capsys.readouterr().out
    assert rc == 0 and leaders(sim) == before
    assert "Preferred leader elections: 8 elected" in out and "8 of 8" in out


def test_options_and_api_defaults():
    from reassign_kit.run import preflight as pf

    assert ExecuteOptions().elect_leaders is True
    assert ExecuteOptions().max_elections_per_poll == 100
    # elect_leaders alone never makes a run paced; the cap is a pacing option
    assert not pf.is_paced({"elect_leaders": False}) and not pf.is_paced({"elect_leaders": True})
    assert pf.is_paced({"max_elections_per_poll": 5})
    with pytest.raises(Exception, match="--max-elections-per-poll"):
        ExecuteOptions(max_elections_per_poll=0).validate()


def test_api_execute_legacy_opt_in_and_paced_default(tmp_path):
    import reassign_kit

    sim = cluster()
    plan = reorder_plan(sim)
    res = reassign_kit.execute(sim, plan, rollback_path=None, elect_leaders=True)
    assert isinstance(res, ops.ExecuteResult) and len(res.elections.elected) == N
    assert leaders(sim) == preferred(sim)


def test_the_panel_box_drives_its_verify_and_its_runs(tmp_path):
    """The panel's "elect preferred leaders" box (default on) is the option its runs get, and
    its Verify elects through verify_mod.verify when ticked — the same library calls as the CLI."""
    from reassign_kit.ui.panel import Panel

    sim = cluster()
    plan = reorder_plan(sim)
    ops.execute(sim, plan, rollback_path=None)  # the reorders, without elections
    before = leaders(sim)
    assert Panel(plan, sim, output_dir=str(tmp_path / "a")).options()["elect_leaders"] is True
    p = Panel(plan, sim, output_dir=str(tmp_path / "b"), elect_leaders=False)
    p.buttons["verify"].click()
    assert leaders(sim) == before and "Preferred leader" not in p.message.value
    p.controls["elect_leaders"].value = True
    p.buttons["verify"].click()
    assert leaders(sim) == preferred(sim)
    assert "8 elected" in p.message.value and "8 of 8" in p.message.value

    # a run from the panel, box ticked by default: the reorders back, elected
    back = Plan.of(Move(tp, tuple(reversed(sp.replicas))) for tp, sp in sim.partitions.items())
    run_kwargs = {"clock": sim.now, "sleep": sim.sleep}
    p = Panel(back, sim, output_dir=str(tmp_path / "c"), refresh_s=0.02, run_kwargs=run_kwargs)
    p.buttons["execute"].click()
    p.wait(60)
    assert p.phase == "done", p.message.value
    assert leaders(sim) == before == preferred(sim)
    assert "preferred leaders: 8 elected" in p.message.value


def test_the_cap_changes_while_the_run_goes_on(tmp_path):
    """set_caps(max_elections_per_poll=) (the panel's live control) takes effect at the next
    poll's elections and is journaled; a bad value is refused, naming the option."""
    sim = cluster()
    plan = reorder_plan(sim)
    calls = record_elections(sim)
    journal = tmp_path / "run.jsonl"
    runs: list[Run] = []

    def on_event(e):
        if e["event"] == "leader_elected" and len(calls) == 1 and e["partition"] == 0:
            runs[0].set_caps(max_elections_per_poll=5)

    r = run(sim, plan, journal, max_elections_per_poll=1)
    runs.append(r)
    r.subscribe(on_event)
    with pytest.raises(Exception, match="--max-elections-per-poll"):
        r.set_caps(max_elections_per_poll=0)
    assert r.run().state == "done"
    assert [len(c) for c in calls] == [1, 5, 2]
    [changed] = events(journal, "caps_changed")
    assert changed["caps"]["max_elections_per_poll"] == 5


def test_a_preferred_replica_out_of_the_isr_at_submit_time_is_not_elected(tmp_path):
    # the ISR is checked when the election is sent; a replica out of it is not
    # elected (no request for it), the journal says why, tried again at later polls, then final
    sim = cluster()
    plan = reorder_plan(sim)
    tp_out = TopicPartition("a", 0)
    real_describe = sim.describe_partitions

    def lagging(tps):  # 1, its new first replica, stays out of the ISR throughout
        sp = sim.partitions[tp_out]
        sp.isr = [b for b in sp.isr if b != 1]
        return real_describe(tps)

    sim.describe_partitions = lagging
    calls = record_elections(sim)
    journal = tmp_path / "run.jsonl"
    res = run(sim, plan, journal).run()
    assert res.state == "done"
    assert all(tp_out not in c for c in calls), calls  # never sent for it
    assert sim.partitions[tp_out].leader == 0  # still led by its in-sync replica
    fails = [e for e in events(journal, "election_failed") if e["partition"] == 0]
    assert fails and fails[-1]["final"], fails
    assert all(
        "preferred replica 1 is not in the ISR [0]: not elected" in e["error"] for e in fails
    )
    assert fails[-1]["why"] == "its preferred replica 1 is not in the ISR [0]"
    assert res.elections["elected"] == N - 1 and res.elections["failed"] == 1
