"""Which broker a slow canary partition is charged to (``probe.per_broker``).

The canary has one partition led by each broker, its followers the next ones (a ring). A
stalled broker slows every partition it is in; a move's source slows the partitions it leads
whose followers fetch from it through the fetchers the move fills. bench-pacing run 17: with
each broker read as the best of the partitions it replicates, the sources read 45-74 ms (each
also replicates a partition whose followers fetch from brokers the move does not read) while
the load's acks=all producers waited 0.8-2.1 s; nothing was slowed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.probe import per_broker

FAST, SLOW = (0.002, 0.010, 0.008), (0.300, 0.900, 0.600)  # p50, p99, p99 low (s)


def ring(n: int) -> dict[int, tuple[int, ...]]:
    """The probe's layout (``Probe._start``): partition i led by broker i, RF min(3, n - 1)."""
    rf = min(3, max(1, n - 1))
    return {i: tuple((i + k) % n for k in range(rf)) for i in range(n)}


def p99s(health: dict) -> dict[int, float]:
    return {b: h.produce_p99_ms for b, h in health.items()}


def test_a_moves_sources_read_slow_when_their_followers_fetchers_are_full():
    # 4 brokers 0..3; a move from 0, 1 into 2, 3: the canary partitions led by 0 ([0, 1, 2])
    # and 1 ([1, 2, 3]) have followers fetching from a source through a full fetcher
    reps = ring(4)
    got = p99s(per_broker(reps, {0: SLOW, 1: SLOW, 2: FAST, 3: FAST}))
    assert got == {0: 900.0, 1: 900.0, 2: 10.0, 3: 10.0}


@settings(max_examples=80, deadline=None)
@given(n=st.integers(3, 9), data=st.data())
def test_a_stalled_broker_slows_itself_only(n, data):
    reps = ring(n)
    stalled = data.draw(st.integers(0, n - 1))
    per_part = {p: SLOW if stalled in r else FAST for p, r in reps.items()}
    got = p99s(per_broker(reps, per_part))
    assert got == {b: 900.0 if b == stalled else 10.0 for b in range(n)}


def test_a_broker_with_no_measured_partition_reads_unmeasured():
    reps = ring(4)
    got = per_broker(reps, {0: FAST})
    assert got[0].produce_p99_ms == 10.0 and got[3].produce_p99_ms is None
    assert got[2].produce_p99_low_ms == 8.0  # in partition 0: its best
