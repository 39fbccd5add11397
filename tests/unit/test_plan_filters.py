"""The plan as a filter: ``--list --reassignment-json-file`` lists only that plan's partitions
in flight; ``throttles --check/--clean --reassignment-json-file`` acts only on the throttles of
that plan's partitions (their topic-list entries) and brokers (targets and current replicas),
never on another move's or another broker's. Read back from the simulator's state file."""

from __future__ import annotations

import json

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE, LEADER_REPLICAS
from reassign_kit.cluster.simfile import load, save
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import TopicPartition as TP


def _cluster(tmp_path) -> str:
    sim = SimCluster(7, bandwidth=1 * MB)
    sim.add_topic("a", [[0, 1], [1, 2], [3, 6]], 100 * MB)
    sim.stall(TP("a", 0))
    sim.stall(TP("a", 1))
    # two moves in flight (another tool's): a-0 onto 4, a-1 onto 5
    sim.alter_reassignments({TP("a", 0): [0, 4], TP("a", 1): [1, 5]})
    # stale throttles nothing moving needs: a-2's entries, rates on 3 and 6
    sim.alter_topic_configs({"a": {LEADER_REPLICAS: "2:3,2:6"}})
    sim.alter_broker_configs(
        {3: {LEADER_RATE: "555", FOLLOWER_RATE: "555"}, 6: {LEADER_RATE: "666"}}
    )
    path = str(tmp_path / "sim.pkl")
    save(sim, path)
    return path


def _plan(tmp_path, *entries: dict) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"version": 1, "partitions": list(entries)}))
    return str(path)


def test_list_with_a_plan_lists_only_its_partitions(tmp_path, capsys):
    state = _cluster(tmp_path)
    plan = _plan(tmp_path, {"topic": "a", "partition": 1, "replicas": [1, 5]})
    argv = ["--bootstrap-server", f"sim:{state}", "--list", "--reassignment-json-file", plan]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert f"Of the 1 partition(s) of {plan}, 1 have a reassignment in progress." in out
    assert "a-1: replicas" in out and "a-0" not in out, out
    assert cli_main([*argv, "--output", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)["partitions"]
    assert [(p["topic"], p["partition"]) for p in listed] == [("a", 1)]


def test_throttles_clean_with_a_plan_cleans_only_its_throttles(tmp_path, capsys):
    """The plan a-2 -> [6, 3] (a-2 is on 3 and 6): its stale list entries and the rates of
    brokers 3 and 6 go; the moves in flight keep theirs, no other broker is touched."""
    state = _cluster(tmp_path)
    plan = _plan(tmp_path, {"topic": "a", "partition": 2, "replicas": [6, 3]})
    before = load(state)
    code = cli_main(
        ["throttles", "--bootstrap-server", f"sim:{state}", "--clean",
         "--reassignment-json-file", plan, "--state-dir", str(tmp_path / "runs")]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert f"Only the throttles of {plan}: topic(s) a, broker(s) 3, 6." in out
    after = load(state)
    assert not after.broker_cfg.get(3) and not after.broker_cfg.get(6), after.broker_cfg
    assert not after.topic_cfg.get("a", {}).get(LEADER_REPLICAS), after.topic_cfg
    others = {b: kv for b, kv in before.broker_cfg.items() if b not in (3, 6)}
    assert {b: kv for b, kv in after.broker_cfg.items() if b not in (3, 6)} == others


def test_throttles_clean_with_a_plan_leaves_another_brokers_stale_rate(tmp_path, capsys):
    """The plan a-0 -> [0, 4] involves brokers 0, 1 and 4: broker 3's and 6's stale rates,
    and a-2's stale entries, are not its to clean."""
    state = _cluster(tmp_path)
    plan = _plan(tmp_path, {"topic": "a", "partition": 0, "replicas": [0, 4]})
    before = load(state)
    code = cli_main(
        ["throttles", "--bootstrap-server", f"sim:{state}", "--clean",
         "--reassignment-json-file", plan, "--state-dir", str(tmp_path / "runs")]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    after = load(state)
    assert after.broker_cfg == before.broker_cfg and after.topic_cfg == before.topic_cfg
