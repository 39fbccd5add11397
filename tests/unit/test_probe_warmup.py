"""The canary probe's warm-up (bench-pacing on an idle sandbox): the first canary
messages of each partition wait for the producer's connections and the new topic's metadata
(100-235 ms there, against a 16 ms baseline), so counted they made the run's first sample
breach a 50 ms objective and halve every broker's rate 1.2 s into the run. They are not
counted; every later delivery, failed ones at the time they took to fail, is."""

from __future__ import annotations

import threading
import time
from collections import deque

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.probe import WARM_UP, Probe


def _bare_probe(parts: int) -> Probe:
    """The probe's delivery bookkeeping without a cluster (its threads are not started)."""
    p = Probe.__new__(Probe)
    p._lock = threading.Lock()
    p._done = {i: deque() for i in range(parts)}
    p._inflight = {i: {} for i in range(parts)}
    p._errors, p._delivered = {}, {}
    p._delivered_at = 0.0
    return p


@settings(max_examples=60, deadline=None)
@given(
    lat_ms=st.lists(st.floats(1, 500), min_size=WARM_UP, max_size=40),
    fail_at=st.sets(st.integers(0, 39)),
)
def test_the_warm_up_deliveries_are_not_counted(lat_ms, fail_at):
    p = _bare_probe(1)
    now = time.monotonic()
    counted = []
    for seq, ms in enumerate(lat_ms):
        p._inflight[0][seq] = now - ms / 1000
        warm = p._delivered.get(0, 0) >= WARM_UP
        p._on_delivery(0, seq, now - ms / 1000)("timed out" if seq in fail_at else None, None)
        if warm:
            counted.append(ms)
    got = [x * 1000 for _, x in p._done[0]]
    assert len(got) == len(counted)
    assert all(abs(a - b) < 50 for a, b in zip(got, counted, strict=True))  # + time since


def test_a_slow_first_message_does_not_make_the_first_window_slow():
    p = _bare_probe(2)
    t = time.monotonic()
    for part in (0, 1):
        p._on_delivery(part, 0, t - 0.235)(None, None)  # connection + metadata of a new topic
        for seq in range(1, WARM_UP + 20):
            p._on_delivery(part, seq, t - 0.004)(None, None)
    worst = max(x for dq in p._done.values() for _, x in dq)
    assert worst < 0.05, f"a warm-up latency was counted: {worst * 1000:.0f} ms"
