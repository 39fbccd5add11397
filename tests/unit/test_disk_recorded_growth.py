"""The order a run computes at its start counts growth from the rates the plan record holds
(the snapshot's loads): ``g`` (20 MB, written at 0.5 MB/s, copied at 2 MB/s) would take 26.7 MB
on broker 3, whose filesystem has 23 MB below its ceiling until ``out`` (30 MB) leaves it. In
the file's order (``g`` first) the size at rest fits, so with no rate known at the start the
run sends ``g`` first and its copy overfills broker 3; with the record's rate the order puts
``out`` first and the filesystem stays under the ceiling at every model tick.

The record's rates reach the run only when the record is the plan's: a damaged rate is
refused naming the partition, and a record of another plan (run with ``--allow-drift``) gives
none, said in the notes."""

from __future__ import annotations

import json

import pytest

import reassign_kit
from reassign_kit.cluster.simulate import MB
from reassign_kit.cluster.simulate_disks import DiskSim
from reassign_kit.errors import InvalidPlanError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.planner.record import Approval, PlanRecord, record_path
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.preflight import preflight
from reassign_kit.run.run import Run

TOTAL = 100 * MB
G, OUT = TopicPartition("g", 0), TopicPartition("out", 0)
RATE = 0.5 * MB


def cluster() -> tuple[DiskSim, Plan, Plan]:
    """Broker 3's filesystem: 32 MB of other files and ``out`` (30 MB): 62 of 100 MB used,
    85 MB ceiling. The plan, in the file's order: ``g`` onto 3, then ``out`` off it."""
    sim = DiskSim([0, 1, 2, 3], bandwidth=50 * MB, delete_delay_s=0)
    sim.add_topic("g", [[1, 2]], 20 * MB)
    sim.add_topic("out", [[3, 1]], 30 * MB)
    sim.growth[G] = RATE
    d0, d1 = sim.log_dirs_of(3)
    sim.disks.fs[(3, d1)] = (3, d0)
    sim.disks.total[(3, d0)] = sim.disks.total[(3, d1)] = TOTAL
    sim.disks.other[(3, d0)] = 32 * MB
    for b in (0, 1, 2):
        for d in sim.log_dirs_of(b):
            sim.disks.total[(b, d)] = 100 * TOTAL
    plan = Plan.of([Move(G, (3, 2)), Move(OUT, (0, 1))])
    current = Plan.of([Move(G, (1, 2)), Move(OUT, (3, 1))])
    return sim, plan, current


OPTS = ExecuteOptions(throttle=2 * MB, batch_size=1, wait=True, poll_interval_ms=2000)


def bounded(sim: DiskSim, box: list) -> object:
    def sleep(seconds: float) -> None:
        sim.sleep(seconds)
        if sim.now() > 300:  # the test's own bound on model time
            box[0].stop()

    return sleep


def peak_of_broker_3(sim: DiskSim) -> int:
    return max(n for (b, _), series in sim.usage.items() if b == 3 for _, n in series)


def submitted(events: list[dict]) -> list[str]:
    return [e["topic"] for e in events if e["event"] == "submitted"]


def test_recorded_rates_order_the_freeing_move_first(tmp_path):
    sim, plan, _ = cluster()
    box: list = []
    r = Run(
        sim,
        plan,
        OPTS,
        tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=bounded(sim, box),
        growth_rates={G: RATE},
    )
    box.append(r)
    r.run()
    events = read_events(tmp_path / "run.jsonl")
    assert submitted(events) == ["out", "g"], submitted(events)
    assert not [e for e in events if e["event"] == "disk_no_order"]
    assert sim.partitions[G].replicas == [3, 2]
    assert peak_of_broker_3(sim) <= 0.85 * TOTAL


def test_without_a_rate_at_the_start_the_files_order_overfills(tmp_path):
    """What the record's rates prevent: one size reading, no growth, ``g`` first."""
    sim, plan, _ = cluster()
    box: list = []
    r = Run(sim, plan, OPTS, tmp_path / "run.jsonl", clock=sim.now, sleep=bounded(sim, box))
    box.append(r)
    r.run()
    events = read_events(tmp_path / "run.jsonl")
    assert submitted(events)[0] == "g"
    assert peak_of_broker_3(sim) > 0.85 * TOTAL


def write_plan(tmp_path, growth: dict) -> tuple[DiskSim, Plan, str]:
    sim, plan, current = cluster()
    path = str(tmp_path / "plan.json")
    plan.write(path)
    PlanRecord.of(plan, current, sim.broker_ids, "snap.json", growth).write(record_path(path))
    return sim, plan, path


def test_the_plan_records_rates_reach_the_runs_order(tmp_path):
    """Through the API, as `--execute` runs it: the record beside the plan gives the rates."""
    sim, plan, path = write_plan(tmp_path, {G: RATE, TopicPartition("other", 0): 1.0})
    rec = PlanRecord.read(record_path(path))
    assert rec.growth == {G: RATE}  # only the planned partitions are recorded
    assert rec.rates_for(plan) == {G: RATE}
    journal = str(tmp_path / "run.jsonl")
    reassign_kit.execute(
        sim, path, batch_size=1, throttle=2 * MB, journal=journal, rollback_path=None
    )
    assert submitted(read_events(journal)) == ["out", "g"]
    assert peak_of_broker_3(sim) <= 0.85 * TOTAL


@pytest.mark.parametrize("bad", ["fast", None, True, "NaN", "Infinity"])
def test_a_damaged_rate_is_refused_by_name(tmp_path, bad):
    sim, plan, path = write_plan(tmp_path, {G: RATE})
    rec = record_path(path)
    doc = json.loads(open(rec).read())
    entry = next(e for e in doc["partitions"] if e["topic"] == "g")
    entry["growth_bytes_s"] = bad
    text = json.dumps(doc).replace('"NaN"', "NaN").replace('"Infinity"', "Infinity")
    open(rec, "w").write(text)
    with pytest.raises(InvalidPlanError) as e:
        reassign_kit.execute(sim, path, batch_size=1, rollback_path=None)
    assert "plan.record.json is not a plan record" in str(e.value)
    assert "(g-0): 'growth_bytes_s' must be a finite number" in str(e.value)
    assert sim.calls["alter_reassignments"] == 0


def test_a_record_of_another_plan_gives_no_rates(tmp_path):
    """An edited plan run with allow_drift: the record's numbers describe another plan."""
    sim, plan, path = write_plan(tmp_path, {G: RATE})
    edited = Plan.of([Move(G, (3, 1)), Move(OUT, (0, 1))])
    edited.write(path)
    assert PlanRecord.read(record_path(path)).rates_for(edited) == {}
    box: list = []
    prepared = preflight(
        sim,
        path,
        OPTS,
        str(tmp_path / "run.jsonl"),
        rollback_path=None,
        approval=Approval(allow_drift=True),
        sleep=bounded(sim, box),
    )
    notes = prepared.approval
    assert any("growth rates describe another plan" in n for n in notes), notes
    box.append(prepared.run)
    prepared.run.run()
    # no rate at the start: the file's order
    assert submitted(read_events(tmp_path / "run.jsonl"))[0] == "g"


def test_plan_records_the_snapshots_growth_rates(tmp_path, monkeypatch):
    """`plan` from a snapshot with loads: each planned partition's rate in the record."""
    from reassign_kit.cli import main as cli_main
    from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
    from reassign_kit.snapshot.load import PartitionLoad
    from reassign_kit.snapshot.snapshot import Snapshot

    monkeypatch.chdir(tmp_path)
    snap = Snapshot.of(
        [BrokerEntry(b, None) for b in (1, 2, 3)],
        [TopicEntry("t", 1)],
        [
            PartitionEntry(
                "t",
                p,
                (1 + p % 3, 1 + (p + 1) % 3),
                1000,
                load=PartitionLoad(growth_bytes_s=100.0 * (p + 1)),
            )
            for p in range(6)
        ],
    )
    snap.write(str(tmp_path / "snap.json"))
    out = str(tmp_path / "plan.json")
    argv = ["plan", "--snapshot", "snap.json", "--remove-brokers", "3", "--engine", "local"]
    assert cli_main([*argv, "--output", out, "--quiet"]) == 0
    rec = PlanRecord.read(record_path(out))
    planned = set(rec.partitions)
    assert planned and set(rec.growth) == planned
    assert rec.growth == {tp: 100.0 * (tp.partition + 1) for tp in planned}
    assert rec.rates_for(Plan.read(out)) == rec.growth
