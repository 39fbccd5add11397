"""The decision log of one adaptive run, rendered in the panel: an
``--pace adaptive`` run of a plan on the sandbox, started from the panel in JupyterLab (Debian's
Chromium through Playwright), and the panel's pace chart and decisions table screenshotted
once the run is done. Not part of ``make test`` (a few minutes; one sandbox).

Usage (from the repo's root)::

    RK_KAFKA_CACHE=... .venv/bin/python tests/browser/shot_panel_pacing.py \\
        [--dir SANDBOX] [--slo 50ms] [--out docs/images/panel-pacing.png]

``--dir`` / ``$RK_SANDBOX_DIR`` reuses a running sandbox; else a 4-broker one is started and
stopped. The objective is absolute (``--slo``): this shared machine's produce p99 swings by
tens to hundreds of ms with no move at all, so a tight one shows decreases, a loose one only
increases. Exits non-zero, saying why, when the panel did not show the pace as it should
(no chart drawn, no decision in the table, the run not done)."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import secrets
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import nbformat  # noqa: E402
from jlab import CHROMIUM, FLAGS, SHOTS, jupyter_lab, open_notebook, require_chromium, wait_until  # noqa: E402

from reassign_kit import runbook  # noqa: E402
from reassign_kit.moves.journal import read_events  # noqa: E402

MIB = 1024 * 1024
W, H = 1366, 1500  # tall enough for the pace box whole (chart and table)

# the pace's chart as drawn in the page (as CHART_JS of test_panel_browser for the progress)
PACE_JS = """el => {
  const plot = el.querySelector('.rk-pace-chart .js-plotly-plot');
  if (!plot) return null;
  const t = plot.querySelector('.gtitle');
  const box = r => (r ? r.getBoundingClientRect() : {height: 0, width: 0});
  return {
    height: box(plot).height,
    title: t && box(t).height > 0 ? t.textContent : '',
    traces: plot.querySelectorAll('g.trace').length,
    rows: el.querySelectorAll('table.rk-pace-table tr').length - 1,
    progress: (el.querySelector('.rk-progress') || {}).textContent || '',
  };
}"""


def _notebook(root: Path, bootstrap: str, plan: str, out: str, slo: str, ceiling: int) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from reassign_kit.model import Plan\nfrom reassign_kit.ui import panel\n"
            f"p = panel(Plan.read({plan!r}), {bootstrap!r}, output_dir={out!r},\n"
            f"          throttle={ceiling}, pace='adaptive', slo_produce_p99={slo!r},\n"
            "          batch_size=4, incremental=True, poll_interval_ms=500)\np"
        ),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, str(root / "pacing.ipynb"))


@contextlib.contextmanager
def _sandbox(dir_: str | None, tmp: Path):
    from reassign_kit.sandbox.sandbox import Sandbox

    if dir_:
        sb = Sandbox(dir_)
        if not sb.running():
            raise SystemExit(f"no running sandbox in {dir_}")
        yield sb
        return
    with Sandbox.start(brokers=4, racks=2, dir=tmp / "sandbox") as sb:
        yield sb


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=os.environ.get("RK_SANDBOX_DIR"))
    ap.add_argument("--slo", default="50ms", help="the adaptive pace's objective (absolute)")
    ap.add_argument("--ceiling-mib", type=float, default=2.0, help="--throttle (MiB/s)")
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--mb", type=float, default=12.0, help="MB per partition")
    ap.add_argument("--out", default=str(HERE.parent.parent / "docs/images/panel-pacing.png"))
    ap.add_argument("--timeout", type=float, default=900.0, help="the run's bound (s)")
    a = ap.parse_args(argv)
    require_chromium()
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="rk-shot-pacing-"))
    root = tmp / "lab"
    root.mkdir()
    topic = f"pacing-shot-{secrets.token_hex(3)}"
    out_dir = tmp / "run"
    with _sandbox(a.dir, tmp) as sb:
        try:
            plan = runbook.demo_topic_and_plan(
                str(sb.dir), str(tmp / "in"), topic, a.partitions, a.mb
            )
            _notebook(root, sb.bootstrap_servers, plan, str(out_dir), a.slo,
                      int(a.ceiling_mib * MIB))  # fmt: skip
            with jupyter_lab(root, tmp) as (url, token), sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
                try:
                    page = browser.new_page(viewport={"width": W, "height": H})
                    return _drive(page, url, token, out_dir, Path(a.out), a.timeout)
                finally:
                    browser.close()
        finally:
            with contextlib.suppress(Exception):
                sb.admin().delete_topics([topic])[topic].result(60)


def _drive(page, url: str, token: str, out_dir: Path, out: Path, timeout: float) -> int:
    from playwright.sync_api import expect

    open_notebook(page, url, token, "pacing.ipynb")
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function("() => document.querySelectorAll('.rk-panel').length === 1",
                           timeout=180_000)  # fmt: skip
    panel = page.locator(".rk-panel").first
    execute = panel.locator("button.jupyter-button").filter(has_text=re.compile(r"^\s*Execute\s*$"))
    expect(execute).to_be_enabled(timeout=120_000)
    # before the run: no pace chart (it is shown for an adaptive run once it starts)
    assert panel.locator(".rk-pace").is_hidden(), "the pace box shows before any run"
    execute.click()
    t0 = time.monotonic()
    journal = out_dir / "journal.jsonl"
    wait_until(lambda: panel.locator(".rk-pace").is_visible(), 180, "the pace box shown")
    last: dict = {}

    def done() -> bool:
        last.update(panel.evaluate(PACE_JS) or {})
        return str(last.get("progress", "")).startswith(("done in ", "failed", "stopped"))

    wait_until(done, timeout, f"the run's end in the panel: {last}", every=2.0)
    took = time.monotonic() - t0
    got = wait_until(
        lambda: (c := panel.evaluate(PACE_JS)) and c["title"].startswith("adaptive pace") and c,
        60,
        "the pace chart drawn",
    )
    events = read_events(str(journal))
    decisions = [e for e in events if e["event"] == "pace_decision"]
    print(f"run {last.get('progress')!r} in {took:.0f} s; {len(decisions)} decisions "
          f"({sorted({e['action'] for e in decisions})}); chart {got}")  # fmt: skip
    if not str(last.get("progress", "")).startswith("done in "):
        print(f"the run did not finish done: {last.get('progress')}", file=sys.stderr)
        return 1
    if not decisions or got["rows"] < 1 or got["height"] < 300:
        print(f"nothing to show: {len(decisions)} decisions, chart {got}", file=sys.stderr)
        return 1
    box = panel.locator(".rk-pace")
    box.evaluate("el => el.scrollIntoView({block: 'start'})")
    time.sleep(1.0)  # the plot laid out at its place
    out.parent.mkdir(parents=True, exist_ok=True)
    box.screenshot(path=str(out))
    size = out.stat().st_size
    print(f"wrote {out} ({size // 1024} KiB)")
    # the ETA over the run beside the truth, under it: for a look, not the docs
    eta = panel.locator(".rk-eta")
    if eta.is_visible():
        SHOTS.mkdir(parents=True, exist_ok=True)
        eta.evaluate("el => el.scrollIntoView({block: 'start'})")
        time.sleep(1.0)
        eta.screenshot(path=str(SHOTS / "panel_pacing_eta.png"))
        print(f"wrote {SHOTS / 'panel_pacing_eta.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
