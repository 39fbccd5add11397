"""Each log dir's total and usable bytes in the snapshot: read from the cluster (the
simulator here, the sandbox in tests/integration/test_disks_sandbox.py), carried by the JSON and
Parquet forms as optional fields (older snapshots still load), read strictly."""

from __future__ import annotations

import json

import pytest

from reassign_kit.cluster.simulate import SimCluster
from reassign_kit.errors import InvalidPlanError
from reassign_kit.model import TopicPartition
from reassign_kit.snapshot.snapshot import Snapshot, take_snapshot

OLD = {
    "version": 1,
    "brokers": [{"id": 1, "rack": None}],
    "topics": [{"name": "t", "min_insync_replicas": 1}],
    "partitions": [{"topic": "t", "partition": 0, "replicas": [1], "size_bytes": 5}],
}


def sim_with_disks() -> SimCluster:
    sim = SimCluster([1, 2])
    sim.add_topic("t", [[1], [2]], size_bytes=100)
    for b in (1, 2):
        for d in sim.log_dirs_of(b):
            sim.disks.total[(b, d)] = 1000
    sim.disks.other[(2, sim.log_dirs_of(2)[1])] = 50
    return sim


def test_take_snapshot_records_every_dirs_total_and_usable_bytes():
    snap = take_snapshot(sim_with_disks())
    caps = {b.id: b.log_dir_capacity for b in snap.brokers}
    assert caps[1] == (("/sim/1/d0", 1000, 900), ("/sim/1/d1", 1000, 1000))
    assert caps[2] == (("/sim/2/d0", 1000, 900), ("/sim/2/d1", 1000, 950))
    assert snap.unreported_capacity() == []


def test_a_broker_that_reports_no_sizes_is_recorded_as_unknown_never_zero():
    sim = sim_with_disks()
    for d in sim.log_dirs_of(2):
        del sim.disks.total[(2, d)]
    snap = take_snapshot(sim)
    assert dict((b.id, b.log_dir_capacity) for b in snap.brokers)[2] == (
        ("/sim/2/d0", None, None),
        ("/sim/2/d1", None, None),
    )
    assert snap.unreported_capacity() == [2]


def test_json_and_parquet_carry_it_and_an_older_snapshot_still_loads(tmp_path):
    pytest.importorskip("pyarrow")
    snap = take_snapshot(sim_with_disks())
    again = Snapshot.from_json(snap.to_json())
    assert again == snap
    snap.write(str(tmp_path / "s.parquet"))
    assert Snapshot.read(str(tmp_path / "s.parquet")) == snap
    old = Snapshot.from_json(json.dumps(OLD))
    assert old.brokers[0].log_dir_capacity is None
    assert "log_dir_capacity" not in old.to_json()
    assert old.unreported_capacity() == [1]


@pytest.mark.parametrize(
    "bad, named",
    [
        ("x", "must be a list"),
        ([{"log_dir": "/d", "total_bytes": -1, "usable_bytes": 0}], "log dir /d: total_bytes"),
        ([{"log_dir": "/d", "total_bytes": 5, "usable_bytes": 9}], "above total_bytes"),
        ([{"log_dir": "", "total_bytes": 5, "usable_bytes": 1}], "log dir ''"),
        ([{"log_dir": "/d", "total_bytes": 5, "usable_bytes": 1, "x": 1}], "must be an object"),
        (
            [{"log_dir": "/d", "total_bytes": 5}, {"log_dir": "/d", "total_bytes": 5}],
            "listed once",
        ),
    ],
)
def test_a_bad_capacity_entry_names_the_broker_and_the_dir(bad, named):
    obj = json.loads(json.dumps(OLD))
    obj["brokers"][0]["log_dir_capacity"] = bad
    with pytest.raises(InvalidPlanError) as e:
        Snapshot.from_json(json.dumps(obj))
    text = str(e.value)
    assert "broker 1" in text and named in text


def test_usage_follows_the_replicas_the_simulator_holds():
    sim = sim_with_disks()
    tp = TopicPartition("t", 0)
    assert sim.log_dir_capacity([1])[1]["/sim/1/d0"].used_bytes == 100
    sim.alter_reassignments({tp: [2]})
    sim.sleep(60)
    assert sim.log_dir_capacity([1, 2])[2]["/sim/2/d0"].used_bytes == 200
    assert sim.log_dir_capacity([1])[1]["/sim/1/d0"].used_bytes == 0
