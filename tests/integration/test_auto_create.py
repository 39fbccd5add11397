"""Read-only commands never create topics, on a broker that auto-creates them.

Kafka's default is ``auto.create.topics.enable=true`` (the shared sandbox turns it off, so no
other test could see this): a Metadata request naming a topic creates it. A plan or a
``--verify`` with a misspelt topic must report it unknown and leave the cluster as it was."""

from __future__ import annotations

import json

import pytest

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import TopicPartition

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def autocreating(tmp_path_factory):
    from reassign_kit.sandbox.sandbox import Sandbox

    with Sandbox.start(
        brokers=2,
        dir=tmp_path_factory.mktemp("autocreate"),
        configs={"auto.create.topics.enable": "true", "num.partitions": "1"},
    ) as sb:
        yield sb


def topics_of(bootstrap: str) -> set[str]:
    gw = AdminGateway(bootstrap)
    try:
        return set(gw.topic_partition_counts())
    finally:
        gw.close()


def test_read_only_commands_with_a_misspelt_topic_create_nothing(autocreating, tmp_path, capsys):
    bs = autocreating.bootstrap_servers
    autocreating.create_topic("orders", assignment=[[1, 2]])
    before = topics_of(bs)
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {"version": 1, "partitions": [{"topic": "ordres", "partition": 0, "replicas": [2, 1]}]}
        )
    )
    codes = {}
    for action, extra in [
        ("--verify", []),
        ("--execute", ["--rollback-file", str(tmp_path / "rb.json")]),
        ("--progress", []),
    ]:
        codes[action] = cli_main(
            ["--bootstrap-server", bs, action, "--reassignment-json-file", str(plan), *extra]
        )
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert codes["--execute"] == 3, (codes, err)  # invalid plan: the topic does not exist
    assert "ordres" in err
    gw = AdminGateway(bs)
    try:
        # the gateway's own reads name the topic too
        assert gw.describe_partitions([TopicPartition("ordres", 0)]) == {}
        assert gw.topic_partition_counts(["ordres"]) == {}
    finally:
        gw.close()
    assert topics_of(bs) == before, topics_of(bs) - before
