"""A plan --execute refuses changes nothing through any other action either: ``--verify`` and
``--cancel`` check it with the same rules and exit code (3, the partition or broker named)
before a throttle is touched, and never with a traceback. On the simulator, with an
operator's rate on broker 1 that must stay."""

from __future__ import annotations

import json
import os

import pytest

from reassign_kit.cli import reassign as cli
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.operations import execute as ops

OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}

# each: (what, partitions entry) — shapes the cluster or the file refuses
SHAPES = [
    ("an unknown topic", {"topic": "nope", "partition": 0, "replicas": [1, 2]}),
    ("a partition past the topic's count", {"topic": "t", "partition": 7, "replicas": [1, 2]}),
    ("a partition of 10^40", {"topic": "t", "partition": 10**40, "replicas": [1, 2]}),
    ("a broker of 2^31", {"topic": "t", "partition": 0, "replicas": [1, 2**31]}),
    ("an unknown broker", {"topic": "t", "partition": 0, "replicas": [1, 9]}),
    ("a duplicate broker", {"topic": "t", "partition": 0, "replicas": [2, 2]}),
    ("a topic with a NUL", {"topic": "t\u0000", "partition": 0, "replicas": [1, 2]}),
    ("a 100k-character topic", {"topic": "t" * 100_000, "partition": 0, "replicas": [1, 2]}),
    (
        "a missing log dir",
        {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["/nope", "any"]},
    ),
]


@pytest.fixture
def sim(monkeypatch, tmp_path):
    s = SimCluster(4, bandwidth=50 * MB)
    s.add_topic("t", [[0, 1], [1, 2]], MB)
    s.alter_broker_configs({1: dict(OPERATOR)})
    monkeypatch.setattr(ops, "connect", lambda *a, **k: s)
    monkeypatch.chdir(tmp_path)
    return s


@pytest.mark.parametrize("action", ["--verify", "--cancel"])
@pytest.mark.parametrize(("what", "entry"), SHAPES, ids=[s[0] for s in SHAPES])
def test_an_invalid_plan_changes_nothing_through_any_action(
    sim, tmp_path, capsys, action, what, entry
):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"version": 1, "partitions": [entry]}))
    before = dict(sim.calls)
    code = cli.main(["--bootstrap-server", "sim:9092", action, "--reassignment-json-file",
                     str(path), "--state-dir", str(tmp_path / "state")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 3, (what, code, out[-500:], err[-500:])
    assert "Traceback" not in err and "unexpected" not in err
    assert sim.broker_configs([1])[1] == OPERATOR  # the operator's rate untouched
    changed = {k for k in sim.calls if k.startswith("alter") and sim.calls[k] != before.get(k)}
    assert not changed, changed


@pytest.mark.parametrize("action", ["--execute", "--verify", "--cancel"])
def test_a_2gb_plan_is_refused_by_its_size_unread(sim, tmp_path, capsys, action):
    """A sparse 2 GB file: refused by its size before it is read (it was read whole and
    parsed: 6 GB of memory before the refusal)."""
    path = tmp_path / "plan.json"
    with open(path, "wb") as f:
        f.truncate(2 << 30)
    before = dict(sim.calls)
    code = cli.main(["--bootstrap-server", "sim:9092", action, "--reassignment-json-file",
                     str(path), "--state-dir", str(tmp_path / "state")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 3, (code, out[-300:], err[-300:])
    assert f"{path}" in err and "2147483648 bytes, over the 268435456" in err
    assert "Traceback" not in err and dict(sim.calls) == before


def test_the_input_limit_can_be_set_and_a_pipe_is_cut_there(tmp_path, monkeypatch):
    from reassign_kit.errors import InvalidPlanError
    from reassign_kit.model import MAX_INPUT_ENV, read_text

    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"version": 1, "partitions": []}))
    monkeypatch.setenv(MAX_INPUT_ENV, "10")
    with pytest.raises(InvalidPlanError, match="over the 10 an input file may have"):
        read_text(str(path), "reassignment plan")
    with pytest.raises(InvalidPlanError, match="more than the 10 bytes"):
        read_text("/dev/zero", "reassignment plan")  # a device: no size, cut at the limit


def test_a_topic_with_a_lone_surrogate_is_a_clear_exit_3_in_a_terminal(tmp_path):
    """The real CLI, stdout and stderr UTF-8 pipes: printing the topic raised
    UnicodeEncodeError (exit 1) after the rate was deleted."""
    import subprocess
    import sys

    from reassign_kit.cluster.simfile import load, save

    s = SimCluster(4, bandwidth=50 * MB)
    s.add_topic("t", [[0, 1], [1, 2]], MB)
    s.alter_broker_configs({1: dict(OPERATOR)})
    state = tmp_path / "sim.pkl"
    save(s, str(state))
    plan = tmp_path / "plan.json"
    plan.write_text(
        '{"version":1,"partitions":[{"topic":"\\ud800","partition":0,"replicas":[1,2]}]}'
    )
    for action in ("--verify", "--cancel"):
        p = subprocess.run(
            [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", f"sim:{state}",
             action, "--reassignment-json-file", str(plan), "--state-dir", str(tmp_path / "st")],
            capture_output=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"}, timeout=120,
        )  # fmt: skip
        err = p.stderr.decode("utf-8", "replace")
        assert p.returncode == 3 and "Traceback" not in err, (action, p.returncode, err[-500:])
        assert str(plan) in err
        assert load(str(state)).broker_configs([1])[1] == OPERATOR
