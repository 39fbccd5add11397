"""The cluster contract: one ``Gateway`` protocol declares every method the engine,
the operations, progress and the panel use; the admin gateway and the simulator both have
each method with the protocol's signature; per-partition failures carry an ``ErrorCode``."""

from __future__ import annotations

import inspect

import pytest

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.cluster.gateway import ErrorCode, Gateway, PartitionError, is_error
from reassign_kit.cluster.simulate import SimCluster
from reassign_kit.cluster.views import no_reassignment_in_progress
from reassign_kit.model import TopicPartition

PROTOCOL = sorted(
    n for n, f in inspect.getmembers(Gateway, inspect.isfunction) if not n.startswith("_")
)


def params(fn) -> list[tuple[str, object, object]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def test_the_protocol_is_complete():
    # every method the engine and the operations call (no getattr probing left to cover gaps)
    assert {
        "alter_broker_configs", "alter_reassignments", "alter_replica_log_dirs",
        "alter_topic_configs", "broker_configs", "capabilities", "throttle_configs", "broker_log_dirs", "brokers", "close",
        "elect_preferred_leaders",
        "cluster_id", "cluster_info", "cluster_permissions", "describe_log_dirs", "describe_partitions", "list_reassignments", "log_dir_capacity",
        "min_insync_replicas", "now", "sleep", "tier_offsets", "topic_configs", "topic_partition_counts", "topic_permissions",
    } == set(PROTOCOL)  # fmt: skip


@pytest.mark.parametrize("impl", [AdminGateway, SimCluster])
@pytest.mark.parametrize("name", PROTOCOL)
def test_both_gateways_have_every_method_with_its_signature(impl, name):
    assert callable(getattr(impl, name, None)), f"{impl.__name__} lacks {name}"
    assert params(getattr(impl, name)) == params(getattr(Gateway, name)), (
        f"{impl.__name__}.{name}{inspect.signature(getattr(impl, name))} differs from "
        f"Gateway.{name}{inspect.signature(getattr(Gateway, name))}"
    )


def test_no_gateway_probing_in_the_package():
    """Callers use the protocol; nobody asks a gateway whether it has a method."""
    import pathlib
    import re

    import reassign_kit

    root = pathlib.Path(reassign_kit.__file__).parent
    probe = re.compile(r"getattr\((self\.)?(gw|gateway)\b|hasattr\((self\.)?(gw|gateway)\b")
    found = [
        f"{p.relative_to(root)}:{i}"
        for p in root.rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if probe.search(line) or "inspect.signature(gateway" in line
    ]
    assert found == []


def test_cancel_of_a_finished_move_is_the_same_code_on_the_simulator_and_in_kafka_text():
    sim = SimCluster(3)
    sim.add_topic("t", [[0, 1]])
    tp = TopicPartition("t", 0)
    err = sim.alter_reassignments({tp: None})[tp]
    assert is_error(err, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
    assert no_reassignment_in_progress(err)
    # Kafka's text for the same code (as the admin gateway builds it) decides the same way
    kafka = PartitionError(ErrorCode.of(85), "NoReassignmentInProgress: no reassignment")
    assert no_reassignment_in_progress(kafka)
    # a text that merely looks alike is not the code: decisions never parse strings
    assert not no_reassignment_in_progress("NoReassignmentInProgress: lookalike")
    assert not no_reassignment_in_progress(PartitionError(ErrorCode.of(3), "UnknownTopic"))
    assert ErrorCode.of(12345) is ErrorCode.UNKNOWN


def test_partition_errors_read_as_their_text():
    e = PartitionError(ErrorCode.REASSIGNMENT_IN_PROGRESS, "ReassignmentInProgress: busy")
    assert e == "ReassignmentInProgress: busy" and f"{e}" == "ReassignmentInProgress: busy"
    import json
    import pickle

    assert json.loads(json.dumps({"e": e})) == {"e": "ReassignmentInProgress: busy"}
    assert pickle.loads(pickle.dumps(e)).code is ErrorCode.REASSIGNMENT_IN_PROGRESS
