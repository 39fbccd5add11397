"""ops on an in-memory fake cluster: what is sent, in which order, what is reported, exit codes.
(The real cluster is in tests/integration/test_core.py.)"""

from __future__ import annotations

import pytest

from reassign_kit import errors
from reassign_kit.cluster.gateway import BrokerInfo
from reassign_kit.errors import InvalidPlanError
from reassign_kit.model import Move, PartitionState, Plan, TopicPartition
from reassign_kit.operations import cancel as cancel_mod
from reassign_kit.operations import execute as ops
from reassign_kit.operations import verify as ops_verify
from reassign_kit.operations import verify as verify_mod

TP = TopicPartition
A0, A1 = TP("a", 0), TP("a", 1)


@pytest.fixture(autouse=True)
def no_settle_pause(monkeypatch):
    monkeypatch.setattr(ops_verify, "SETTLE_PAUSE_S", 0.0)  # where settle reads it


class FakeCluster:
    def cluster_permissions(self):  # the cluster does not say: nothing checked
        return None

    def topic_permissions(self, topics):
        return None

    def capabilities(self):  # every feature (a Kafka 4.3 cluster)
        from reassign_kit.cluster.capabilities import ALL

        return ALL

    def __init__(self, states, in_flight=None, reject=None):
        self.states = dict(states)
        self.in_flight = dict(in_flight or {})
        self.reject = dict(reject or {})
        self.calls: list[str] = []
        self.topic_cfg: dict = {}
        self.broker_cfg: dict = {}
        self.sent: list[dict] = []

    def brokers(self):
        return [BrokerInfo(i, "h", 1) for i in (1, 2, 3, 4)]

    def topic_partition_counts(self, topics=None):
        return {"a": 2}

    def describe_partitions(self, tps):
        return {tp: self.in_flight.get(tp, self.states[tp]) for tp in tps if tp in self.states}

    def list_reassignments(self, tps=None):
        return dict(self.in_flight)

    def now(self):
        return 0.0

    def sleep(self, seconds):
        pass

    def broker_log_dirs(self, brokers=None):
        return {b: ["/d0", "/d1"] for b in (1, 2, 3, 4)}

    def describe_log_dirs(self, brokers, tps=None):
        return []

    def alter_reassignments(self, targets, allow_replication_factor_change=True):
        self.calls.append("alter")
        self.sent.append(dict(targets))
        return {tp: self.reject.get(tp) for tp in targets}

    def throttle_configs(self, topics, brokers):
        from reassign_kit.cluster.gateway import ConfigValue, ThrottleConfigs

        def dyn(cfg, src):
            return {k: ConfigValue(v, src) for k, v in cfg.items() if v}

        return ThrottleConfigs(
            {t: d for t in topics if (d := dyn(self.topic_cfg.get(t, {}), "topic"))},
            {b: d for b in brokers if (d := dyn(self.broker_cfg.get(b, {}), "dynamic broker"))},
        )

    def alter_topic_configs(self, changes):
        self.calls.append("topic_configs")
        for t, kv in changes.items():
            cur = self.topic_cfg.setdefault(t, {})
            for k, v in kv.items():
                cur.pop(k, None) if v is None else cur.__setitem__(k, v)

    def alter_broker_configs(self, changes):
        self.calls.append("broker_configs")
        for b, kv in changes.items():
            cur = self.broker_cfg.setdefault(b, {})
            for k, v in kv.items():
                cur.pop(k, None) if v is None else cur.__setitem__(k, v)


def cluster(**kw):
    return FakeCluster({A0: PartitionState(A0, (1, 2)), A1: PartitionState(A1, (2, 3))}, **kw)


def test_execute_validates_everything_before_sending(tmp_path):
    c = cluster()
    plan = Plan.of([Move(A0, (1, 9)), Move(TP("a", 7), (1,))])
    with pytest.raises(InvalidPlanError) as e:
        ops.execute(c, plan, rollback_path=str(tmp_path / "rb.json"))
    assert {p.rule for p in e.value.problems} == {"unknown-broker", "partition-out-of-range"}
    assert c.calls == [] and not (tmp_path / "rb.json").exists()


def test_execute_refuses_when_in_flight_without_additional(tmp_path):
    c = cluster(in_flight={A1: PartitionState(A1, (2, 3, 4), adding=(4,), removing=(2,))})
    with pytest.raises(errors.ReassignmentInProgressError) as e:
        ops.execute(c, Plan.of([Move(A0, (3, 4))]), rollback_path=None)
    assert e.value.exit_code == 6 and "--additional" in str(e.value) and c.calls == []


def test_execute_sets_throttles_first_and_writes_rollback(tmp_path):
    c = cluster(in_flight={A1: PartitionState(A1, (2, 3, 4), adding=(4,), removing=(2,))})
    rb = tmp_path / "rb.json"
    res = ops.execute(
        c,
        Plan.of([Move(A0, (3, 4)), Move(A1, (3, 1))]),
        additional=True,
        throttle=1000,
        rollback_path=str(rb),
    )
    assert c.calls == ["topic_configs", "broker_configs", "alter"]  # throttle before the move
    # a-1 in flight from [2,3] to [3,4]: its original replicas go in the rollback, and its
    # still-adding replica 4 stays throttled.
    assert Plan.read(str(rb)) == Plan.of([Move(A0, (1, 2)), Move(A1, (2, 3))])
    assert c.topic_cfg["a"] == {
        "leader.replication.throttled.replicas": "0:1,0:2,1:2,1:3",
        "follower.replication.throttled.replicas": "0:3,0:4,1:1,1:4",
    }
    assert res.exit_code == 0
    assert any(
        "a-1: the new target [3,1] replaces the reassignment in flight to [3,4]" in line
        for line in res.lines()
    )


def test_execute_reports_partition_rejected_and_the_others_standing():
    c = cluster(
        reject={A1: "InvalidReplicationFactor: The replication factor is changed from 2 to 3"}
    )
    res = ops.execute(c, Plan.of([Move(A0, (3, 4)), Move(A1, (1, 2, 3))]), rollback_path=None)
    text = "\n".join(res.lines())
    assert res.exit_code == 4
    assert "Successfully started partition reassignment for a-0" in text
    assert "Error reassigning 1 partition(s) (the other 1 in the same request stand):" in text
    assert "a-1: InvalidReplicationFactor" in text


def test_execute_rf_guard_client_side_compares_in_flight_target():
    c = cluster(in_flight={A1: PartitionState(A1, (2, 3, 4), adding=(4,), removing=(2,))})
    with pytest.raises(InvalidPlanError, match="replication-factor-change"):
        ops.execute(
            c,
            Plan.of([Move(A0, (1, 2, 3))]),
            additional=True,
            disallow_replication_factor_change=True,
            rollback_path=None,
        )
    ops.execute(
        c,
        Plan.of([Move(A1, (1, 4))]),
        additional=True,
        disallow_replication_factor_change=True,
        rollback_path=None,
    )
    assert c.sent == [{A1: (1, 4)}]


def test_verify_statuses_exit_codes_and_throttle_clearing():
    plan = Plan.of([Move(A0, (1, 2)), Move(A1, (3, 4))])
    c = cluster(in_flight={A1: PartitionState(A1, (3, 4, 2), adding=(3, 4), removing=(2,))})
    # A1's in-flight target is [3,4]... but listed in a different order is still "moving to it".
    c.topic_cfg = {"a": {"leader.replication.throttled.replicas": "1:2"}}
    res = verify_mod.verify(c, plan)
    assert [r["status"] for r in res.rows] == ["complete", "in progress"]
    assert res.exit_code == errors.EXIT_IN_PROGRESS and res.cleared is None
    assert c.topic_cfg["a"]  # nothing cleared while a move of the plan is in progress

    c.in_flight = {}
    c.states[A1] = PartitionState(A1, (3, 4))
    res = verify_mod.verify(c, plan)
    assert res.complete and res.exit_code == 0 and c.topic_cfg["a"] == {}

    c.states[A1] = PartitionState(A1, (4, 3))  # same set, wrong order: not complete
    res = verify_mod.verify(c, plan)
    assert res.exit_code == errors.EXIT_MISMATCH
    assert "but replica set is [4,3] rather than [3,4]" in "\n".join(res.lines())


def test_verify_refuses_a_plan_execute_would_refuse_and_changes_nothing():
    """A partition of a topic the cluster does not have: the rules --execute applies refuse
    it (exit 3, the topic named) before any throttle is touched."""
    c = cluster()
    with pytest.raises(errors.InvalidPlanError, match="'gone' does not exist") as e:
        verify_mod.verify(c, Plan.of([Move(TP("gone", 0), (1,))]))
    assert e.value.exit_code == 3
    assert not c.sent


def test_cancel_rolls_a_grown_partition_back_to_its_original_list():
    """A cancel that leaves a partition with more replicas than before
    (KIP-455's wording; Kafka 4.3 deletes them, but a cluster may still show them) is not the
    end: the original list is submitted and verified, not left to the user."""
    c = cluster(in_flight={A1: PartitionState(A1, (2, 3, 4), adding=(4,), removing=(2,))})
    c.states[A1] = PartitionState(A1, (2, 3, 4))  # 4 stays after the cancel

    def alter(targets, allow_replication_factor_change=True):
        c.sent.append(dict(targets))
        for tp, t in targets.items():
            c.in_flight.pop(tp, None)
            if t is not None:
                c.states[tp] = PartitionState(tp, tuple(t))
        return dict.fromkeys(targets)

    c.alter_reassignments = alter
    res = cancel_mod.cancel(c, Plan.of([Move(A0, (3, 4)), Move(A1, (3, 4))]))
    assert c.sent == [{A1: None}, {A1: (2, 3)}]
    # a-0 is not moving: where it started only the journal or the rollback file could say
    assert res.cancelled == [A1] and res.unknown == [A0] and res.exit_code == 0
    text = "\n".join(res.lines())
    assert "Successfully cancelled reassignment of partitions a-1" in text
    assert "a-1: back at its original replicas [2,3]" in text
    assert "left as they are" in text and "a-0" in text and "KIP-455" not in text


def test_cancel_needs_exactly_one_scope():
    with pytest.raises(Exception, match="exactly one"):
        cancel_mod.cancel(cluster(), None)
    with pytest.raises(Exception, match="exactly one"):
        cancel_mod.cancel(cluster(), topics=["a"], all=True)


def test_list_json_and_table():
    empty = ops.list_reassignments(cluster())
    assert empty.to_json() == "{}" and empty.lines() == ["No partition reassignments found."]
    c = cluster(in_flight={A1: PartitionState(A1, (4, 3, 2), adding=(4,), removing=(2,))})
    res = ops.list_reassignments(c)
    assert Plan.from_json(res.to_json()) == Plan.of([Move(A1, (4, 3))])
    assert res.lines()[1] == "a-1: replicas: 4,3,2. adding: 4. removing: 2."
    df = res.to_pandas()
    assert list(df.columns) == ["topic", "partition", "replicas", "adding", "removing", "target"]
    assert df.iloc[0]["target"] == [4, 3]
