"""A seeded sample of the journal fuzz table (tests/journalfuzz.py; the full run is
tests/chaos/test_journal_fuzz.py): 60 damaged journals and state directories, each through
``--cancel --journal``, ``--resume``, plan-only ``--cancel`` and ``--verify`` on the
simulator; every count of what went wrong is 0."""

from __future__ import annotations

from journalfuzz import COUNTED, run


def test_journal_fuzz_sample(tmp_path):
    counts = run(tmp_path, range(5000, 5060))
    assert counts.cases == 240
    assert {k: counts.bad[k] for k in COUNTED} == dict.fromkeys(COUNTED, 0), "\n\n".join(
        counts.failures[:5]
    )
    # the sample holds refusals and commands that went through: both are judged
    assert counts.exits[12] > 0 and counts.exits[0] > 0, counts.exits
