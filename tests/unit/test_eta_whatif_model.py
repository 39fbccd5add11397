"""The what-if's model of Kafka's replication quota (measured with bench_eta on the
sandbox): the throttle is a rate averaged over 11 one-second windows, so a broker copying
without a pause holds it from the first second, while one that idled for part of the windows
(one move at a time over several brokers, KIP-435 steps) takes in at full speed until its
average is back at the throttle. Without it the what-if said 27 s for a cap-1 run that took
19 s on the sandbox. Also: the what-if of a snapshot (notebook 01) is the gateway's."""

from __future__ import annotations

import pytest

from reassign_kit import whatif
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot

TP = TopicPartition


def quota_sim() -> SimCluster:
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.1)
    sim.quota_windows = 11
    sim.alter_broker_configs({b: {LEADER_RATE: str(MB), FOLLOWER_RATE: str(MB)} for b in range(4)})
    return sim


def move(sim: SimCluster, topic: str, src: int, dst: int, size: int) -> TopicPartition:
    sim.add_topic(topic, [[src]], size)
    sim.alter_topic_configs({topic: {"follower.replication.throttled.replicas": f"0:{dst}"}})
    sim.alter_reassignments({TP(topic, 0): (dst,)})
    return TP(topic, 0)


def test_a_broker_copying_without_a_pause_holds_the_throttle_from_the_start():
    sim = quota_sim()
    tp = move(sim, "a", 0, 2, 100 * MB)
    sim.sleep(20)
    assert sim.partitions[tp].copied[2] == pytest.approx(20 * MB, rel=0.06)


def test_a_broker_idle_for_part_of_the_windows_catches_up_at_full_speed():
    sim = quota_sim()
    move(sim, "a", 0, 2, 4 * MB)
    sim.sleep(4.5)  # 4 MiB in at 1 MiB/s
    assert sim.partitions[TP("a", 0)].replicas == [2]
    sim.sleep(4)  # idle: its 11-window average drops
    tp = move(sim, "b", 0, 2, 4 * MB)
    sim.sleep(0.5)  # about 4 MiB of credit, at full speed
    assert sim.partitions[tp].replicas == [2]


def alternating(n: int, size_mb: int) -> tuple[dict, dict, Plan]:
    tps = [TP("t", p) for p in range(n)]
    plan = Plan.of(Move(tp, (3 + tp.partition % 2,)) for tp in tps)
    sim = SimCluster([1, 2, 3, 4])
    sim.add_topic("t", [[1 + p % 2] for p in range(n)], size_mb * MB)
    states = sim.describe_partitions(tps)
    return states, {tp: size_mb * MB for tp in tps}, plan


def test_one_move_at_a_time_over_two_brokers_is_faster_than_the_throttle_alone():
    """Six 4 MiB moves, one at a time, alternating brokers 3 and 4 at 1 MiB/s: the sandbox
    took 19 s (bench_eta run 3); a plain rate cap says 24 s and more."""
    states, sizes, plan = alternating(6, 4)
    opts = ExecuteOptions(batch_size=1, incremental=True, throttle=MB)
    rows = whatif.predict(plan, states, sizes, [1, 2, 3, 4], opts)
    assert rows[0]["seconds"] < 22


def test_the_what_if_of_a_snapshot_is_the_gateways():
    sim = SimCluster(4, bandwidth=10 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(6)], 20 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    snap = Snapshot.of(
        [BrokerEntry(b) for b in range(4)],
        [TopicEntry("a")],
        [PartitionEntry("a", p, ((p % 4), (p + 1) % 4), 20 * MB) for p in range(6)],
    )
    opts = ExecuteOptions(batch_size=2, incremental=True, throttle=5 * MB)
    live = whatif.what_if(sim, plan, opts)
    offline = whatif.what_if(snap, plan, opts)
    assert live.rows == offline.rows and live.bytes_total == offline.bytes_total == 120 * MB
    assert offline.predicted_seconds == offline.rows[0]["seconds"] > 0
    assert list(offline.to_pandas().columns) == ["policy", "seconds", "state"]
    assert offline.to_json_obj()["policies"][0]["policy"] == "as given"
