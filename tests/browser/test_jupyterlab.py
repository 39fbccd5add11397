"""A real browser: JupyterLab on loopback, Debian's Chromium driven by Playwright, opening
02_execute.ipynb, running it, clicking Execute, seeing the chart reach 100% and Verify say done."""

from __future__ import annotations

import secrets

import pytest
from jlab import CHROMIUM, FLAGS, SHOTS, jupyter_lab, open_notebook, require_chromium

from reassign_kit import runbook

pytestmark = [pytest.mark.integration, pytest.mark.browser]


@pytest.fixture(scope="session")
def browser_ready() -> None:
    """Before the sandbox starts (session fixtures are set up first, in argument order)."""
    require_chromium()


@pytest.fixture
def lab(browser_ready, tmp_path, sandbox):
    """JupyterLab serving a parameterised copy of 02_execute.ipynb (papermill prepare_only)."""
    import papermill as pm

    root = tmp_path / "lab"
    root.mkdir()
    pm.execute_notebook(
        str(runbook.notebooks_dir() / "02_execute.ipynb"),
        str(root / "02_execute.ipynb"),
        parameters={
            "sandbox_dir": str(sandbox.dir),
            "demo_topic": f"lab-{secrets.token_hex(3)}",
            "output_dir": str(tmp_path / "out"),
            "demo_partitions": 4,
            "demo_mb_per_partition": 1.0,
            "throttle": 8_000_000,
            "poll_interval_ms": 300,
        },
        prepare_only=True,
        kernel_name="python3",
        progress_bar=False,
    )
    with jupyter_lab(root, tmp_path) as (url, token):
        yield url, token, tmp_path


def test_execute_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    url, token, tmp = lab
    shots = SHOTS
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        try:
            open_notebook(page, url, token, "02_execute.ipynb")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            execute = page.locator("button.jupyter-button:has-text('Execute')")
            execute.wait_for(timeout=120_000)
            page.wait_for_function(
                "() => { const b = [...document.querySelectorAll('button.jupyter-button')]"
                ".find(x => x.textContent.includes('Execute')); return b && !b.disabled; }",
                timeout=120_000,
            )
            # the run's chart panes are hidden until it starts: the progress line
            # is the status that is always shown (test_panel_browser checks the chart)
            page.locator(".rk-progress").first.wait_for(timeout=60_000)
            execute.click()
            page.wait_for_function(
                "() => [...document.querySelectorAll('.rk-progress')]"
                ".some(t => t.textContent.startsWith('done in'))",
                timeout=300_000,
            )
            verify = page.locator("button.jupyter-button:has-text('Verify')")
            page.wait_for_function(
                "() => { const b = [...document.querySelectorAll('button.jupyter-button')]"
                ".find(x => x.textContent.includes('Verify')); return b && !b.disabled; }",
                timeout=120_000,
            )
            verify.click()
            page.get_by_text("verify: done").first.wait_for(timeout=120_000)
            page.locator(".rk-progress").first.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "02_execute.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(shots / "02_execute_failed.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert (tmp / "out" / "execute_report.json").exists()
