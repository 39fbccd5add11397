"""Partition loads in a snapshot: their JSON and Parquet forms (older snapshots still load,
bad values are named), the step from two readings to rates, and the sampler naming what it
could not read instead of guessing."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_kit.cluster.admin_offsets import GroupList, Offsets
from reassign_kit.cluster.gateway import ReplicaLogInfo
from reassign_kit.errors import InvalidPlanError
from reassign_kit.model import TopicPartition
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.load import LoadWindow, PartitionLoad, Reading, rates
from reassign_kit.snapshot.sampler import sample_load
from reassign_kit.snapshot.snapshot import Snapshot

A, B = TopicPartition("t", 0), TopicPartition("t", 1)


def _snap(load: bool = True) -> Snapshot:
    pl = PartitionLoad(1000.5, 10.0, 2001.0, 2, -3.25) if load else None
    return Snapshot.of(
        [BrokerEntry(1, "a"), BrokerEntry(2, "b")],
        [TopicEntry("t", 1)],
        [
            PartitionEntry("t", 0, (1, 2), 100, 1, (1, 2), load=pl),
            PartitionEntry("t", 1, (2, 1), 5),
        ],
        LoadWindow("sample", 1_700_000_000.25, 30.0, ("group g: gone",)) if load else None,
    )


def test_json_round_trip_keeps_loads_and_window():
    snap = _snap()
    again = Snapshot.from_json(snap.to_json())
    assert again == snap
    assert again.to_json() == snap.to_json()
    obj = json.loads(snap.to_json())
    assert obj["load"]["unread"] == ["group g: gone"]
    assert "load" not in obj["partitions"][1]


def test_snapshot_without_loads_reads_as_before():
    snap = _snap(load=False)
    assert "load" not in snap.to_json()
    assert Snapshot.from_json(snap.to_json()).partitions[0].load is None


def test_parquet_round_trip_and_older_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    for snap, name in ((_snap(), "with.parquet"), (_snap(load=False), "without.parquet")):
        path = str(tmp_path / name)
        snap.write(path)
        assert Snapshot.read(path) == snap
    # a newer sample written over a loaded one: no stale window stays
    path = str(tmp_path / "with.parquet")
    _snap(load=False).write(path)
    assert Snapshot.read(path).load is None


@pytest.mark.parametrize(
    ("load", "says"),
    [
        ({"produce_bytes_s": -1}, "'produce_bytes_s' must be a non-negative number"),
        ({"consumer_groups": 1.5}, "'consumer_groups' must be a non-negative integer"),
        ({"fetch_bytes_s": "fast"}, "'fetch_bytes_s' must be a non-negative number"),
        ({"growth_bytes_s": float("nan")}, "'growth_bytes_s' must be a number"),
        ({"cpu": 1}, "unknown load key 'cpu'"),
        ("hot", "'load' must be an object"),
    ],
)
def test_bad_load_is_named(load, says):
    obj = json.loads(_snap().to_json())
    good = obj["partitions"][0]["load"]
    obj["partitions"][0]["load"] = {**good, **load} if isinstance(load, dict) else load
    with pytest.raises(InvalidPlanError) as e:
        Snapshot.from_json_obj(obj, "s.json")
    assert "partition t-0" in str(e.value) and says in str(e.value)


def test_bad_window_is_named():
    obj = json.loads(_snap().to_json())
    obj["load"]["seconds"] = 0
    with pytest.raises(InvalidPlanError, match="load: 'seconds' must be a positive number"):
        Snapshot.from_json_obj(obj, "s.json")


def _reading(at, end, size, groups=None, start=None):
    return Reading(
        at=at,
        start=start or dict.fromkeys(end, 0),
        end=dict(end),
        size=dict(size),
        groups={g: (at, dict(c)) for g, c in (groups or {}).items()},
    )


def test_rates_from_two_readings():
    first = _reading(100.0, {A: 1000, B: 50}, {A: 100_000, B: 5000}, {"g": {A: 900}, "h": {A: 990}})
    last = _reading(
        110.0, {A: 2000, B: 50}, {A: 200_000, B: 5000}, {"g": {A: 1900}, "h": {A: 1990}}
    )
    loads, unread = rates([A, B], first, last)
    assert unread == []
    assert loads[A] == PartitionLoad(10_000.0, 100.0, 20_000.0, 2, 10_000.0)
    assert loads[B] == PartitionLoad(0.0, 0.0, 0.0, 0, 0.0)


def test_rates_name_what_they_could_not_read():
    first = _reading(0.0, {A: 10, B: 10}, {A: 10, B: 10}, {"g": {A: 5}, "gone": {A: 1}})
    last = _reading(10.0, {A: 5}, {A: 10}, {"g": {A: 5, B: 3}, "new": {A: 1}})
    loads, unread = rates([A, B], first, last)
    assert loads == {}
    text = "\n".join(unread)
    assert "group gone: not read at the window's end" in text
    assert "group new: not read at the window's start" in text
    assert "group g: no committed offset on t-1 at the window's start" in text
    assert "partition t-0: log end offset went back from 10 to 5" in text
    assert "partition t-1: no offsets or size read" in text


@given(
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.integers(1, 10**12),
    st.floats(0.5, 3600),
)
def test_rates_never_negative_and_scale_with_bytes_per_offset(leo0, grown, size, dt):
    first = _reading(0.0, {A: leo0}, {A: size})
    last = _reading(dt, {A: leo0 + grown}, {A: size})
    loads, unread = rates([A], first, last)
    assert unread == []
    got = loads[A]
    assert got.produce_msgs_s == pytest.approx(grown / dt)
    span = leo0 + grown
    assert got.produce_bytes_s == pytest.approx(grown * (size / span if span else 0) / dt)
    assert got.produce_bytes_s >= 0 and got.fetch_bytes_s == 0


class _Gateway:
    """The reads the sampler makes, one broker and one group broken."""

    def __init__(self):
        self.t = 1000.0

    def now(self):
        return self.t

    def sleep(self, s):
        self.t += s

    def cluster_permissions(self):
        return None

    def log_offsets(self, tps):
        return Offsets({A: 0, B: 0}, {A: int(self.t), B: int(self.t)}, {})

    def broker_replica_logs(self, brokers, tps):
        logs = [ReplicaLogInfo(1, tp, "/d", int(self.t) * 10, 0, False) for tp in (A, B)]
        return logs, {2: "describe log dirs: broker 2 is not available"}

    def consumer_groups(self):
        return GroupList(("good", "locked"), ())

    def group_offsets(self, group):
        if group == "locked":
            raise RuntimeError("committed offsets of group locked: GROUP_AUTHORIZATION_FAILED")
        return {A: int(self.t)}


def test_sampler_names_the_broker_and_group_it_could_not_read():
    snap = Snapshot.of(
        [BrokerEntry(1), BrokerEntry(2)],
        [TopicEntry("t")],
        [PartitionEntry("t", 0, (1, 2), 0, 1), PartitionEntry("t", 1, (2, 1), 0, 2)],
    )
    got = sample_load(_Gateway(), snap, 10.0)
    assert got.load is not None and got.load.seconds == pytest.approx(10.0)
    text = "\n".join(got.load.unread)
    assert "broker 2: describe log dirs: broker 2 is not available" in text
    assert "group locked: committed offsets of group locked: GROUP_AUTHORIZATION_FAILED" in text
    assert "partition t-1: no size read" in text  # led by broker 2: never a guess
    by = got.by_tp()
    assert by[B].load is None
    assert by[A].load == PartitionLoad(10.0, 1.0, 10.0, 1, 10.0)
