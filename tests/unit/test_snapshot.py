"""The snapshot JSON contract: strict reading (every problem, each named), canonical writing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_kit.cluster.gateway import BrokerInfo, DirCapacity, ReplicaLogInfo
from reassign_kit.errors import InvalidPlanError
from reassign_kit.model import PartitionState, TopicPartition
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot, take_snapshot

GOOD = {
    "version": 1,
    "brokers": [{"id": 2, "rack": "b"}, {"id": 1, "rack": "a"}, {"id": 3, "rack": None}],
    "topics": [{"name": "t", "min_insync_replicas": 2}],
    "partitions": [
        {"topic": "t", "partition": 1, "replicas": [2, 1], "size_bytes": 5},
        {"topic": "t", "partition": 0, "replicas": [1, 2], "size_bytes": 123},
    ],
}


def test_reads_the_contract_and_writes_it_canonically(tmp_path):
    snap = Snapshot.from_json(json.dumps(GOOD))
    assert snap.broker_ids() == [1, 2, 3]  # broker 3 has no replicas: a new, empty broker
    assert [p.partition for p in snap.partitions] == [0, 1]
    assert snap.partitions[0].replicas == (1, 2) and snap.partitions[0].size_bytes == 123
    path = tmp_path / "s.json"
    snap.write(str(path))
    again = Snapshot.read(str(path))
    assert again == snap
    assert json.loads(path.read_text()) == snap.to_json_obj()
    shuffled = dict(GOOD, brokers=list(reversed(GOOD["brokers"])))
    assert Snapshot.from_json(json.dumps(shuffled)).to_json() == snap.to_json()


def test_parquet_round_trip(tmp_path):
    snap = Snapshot.from_json(json.dumps(GOOD))
    path = str(tmp_path / "s.parquet")
    snap.write(path)
    assert Snapshot.read(path) == snap


def test_every_problem_is_reported_with_its_place():
    bad = {
        "version": 2,
        "extra": 1,
        "brokers": [{"id": 1, "rack": "a"}, {"id": 1, "rack": "b"}, {"id": -3}],
        "topics": [{"name": "t", "min_insync_replicas": 0}, {"name": "u"}],
        "partitions": [
            {"topic": "t", "partition": 0, "replicas": [1, 1], "size_bytes": 1},
            {"topic": "u", "partition": 0, "replicas": [1, 9], "size_bytes": -1},
            {"topic": "zz", "partition": 0, "replicas": [1]},
            {"topic": "u", "partition": 0, "replicas": [1]},
            {"topic": "u", "partition": -1, "replicas": [1]},
        ],
    }
    with pytest.raises(InvalidPlanError) as ei:
        Snapshot.from_json(json.dumps(bad), source="S.json")
    text = "\n".join(ei.value.problems)
    for needle in (
        "unknown top-level key 'extra'",
        "version must be 1",
        "broker 1 is listed twice",
        "brokers[2]: 'id' must be a non-negative integer",
        "topic t: 'min_insync_replicas'",
        "partition t-0: duplicate replicas",
        "partition u-0: replicas on broker(s) [9] not in 'brokers'",
        "partition u-0: 'size_bytes'",
        "partition zz-0: topic zz is not in 'topics'",
        "partition u-0 is listed twice",
        "partitions[4] (topic u): 'partition' must be a non-negative integer",
    ):
        assert needle in text, needle
    assert "S.json" in str(ei.value)


def test_not_json():
    with pytest.raises(InvalidPlanError, match="not valid JSON"):
        Snapshot.from_json("{nope")


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True),
            st.integers(0, 10**12),
        ),
        max_size=10,
    )
)
def test_round_trip_property(rows):
    brokers = [BrokerEntry(b, None if b == 4 else "r") for b in range(5)]
    parts = {}
    for p, reps, size in rows:
        parts[p] = PartitionEntry("t", p, tuple(reps), size)
    snap = Snapshot.of(brokers, [TopicEntry("t", None)], parts.values())
    assert Snapshot.from_json(snap.to_json()) == snap


class FakeGateway:
    def cluster_permissions(self):  # the cluster does not say: nothing checked
        return None

    def topic_permissions(self, topics):
        return None

    def brokers(self):
        return [BrokerInfo(1, "h", 1, "a"), BrokerInfo(2, "h", 2, "b"), BrokerInfo(3, "h", 3, None)]

    def topic_partition_counts(self, topics=None):
        return {"t": 2}

    def describe_partitions(self, tps):
        return {
            TopicPartition("t", 0): PartitionState(TopicPartition("t", 0), (1, 2), (1, 2), 2),
            TopicPartition("t", 1): PartitionState(TopicPartition("t", 1), (2, 1), (2,), None),
        }

    def min_insync_replicas(self, topics):
        return {"t": 2}

    def topic_configs(self, topics):  # effective configs, as the admin gateway returns them
        return {"t": {"min.insync.replicas": "2", "cleanup.policy": "delete"}}

    def broker_configs(self, brokers):  # a broker older than Kafka 4.3: no cordoned.log.dirs
        return {b: {"log.dirs": "/d"} for b in brokers}

    def log_dir_capacity(self, brokers):  # older than Kafka 3.3: no sizes
        return {b: {"/d": DirCapacity(None, None)} for b in brokers}

    def describe_log_dirs(self, brokers):
        t0, t1 = TopicPartition("t", 0), TopicPartition("t", 1)
        return [
            ReplicaLogInfo(1, t0, "/d", 100, 0, False),
            ReplicaLogInfo(2, t0, "/d", 90, 0, False),
            ReplicaLogInfo(2, t0, "/e", 999, 0, True),  # a future replica does not count
            ReplicaLogInfo(1, t1, "/d", 7, 0, False),
            ReplicaLogInfo(2, t1, "/d", 8, 0, False),
        ]


def test_take_snapshot_uses_the_leaders_log_size():
    snap = take_snapshot(FakeGateway())
    assert [(b.id, b.rack) for b in snap.brokers] == [(1, "a"), (2, "b"), (3, None)]
    assert snap.topics == (TopicEntry("t", 2),)
    sizes = {p.partition: p.size_bytes for p in snap.partitions}
    assert sizes == {0: 90, 1: 8}  # leader 2's log; no leader -> the largest replica's
