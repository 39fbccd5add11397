"""A real browser: JupyterLab on loopback, Debian's Chromium driven by Playwright, opening
02_execute.ipynb, running it, clicking Execute, seeing the chart reach 100% and Verify say done."""

from __future__ import annotations

import importlib.util
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import ci_env
import pytest

from reassign_kit import runbook

pytestmark = [pytest.mark.integration, pytest.mark.browser]

CHROMIUM = os.environ.get("RK_CHROMIUM", "/usr/bin/chromium")  # RK_CHROMIUM: a test's stand-in
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def browser_ready() -> None:
    """Before the sandbox starts (session fixtures are set up first, in argument order)."""
    require_browser()


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
    token, port = secrets.token_hex(16), _free_port()
    # user settings of this lab only: no "get Jupyter news?" toast over the screenshot
    settings = tmp_path / "jsettings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jrt"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "jsettings"),
    }
    log = open(tmp_path / "jupyterlab.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--ServerApp.token={token}",
            "--allow-root",
            "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.open_browser=False",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2
                )
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"JupyterLab did not start: {(tmp_path / 'jupyterlab.log').read_text()[-2000:]}"
                    ) from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", token, tmp_path
    finally:
        proc.terminate()  # by its pid: only the server this test started
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def require_browser() -> None:
    """Chromium and Playwright, or a failure in CI (whichever way it says CI: ci_env.in_ci)
    and a skip that says why elsewhere; checked before JupyterLab starts."""
    if not os.path.exists(CHROMIUM):
        ci_env.missing(CHROMIUM, "`make setup` installs Debian's chromium")
    if importlib.util.find_spec("playwright") is None:
        ci_env.missing("playwright", "install the [dev] extra (make setup)")


def test_execute_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    url, token, tmp = lab
    shots = Path(__file__).resolve().parent.parent / "out" / "browser"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2200})
        try:
            page.goto(f"{url}/lab/tree/02_execute.ipynb?token={token}")
            page.wait_for_function(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget "
                "&& window.jupyterapp.shell.currentWidget.sessionContext "
                "&& window.jupyterapp.shell.currentWidget.sessionContext.session",
                timeout=90_000,
            )
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                " && window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'",
                timeout=90_000,
            )
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            execute = page.locator("button.jupyter-button:has-text('Execute')")
            execute.wait_for(timeout=120_000)
            page.wait_for_function(
                "() => { const b = [...document.querySelectorAll('button.jupyter-button')]"
                ".find(x => x.textContent.includes('Execute')); return b && !b.disabled; }",
                timeout=120_000,
            )
            page.locator(".js-plotly-plot").first.wait_for(timeout=60_000)
            execute.click()
            page.wait_for_function(
                "() => [...document.querySelectorAll('.js-plotly-plot .gtitle')]"
                ".some(t => t.textContent.includes('100% done'))",
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
            page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
            page.screenshot(path=str(shots / "02_execute.png"), full_page=True)
        except Exception:
            page.screenshot(path=str(shots / "02_execute_failed.png"), full_page=True)
            raise
        finally:
            browser.close()
    assert (tmp / "out" / "execute_report.json").exists()
