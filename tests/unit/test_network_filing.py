"""The network pass's ranked lists file arrivals when a list is next read: whatever the reads
in between, each list is the one filing every arrival at once gives (ties: in the order they
came), with partitions that left taken off even while waiting to be filed."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from network_placements import placement

from reassign_kit.planner import network_pass
from reassign_kit.planner.network import RESOURCES
from reassign_kit.planner.network_pass import Scorer


def _scorer(reps, loads, n) -> Scorer:
    p = placement(reps, loads, n, 0.0)
    p.band = (0, 1 << 30)  # counts free: only the filing is under test
    scorer = Scorer(p)
    for res in RESOURCES:
        for b in range(1, n + 1):
            scorer.listed(res, b)
    return scorer


@st.composite
def cases(draw):
    n = draw(st.integers(3, 5))
    parts = draw(st.integers(2, 12))
    reps = [draw(st.permutations(range(1, n + 1)))[: draw(st.integers(1, 3))] for _ in range(parts)]
    # few distinct loads: ties in every list
    loads = [(float(draw(st.integers(0, 3))), float(draw(st.integers(0, 3)))) for _ in reps]
    steps = []
    for _ in range(draw(st.integers(1, 25))):
        i = draw(st.integers(0, parts - 1))
        new = list(draw(st.permutations(range(1, n + 1)))[: len(reps[i])])
        reads = draw(st.lists(st.tuples(st.sampled_from(RESOURCES), st.integers(1, n))))
        steps.append((i, new, reads))
    return n, reps, loads, steps


@pytest.mark.parametrize("one_by_one", [0, network_pass.FILE_ONE_BY_ONE])  # 0: by a sort
def test_lists_filed_when_read_are_those_filed_at_once(one_by_one):
    was = network_pass.FILE_ONE_BY_ONE
    network_pass.FILE_ONE_BY_ONE = one_by_one
    try:
        filed_when_read()
    finally:
        network_pass.FILE_ONE_BY_ONE = was


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def filed_when_read(case):
    n, reps, loads, steps = case
    lazy, eager = _scorer(reps, loads, n), _scorer(reps, loads, n)
    for i, new, reads in steps:
        made = lazy.attempt([(("t", i), new)])
        assert eager.attempt([(("t", i), new)]) == made
        for res in RESOURCES:  # every arrival filed at once
            for b in range(1, n + 1):
                eager.listed(res, b)
        for res, b in reads:
            lazy.listed(res, b)
    for res in RESOURCES:
        for b in range(1, n + 1):
            assert lazy.listed(res, b) == eager.listed(res, b), (res, b)
    assert not lazy.waiting and not lazy.arrived
