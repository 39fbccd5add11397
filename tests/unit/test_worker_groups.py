"""`make test`'s worker groups (tests/conftest.py): the session sandbox's tests on one worker,
each module with a cluster of its own a group that may run beside them, and the guard that
keeps a module of the latter from touching the session sandbox."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _conftest():
    spec = importlib.util.spec_from_file_location("rk_tests_conftest", ROOT / "tests/conftest.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _item(nodeid: str, *fixtures: str) -> SimpleNamespace:
    return SimpleNamespace(
        nodeid=nodeid, fixturenames=list(fixtures), fspath=ROOT / nodeid.split("::")[0]
    )


def test_every_own_cluster_module_exists_and_is_a_group_of_its_own():
    c = _conftest()
    assert c.OWN_CLUSTER_MODULES
    for path in c.OWN_CLUSTER_MODULES:
        assert (ROOT / path).is_file(), path
        assert c._cluster_group(f"{path}::test_x") == path
    assert len({c._cluster_group(f"{p}::t") for p in c.OWN_CLUSTER_MODULES}) == len(
        c.OWN_CLUSTER_MODULES
    )


def test_session_sandbox_spark_and_unit_tests_keep_their_groups():
    c = _conftest()
    assert c._cluster_group("tests/integration/test_paced.py::test_a") == "kafka"
    assert c._cluster_group("tests/chaos/test_kill_fuzz_table.py::test_b") == "kafka"
    assert c._cluster_group("tests/browser/test_panel_browser.py::test_c[x]") == "kafka"
    assert c._cluster_group("tests/spark/test_standalone.py::test_d") == "spark"
    unit = "tests/unit/test_schedule.py::test_e"
    assert c._cluster_group(unit) == unit


def test_an_own_cluster_module_asking_for_the_session_sandbox_is_refused_by_name():
    c = _conftest()
    bad = _item("tests/integration/test_security.py::test_uses_shared", "sec", "gw")
    fine = _item("tests/integration/test_security.py::test_own", "sec", "topic_name")
    shared = _item("tests/integration/test_paced.py::test_shared", "sandbox", "gw")
    c.pytest_collection_modifyitems(None, [fine, shared])  # no error
    with pytest.raises(pytest.UsageError, match="test_uses_shared"):
        c.pytest_collection_modifyitems(None, [fine, bad, shared])
