"""Leaders-only demotion plans: `reassign-kit plan --demote-brokers 3`."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit.api import plan as make_plan
from reassign_kit.errors import UsageError
from reassign_kit.model import Plan
from reassign_kit.planner.rules import plan_problems_offline, required_racks
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot


@st.composite
def demotions(draw):
    n = draw(st.integers(2, 6))
    n_racks = draw(st.sampled_from([0, 2, 3]))
    brokers = [BrokerEntry(b, None if not n_racks else "abc"[b % n_racks]) for b in range(1, n + 1)]
    ids = [b.id for b in brokers]
    parts = []
    for p in range(draw(st.integers(1, 25))):
        rf = draw(st.integers(1, min(3, n)))
        parts.append(PartitionEntry("t", p, tuple(draw(st.permutations(ids))[:rf]), 10))
    demote = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n - 1, unique=True))
    return Snapshot.of(brokers, [TopicEntry("t", 1)], parts), tuple(sorted(demote))


def _rack_broken(snap, reps) -> bool:
    racks = snap.racks()
    n_racks = len({r for r in racks.values()}) if any(r is not None for r in racks.values()) else 0
    if n_racks <= 1:
        return False
    return len({racks[b] for b in reps}) < required_racks(len(set(reps)), n_racks)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(demotions())
def test_demoted_brokers_lead_only_what_no_other_replica_can(case):
    snap, demote = case
    result = make_plan(snap, demote_brokers=demote, engine="local", chunks=3)
    assert result.moved_replicas == 0 and result.moved_bytes == 0  # nothing copied
    after = {p.tp: p.replicas for p in snap.partitions}
    after.update({m.tp: m.replicas for m in result.plan})
    assert plan_problems_offline(result.plan, snap, result.prepared.ctx) == []
    still = 0
    for p in snap.partitions:
        new = after[p.tp]
        assert sorted(new) == sorted(p.replicas)  # replica sets unchanged
        others = [b for b in new if b not in demote]
        if new[0] in demote:
            # only when no other replica may lead (or the partition breaks rack-awareness and
            # the plan may not touch it)
            assert not others or (_rack_broken(snap, p.replicas) and new == p.replicas)
            still += 1
        elif new != p.replicas:  # demoted brokers at the end of the lists the plan touches
            tail = new[len(others) :]
            assert set(tail) == {b for b in new if b in demote}
    lb = result.report()["leader_balance"]
    assert lb["demoted_brokers"] == list(demote)
    assert sum(lb["demoted_still_leading"].values()) == still


def test_demote_cli_moves_leadership_off_the_broker(tmp_path, capsys):
    from reassign_kit.cli import main

    brokers = [BrokerEntry(b, None) for b in range(1, 5)]
    parts = [
        PartitionEntry("t", p, ((p % 4) + 1, ((p + 1) % 4) + 1, ((p + 2) % 4) + 1), 10)
        for p in range(40)
    ]
    s, out = tmp_path / "s.json", tmp_path / "demote.json"
    Snapshot.of(brokers, [TopicEntry("t", 2)], parts).write(str(s))
    argv = ["plan", "--snapshot", str(s), "--engine", "local", "--output", str(out)]
    assert main([*argv, "--demote-brokers", "3"]) == 0
    text = capsys.readouterr().out
    assert "demoted: broker 3 leads 10 -> 0" in text
    assert "moved replicas: 0" in text
    plan = Plan.read(str(out))
    assert all(m.replicas[0] != 3 and m.replicas[-1] == 3 for m in plan if 3 in m.replicas)
    leads = [m.replicas[0] for m in plan] + [
        p.replicas[0] for p in parts if p.tp not in {m.tp for m in plan}
    ]
    assert sorted(leads.count(b) for b in (1, 2, 4)) == [13, 13, 14] and 3 not in leads
    assert main([*argv, "--demote-brokers", "3", "--remove-brokers", "1"]) == 2
    assert "leaders-only plan" in capsys.readouterr().err
    assert main([*argv, "--demote-brokers", "9"]) == 2


def test_demoting_every_broker_is_refused():
    snap = Snapshot.of(
        [BrokerEntry(1, None), BrokerEntry(2, None)],
        [TopicEntry("t", 1)],
        [PartitionEntry("t", 0, (1, 2), 1)],
    )
    with pytest.raises(UsageError, match="no broker would be left"):
        make_plan(snap, demote_brokers=[1, 2], engine="local")
