"""Cordons (KIP-1066 ``cordoned.log.dirs``, Kafka 4.3): the snapshot records them
(older snapshots and older brokers: none, no error), the planner never places a new replica on a
broker whose log dirs are all cordoned, ``--drain-cordoned`` empties such a broker, and the
validator rejects a plan that targets one, naming the partition and the broker."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit.api import plan as make_plan
from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import CapacityError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.planner.rules import RuleContext, plan_problems_offline
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot, parse_cordons, take_snapshot

DIRS = ("/d0", "/d1")


def snap(cordon: dict[int, tuple[str, ...]], racks: bool, seed: int = 0, n: int = 40) -> Snapshot:
    rng = random.Random(seed)
    brokers = [
        BrokerEntry(b, ("a", "b", "c")[b % 3] if racks else None, DIRS, cordon.get(b, ()))
        for b in range(1, 7)
    ]
    parts = []
    for p in range(n):  # skewed: brokers 1..4 hold most
        reps = rng.sample([1, 2, 3, 4, 1, 2, 3, 5, 6], 3)
        reps = list(dict.fromkeys(reps))
        while len(reps) < 3:
            reps.append(rng.choice([b for b in range(1, 7) if b not in reps]))
        parts.append(PartitionEntry("t", p, tuple(reps), 100 + p))
    return Snapshot.of(brokers, [TopicEntry("t", 2)], parts)


def test_parse_cordons_older_broker_has_none():
    assert parse_cordons({"log.dirs": "/a,/b"}) == (("/a", "/b"), None)  # Kafka < 4.3
    assert parse_cordons({"log.dirs": "/a,/b", "cordoned.log.dirs": ""}) == (("/a", "/b"), ())
    assert parse_cordons({"log.dir": "/a", "cordoned.log.dirs": "*"}) == (("/a",), ("*",))
    b = BrokerEntry(1, None, ("/a", "/b"), ("/a",))
    assert not b.cordoned  # one of two dirs: the broker still takes replicas
    assert BrokerEntry(1, None, ("/a", "/b"), ("/b", "/a")).cordoned
    assert BrokerEntry(1, None, None, ("*",)).cordoned


def test_snapshot_round_trips_cordons_and_old_snapshots_load(tmp_path):
    s = snap({5: ("*",), 6: ("/d0",)}, racks=True)
    p = tmp_path / "s.json"
    s.write(str(p))
    back = Snapshot.read(str(p))
    assert back.cordoned() == frozenset({5})
    assert {b.id: b.cordoned_log_dirs for b in back.brokers}[6] == ("/d0",)
    pq = tmp_path / "s.parquet"
    s.write(str(pq))
    assert Snapshot.read(str(pq)).cordoned() == frozenset({5})
    old = json.loads(p.read_text())
    for b in old["brokers"]:
        b.pop("log_dirs"), b.pop("cordoned_log_dirs")
    p.write_text(json.dumps(old))
    assert Snapshot.read(str(p)).cordoned() == frozenset()


def test_take_snapshot_on_a_broker_without_the_config_records_no_cordon():
    sim = SimCluster(3, bandwidth=50 * MB)  # its configs have no cordoned.log.dirs
    sim.add_topic("a", [[0, 1], [1, 2]], 1 * MB)
    s = take_snapshot(sim)
    assert all(b.cordoned_log_dirs is None for b in s.brokers)
    assert s.cordoned() == frozenset()
    sim.broker_cfg[2] = {"cordoned.log.dirs": "*"}
    assert take_snapshot(sim).cordoned() == frozenset({2})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    cordoned=st.sampled_from([5, 6, 1]),
    racks=st.booleans(),
    remove=st.sampled_from([(), (2,)]),
)
def test_property_no_new_replica_lands_on_a_cordoned_broker(seed, cordoned, racks, remove):
    s = snap({cordoned: ("*",)}, racks, seed)
    if racks and remove == (2,) and cordoned == 5:  # rack c = {2, 5}: nothing may grow there
        with pytest.raises(CapacityError, match=r"broker\(s\) \[5\] cordoned"):
            make_plan(s, remove_brokers=list(remove), engine="local")
        return
    result = make_plan(s, remove_brokers=list(remove), engine="local")
    cur = {p.tp: set(p.replicas) for p in s.partitions}
    for m in result.plan:
        assert cordoned not in set(m.replicas) - cur[m.tp], m
    ctx = RuleContext(s.racks(), frozenset(remove), cordoned=s.cordoned())
    assert plan_problems_offline(result.plan, s, ctx) == []
    # --drain-cordoned: nothing left on it
    drained = make_plan(s, remove_brokers=list(remove), drain_cordoned=True, engine="local")
    final = dict(cur)
    final.update({m.tp: set(m.replicas) for m in drained.plan})
    assert all(cordoned not in reps for reps in final.values())


def test_the_uncordoned_plan_would_use_the_broker():
    # broker 5 and 6 are nearly empty: a rebalance fills them unless they are cordoned
    s = snap({}, racks=False)
    free = make_plan(s, engine="local")
    assert any(5 in m.replicas for m in free.plan)
    s2 = snap({5: ("*",)}, racks=False)
    held = make_plan(s2, engine="local")
    cur = {p.tp: set(p.replicas) for p in s2.partitions}
    assert not any(5 in set(m.replicas) - cur[m.tp] for m in held.plan)


def test_validate_rejects_a_plan_onto_a_cordoned_broker_by_name(tmp_path, capsys):
    s = snap({5: ("*",)}, racks=False)
    sp = tmp_path / "s.json"
    s.write(str(sp))
    p0 = s.partitions[0]
    target = (*[b for b in p0.replicas[:-1]], 5) if 5 not in p0.replicas else p0.replicas
    plan = tmp_path / "p.json"
    Plan((Move(TopicPartition("t", 0), target),)).write(str(plan))
    rc = cli_main(["validate", "--snapshot", str(sp), "--reassignment-json-file", str(plan)])
    err = capsys.readouterr().err
    assert rc != 0
    assert "t-0" in err and "[cordoned-broker]" in err and "broker(s) [5]" in err, err
