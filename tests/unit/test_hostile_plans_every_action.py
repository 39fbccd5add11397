"""A plan file too big is refused by its size, unread, by every action (the shapes of invalid
plans through every action: test_hostile_plans_all_actions.py). On the simulator, with an
operator's rate on broker 1 that must stay."""

from __future__ import annotations

import json

import pytest

from reassign_kit.cli import reassign as cli
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.operations import execute as ops

OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}


@pytest.fixture
def sim(monkeypatch, tmp_path):
    s = SimCluster(4, bandwidth=50 * MB)
    s.add_topic("t", [[0, 1], [1, 2]], MB)
    s.alter_broker_configs({1: dict(OPERATOR)})
    monkeypatch.setattr(ops, "connect", lambda *a, **k: s)
    monkeypatch.chdir(tmp_path)
    return s


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
