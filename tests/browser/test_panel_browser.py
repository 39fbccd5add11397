"""The panel as an on-call SRE meets it: JupyterLab in Debian's Chromium at
1366x768, on the session sandbox. Execute and the status fit in the window; a throttled run's
throttle is changed mid-run and found in the journal and the brokers' configs; paused shows no
countdown; done says "done in …" with no ETA; a second plan is cancelled through the
confirmation and the panel's per-partition outcome, the journal and the cluster agree.
Screenshots (before, during, paused, done, cancelled) go to tests/out/browser/."""

from __future__ import annotations

import json
import re
import secrets
import time
from pathlib import Path

import nbformat
import pytest
from jlab import CHROMIUM, FLAGS, SHOTS, jupyter_lab, open_notebook, require_chromium, wait_until

from reassign_kit import runbook
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.model import Plan

pytestmark = [pytest.mark.integration, pytest.mark.browser]

MIB = 1024 * 1024
START_MIBS = 0.3  # the throttle the runs start with (MiB/s): ~80 s for the first plan, time
NEW_MIBS = 0.45  # enough on a loaded machine to change the throttle and pause mid-run
# the second plan's: slow enough that its last moves are still copying when Cancel is confirmed
# (at START_MIBS a loaded machine's browser let it finish first, which hides the confirmation)
CANCEL_MIBS = 0.12
W, H = 1366, 768


def _events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line being written
    return out


def _notebook(root: Path, bootstrap: str, plans: list[str], outs: list[str]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        # no pause before the panels: their charts are views holding the whole figure
        # (charts.figure_view), drawn whenever the page gets to them
        nbformat.v4.new_code_cell(
            "from reassign_kit.model import Plan\nfrom reassign_kit.ui import panel\n"
            f"bootstrap = {bootstrap!r}"
        ),
        nbformat.v4.new_code_cell(
            f"p1 = panel(Plan.read({plans[0]!r}), bootstrap, output_dir={outs[0]!r},\n"
            f"           throttle={int(START_MIBS * MIB)}, batch_size=1, incremental=True,\n"
            "           poll_interval_ms=300)\np1"
        ),
        nbformat.v4.new_code_cell(
            f"p2 = panel(Plan.read({plans[1]!r}), bootstrap, output_dir={outs[1]!r},\n"
            f"           throttle={int(CANCEL_MIBS * MIB)}, batch_size=2, incremental=True,\n"
            "           poll_interval_ms=300)\np2"
        ),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, str(root / "panel.ipynb"))


# the panel's chart as drawn in the page: its title, the traces plotly drew, the bars with a
# height, the points of the moves-over-time areas
CHART_JS = """el => {
  const plot = el.querySelector('.rk-chart .js-plotly-plot');
  if (!plot) return null;
  const t = plot.querySelector('.gtitle');
  const drawn = sel => Array.from(plot.querySelectorAll(sel)).filter(p => {
    const d = p.getAttribute('d') || ''; return d.length > 0 && d !== 'M0,0Z'; }).length;
  const box = r => (r ? r.getBoundingClientRect() : {height: 0, width: 0});
  return {
    // drawn, not only in the DOM: a plot in a 0-px-high container has its title text too
    height: Math.min(box(plot).height, box(plot.querySelector('.main-svg')).height),
    title: t && box(t).height > 0 ? t.textContent : '',
    traces: plot.querySelectorAll('g.trace').length,
    bars: drawn('.barlayer .point path'),
    areas: drawn('.scatterlayer .trace path.js-fill') + drawn('.scatterlayer .trace path.js-line'),
    line: (el.querySelector('.rk-progress') || {}).textContent || '',
  };
}"""


# the ETA over the run as drawn: its title and the traces plotly drew
ETA_JS = """el => {
  const plot = el.querySelector('.rk-eta-chart .js-plotly-plot');
  const t = plot && plot.querySelector('.gtitle');
  return plot ? {title: t ? t.textContent : '', traces: plot.querySelectorAll('g.trace').length,
                 height: plot.getBoundingClientRect().height} : null;
}"""


def _chart(panel) -> dict:
    got = panel.evaluate(CHART_JS) or {"title": "", "traces": 0, "bars": 0, "areas": 0, "line": ""}
    if got.get("height", 0) < 300:  # the panel's chart is 520 px high and more
        got["title"] = ""
    return got


def _shot_chart(page, panel, name: str) -> None:
    """The panel's chart alone, cut from the page: the plot is redrawn whole at each refresh
    (charts.show), so Playwright's element screenshot, which waits for a stable element,
    can wait for ever while a run moves."""
    chart = panel.locator(".rk-chart")
    chart.evaluate("el => el.scrollIntoView({block: 'start'})")
    box = chart.bounding_box()
    assert box is not None, "the chart is not shown"
    vp = page.viewport_size
    top = max(box["y"], 0)
    clip = {
        "x": max(box["x"], 0),
        "y": top,
        "width": min(box["width"], vp["width"] - max(box["x"], 0)),
        "height": min(box["y"] + box["height"], vp["height"]) - top,
    }
    page.screenshot(path=str(SHOTS / name), clip=clip)


def _percent(text: str) -> str | None:
    m = re.search(r"(\d+)%", text)
    return m.group(1) if m else None


def _rates(gw: AdminGateway, brokers: list[int]) -> dict[int, tuple[str, str]]:
    cfg = gw.broker_configs(brokers)
    return {b: (c.get(LEADER_RATE, ""), c.get(FOLLOWER_RATE, "")) for b, c in cfg.items()}


def test_panel_live_throttle_pause_done_and_cancel_report(sandbox, bootstrap, tmp_path):
    require_chromium()
    from playwright.sync_api import sync_playwright

    SHOTS.mkdir(parents=True, exist_ok=True)
    root = tmp_path / "lab"
    root.mkdir()
    topics = [f"panel-a-{secrets.token_hex(3)}", f"panel-b-{secrets.token_hex(3)}"]
    plans = [
        runbook.demo_topic_and_plan(str(sandbox.dir), str(tmp_path / f"in{i}"), t, 4, 3.0)
        for i, t in enumerate(topics)
    ]
    outs = [str(tmp_path / "run1"), str(tmp_path / "run2")]
    journals = [Path(o) / "journal.jsonl" for o in outs]
    _notebook(root, bootstrap, plans, outs)
    brokers = sorted(b["id"] for b in sandbox.brokers)
    gw = AdminGateway(bootstrap)
    plan2 = Plan.read(plans[1])
    before2 = gw.describe_partitions([m.tp for m in plan2])
    try:
        with (
            jupyter_lab(root, tmp_path) as (url, token),
            sync_playwright() as pw,
        ):
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            page = browser.new_page(viewport={"width": W, "height": H})
            console: list[str] = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
            try:
                _drive(page, url, token, journals, gw, brokers, plan2, before2)
            except Exception:
                try:  # best effort: a screenshot that times out must not hide the failure
                    page.screenshot(path=str(SHOTS / "panel_failed.png"), timeout=15_000)
                except Exception as e:  # noqa: BLE001
                    console.append(f"(no failure screenshot: {e})")
                raise
            finally:
                (SHOTS / "panel_console.txt").write_text("\n".join(console))
                browser.close()
    finally:
        try:
            for m in plan2:
                if gw.list_reassignments([m.tp]):
                    gw.alter_reassignments({m.tp: None})
        finally:
            gw.close()
            admin = sandbox.admin()
            for f in admin.delete_topics(topics).values():
                f.result(60)


def _drive(page, url, token, journals, gw, brokers, plan2, before2) -> None:
    from playwright.sync_api import expect

    open_notebook(page, url, token, "panel.ipynb")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    panels = page.locator(".rk-panel")
    page.wait_for_function(
        "() => document.querySelectorAll('.rk-panel').length === 2", timeout=180_000
    )
    p1 = panels.nth(0)

    def button(panel, name):
        exact = re.compile(rf"^\s*{re.escape(name)}\s*$")
        return panel.locator("button.jupyter-button").filter(has_text=exact)

    def progress(panel) -> str:
        return panel.locator(".rk-progress").inner_text()

    # the panel's top at the top of the notebook: Execute and the status fit at 1366x768
    p1.evaluate("el => el.scrollIntoView({block: 'start'})")
    execute = button(p1, "Execute")
    expect(execute).to_be_enabled(timeout=120_000)
    time.sleep(1.0)  # layout settles (the what-if, the chart)
    for what, loc in (("Execute", execute), ("the status", p1.locator(".rk-progress"))):
        box = loc.bounding_box()
        assert box is not None, f"{what} is not shown"
        assert 0 <= box["y"] and box["y"] + box["height"] <= H, f"{what} is below the fold: {box}"
        assert 0 <= box["x"] and box["x"] + box["width"] <= W, f"{what} is cut at the side: {box}"
    assert "not started" in progress(p1)
    # the chart is drawn before the run: the plan's bytes per broker, its title (a blank
    # chart was a FigureWidget whose model missed its figure)
    before = wait_until(
        lambda: (c := _chart(p1))["title"].startswith("plan: ") and c["bars"] > 0 and c,
        60,
        f"the plan's chart drawn: {_chart(p1)}",
    )
    assert "not started" in before["title"], before
    page.screenshot(path=str(SHOTS / "panel_1_before.png"))
    _shot_chart(page, p1, "panel_1_before_chart.png")

    # a throttled run; its throttle changed mid-run
    execute.click()
    wait_until(lambda: progress(p1).startswith("running: "), 120, "the run running")
    wait_until(lambda: "ETA" in progress(p1), 60, "a first ETA")
    throttle = p1.locator(".rk-control:has(.rk-label:text-matches('^throttle')) input")
    assert not throttle.is_disabled()
    # what cannot change is locked, the reason on hover
    assert p1.locator("[title^='locked: the pacing mode']").count() >= 1
    page.screenshot(path=str(SHOTS / "panel_2_during.png"))
    _shot_chart(page, p1, "panel_2_during_chart.png")
    throttle.fill(str(NEW_MIBS))
    throttle.press("Enter")
    new_rate = int(round(NEW_MIBS * MIB))
    wait_until(
        lambda: any(
            e["event"] == "throttle_changed" and e.get("rate") == new_rate
            for e in _events(journals[0])
        ),
        60,
        "throttle_changed in the journal",
    )
    seen: dict = {}

    def brokers_have_it() -> bool:
        seen.update(_rates(gw, brokers))
        return any(str(new_rate) in v for v in seen.values())

    # the brokers of the moves in flight get the new rate at the run's next poll (later
    # moves from their start: Run.set_throttle)
    wait_until(brokers_have_it, 60, f"a broker throttle of {new_rate}: {seen}")
    assert progress(p1).startswith("running: ")

    # paused: no countdown
    button(p1, "Pause").click()
    wait_until(lambda: progress(p1).startswith("paused at "), 60, "paused")
    time.sleep(1.5)  # at least one refresh after the pause
    line = progress(p1)
    assert line.startswith("paused at ") and "ETA" not in line, line
    assert "ETA" not in p1.inner_text()
    # the chart says the same state and the same percentage as the line (read together)
    paused = wait_until(
        lambda: (
            (c := _chart(p1))["title"].endswith("paused")
            and _percent(c["title"]) == _percent(c["line"])
            and c
        ),
        30,
        f"the chart paused at the line's percentage: {_chart(p1)}",
    )
    assert paused["line"].startswith("paused at "), paused
    page.screenshot(path=str(SHOTS / "panel_3_paused.png"))

    # resumed to the end: done, no ETA
    button(p1, "Resume").click()
    wait_until(lambda: progress(p1).startswith("done in "), 300, "done")
    line = progress(p1)
    assert "ETA" not in line, line
    # the chart: 100% done, every move a bar of the timeline, the areas and the broker bars
    done = wait_until(
        lambda: "100% done" in (c := _chart(p1))["title"] and c["title"].endswith("done") and c,
        30,
        f"the chart at 100% done: {_chart(p1)}",
    )
    assert done["areas"] > 0 and done["bars"] > 0 and done["traces"] >= 9, done
    assert "ETA" not in done["title"], done
    # the ETA over the run beside the time really left; a static run shows no
    # adaptive pace
    eta = wait_until(
        lambda: (c := p1.evaluate(ETA_JS)) and c["title"].startswith("The ETA over the run") and c,
        30,
        f"the ETA chart with the truth: {p1.evaluate(ETA_JS)}",
    )
    assert eta["traces"] >= 3 and eta["height"] >= 300, eta
    assert p1.locator(".rk-pace").is_hidden()
    assert _events(journals[0])[-1]["event"] == "run_finished"
    assert _events(journals[0])[-1]["state"] == "done"
    p1.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SHOTS / "panel_4_done.png"))
    _shot_chart(page, p1, "panel_4_done_chart.png")

    # a second plan, cancelled through the confirmation once a move has completed
    p2 = panels.nth(1)
    p2.evaluate("el => el.scrollIntoView({block: 'start'})")
    button(p2, "Execute").click()
    wait_until(
        lambda: any(e["event"] == "completed" for e in _events(journals[1])),
        180,
        "a first move of the second plan completed",
    )
    button(p2, "Cancel").click()
    confirm = button(p2, "Confirm cancel (roll back)")
    confirm.wait_for(timeout=10_000)
    assert "rolled back" in p2.inner_text() and "KEPT" in p2.inner_text()
    confirm.click()
    table = p2.locator("table.rk-outcomes")
    table.wait_for(timeout=300_000)
    p2.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(SHOTS / "panel_5_cancelled.png"))
    assert progress(p2).startswith("cancelled at "), progress(p2)
    assert "ETA" not in progress(p2)
    cancelled = wait_until(
        lambda: (
            (c := _chart(p2))["title"].endswith("cancelled")
            and _percent(c["title"]) == _percent(c["line"])
            and c
        ),
        30,
        f"the chart of the cancelled run: {_chart(p2)}",
    )
    assert cancelled["areas"] > 0 and cancelled["bars"] > 0, cancelled

    rows = {}
    for tr in table.locator("tr.rk-outcome").all():
        cells = [c.inner_text() for c in tr.locator("td").all()]
        rows[cells[0]] = {
            "outcome": cells[1],
            "replicas": json.loads(cells[2]),
            "leader": int(cells[5]),
        }
    assert len(rows) == len(plan2), rows
    events = _events(journals[1])
    final = events[-1]
    assert final["event"] == "run_finished" and final["state"] in ("stopped", "cancelled"), final
    last: dict[str, str] = {}
    for e in events:
        if e.get("topic") is not None and e["event"] in (
            "submitted",
            "completed",
            "cancelled",
            "rolling_back",
            "failed",
        ):
            last[f"{e['topic']}-{e['partition']}"] = e["event"]
    cluster = gw.describe_partitions([m.tp for m in plan2])
    outcomes = [r["outcome"] for r in rows.values()]
    assert "kept at target" in outcomes, rows
    assert any(o in ("rolled back", "never started") for o in outcomes), rows
    for m in plan2:
        key = str(m.tp)
        row, st = rows[key], cluster[m.tp]
        # the panel says what the cluster holds: replicas and leader
        assert tuple(row["replicas"]) == tuple(st.replicas), (key, row, st)
        assert row["leader"] == st.leader, (key, row, st)
        assert not st.reassigning, (key, st)
        # and what the journal says happened
        if row["outcome"] == "kept at target":
            assert tuple(st.replicas) == tuple(m.replicas) and last.get(key) == "completed"
        elif row["outcome"] == "rolled back":
            assert tuple(st.replicas) == tuple(before2[m.tp].replicas)
            assert last.get(key) == "cancelled", (key, last.get(key))
        else:
            assert row["outcome"] == "never started", row
            assert tuple(st.replicas) == tuple(before2[m.tp].replicas) and key not in last
    assert final["cancelled"] == outcomes.count("rolled back"), final
