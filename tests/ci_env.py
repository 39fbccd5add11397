"""Whether the tests run in CI, whichever way the CI says so: a test whose
dependency is missing fails there, and skips (saying why) only on a developer's machine.

``CI`` set to ANY value counts ("true", "1", "false" and "" too: runners differ, and a
variable that is present was put there by a runner), and so does a runner's own variable
when it sets no ``CI`` (GitHub Actions, GitLab, Jenkins, Azure Pipelines, Buildkite, ...)."""

from __future__ import annotations

import os
from collections.abc import Mapping

import pytest

RUNNER_VARIABLES = (
    "CI",
    "CONTINUOUS_INTEGRATION",
    "GITHUB_ACTIONS",
    "GITLAB_CI",
    "JENKINS_URL",
    "BUILD_NUMBER",
    "TF_BUILD",
    "BUILDKITE",
    "CIRCLECI",
    "TRAVIS",
    "TEAMCITY_VERSION",
    "BITBUCKET_BUILD_NUMBER",
    "DRONE",
    "CODEBUILD_BUILD_ID",
)


def in_ci(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return any(v in env for v in RUNNER_VARIABLES)


def missing(what: str, fix: str, environ: Mapping[str, str] | None = None) -> None:
    """A dependency of the test is missing: fail in CI, skip elsewhere (never silently)."""
    if in_ci(environ):
        pytest.fail(f"{what} is missing (in CI a missing dependency fails): {fix}")
    pytest.skip(f"{what} is missing: {fix}")
