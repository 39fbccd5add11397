"""The adaptive pace on the real sandbox: the probe measures every broker through
its canary topic and sees a partition under min ISR through the Admin API — with its eligible
leader replicas (KIP-966) read through DescribeTopicPartitions, as the 4.3.1 brokers finalize
``eligible.leader.replicas.version`` by default — and deletes its canary at the end; a probe that cannot reach a cluster is degraded, never raising; and one
``--pace adaptive`` run through the CLI pauses its submissions (printing the decision on one
line) while a partition outside the plan is under min ISR, resumes once it is back, finishes,
and leaves neither a throttle nor a canary topic.

The heavy comparisons (a ladder of static rates against the adaptive run under a produce
load) are in ``make bench-pacing``, not here."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from test_paced import paced_argv, run_cli, topic_on
from waits import wait_until

from reassign_kit.cluster import capabilities as caps
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.cluster.probe import CANARY_PREFIX, Probe, probe_for
from reassign_kit.health.signals import PartitionIsr
from reassign_kit.model import TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.throttles import configs as thr

pytestmark = pytest.mark.integration


def canaries(sandbox) -> list[str]:
    return [
        t for t in sandbox.admin().list_topics(timeout=10).topics if t.startswith(CANARY_PREFIX)
    ]


def adaptive_run(tmp_path, plan: dict, *extra: str) -> tuple:
    """(plan file, journal, argv) of a ``--pace adaptive`` CLI run of ``plan`` in the test's
    folder."""
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    journal = str(tmp_path / "run.jsonl")
    argv = paced_argv(str(plan_path), journal, tmp_path, "--pace", "adaptive", *extra)
    return plan_path, journal, argv


def set_min_isr(sandbox, topic: str, n: int) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    res = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("min.insync.replicas", str(n), incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin = sandbox.admin()  # kept: the futures die with their client
    admin.incremental_alter_configs([res])[res].result(30)


def measured(probe, ids, what: str):
    """The probe's first sample with a p99 and its bound for every broker of ``ids``."""
    return wait_until(
        lambda: (
            (x := probe.sample())
            and all(
                x.brokers[b].produce_p99_ms is not None
                and x.brokers[b].produce_p99_low_ms is not None
                for b in ids
            )
            and x
        ),
        60,
        what,
    )


def delete_topic(sandbox, topic: str) -> None:
    admin = sandbox.admin()
    admin.delete_topics([topic])[topic].result(30)


def test_probe_measures_every_broker_sees_under_min_isr_and_deletes_its_canary(sandbox, topic_name):
    ids = sorted(b["id"] for b in sandbox.brokers)
    short = topic_name("short")  # RF 2 and min.insync.replicas 3: always under min ISR
    sandbox.create_topic(short, assignment=[ids[:2]], configs={"min.insync.replicas": "3"})
    gw = AdminGateway(sandbox.bootstrap_servers)
    # Kafka 4.3.1 finalizes eligible.leader.replicas.version 1 at format time (the default for
    # a new cluster since 4.1): the probe reads ISR + ELR through DescribeTopicPartitions
    assert gw.capabilities().has(caps.ELR) and gw.capabilities().max_version(75) is not None
    probe = probe_for(gw)
    try:
        admin = sandbox.admin()
        md = wait_until(  # a broker's metadata may lag the controller's for a moment
            lambda: admin.list_topics(timeout=10).topics.get(probe.topic),
            30,
            "the canary topic in the metadata",
        )
        assert sorted(p.leader for p in md.partitions.values()) == ids  # one led by each
        s = measured(probe, ids, "the probe measured every broker")
        for b in ids:
            h = s.brokers[b]
            assert 0 < h.produce_p50_ms <= h.produce_p99_ms
        assert s.degraded is None and s.source == "probe"
        assert TopicPartition(short, 0) in s.under_min_isr
        assert not any(tp.topic.startswith(CANARY_PREFIX) for tp in s.under_min_isr)
        # the ELR view: both replicas in the ISR, none out of it: 0 eligible, known (not None)
        assert s.elr_unknown is None and s.isr is not None
        assert s.isr[TopicPartition(short, 0)] == PartitionIsr(2, 3, 0, 0)
    finally:
        probe.close()
        gw.close()
        delete_topic(sandbox, short)
    assert probe.deleted
    assert probe.topic not in canaries(sandbox)


def test_a_kept_canary_is_made_once_reused_and_left(sandbox, topic_name):
    """``--health-source probe:TOPIC``: the first probe makes the topic (one partition led by
    each broker), its close leaves it; the next probe creates nothing and measures every
    broker on it; a topic laid out by someone else is measured as it is."""
    ids = sorted(b["id"] for b in sandbox.brokers)
    kept = topic_name("kept-canary")
    gw = AdminGateway(sandbox.bootstrap_servers)
    try:
        first = probe_for(gw, topic=kept)
        first.close()
        assert first.keep and not first.deleted
        admin = sandbox.admin()
        md = admin.list_topics(timeout=10).topics[kept]
        assert sorted(p.leader for p in md.partitions.values()) == ids
        second = probe_for(gw, topic=kept)
        try:
            s = measured(second, ids, "the second probe measured every broker on its canary")
            assert s.degraded is None
            assert not second._created  # reused: nothing made, nothing to delete
            for b in ids:
                h = s.brokers[b]
                assert 0 < h.produce_p99_low_ms <= h.produce_p99_ms
        finally:
            second.close()
        assert kept in admin.list_topics(timeout=10).topics
    finally:
        gw.close()
        delete_topic(sandbox, kept)


def test_a_probe_that_cannot_reach_a_cluster_is_degraded_and_never_raises():
    probe = Probe("127.0.0.1:1", timeout_s=2.0)
    try:
        s = probe.sample()
    finally:
        probe.close()
    assert s.degraded and "cannot start" in s.degraded
    assert s.under_min_isr is None and all(h.produce_p99_ms is None for h in s.brokers.values())


def test_adaptive_run_pauses_while_a_partition_outside_the_plan_is_under_min_isr(
    sandbox, topic_name, tmp_path
):
    ids = sorted(b["id"] for b in sandbox.brokers)
    name, short = topic_name("pace"), topic_name("short")
    tps = topic_on(sandbox, name, [ids[0:2], ids[1:3]], 2)
    sandbox.create_topic(short, assignment=[ids[2:4]], configs={"min.insync.replicas": "3"})
    plan = {
        "version": 1,
        "partitions": [
            {"topic": name, "partition": 0, "replicas": [ids[2], ids[3]]},
            {"topic": name, "partition": 1, "replicas": [ids[3], ids[0]]},
        ],
    }
    plan_path, journal, argv = adaptive_run(
        tmp_path,
        plan,
        *("--reassignment-batch-size", "1", "--incremental", "--throttle", "4000000"),
        *("--slo-produce-p99", "+5000ms", "--throttle-floor", "500000"),
    )
    proc = run_cli(sandbox.bootstrap_servers, *argv)
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "pace pause:" in line:
                break
        assert any(
            "pace pause:" in x and f"{short}-0" in x and "none with eligible leaders" in x
            for x in lines
        ), "".join(lines)
        ev = read_events(journal)
        assert not [e for e in ev if e["event"] == "submitted"]  # nothing sent while paused
        set_min_isr(sandbox, short, 1)  # the partition is back over its min ISR
        out, _ = proc.communicate(timeout=120)
        lines.append(out)
    finally:
        if proc.poll() is None:  # SIGTERM: the run stops and deletes its canary, then kill
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for e in read_events(journal):  # what the run did, for the failure's report
                if e["event"] != "sample":
                    print(json.dumps(e)[:400])
        delete_topic(sandbox, short)
    text = "".join(lines)
    try:
        ev = read_events(journal)
        with AdminGateway(sandbox.bootstrap_servers) as gw:
            have = thr.summary(thr.current_throttles(gw, [name], ids))
    finally:
        subprocess.run(  # the moves put back where they were, the topic deleted
            [
                sys.executable,
                "-m",
                "reassign_kit.cli",
                "--bootstrap-server",
                sandbox.bootstrap_servers,
                "--cancel",
                "--reassignment-json-file",
                str(plan_path),
                "--journal",
                journal,
            ],
            capture_output=True,
            timeout=120,
        )
        delete_topic(sandbox, name)
    assert proc.returncode == 0, text
    assert "pace resume:" in text and "pace adaptive: objective produce p99 +5000ms" in text
    kinds = [e.get("action") for e in ev if e["event"] == "pace_decision"]
    assert kinds[:1] == ["pause"] and "resume" in kinds and "baseline" in kinds
    # the pause's ISR view with ELR read from the 4.3.1 brokers (DescribeTopicPartitions)
    pause = next(e for e in ev if e.get("action") == "pause")
    assert pause["signals"]["with_elr"] == 0 and "elr_unknown" not in pause["signals"]
    assert pause["signals"]["partitions"][f"{short}-0"] == {"isr": 2, "min_isr": 3, "elr": 0}
    assert "none with eligible leaders" in pause["reason"]
    assert any(
        e["event"] == "pace_sample" and e.get("under_min_isr_with_elr") == 0 for e in ev
    )  # the samples while paused count them too (the metrics' source)
    done = {TopicPartition(e["topic"], e["partition"]) for e in ev if e["event"] == "completed"}
    assert done == set(tps)
    assert not canaries(sandbox)
    assert have["broker_rates"] == {} and have["leader_replicas"] == {}


def test_a_canary_left_by_a_sigkilled_run_is_deleted_by_its_resume_and_cancel(
    sandbox, topic_name, tmp_path
):
    """An adaptive run SIGKILLed (a real subprocess SIGKILL) with its probe up left its
    canary topic (RF 3, a partition on every broker) on the cluster for good: the run's
    close deletes it, and a killed run has none; the resume made a canary of its own beside
    it. The run now journals the canary's name before making it (``probe_canary``); the
    resume deletes what the killed run left (``probe_canary_deleted``, orphan) and so does
    ``--cancel --journal``. Killed twice here: the resume deletes the first run's canary;
    the cancel the resumed run's."""
    import os
    import signal

    ids = sorted(b["id"] for b in sandbox.brokers)
    name = topic_name("orphan")
    topic_on(sandbox, name, [ids[0:2]], 8)
    plan = {"version": 1, "partitions": [{"topic": name, "partition": 0, "replicas": ids[2:4]}]}
    plan_path, journal, argv = adaptive_run(
        tmp_path, plan, "--throttle", "100000", "--slo-produce-p99", "5000ms"
    )
    argv += ["--throttle-floor", "50000"]

    def made(after: int = 0) -> str:
        """The canary the run journaled (after event ``after``), once it exists."""
        found: list[str] = []

        def up() -> bool:
            ev = read_events(journal) if os.path.exists(journal) else []
            found[:] = [e["canary"] for e in ev[after:] if e["event"] == "probe_canary"]
            return bool(found) and found[-1] in canaries(sandbox)

        wait_until(up, timeout=60, what="the run's canary topic journaled and made")
        return found[-1]

    def kill(proc: subprocess.Popen) -> None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)

    procs: list[subprocess.Popen] = []
    try:
        procs.append(run_cli(sandbox.bootstrap_servers, *argv))
        first = made()
        kill(procs[-1])
        assert first in canaries(sandbox)  # what a killed run leaves
        cut = len(read_events(journal))
        procs.append(run_cli(sandbox.bootstrap_servers, *argv, "--resume"))
        second = made(cut)
        kill(procs[-1])
        ev = read_events(journal)[cut:]
        assert {"event": "probe_canary_deleted", "canary": first, "orphan": True}.items() <= next(
            e for e in ev if e["event"] == "probe_canary_deleted"
        ).items()
        assert first not in canaries(sandbox) and second in canaries(sandbox)
        out = subprocess.run(
            [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server"]
            + [sandbox.bootstrap_servers, "--cancel", "--journal", journal]
            + ["--reassignment-json-file", str(plan_path)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert f"Deleted the probe's canary topic {second} the journaled run left." in out.stdout
        assert not canaries(sandbox)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(30)
        subprocess.run(
            [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server"]
            + [sandbox.bootstrap_servers, "--cancel", "--journal", journal]
            + ["--reassignment-json-file", str(plan_path)],
            capture_output=True,
            timeout=120,
        )
        for t in canaries(sandbox):  # a failure above must not leave one for the next test
            delete_topic(sandbox, t)
        delete_topic(sandbox, name)
