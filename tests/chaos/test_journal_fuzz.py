"""The journal fuzz table (tests/journalfuzz.py): >= 1,000 damaged journals and state
directories, each through ``--cancel --journal``, ``--resume``, plan-only ``--cancel`` and
``--verify`` on the simulator; tracebacks, changes sent from a damaged input, wrong
originals, operator throttles not restored and false claims must all be 0. The table goes to
tests/out/chaos/ (``journal_fuzz.txt``, and a line in ``table.txt``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from journalfuzz import COUNTED, Counts, run

OUT = Path(__file__).resolve().parents[1] / "out" / "chaos"


@pytest.mark.chaos
@pytest.mark.timeout(3600)  # ~2 min on an idle machine
def test_journal_fuzz_1000_mutations_x_4_commands(tmp_path):
    counts = run(tmp_path, range(1000))
    OUT.mkdir(parents=True, exist_ok=True)
    command = "pytest -m chaos tests/chaos/test_journal_fuzz.py"
    (OUT / "journal_fuzz.txt").write_text(f"{Counts.HEAD}\n{counts.row()}   ({command})\n")
    (OUT / "journal_fuzz.json").write_text(json.dumps(counts.as_json()))
    with open(OUT / "table.txt", "a") as f:
        f.write(f"journal fuzz: {json.dumps(counts.as_json())}\n")
    print("\n" + Counts.HEAD + "\n" + counts.row())
    assert counts.mutations >= 1000 and counts.cases >= 4000
    assert all(counts.bad[k] == 0 for k in COUNTED), "\n\n".join(counts.failures[:10])
