"""Racks, demotion and cordons on the real cluster (the session sandbox: 4 brokers, 2 racks).

Demotion by reorder: a topic created with rack-breaking replica sets (both replicas in one
rack), ``plan --demote-brokers A`` on one of its brokers, executed paced: after the run's
elections A leads no partition that has another in-sync replica; nothing is copied.

Cordons (KIP-1066, Kafka 4.3.1's dynamic broker config ``cordoned.log.dirs``): a broker
cordoned with ``reassign-kit sandbox cordon`` is recorded by the snapshot; a rebalance avoids
it (where, uncordoned, it would send replicas there); ``validate`` rejects a hand-written plan
that targets it, naming the partition and the broker; ``plan --drain-cordoned`` executed
empties it of the topic's replicas (real bytes copied). Checked against 4.3.1 while writing
this: the controller does not refuse a reassignment onto a cordoned broker, it only stops
placing new partitions there, so honouring the cordon is the plan's job.

Topics are deleted and the cordon lifted at the end, whatever happens."""

from __future__ import annotations

import json

import pytest
from waits import wait_until

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.snapshot.snapshot import take_snapshot

pytestmark = pytest.mark.integration


def drop(sandbox, topic: str) -> None:
    admin = sandbox.admin()  # keep a reference: the futures die with their client
    for f in admin.delete_topics([topic]).values():
        f.result(60)


def racks_of(sandbox) -> list[list[int]]:
    by_rack: dict[str, list[int]] = {}
    for b in sorted(sandbox.brokers, key=lambda b: b["id"]):
        by_rack.setdefault(str(b["rack"]), []).append(b["id"])
    return list(by_rack.values())


def execute(bootstrap: str, plan_file, tmp_path, name: str) -> list[dict]:
    journal = tmp_path / f"{name}.jsonl"
    rc = cli_main(
        [
            "--execute",
            "--bootstrap-server", bootstrap,
            "--reassignment-json-file", str(plan_file),
            "--rollback-file", str(tmp_path / f"{name}-rollback.json"),
            "--journal", str(journal),
            "--additional",  # a shared cluster: other tests' moves may be in flight
            "--reassignment-poll-interval-ms", "300",
            "--wait",  # the run waits for every move (and its election)
        ]
    )  # fmt: skip
    assert rc == 0
    evs = read_events(journal)
    assert [e["state"] for e in evs if e["event"] == "run_finished"] == ["done"]
    return evs


def test_demotion_reorders_rack_breaking_replica_sets(sandbox, bootstrap, topic_name, tmp_path):
    (a, c), (b, d) = racks_of(sandbox)[:2]  # a, c in one rack; b, d in the other
    # every partition breaks rack-awareness: both replicas in one rack, a first
    assignment = [[a, c], [a, c], [a, c], [b, d]]
    topic = topic_name("demote-racks")
    sandbox.create_topic(topic, assignment=assignment)
    gw = AdminGateway(bootstrap)
    tps = [TopicPartition(topic, p) for p in range(len(assignment))]
    try:
        before = wait_until(
            lambda: (
                (s := gw.describe_partitions(tps))
                and len(s) == len(tps)
                and all(len(st.isr) == 2 and st.leader == st.replicas[0] for st in s.values())
                and s
            ),
            60,
            "the new topic in sync, led by its first replicas",
        )
        sandbox.load(topic, 0.02)
        snap = take_snapshot(gw, topics=[topic])
        s_path = tmp_path / "snapshot.json"
        snap.write(str(s_path))
        plan_file = tmp_path / "demote.json"
        report = tmp_path / "report.json"
        argv = ["plan", "--snapshot", str(s_path), "--engine", "local", "--report", str(report)]
        assert cli_main([*argv, "--output", str(plan_file), "--demote-brokers", str(a)]) == 0
        plan = {m.tp: tuple(m.replicas) for m in Plan.read(str(plan_file))}
        # a leads partitions 0..2, c is in sync in each: all three are reordered, c first
        assert plan == {tp: (c, a) for tp in tps[:3]}, plan
        rep = json.loads(report.read_text())
        assert rep["summary"]["moved_replicas"] == 0
        assert rep["leader_balance"]["not_demoted"]["count"] == 0
        # the validator accepts the reorders (rack placement unchanged)
        v = ["validate", "--snapshot", str(s_path), "--reassignment-json-file", str(plan_file)]
        assert cli_main(v) == 0

        evs = execute(bootstrap, plan_file, tmp_path, "demote")
        after = gw.describe_partitions(tps)
        for tp in tps:
            st = after[tp]
            others = [x for x in st.isr if x != a]
            assert not (st.leader == a and others), st  # a leads nothing another can
            assert sorted(st.replicas) == sorted(before[tp].replicas) and not st.reassigning
        assert {
            TopicPartition(e["topic"], e["partition"])
            for e in evs
            if e["event"] == "leader_elected"
        } == set(tps[:3])
    finally:
        gw.close()
        drop(sandbox, topic)


def test_a_cordoned_broker_is_avoided_rejected_and_drained(
    sandbox, bootstrap, topic_name, tmp_path, capsys
):
    (a, c), (b, d) = racks_of(sandbox)[:2]
    x = d  # the broker cordoned
    sandbox.cordon(x, None)  # not cordoned to begin with (deleting an absent config is a no-op)
    topic = topic_name("cordon")
    # x holds nothing of this topic but one partition; the others crowd a, b, c
    assignment = [[a, b], [c, b], [a, b], [c, b], [a, x], [c, b]]
    sandbox.create_topic(topic, assignment=assignment)
    gw = AdminGateway(bootstrap)
    tps = [TopicPartition(topic, p) for p in range(len(assignment))]
    try:
        wait_until(
            lambda: (
                (s := gw.describe_partitions(tps))
                and len(s) == len(tps)
                and all(len(st.isr) == 2 for st in s.values())
            ),
            60,
            "the new topic in sync",
        )
        sandbox.load(topic, 0.05)
        open_path = tmp_path / "open.json"
        take_snapshot(gw, topics=[topic]).write(str(open_path))
        sandbox.cordon(x)  # cordoned.log.dirs=* on x, a dynamic broker config
        wait_until(  # each broker applies a config change once the controller committed it
            lambda: gw.broker_configs([x])[x].get("cordoned.log.dirs") == "*",
            30,
            f"broker {x} reporting cordoned.log.dirs=*",
        )
        s_path = tmp_path / "cordoned.json"
        snap = take_snapshot(gw, topics=[topic])
        snap.write(str(s_path))
        rec = {br.id: br for br in snap.brokers}
        assert rec[x].cordoned_log_dirs == ("*",) and rec[x].cordoned
        assert all(rec[o].cordoned_log_dirs == () for o in (a, b, c)), rec

        # uncordoned, a rebalance sends replicas to x; cordoned, none arrives there
        base = ["plan", "--engine", "local", "--balance", "replicas"]
        free_plan = tmp_path / "free.json"
        assert cli_main([*base, "--snapshot", str(open_path), "--output", str(free_plan)]) == 0
        assert any(
            x in m.replicas and x not in assignment[m.partition] for m in Plan.read(str(free_plan))
        )
        plan_file = tmp_path / "avoid.json"
        assert cli_main([*base, "--snapshot", str(s_path), "--output", str(plan_file)]) == 0
        avoid = json.loads(plan_file.read_text())["partitions"]  # may be empty: nothing fits
        for m in avoid:
            assert not (x in m["replicas"] and x not in assignment[m["partition"]]), m

        # a hand-written plan that puts a replica on x: rejected, naming partition and broker
        bad = tmp_path / "bad.json"
        Plan((Move(TopicPartition(topic, 0), (a, x)),)).write(str(bad))
        capsys.readouterr()
        v = ["validate", "--snapshot", str(s_path), "--reassignment-json-file", str(bad)]
        assert cli_main(v) != 0
        err = capsys.readouterr().err
        assert f"{topic}-0" in err and "cordoned-broker" in err and f"[{x}]" in err, err

        # --drain-cordoned: executed, x holds none of the topic's replicas after
        drain = tmp_path / "drain.json"
        argv = [*base, "--snapshot", str(s_path), "--output", str(drain), "--drain-cordoned"]
        assert cli_main(argv) == 0
        moves = Plan.read(str(drain))
        assert [m.partition for m in moves if x in assignment[m.partition]] == [4]
        evs = execute(bootstrap, drain, tmp_path, "drain")
        after = gw.describe_partitions(tps)
        assert all(x not in st.replicas and not st.reassigning for st in after.values()), after
        copied = [e for e in evs if e["event"] == "completed"]
        assert copied, evs[-5:]
        logs = {
            (i.broker, i.tp): i.size_bytes
            for i in gw.describe_log_dirs([a, b, c])
            if i.tp == TopicPartition(topic, 4)
        }
        assert sum(logs.values()) > 0, logs  # real bytes where the replica went
    finally:
        sandbox.cordon(x, None)  # lift the cordon
        gw.close()
        drop(sandbox, topic)
