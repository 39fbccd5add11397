"""What-if before running: the makespan predicted per pacing policy by the
executor on a simulator set up like the cluster; ``--execute --dry-run`` sends nothing; a
calibration learned from a journal recovers the rates the cluster had."""

from __future__ import annotations

import argparse
import json

import pytest

from reassign_kit import whatif
from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.cluster.views import partition_sizes
from reassign_kit.model import Move, Plan
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run


def cluster(rate: float = 10 * MB) -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=rate)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(8)], 20 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    return sim, plan


def predicted(sim: SimCluster, plan: Plan, opts: ExecuteOptions, cal=None) -> dict[str, float]:
    states = sim.describe_partitions([m.tp for m in plan])
    sizes = partition_sizes(sim, [m.tp for m in plan])
    rows = whatif.predict(plan, states, sizes, sim.broker_ids, opts, cal)
    return {r["policy"]: r["seconds"] for r in rows}


def test_policies_are_predicted_and_ordered_as_physics_says():
    sim, plan = cluster()
    p = predicted(sim, plan, ExecuteOptions(batch_size=2, incremental=True, throttle=5 * MB))
    assert set(p) >= {"as given", "legacy (one request)", "batch 2", "incremental 2"}
    assert all(v > 0 for v in p.values())
    # 8 moves of 2 new 20 MiB replicas over 4 brokers at 5 MiB/s in: 320 MiB / 20 MiB/s = 16 s
    assert p["legacy (one request)"] >= 16
    assert p["incremental 2"] >= p["legacy (one request)"]
    assert p["batch 2"] >= p["incremental 2"]
    assert p["as given"] == p["incremental 2"]


def test_a_halved_throttle_doubles_the_prediction():
    sim, plan = cluster()
    fast = predicted(sim, plan, ExecuteOptions(batch_size=8, throttle=8 * MB))["as given"]
    slow = predicted(sim, plan, ExecuteOptions(batch_size=8, throttle=4 * MB))["as given"]
    assert slow == pytest.approx(2 * fast, rel=0.15)


def test_the_prediction_matches_a_real_run_on_the_same_model(tmp_path):
    """The executor against the simulator is the ground truth here: the what-if (which builds
    its own model from the cluster's reads) lands within 15% of the real run's makespan."""
    sim, plan = cluster(rate=6 * MB)
    opts = ExecuteOptions(batch_size=3, incremental=True, wait=True)
    cal = whatif.Calibration(rate_bps={b: 6 * MB for b in sim.broker_ids})
    guess = predicted(sim, plan, opts, cal)["as given"]
    t0 = sim.now()
    Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep).run()
    actual = sim.now() - t0
    assert guess == pytest.approx(actual, rel=0.15), (guess, actual)


def test_calibrate_learns_the_rates_a_run_had(tmp_path):
    sim, plan = cluster(rate=6 * MB)
    j = str(tmp_path / "j.jsonl")
    opts = ExecuteOptions(batch_size=2, incremental=True, wait=True)
    Run(sim, plan, opts, j, clock=sim.now, sleep=sim.sleep).run()
    cal = whatif.calibrate([j])
    assert cal.moves == len(plan)
    assert set(cal.rate_bps) == {0, 1, 2, 3}
    for r in cal.rate_bps.values():
        assert r == pytest.approx(6 * MB, rel=0.2)
    out = tmp_path / "cal.json"
    cal.write(str(out))
    assert whatif.Calibration.read(str(out)).rate_bps == pytest.approx(cal.rate_bps)


def test_calibrate_refuses_a_journal_without_completed_moves(tmp_path):
    j = tmp_path / "empty.jsonl"
    j.write_text("")
    with pytest.raises(whatif.UsageError, match="no completed move"):
        whatif.calibrate([str(j)])


def test_dry_run_sends_nothing_and_prints_the_policies(tmp_path, capsys):
    sim, plan = cluster()
    plan_path = tmp_path / "plan.json"
    plan.write(str(plan_path))
    argv = [
        "--bootstrap-server", "sim:9092", "--execute", "--reassignment-json-file", str(plan_path),
        "--throttle", str(5 * MB), "--reassignment-batch-size", "2", "--incremental",
        "--dry-run", "--output", "json",
    ]  # fmt: skip
    p = reassign_cli.build_parser()
    args = p.parse_args(argv)
    assert reassign_cli.check_args(p, args) == "execute"
    before = (sim.assignment(), sim.current_throttles(), dict(sim.topic_cfg), dict(sim.broker_cfg))
    sim.calls.clear()
    assert reassign_cli._execute(args, sim, plan) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["predicted_seconds"] > 0
    assert {r["policy"] for r in out["policies"]} >= {"as given", "legacy (one request)"}
    changes = {c for c in sim.calls if c.startswith("alter")}
    assert not changes, changes
    after = (sim.assignment(), sim.current_throttles(), dict(sim.topic_cfg), dict(sim.broker_cfg))
    assert after == before
    assert not list(tmp_path.glob("reassign-*"))  # no rollback file, no journal


def test_dry_run_with_a_missing_calibration_file_is_a_usage_error(tmp_path):
    sim, plan = cluster()
    args = argparse.Namespace(**vars(reassign_cli.build_parser().parse_args([])))
    args.calibration = str(tmp_path / "nope.json")
    with pytest.raises(whatif.UsageError, match="--calibration: cannot read"):
        whatif.Calibration.read(args.calibration)


def test_the_fetch_lost_per_completion_among_others_is_counted_once():
    """Three 10 MiB moves and a 40 MiB one into broker 3 at 2 MiB/s: uncalibrated, the
    what-if counts the fetch the broker loses at each of the three completions beside the
    40 MiB one (``quota.END_LOSS_BYTES``, as the sandbox measured); calibrated, the rate
    learned (bytes over the time moves came in) already holds it, so it is not added again."""
    sim = SimCluster(4, bandwidth=100 * MB)
    sim.add_topic("r", [[0]] * 4, [10 * MB, 10 * MB, 10 * MB, 40 * MB])
    plan = Plan.of(Move(tp, (3,)) for tp in sim.partitions)
    opts = ExecuteOptions(batch_size=4, throttle=2 * MB)
    plain = predicted(sim, plan, opts)["as given"]
    # 70 MiB at 2 MiB/s, a completion lag and the polls (36.5 s without the loss), and the
    # 3 MiB lost: 1.5 s more
    assert 37.5 <= plain <= 38.5, plain
    cal = whatif.Calibration(rate_bps={b: 2 * MB for b in sim.broker_ids})
    calibrated = predicted(sim, plan, opts, cal)["as given"]
    assert 36.0 <= calibrated <= 37.0, calibrated
