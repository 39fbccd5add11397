"""The adaptive pace charted ("the panel charts rate, latency and the objective over
time"; "the decision log of one adaptive run, rendered in the panel") and the ETA over the run
in the panel and the postmortem. The journal is a real adaptive run on the
simulator (``test_pace_run``'s latency model); the shaping is also checked on hostile event
lists (hypothesis)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_pace_run import SimLatency, adaptive, cluster
from test_ui_panel import make_panel

from reassign_kit.cluster.simulate import MB
from reassign_kit.moves.journal import read_events
from reassign_kit.ui import charts, charts_pace, figures_pace, postmortem_charts
from reassign_kit.ui.run_views import RunViews


@pytest.fixture(scope="module")
def adaptive_journal(tmp_path_factory) -> list[dict]:
    """One adaptive run whose broker 3 turns slow at 20 s: its rate comes down, the others
    go on (decreases and increases, each with its cause and signal)."""
    tmp = tmp_path_factory.mktemp("pace")
    sim, plan = cluster()
    health = SimLatency(sim)
    run, j = adaptive(sim, plan, tmp, health)

    def on(e):
        if sim.now() > 1000:
            run.stop()
        if e["event"] == "sample" and sim.now() >= 20:
            health.extra_ms[3] = 100.0

    run.subscribe(on)
    assert run.run().state == "done"
    return read_events(j)


def test_the_series_follow_every_decision_of_the_run(adaptive_journal):
    ev = adaptive_journal
    decisions = [e for e in ev if e["event"] == "pace_decision"]
    s = figures_pace.pace_series(ev, max_points=10_000)
    t0 = ev[0]["ts"]
    assert s.adaptive and s.objective == "30ms" and s.limits == {b: 30.0 for b in range(4)}
    assert len(s.decisions) == len(decisions) > 10
    assert {d.action for d in s.decisions} >= {"increase", "decrease"}
    for e in decisions:
        if e.get("broker") is None:
            continue
        xs, ys = s.rates[e["broker"]]
        # the step line takes the decision's new rate at its time
        assert e["new_rate"] in [y for x, y in zip(xs, ys, strict=True) if x == e["ts"] - t0]
        px, py = s.p99[e["broker"]]
        assert e["signals"]["produce_p99_ms"] in py
    # broker 3 (slow from 20 s) ends lower than it started; each line reaches the run's end
    assert s.rates[3][1][-1] < s.rates[3][1][0]
    assert all(xs[-1] == pytest.approx(s.end) for xs, _ in s.rates.values())
    assert s.end == pytest.approx(ev[-1]["ts"] - t0)


def test_the_figure_draws_rates_p99_the_objective_and_each_decision_with_its_cause(
    adaptive_journal,
):
    s = figures_pace.pace_series(adaptive_journal)
    fig = charts_pace.pace_figure(s)
    names = [t.name for t in fig.data]
    assert [f"broker {b}" for b in range(4)] == [n for n in names if n.endswith(tuple("0123"))]
    rate = next(t for t in fig.data if t.name == "broker 3")
    assert rate.line.shape == "hv" and rate.xaxis == "x"
    objective = next(t for t in fig.data if t.name.startswith("objective"))
    assert list(objective.y) == [30.0, 30.0] and objective.yaxis == "y2"
    assert objective.x[-1] == pytest.approx(s.end)
    marked = [t for t in fig.data if t.name in ("rate raised", "rate lowered")]
    n = sum(len(t.x) for t in marked)
    assert n == len([d for d in s.decisions if d.new_rate is not None])
    lowered = next(t for t in fig.data if t.name == "rate lowered")
    assert lowered.text and all("p99 over the objective" in h for h in lowered.text)
    assert "30ms" in fig.layout.title.text and str(len(s.decisions)) in fig.layout.title.text
    assert fig.layout.template.layout.colorway  # the package's template
    json.dumps(charts.figure_bundle(fig))  # the panel's mime bundle is plain JSON


def test_the_decisions_table_is_newest_first_and_bounded(adaptive_journal):
    s = figures_pace.pace_series(adaptive_journal)
    rows, older = figures_pace.decision_rows(s, limit=5)
    assert len(rows) == 5 and older == len(s.decisions) - 5
    newest = s.decisions[-1]
    assert rows[0]["broker"] == str(newest.broker) and rows[0]["cause"] == newest.cause
    assert "→" in rows[0]["rate"] and "MiB/s" in rows[0]["rate"]
    assert rows[0]["signal"].startswith("p99 ")
    page = charts_pace.pace_table_html(s)
    assert page.count("<tr>") == 1 + figures_pace.PACE_ROWS
    assert f"{len(s.decisions) - figures_pace.PACE_ROWS} older decisions" in page


def test_the_views_follow_the_decisions_as_they_arrive(adaptive_journal):
    """The panel's views redraw from the events so far: half the run, then all of it."""
    ev = adaptive_journal
    cut = next(
        i for i, e in enumerate(ev) if e["event"] == "pace_decision" and e["action"] == "decrease"
    )
    views = RunViews()
    views.refresh(ev[:2])  # run_started: adaptive, nothing decided yet
    assert views.pace_box.layout.display == "flex" and "no pace decision" in views.pace_table.value
    views.refresh(ev[: cut + 1], now=ev[cut]["ts"] + 10)
    first = charts.shown(views.pace_chart)
    assert "rate lowered" in [t.get("name") for t in first["data"] if t.get("x")]
    rows_then = views.pace_table.value
    views.refresh(ev)
    last = charts.shown(views.pace_chart)
    assert last["layout"]["title"]["text"] != first["layout"]["title"]["text"]
    assert views.pace_table.value != rows_then
    # the live ETA (estimate and range so far) without the truth, then with it
    assert views.eta_box.layout.display == "flex"
    eta = charts.shown(views.eta_chart)
    assert "time really left" in [t.get("name") for t in eta["data"]]
    views.refresh(ev, eta=False)  # paused: no estimate shown anywhere
    assert views.eta_box.layout.display == "none" and views.pace_box.layout.display == "flex"


def test_a_static_run_has_no_pace_chart_and_its_eta_chart_gets_the_truth(tmp_path):
    p = make_panel(cluster_of_panel(), tmp_path, batch_size=1, throttle=10 * MB)
    assert p.views.pace_box.layout.display == "none"
    assert p.views.eta_box.layout.display == "none"  # nothing estimated before the run
    p.buttons["execute"].click()
    p.wait(60)
    assert p.phase == "done", p.message.value
    assert p.views.pace_box.layout.display == "none" and charts.shown(p.views.pace_chart) is None
    assert p.views.eta_box.layout.display == "flex"
    eta = charts.shown(p.views.eta_chart)
    assert {"ETA", "time really left"} <= {t.get("name") for t in eta["data"]}
    page = (tmp_path / "execute_chart.html").read_text()
    assert '<section id="eta">' in page and '<section id="pace">' not in page


def cluster_of_panel():
    from test_ui_panel import cluster as panel_cluster

    return panel_cluster()


def test_the_panel_runs_the_adaptive_pace_and_shows_its_decisions(tmp_path):
    # long enough for broker 3 to read over for a decrease's 11 s
    sim, _ = cluster(4, 40 * MB)
    sim.add_topic("orders", [[0, 1], [1, 2], [2, 3], [3, 0]], 40 * MB)
    health = SimLatency(sim)
    health.extra_ms[3] = 100.0  # broker 3 over the objective from the start
    p = make_panel(sim, tmp_path, batch_size=2, incremental=True, throttle=8 * MB)
    p._run_kwargs["health"] = health
    p.controls["pace"].value = "adaptive"
    p.controls["slo_produce_p99"].value = "30ms"
    p.controls["throttle_floor"].value = 0.5  # MiB/s on screen, bytes/s in the options
    assert p.options()["pace"] == "adaptive" and p.options()["slo_produce_p99"] == "30ms"
    assert p.options()["throttle_floor"] == MB // 2
    p.buttons["execute"].click()
    p.wait(120)
    assert p.phase == "done", p.message.value
    assert p.views.pace_box.layout.display == "flex"
    shown = charts.shown(p.views.pace_chart)
    assert shown is not None and "adaptive pace" in shown["layout"]["title"]["text"]
    assert {"broker 3", "objective 30 ms"} <= {t.get("name") for t in shown["data"]}
    decisions = [e for e in p.events if e.get("event") == "pace_decision"]
    assert decisions and "<table class='rk-pace-table'" in p.views.pace_table.value
    newest = decisions[-1]
    assert p.views.pace_table.value.index(newest["cause"]) < p.views.pace_table.value.index(
        "</table>"
    )
    page = (tmp_path / "execute_chart.html").read_text()
    assert '<section id="pace">' in page and '<section id="eta">' in page
    # the controls' values reach the run as the CLI's options
    assert p.run.options.pace == "adaptive" and p.run.options.slo_produce_p99 == "30ms"
    assert p.run.options.throttle_floor == MB // 2
    started = next(e for e in p.events if e.get("event") == "pace_started")
    assert started["floor"] == MB // 2
    from reassign_kit.ui.controls import editable_controls, lock_reasons

    names = list(p.controls)
    assert "throttle_floor" not in editable_controls("running", names, throttled=True)
    assert "floor is fixed" in lock_reasons("running")["throttle_floor"]


def test_the_postmortems_figures_of_a_journal(adaptive_journal):
    figs = postmortem_charts.journal_figures(adaptive_journal)
    assert set(figs) == {"pace", "eta"}
    two = adaptive_journal + [
        dict(e, run_id="other") for e in adaptive_journal if e["event"] != "pace_decision"
    ]
    assert set(postmortem_charts.journal_figures(two)) >= {
        f"pace {adaptive_journal[0]['run_id']}",
        "eta other",
    }


# ---- hostile journals ----------------------------------------------------------------------

_VAL = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.lists(st.integers(0, 3), max_size=3),
)
_EVENT = st.fixed_dictionaries(
    {
        "ts": st.floats(0, 1e4, allow_nan=False),
        "event": st.sampled_from(
            ["pace_started", "pace_decision", "pace_sample", "run_started", "sample", "note"]
        ),
    },
    optional={
        "broker": st.one_of(st.integers(0, 40), st.text(max_size=3), st.none()),
        "action": st.sampled_from(["increase", "decrease", "pause", "resume", "baseline", 7]),
        "old_rate": _VAL,
        "new_rate": _VAL,
        "cause": _VAL,
        "reason": _VAL,
        "objective": st.sampled_from(["50ms", "+20ms", None, 3]),
        "start_rate": _VAL,
        "signals": st.one_of(
            _VAL, st.fixed_dictionaries({}, optional={"produce_p99_ms": _VAL, "limit_ms": _VAL})
        ),
        "brokers": st.one_of(
            _VAL,
            st.dictionaries(
                st.one_of(st.text(max_size=2), st.integers(0, 40).map(str)),
                st.one_of(
                    _VAL,
                    st.fixed_dictionaries({}, optional={"rate": _VAL, "produce_p99_ms": _VAL}),
                ),
                max_size=6,
            ),
        ),
    },
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_EVENT, max_size=60), st.integers(2, 20), st.integers(1, 8))
# a broker named by a digit Python's isdigit accepts and int refuses (a superscript one)
@example([{"ts": 0.0, "event": "pace_decision", "broker": "\u00b9"}], 2, 1)
def test_any_journal_gives_bounded_ordered_series(events, max_points, max_brokers):
    s = figures_pace.pace_series(events, max_points=max_points, max_brokers=max_brokers)
    assert len(s.rates) <= max_brokers and len(s.p99) <= max_brokers
    for xs, ys in [*s.rates.values(), *s.p99.values()]:
        assert len(xs) == len(ys) <= max_points
        assert xs == sorted(xs)
    assert len(s.pauses) <= figures_pace.MAX_PAUSES
    assert all(a <= b for a, b in s.pauses)
    rows, older = figures_pace.decision_rows(s, limit=5)
    assert len(rows) == min(5, len(s.decisions)) and older == len(s.decisions) - len(rows)
    charts_pace.pace_table_html(s)


@settings(max_examples=25, deadline=None)  # a figure is ~0.1 s: fewer draws than shapings
@given(st.lists(_EVENT, max_size=60))
def test_any_journal_is_drawn(events):
    s = figures_pace.pace_series(events)
    fig = charts_pace.pace_figure(s)  # whatever the journal held, never raises
    assert json.loads(json.dumps(charts.figure_bundle(fig)))["layout"]["title"]["text"]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.5, 50), st.integers(0, 3), st.integers(1, 10**8)),
        min_size=1,
        max_size=30,
    )
)
def test_each_brokers_rate_is_its_last_decision_until_the_next(steps):
    """Decisions alone (no sample): the step line at any decision's time is its new rate, and
    before a broker's first decision it is that decision's old rate."""
    t, events, rate = 100.0, [{"ts": 100.0, "event": "pace_started", "start_rate": 5}], {}
    for dt, b, new in steps:
        t += dt
        old = rate.get(b, 5)
        events.append({"ts": t, "event": "pace_decision", "action": "increase", "broker": b,
                       "old_rate": old, "new_rate": new, "cause": "c"})  # fmt: skip
        rate[b] = new
    s = figures_pace.pace_series(events, max_points=10_000)
    for e in events[1:]:
        xs, ys = s.rates[e["broker"]]
        at = [y for x, y in zip(xs, ys, strict=True) if math.isclose(x, e["ts"] - 100.0)]
        assert at[-1] == e["new_rate"]  # the last point at that time: the rate from then on
    for b, new in rate.items():
        xs, ys = s.rates[b]
        assert ys[0] == 5 and ys[-1] == new


def test_the_panels_pace_controls_refuse_a_missing_or_bad_objective_by_name(tmp_path):
    sim = cluster_of_panel()
    p = make_panel(sim, tmp_path, throttle=8 * MB)
    p.controls["pace"].value = "adaptive"  # no objective
    assert "--pace adaptive needs --slo-produce-p99" in p.whatif_html.value
    p.buttons["execute"].click()
    assert p.run is None and "--slo-produce-p99" in p.message.value
    p.controls["slo_produce_p99"].value = "fast"
    assert "not &#x27;fast&#x27;" in p.whatif_html.value
    p.buttons["execute"].click()
    assert p.run is None and not sim.active  # nothing sent
    assert p.views.pace_box.layout.display == "none"
    p.controls["slo_produce_p99"].value = "30ms"
    p.controls["throttle_floor"].value = 16.0  # above the 8 MiB/s ceiling
    p.buttons["execute"].click()
    assert p.run is None and "--throttle-floor" in p.message.value and not sim.active
