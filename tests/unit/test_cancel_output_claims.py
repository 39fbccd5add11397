"""What ``--cancel`` and ``--execute --allow-drift`` print claims no more than happened, in the
order it happened: a legacy run's partitions the cancel sent back are "rolled back", never
"never started" after "Successfully cancelled"; only those never sent are "never started"."""

from __future__ import annotations

import json

import pytest

from reassign_kit.cli import reassign as cli
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.operations import execute as ops


@pytest.fixture
def sim(monkeypatch, tmp_path):
    s = SimCluster(4, bandwidth=MB)
    s.add_topic("t", [[p % 4, (p + 1) % 4] for p in range(8)], 64 * MB)
    monkeypatch.setattr(ops, "connect", lambda *a, **k: s)
    monkeypatch.chdir(tmp_path)
    return s


def write_plan(path, partitions) -> str:
    moves = [{"topic": "t", "partition": p, "replicas": [(p + 2) % 4, (p + 3) % 4]}
             for p in partitions]  # fmt: skip
    path.write_text(json.dumps({"version": 1, "partitions": moves}))
    return str(path)


def cli_run(capsys, *argv) -> tuple[int, list[str]]:
    code = cli.main(["--bootstrap-server", "sim:9092", "--state-dir", "state", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out.splitlines()


def outcome_of(lines: list[str]) -> dict[str, str]:
    rows = [
        ln.strip()
        for ln in lines[lines.index([x for x in lines if x.startswith("cancel: ")][0]) + 1 :]
    ]
    return {
        r.split(":")[0]: r.split(":")[1].split(",")[0].strip() for r in rows if r.startswith("t-")
    }


def test_a_legacy_cancel_reports_its_partitions_rolled_back_not_never_started(
    sim, tmp_path, capsys
):
    plan = write_plan(tmp_path / "plan.json", range(8))
    code, _ = cli_run(
        capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000"
    )
    assert code == 0 and all(
        st.reassigning for st in sim.describe_partitions(list(sim.partitions)).values()
    )
    code, lines = cli_run(capsys, "--cancel", "--reassignment-json-file", plan)
    assert code == 0, lines
    assert not [ln for ln in lines if "never started" in ln], lines
    assert "cancel: 8 rolled back" in lines
    assert set(outcome_of(lines).values()) == {"rolled back"}


def test_a_cancel_names_the_partitions_never_sent_apart_from_those_it_cancelled(
    sim, tmp_path, capsys
):
    sent = write_plan(tmp_path / "sent.json", range(6))
    code, _ = cli_run(
        capsys, "--execute", "--reassignment-json-file", sent, "--throttle", "1000000"
    )
    assert code == 0
    whole = write_plan(tmp_path / "plan.json", range(8))
    code, lines = cli_run(capsys, "--cancel", "--reassignment-json-file", whole)
    cancelled = [ln for ln in lines if ln.startswith("Successfully cancelled")]
    assert cancelled == [
        "Successfully cancelled reassignment of partitions t-0,t-1,t-2,t-3,t-4,t-5"
    ]
    outcome = outcome_of(lines)
    assert {tp for tp, o in outcome.items() if o == "rolled back"} == {f"t-{p}" for p in range(6)}
    assert {tp for tp, o in outcome.items() if o != "rolled back"} == {"t-6", "t-7"}
    assert "rolled back" not in (outcome["t-6"], outcome["t-7"])


def test_allow_drift_says_the_drift_before_anything_is_sent_or_claimed(sim, tmp_path, capsys):
    from reassign_kit.model import Move, Plan, TopicPartition
    from reassign_kit.planner.record import PlanRecord, record_path

    plan = Plan.read(write_plan(tmp_path / "plan.json", range(8)))
    current = Plan.of(Move(tp, tuple(sp.replicas)) for tp, sp in sim.partitions.items())
    PlanRecord.of(plan, current, sim.broker_ids).write(record_path(str(tmp_path / "plan.json")))
    sim.partitions[TopicPartition("t", 3)].replicas = [0, 2]  # moved by someone since
    code, lines = cli_run(
        capsys, "--execute", "--reassignment-json-file", "plan.json", "--allow-drift"
    )
    assert code == 0, lines
    drift = next(i for i, ln in enumerate(lines) if ln.startswith("--allow-drift: running"))
    assert "t-3" in lines[drift + 1], lines[drift : drift + 3]
    first_claim = next(i for i, ln in enumerate(lines) if ln.startswith(("Current", "Success")))
    assert drift < first_claim, lines


def throttle_line(lines: list[str]) -> str:
    return next(ln for ln in lines if ln.startswith("Throttles no remaining"))


def test_the_throttles_left_after_a_cancel_are_read_from_the_brokers(
    sim, tmp_path, capsys, monkeypatch
):
    """A broker that refuses the clean-up keeps its rate: the cancel says so, read back from
    the brokers' configs (it said every throttle was removed)."""
    from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
    from reassign_kit.errors import KafkaOperationError

    plan = write_plan(tmp_path / "plan.json", range(8))
    code, _ = cli_run(
        capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000"
    )
    assert code == 0
    alter = sim.alter_broker_configs

    def broker_2_refuses(changes, *a, **k):
        if 2 in changes:
            raise KafkaOperationError("broker 2: the config change timed out")
        return alter(changes, *a, **k)

    monkeypatch.setattr(sim, "alter_broker_configs", broker_2_refuses)
    code, lines = cli_run(capsys, "--cancel", "--reassignment-json-file", plan)
    assert sim.broker_configs([2])[2].get(FOLLOWER_RATE) == "1000000"  # left on broker 2
    line = throttle_line(lines)
    assert "throttles left: a rate on brokers 2" in line, line
    assert "no throttle left" not in line
    monkeypatch.setattr(sim, "alter_broker_configs", alter)
    code, lines = cli_run(capsys, "--cancel", "--reassignment-json-file", plan)
    assert LEADER_RATE not in sim.broker_configs([2])[2]
    assert throttle_line(lines).endswith("read back: no throttle left."), lines


def test_a_rate_its_broker_removes_late_is_not_reported_left_after_a_cancel(
    sim, tmp_path, capsys, monkeypatch
):
    """A broker applies the removal of its rate two seconds after acknowledging it (a KRaft
    broker applies a config record once it reaches it): the cancel's read-back waits for
    it, rather than reporting the rate as left."""
    from reassign_kit.cluster.config import FOLLOWER_RATE

    plan = write_plan(tmp_path / "plan.json", range(8))
    code, _ = cli_run(
        capsys, "--execute", "--reassignment-json-file", plan, "--throttle", "1000000"
    )
    assert code == 0
    alter, sleep = sim.alter_broker_configs, sim.sleep
    held: list[tuple[float, dict]] = []

    def removes_late(changes, *a, **k):
        now = {b: {k_: v for k_, v in kv.items() if not (b == 2 and v is None)}
               for b, kv in changes.items()}  # fmt: skip
        later = {k_: None for k_, v in changes.get(2, {}).items() if v is None}
        if later:
            held.append((sim.t + 2.0, {2: later}))
        return alter(now, *a, **k)

    def sleep_and_apply(seconds):
        sleep(seconds)
        for at, change in [h for h in held if h[0] <= sim.t]:
            held.remove((at, change))
            alter(change)

    monkeypatch.setattr(sim, "alter_broker_configs", removes_late)
    monkeypatch.setattr(sim, "sleep", sleep_and_apply)
    code, lines = cli_run(capsys, "--cancel", "--reassignment-json-file", plan)
    assert code == 0, lines
    assert throttle_line(lines).endswith("read back: no throttle left."), lines
    assert not held and FOLLOWER_RATE not in sim.broker_configs([2])[2]
