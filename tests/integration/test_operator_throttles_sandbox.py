"""Throttles restored, not deleted, on a real cluster: an operator's own
replication rates on the brokers of a paced, throttled move are back at their values after
the run, and `reassign-kit throttles --check` (given the run's journal, which recorded them)
finds nothing that no move needs; without the journal it lists them as dynamic broker
configs (and exits 8), and given the plan, only those of the plan's brokers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events

pytestmark = pytest.mark.integration

OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}
RATE = 512 * 1024


def cli(bootstrap: str, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reassign_kit.cli", *argv, "--bootstrap-server", bootstrap],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def test_operator_rates_back_after_a_paced_throttled_move(sandbox, gw, topic_name, tmp_path):
    b = sorted(x["id"] for x in sandbox.brokers)
    topic = topic_name("janitor")
    sandbox.create_topic(topic, assignment=[[b[0]]])
    sandbox.load(topic, 2)  # 2 MiB at 512 KiB/s: the throttle is in force for seconds
    tp = TopicPartition(topic, 0)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(Plan.of([Move(tp, (b[1],))]).to_json())
    journal = tmp_path / "run.jsonl"
    gw.alter_broker_configs({b[0]: dict(OPERATOR), b[1]: dict(OPERATOR)})
    try:
        run = cli(
            sandbox.bootstrap_servers,
            *("--execute", "--reassignment-json-file", str(plan_path), "--wait"),
            *("--throttle", str(RATE), "--journal", str(journal)),
            *("--rollback-file", str(tmp_path / "rollback.json")),
        )
        assert run.returncode == 0, run.stdout + run.stderr
        # the claim comes from the brokers' configs read back (the operator's, put back, are
        # not the run's)
        assert "No throttle left by this run (read back" in run.stdout, run.stdout[-1500:]
        assert gw.describe_partitions([tp])[tp].replicas == (b[1],)
        ev = read_events(journal)
        # ours was in force while it moved, the operator's recorded before it was changed
        assert any(e["event"] == "throttle_set" and e["rate"] == RATE for e in ev)
        prior = [e for e in ev if e["event"] == "throttle_prior"]
        assert prior and prior[0]["brokers"][str(b[0])] == OPERATOR
        now = gw.throttle_configs([topic], b[:2])
        for x in b[:2]:
            got = {k: v.value for k, v in now.brokers.get(x, {}).items()}
            assert got == OPERATOR, (x, got)
            assert {v.source for v in now.brokers[x].values()} == {"dynamic broker"}
        assert topic not in now.topics  # the run's lists are gone
        check = cli(sandbox.bootstrap_servers, "throttles", "--check", "--journal", str(journal))
        assert check.returncode == 0, check.stdout + check.stderr
        assert "No throttle config is set that no reassignment in flight needs" in check.stdout
        # the plan's scope: its brokers now (the move done: its target only), not b[0]'s rate
        scoped = cli(
            sandbox.bootstrap_servers,
            *("throttles", "--check", "--output", "json"),
            *("--reassignment-json-file", str(plan_path)),
        )
        assert scoped.returncode == 8, scoped.stdout + scoped.stderr
        names = {s["name"] for s in json.loads(scoped.stdout)["strays"]}
        assert names == {str(b[1])}, scoped.stdout
        bare = cli(sandbox.bootstrap_servers, "throttles", "--check", "--output", "json")
        assert bare.returncode == 8, bare.stdout + bare.stderr
        stray = json.loads(bare.stdout)["strays"]
        assert {(s["name"], s["key"], s["source"]) for s in stray} >= {
            (str(b[0]), LEADER_RATE, "dynamic broker"),
            (str(b[1]), FOLLOWER_RATE, "dynamic broker"),
        }
    finally:
        gw.alter_broker_configs({x: dict.fromkeys(OPERATOR) for x in b[:2]})
