"""The sandbox's brokers serve their JMX exporter and the scrape health source reads
real signals from them: every broker measured, produce latency where produce requests went,
bytes in as a rate between two scrapes; a dead endpoint beside them degrades the sample
without hiding what the live ones measured. Cleans up its topic."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pytest
from waits import wait_until

from reassign_kit.health.scrape import parse_page
from reassign_kit.health.sources import open_source

pytestmark = pytest.mark.integration


def _endpoints(sandbox) -> dict[int, str]:
    eps = sandbox.status()["metrics_endpoints"]
    return {int(b): u for b, u in eps.items()}


def test_status_lists_one_exporter_per_broker_serving_its_identity(sandbox):
    eps = _endpoints(sandbox)
    assert set(eps) == set(sandbox.nodes), eps
    for b, url in eps.items():
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=20) as r:
            page = parse_page(r.read().decode(), at=0.0)
        assert page.broker == b  # the rules file's identity series names its broker
    # the CLI prints the same endpoints
    out = subprocess.run(
        [sys.executable, "-m", "reassign_kit.cli", "sandbox", "status", "--dir", str(sandbox.dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["metrics_endpoints"] == {str(b): u for b, u in eps.items()}


def test_scrape_source_reads_every_broker_and_a_dead_endpoint_degrades(sandbox, topic_name):
    eps = _endpoints(sandbox)
    brokers = sorted(sandbox.nodes)
    topic = topic_name("health")
    # one partition led by each broker, two replicas: produce and follower fetches everywhere
    sandbox.create_topic(
        topic, assignment=[[b, brokers[(i + 1) % len(brokers)]] for i, b in enumerate(brokers)]
    )
    src = open_source("scrape:" + ",".join(eps.values()), brokers=brokers, timeout=15)
    try:
        first = src.sample()
        assert first.degraded is None, first.degraded
        sandbox.load(topic, 0.3)  # acks=all

        def measured():
            s = src.sample()
            ok = s.degraded is None and all(
                s.brokers[b].produce_p99_ms is not None and s.brokers[b].bytes_in is not None
                for b in brokers
            )
            return s if ok else None

        s = wait_until(measured, 90, "produce latency and bytes in measured on every broker", 2)
        for b in brokers:
            h = s.brokers[b]
            assert h.request_handler_idle is not None and 0 <= h.request_handler_idle <= 1
            assert h.network_processor_idle is not None
            assert h.under_replicated is not None and h.under_min_isr is not None
            assert h.produce_p99_ms >= h.produce_p50_ms >= 0
            assert h.bytes_in >= 0 and h.bytes_out is not None
        assert s.under_min_isr is not None  # every leader's per-partition series seen
        assert not {tp for tp in s.under_min_isr if tp.topic == topic}
    finally:
        src.close()
        sandbox.admin().delete_topics([topic])

    # one endpoint that nothing serves beside the real ones: degraded, the others measured
    dead = "http://127.0.0.1:9/metrics"
    warned: list[str] = []
    src = open_source(
        "scrape:" + ",".join([*eps.values(), f"99={dead}"]), timeout=15, warn=warned.append
    )
    try:
        s = src.sample()
        assert s.degraded and dead in s.degraded
        assert all(s.brokers[b].network_processor_idle is not None for b in brokers)
        assert s.brokers[99].network_processor_idle is None and s.under_min_isr is None
        assert len(warned) == 1
    finally:
        src.close()
