"""Hostile input: run journals and calibration files. A real journal (a paced run on
the simulator) is damaged event by event — a field's value replaced by another type, a field
dropped, an event renamed, a line cut, junk inserted — and read back by every entry point that
reads journals: ``--cancel --journal``, ``--progress --progress-journal``, ``--execute --resume
--journal``, ``--verify --throttle-priors``, ``calibrate --journal``; calibration files by
``--execute --dry-run --calibration``. Same rules as test_fuzz_inputs.py: exit 0, or a non-1
exit with a message; never a traceback. Counts in tests/out/fuzz/counts.json."""

from __future__ import annotations

import json
from pathlib import Path

from fuzz_strategies import Tally, check_outcome, json_values, run_main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz_inputs import BS, Env, env  # noqa: F401 (env: the fixture)

from reassign_kit.cli import main as cli_main

FUZZ = dict(
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def real_journal(e: Env) -> tuple[str, list[str]]:
    """A paced run's journal on the simulator (two moves, throttled, one left moving)."""
    path = str(e.root / "template.jsonl")
    code, out, err = run_main(
        cli_main,
        [*BS, "--execute", "--reassignment-json-file", e.plan, "--reassignment-batch-size",
         "1", "--throttle", "10000000", "--journal", path, "--rollback-file", e.fresh(".rb")],
    )  # fmt: skip
    assert code == 0, err
    return path, Path(path).read_text().splitlines()


@st.composite
def damaged_journals(draw, lines: list[str]) -> bytes:
    events = [json.loads(line) for line in lines]
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["value", "value", "drop-key", "rename", "cut", "junk", "dup"]))
        i = draw(st.integers(0, len(events) - 1))
        if how in ("value", "drop-key") and isinstance(events[i], dict) and events[i]:
            key = draw(st.sampled_from(sorted(events[i])))
            if how == "value":
                events[i][key] = draw(json_values)
            else:
                del events[i][key]
        elif how == "rename" and isinstance(events[i], dict):
            events[i]["event"] = draw(st.one_of(json_values, st.sampled_from(
                ["run_started", "submitted", "completed", "throttle_prior", "run_finished"])))  # fmt: skip
        elif how == "dup":
            events.insert(i, events[i])
        elif how == "junk":
            events.insert(i, draw(json_values))
        else:
            events = events[: i + 1]
    text = "\n".join(json.dumps(e) for e in events) + "\n"
    if draw(st.integers(0, 5)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text.encode()


def test_fuzz_journals(env):  # noqa: F811
    tally = Tally("journal")
    _, lines = real_journal(env)

    @settings(**FUZZ, max_examples=200)
    @given(data=damaged_journals(lines), action=st.integers(0, 4))
    def case(data, action):
        path = env.file(data, ".jsonl")
        argv = [
            [*BS, "--cancel", "--journal", path],
            [*BS, "--progress", "--output", "json", "--reassignment-json-file", env.plan,
             "--progress-journal", path],
            [*BS, "--execute", "--resume", "--journal", path, "--reassignment-json-file",
             env.plan],
            [*BS, "--verify", "--reassignment-json-file", env.plan, "--throttle-priors", path],
            ["calibrate", "--journal", path, "--output", env.fresh(".json")],
        ][action]  # fmt: skip
        env.sim = None
        code, out, err = run_main(cli_main, argv)
        tally.add(check_outcome(code, out, err, argv), code)

    case()
    assert tally.write()["cases"] >= 200


calibrations = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "version": json_values,
            "rate_bps": st.one_of(
                json_values, st.dictionaries(st.text(max_size=3), json_values, max_size=3)
            ),
            "overhead_s": json_values,
            "throttle": json_values,
            "journals": json_values,
            "moves": json_values,
        },
    ),
)


def test_fuzz_calibration_files(env):  # noqa: F811
    tally = Tally("calibration")

    @settings(**FUZZ, max_examples=120)
    @given(doc=calibrations, junk=st.booleans())
    def case(doc, junk):
        data = json.dumps(doc).encode()
        path = env.file(data[: len(data) // 2] if junk else data)
        argv = [*BS, "--execute", "--dry-run", "--output", "json", "--reassignment-json-file",
                env.plan, "--calibration", path]  # fmt: skip
        code, out, err = run_main(cli_main, argv)
        tally.add(check_outcome(code, out, err, argv), code)

    case()
    assert tally.write()["cases"] >= 120
