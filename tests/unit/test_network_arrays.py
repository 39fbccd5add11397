"""The network pass's numbered arrays: the per-broker sums taken with numpy are those of a walk
list by list, to the last bit, on any floats (network out adds the fetch, then the replication
out, as the walk does); counts, bytes and holdings are the walk's, keyed in the order it keys
them; and the loads now take the recorded leader where the list holds it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.planner.network import broker_loads
from reassign_kit.planner.network_arrays import TABLE_MAX, Flat, added, holdings, list_loads
from reassign_kit.planner.network_plan import before_loads

floats = st.floats(0, 1e10, allow_nan=False, allow_infinity=False)
brokers = st.integers(0, 9)  # 0-9, of which 1-5 are given: the others met in the lists


@st.composite
def lists_and_loads(draw):
    n = draw(st.integers(0, 30))
    lists = [list(draw(st.lists(brokers, max_size=4, unique=True))) for _ in range(n)]
    pairs = [(draw(floats), draw(floats)) for _ in range(n)]
    return lists, pairs


@settings(max_examples=100, deadline=None)
@given(lists_and_loads())
def test_the_sums_are_a_walks_to_the_last_bit_and_keyed_as_it_keys_them(case):
    lists, pairs = case
    want = broker_loads(zip(lists, pairs, strict=True), range(1, 6))
    got = list_loads(lists, pairs, range(1, 6))
    assert got == want
    assert [list(v) for v in got.values()] == [list(v) for v in want.values()]


@settings(max_examples=100, deadline=None)
@given(lists_and_loads(), st.lists(st.one_of(st.none(), brokers), min_size=30, max_size=30))
def test_the_loads_now_are_led_by_the_recorded_leader_where_the_list_holds_it(case, leaders):
    lists, pairs = case
    leaders = leaders[: len(lists)]
    led = [
        [x, *(b for b in r if b != x)] if x is not None and x in r else r
        for r, x in zip(lists, leaders, strict=True)
    ]
    want = broker_loads(zip(led, pairs, strict=True), range(1, 6))
    got = before_loads(lists, leaders, pairs, range(1, 6))
    assert got == want


@settings(max_examples=100, deadline=None)
@given(lists_and_loads(), st.integers(0, 30))
def test_counts_bytes_and_holdings_are_a_walks(case, cut):
    lists, _ = case
    cut = min(cut, len(lists))
    sizes = list(range(7, 7 + len(lists)))
    flat = Flat.of(lists, range(1, 6))
    upto = sum(map(len, lists[:cut]))
    count, size, held = {9: 1}, {9: 5}, {}
    for i, r in enumerate(lists[:cut]):
        for b in r:
            count[b] = count.get(b, 0) + 1
            size[b] = size.get(b, 0) + sizes[i]
            held.setdefault(b, {})[i] = None
    owners = flat.owners()
    weights = [sizes[i] for i in owners[:upto]]
    assert list(added({9: 1}, flat, upto).items()) == list(count.items())
    assert list(added({9: 5}, flat, upto, weights).items()) == list(size.items())
    got = holdings(flat, upto, owners)
    assert [(b, list(h.items())) for b, h in got.items()] == [
        (b, list(h.items())) for b, h in held.items()
    ]


@settings(max_examples=100, deadline=None)
@given(lists_and_loads(), st.sampled_from([TABLE_MAX - 3, TABLE_MAX, 1 << 40, -7]))
def test_ids_far_apart_are_numbered_as_near_ones(case, shift):
    lists, pairs = case
    lists = [[b + shift if b > 6 else b for b in r] for r in lists]  # some ids past the table
    want = broker_loads(zip(lists, pairs, strict=True), range(1, 6))
    got = list_loads(lists, pairs, range(1, 6))
    assert [list(v.items()) for v in got.values()] == [list(v.items()) for v in want.values()]
