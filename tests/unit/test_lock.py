"""The install is locked and light: requirements.lock pins every dependency of
pyproject.toml (core and every extra) at a version its specifier allows; environment.yml
installs through the same lock; the core has neither Spark nor the notebook stack.

When this fails after a change of pyproject.toml's dependencies: `make lock`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def locked() -> dict[str, list[tuple[str, str]]]:
    """name -> [(version, marker text)] from the lock's ``name==version ; marker  # via`` lines."""
    out: dict[str, list[tuple[str, str]]] = {}
    for line in LOCK.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^ ;]+)\s*(?:;\s*(.*))?", line)
        assert m, f"requirements.lock: not a pinned line: {line!r}"
        out.setdefault(canonicalize_name(m[1]), []).append((m[2], m[3] or ""))
    return out


def declared() -> list[Requirement]:
    proj = pyproject()["project"]
    reqs = [Requirement(r) for r in proj["dependencies"]]
    for extra in proj["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return [r for r in reqs if canonicalize_name(r.name) != "reassign-kit"]


def test_every_declared_dependency_is_locked_at_an_allowed_version():
    pins = locked()
    env = {**default_environment(), "python_version": "3.11", "python_full_version": "3.11.7"}
    problems = []
    for req in declared():
        entries = pins.get(canonicalize_name(req.name))
        if not entries:
            problems.append(f"{req.name}: not in requirements.lock")
            continue
        for version, marker in entries:
            if marker and not Requirement(f"x ; {marker}").marker.evaluate(env):
                continue
            if not req.specifier.contains(version, prereleases=True):
                problems.append(f"{req.name}=={version} does not satisfy {req}")
    assert not problems, "requirements.lock is stale (run `make lock`):\n" + "\n".join(problems)


def test_the_core_is_light_and_the_extras_compose():
    proj = pyproject()["project"]
    core = {canonicalize_name(Requirement(r).name) for r in proj["dependencies"]}
    assert {"confluent-kafka", "kafka-python", "pandas", "rich"} <= core
    heavy = {"pyspark", "pyarrow", "jupyterlab", "papermill", "plotly", "ipywidgets", "playwright"}
    assert not core & heavy
    extras = proj["optional-dependencies"]
    assert {"spark", "notebook", "all", "dev"} <= set(extras)
    assert "pyspark" in {canonicalize_name(Requirement(r).name) for r in extras["spark"]}
    assert "papermill" in {canonicalize_name(Requirement(r).name) for r in extras["notebook"]}
    assert Requirement(extras["all"][0]).extras == {"spark", "notebook"}
    assert any(Requirement(r).extras == {"all"} for r in extras["dev"])


def test_environment_yml_installs_through_the_lock():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict) and "pip" in d)
    assert pip == ["-c requirements.lock", "-e .[dev]"]
    python = next(d for d in deps if isinstance(d, str) and d.startswith("python"))
    low = re.search(r">=\s*([\d.]+)", python)[1]
    assert f">={low}" == pyproject()["project"]["requires-python"]
    # the lock was made for that Python (Makefile's `lock`: --python-version)
    assert f"--python-version {low}" in (ROOT / "Makefile").read_text()
    # no Python package is pinned on the conda side, where it would bypass the lock
    conda_pkgs = {re.split(r"[=<>! ]", d)[0] for d in deps if isinstance(d, str)}
    assert conda_pkgs == {"python", "openjdk", "maven", "pip"}


def test_make_setup_installs_from_the_lock():
    mk = (ROOT / "Makefile").read_text()
    assert "-c $(LOCK) -e '.[dev]'" in mk and "LOCK := requirements.lock" in mk
    assert "uv" in {canonicalize_name(n) for n in locked()}
