"""`reassign-kit throttles --check / --clean`: every throttle config
no reassignment in flight needs (ours or another tool's) with its source, exit 8 while any is
set; --clean removes those set on the topic or broker itself and leaves the cluster default and
server.properties values alone (reported); with a run's journal the operator's values are not
reported and are put back instead of deleted."""

from __future__ import annotations

import json

from reassign_kit.cli import main as cli_main
from reassign_kit.cli import throttles as throttles_cli
from reassign_kit.cluster.config import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
)
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import TopicPartition
from reassign_kit.throttles import janitor
from reassign_kit.throttles.priors import Priors


def cluster() -> SimCluster:
    sim = SimCluster(5, bandwidth=1 * MB)
    sim.add_topic("a", [[0, 1], [1, 2]], 100 * MB)
    sim.add_topic("b", [[3, 4]], 1 * MB)
    # a move in flight (another tool's): a-0 from (0,1) to (0,2), throttled as it needs
    sim.alter_reassignments({TopicPartition("a", 0): [0, 2]})
    sim.alter_topic_configs(
        {
            "a": {LEADER_REPLICAS: "0:0,0:1,1:1", FOLLOWER_REPLICAS: "0:2"},  # 1:1 is stale
            "b": {FOLLOWER_REPLICAS: "*"},  # nothing of b moves
        }
    )
    sim.alter_broker_configs(
        {
            0: {LEADER_RATE: "100", FOLLOWER_RATE: "100"},  # needed by a-0
            2: {FOLLOWER_RATE: "100"},  # needed
            3: {LEADER_RATE: "555", LOG_DIR_RATE: "9"},  # stale: nothing moves on 3
        }
    )
    sim.static_broker_cfg[4] = {FOLLOWER_RATE: "777"}  # server.properties
    return sim


def test_check_lists_what_no_move_needs_with_its_source():
    check = janitor.check_throttles(cluster())
    got = {(s.resource, s.name, s.key): (s.unneeded, s.source) for s in check.strays}
    assert got == {
        ("topic", "a", LEADER_REPLICAS): ("1:1", "topic"),
        ("topic", "b", FOLLOWER_REPLICAS): ("*", "topic"),
        ("broker", "3", LEADER_RATE): ("555", "dynamic broker"),
        ("broker", "3", LOG_DIR_RATE): ("9", "dynamic broker"),
        ("broker", "4", FOLLOWER_RATE): ("777", "static"),
    }
    assert check.exit_code == 8


def test_cli_check_exits_8_and_clean_removes_only_what_is_set_on_the_resource(monkeypatch, capsys):
    sim = cluster()
    monkeypatch.setattr(throttles_cli, "connect", lambda bs, cc=None: sim)
    assert cli_main(["throttles", "--bootstrap-server", "x:1", "--check"]) == 8
    out = capsys.readouterr().out
    assert "broker 3: leader.replication.throttled.rate=555 [dynamic broker" in out
    assert "[static: the broker's server.properties]" in out
    code = cli_main(["throttles", "--bootstrap-server", "x:1", "--clean", "--output", "json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 8  # the server.properties value is left, and said so
    assert report["cleaned"]["brokers"] == {"3": {LEADER_RATE: None, LOG_DIR_RATE: None}}
    # what the move in flight needs is kept
    assert sim.topic_cfg == {"a": {LEADER_REPLICAS: "0:0,0:1", FOLLOWER_REPLICAS: "0:2"}}
    assert sim.broker_cfg == {
        0: {LEADER_RATE: "100", FOLLOWER_RATE: "100"},
        2: {FOLLOWER_RATE: "100"},
    }
    assert sim.static_broker_cfg == {4: {FOLLOWER_RATE: "777"}}
    left = janitor.check_throttles(sim).strays
    assert [(s.name, s.source) for s in left] == [("4", "static")]


def test_with_the_runs_priors_the_operators_values_stay_and_come_back(tmp_path, monkeypatch):
    """A run died with its rate 1000 on broker 3, whose operator had 555 before: --clean
    --journal puts 555 back (not a delete); the operator's own list entry is not reported."""
    sim = cluster()
    sim.alter_broker_configs({3: {LEADER_RATE: "1000", LOG_DIR_RATE: None}})
    sim.alter_topic_configs({"a": {LEADER_REPLICAS: "0:0,0:1,1:1,5:4"}})
    priors = Priors()
    priors.record("brokers", 3, LEADER_RATE, "555")
    priors.record("topics", "a", LEADER_REPLICAS, "5:4")
    journal = tmp_path / "run.jsonl"
    journal.write_text(
        json.dumps({"ts": 1, "event": "throttle_prior", "run_id": "r", **priors.to_json()}) + "\n"
    )
    check = janitor.check_throttles(sim, priors)
    assert {(s.name, s.unneeded, s.prior) for s in check.strays if s.resource != "topic" or s.name == "a"} == {
        ("a", "1:1", None),
        ("3", "1000", "555"),
        ("4", "777", None),
    }  # fmt: skip
    monkeypatch.setattr(throttles_cli, "connect", lambda bs, cc=None: sim)
    cli_main(["throttles", "--bootstrap-server", "x:1", "--clean", "--journal", str(journal)])
    assert sim.broker_cfg[3] == {LEADER_RATE: "555"}
    assert sim.topic_cfg["a"][LEADER_REPLICAS] == "0:0,0:1,5:4"
    # now the operator's values are what was there before: nothing of theirs is reported
    again = janitor.check_throttles(sim, priors)
    assert [(s.name, s.source) for s in again.strays if s.name in ("a", "3")] == []


def test_a_down_broker_is_named_and_the_others_checked():
    """KAFKA-13392: a stopped broker's configs cannot be read; the check goes on without it
    and says so (exit 8: it could not tell)."""
    sim = cluster()
    sim.down.add(3)
    check = janitor.check_throttles(sim, brokers=[0, 1, 2, 3, 4])
    assert set(check.unreachable) == {3}
    assert {s.name for s in check.strays if s.resource == "broker"} == {"4"}
    assert any("Broker 3 could not be asked" in line for line in check.lines())
