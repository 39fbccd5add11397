"""The what-if in the panel before Execute: a table and a chart of the makespan
per pacing policy, from ``whatif.what_if`` — the function ``--execute --dry-run`` prints —
for the options the controls hold, following them; and the run's progress line (its ETA)
under the buttons."""

from __future__ import annotations

import plotly.graph_objects as go

from reassign_kit import whatif
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.ui import charts
from reassign_kit.ui.panel import Panel

TP = TopicPartition


def setup() -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=20 * MB, tick=0.1)
    sim.add_topic("orders", [[0, 1], [1, 2], [2, 3], [3, 0]], 10 * MB)
    plan = Plan.of(
        [
            Move(TP("orders", 0), (2, 3)),
            Move(TP("orders", 1), (3, 0)),
            Move(TP("orders", 2), (0, 1)),
        ]
    )
    return sim, plan


def test_the_panel_shows_the_dry_runs_what_if_table_and_chart_before_execute():
    sim, plan = setup()
    panel = Panel(plan, sim, refresh_s=0.01, batch_size=2, incremental=True, throttle=2 * MB)
    assert panel.phase == "ready" and panel.whatif is not None
    same = whatif.what_if(sim, plan, ExecuteOptions(**{**panel.options(), "wait": True}))
    assert panel.whatif.rows == same.rows  # the CLI's --dry-run function, same numbers
    table = panel.whatif_html.value
    assert "what-if" in table and "these options" in table
    for r in same.rows:
        assert r["policy"] in table and whatif.duration(r["seconds"]) in table
    (bars,) = panel.whatif_figure.data
    assert isinstance(bars, go.Bar)
    assert list(bars.y) == [r["policy"] for r in same.rows]
    assert list(bars.x) == [r["seconds"] for r in same.rows]  # under two minutes: seconds
    # above the buttons, in the panel's widget tree
    # above the buttons, in the panel's widget tree, in a collapsible (closed) section
    kids = list(panel.widget.children)
    assert list(panel.whatif_box.children[0].children) == [panel.whatif_html, panel.whatif_chart]
    # the chart view holds the what-if figure itself (charts.show)
    assert charts.shown(panel.whatif_chart)["data"][0]["y"] == [r["policy"] for r in same.rows]
    assert panel.whatif_box.selected_index is None
    assert kids.index(panel.whatif_box) < kids.index(panel.eta_html)


def test_the_what_if_follows_the_controls_before_a_run():
    sim, plan = setup()
    panel = Panel(plan, sim, refresh_s=0.01, batch_size=2, incremental=True, throttle=2 * MB)
    fast = panel.whatif.predicted_seconds
    panel.controls["throttle"].value = 1.0  # MiB/s: half the throttle, about twice as long
    slow = panel.whatif.predicted_seconds
    assert slow > 1.6 * fast
    assert panel.whatif.rows == whatif.what_if(sim, plan, ExecuteOptions(
        **{**panel.options(), "wait": True})).rows  # fmt: skip


def test_the_what_if_chart_helper_draws_one_bar_per_policy():
    rows = [{"policy": "as given", "seconds": 120.0}, {"policy": "batch 2", "seconds": 60.0}]
    fig = charts.whatif_figure(rows)
    assert list(fig.data[0].x) == [2.0, 1.0] and fig.data[0].text == ("2m00s", "1m00s")
    short = charts.whatif_figure([{"policy": "as given", "seconds": 6.4}])
    assert short.data[0].text == ("0m06s",)  # not "0.1 min" for every short plan
    assert fig.layout.xaxis.title.text == "minutes (predicted)"
    assert short.layout.xaxis.title.text == "seconds (predicted)" and short.data[0].x == (6.4,)
    html = charts.whatif_table_html(rows, None)
    assert "2m00s" in html and "1m00s" in html and "none" in html
