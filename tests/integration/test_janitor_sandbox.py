"""`reassign-kit throttles --check / --clean` on a real cluster: DescribeConfigs'
sources as Kafka reports them (a rate set on a broker is a dynamic broker config, a topic list
a topic config; an unset rate is not listed at all), exit 8 while stray throttles are set,
--clean removes them and nothing else of the topic's configs."""

from __future__ import annotations

import pytest
from waits import wait_until

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.config import FOLLOWER_REPLICAS, LEADER_RATE
from reassign_kit.throttles import janitor

pytestmark = pytest.mark.integration


def test_check_and_clean_on_the_sandbox(sandbox, gw, topic_name, capsys):
    topic = topic_name("janitor")
    sandbox.create_topic(topic, assignment=[[1, 2]], configs={"retention.ms": "3600000"})
    gw.alter_topic_configs({topic: {FOLLOWER_REPLICAS: "0:3"}})
    gw.alter_broker_configs({3: {LEADER_RATE: "4444444"}})

    def mine(check: janitor.ThrottleCheck) -> dict:
        return {
            (s.resource, s.name, s.key): (s.value, s.source)
            for s in check.strays
            if s.name in (topic, "3")
        }

    try:
        # a broker applies a dynamic config once it has read it from the metadata log
        seen = wait_until(
            lambda: len(m := mine(janitor.check_throttles(gw))) == 2 and m,
            60,
            "broker 3 to report its new rate",
        )
        assert seen == {
            ("topic", topic, FOLLOWER_REPLICAS): ("0:3", "topic"),
            ("broker", "3", LEADER_RATE): ("4444444", "dynamic broker"),
        }
        bs = sandbox.bootstrap_servers
        assert cli_main(["throttles", "--bootstrap-server", bs, "--check"]) == 8
        assert "4444444 [dynamic broker" in capsys.readouterr().out
        cli_main(["throttles", "--bootstrap-server", bs, "--clean"])
        wait_until(lambda: not mine(janitor.check_throttles(gw)), 60, "the rate to be gone")
        assert gw.topic_configs([topic])[topic]["retention.ms"] == "3600000"
    finally:
        gw.alter_broker_configs({3: {LEADER_RATE: None}})
        gw.alter_topic_configs({topic: {FOLLOWER_REPLICAS: None}})
