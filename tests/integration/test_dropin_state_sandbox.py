"""The drop-in flow on a real cluster, exactly as a runbook for kafka-reassign-partitions runs
it: the operator's rates set, ``--execute --throttle R`` with a plan,
``--verify`` with the same plan (nothing else) until done -> the operator's rates back at
exactly their values and no other config touched; and ``--execute`` then ``--cancel
--reassignment-json-file plan.json`` -> every partition at its original list, order included.
The CLI runs as a subprocess in a scratch working directory with its own state dir."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.cluster.config import BROKER_THROTTLE_KEYS, FOLLOWER_RATE, LEADER_RATE
from reassign_kit.model import Move, Plan, TopicPartition

pytestmark = pytest.mark.integration
OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}


def cli(bootstrap: str, cwd, state_dir, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", bootstrap, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "REASSIGN_KIT_STATE_DIR": str(state_dir), "PYTHONUNBUFFERED": "1"},
    )


def throttle_view(gw: AdminGateway, brokers, topic: str) -> dict:
    """The throttle configs of every broker (dynamic, per broker) and of the topic."""
    cfg = gw.throttle_configs([topic], brokers)
    return {
        "brokers": {
            b: {k: v.value for k, v in cfg.brokers.get(b, {}).items() if k in BROKER_THROTTLE_KEYS}
            for b in brokers
        },
        "topic": {k: v.value for k, v in cfg.topics.get(topic, {}).items()},
        "default": {k: v.value for k, v in cfg.default.items()},
    }


def settled(read, want, bound_s: float = 30.0):
    """Read until it equals ``want`` (a broker applies a config change after the controller
    commits it), at most ``bound_s``; returns the last reading."""
    deadline = time.monotonic() + bound_s
    got = read()
    while got != want and time.monotonic() < deadline:
        time.sleep(0.5)
        got = read()
    return got


def test_dropin_execute_verify_and_execute_cancel(sandbox, bootstrap, topic_name, tmp_path):
    b = sorted(x["id"] for x in sandbox.brokers)  # 4 brokers
    gw = AdminGateway(bootstrap)
    fast, slow = topic_name("dropin-verify"), topic_name("dropin-cancel")
    # b[0] is a source of the moves, b[3] no part of any plan: both carry the operator's rate
    operator = {b[0]: dict(OPERATOR), b[3]: dict(OPERATOR)}
    try:
        sandbox.create_topic(fast, assignment=[[b[0], b[1]], [b[1], b[0]]])
        sandbox.create_topic(slow, assignment=[[b[0], b[1]]])
        sandbox.load(fast, 0.5)
        sandbox.load(slow, 3)
        gw.alter_broker_configs(operator)
        ours = settled(
            lambda: [throttle_view(gw, b, fast)["brokers"][x] for x in (b[0], b[3])],
            [OPERATOR, OPERATOR],
        )
        assert ours == [OPERATOR, OPERATOR], ours
        before = throttle_view(gw, b, fast)

        # 1. --execute --throttle R, then --verify with the same plan until done
        plan = tmp_path / "plan.json"
        tp0, tp1 = TopicPartition(fast, 0), TopicPartition(fast, 1)
        plan.write_text(Plan.of([Move(tp0, (b[1], b[2])), Move(tp1, (b[2], b[1]))]).to_json(2))
        ex = cli(bootstrap, tmp_path, tmp_path / "state", "--execute", "--throttle", "20000000",
                 "--reassignment-json-file", str(plan))  # fmt: skip
        assert ex.returncode == 0, ex.stdout + ex.stderr
        assert not list(tmp_path.glob("reassign-*"))  # its files are in the run's home
        deadline = time.monotonic() + 180
        while True:
            ve = cli(bootstrap, tmp_path, tmp_path / "state", "--verify",
                     "--reassignment-json-file", str(plan))  # fmt: skip
            if ve.returncode != 10 or time.monotonic() > deadline:
                break
            time.sleep(2)
        assert ve.returncode == 0, ve.stdout + ve.stderr
        assert "Run state (--verify): found run" in ve.stdout and "started" in ve.stdout
        got = settled(lambda: throttle_view(gw, b, fast), before)
        assert got == before, f"throttle configs not back at the operator's: {got} != {before}"
        states = gw.describe_partitions([tp0, tp1])
        assert states[tp0].replicas == (b[1], b[2]) and states[tp1].replicas == (b[2], b[1])

        # 2. --execute, then --cancel with only the plan: back at (b0, b1), in that order
        # (Kafka lists the target first while it moves: (b1, b2, b0), its set minus adding
        # in Kafka's order would be (b1, b0))
        plan2 = tmp_path / "plan2.json"
        tps = TopicPartition(slow, 0)
        plan2.write_text(Plan.of([Move(tps, (b[1], b[2]))]).to_json())
        ex = cli(bootstrap, tmp_path, tmp_path / "state", "--execute", "--throttle", "100000",
                 "--reassignment-json-file", str(plan2))  # fmt: skip
        assert ex.returncode == 0, ex.stdout + ex.stderr
        assert gw.list_reassignments([tps]), "the throttled move should still be in flight"
        ca = cli(bootstrap, tmp_path, tmp_path / "state", "--cancel",
                 "--reassignment-json-file", str(plan2), "--rollback-timeout", "120")  # fmt: skip
        assert ca.returncode == 0, ca.stdout + ca.stderr
        assert "Run state (--cancel): found run" in ca.stdout
        now = settled(lambda: gw.describe_partitions([tps])[tps].replicas, (b[0], b[1]))
        assert now == (b[0], b[1]), ca.stdout
        got = settled(lambda: throttle_view(gw, b, slow), {**before, "topic": {}})
        assert got["brokers"] == before["brokers"], got
        assert got["topic"] == {}, got
    finally:
        try:
            stuck = gw.list_reassignments()
            mine = {tp: None for tp in stuck if tp.topic in (fast, slow)}
            if mine:
                gw.alter_reassignments(mine)
            gw.alter_broker_configs({x: dict.fromkeys(OPERATOR) for x in b})
            gw.alter_topic_configs(
                {t: dict.fromkeys(("leader.replication.throttled.replicas",
                                    "follower.replication.throttled.replicas")) for t in (fast, slow)}
            )  # fmt: skip
        finally:
            gw.close()
            admin = sandbox.admin()
            for f in admin.delete_topics([fast, slow]).values():
                f.result(60)
