"""Whether the moves through a broker copy at their rate (pacing/copying.py), from the bytes
the run's progress samples read: the adaptive pace's evidence for more moves at once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.model import TopicPartition
from reassign_kit.pacing.copying import OVER_BOUND, RATE_BOUND, Copying, CopyRates

TP = TopicPartition
MB = 1_000_000
RATES = {b: 8 * MB for b in range(4)}


def move(p: int, copied: int | None, leader: int = 0) -> Copying:
    """A move of partition ``p`` from (leader, 1) to 2, 3: every new replica fetches from the
    leader, whose rate carries both."""
    return Copying(TP("t", p), leader, (2, 3), (leader, 1, 2, 3), copied)


def test_a_copy_at_its_rate_is_bound_and_one_short_of_it_is_not():
    """One move whose leader sent its whole rate (8 MB/s: 4 to each new replica) over the 5 s
    between two readings: every broker it goes through is bound (another move through them
    adds bytes where the rate allows). The same move at a quarter of that (the disks bound
    it: 1 MB/s per new replica) leaves no broker bound."""
    c = CopyRates()
    assert c.read([move(0, 0)], 1.0, RATES) == frozenset()  # one reading: no interval yet
    assert c.read([move(0, 40 * MB)], 6.0, RATES) == {0, 1, 2, 3}
    assert c.flows[0] == 8 * MB and c.flows[2] == 4 * MB
    slow = CopyRates()
    slow.read([move(0, 0)], 1.0, RATES)
    assert slow.read([move(0, 10 * MB)], 6.0, RATES) == frozenset()


def test_the_first_reading_counts_from_the_moves_submissions():
    """The run's first progress sample comes a poll after its first moves (1 s), the second
    an interval later (6 s): read against their submissions (bytes then none) the first is
    evidence, 5 s sooner. A move submitted within an interval counts its bytes over its own
    time since, not the whole interval (a second's bytes over 5 s read a fifth of its rate).
    A move with no submission time counts for nothing until a second reading."""
    c = CopyRates()
    at = Copying(TP("t", 0), 0, (2, 3), (0, 1, 2, 3), 8 * MB, since=0.0)
    assert c.read([at], 1.0, RATES) == {0, 1, 2, 3}
    assert c.flows[0] == 8 * MB
    short = CopyRates()
    half = Copying(TP("t", 0), 0, (2, 3), (0, 1, 2, 3), 4 * MB, since=0.0)
    assert short.read([half], 1.0, RATES) == frozenset()  # the disks bound it: half its rate
    late = Copying(TP("t", 1), 1, (2, 3), (1, 0, 2, 3), 8 * MB, since=5.0)
    assert short.read([half, late], 6.0, RATES) == {1, 0, 2, 3}  # 8 MB in its 1 s
    assert short.flows[1] == 8 * MB
    unknown = CopyRates()
    assert unknown.read([move(0, 8 * MB)], 1.0, RATES) == frozenset()


def test_bytes_past_the_rate_are_the_quotas_credit_not_the_rate_binding():
    """A move that moved well past its rate (the sandbox's first reading, half a second after
    the submission, read leaders at up to 3.7x the rate) was let through by its quota's
    credit or the page cache: no evidence that the rate binds, so no cap rises on it, though
    its new replicas took a share within their rates. Within a fifth over the rate it still
    counts."""
    c = CopyRates()
    burst = Copying(TP("t", 0), 0, (2, 3), (0, 1, 2, 3), 13 * MB // 2, since=0.0)
    assert c.read([burst], 0.5, RATES) == frozenset()  # 13 MB/s at a rate of 8: 1.6x
    assert c.flows[0] == 13 * MB
    near = CopyRates()
    over = Copying(TP("t", 0), 0, (2, 3), (0, 1, 2, 3), 9 * MB, since=0.0)
    assert near.read([over], 1.0, RATES) == {0, 1, 2, 3}  # 1.125x


def test_the_evidence_holds_between_readings_and_a_new_move_has_no_rate_yet():
    """A poll without a new reading (the same time) keeps the last evidence; a move first
    read in this interval counts for nothing (its bytes may predate the interval); a move not
    read yet (None) is skipped."""
    c = CopyRates()
    c.read([move(0, 0), move(1, None)], 1.0, RATES)
    assert c.read([move(0, 40 * MB), move(1, 0)], 6.0, RATES) == {0, 1, 2, 3}
    assert c.read([move(0, 40 * MB)], 6.0, RATES) == {0, 1, 2, 3}  # no new reading
    # move 0 ended; move 2 (led by 1) first read now, with bytes from before this interval
    assert c.read([move(2, 80 * MB, leader=1), move(1, 5 * MB)], 11.0, RATES) == frozenset()


def test_no_move_in_flight_leaves_no_evidence_for_the_next():
    """Once no move is in flight (the run paused, or between waves) the evidence of the moves
    gone is dropped: the next moves' caps rise on their own bytes, not on those."""
    c = CopyRates()
    c.read([move(0, 0)], 1.0, RATES)
    assert c.read([move(0, 40 * MB)], 6.0, RATES) == {0, 1, 2, 3}
    assert c.read([], 6.0, RATES) == frozenset()
    assert c.read([move(1, None)], 6.0, RATES) == frozenset()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0, 20)), min_size=1, max_size=6))
def test_bound_only_where_an_end_moved_its_share_of_the_rate(moves):
    """Over any moves (leader, bytes/s per new replica): a broker is bound exactly when a move
    through it has an end (its leader: the sum of its moves' bytes; a new replica: its share)
    that moved at least ``RATE_BOUND`` of its rate, and none of its ends past ``OVER_BOUND``
    of its own."""
    c = CopyRates()
    ms = [
        Copying(TP("t", i), ld, ((ld + 2) % 4,), (ld, (ld + 2) % 4), 0)
        for i, (ld, _) in enumerate(moves)
    ]
    c.read(ms, 0.0, RATES)
    later = [
        Copying(m.tp, m.leader, m.adding, m.brokers, int(mbps * MB * 5))
        for m, (_, mbps) in zip(ms, moves, strict=True)
    ]
    bound = c.read(later, 5.0, RATES)
    out: dict[int, float] = {}
    for m in later:
        assert m.copied is not None and m.leader is not None
        for b in (m.leader, *m.adding):
            out[b] = out.get(b, 0.0) + m.copied / 5.0
    hot = {b for b, f in out.items() if f >= RATE_BOUND * RATES[b]}
    past = {b for b, f in out.items() if f > OVER_BOUND * RATES[b]}
    assert bound == {
        b
        for m in later
        if hot & {m.leader, *m.adding} and not past & {m.leader, *m.adding}
        for b in m.brokers
    }
