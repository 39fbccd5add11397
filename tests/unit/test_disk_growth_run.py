"""The run's disk gate counts what a partition grows by while it moves (run/disks.py
``Growth``): a partition written at 0.5 MB/s, copied at a 1 MB/s throttle, takes twice its
size on its target by the time the copy catches up. Its size at rest fits under broker 3's
ceiling; with its growth it does not: the move is held, naming the growth, and the filesystem
never goes over (sampled at every model tick). Without the growth counted the copy took the
filesystem past the ceiling."""

from __future__ import annotations

from reassign_kit.cluster.simulate import MB
from reassign_kit.cluster.simulate_disks import DiskSim
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TOTAL = 100 * MB
G = TopicPartition("g", 0)


def cluster() -> tuple[DiskSim, Plan]:
    """``a`` (30 MB) moves first, alone: ~30 s in which the gate records ``g``'s sizes twice;
    ``g`` (20 MB, growing 0.5 MB/s) then asks for broker 3, whose filesystem (both dirs)
    holds 20 MB of other files: 65 MB below the 85 MB ceiling."""
    sim = DiskSim([0, 1, 2, 3], bandwidth=50 * MB, delete_delay_s=0)
    sim.add_topic("a", [[1, 2]], 30 * MB)
    sim.add_topic("g", [[1, 2]], 20 * MB)
    sim.growth[G] = 0.5 * MB
    d0, d1 = sim.log_dirs_of(3)
    sim.disks.fs[(3, d1)] = (3, d0)
    sim.disks.total[(3, d0)] = sim.disks.total[(3, d1)] = TOTAL
    sim.disks.other[(3, d0)] = 20 * MB
    for b in (0, 1, 2):
        for d in sim.log_dirs_of(b):
            sim.disks.total[(b, d)] = 100 * TOTAL
    plan = Plan.of([Move(TopicPartition("a", 0), (0, 2)), Move(G, (3, 2))])
    return sim, plan


def run(tmp_path) -> tuple[DiskSim, list[dict]]:
    sim, plan = cluster()
    opts = ExecuteOptions(throttle=1 * MB, batch_size=1, wait=True, poll_interval_ms=2000)

    def sleep(seconds: float) -> None:
        sim.sleep(seconds)
        if sim.now() > 150:  # the test's own bound: a held move waits for space never freed
            r.stop()

    r = Run(sim, plan, opts, tmp_path / "run.jsonl", clock=sim.now, sleep=sleep)
    r.run()
    return sim, read_events(tmp_path / "run.jsonl")


def peak_of_broker_3(sim: DiskSim) -> int:
    return max(n for (b, _), series in sim.usage.items() if b == 3 for _, n in series)


def test_a_move_whose_growth_would_cross_the_ceiling_is_held(tmp_path):
    sim, events = run(tmp_path)
    holds = [e for e in events if e["event"] == "disk_hold" and e["topic"] == "g"]
    assert holds, [e["event"] for e in events]
    assert holds[0]["growth_bytes"] > 20 * MB, holds[0]
    assert "growth while it moves" in holds[0]["reason"], holds[0]
    assert not [e for e in events if e["event"] == "submitted" and e["topic"] == "g"]
    assert peak_of_broker_3(sim) <= 0.85 * TOTAL


def test_the_same_move_at_its_size_at_rest_crosses_the_ceiling(tmp_path, monkeypatch):
    """What the gate prevents: counting no growth, the move goes and the copy overfills."""
    from reassign_kit.run import disks

    monkeypatch.setattr(disks.Growth, "rate", lambda self, tp: None)
    sim, events = run(tmp_path)
    assert [e for e in events if e["event"] == "submitted" and e["topic"] == "g"]
    assert peak_of_broker_3(sim) > 0.85 * TOTAL
