"""The physical bound the ETA starts from (``eta.model.physical_bound``): the bytes each
broker end must still send or receive over the throttle, through the busiest end."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reassign_kit.eta.model import Flow, end_loads, physical_bound
from reassign_kit.model import TopicPartition
from reassign_kit.moves.schedule import item_for

MB = 1 << 20


def flow(p: int, src: int, dst: int, size: float, left: float | None = None) -> Flow:
    tp = TopicPartition("t", p)
    item = item_for(tp, (src,), (dst,), None, int(size))
    if left is None:
        return Flow(tp, item, src, size, [(dst,)], "pending", srcs=[src])
    return Flow(tp, item, src, size, [(dst,)], "moving", {dst: left}, srcs=[src])


def test_a_drain_is_bound_by_its_source_a_spread_by_its_busiest_target():
    drain = [flow(0, 1, 2, 4 * MB), flow(1, 1, 3, 4 * MB), flow(2, 1, 4, 4 * MB, left=MB)]
    assert physical_bound(drain, MB) == pytest.approx(9.0)  # broker 1 sends 4 + 4 + 1 MiB
    spread = [flow(0, 1, 4, 6 * MB), flow(1, 2, 4, 2 * MB), flow(2, 3, 5, 3 * MB)]
    assert physical_bound(spread, 2 * MB) == pytest.approx(4.0)  # broker 4 takes in 8 MiB
    assert physical_bound([], MB) == 0.0


@given(
    st.lists(
        st.tuples(st.integers(1, 4), st.integers(5, 8), st.integers(1, 10**8)),
        min_size=1,
        max_size=12,
    ),
    st.floats(1e3, 1e9),
)
def test_the_bound_is_the_busiest_end_and_no_stream_is_faster(streams, capacity):
    flows = [flow(i, s, d, n) for i, (s, d, n) in enumerate(streams)]
    loads = end_loads(flows)
    assert sum(v for (k, _), v in loads.items() if k == "i") == pytest.approx(
        sum(n for _, _, n in streams)
    )
    got = physical_bound(flows, capacity)
    assert got == pytest.approx(max(loads.values()) / capacity)
    assert all(got >= n / capacity * (1 - 1e-9) for _, _, n in streams)
