"""Demotion when leadership drifted: the snapshot records each partition's leader and
ISR, and ``plan --demote-brokers B`` also takes the partitions B leads though it is not their
first replica, with a first replica the controller can elect (not demoted, in the ISR). The
replica sets never change. Executed paced (on the simulator), B leads nothing another in-sync
replica can."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit.api import plan as make_plan
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import InvalidPlanError
from reassign_kit.model import TopicPartition
from reassign_kit.planner.report import format_report
from reassign_kit.planner.rules import plan_problems_offline, required_racks
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot, take_snapshot

B = 2  # the broker demoted


def snap(*parts: PartitionEntry) -> Snapshot:
    return Snapshot.of([BrokerEntry(b, None) for b in range(1, 5)], [TopicEntry("t", 1)], parts)


def targets(result) -> dict[TopicPartition, tuple[int, ...]]:
    return {m.tp: tuple(m.replicas) for m in result.plan}


def test_a_partition_the_demoted_broker_leads_but_is_not_first_of_is_planned():
    # t-0: B leads, 1 is first (drifted); t-1..t-3: B is in the set, not leading, not first
    s = snap(
        PartitionEntry("t", 0, (1, B, 3), 10, leader=B, isr=(1, B, 3)),
        PartitionEntry("t", 1, (1, 3, B), 10, leader=1, isr=(1, 3, B)),
        PartitionEntry("t", 2, (3, 4, B), 10, leader=3, isr=(3, 4, B)),
        PartitionEntry("t", 3, (4, 1, B), 10, leader=4, isr=(4, 1, B)),
    )
    result = make_plan(s, demote_brokers=[B], engine="local")
    t = targets(result)
    tp = TopicPartition("t", 0)
    assert tp in t  # its list may stay as it is: the execution elects its first replica
    assert t[tp][0] != B and t[tp][0] in (1, B, 3)
    for p in s.partitions:  # replica sets unchanged, nothing copied, B first nowhere
        new = t.get(p.tp, p.replicas)
        assert sorted(new) == sorted(p.replicas) and new[0] != B
    assert result.moved_replicas == 0 and result.moved_bytes == 0
    assert plan_problems_offline(result.plan, s, result.prepared.ctx) == []
    assert result.report()["leader_balance"]["demoted_still_leading"] == {B: 0}


def test_the_new_first_replica_is_one_in_the_isr():
    # B leads and is first; 1 is out of the ISR, so only 3 can be elected
    s = snap(
        PartitionEntry("t", 0, (B, 1, 3), 10, leader=B, isr=(B, 3)),
        # drifted: 1 is first but out of the ISR, B leads; 4 is the one in sync
        PartitionEntry("t", 1, (1, B, 4), 10, leader=B, isr=(B, 4)),
    )
    t = targets(make_plan(s, demote_brokers=[B], engine="local"))
    assert t[TopicPartition("t", 0)] == (3, 1, B)
    assert t[TopicPartition("t", 1)] == (4, 1, B)


def test_many_partitions_every_first_replica_is_in_sync_and_not_demoted():
    parts = []
    for p in range(60):
        reps = tuple((p + k) % 4 + 1 for k in range(3))
        out = reps[(p // 4) % 3]  # one replica out of the ISR, never the leader
        leader = B if B in reps and out != B else next(b for b in reps if b != out)
        parts.append(PartitionEntry("t", p, reps, 10, leader, tuple(b for b in reps if b != out)))
    s = snap(*parts)
    result = make_plan(s, demote_brokers=[B], engine="local", chunks=3)
    t = targets(result)
    for p in s.partitions:
        new = t.get(p.tp, p.replicas)
        assert sorted(new) == sorted(p.replicas)
        if p.leader == B:
            assert p.tp in t and new[0] != B and new[0] in p.isr, (p, new)
    assert result.report()["leader_balance"]["demoted_still_leading"] == {B: 0}


def test_demoted_still_leading_counts_partitions_with_no_other_in_sync_replica():
    s = snap(
        PartitionEntry("t", 0, (B, 1), 10, leader=B, isr=(B,)),  # 1 lags: B keeps leading
        PartitionEntry("t", 1, (1, B), 10, leader=B, isr=(B,)),  # drifted, 1 lags
        PartitionEntry("t", 2, (B, 3), 10, leader=B, isr=(B, 3)),  # 3 can take it
    )
    result = make_plan(s, demote_brokers=[B], engine="local")
    t = targets(result)
    assert t[TopicPartition("t", 0)] == (1, B)  # first when it catches up, though not now
    assert t[TopicPartition("t", 2)] == (3, B)
    assert result.report()["leader_balance"]["demoted_still_leading"] == {B: 2}
    text = format_report(result.report())
    # each partition it keeps, with the true reason
    assert "2 partition(s) still led by a demoted broker" in text
    assert "not demoted: t-0 (broker 2): broker 2 is its only in-sync replica (ISR [2])" in text
    assert "not demoted: t-1 (broker 2): broker 2 is its only in-sync replica (ISR [2])" in text
    assert "no other in-sync replica may lead" not in text


def test_a_snapshot_without_leaders_or_isr_still_loads_and_plans_as_before(tmp_path):
    old = {
        "version": 1,
        "brokers": [{"id": b, "rack": None} for b in range(1, 5)],
        "topics": [{"name": "t", "min_insync_replicas": 1}],
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [B, 1, 3], "size_bytes": 10},
            {"topic": "t", "partition": 1, "replicas": [1, B, 3], "size_bytes": 10},
        ],
    }
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    s = Snapshot.read(str(path))
    assert all(p.leader is None and p.isr is None for p in s.partitions)
    assert s.to_json_obj() == old  # written back without the fields it did not have
    t = targets(make_plan(str(path), demote_brokers=[B], engine="local"))
    assert t[TopicPartition("t", 0)][0] != B  # B first: reordered, as before
    assert all(
        new[0] != B and sorted(new) == sorted(s.by_tp()[tp].replicas) for tp, new in t.items()
    )


def test_leader_and_isr_round_trip_json_and_parquet_and_old_parquet_loads(tmp_path):
    import pyarrow.parquet as pq

    s = snap(
        PartitionEntry("t", 0, (1, B, 3), 10, leader=B, isr=(1, B)),
        PartitionEntry("t", 1, (1, 3), 10),  # not recorded
        PartitionEntry("t", 2, (3, 4), 10, leader=None, isr=()),  # offline
    )
    assert Snapshot.from_json(s.to_json()) == s
    d = str(tmp_path / "s.parquet")
    s.write(d)
    assert Snapshot.read(d) == s
    # an older Parquet snapshot: partitions.parquet without the two columns
    table = pq.read_table(f"{d}/partitions.parquet").drop(["leader", "isr"])
    assert "leader" not in table.column_names
    pq.write_table(table, f"{d}/partitions.parquet")
    old = Snapshot.read(d)
    assert [(p.leader, p.isr) for p in old.partitions] == [(None, None)] * 3


@pytest.mark.parametrize(
    "fields, message",
    [
        ({"leader": 4}, "partition t-0: 'leader' must be one of its replicas [1, 2, 3] or null"),
        ({"leader": "2"}, "partition t-0: 'leader' must be one of its replicas"),
        ({"isr": [1, 4]}, "partition t-0: 'isr' [1, 4] must be distinct replicas of [1, 2, 3]"),
        ({"isr": [1, 1]}, "partition t-0: 'isr' [1, 1] must be distinct replicas"),
        ({"isr": "1,2"}, "partition t-0: 'isr' must be a list of broker ids or null"),
        ({"isr": [1, True]}, "partition t-0: 'isr' must be a list of broker ids or null"),
    ],
)
def test_leader_and_isr_are_read_strictly(fields, message):
    obj = {
        "version": 1,
        "brokers": [{"id": b, "rack": None} for b in range(1, 5)],
        "topics": [{"name": "t", "min_insync_replicas": 1}],
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [1, 2, 3], "size_bytes": 1, **fields}
        ],
    }
    with pytest.raises(InvalidPlanError) as e:
        Snapshot.from_json_obj(obj, "s.json")
    assert message in str(e.value)


def test_drifted_leadership_is_demoted_end_to_end_on_the_simulator(tmp_path):
    """take_snapshot records the drift, the plan takes the partition with its list as it is,
    the paced run (found complete at start) elects its first replica."""
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4, (p + 2) % 4] for p in range(8)], 1 * MB)
    demoted = 1
    drifted = TopicPartition("a", 0)  # replicas [0, 1, 2]: 1 leads, as after a restart of 0
    sim.partitions[drifted].leader = demoted
    s = take_snapshot(sim)
    p0 = s.by_tp()[drifted]
    assert (p0.replicas, p0.leader, p0.isr) == ((0, 1, 2), demoted, (0, 1, 2))
    result = make_plan(s, demote_brokers=[demoted], engine="local")
    assert targets(result)[drifted][0] != demoted
    sets = {tp: sorted(sp.replicas) for tp, sp in sim.partitions.items()}
    res = Run(
        sim, result.plan, ExecuteOptions(), tmp_path / "run.jsonl", clock=sim.now, sleep=sim.sleep
    ).run()
    assert res.state == "done"
    assert {tp: sorted(sp.replicas) for tp, sp in sim.partitions.items()} == sets
    led = [tp for tp, sp in sim.partitions.items() if sp.leader == demoted]
    assert led == []
    assert sim.partitions[drifted].leader == targets(result)[drifted][0]


@st.composite
def drifted_snapshots(draw):
    """Random replica sets, racks, and recorded states: a leader among an ISR (or none)."""
    n = draw(st.integers(2, 6))
    n_racks = draw(st.sampled_from([0, 2, 3]))
    brokers = [BrokerEntry(b, None if not n_racks else "abc"[b % n_racks]) for b in range(1, n + 1)]
    ids = [b.id for b in brokers]
    parts = []
    for p in range(draw(st.integers(1, 25))):
        reps = tuple(draw(st.permutations(ids))[: draw(st.integers(1, min(3, n)))])
        if draw(st.booleans()):
            isr = tuple(b for b in reps if draw(st.booleans())) or (reps[-1],)
            parts.append(PartitionEntry("t", p, reps, 10, draw(st.sampled_from(isr)), isr))
        else:
            parts.append(PartitionEntry("t", p, reps, 10))
    demote = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n - 1, unique=True))
    return Snapshot.of(brokers, [TopicEntry("t", 1)], parts), frozenset(demote)


def rack_broken(s: Snapshot, reps) -> bool:
    racks = s.racks()
    n_racks = len(set(racks.values())) if any(r is not None for r in racks.values()) else 0
    return n_racks > 1 and len({racks[b] for b in reps}) < required_racks(len(reps), n_racks)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drifted_snapshots())
def test_demotion_with_recorded_states_holds_its_promises(case):
    s, demote = case
    result = make_plan(s, demote_brokers=demote, engine="local", chunks=3)
    assert result.moved_replicas == 0
    assert plan_problems_offline(result.plan, s, result.prepared.ctx) == []
    t = targets(result)
    still = dict.fromkeys(sorted(demote), 0)
    for p in s.partitions:
        new = t.get(p.tp, p.replicas)
        assert sorted(new) == sorted(p.replicas)
        in_sync = [b for b in p.replicas if b not in demote and b in (p.isr or ())]
        holds = any(b in demote for b in p.replicas)
        if p.isr and in_sync and holds and not rack_broken(s, p.replicas):
            assert new[0] in in_sync, (p, new)  # a demoted broker holds it: an in-sync first
        if p.leader in demote and in_sync and not rack_broken(s, p.replicas):
            assert p.tp in t, p  # led by a demoted broker: planned, drifted or not
        # who leads once executed: the first replica if the election can make it, else as is
        if p.tp not in t:
            lead = p.leader if p.leader is not None else p.replicas[0]
        else:
            lead = new[0] if p.isr is None or new[0] in p.isr or p.leader is None else p.leader
        if lead in demote:
            still[lead] += 1
    lb = result.report()["leader_balance"]
    assert lb["demoted_still_leading"] == still
