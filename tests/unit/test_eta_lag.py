"""The completion lag the run measures (issue 21, bench_eta follow-up 6): from when a sample
saw a replica full to when the run saw its move complete, the last byte placed halfway since
the sample before. A move submitted after that sample got no byte before its submission: the
drain's batches of 3 on the sandbox submitted a 1 MB move 1.4 s after a sample and 0.6 s
before the next one, which saw it full; its completion 0.5 s later read as a lag of 1.21 s for
0.8 s, and the model counted the excess at every batch boundary left (the ETA 1.0-1.5 s long
from then on: median error 16.3% -> 12.4% replayed on that journal, bench/eta_replay.py)."""

from __future__ import annotations

import pytest

from reassign_kit.engine.track import full_since


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
