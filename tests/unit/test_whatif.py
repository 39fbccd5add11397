"""What-if before running: the makespan predicted per pacing policy by the run's
own ETA model of the whole plan; ``--execute --dry-run`` sends nothing; a
calibration learned from a journal recovers the share of the throttle and the completion
lag the run measured."""

from __future__ import annotations

import argparse
import json

import pytest

from reassign_kit import whatif
from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.cluster.views import partition_sizes
from reassign_kit.eta.model import flows_of, plan_index
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.schedule import Caps
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
    cal = whatif.Calibration(share=6 * MB / whatif.DEFAULT_RATE_BPS)  # unthrottled runs
    guess = predicted(sim, plan, opts, cal)["as given"]
    t0 = sim.now()
    Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep).run()
    actual = sim.now() - t0
    assert guess == pytest.approx(actual, rel=0.15), (guess, actual)


def test_calibrate_learns_the_share_and_the_lag_a_run_measured(tmp_path):
    """The calibration is what the run's ETA measured: the share of the throttle its brokers
    achieved and the completion lag (a cluster of 0.8 of its throttle, 1.5 s from last byte
    to completion); the what-if calibrated on one run predicts another plan of the same
    cluster within 15% where the uncalibrated one is further off; the file reads back."""
    sim, plan = cluster(rate=100 * MB)
    sim.quota_factor = dict.fromkeys(sim.broker_ids, 0.8)
    sim.quota_windows, sim.finish_s = 11, 1.5
    j = str(tmp_path / "j.jsonl")
    opts = ExecuteOptions(batch_size=2, incremental=True, wait=True, throttle=4 * MB)
    Run(sim, plan, opts, j, clock=sim.now, sleep=sim.sleep).run()
    cal = whatif.calibrate([j])
    assert cal.moves == len(plan) and cal.throttle == 4 * MB
    # read against the ETA's model, whose quota windows give the start's burst back: 0.89
    assert cal.share is not None and 0.8 <= cal.share <= 0.95
    assert cal.lag_s is not None and 0.5 <= cal.lag_s <= 2.5  # as the ETA measured it
    out = tmp_path / "cal.json"
    cal.write(str(out))
    assert whatif.Calibration.read(str(out)) == cal
    other, plan2 = cluster(rate=100 * MB)
    other.quota_factor = dict(sim.quota_factor)
    other.quota_windows, other.finish_s = 11, 1.5
    opts2 = ExecuteOptions(batch_size=8, wait=True, throttle=4 * MB)
    plain = predicted(other, plan2, opts2)["as given"]
    calibrated = predicted(other, plan2, opts2, cal)["as given"]
    t0 = other.now()
    Run(other, plan2, opts2, None, clock=other.now, sleep=other.sleep).run()
    actual = other.now() - t0
    assert abs(calibrated - actual) <= 0.15 * actual, (plain, calibrated, actual)
    assert abs(calibrated - actual) < abs(plain - actual), (plain, calibrated, actual)


def test_a_calibration_file_of_the_old_version_is_refused_by_name(tmp_path):
    old = tmp_path / "cal.json"
    old.write_text(json.dumps({"version": 1, "rate_bps": {"1": 1e6}, "overhead_s": 1.0}))
    with pytest.raises(whatif.UsageError, match=r"cal\.json is a calibration of version 1"):
        whatif.Calibration.read(str(old))


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


def test_a_queued_move_reads_from_the_leader_it_has_now():
    """The what-if knows each move's replicas before the run: a move from [2, 1] to [2, 3]
    reads from broker 2, its leader (the run's ETA, which does not know them for a queued
    move, guessed broker 1: the replica it drops)."""
    sim = SimCluster(4, bandwidth=10 * MB)
    sim.add_topic("a", [[2, 1]], 20 * MB)
    plan = Plan.of([Move(TopicPartition("a", 0), (2, 3))])
    states = sim.describe_partitions([m.tp for m in plan])
    index = plan_index(plan, states, {m.tp: 20 * MB for m in plan}, Caps(batch_size=1))
    flows, _, _ = flows_of(index, {}, None)
    assert [(f.src, f.steps) for f in flows] == [(2, [(3,)])]


def test_the_what_if_is_the_run_on_a_cluster_without_quirks(tmp_path):
    """On a cluster that copies at its throttle (Kafka's quota windows, fine ticks) with a
    fixed completion lag, the what-if calibrated with that share and lag is the run's
    makespan within a poll or two, KIP-435 steps and a per-broker cap included."""
    sim = SimCluster(4, bandwidth=100 * MB, tick=0.05)
    sim.finish_s, sim.quota_windows = 1.0, 11
    sim.add_topic(
        "a", [[p % 4, (p + 1) % 4] for p in range(6)], [(4 + 2 * p) * MB for p in range(6)]
    )
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    opts = ExecuteOptions(
        batch_size=3, incremental=True, throttle=4 * MB, max_moves_per_broker=2,
        parallel_replica_count=1, min_isr=1, wait=True,
    )  # fmt: skip
    cal = whatif.Calibration(share=1.0, lag_s=1.25, throttle=4 * MB)
    guess = predicted(sim, plan, opts, cal)["as given"]
    t0 = sim.now()
    Run(sim, plan, opts, str(tmp_path / "j.jsonl"), clock=sim.now, sleep=sim.sleep).run()
    actual = sim.now() - t0
    assert guess == pytest.approx(actual, abs=1.0), (guess, actual)
