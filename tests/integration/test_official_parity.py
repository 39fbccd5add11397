"""The same plan through Apache Kafka's own kafka-reassign-partitions (ReassignPartitionsCommand
from the fetched jars) and through reassign-kit, on the same cluster: same final assignment,
same rollback JSON, same throttled-replica lists, same --list lines."""

from __future__ import annotations

import json
import math
import re
import time

import pytest

from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.cluster.config import FOLLOWER_REPLICAS, LEADER_REPLICAS
from reassign_kit.model import Move, Plan, TopicPartition, is_complete
from reassign_kit.sandbox.kafka import run_kafka_class

pytestmark = pytest.mark.integration
TP = TopicPartition
OFFICIAL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
OFFICIAL_TIMEOUT = 180  # seconds one run of the official tool may take
# A replication throttle is no rate cap: a leader checks its quota before a follower's fetch
# and charges the bytes after it, and a follower fetch is not capped to the quota window
# (KafkaApis caps only consumers), so every fetch carries up to replica.fetch.max.bytes
# (1 MiB) per partition; then the leader refuses until that second's sample leaves its 11 x 1 s
# window (replication.quota.window.num/.size.seconds). Whatever the rate (10000 B/s or 1 B/s),
# a leader sending B MiB to throttled followers is done after about (B - 1) x 11 s. A move
# that must still be listed after the official tool's --execute and --list (one JVM each)
# therefore needs more than 2 x OFFICIAL_TIMEOUT / 11 s + 1 MiB through each leader.
QUOTA_WINDOW_S = 11


def load(sandbox, topic: str, mb: float) -> None:
    sandbox.load(topic, mb_per_partition=mb)  # waits out a broker's metadata lag itself


def official(bootstrap: str, *args: str) -> str:
    proc = run_kafka_class(
        OFFICIAL, ["--bootstrap-server", bootstrap, *args], timeout=OFFICIAL_TIMEOUT
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def ours(bootstrap: str, capsys, *args: str) -> tuple[int, str]:
    code = reassign_cli.main(["--bootstrap-server", bootstrap, *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out


def create_assigned(sandbox, name: str, assignment: list[tuple[int, ...]]) -> None:
    sandbox.create_topic(name, assignment=assignment)


def wait_assignment(
    gw, targets: dict[TopicPartition, tuple[int, ...]], timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        states = gw.describe_partitions(targets)
        if all(is_complete(t, states.get(tp)) for tp, t in targets.items()):
            return
        assert time.monotonic() < deadline, f"not complete: {states}"
        time.sleep(0.5)


def topic_lists(gw, topic: str) -> dict[str, str]:
    c = gw.topic_configs([topic])[topic]
    return {k: c.get(k, "") for k in (LEADER_REPLICAS, FOLLOWER_REPLICAS)}


def rollback_json(stdout: str) -> Plan:
    """The rollback JSON the official tool prints after 'Current partition replica assignment'."""
    m = re.search(r"Current partition replica assignment\s*\n\s*\n(\{.*?\})\s*\n", stdout, re.S)
    assert m, stdout
    return Plan.from_json(m.group(1))


def replicas_only(plan: Plan) -> Plan:
    return Plan.of(Move(m.tp, m.replicas) for m in plan)


def test_same_plan_same_result_as_the_official_tool(
    sandbox, bootstrap, topic_name, tmp_path, capsys
):
    gw = AdminGateway(bootstrap)
    topic = topic_name("parity")
    start = [(1, 2), (2, 3), (3, 4), (4, 1)]
    create_assigned(sandbox, topic, start)
    load(sandbox, topic, 0.3)
    tps = [TP(topic, p) for p in range(4)]
    initial = {tp: start[tp.partition] for tp in tps}
    # Moves of every kind: both replicas, one replica, a leader swap only, a growth to RF 3.
    targets = {tps[0]: (3, 4), tps[1]: (2, 4), tps[2]: (4, 3), tps[3]: (4, 1, 2)}
    plan = Plan.of(Move(tp, t) for tp, t in targets.items())
    plan_file = tmp_path / "plan.json"
    plan.write(str(plan_file))
    throttle = "50000000"

    # 1. The official tool. Its throttle lists stay until its --verify.
    out = official(
        bootstrap,
        "--reassignment-json-file",
        str(plan_file),
        "--execute",
        "--additional",
        "--throttle",
        throttle,
    )
    official_rollback = rollback_json(out)
    official_lists = topic_lists(gw, topic)
    wait_assignment(gw, targets)
    official_final = {tp: st.replicas for tp, st in gw.describe_partitions(tps).items()}
    out = official(bootstrap, "--reassignment-json-file", str(plan_file), "--verify")
    assert out.count("is completed") == 4, out
    assert topic_lists(gw, topic) == {LEADER_REPLICAS: "", FOLLOWER_REPLICAS: ""}

    # 2. Back to the start, with reassign-kit running the official tool's rollback JSON.
    rb = tmp_path / "official-rollback.json"
    official_rollback.write(str(rb))
    assert replicas_only(official_rollback) == Plan.of(Move(tp, t) for tp, t in initial.items())
    code, out = ours(
        bootstrap,
        capsys,
        "--execute",
        "--additional",
        "--reassignment-json-file",
        str(rb),
        "--rollback-file",
        str(tmp_path / "x.json"),
    )
    assert code == 0, out
    wait_assignment(gw, initial)
    code, out = ours(bootstrap, capsys, "--verify", "--reassignment-json-file", str(rb))
    assert code == 0, out

    # 3. reassign-kit, same plan, same starting point.
    our_rb = tmp_path / "our-rollback.json"
    code, out = ours(
        bootstrap,
        capsys,
        "--execute",
        "--additional",
        "--reassignment-json-file",
        str(plan_file),
        "--throttle",
        throttle,
        "--rollback-file",
        str(our_rb),
    )
    assert code == 0, out
    our_lists = topic_lists(gw, topic)
    wait_assignment(gw, targets)
    our_final = {tp: st.replicas for tp, st in gw.describe_partitions(tps).items()}
    code, out = ours(bootstrap, capsys, "--verify", "--reassignment-json-file", str(plan_file))
    assert code == 0, out
    assert topic_lists(gw, topic) == {LEADER_REPLICAS: "", FOLLOWER_REPLICAS: ""}

    assert our_final == official_final == targets
    assert our_lists == official_lists  # byte for byte
    assert replicas_only(Plan.read(str(our_rb))) == replicas_only(official_rollback)
    (tmp_path / "parity.json").write_text(
        json.dumps({"final": {str(k): v for k, v in our_final.items()}, "throttles": our_lists})
    )
    gw.close()


def test_list_output_matches_the_official_tool(sandbox, bootstrap, topic_name, tmp_path, capsys):
    gw = AdminGateway(bootstrap)
    topic = topic_name("parity-list")
    create_assigned(sandbox, topic, [(1, 2), (3, 4)])
    # Each leader (1 for p0, 3 for p1) sends its partition to two new replicas: 2 x mb MiB.
    # 1 MB was one fetch per replica: the moves were done ~11 s after --execute, before the
    # official --list's JVM came up on a loaded machine.
    mb = math.ceil((2 * OFFICIAL_TIMEOUT / QUOTA_WINDOW_S + 1) / 2)  # 17: > 360 s of moves
    load(sandbox, topic, mb)
    plan = Plan.of([Move(TP(topic, 0), (3, 4)), Move(TP(topic, 1), (1, 2))])
    plan_file = tmp_path / "plan.json"
    plan.write(str(plan_file))
    try:
        # A slow move started by the official tool, listed by both, cancelled by reassign-kit.
        official(
            bootstrap,
            "--reassignment-json-file",
            str(plan_file),
            "--execute",
            "--additional",
            "--throttle",
            "10000",
        )
        theirs = [
            line for line in official(bootstrap, "--list").splitlines() if line.startswith(topic)
        ]
        _, out = ours(bootstrap, capsys, "--list")
        mine = [line for line in out.splitlines() if line.startswith(topic)]
        assert mine == theirs and len(mine) == 2
    finally:
        code, out = ours(bootstrap, capsys, "--cancel", "--reassignment-json-file", str(plan_file))
    assert code == 0 and "Successfully cancelled" in out, out
    out = official(bootstrap, "--reassignment-json-file", str(plan_file), "--verify")
    assert "There is no active reassignment of partition" in out
    gw.close()
