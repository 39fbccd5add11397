"""JupyterLab on loopback and Debian's Chromium, for the browser tests (one place that starts
them: the server by its own process, stopped by its pid)."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

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
SHOTS = Path(__file__).resolve().parent.parent / "out" / "browser"


def require_chromium() -> None:
    """Chromium and Playwright, or a failure in CI (whichever way it says CI: ci_env.in_ci)
    and a skip that says why elsewhere; checked before JupyterLab starts."""
    import importlib.util

    import ci_env

    if not os.path.exists(CHROMIUM):
        ci_env.missing(CHROMIUM, "`make setup` installs Debian's chromium")
    if importlib.util.find_spec("playwright") is None:
        ci_env.missing("playwright", "install the [dev] extra (make setup)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyter_lab(root: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A JupyterLab server serving ``root``: yields (url, token)."""
    token, port = secrets.token_hex(16), _free_port()
    # user settings of this lab only: no "get Jupyter news?" toast over the screenshot
    settings = tmp_path / "jsettings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jcfg"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jrt"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "jsettings"),
    }
    log_path = tmp_path / "jupyterlab.log"
    log = open(log_path, "w")  # noqa: SIM115 - closed below
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
                        f"JupyterLab did not start: {log_path.read_text()[-2000:]}"
                    ) from None
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}", token
    finally:
        proc.terminate()  # by its pid: only the server this test started
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def wait_until(pred, timeout: float, what: str, every: float = 0.3):
    """The first truthy value of ``pred()``; AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(every)


def open_notebook(page, url: str, token: str, name: str) -> None:
    """Open ``name`` and wait for its kernel to be idle."""
    page.goto(f"{url}/lab/tree/{name}?token={token}")
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
