"""The completion lag the run measures (seen in bench_eta): from when a sample
saw a replica full to when the run saw its move complete, the last byte placed halfway since
the sample before. A move submitted after that sample got no byte before its submission: the
drain's batches of 3 on the sandbox submitted a 1 MB move 1.4 s after a sample and 0.6 s
before the next one, which saw it full; its completion 0.5 s later read as a lag of 1.21 s for
0.8 s, and the model counted the excess at every batch boundary left (the ETA 1.0-1.5 s long
from then on: median error 16.3% -> 12.4% replayed on that journal, bench/eta_replay.py)."""

from __future__ import annotations

import pytest

from reassign_kit.eta.lag import LagMeter, full_since
from reassign_kit.model import TopicPartition as TP

MB = 1 << 20


def test_a_step_submitted_since_the_sample_before_got_its_bytes_after_its_submission():
    # the sandbox's case: samples at 6.94 and 8.32, the move submitted at 7.75, completed 8.84
    at = full_since(8.32, 6.94, 7.75)
    assert at == pytest.approx((7.75 + 8.32) / 2)
    assert 8.84 - at == pytest.approx(0.805)  # the lag (was 8.84 - 7.63 = 1.21 s)


def test_a_step_in_flight_before_the_sample_before_is_placed_halfway_between_samples():
    assert full_since(12.0, 11.0, 3.0) == pytest.approx(11.5)
    assert full_since(12.0, 11.0, None) == pytest.approx(11.5)  # (no submission known)
    assert full_since(12.0, 12.0, 11.9) == pytest.approx(12.0)  # the first sample: now
    # never after the sample that saw it full (a clock that went back)
    assert full_since(12.0, 11.0, 12.5) == pytest.approx(12.0)


# ------------------------------------------------------------ every step counts (LagMeter)


def test_a_step_completing_between_samples_counts_its_lag_from_its_bytes():
    """Seen copying at two samples (2 MiB then 0.2 MiB left: 1.8 MiB/s), completed 0.3 s
    after the second: its last byte came 0.11 s after that sample, its lag is 0.19 s. Before,
    a step no sample saw full counted no lag at all."""
    m = LagMeter()
    m.sampled(10.0, 9.0, {TP("t", 0): (1, 2 * MB, 9.5)})
    m.sampled(11.0, 10.0, {TP("t", 0): (1, 0.2 * MB, 9.5)})
    assert m.landed(TP("t", 0), 11.3) == pytest.approx(0.3 - 0.2 / 1.8)
    assert m.lags == [pytest.approx(0.3 - 0.2 / 1.8)]


def test_the_lag_is_not_biased_toward_the_steps_a_sample_saw_full():
    """bench_eta's drains measured 0.8-1.2 s where the steps completed 0.1-0.5 s after their
    last byte: only a step whose lag outlasted a sample was ever seen full, so only the long
    lags were counted. Three steps with a 0.2 s lag complete between samples, one with a 1.2 s
    lag is seen full: the median is the short lag (it was the long one)."""
    m = LagMeter()
    t = 0.0
    for p in range(3):  # each at 1 MiB/s, its last byte 0.5 s after a sample, done 0.2 s later
        tp = TP("t", p)
        m.sampled(t, t - 1, {tp: (1, 1.5 * MB, t - 1)})
        m.sampled(t + 1, t, {tp: (1, 0.5 * MB, t - 1)})
        assert m.landed(tp, t + 1.7) == pytest.approx(0.2)
        t += 2
    tp = TP("t", 9)
    m.sampled(t, t - 1, {tp: (1, 1.5 * MB, t - 1)})
    m.sampled(t + 1, t, {tp: (1, 0.5 * MB, t - 1)})
    m.sampled(t + 2, t + 1, {tp: (1, 0.0, t - 1)})  # full: its last byte at t + 1.5
    assert m.landed(tp, t + 2.7) == pytest.approx(1.2)
    tail, spread = m.tail(0.5, False, t + 3)
    assert tail == pytest.approx(0.2) and spread == pytest.approx(0.0)


def test_a_step_seen_full_takes_the_later_placement_of_its_last_byte():
    """Seen full at 12 (the sample before at 11): halfway says 11.5; its bytes (0.9 MiB left
    at 11, 1 MiB/s) say 11.9: the lag counts from 11.9. A sample reads a follower's log a
    fetch behind at most, so bytes never place the last byte too late by more than a fetch."""
    m = LagMeter()
    m.sampled(10.0, 9.0, {TP("t", 0): (1, 1.9 * MB, 9.0)})
    m.sampled(11.0, 10.0, {TP("t", 0): (1, 0.9 * MB, 9.0)})
    m.sampled(12.0, 11.0, {TP("t", 0): (1, 0.0, 9.0)})
    assert m.landed(TP("t", 0), 12.5) == pytest.approx(0.6)
    # and halfway when it is the later one (0.1 MiB left at 11: 11.1)
    m.sampled(20.0, 19.0, {TP("t", 1): (1, 1.1 * MB, 19.0)})
    m.sampled(21.0, 20.0, {TP("t", 1): (1, 0.1 * MB, 19.0)})
    m.sampled(22.0, 21.0, {TP("t", 1): (1, 0.0, 19.0)})
    assert m.landed(TP("t", 1), 22.5) == pytest.approx(1.0)


def test_nothing_places_the_last_byte_of_a_step_seen_once_no_lag_is_made_up():
    m = LagMeter()
    m.sampled(10.0, 9.0, {TP("t", 0): (1, 1 * MB, 9.8)})  # one sample: no rate yet
    assert m.landed(TP("t", 0), 10.6) is None and m.lags == []
    assert m.tail(0.5, False, 11.0) == (0.25, 0.0)  # half a poll until a lag is measured


def test_a_kip435_step_does_not_take_the_rate_of_the_step_before():
    m = LagMeter()
    m.sampled(10.0, 9.0, {TP("t", 0): (1, 1 * MB, 9.0)})
    m.sampled(11.0, 10.0, {TP("t", 0): (2, 0.5 * MB, 10.5)})  # the next step: no rate yet
    assert m.landed(TP("t", 0), 11.4) is None


def test_few_lags_replace_the_half_poll_only_when_they_outlast_a_poll():
    """Two lags of a whole poll may be the poll's phase alone (a simulated KIP-435 run of
    half-MiB moves: the model added the excess to each of its 8 steps); one lag may be an
    outlier (bench_eta's drains: 0-0.4 s, with one of 0.8-1.1 s in 4 of 9 runs, once first).
    Two that outlast a poll, or three of any length, are the lag."""
    m = LagMeter()
    m.lags = [1.1]
    assert m.tail(0.5, False, 0.0) == (0.25, 0.0)
    m.lags = [0.5, 0.5]
    assert m.tail(0.5, False, 0.0) == (0.25, 0.0)
    m.lags = [2.0, 2.2]
    assert m.tail(0.5, False, 0.0) == (pytest.approx(2.1), pytest.approx(0.1))
    m.lags = [1.1, 0.2, 0.3]
    assert m.tail(0.5, False, 0.0) == (pytest.approx(0.3), pytest.approx(0.1))


def test_a_step_that_left_the_run_without_landing_no_longer_counts_the_lag_down():
    """Once every byte left is in, the lag counts down from the latest full moment among the
    steps in flight. A step seen full that then failed or was cancelled (never landed) kept
    its moment, and when it was the latest the countdown started from it."""
    m = LagMeter()
    m.lags = [5.0, 5.0, 5.0]
    m.sampled(16.0, 15.0, {TP("t", 1): (1, 0.0, 9.0)})  # t-1 full since 15.5
    m.sampled(20.0, 19.0, {TP("t", 0): (1, 0.0, 9.0), TP("t", 1): (1, 0.0, 9.0)})  # t-0: 19.5
    assert m.tail(0.5, True, 20.0) == (pytest.approx(4.5), 0.0)
    m.sampled(21.0, 20.0, {TP("t", 1): (1, 0.0, 9.0)})  # t-0 failed: only t-1 in flight
    assert m.tail(0.5, True, 21.0) == (pytest.approx(0.0), 0.0)  # 5 - (21 - 15.5), not 3.5
