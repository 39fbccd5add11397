"""Throttles: what the official tool would set, and clearing never removes what a move in flight
still needs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.config import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
)
from reassign_kit.errors import UsageError
from reassign_kit.model import Move, PartitionState, TopicPartition
from reassign_kit.throttles import configs as thr

TP = TopicPartition


def S(tp, replicas, adding=(), removing=()):
    return PartitionState(tp, tuple(replicas), adding=tuple(adding), removing=tuple(removing))


def test_sources_and_destinations_as_the_official_tool():
    a0, a1 = TP("a", 0), TP("a", 1)
    req = thr.required_throttles(
        {a0: [4, 5, 1], a1: [1, 2]}, {a0: S(a0, [1, 2, 3]), a1: S(a1, [2, 1])}
    )
    assert req.leader == {"a": "0:1,0:2,0:3,1:1,1:2"}
    assert req.follower == {"a": "0:4,0:5"}  # partition 1 only reorders: nothing to copy
    assert req.brokers == {1, 2, 3, 4, 5}
    assert req.topic_configs() == {
        "a": {LEADER_REPLICAS: "0:1,0:2,0:3,1:1,1:2", FOLLOWER_REPLICAS: "0:4,0:5"}
    }


def test_entries_sorted_as_strings_like_a_treeset():
    tp = TP("t", 10)
    req = thr.required_throttles({tp: [100, 9]}, {tp: S(tp, [2, 11])})
    assert req.leader["t"] == "10:11,10:2"
    assert req.follower["t"] == "10:100,10:9"


def test_partition_already_reassigning_uses_original_replicas_as_sources():
    tp = TP("a", 0)
    # in flight from [1,2,3] to [2,3,4]: replicas 1,2,3,4, adding 4, removing 1
    st_ = S(tp, [1, 2, 3, 4], adding=[4], removing=[1])
    req = thr.required_throttles({tp: [2, 3, 5]}, {tp: st_})
    assert req.leader["a"] == "0:1,0:2,0:3"
    # 4 stays a destination: a KRaft controller keeps copying to it (adding and removing) until
    # it catches up; the official tool would leave that copy unthrottled.
    assert req.follower["a"] == "0:4,0:5"


def test_other_in_flight_moves_keep_their_throttle():
    a0, a1, b0 = TP("a", 0), TP("a", 1), TP("b", 0)
    other = {
        a1: S(a1, [1, 2, 3], adding=[3], removing=[1]),
        b0: S(b0, [5, 6], adding=[6], removing=[5]),
    }
    req = thr.required_throttles({a0: [2, 4]}, {a0: S(a0, [1, 2])}, other)
    assert req.leader == {"a": "0:1,0:2,1:1,1:2", "b": "0:5"}
    assert req.follower == {"a": "0:4,1:3", "b": "0:6"}
    assert req.brokers == {1, 2, 3, 4, 5, 6}


def test_unknown_partition_is_a_usage_error():
    with pytest.raises(UsageError, match="x-0"):
        thr.required_throttles({TP("x", 0): [1]}, {})


def test_apply_changes_rates_and_log_dir_rate():
    tp = TP("a", 0)
    req = thr.required_throttles({tp: [3]}, {tp: S(tp, [1])})
    topics, brokers = thr.apply_changes(
        req, 1000, 50, thr.log_dir_brokers([Move(tp, (3,), ("/d",))])
    )
    assert topics == {"a": {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: "0:3"}}
    assert brokers == {
        1: {LEADER_RATE: "1000", FOLLOWER_RATE: "1000"},
        3: {LEADER_RATE: "1000", FOLLOWER_RATE: "1000", LOG_DIR_RATE: "50"},
    }
    assert thr.apply_changes(req, None) == ({}, {})  # no --throttle: nothing touched
    with pytest.raises(UsageError, match="--throttle"):
        thr.apply_changes(req, -1)


def test_log_dir_brokers_ignores_any():
    m = Move(TP("a", 0), (1, 2, 3), ("any", "/x", "any"))
    assert thr.log_dir_brokers([m, Move(TP("a", 1), (4,))]) == {2}


def test_clear_everything_when_nothing_in_flight():
    topics, brokers = thr.clear_changes(["a", "b"], [1, 2], {})
    assert topics == {t: {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None} for t in ("a", "b")}
    assert brokers == {
        b: {LEADER_RATE: None, FOLLOWER_RATE: None, LOG_DIR_RATE: None} for b in (1, 2)
    }


def test_clear_keeps_what_remaining_moves_need():
    a1 = TP("a", 1)
    remaining = {a1: S(a1, [1, 2, 3], adding=[3], removing=[1])}
    topics, brokers = thr.clear_changes(
        ["a", "b"], [1, 2, 3, 4], remaining, keep_log_dir_brokers=[4]
    )
    assert topics["a"] == {LEADER_REPLICAS: "1:1,1:2", FOLLOWER_REPLICAS: "1:3"}
    assert topics["b"] == {LEADER_REPLICAS: None, FOLLOWER_REPLICAS: None}
    assert brokers[1] == {LOG_DIR_RATE: None}  # rates kept, it is a source
    assert brokers[4] == {LEADER_RATE: None, FOLLOWER_RATE: None}  # log-dir move still running


class FakeGateway:
    """Records config changes; just enough of AdminGateway for apply/clear."""

    def cluster_permissions(self):  # the cluster does not say: nothing checked
        return None

    def topic_permissions(self, topics):
        return None

    def __init__(self, in_flight=None):
        self.topic_changes, self.broker_changes = [], []
        self.in_flight = in_flight or {}

    def alter_topic_configs(self, c):
        self.topic_changes.append(c)

    def alter_broker_configs(self, c):
        self.broker_changes.append(c)

    def brokers(self):
        from reassign_kit.cluster.gateway import BrokerInfo

        return [BrokerInfo(i, "h", 1) for i in (1, 2, 3)]

    def list_reassignments(self):
        return self.in_flight

    def describe_log_dirs(self, brokers, tps=None):
        return []


def test_clear_throttles_asks_the_cluster_by_default():
    a0 = TP("a", 0)
    gw = FakeGateway({a0: S(a0, [1, 2], adding=[2], removing=[1])})
    topics, brokers = thr.clear_throttles(gw, ["a"])
    assert topics == {"a": {LEADER_REPLICAS: "0:1", FOLLOWER_REPLICAS: "0:2"}}
    assert (
        set(brokers) == {1, 2, 3}
        and brokers[3][LEADER_RATE] is None
        and LEADER_RATE not in brokers[1]
    )
    assert gw.topic_changes == [topics] and gw.broker_changes == [brokers]


# ----------------------------------------------------------------------------- properties

brokers_st = st.lists(st.integers(0, 9), min_size=1, max_size=4, unique=True)


@st.composite
def scenario(draw):
    """Moves of a few partitions, some already reassigning, plus other in-flight ones."""
    tps = draw(
        st.lists(
            st.builds(TP, st.sampled_from("abc"), st.integers(0, 5)),
            min_size=1,
            max_size=8,
            unique=True,
        )
    )
    states, targets, others = {}, {}, {}
    for tp in tps:
        orig = draw(brokers_st)
        if draw(st.booleans()):
            tgt = draw(brokers_st)
            adding = [b for b in tgt if b not in orig]
            removing = [b for b in orig if b not in tgt]
            replicas = tgt + [b for b in orig if b not in tgt]
            st_ = PartitionState(
                tp, tuple(replicas), adding=tuple(adding), removing=tuple(removing)
            )
        else:
            st_ = PartitionState(tp, tuple(orig))
        role = draw(st.sampled_from(["move", "other"]))
        if role == "move":
            states[tp] = st_
            targets[tp] = draw(brokers_st)
        elif st_.reassigning:
            others[tp] = st_
    return targets, states, others


def _entries(s: str | None) -> set[tuple[int, int]]:
    return {tuple(map(int, e.split(":"))) for e in s.split(",")} if s else set()


@given(scenario())
@settings(max_examples=300, deadline=None)
def test_every_move_and_in_flight_move_is_covered(sc):
    targets, states, others = sc
    req = thr.required_throttles(targets, states, others)
    for tp, target in targets.items():
        st_ = states[tp]
        sources = set(st_.replicas) - set(st_.adding)
        lead = {b for p, b in _entries(req.leader.get(tp.topic)) if p == tp.partition}
        foll = {b for p, b in _entries(req.follower.get(tp.topic)) if p == tp.partition}
        assert lead == sources
        adding = set(st_.adding) if st_.reassigning else set()
        assert foll == (set(target) - sources) | adding
        assert (sources | set(target)) <= req.brokers
    for tp, st_ in others.items():
        if tp in targets:
            continue
        foll = {b for p, b in _entries(req.follower.get(tp.topic)) if p == tp.partition}
        assert foll == set(st_.adding)


@given(scenario(), st.lists(st.integers(0, 9), max_size=10))
@settings(max_examples=300, deadline=None)
def test_clear_never_removes_what_remaining_moves_need(sc, brokers):
    _, _, remaining = sc
    topics = sorted({"a", "b", "c"})
    tchanges, bchanges = thr.clear_changes(topics, brokers, remaining)
    still = thr.required_throttles({}, {}, remaining)
    for t in topics:
        assert tchanges[t][LEADER_REPLICAS] == (still.leader.get(t) or None)
        assert tchanges[t][FOLLOWER_REPLICAS] == (still.follower.get(t) or None)
    for b, kv in bchanges.items():
        if b in still.brokers:
            assert LEADER_RATE not in kv and FOLLOWER_RATE not in kv
        else:
            assert kv[LEADER_RATE] is None and kv[FOLLOWER_RATE] is None
    if not remaining:
        assert all(v is None for kv in tchanges.values() for v in kv.values())


# ----------------------------------------------------------------------------- sync (paced waves)

rate_st = st.sampled_from([None, "1000", "2000", "5000"])


@st.composite
def current_configs(draw):
    """Whatever throttles happen to be set now (ours from an earlier wave, others', stale)."""
    entry = st.builds(lambda p, b: f"{p}:{b}", st.integers(0, 5), st.integers(0, 9))
    lists = st.one_of(st.none(), st.lists(entry, min_size=1, max_size=6).map(",".join))
    topics = {}
    for t in "abc":
        kv = {k: v for k in (LEADER_REPLICAS, FOLLOWER_REPLICAS) if (v := draw(lists))}
        if kv:
            topics[t] = kv
    brokers = {}
    for b in range(10):
        kv = {k: v for k in (LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE) if (v := draw(rate_st))}
        if kv:
            brokers[b] = kv
    return {"topics": topics, "brokers": brokers}


@given(scenario(), current_configs(), st.sets(st.integers(0, 9)), st.sets(st.integers(0, 9)))
@settings(max_examples=300, deadline=None)
def test_sync_makes_exactly_the_required_throttles_touching_only_what_differs(
    sc, current, extra_brokers, ld_brokers
):
    targets, states, others = sc
    req = thr.required_throttles(targets, states, others)
    topics = ["a", "b", "c"]
    brokers = sorted(req.brokers | extra_brokers)
    changes = thr.sync_changes(req, 1000, current, topics, brokers, (), 700, ld_brokers)
    after = thr.after_changes(current, changes)
    # exact: a second sync has nothing left to do
    assert thr.sync_changes(req, 1000, after, topics, brokers, (), 700, ld_brokers) == ({}, {})
    s = thr.summary(after)
    for t in topics:
        assert thr.entry_set(s["leader_replicas"].get(t)) == thr.entry_set(req.leader.get(t))
        assert thr.entry_set(s["follower_replicas"].get(t)) == thr.entry_set(req.follower.get(t))
    in_scope = lambda m: {int(b) for b in m if int(b) in brokers}  # noqa: E731
    assert in_scope(s["broker_rates"]) == set(req.brokers)
    assert in_scope(s.get("log_dir_rates", {})) == set(ld_brokers) & set(brokers)
    # minimal: nothing is set to the value it already has, nothing outside the scope is touched
    for part, ch in zip(("topics", "brokers"), changes, strict=True):
        for name, kv in ch.items():
            assert name in (topics if part == "topics" else brokers)
            for k, v in kv.items():
                assert current[part].get(name, {}).get(k) != v


def test_sync_keeps_another_runs_rate_and_leaves_unmanaged_keys_alone():
    a0, b0 = TP("a", 0), TP("b", 0)
    other = {b0: S(b0, [3, 4, 5], adding=[5], removing=[3])}
    req = thr.required_throttles({a0: [2]}, {a0: S(a0, [1])}, other)
    current = {
        "topics": {"a": {LEADER_REPLICAS: "0:1"}},  # already right: left alone
        "brokers": {4: {LEADER_RATE: "50", FOLLOWER_RATE: "50"}, 9: {LEADER_RATE: "1000"}},
    }
    tch, bch = thr.sync_changes(req, 1000, current, ["a", "b"], [1, 2, 3, 4, 5, 9], {3, 4, 5})
    assert tch == {
        "a": {FOLLOWER_REPLICAS: "0:2"},
        "b": {LEADER_REPLICAS: "0:3,0:4", FOLLOWER_REPLICAS: "0:5"},
    }
    # 4 keeps the other run's 50 B/s; 3 and 5 had none and get ours; 9 needs none any more
    assert 4 not in bch and bch[3] == bch[5] == {LEADER_RATE: "1000", FOLLOWER_RATE: "1000"}
    assert bch[9] == {LEADER_RATE: None}
    # rate None: the inter-broker throttle is not ours to touch
    assert thr.sync_changes(req, None, current, ["a", "b"], [1, 9]) == ({}, {})
