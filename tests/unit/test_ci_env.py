"""The browser test fails, never skips, when Chromium is missing in CI, whichever way the CI
says so: CI set to any value, or a runner's own variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import ci_env
import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "env",
    [{"CI": "true"}, {"CI": "1"}, {"CI": "false"}, {"CI": ""}, {"GITHUB_ACTIONS": "true"}]
    + [{"GITLAB_CI": "yes"}, {"JENKINS_URL": "http://j"}, {"BUILDKITE": "true"}],
)
def test_in_ci_whatever_the_value(env):
    assert ci_env.in_ci(env)


def test_not_in_ci_without_a_runner_variable():
    assert not ci_env.in_ci({"HOME": "/root", "PATH": "/bin"})


def _browser_test(env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ci_env.RUNNER_VARIABLES}
    env.update(env_extra, RK_CHROMIUM="/nonexistent/chromium")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rfs", "-p", "no:cacheprovider"]
        + ["tests/browser/test_jupyterlab.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("ci", [{"CI": "true"}, {"CI": "false"}, {"GITHUB_ACTIONS": "true"}])
def test_missing_chromium_fails_the_browser_test_in_ci(ci):
    proc = _browser_test(ci)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "1 error" in out or "1 failed" in out, out
    assert "/nonexistent/chromium is missing (in CI a missing dependency fails)" in out
    assert "skipped" not in out


def test_missing_chromium_skips_with_a_reason_outside_ci():
    proc = _browser_test({})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "1 skipped" in out, out
    assert "/nonexistent/chromium is missing" in out
