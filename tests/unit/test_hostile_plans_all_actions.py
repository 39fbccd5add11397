"""Every action that takes a plan refuses an invalid one the same way: ``--execute``,
``--verify``, ``--cancel``, ``--list`` (its plan filter) and ``throttles --clean`` (its plan
scope), each given every shape of tests/hostile_plans.py. For each (shape, action): a non-zero
exit code, the same one on a second run, the file (and the partition, broker or key at fault)
named on stderr, no traceback — and, read from the simulator's state file rather than from the
CLI's words, no config changed and no reassignment submitted (the operator's rate on broker 1
stays). The CLI runs in-process (its ``main``) on ``--bootstrap-server sim:FILE``; a few
subprocess runs show that nothing reaches a terminal as a traceback. The table
(shape x action -> exit, changed) is printed at the end (``-s`` shows it) and written to
tests/out/hostile_plans.txt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostile_plans import FILE, OPERATOR, SHAPES, Shape, hostile_cluster

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.simfile import load, save

ACTIONS = {
    "--execute": ["--execute", "--throttle", "1000000"],
    "--verify": ["--verify"],
    "--cancel": ["--cancel"],
    "--list": ["--list"],
    "throttles --clean": None,  # a sub-command: its own argv below
}
TABLE: dict[tuple[str, str], tuple[int, int]] = {}
OUT = Path(__file__).resolve().parents[1] / "out"  # the table, as the chaos tables


def _argv(action: str, sim: str, plan: str, state: str) -> list[str]:
    if action == "throttles --clean":
        return ["throttles", "--bootstrap-server", sim, "--clean",
                "--reassignment-json-file", plan, "--state-dir", state]  # fmt: skip
    extra = ["--state-dir", state] if action != "--list" else []
    return ["--bootstrap-server", sim, *ACTIONS[action], "--reassignment-json-file", plan, *extra]


def _cluster_state(path: str) -> dict:
    """What the simulator's state file holds that a refused command must not change."""
    s = load(path)
    return {
        "broker configs": {b: dict(kv) for b, kv in s.broker_cfg.items() if kv},
        "topic configs": {t: dict(kv) for t, kv in s.topic_cfg.items() if kv},
        "default configs": dict(s.default_broker_cfg),
        "replicas": {tp: p.replicas for tp, p in s.partitions.items()},
        "reassignments": dict(s.list_reassignments()),
        "changing calls": {
            k: n for k, n in s.calls.items() if k.startswith(("alter", "elect", "create"))
        },
    }


@pytest.fixture(scope="module")
def table_printed():
    yield
    rows = [f"{'shape':<36} " + " ".join(f"{a:>18}" for a in ACTIONS)]
    for shape in SHAPES:
        cells = [TABLE.get((shape.name, a)) for a in ACTIONS]
        rows.append(
            f"{shape.name:<36} "
            + " ".join(
                f"{'-':>18}" if c is None else f"{f'exit {c[0]}, {c[1]} changed':>18}"
                for c in cells
            )  # fmt: skip
        )
    done = len(TABLE)
    changed = sum(c[1] for c in TABLE.values())
    rows.append(f"{len(SHAPES)} shapes x {len(ACTIONS)} actions: {done} runs, {changed} changed")
    print("\n" + "\n".join(rows))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "hostile_plans.txt").write_text("\n".join(rows) + "\n")


@pytest.mark.parametrize("action", list(ACTIONS))
@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_an_invalid_plan_changes_nothing_through_any_action(
    table_printed, tmp_path, capsys, monkeypatch, shape: Shape, action: str
):
    monkeypatch.chdir(tmp_path)
    state = str(tmp_path / "sim.pkl")
    save(hostile_cluster(), state)
    before = _cluster_state(state)
    plan = shape.make(str(tmp_path / "plan.json"))
    argv = _argv(action, f"sim:{state}", plan, str(tmp_path / "runs"))
    codes, errs = [], []
    for _ in range(2):  # the same command twice: the same refusal
        codes.append(cli_main(list(argv)))
        out, err = capsys.readouterr()
        errs.append(err)
    after = _cluster_state(state)
    changed = [k for k in before if before[k] != after[k]]
    TABLE[shape.name, action] = (codes[0], len(changed))
    assert codes[0] != 0 and codes[0] == codes[1], (codes, out[-300:], errs[0][-600:])
    for name in (plan, *(n for n in shape.names if n != FILE)):
        assert name in errs[0], (name, errs[0][-600:])
    assert "Traceback" not in errs[0] and "unexpected" not in errs[0], errs[0][-600:]
    assert not changed, {k: (before[k], after[k]) for k in changed}
    assert after["broker configs"][1] == OPERATOR


# a few (shape, action) as real processes: each one's interpreter start is most of its cost
SUBPROCESS = [
    ("a FIFO", "throttles --clean"),
    ("a topic with a lone surrogate", "--cancel"),
    ("100k nested arrays", "--list"),
]


@pytest.mark.parametrize(("name", "action"), SUBPROCESS)
def test_no_traceback_reaches_a_terminal(tmp_path, name: str, action: str):
    """The real CLI as a process, its output UTF-8 pipes: the refusal is one message."""
    shape = next(s for s in SHAPES if s.name == name)
    state = str(tmp_path / "sim.pkl")
    save(hostile_cluster(), state)
    before = _cluster_state(state)
    plan = shape.make(str(tmp_path / "plan.json"))
    p = subprocess.run(
        [sys.executable, "-m", "reassign_kit.cli",
         *_argv(action, f"sim:{state}", plan, str(tmp_path / "runs"))],
        capture_output=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"}, timeout=120,
    )  # fmt: skip
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 3 and "Traceback" not in err and plan in err, (p.returncode, err[-600:])
    assert _cluster_state(state) == before
