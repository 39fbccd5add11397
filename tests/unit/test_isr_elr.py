"""The Admin API's view of ISR (KIP-966's eligible leader replicas counted where the
brokers report them) for partitions outside the plan: the pure parts of the probe's ISR view
(cluster/isr_view.py), the pause decision's ELR signals and reason (pacing/controller.py), the
pace_sample's counts (run/pace.py) and the fallback source keeping the ISR detail with its
view (health/sources.py). Against real 4.3.1 brokers: tests/integration/test_pace_sandbox.py.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster import capabilities as caps
from reassign_kit.cluster import isr_view
from reassign_kit.health.signals import HealthSample, PartitionIsr
from reassign_kit.health.sources import FallbackSource
from reassign_kit.model import TopicPartition as TP
from reassign_kit.pacing.controller import Bounds, Controller, Objective, elr_signals, pace_line

# ApiVersions / features as recorded from real brokers (docs/compatibility.md, make compat):
# 3.9.1 (ZooKeeper) lists no DescribeTopicPartitions; 3.9.1 / 4.0.0 KRaft list it (v0) with
# ELR not finalized; 4.3.1 lists it with eligible.leader.replicas.version 1 finalized.
KAFKA_39_ZK = caps.Capabilities(api={45: (0, 0), 46: (0, 0), 34: (0, 2)}, configs=frozenset())
KAFKA_39_KRAFT = caps.Capabilities(
    api={45: (0, 0), 46: (0, 0), 34: (1, 2), 75: (0, 0)},
    configs=frozenset(),
    features={"metadata.version": 21},
)
KAFKA_43 = caps.Capabilities(
    api={45: (0, 1), 46: (0, 0), 34: (1, 2), 75: (0, 0)},
    configs=frozenset(),
    features={"metadata.version": 27, "eligible.leader.replicas.version": 1},
)


def test_elr_is_read_only_where_the_brokers_report_it():
    assert isr_view.elr_unknown_why(KAFKA_43) is None
    why = isr_view.elr_unknown_why(KAFKA_39_ZK)
    assert why and "DescribeTopicPartitions" in why
    why = isr_view.elr_unknown_why(KAFKA_39_KRAFT)
    assert why and "eligible.leader.replicas.version" in why and "KIP-966" in why
    assert "could not be read" in (isr_view.elr_unknown_why(None) or "")


def dtp_partition(i, isr, elr, lke=None, error=0):
    # kafka-python's dict: an empty ELR list comes as None (admin/_partitions.py)
    return {
        "error_code": error,
        "partition_index": i,
        "leader_id": isr[0] if isr else -1,
        "leader_epoch": 3,
        "replica_nodes": sorted(set(isr) | set(elr)),
        "isr_nodes": list(isr),
        "eligible_leader_replicas": list(elr) or None,
        "last_known_elr": list(lke) if lke else None,
        "offline_replicas": [],
    }


def test_rows_from_describe_topic_partitions_count_isr_and_elr():
    topics = [
        {"name": "a", "error_code": 0, "partitions": [
            dtp_partition(0, [1], [2, 3]),
            dtp_partition(1, [1, 2, 3], []),
            dtp_partition(2, [], [], lke=[4]),
            dtp_partition(3, [1], [], error=9),  # an error: left out
        ]},
        {"name": "gone", "error_code": 3, "partitions": [dtp_partition(0, [1], [])]},
        {"name": "_canary", "error_code": 0, "partitions": [dtp_partition(0, [1], [])]},
    ]  # fmt: skip
    rows = isr_view.rows_from_dtp(topics, skip="_canary")
    assert rows == [
        isr_view.IsrRow(TP("a", 0), 1, 2, 0),
        isr_view.IsrRow(TP("a", 1), 3, 0, 0),  # read, and none: 0, not unknown
        isr_view.IsrRow(TP("a", 2), 0, 0, 1),
    ]
    under = isr_view.under_min_isr(rows, lambda t: 2)
    assert under == {
        TP("a", 0): PartitionIsr(1, 2, 2, 0),
        TP("a", 2): PartitionIsr(0, 2, 0, 1),
    }


class _Md:  # confluent-kafka's PartitionMetadata / TopicMetadata, the fields read
    def __init__(self, **kw):
        self.__dict__.update(kw)


def test_rows_from_metadata_leave_elr_unknown():
    topics = {"b": _Md(partitions={0: _Md(id=0, isrs=[1]), 1: _Md(id=1, isrs=[1, 2])})}
    under = isr_view.under_min_isr(isr_view.rows_from_metadata(topics), {"b": 2}.get)
    assert under == {TP("b", 0): PartitionIsr(1, 2, None, None)}


class _Pager:
    """kafka-python's describe_topic_partitions answering in pages of ``limit`` partitions."""

    def __init__(self, parts: int, endless: bool = False):
        self.parts, self.endless, self.calls = parts, endless, 0

    def describe_topic_partitions(self, topics, response_partition_limit, cursor):
        self.calls += 1
        start = cursor["partition_index"] if cursor else 0
        stop = min(self.parts, start + response_partition_limit)
        page = [dtp_partition(i, [1], [2]) for i in range(start, stop)]
        more = stop < self.parts or self.endless
        nxt = {"topic_name": topics[0], "partition_index": stop} if more else None
        return {"topics": [{"name": topics[0], "error_code": 0, "partitions": page}],
                "next_cursor": nxt}  # fmt: skip


def test_read_dtp_follows_the_cursor_and_stops_an_endless_one(monkeypatch):
    pager = _Pager(5)
    rows = isr_view.rows_from_dtp(isr_view.read_dtp(pager, ["t"], limit=2))
    assert [r.tp.partition for r in rows] == [0, 1, 2, 3, 4] and pager.calls == 3
    monkeypatch.setattr(isr_view, "MAX_PAGES", 4)
    with pytest.raises(RuntimeError, match="still paging"):
        isr_view.read_dtp(_Pager(1, endless=True), ["t"], limit=1)


# ---- the pause decision --------------------------------------------------------------------

PLAN = frozenset({TP("moving", 0)})


def controller() -> Controller:
    return Controller(Objective.parse("50ms"), Bounds(1000, 100_000), [1, 2, 3], PLAN)


def isr_sample(detail, elr_unknown=None, ts=10.0):
    return HealthSample(
        ts=ts,
        source="probe",
        under_min_isr=frozenset(detail),
        isr=detail,
        elr_unknown=elr_unknown,
    )


def test_the_pause_says_how_many_have_eligible_leaders():
    detail = {
        TP("x", 0): PartitionIsr(1, 2, 1),
        TP("x", 1): PartitionIsr(1, 2, 2),
        TP("x", 2): PartitionIsr(1, 3, 0),
        TP("moving", 0): PartitionIsr(1, 2, 0),  # the plan's own: not counted
    }
    c = controller()
    (d,) = c.step(isr_sample(detail), 10.0)
    assert d.action == "pause" and c.paused  # ELR members do not lift the pause
    assert d.reason.startswith("3 partition(s) outside the plan under min ISR, 2 with eligible")
    assert d.signals["count"] == 3 and d.signals["with_elr"] == 2
    assert d.signals["partitions"]["x-2"] == {"isr": 1, "min_isr": 3, "elr": 0}
    assert "moving-0" not in d.signals["partitions"]
    line = pace_line({"event": "pace_decision", **d.to_event()})
    assert line.startswith("pace pause: 3 partition(s)") and "2 with eligible leaders" in line


def test_elr_not_reported_is_unknown_and_still_pauses():
    """A 3.9 cluster (no ELR), or a metrics source that counts no ELR: unknown, not 0."""
    detail = {TP("x", 0): PartitionIsr(1, 2, None)}
    c = controller()
    (d,) = c.step(isr_sample(detail, elr_unknown="the brokers do not report …"), 10.0)
    assert d.action == "pause" and d.signals["with_elr"] is None
    assert d.signals["elr_unknown"].startswith("the brokers do not report")
    assert "eligible leaders not reported" in d.reason
    prom = HealthSample(ts=11.0, source="prometheus", under_min_isr=frozenset({TP("y", 0)}))
    sig = elr_signals(prom, [TP("y", 0)])
    assert sig["with_elr"] is None and "partitions" not in sig
    assert "prometheus" in sig["elr_unknown"]


def test_the_pause_names_a_bounded_number_of_partitions():
    detail = {TP("x", i): PartitionIsr(0, 2, i % 2) for i in range(100)}
    (d,) = controller().step(isr_sample(detail), 10.0)
    assert d.signals["count"] == 100 and d.signals["with_elr"] == 50
    assert len(d.signals["partitions"]) == 20 and len(d.signals["under_min_isr_outside_plan"]) == 20


isr_state = st.builds(
    PartitionIsr,
    st.integers(0, 4),
    st.integers(1, 5),
    st.one_of(st.none(), st.integers(0, 4)),
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.builds(TP, st.sampled_from(["moving", "x", "y"]), st.integers(0, 3)), isr_state
    ),
    st.booleans(),
)
def test_elr_counts_are_whole_and_the_pause_is_judged_on_isr_alone(detail, known):
    """Whatever the ELR: paused iff a partition outside the plan is under min ISR; with ELR
    known, ``with_elr`` counts exactly the outside ones that have a member; else None."""
    c = controller()
    s = isr_sample(detail, None if known else "off")
    decisions = c.step(s, 10.0)
    outside = sorted(set(detail) - PLAN, key=str)
    assert c.paused == bool(outside)
    sig = elr_signals(s, outside)
    want = sum(1 for tp in outside if (detail[tp].elr or 0) > 0) if known else None
    assert sig["with_elr"] == want
    assert len(sig["partitions"]) == min(20, len(outside))
    if outside:
        assert decisions[0].signals["with_elr"] == want


# ---- the fallback source keeps the ISR detail with its view ---------------------------------


class _Src:
    def __init__(self, s):
        self.s, self.name = s, s.source

    def sample(self):
        return self.s

    def close(self):
        pass


def test_a_degraded_metrics_source_takes_the_probes_isr_view_with_its_elr():
    detail = {TP("x", 0): PartitionIsr(1, 2, 1)}
    probe = isr_sample(detail)
    sick = HealthSample(ts=10.0, source="prometheus", degraded="timeout")
    got = FallbackSource(_Src(sick), lambda: _Src(probe)).sample()
    assert got.under_min_isr == frozenset(detail) and got.isr == detail
    assert got.elr_unknown is None
    partial = HealthSample(
        ts=10.0, source="scrape", degraded="one down", under_min_isr=frozenset({TP("y", 0)})
    )
    got = FallbackSource(_Src(partial), lambda: _Src(probe)).sample()
    assert got.under_min_isr == frozenset({TP("y", 0)}) and got.isr is None


def test_a_partial_answer_never_hides_a_partition():
    """A topic DescribeTopicPartitions did not answer (an error, deleted and re-made) keeps
    the metadata's ISR (ELR unknown for it): the pause sees it either way."""
    md = [isr_view.IsrRow(TP("a", 0), 1), isr_view.IsrRow(TP("b", 0), 1)]
    dtp = isr_view.rows_from_dtp(
        [
            {"name": "a", "error_code": 0, "partitions": [dtp_partition(0, [1, 2], [])]},
            {"name": "b", "error_code": 29, "partitions": []},
        ]
    )
    under = isr_view.under_min_isr(isr_view.merged(dtp, md), lambda t: 2)
    assert under == {TP("b", 0): PartitionIsr(1, 2, None, None)}  # a-0: back in the fresher view
