"""Demotion when leadership drifted, on the real cluster.

A topic of RF 3 whose partitions all have broker A first and B second. A is stopped
(controlled shutdown: B, the next in-sync replica, takes over) and started again: A rejoins the
ISR but B keeps leading — B leads partitions it is not the first replica of. The snapshot
records it, ``reassign-kit plan --demote-brokers B`` takes those partitions (their first
replica in the ISR and not B; a list whose first replica stays is left as it is), and a paced
run elects their first replicas: B leads no partition where another in-sync replica exists,
and the replica sets are unchanged.

Kafka's own leader rebalance (``auto.leader.rebalance.enable``, on by default in the sandbox)
would also move leadership back to A, but only at its check, every
``leader.imbalance.check.interval.seconds`` (300 s by default; the test asserts the sandbox's
controllers do not shorten it): the drift is asserted in the snapshot, right before planning,
a few seconds before the run.

The topic is deleted and A is running again at the end, whatever happens."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from waits import wait_until

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.sandbox.processes import pid_alive
from reassign_kit.snapshot.snapshot import Snapshot, take_snapshot

pytestmark = pytest.mark.integration

N = 4


def props(path: str) -> dict[str, str]:
    out = {}
    for line in Path(path).read_text().splitlines():
        if "=" in line and not line.lstrip().startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def drop(sandbox, topic: str) -> None:
    admin = sandbox.admin()
    for f in admin.delete_topics([topic]).values():
        f.result(60)


def test_drifted_leadership_is_demoted(sandbox, bootstrap, topic_name, tmp_path, out_dir):
    for ctrl in sandbox.controllers.values():  # Kafka's own rebalance: at most every 300 s
        cfg = props(ctrl.config)
        assert int(cfg.get("leader.imbalance.check.interval.seconds", "300")) >= 300, cfg
    by_rack: dict[str, list[int]] = {}
    for b in sorted(sandbox.brokers, key=lambda b: b["id"]):
        by_rack.setdefault(str(b["rack"]), []).append(b["id"])
    (a, c), (b, d) = list(by_rack.values())[:2]  # a, c on one rack; b, d on the other
    demoted = b
    assignment = [[a, b, c], [a, b, d]] * (N // 2)  # A first, B second everywhere
    topic = topic_name("demote-drift")
    sandbox.create_topic(topic, assignment=assignment)
    gw = AdminGateway(bootstrap)
    tps = [TopicPartition(topic, p) for p in range(N)]
    try:
        wait_until(
            lambda: (
                (s := gw.describe_partitions(tps))
                and len(s) == N
                and all(st.leader == a and len(st.isr) == 3 for st in s.values())
            ),
            60,
            "the new topic led by its first replica",
        )
        sandbox.load(topic, 0.02)
        sandbox.stop_broker(a)  # controlled shutdown: B, next in the ISR, takes over
        sandbox.start_broker(a)
        gw.close()  # its connection to A died with A: a new client for the rest
        gw = AdminGateway(bootstrap)
        before = wait_until(
            lambda: (
                (s := gw.describe_partitions(tps))
                and len(s) == N
                and all(len(st.isr) == 3 and not st.reassigning for st in s.values())
                and s
            ),
            120,
            f"broker {a} back in every ISR",
        )
        snap = take_snapshot(gw, topics=[topic])
        s_path = tmp_path / "snapshot.json"
        snap.write(str(s_path))
        recorded = Snapshot.read(str(s_path)).by_tp()
        # the drift, as the snapshot records it: B leads, A is first, all in sync
        drifted = [tp for tp in tps if recorded[tp].leader == demoted]
        assert drifted == tps, {tp: (recorded[tp].leader, recorded[tp].replicas) for tp in tps}
        assert all(recorded[tp].replicas[0] == a for tp in tps)
        assert all(set(recorded[tp].isr) == {a, b, recorded[tp].replicas[2]} for tp in tps)

        plan_file = tmp_path / "demote.json"
        argv = ["plan", "--snapshot", str(s_path), "--engine", "local"]
        assert cli_main([*argv, "--output", str(plan_file), "--demote-brokers", str(b)]) == 0
        plan = {m.tp: tuple(m.replicas) for m in Plan.read(str(plan_file))}
        assert set(plan) == set(tps)  # every partition B leads, though B is first in none
        for tp, new in plan.items():
            assert sorted(new) == sorted(before[tp].replicas) and new[0] != demoted
            assert new[0] in recorded[tp].isr
        # both ways a drifted partition is demoted: its first replica stays and so does its list
        # (a run finds it complete at start and elects it), or another replica goes first
        kept = [tp for tp in tps if plan[tp] == tuple(before[tp].replicas)]
        assert kept and len(kept) < N, plan

        journal = tmp_path / "run.jsonl"
        rc = cli_main(
            [
                "--execute",
                "--bootstrap-server", bootstrap,
                "--reassignment-json-file", str(plan_file),
                "--rollback-file", str(tmp_path / "rollback.json"),
                "--journal", str(journal),
                "--additional",  # a shared cluster: other tests' moves may be in flight
                "--reassignment-poll-interval-ms", "300",
            ]
        )  # fmt: skip
        assert rc == 0

        after = gw.describe_partitions(tps)
        for tp in tps:
            st = after[tp]
            others = [x for x in st.isr if x != demoted]
            assert not (st.leader == demoted and others), st  # B leads nothing others can
            assert st.leader == plan[tp][0], st
            assert sorted(st.replicas) == sorted(before[tp].replicas) and not st.reassigning, st
        evs = read_events(journal)
        assert [e["state"] for e in evs if e["event"] == "run_finished"] == ["done"]
        elected = {
            TopicPartition(e["topic"], e["partition"])
            for e in evs
            if e["event"] == "leader_elected" and e["result"] == "elected"
        }
        assert elected == set(tps)
        (out_dir / "leaders.json").write_text(
            json.dumps(
                {
                    "demoted": demoted,
                    "stopped_and_restarted": a,
                    "before": {
                        str(tp): [before[tp].leader, list(before[tp].replicas)] for tp in tps
                    },
                    "plan": {str(tp): list(plan[tp]) for tp in tps},
                    "after": {str(tp): after[tp].leader for tp in tps},
                },
                indent=2,
            )
        )
    finally:
        if not pid_alive(sandbox.node(a).pid):  # stopped and not started again
            sandbox.start_broker(a)
        gw.close()  # its connection to A died with A: a new client for the rest
        gw = AdminGateway(bootstrap)
        gw.close()
        drop(sandbox, topic)
