"""Hostile input: hypothesis drives the real CLI entry point (``reassign_kit.cli.main``,
in process) and the runbook tool with hostile plan JSON, topics-to-move JSON, snapshot JSON and
Parquet, command-config files, argument lists and notebook parameters. The cluster is the
simulator (``ops.connect`` returns a fresh SimCluster per case; a command config still goes
through the real config parsing and the real librdkafka client construction). Every case must
end with exit 0 (a valid result), or a non-zero exit that is not 1 ("unexpected") with a
message naming the file / option / partition at fault; never a traceback; and a refusal
(exit 2, 3, 6) leaves the cluster untouched: no move submitted, no throttle set.

Case counts per input kind: tests/out/fuzz/counts.json (and printed)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from fuzz_strategies import (
    Tally,
    capacity_files,
    check_outcome,
    config_files,
    json_values,
    plan_files,
    run_main,
    snapshot_files,
    topics_files,
    valid_plan_text,
    valid_snapshot_obj,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit import runbook
from reassign_kit.cli import main as cli_main
from reassign_kit.cli import plan as plan_cli
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.operations import execute as ops

FUZZ = dict(
    deadline=None,
    derandomize=True,  # the same cases on every run: counts and outcomes are reproducible
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
BS = ["--bootstrap-server", "127.0.0.1:1"]


def new_sim() -> SimCluster:
    sim = SimCluster(4, bandwidth=200 * MB, tick=0.5)
    sim.add_topic("a", [[0, 1], [1, 2], [2, 3], [3, 0]], 1 * MB)
    sim.add_topic("b", [[1, 0]], 1 * MB)
    return sim


def cluster_state(sim: SimCluster):
    return (
        {tp: tuple(p.replicas) for tp, p in sim.partitions.items()},
        sorted(map(str, sim.list_reassignments())),
        sim.current_throttles().is_empty(),
    )


class Env:
    """A working dir, the simulator behind ``ops.connect`` and the files a case writes."""

    def __init__(self, root: Path):
        self.root = root
        self.sim: SimCluster = new_sim()
        self.n = itertools.count()
        self.plan = str(root / "valid-plan.json")
        Path(self.plan).write_text(valid_plan_text())
        self.snapshot = str(root / "valid-snapshot.json")
        Path(self.snapshot).write_text(json.dumps(valid_snapshot_obj()))
        self.topics = str(root / "valid-topics.json")
        Path(self.topics).write_text(json.dumps({"version": 1, "topics": [{"topic": "a"}]}))

    def connect(self, bootstrap, command_config=None, timeout_s=30):
        if command_config:  # the real parsing and checks, and librdkafka's own
            gw = REAL_CONNECT(bootstrap, command_config, timeout_s)
            try:
                _ = gw.ck  # librdkafka checks the settings when it is built
            finally:
                gw.close()
        self.sim = new_sim()
        return self.sim

    def file(self, data: bytes, suffix: str = ".json") -> str:
        path = self.root / f"case-{next(self.n)}{suffix}"
        path.write_bytes(data)
        return str(path)

    def fresh(self, suffix: str) -> str:
        return str(self.root / f"out-{next(self.n)}{suffix}")


REAL_CONNECT = ops.connect


@pytest.fixture
def env(tmp_path, monkeypatch) -> Env:
    e = Env(tmp_path)
    monkeypatch.setattr(ops, "connect", e.connect)
    monkeypatch.setattr(plan_cli, "connect", e.connect)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RK_DEBUG", raising=False)
    return e


def run_case(
    env: Env, tally: Tally, argv: list[str], names: list[str] | None = None
) -> tuple[int, str]:
    env.sim = new_sim()
    before = cluster_state(env.sim)
    code, out, err = run_main(cli_main, argv)
    outcome = check_outcome(code, out, err, argv, names)
    if code in (2, 3, 6):  # refused before anything was sent
        assert cluster_state(env.sim) == before, f"{argv}: refused but the cluster changed"
    tally.add(outcome, code)
    return code, err


def plan_actions(env: Env, path: str) -> list[list[str]]:
    return [
        [*BS, "--verify", "--reassignment-json-file", path],
        [*BS, "--execute", "--reassignment-json-file", path, "--rollback-file", env.fresh(".rb")],
        [*BS, "--execute", "--reassignment-json-file", path, "--reassignment-batch-size", "1",
         "--journal", env.fresh(".jsonl"), "--rollback-file", env.fresh(".rb")],
        [*BS, "--execute", "--dry-run", "--output", "json", "--reassignment-json-file", path],
        [*BS, "--progress", "--output", "json", "--reassignment-json-file", path],
        [*BS, "--cancel", "--reassignment-json-file", path],
        ["validate", "--snapshot", env.snapshot, "--reassignment-json-file", path],
    ]  # fmt: skip


# ----------------------------------------------------------------------------- plan JSON


def test_fuzz_plan_json(env):
    tally = Tally("plan_json")

    @settings(**FUZZ, max_examples=150)
    @given(data=plan_files, action=st.integers(0, 6))
    def case(data, action):
        path = env.file(data)
        argv = plan_actions(env, path)[action]
        run_case(env, tally, argv, names=[path])

    case()
    assert tally.write()["cases"] >= 150


# ----------------------------------------------------------------------------- topics-to-move


def test_fuzz_topics_to_move_json(env):
    tally = Tally("topics_to_move_json")

    @settings(**FUZZ, max_examples=200)
    @given(data=topics_files, brokers=st.sampled_from(["0,1,2,3", "1,2", "9", "1,-2", "x", ""]))
    def case(data, brokers):
        path = env.file(data)
        argv = [*BS, "--generate", "--topics-to-move-json-file", path, "--broker-list", brokers]
        run_case(env, tally, argv, names=[path])

    case()
    assert tally.write()["cases"] >= 200


# ----------------------------------------------------------------------------- snapshots


def test_fuzz_snapshot_json(env):
    tally = Tally("snapshot_json")

    @settings(**FUZZ, max_examples=200)
    @given(data=snapshot_files, validate=st.booleans())
    def case(data, validate):
        path = env.file(data)
        if validate:
            argv = ["validate", "--snapshot", path, "--reassignment-json-file", env.plan]
        else:
            argv = ["plan", "--snapshot", path, "--engine", "local", "--output", env.fresh(".json")]
        run_case(env, tally, argv, names=[path])

    case()
    assert tally.write()["cases"] >= 200


def test_fuzz_capacity_file(env):
    tally = Tally("capacity_file")

    @settings(**FUZZ, max_examples=150)
    @given(data=capacity_files, validate=st.booleans())
    def case(data, validate):
        path = env.file(data)
        if validate:
            argv = ["validate", "--snapshot", env.snapshot, "--reassignment-json-file", env.plan]
        else:
            argv = ["plan", "--snapshot", env.snapshot, "--engine", "local"]
            argv += ["--balance", "replicas,leaders,bytes", "--output", env.fresh(".json")]
        run_case(env, tally, [*argv, "--capacity", path], names=[path])

    case()
    assert tally.write()["cases"] >= 150


def _parquet_variants():
    """How a Parquet snapshot directory is damaged: (table, how, column)."""
    return st.tuples(
        st.sampled_from(["brokers", "topics", "partitions"]),
        st.sampled_from(["missing", "garbage", "truncated", "retype", "drop", "extra", "nulls"]),
        st.integers(0, 4),
        st.sampled_from(["string", "float", "negative", "huge", "list", "bool"]),
    )


def _damage_parquet(d: Path, table: str, how: str, col_i: int, kind: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    f = d / f"{table}.parquet"
    if not f.exists():
        return
    if how == "missing":
        f.unlink()
        return
    if how == "garbage":
        f.write_bytes(b"PAR1 not really parquet")
        return
    if how == "truncated":
        f.write_bytes(f.read_bytes()[: max(1, f.stat().st_size // 2)])
        return
    try:
        t = pq.read_table(f)
    except (OSError, ValueError):  # damaged by an earlier step
        return
    name = t.column_names[col_i % len(t.column_names)]
    n = t.num_rows
    values = {
        "string": pa.array(["x"] * n),
        "float": pa.array([1.5] * n),
        "negative": pa.array([-1] * n, pa.int64()),
        "huge": pa.array([2**62] * n, pa.int64()),
        "list": pa.array([[1, 2]] * n),
        "bool": pa.array([True] * n),
    }[kind]
    if how == "retype":
        t = t.set_column(t.column_names.index(name), name, values)
    elif how == "drop":
        t = t.drop_columns([name])
    elif how == "extra":
        t = t.append_column("extra", values)
    else:  # nulls
        t = t.set_column(t.column_names.index(name), name, pa.nulls(n, t.schema.field(name).type))
    pq.write_table(t, f)


def test_fuzz_snapshot_parquet(env):
    from reassign_kit.snapshot.snapshot import Snapshot

    tally = Tally("snapshot_parquet")
    good = Snapshot.from_json_obj(valid_snapshot_obj())

    @settings(**FUZZ, max_examples=120)
    @given(damage=st.lists(_parquet_variants(), min_size=1, max_size=2), validate=st.booleans())
    def case(damage, validate):
        d = Path(env.fresh(".parquet"))
        good.write(str(d))
        for table, how, col_i, kind in damage:
            _damage_parquet(d, table, how, col_i, kind)
        if validate:
            argv = ["validate", "--snapshot", str(d), "--reassignment-json-file", env.plan]
        else:
            argv = ["plan", "--snapshot", str(d), "--engine", "local", "--output", env.fresh(".j")]
        run_case(env, tally, argv, names=[str(d)])

    case()
    assert tally.write()["cases"] >= 120


# ----------------------------------------------------------------------------- command configs


def test_fuzz_command_config(env):
    tally = Tally("command_config")

    @settings(**FUZZ, max_examples=250)
    @given(data=config_files, action=st.integers(0, 2))
    def case(data, action):
        path = env.file(data, ".properties")
        argv = [
            [*BS, "--list", "--command-config", path],
            [*BS, "--verify", "--reassignment-json-file", env.plan, "--command-config", path],
            ["snapshot", *BS, "--command-config", path, "--output", env.fresh(".json")],
        ][action]
        code, err = run_case(env, tally, argv, names=[path, "command config"])
        if code == 2 and "--command-config" in argv:  # names the file or the setting
            assert "command config" in err or path in err, err

    case()
    assert tally.write()["cases"] >= 250


# ----------------------------------------------------------------------------- argument lists

DROP_IN_FLAGS = [
    "--execute", "--verify", "--cancel", "--list", "--generate", "--progress",
    "--bootstrap-server", "--command-config", "--reassignment-json-file", "--preserve-throttles",
    "--throttle-priors", "--all", "--topics", "--rollback-file", "--output",
    "--topics-to-move-json-file", "--broker-list", "--disable-rack-aware", "--topics-regex",
    "--exclude-topics-regex", "--include-internal", "--throttle",
    "--replica-alter-log-dirs-throttle", "--timeout", "--additional",
    "--disallow-replication-factor-change", "--require-broker-rf-guard",
    "--reassignment-batch-size", "--incremental",
    "--reassignment-poll-interval-ms", "--max-moves-per-broker", "--parallel-replica-count",
    "--run-deadline", "--stuck-after", "--on-deadline", "--on-interrupt", "--order",
    "--dry-run", "--calibration", "--journal", "--resume", "--progress-interval",
    "--progress-journal", "--rollback-timeout", "-h", "--no-such-flag",
]  # fmt: skip
SUB_FLAGS = [
    "--snapshot", "--output", "--report", "--rollback", "--remove-brokers", "--balance",
    "--demote-brokers", "--replication-factor", "--topics", "--chunks", "--quiet",
    "--reassignment-json-file", "--disallow-replication-factor-change", "--topics-regex",
    "--exclude-topics-regex", "--include-internal", "--bootstrap-server", "--command-config",
    "--engine", "-h",
]  # fmt: skip
VALUES = [
    "0", "1", "-1", "3", "abc", "1.5", "10000000", "99999999999999999999", "", "2h", "1e3",
    "1,2", "0,1,2,3", "a", "a,b", "[", "(", ".*", "replicas,leaders,bytes", "nonsense",
    "json", "text", "local", "127.0.0.1:1", "cancel", "stop", "size", "\u00e9\u0000",
]  # fmt: skip


@st.composite
def argvs(draw, env: Env) -> list[str]:
    sub = draw(st.sampled_from([None, None, "plan", "validate", "snapshot"]))
    flags = DROP_IN_FLAGS if sub is None else SUB_FLAGS
    files = [env.plan, env.snapshot, env.topics, str(env.root / "missing.json"), str(env.root),
             str(env.root / "no-dir" / "x.json"), "/dev/null"]  # fmt: skip
    tokens = st.one_of(
        st.sampled_from(flags),
        st.sampled_from(VALUES),
        st.sampled_from(files),
        st.tuples(st.sampled_from(flags), st.sampled_from(VALUES)).map("=".join),
        st.text(max_size=6),
    )
    pairs = st.tuples(st.sampled_from(flags), st.one_of(st.sampled_from(VALUES), st.just(None)))
    shape = draw(st.sampled_from(["tokens", "action", "action"]))
    if shape == "tokens":
        argv = draw(st.lists(tokens, max_size=9))
    else:  # an action with what it needs, then a few options with (or without) values
        argv = []
        if sub is None:
            argv = [*BS, *draw(st.sampled_from([
                ["--execute", "--reassignment-json-file", env.plan],
                ["--verify", "--reassignment-json-file", env.plan],
                ["--cancel", "--reassignment-json-file", env.plan], ["--cancel", "--all"],
                ["--list"], ["--progress", "--reassignment-json-file", env.plan],
                ["--generate", "--topics-to-move-json-file", env.topics, "--broker-list", "0,1,2"],
            ]))]  # fmt: skip
        elif sub == "plan":
            argv = ["--snapshot", env.snapshot, "--output", str(env.root / "p.json")]
        elif sub == "validate":
            argv = ["--snapshot", env.snapshot, "--reassignment-json-file", env.plan]
        else:
            argv = [*BS, "--output", str(env.root / "s.json")]
        for flag, value in draw(st.lists(pairs, max_size=3)):
            argv += [flag] if value is None else [flag, value]
    if sub == "plan":
        argv = [*argv, "--engine", "local"]  # never a Spark start per case
    return [sub, *argv] if sub else argv


def test_fuzz_cli_arguments(env):
    tally = Tally("cli_arguments")

    @settings(**FUZZ, max_examples=600)
    @given(data=st.data())
    def case(data):
        argv = data.draw(argvs(env))
        run_case(env, tally, argv)

    case()
    assert tally.write()["cases"] >= 600


# ----------------------------------------------------------------------------- notebook params


@pytest.fixture
def no_kernel(monkeypatch):
    """papermill replaced by a stub that writes a valid (empty) output notebook: the cases test
    the parameter checks and the runbook tool's messages, not the notebooks' cells."""
    import sys
    import types

    started: list[dict] = []

    def execute_notebook(src, out, parameters=None, **kw):
        started.append(dict(parameters or {}))
        with open(out, "w") as f:
            json.dump({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, f)

    pm = types.ModuleType("papermill")
    pm.execute_notebook = execute_notebook
    exc = types.ModuleType("papermill.exceptions")
    exc.PapermillExecutionError = type("PapermillExecutionError", (Exception,), {})
    monkeypatch.setitem(sys.modules, "papermill", pm)
    monkeypatch.setitem(sys.modules, "papermill.exceptions", exc)
    return started


def test_fuzz_notebook_parameters(env, no_kernel):
    tally = Tally("notebook_parameters")
    declared = {n: runbook.notebook_parameters(n) for n in runbook.NOTEBOOKS}

    @settings(**FUZZ, max_examples=300)
    @given(
        nb=st.sampled_from(runbook.NOTEBOOKS),
        params=st.lists(
            st.tuples(
                st.one_of(
                    st.sampled_from(sorted({k for d in declared.values() for k in d})),
                    st.text(max_size=8),
                ),
                st.one_of(json_values.map(json.dumps), st.text(max_size=10)),
            ),
            max_size=4,
        ),
    )
    def case(nb, params):
        argv = ["run", nb, "--output-dir", env.fresh(".d")]
        for k, v in params:
            argv += ["-p", k, v]
        before = len(no_kernel)
        code, out, err = run_main(runbook.main, argv)
        outcome = check_outcome(code, out, err, argv)
        if code != 0:
            assert len(no_kernel) == before, "a kernel was started for refused parameters"
            assert "parameter" in err or "argument" in err or "--output-dir" in err, err
        tally.add(outcome, code)

    case()
    assert tally.write()["cases"] >= 300


def test_counts_file_is_outside_git():
    """tests/out is ignored: the counts are an artefact of the run, not a source file."""
    from fuzz_strategies import COUNTS_FILE

    root = Path(__file__).resolve().parents[2]
    ignore = (root / ".gitignore").read_text().splitlines()
    assert "tests/out/" in ignore and COUNTS_FILE.is_relative_to(root / "tests" / "out")
    assert os.path.basename(COUNTS_FILE) == "counts.json"
