"""What a cluster can do comes from what its brokers say (cluster/capabilities.py),
and --disallow-replication-factor-change on brokers without AlterPartitionReassignments v1
(every release before Kafka 4.1, found by asking real brokers) degrades to the client-side
guard with one warning, or is refused with --require-broker-rf-guard; on the simulator
modelling such a cluster. The same against real 3.9 / 4.3 brokers: tests/integration/
test_compat_39zk.py and test_compat_capabilities.py."""

from __future__ import annotations

import pytest

import reassign_kit
from reassign_kit.cluster import capabilities as caps
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import InvalidPlanError, KafkaOperationError
from reassign_kit.model import Move, Plan

V0_ONLY = caps.Capabilities(api={45: (0, 0), 46: (0, 0), 34: (0, 2)}, configs=frozenset())


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    caps._SAID.clear()


def old_cluster() -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.caps = V0_ONLY
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    return sim, plan


def test_intersection_is_what_every_broker_lists():
    got = caps.intersect({1: {45: (0, 1), 46: (0, 0)}, 2: {45: (0, 0), 46: (0, 0), 34: (0, 2)}})
    assert got == {45: (0, 0), 46: (0, 0)}  # a key one broker lacks is not usable
    c = caps.Capabilities(api=got)
    assert c.max_version(45) == 0 and c.max_version(34) is None
    assert not c.has(caps.RF_GUARD) and not c.has(caps.LOG_DIR_MOVES)


def test_features_come_from_what_the_brokers_report_not_a_version():
    new = caps.Capabilities(
        api={45: (0, 1), 34: (1, 2)},
        configs=frozenset({"cordoned.log.dirs", "remote.log.storage.system.enable"}),
        features={"eligible.leader.replicas.version": 1},
    )
    assert all(new.summary().values())
    old = caps.Capabilities(api={45: (0, 0)}, configs=frozenset({"log.dirs"}), features={})
    assert not any(old.summary().values())
    assert caps.ALL.has(caps.RF_GUARD)  # unknown = the simulator: everything


def test_the_message_names_the_release_that_has_v1():
    """The old message named Kafka 3.9+: 3.9.1's and 4.0.0's brokers list v0 only."""
    text = caps.degraded(caps.RF_GUARD)
    assert "AlterPartitionReassignments v1" in text and "Kafka 4.1+" in text
    assert "3.9" not in text
    assert "Kafka 4.1 or later" in caps.refused(caps.RF_GUARD, "--require-broker-rf-guard")


def test_legacy_execute_on_v0_brokers_runs_with_the_client_side_guard_said_once(capsys):
    sim, plan = old_cluster()
    res = reassign_kit.execute(sim, plan, disallow_replication_factor_change=True)
    assert res.exit_code == 0 and len(sim.list_reassignments()) == 4
    assert sim.calls["alter_reassignments_v0_guard"] == 1
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and "enforced client-side only" in err


def test_paced_run_on_v0_brokers_says_it_once_for_many_requests(tmp_path, capsys):
    sim, plan = old_cluster()
    res = reassign_kit.execute(
        sim,
        plan,
        disallow_replication_factor_change=True,
        batch_size=1,
        wait=True,
        journal=tmp_path / "run.jsonl",
    )
    assert res.exit_code == 0
    assert sim.calls["alter_reassignments_v0_guard"] == 4  # one request per batch, all v0
    assert capsys.readouterr().err.count("warning:") == 1


def test_an_rf_change_is_refused_client_side_on_v0_brokers():
    sim, _ = old_cluster()
    grow = Plan.of([Move(next(iter(sim.partitions)), (0, 1, 2))])
    with pytest.raises(InvalidPlanError):
        reassign_kit.execute(sim, grow, disallow_replication_factor_change=True)
    assert sim.calls["alter_reassignments"] == 0


def test_require_broker_rf_guard_is_refused_naming_the_release_nothing_sent(tmp_path):
    sim, plan = old_cluster()
    rb = tmp_path / "rb.json"
    with pytest.raises(KafkaOperationError) as e:
        reassign_kit.execute(sim, plan, require_broker_rf_guard=True, rollback_path=rb)
    assert e.value.exit_code == 4 and "Kafka 4.1 or later" in str(e.value)
    assert "--require-broker-rf-guard" in str(e.value)
    assert sim.calls["alter_reassignments"] == 0 and not rb.exists()
    assert sim.current_throttles().is_empty()


def test_require_broker_rf_guard_on_v1_brokers_sends_the_guard():
    sim, plan = old_cluster()
    sim.caps = caps.ALL
    res = reassign_kit.execute(sim, plan, require_broker_rf_guard=True)
    assert res.exit_code == 0 and sim.calls["alter_reassignments_v0_guard"] == 0


def test_a_broker_that_does_not_answer_is_left_out_and_asked_again_later():
    """A broker just killed is still registered: its ApiVersions fail, the others decide (a
    run with --disallow-replication-factor-change is not failed for it), and nothing is
    cached so the next call asks it again."""
    from types import SimpleNamespace as NS

    import kafka.errors as Errors

    from reassign_kit.cluster.admin import AdminGateway

    class Fut:
        def __init__(self, v):
            self.v = v

        def result(self, timeout=None):
            return self.v

    nodes = [NS(id=1), NS(id=2)]
    asked: list[int] = []

    class CK:
        def describe_cluster(self, request_timeout=None):
            return Fut(NS(nodes=nodes, controller=nodes[0]))

        def describe_configs(self, resources, request_timeout=None):
            return {r: Fut({"log.dirs": "x"}) for r in resources}

    class KP:
        def get_broker_version_data(self, broker):
            asked.append(broker)
            if broker == 2:
                raise Errors.KafkaConnectionError("down")
            return NS(api_versions={45: (0, 1), 46: (0, 0)})

        def describe_features(self):
            return {}

    gw = AdminGateway("h:1")
    gw._ck, gw._kp = CK(), KP()
    gw._drop_kp = lambda: None  # keep the fake client
    c = gw.capabilities()
    assert c.has(caps.RF_GUARD) and "brokers 2 did not answer" in c.basis
    gw.capabilities()
    assert asked == [1, 2, 1, 2]  # not cached while one was silent
