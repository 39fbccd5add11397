"""The kill-fuzz table: the real CLI SIGKILLed at random points — between
an Alter and its journal line, inside a cancel, inside the final cleanup, at any gateway call
or a random moment — then resumed or cancelled; counted: wrong originals, replication factor
above max(original, target), partitions at neither target nor original, throttles no move
needs, operator rates not back (all must be 0). ``make chaos``: >= 1,000 kill points on the
simulator (``sim:`` state files, tests/killfuzz.py) and >= 30 on the sandbox; ``make test``:
a sample of 3 on the sandbox (the simulator's sample is tests/unit/test_kill_fuzz.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from killfuzz import Counts, as_json, run_sandbox, run_sim

pytestmark = pytest.mark.integration
OUT = Path(__file__).resolve().parents[1] / "out" / "chaos"


def _record(name: str, c: Counts, command: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    table = OUT / "kill_fuzz.txt"
    if not table.exists():
        table.write_text(Counts.HEAD + "\n")
    with open(table, "a") as f:
        f.write(c.row(name) + f"   ({command})\n")
    (OUT / f"kill_fuzz_{name}.json").write_text(json.dumps(as_json(c)))
    # the chaos table make chaos prints
    with open(OUT / "table.txt", "a") as f:
        f.write(f"kill fuzz {name}: {json.dumps(as_json(c))}\n")
    print("\n" + Counts.HEAD + "\n" + c.row(name))


@pytest.mark.chaos
@pytest.mark.timeout(3600)  # ~10 min on an idle machine
def test_kill_fuzz_simulator_1000_kill_points(tmp_path):
    total = Counts()
    seed = 0
    while total.kill_points < 1000 and total.trials < 1500:
        total.add(run_sim([seed], tmp_path, fork=seed % 10 != 0))
        seed += 1
    _record("simulator", total, "pytest -m chaos tests/chaos/test_kill_fuzz_table.py")
    assert total.kill_points >= 1000
    assert total.bad == 0 and not total.failures, "\n".join(total.failures[:20])


@pytest.mark.chaos
@pytest.mark.timeout(3600)  # ~20 min: each trial loads a topic and moves it
def test_kill_fuzz_sandbox_30_kill_points(sandbox, gw, tmp_path):
    total = run_sandbox(sandbox, gw, range(100, 160), tmp_path, kills=30)
    _record("sandbox", total, "pytest -m chaos tests/chaos/test_kill_fuzz_table.py")
    assert total.kill_points >= 30
    assert total.bad == 0 and not total.failures, "\n".join(total.failures[:20])


def test_kill_fuzz_sandbox_sample(sandbox, gw, tmp_path):
    total = run_sandbox(sandbox, gw, range(200, 206), tmp_path, kills=3)
    assert total.kill_points >= 3, as_json(total)
    assert total.bad == 0 and not total.failures, "\n".join(total.failures[:20])
