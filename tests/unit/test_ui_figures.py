"""The panel's data shaping: journal events -> bounded figure data (no widgets, no browser)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.model import TopicPartition
from reassign_kit.ui import charts, controls, figures, figures_bytes
from reassign_kit.ui import figures_bytes as figures_bytes_mod

T0 = 1_700_000_000.0


def ev(dt: float, kind: str, **kw) -> dict:
    return {"ts": T0 + dt, "event": kind, "run_id": "r1", **kw}


def test_event_tps_accepts_every_documented_shape():
    assert figures.event_tps({"topic": "a", "partition": 3}) == [TopicPartition("a", 3)]
    assert figures.event_tps({"tp": "my-topic-12"}) == [TopicPartition("my-topic", 12)]
    assert figures.event_tps({"tp": ["a", 1]}) == [TopicPartition("a", 1)]
    many = {"partitions": [{"topic": "a", "partition": 0}, "b-1", ["c", 2]]}
    assert figures.event_tps(many) == [
        TopicPartition("a", 0),
        TopicPartition("b", 1),
        TopicPartition("c", 2),
    ]
    assert figures.event_tps({"event": "run_started"}) == []


def test_progress_counts_moves_through_their_life():
    evs = [
        ev(0, "run_started", moves=3),
        ev(1, "submitted", partitions=["a-0", "a-1"]),
        ev(2, "completed", topic="a", partition=0),
        ev(3, "cancelled", topic="a", partition=1),
        ev(4, "run_finished", state="cancelled"),
    ]
    p = figures.progress_series(evs)
    assert p.total == 3
    assert p.t == [0, 1, 2, 3, 4]
    assert p.done == [0, 0, 1, 1, 1]
    assert p.moving == [0, 2, 1, 0, 0]
    assert p.cancelled == [0, 0, 0, 1, 1]
    assert p.pending == [3, 1, 1, 1, 1]
    assert round(p.percent_done) == 33


def test_intermediate_step_completion_is_not_done():
    evs = [
        ev(0, "run_started", moves=1),
        ev(1, "step_submitted", topic="a", partition=0, step=1, steps=2),
        ev(2, "completed", topic="a", partition=0, step=1, steps=2),
        ev(3, "step_submitted", topic="a", partition=0, step=2, steps=2),
        ev(4, "completed", topic="a", partition=0, step=2, steps=2),
    ]
    p = figures.progress_series(evs)
    assert p.done == [0, 0, 0, 1]  # the intermediate completion changes nothing
    bars, hidden = figures.move_bars(evs)
    assert hidden == 0 and bars[0].steps == 2 and bars[0].state == "done"
    assert (bars[0].start, bars[0].end) == (1.0, 4.0)


def test_ten_thousand_partitions_stay_bounded():
    n = 10_000
    evs = [ev(0, "run_started", moves=n)]
    for i in range(n):
        evs.append(ev(1 + i * 0.01, "submitted", topic="big", partition=i))
        if i < n - 300:
            evs.append(ev(5 + i * 0.01, "completed", topic="big", partition=i))
    p = figures.progress_series(evs)
    assert len(p.t) <= figures.MAX_POINTS
    assert p.done[-1] == n - 300 and p.moving[-1] == 300 and p.pending[-1] == 0
    bars, hidden = figures.move_bars(evs)
    assert len(bars) == figures.MAX_BARS and hidden == n - figures.MAX_BARS
    assert all(b.state == "moving" for b in bars)  # moves still running come first
    assert len(figures.log_lines(evs)) == figures.MAX_LOG_LINES
    fig = charts.new_figure(widget=False)
    charts.apply(fig, charts.ChartData(progress=p, bars=bars, bars_hidden=hidden))
    assert len(fig.data[charts.T_GANTT].y) == figures.MAX_BARS
    assert "97% done" in fig.layout.title.text


def test_broker_bytes_reads_latest_sample_in_either_shape():
    evs = [
        ev(1, "sample", brokers=[{"broker": 2, "bytes_in": 5, "bytes_out": 1}]),
        ev(2, "sample", brokers={"1": {"bytes_in": 7}, "3": {"bytes_out": 9}}),
    ]
    assert figures_bytes_mod.broker_bytes(evs) == {
        1: {"bytes_in": 7.0, "bytes_out": 0.0},
        3: {"bytes_in": 0.0, "bytes_out": 9.0},
    }
    assert figures_bytes_mod.broker_bytes([ev(1, "run_started")]) == {}


def test_planned_broker_bytes():
    got = figures.planned_broker_bytes([((1, 2), (2, 3), 100), ((1, 2), (1, 2), 50)])
    assert got == {
        1: {"bytes_in": 0.0, "bytes_out": 100.0},
        3: {"bytes_in": 100.0, "bytes_out": 0.0},
    }


def test_behind_rows_orders_and_bounds():
    rows = [
        {"topic": "t", "partition": i, "state": "moving", "behind_bytes": i * 10} for i in range(40)
    ]
    rows += [{"topic": "t", "partition": 99, "state": "done", "behind_bytes": 10**9}]
    rows += [{"tp": "u-0", "state": "moving"}]
    got = figures_bytes_mod.behind_rows(rows, limit=5)
    assert [r["partition"] for r in got] == ["t-39", "t-38", "t-37", "t-36", "t-35"]
    got_all = figures_bytes_mod.behind_rows(rows, limit=100)
    assert got_all[-1]["partition"] == "u-0" and all(r["state"] != "done" for r in got_all)


def test_button_states():
    assert controls.enabled_buttons("ready") == {"execute", "verify"}
    assert controls.enabled_buttons("running") == {"pause", "stop", "cancel"}
    assert controls.enabled_buttons("paused") == {"resume", "stop", "cancel"}
    # Resume from journal only where a run may be continued, and only with a journal
    assert controls.enabled_buttons("stopped", resumable=True) == {"resume_run", "verify"}
    assert controls.enabled_buttons("stopped") == {"execute", "verify"}
    assert controls.enabled_buttons("cancelled", resumable=True) == {
        "execute",
        "resume_run",
        "verify",
    }
    assert "resume_run" not in controls.enabled_buttons("running", resumable=True)
    assert "resume_run" not in controls.enabled_buttons("done", resumable=True)
    assert controls.phase_after_run("stopped", asked="stop") == "stopped"
    assert controls.phase_after_run("stopped", asked="cancel") == "cancelled"
    names = ["batch_size", "max_moves_per_broker", "parallel_replica_count", "throttle"]
    assert controls.editable_controls("running", names) == {
        "max_moves_per_broker",
        "parallel_replica_count",
    }
    # a throttled run's throttle and a batched run's N are the run's to change too
    assert controls.editable_controls("paused", names, throttled=True, batched=True) == {
        "batch_size",
        "max_moves_per_broker",
        "parallel_replica_count",
        "throttle",
    }
    assert "throttle" in controls.lock_reasons("running")
    assert controls.editable_controls("ready", names) == set(names)
    assert controls.editable_controls("stopping", names) == frozenset()
    assert controls.enabled_buttons("invalid") == frozenset()
    assert controls.enabled_buttons("nonsense") == frozenset()
    assert controls.phase_after_run("done") == "done"
    assert controls.phase_after_run("cancelled") == "cancelled"
    assert controls.phase_after_run("error") == "failed"


_kinds = st.sampled_from(
    ["submitted", "step_submitted", "completed", "cancelled", "sample", "stuck"]
)
_events = st.lists(st.tuples(st.floats(0, 1000), _kinds, st.integers(0, 30)), max_size=300)


@settings(max_examples=60, deadline=None)
@given(_events, st.integers(2, 50))
def test_progress_invariants(raw, max_points):
    evs = [ev(0, "run_started", moves=31)] + [ev(t, k, topic="p", partition=i) for t, k, i in raw]
    p = figures.progress_series(evs, max_points=max_points)
    assert len(p.t) <= max_points
    assert p.t == sorted(p.t)
    for d, m, q, c in zip(p.done, p.moving, p.pending, p.cancelled, strict=True):
        assert d + m + q + c == p.total == 31
        assert min(d, m, q, c) >= 0
    assert p.done == sorted(p.done)  # a finished move never un-finishes
    bars, hidden = figures.move_bars(evs, max_bars=10)
    assert len(bars) <= 10 and hidden >= 0
    assert all(b.end >= b.start for b in bars)


def test_broker_bytes_and_behind_from_progress_samples():
    # progress.ProgressReport.sample_event(): remaining bytes per (topic, partition, broker)
    evs = [
        ev(0, "submitted", topic="a", partition=0),
        ev(1, "sample", remaining=[["a", 0, 3, 100], ["a", 0, 4, 100], ["b", 0, 3, 40]]),
        ev(2, "sample", remaining=[["a", 0, 3, 30], ["a", 0, 4, 100], ["b", 0, 3, 10]]),
        ev(3, "sample", remaining=[["a", 0, 3, 0], ["a", 0, 4, 50]]),  # b-0 left the samples
    ]
    got = figures_bytes_mod.broker_bytes(
        evs, leaders={TopicPartition("a", 0): 1, TopicPartition("b", 0): 2}
    )
    assert got == {
        1: {"bytes_in": 0.0, "bytes_out": 150.0},
        2: {"bytes_in": 0.0, "bytes_out": 40.0},
        3: {"bytes_in": 140.0, "bytes_out": 0.0},
        4: {"bytes_in": 50.0, "bytes_out": 0.0},
    }
    rows = figures_bytes_mod.behind_rows(figures_bytes.behind_from_samples(evs))
    assert [(r["partition"], r["behind_bytes"], round(r["percent"])) for r in rows] == [
        ("a-0", 50.0, 75)
    ]
    done = evs + [ev(4, "completed", topic="a", partition=0)]
    assert figures_bytes.behind_from_samples(done) == []


def test_broker_bytes_and_behind_from_execute_samples():
    # execute.Run journals: submitted (current, target, size_bytes), sample (moves: bytes, size)
    evs = [
        ev(0, "submitted", topic="a", partition=0, current=[1, 2], target=[3, 4], size_bytes=100),
        ev(0, "submitted", topic="a", partition=1, current=[2, 1], target=[2, 3], size_bytes=50),
        ev(
            1,
            "sample",
            moves=[
                {"topic": "a", "partition": 0, "bytes": 60, "size": 100, "step": 1},
                {"topic": "a", "partition": 1, "bytes": 10, "size": 50, "step": 1},
            ],
        ),
        ev(2, "completed", topic="a", partition=1),
    ]
    got = figures_bytes_mod.broker_bytes(evs)
    assert got == {
        1: {"bytes_in": 0.0, "bytes_out": 60.0},
        2: {"bytes_in": 0.0, "bytes_out": 50.0},
        3: {"bytes_in": 30.0 + 50.0, "bytes_out": 0.0},
        4: {"bytes_in": 30.0, "bytes_out": 0.0},
    }
    rows = figures_bytes_mod.behind_rows(figures_bytes.behind_from_samples(evs))
    assert [(r["partition"], r["behind_bytes"], round(r["percent"])) for r in rows] == [
        ("a-0", 140.0, 30)
    ]


def test_charts_of_a_run_in_one_standalone_file(tmp_path):
    import plotly.graph_objects as go

    figs = {"progress": charts.new_figure(widget=False), "other": go.Figure(go.Bar(x=[1], y=[2]))}
    path = charts.write_html(tmp_path / "run.html", figs, title="run <1>")
    page = open(path, encoding="utf-8").read()
    assert page.count("plotly.js v") == 1  # embedded once, offline-viewable
    assert page.count("Plotly.newPlot") == 2 and "<title>run &lt;1&gt;</title>" in page
    assert len(page) < 6_000_000


def test_log_leaves_out_samples_and_single_steps():
    evs = [
        {"ts": 1.0, "event": "submitted", "topic": "t", "partition": 0},
        {"ts": 1.0, "event": "step_submitted", "topic": "t", "partition": 0, "step": 1, "steps": 1},
        {"ts": 1.5, "event": "sample"},
        {"ts": 2.0, "event": "step_submitted", "topic": "t", "partition": 1, "step": 1, "steps": 3},
        {"ts": 2.5, "event": "caps_changed", "caps": {"batch_size": 2, "max_leader_moves": None}},
        {"ts": 3.0, "event": "note", "message": "max leader moves: 1 -> no cap"},
    ]
    lines = figures.log_lines(evs)
    assert len(lines) == 4
    assert "steps=3" in lines[1] and "max_leader_moves=no cap" in lines[2]
    assert lines[3].endswith("panel  max leader moves: 1 -> no cap")


def test_one_look_every_figure_in_the_package_template(tmp_path):
    """The plan's, the progress, the what-if and the postmortem figures share one
    registered template, never made Plotly's default (as default it blanked the panel's
    FigureWidgets); a figure built in a notebook cell gets it in the HTML export."""
    import plotly.graph_objects as go
    import plotly.io as pio

    from reassign_kit.ui import postmortem_charts as pmc
    from reassign_kit.ui.theme import COLORWAY, TEMPLATE

    assert pio.templates.default != TEMPLATE
    mine = pio.templates[TEMPLATE]
    figs = [
        charts.new_figure(widget=False),
        charts.whatif_figure([{"policy": "legacy", "seconds": 60.0}]),
        pmc.batch_wait_figure(__import__("pandas").DataFrame()),
    ]
    for fig in figs:
        assert fig.layout.template == mine, fig.layout.title
        assert list(fig.layout.template.layout.colorway) == COLORWAY
    page = open(
        charts.write_html(tmp_path / "x.html", {"plain": go.Figure(go.Bar(x=[1], y=[2]))}, "x"),
        encoding="utf-8",
    ).read()
    assert "Helvetica, Arial, sans-serif" in page
    own = go.Figure(layout={"template": "plotly_dark"})
    charts.write_html(tmp_path / "y.html", {"own": own}, "y")
    assert own.layout.template == pio.templates["plotly_dark"]  # a chosen template stays


def test_the_timeline_labels_every_move():
    """The postmortem's timeline showed every other partition's name at 16 px a row (Plotly's
    auto ticks on a category axis, seen in the tour's report): every move is labelled now, up
    to LABEL_EVERY_MOVE rows."""
    import pandas as pd

    from reassign_kit.ui import postmortem_charts as pmc

    def moves(n: int) -> pd.DataFrame:
        return pd.DataFrame(
            [
                {"topic": "t", "partition": p, "start": p * 0.5, "end": p * 0.5 + 1.0}
                | {"run_id": "r1", "state": "completed"}
                for p in range(n)
            ]
        )

    fig = pmc.timeline_figure(moves(10))
    assert fig.layout.yaxis.dtick == 1 and fig.layout.height >= 20 * 10
    assert pmc.timeline_figure(moves(pmc.LABEL_EVERY_MOVE + 1)).layout.yaxis.dtick is None
