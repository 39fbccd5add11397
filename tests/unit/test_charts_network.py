"""The plan's network chart: drawn from the report of a real (in-process) plan by load, each
broker's network in and out before and after as the report says them, in MB/s, with the
targets; a goal not met says so in the title."""

from __future__ import annotations

from reassign_kit import api
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.load import LoadWindow, PartitionLoad
from reassign_kit.snapshot.snapshot import Snapshot
from reassign_kit.ui.charts_network import network_figure

MB = 1e6


def _hot_on_two() -> Snapshot:
    """Counts even, one hot topic on brokers 1 and 2."""
    parts = [
        PartitionEntry(
            "hot",
            p,
            (1 + p % 2, 2 - p % 2),
            1,
            1 + p % 2,
            load=PartitionLoad(4 * MB, 1000, 4 * MB, 1, 0),
        )
        for p in range(4)
    ] + [
        PartitionEntry("cold", p, (3 + p % 2, 4 - p % 2), 1, 3 + p % 2, load=PartitionLoad())
        for p in range(4)
    ]
    return Snapshot.of(
        [BrokerEntry(b, "ab"[b % 2]) for b in (1, 2, 3, 4)],
        [TopicEntry("hot", 1), TopicEntry("cold", 1)],
        parts,
        LoadWindow("sample", 1.0, 60.0),
    )


def test_the_chart_shows_the_reports_numbers():
    ng = api.plan(_hot_on_two(), balance="network", engine="local").report()["network_goal"]
    fig = network_figure(ng)
    bars = {(t.name, t.xaxis): t for t in fig.data if t.type == "bar"}
    assert set(bars) == {("before", "x"), ("after", "x"), ("before", "x2"), ("after", "x2")}
    for (when, axis), t in bars.items():
        res = "network_in" if axis == "x" else "network_out"
        assert list(t.x) == [str(r["broker"]) for r in ng["brokers"]]
        assert list(t.y) == [r[f"{res}_{when}"] / MB for r in ng["brokers"]]
    before_in = list(bars[("before", "x")].y)
    after_in = list(bars[("after", "x")].y)
    assert max(after_in) < max(before_in)  # the hot brokers cooled
    assert sum(1 for t in fig.data if t.name == "target") == 2
    assert ("goals met" in fig.layout.title.text) == ng["met"]


def test_a_goal_not_met_is_in_the_title():
    ng = {
        "met": False,
        "unmet": ["network_in capacity (hard) exceeded: broker 1 4.000 > 3.000 MB/s"],
        "brokers": [
            {
                "broker": 1,
                "network_in_before": 4e6,
                "network_in_after": 4e6,
                "network_in_capacity": 3e6,
                "network_out_before": 0.0,
                "network_out_after": 0.0,
            },
        ],
    }
    fig = network_figure(ng)
    assert "NOT met: network_in capacity (hard) exceeded: broker 1" in fig.layout.title.text
    caps = [t for t in fig.data if t.name == "capacity"]
    assert len(caps) == 1 and list(caps[0].y) == [3.0]
