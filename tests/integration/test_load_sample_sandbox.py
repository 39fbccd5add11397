"""On the sandbox: ``snapshot --sample-load`` against a produce and consume load this test
drives itself. Per partition the sampler's produce and fetch rates must be within 10% of what
the test's producer and consumers did over the sampler's own window, and it must count the
groups reading each partition."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from traffic import Traffic

from reassign_kit.snapshot.snapshot import Snapshot

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).parent / "reassign-kit")
OUT = Path(__file__).parent.parent / "out" / "load_sample"
MESSAGE = 4000  # bytes: a record's own overhead (tens of bytes) stays under 2%


def _committed(bootstrap: str, groups: list[str], topic: str, timeout: float = 30) -> None:
    """Wait until every group has committed on the topic (the sample starts after)."""
    from reassign_kit.cluster.admin import AdminGateway

    with AdminGateway(bootstrap) as gw:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if all(any(tp.topic == topic for tp in gw.group_offsets(g)) for g in groups):
                return
            time.sleep(0.5)
    raise AssertionError(f"groups {groups} committed nothing on {topic} within {timeout}s")


@pytest.mark.long  # a make test worker died at its end once (cause not found): make long runs it
def test_sampled_rates_match_the_load_the_test_drove(sandbox, bootstrap, topic_name, tmp_path):
    topic = topic_name("load")
    sandbox.create_topic(topic, partitions=4, rf=2)
    rates = {0: 10.0, 1: 20.0, 2: 30.0, 3: 40.0}  # messages/s, each partition its own
    groups = {topic + "-all": None, topic + "-half": [0, 1]}
    out = tmp_path / "snap.json"
    with Traffic(bootstrap, topic, rates, MESSAGE, groups, max_seconds=90) as load:
        _committed(bootstrap, list(groups), topic)
        proc = subprocess.run(
            [CLI, "snapshot", "--bootstrap-server", bootstrap, "--topics", topic]
            + ["--sample-load", "10s", "--output", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert load.errors == []
    snap = Snapshot.read(str(out))
    assert snap.load is not None and snap.load.unread == (), snap.load
    t0, t1 = snap.load.started, snap.load.started + snap.load.seconds
    seen = json.loads(out.read_text())["load"]
    assert seen["source"] == "sample"
    errors: dict[str, dict[str, float]] = {}
    for p in snap.partitions:
        assert p.load is not None, p.tp
        msgs, sent = load.produced(p.partition, t0, t1)
        fetched = sum(load.consumed(g, p.partition, t0, t1)[1] for g in groups)
        readers = sum(1 for g, parts in groups.items() if parts is None or p.partition in parts)
        span = t1 - t0
        errors[str(p.tp)] = {
            "produce": p.load.produce_bytes_s / (sent / span) - 1,
            "fetch": p.load.fetch_bytes_s / (fetched / span) - 1,
        }
        assert p.load.produce_msgs_s == pytest.approx(msgs / span, rel=0.10), p.tp
        assert p.load.produce_bytes_s == pytest.approx(sent / span, rel=0.10), p.tp
        assert p.load.fetch_bytes_s == pytest.approx(fetched / span, rel=0.10), p.tp
        assert p.load.consumer_groups == readers, p.tp
        assert p.load.growth_bytes_s == pytest.approx(sent / span, rel=0.10), p.tp
    OUT.mkdir(parents=True, exist_ok=True)  # the relative errors, for the record
    (OUT / "errors.json").write_text(json.dumps(errors, indent=1))


@pytest.mark.long
def test_a_stopped_broker_leaves_every_partition_measured_on_its_leader(
    sandbox, bootstrap, topic_name
):
    """A broker down while the load is sampled: it is out of the cluster's metadata, every
    partition it held is led elsewhere, and the sample reads each partition on its (live)
    leader: every partition measured, nothing named unread, no error."""
    from reassign_kit.api import take_snapshot

    topic = topic_name("load-down")
    sandbox.create_topic(topic, partitions=4, rf=2)
    victim = max(b["id"] for b in sandbox.brokers)
    sandbox.stop_broker(victim)
    try:
        snap, _ = take_snapshot(bootstrap, topics=[topic], sample_load=3)
    finally:
        sandbox.start_broker(victim)
    assert snap.load is not None and snap.load.unread == (), snap.load
    assert all(p.load is not None for p in snap.partitions)
    assert all(p.leader != victim for p in snap.partitions)
