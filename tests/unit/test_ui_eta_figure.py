"""The postmortem chart of the run's ETA beside the truth ("the panel charts how
the estimate moved over the run beside what actually happened"): ``figures.eta_series`` from
a journal's ``sample`` events, ``charts.eta_figure`` on it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.ui.charts import eta_band, eta_figure
from reassign_kit.ui.figures import eta_series

TP = TopicPartition


def journal_of_a_run(tmp_path) -> list[dict]:
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.25)
    sim.add_topic("a", [[0], [0], [1]], [8 * MB, 2 * MB, 6 * MB])
    plan = Plan.of([Move(TP("a", 0), (1,)), Move(TP("a", 1), (2,)), Move(TP("a", 2), (3,))])
    opts = ExecuteOptions(
        batch_size=2, incremental=True, throttle=MB, wait=True, sample_interval=1.0
    )
    path = str(tmp_path / "j.jsonl")
    assert Run(sim, plan, opts, path, clock=sim.now, sleep=sim.sleep).run().state == "done"
    return read_events(path)


def test_the_eta_series_sets_each_samples_estimate_beside_the_time_really_left(tmp_path):
    events = journal_of_a_run(tmp_path)
    samples = [e for e in events if e["event"] == "sample"]
    finish = max(e["ts"] for e in events if e["event"] == "completed")
    s = eta_series(events)
    assert len(s.t) == len(samples) > 5
    t0 = events[0]["ts"]
    assert s.finish_t == pytest.approx(finish - t0)
    for k, e in enumerate(samples):
        assert s.t[k] == pytest.approx(e["ts"] - t0)
        assert s.eta[k] == e["eta_s"] and [s.low[k], s.high[k]] == e["eta_range_s"]
        assert s.truth[k] == pytest.approx(finish - e["ts"])
    late = [e for e in samples if 1 - e["bytes_left"] / e["bytes_total"] >= 0.25]
    want = [abs(e["eta_s"] - (finish - e["ts"])) / (finish - e["ts"]) for e in late]
    assert s.errors() == pytest.approx(want)
    assert s.held() is not None and 0.0 <= s.held() <= 1.0
    fig = eta_figure(s)
    names = [t.name for t in fig.data]
    assert "ETA" in names and "time really left" in names
    assert "median error" in fig.layout.title.text


def test_a_run_that_did_not_finish_has_no_truth_to_chart(tmp_path):
    events = [e for e in journal_of_a_run(tmp_path) if e["event"] != "run_finished"]
    s = eta_series(events)
    assert s.t and s.finish_t is None and all(x is None for x in s.truth)
    assert s.errors() == [] and s.held() is None
    fig = eta_figure(s)
    assert "time really left" not in [t.name for t in fig.data]
    # a journal with no sample at all charts nothing (and does not fail)
    assert eta_series([{"ts": 1.0, "event": "run_started", "run_id": "x"}]).t == []


def test_a_sample_without_a_range_leaves_a_gap_in_the_band_not_a_diagonal(tmp_path):
    """Seen in the panel (the ETA chart live): two line traces filled ``tonexty`` across a
    sample with no range joined the ends of different runs: a diagonal band over the chart."""
    events = journal_of_a_run(tmp_path)
    ranged = [i for i, e in enumerate(events) if e["event"] == "sample" and e.get("eta_range_s")]
    assert len(ranged) >= 3
    k = ranged[len(ranged) // 2]  # one in the middle: ranges before and after it
    events[k] = dict(events[k], eta_range_s=None)
    fig = eta_figure(eta_series(events))
    band = next(t for t in fig.data if t.name == "range (10th-90th)")
    assert band.fill == "toself" and not any(t.fill == "tonexty" for t in fig.data)
    assert None in band.x


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.tuples(st.floats(0, 1e4), st.floats(0, 1e4))), max_size=40))
def test_the_band_is_one_closed_polygon_per_run_of_ranged_samples(rows):
    t = [float(i) for i in range(len(rows))]
    low = [None if r is None else min(r) for r in rows]
    high = [None if r is None else max(r) for r in rows]
    xs, ys = eta_band(t, low, high)
    runs, cur = [], []
    for i, r in enumerate(rows):
        if r is None:
            if cur:
                runs.append(cur)
            cur = []
        else:
            cur.append(i)
    if cur:
        runs.append(cur)
    parts, part = [], []
    for x, y in zip(xs, ys, strict=True):
        if x is None:
            assert y is None
            parts.append(part)
            part = []
        else:
            part.append((x, y))
    if part:
        parts.append(part)
    assert len(parts) == len(runs)
    for run, poly in zip(runs, parts, strict=True):
        # along the top (high) and back along the bottom (low): every x twice
        assert [p[0] for p in poly] == [t[i] for i in run] + [t[i] for i in reversed(run)]
        assert [p[1] for p in poly[: len(run)]] == [high[i] for i in run]
        assert [p[1] for p in poly[len(run) :]] == [low[i] for i in reversed(run)]
