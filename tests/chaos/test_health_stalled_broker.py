"""Health signals while a broker is stalled (``make chaos``): a broker frozen by
SIGSTOP (a stand-in for a long GC pause) drops out of its followers' ISR, and the leaders'
exporters flag those partitions under min ISR; the frozen broker's own exporter is a real slow
endpoint: its values are None, the sample degraded, and no partition set is claimed. The
broker is thawed (SIGCONT) in ``finally`` and the test waits for the ISR to heal."""

from __future__ import annotations

import os
import signal
import time

import pytest

from reassign_kit.health.sources import open_source
from reassign_kit.model import TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.chaos]


def wait_until(pred, timeout: float, what: str, every: float):
    """The first truthy ``pred()``; AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not (got := pred()):
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(every)
    return got


def test_a_stalled_follower_is_seen_under_min_isr_and_its_exporter_as_slow(sandbox, topic_name, gw):
    b = sorted(sandbox.nodes)
    frozen = b[-1]
    eps = {int(k): v for k, v in sandbox.status()["metrics_endpoints"].items()}
    t = topic_name("stall")
    sandbox.create_topic(
        t, assignment=[[b[0], frozen], [b[1], frozen]], configs={"min.insync.replicas": "2"}
    )
    tps = {TopicPartition(t, 0), TopicPartition(t, 1)}
    leaders = open_source(f"scrape:{b[0]}={eps[b[0]]},{b[1]}={eps[b[1]]}", timeout=5)
    everyone = open_source("scrape:" + ",".join(eps.values()), timeout=2, warn=lambda m: None)
    pid = sandbox.nodes[frozen].pid
    assert pid
    try:
        s = leaders.sample()
        assert s.under_min_isr is not None and not (s.under_min_isr & tps)
        assert everyone.sample().degraded is None  # it learns which exporter is which broker
        os.kill(pid, signal.SIGSTOP)

        def flagged():
            s = leaders.sample()
            return s if s.under_min_isr is not None and tps <= s.under_min_isr else None

        s = wait_until(flagged, 90, "both partitions under min ISR on their leaders", 2)
        assert s.degraded is None
        assert all(s.brokers[x].under_min_isr >= 1 for x in b[:2])
        # the frozen broker's exporter does not answer: not measured, never "healthy" (its
        # broker known from the earlier sample)
        s = everyone.sample()
        assert s.degraded and eps[frozen] in s.degraded and "timeout" in s.degraded
        h = s.brokers[frozen]
        assert h.produce_p99_ms is None and h.request_handler_idle is None
        assert s.under_min_isr is None
    finally:
        os.kill(pid, signal.SIGCONT)
        leaders.close()
        everyone.close()

    def healed():
        st = gw.describe_partitions(sorted(tps))
        return all(frozen in st[tp].isr for tp in tps)

    wait_until(healed, 120, "the thawed broker back in the ISR", 1)
    sandbox.admin().delete_topics([t])
