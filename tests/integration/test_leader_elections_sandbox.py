"""Leadership that takes effect, on the real cluster.

(a) A decommission planned by ``reassign_kit.plan`` and executed by a paced run
(``--execute --reassignment-batch-size 4 --incremental``, at most 2 elections per poll): the
topic's leaders start on two brokers only, so the plan's leader balance reorders replicas
and puts new replicas first while the old leader stays in the set — Kafka alone would keep it
leading. Afterwards every moved partition's actual leader is its preferred leader (first
replica), the journal holds the elections (capped per poll) and its leaders check found
none off.

(b) ``reassign-kit plan --demote-brokers B`` executed — by a paced run (elections on by
default) and by the drop-in's single request with ``--elect-leaders`` —: broker B leads no
partition of the topic where another in-sync replica exists, and no byte was copied: every
move only reorders, the replica sets are unchanged and so are the replica logs (the same
brokers, log dirs and sizes; no future log).

Each test deletes its topic. The counts of leaders per broker before and after are written
to ``tests/out/<test>/leaders.json``."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from waits import wait_until

from reassign_kit.api import plan as make_plan
from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.snapshot.snapshot import take_snapshot

pytestmark = pytest.mark.integration


def racks_of(sandbox) -> dict[str, list[int]]:
    by_rack: dict[str, list[int]] = {}
    for b in sorted(sandbox.brokers, key=lambda b: b["id"]):
        by_rack.setdefault(str(b["rack"]), []).append(b["id"])
    assert len(by_rack) == 2 and all(len(v) == 2 for v in by_rack.values()), by_rack
    return by_rack


def states_of(gw: AdminGateway, tps: list[TopicPartition]) -> dict:
    return gw.describe_partitions(tps)


def leader_counts(states) -> dict[int, int]:
    return dict(sorted(Counter(st.leader for st in states.values()).items()))


def wait_led_by_first(gw: AdminGateway, tps: list[TopicPartition], what: str) -> dict:
    """Right after creation, every partition led by its first replica (metadata settled)."""
    return wait_until(
        lambda: (
            (s := states_of(gw, tps))
            and len(s) == len(tps)
            and all(
                st.leader == st.replicas[0] and set(st.isr) == set(st.replicas) for st in s.values()
            )
            and s
        ),
        60,
        what,
    )


def drop(sandbox, topic: str) -> None:
    admin = sandbox.admin()  # keep a reference: the futures die with their client
    for f in admin.delete_topics([topic]).values():
        f.result(60)


def test_a_paced_decommission_leaves_every_moved_partition_led_by_its_preferred_leader(
    sandbox, bootstrap, topic_name, tmp_path, out_dir, monkeypatch
):
    r = racks_of(sandbox)
    (a, c), (b, d) = r.values()  # a, c on one rack; b, d on the other
    # every partition one replica per rack, led by a or b only; d goes away
    assignment = [[a, b], [a, d], [b, a], [b, c]] * 3
    topic = topic_name("elect-decom")
    sandbox.create_topic(topic, assignment=assignment)
    gw = AdminGateway(bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in range(len(assignment))]
        before = wait_led_by_first(gw, tps, "the new topic led by its first replicas")
        sandbox.load(topic, 0.05)
        snap = take_snapshot(gw, topics=[topic])
        result = make_plan(snap, remove_brokers=[d], engine="local")
        plan = result.plan
        plan_file, journal = tmp_path / "plan.json", tmp_path / "run.jsonl"
        plan_file.write_text(plan.to_json())
        assert all(d not in m.replicas for m in plan)
        # the moves after which the old leader stays in the set but is no longer first:
        # Kafka keeps it leading, only an election moves leadership to the new first replica
        needs = [
            m.tp
            for m in plan
            if before[m.tp].leader in m.replicas and before[m.tp].leader != m.replicas[0]
        ]
        assert needs, "the plan must change preferred leaders that Kafka would not move"
        requests: list[int] = []  # each election request's size (the real call, recorded)
        real_elect = AdminGateway.elect_preferred_leaders

        def elect(self, tps):
            tps = list(tps)
            requests.append(len(tps))
            return real_elect(self, tps)

        monkeypatch.setattr(AdminGateway, "elect_preferred_leaders", elect)

        rc = cli_main(
            [
                "--execute",
                "--bootstrap-server", bootstrap,
                "--reassignment-json-file", str(plan_file),
                "--reassignment-batch-size", "4",
                "--incremental",
                "--max-elections-per-poll", "2",
                "--reassignment-poll-interval-ms", "300",
                "--throttle", "50000000",
                "--additional",  # a shared cluster: other tests' moves may be in flight
                "--wait",
                "--journal", str(journal),
                "--rollback-file", str(tmp_path / "rollback.json"),
            ]
        )  # fmt: skip
        assert rc == 0

        after = states_of(gw, tps)
        for m in plan:
            st = after[m.tp]
            assert tuple(st.replicas) == tuple(m.replicas) and not st.reassigning, st
            assert st.leader == m.replicas[0], st  # the actual leader is the preferred one
        evs = read_events(journal)
        elected = [e for e in evs if e["event"] == "leader_elected"]
        assert {TopicPartition(e["topic"], e["partition"]) for e in elected} >= set(needs)
        assert all(e["result"] in ("elected", "not_needed") for e in elected)
        assert requests and max(requests) <= 2, requests  # --max-elections-per-poll 2
        assert sum(requests) == sum(e["result"] == "elected" for e in elected)
        [check] = [e for e in evs if e["event"] == "leaders_checked"]
        assert check["not_preferred"] == 0 and check["checked"] == check["preferred"]
        (out_dir / "leaders.json").write_text(
            json.dumps(
                {
                    "moves": len(plan),
                    "election_requests": requests,
                    "elected": sum(e["result"] == "elected" for e in elected),
                    "not_needed": sum(e["result"] == "not_needed" for e in elected),
                    # moves after which Kafka alone leaves another replica leading
                    "moves_kafka_leaves_off_preferred": len(needs),
                    "moved_led_by_preferred_after": sum(
                        after[m.tp].leader == m.replicas[0] for m in plan
                    ),
                    "leaders_per_broker_before": leader_counts(before),
                    "leaders_per_broker_after": leader_counts(after),
                },
                indent=2,
            )
        )
    finally:
        gw.close()
        drop(sandbox, topic)


def replica_logs(gw: AdminGateway, brokers: list[int], tps: list[TopicPartition]) -> dict:
    return {
        (i.broker, i.tp, i.log_dir, i.is_future): i.size_bytes
        for i in gw.describe_log_dirs(brokers, tps)
    }


@pytest.mark.parametrize("how", ["paced", "legacy"])  # legacy: the drop-in + --elect-leaders
def test_demote_brokers_executed_moves_leadership_and_copies_nothing(
    sandbox, bootstrap, topic_name, tmp_path, out_dir, how
):
    r = racks_of(sandbox)
    (a, c), (b, d) = r.values()
    brokers = sorted([a, b, c, d])
    demoted = a
    # 8 partitions RF 2, one replica per rack; a leads half of them
    assignment = [[a, b], [a, d], [b, a], [c, b], [a, b], [a, d], [d, a], [c, d]]
    topic = topic_name("elect-demote")
    sandbox.create_topic(topic, assignment=assignment)
    gw = AdminGateway(bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in range(len(assignment))]
        before = wait_led_by_first(gw, tps, "the new topic led by its first replicas")
        sandbox.load(topic, 0.02)
        assert leader_counts(before)[demoted] == 4
        logs_before = wait_until(
            lambda: (x := replica_logs(gw, brokers, tps)) and len(x) == 16 and x,
            30,
            "every replica log listed",
        )
        snap = take_snapshot(gw, topics=[topic])
        plan = make_plan(snap, demote_brokers=[demoted], engine="local").plan
        led = {tp for tp in tps if before[tp].leader == demoted}
        assert {m.tp for m in plan} >= led  # the partitions the demoted broker led, reordered
        for m in plan:  # replica order only: nothing to copy
            assert set(m.replicas) == set(before[m.tp].replicas) and m.replicas[0] != demoted
        plan_file = tmp_path / "demote.json"
        plan_file.write_text(plan.to_json())
        common = ["--execute", "--bootstrap-server", bootstrap]
        common += ["--reassignment-json-file", str(plan_file)]
        common += ["--rollback-file", str(tmp_path / "rollback.json")]
        if how == "paced":  # elections on by default; no --wait: the reorders end the run
            argv = [*common, "--journal", str(tmp_path / "run.jsonl"), "--additional"]
            argv += ["--reassignment-poll-interval-ms", "300"]
        else:  # the drop-in's single request, elections opted in
            argv = [*common, "--elect-leaders", "--additional"]
        assert cli_main(argv) == 0

        after = states_of(gw, tps)
        for tp in tps:  # B leads nothing another in-sync replica could lead
            st = after[tp]
            others = [x for x in st.isr if x != demoted]
            assert not (st.leader == demoted and others), st
            assert set(st.replicas) == set(before[tp].replicas) and not st.reassigning, st
        assert demoted not in leader_counts(after)
        assert replica_logs(gw, brokers, tps) == logs_before  # no log grew, none appeared
        if how == "paced":
            evs = read_events(tmp_path / "run.jsonl")
            assert [e["state"] for e in evs if e["event"] == "run_finished"] == ["done"]
            elected = {(e["topic"], e["partition"]) for e in evs if e["event"] == "leader_elected"}
            assert elected >= {(tp.topic, tp.partition) for tp in led}
        (out_dir / "leaders.json").write_text(
            json.dumps(
                {
                    "how": how,
                    "demoted": demoted,
                    "leaders_per_broker_before": leader_counts(before),
                    "leaders_per_broker_after": leader_counts(after),
                },
                indent=2,
            )
        )
    finally:
        gw.close()
        drop(sandbox, topic)
