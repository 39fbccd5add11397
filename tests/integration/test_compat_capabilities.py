"""Capabilities on the session sandbox (every release and mode in `make compat`; marked compat, so
not in `make test`): --disallow-replication-factor-change sends what the controller lists and says
so, and no request goes out at a version the broker did not list. The same checks on a Kafka
3.9 ZooKeeper cluster run in `make test` from test_compat_39zk.py."""

from __future__ import annotations

import pytest
from compat_checks import assert_no_request_above_listed, assert_rf_guard_behaviour

# make compat runs these on every release (the v1 side on 4.1+); make test runs the same checks
# on Kafka 3.9 ZooKeeper (test_compat_39zk.py) and the broker-side refusal on 4.3.1 (test_core)
pytestmark = [pytest.mark.integration, pytest.mark.compat]


def test_rf_guard_sends_what_the_controller_lists(
    sandbox, gw, monkeypatch, capsys, tmp_path, topic_name
):
    assert_rf_guard_behaviour(sandbox, gw, monkeypatch, capsys, tmp_path, topic_name("rfg"))


def test_no_request_above_a_listed_version(sandbox, gw, monkeypatch, capsys, tmp_path, topic_name):
    assert_no_request_above_listed(sandbox, gw, monkeypatch, capsys, tmp_path, topic_name("api"))


def test_cluster_info_names_the_metadata_mode(sandbox, gw):
    """The journal's run_started records the mode and what the brokers support."""
    info = gw.cluster_info()
    assert info["metadata_mode"] == sandbox.metadata
    assert info["capabilities"] == gw.capabilities().summary()
