"""The run holds the disk ceiling (run/disks.py) on the replication model: a broker whose
filesystem the moves would fill in the plan's order — four partitions arriving, four leaving,
the end state fitting — completes with the dir's peak (sampled at every model tick) under the
ceiling, the order changed and a move held and released in the journal; another writer
filling the dir mid-run pauses new submissions until its bytes go."""

from __future__ import annotations

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

FULL = 3  # the broker whose disk is small
TOTAL = 150 * MB


class Sampled(SimCluster):
    """The model with broker 3's filesystem usage sampled at every tick."""

    peak = 0
    hook = None

    def _advance(self, dt: float) -> None:
        super()._advance(dt)
        if self.hook is not None:
            self.hook(self)
        d0 = self.log_dirs_of(FULL)[0]
        caps = self.disks.capacity({FULL: [d0]}, self.describe_log_dirs([FULL]))
        used = caps[FULL][d0].used_bytes
        self.peak = max(self.peak, used)
        self.samples = [*getattr(self, "samples", []), (self.t, used)]


def small_disk_cluster() -> tuple[Sampled, Plan]:
    """Broker 3 holds four 20 MB partitions (90 MB with 10 MB of other files, 60% of 150 MB);
    the plan moves them off and four others on: the end state is 90 MB again, but the four
    arrivals sorted first take it to 170 MB (113%) in the plan's order."""
    sim = Sampled([0, 1, 2, 3], bandwidth=50 * MB)
    sim.add_topic("a", [[0, 1]] * 4, 20 * MB)  # arrive on 3
    sim.add_topic("b", [[3, 2]] * 4, 20 * MB)  # leave 3
    d0, d1 = sim.log_dirs_of(FULL)
    sim.disks.total[(FULL, d0)] = TOTAL
    sim.disks.total[(FULL, d1)] = 10 * TOTAL  # another filesystem, empty
    sim.disks.other[(FULL, d0)] = 10 * MB
    for b in (0, 1, 2):  # roomy brokers
        for d in sim.log_dirs_of(b):
            sim.disks.total[(b, d)] = 10 * TOTAL
    plan = Plan.of(
        [Move(TopicPartition("a", p), (0, FULL)) for p in range(4)]
        + [Move(TopicPartition("b", p), (1, 2)) for p in range(4)]
    )
    return sim, plan


def run(sim, plan, tmp_path, **opts) -> list[dict]:
    r = Run(
        sim,
        plan,
        ExecuteOptions(throttle=4 * MB, batch_size=2, incremental=True, wait=True, **opts),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    result = r.run()
    assert result.ok, result
    return read_events(tmp_path / "run.jsonl")


def test_a_run_never_takes_a_dir_over_the_ceiling(tmp_path):
    sim, plan = small_disk_cluster()
    events = run(sim, plan, tmp_path)
    assert sim.peak <= 0.85 * TOTAL, f"peak {sim.peak / MB:.1f} MB"
    assert sim.assignment()[TopicPartition("a", 0)] == (0, FULL)
    submitted = [e for e in events if e["event"] == "submitted"]
    assert len(submitted) == 8
    # the order put moves off broker 3 ahead of some moves onto it
    topics = [e["topic"] for e in submitted]
    assert topics.index("b") < len(topics) - topics[::-1].index("a") - 1


def test_without_the_ceiling_the_same_run_goes_over(tmp_path):
    # the baseline the test above is measured against: this plan does cross it
    sim, plan = small_disk_cluster()
    run(sim, plan, tmp_path, disk_ceiling=None)
    assert sim.peak > 0.85 * TOTAL


def writer(at: float, nbytes: int, until: float):
    """Another writer: ``nbytes`` appear on broker 3's dir at ``at`` s of model time and go
    at ``until``."""

    def hook(s: Sampled) -> None:
        d0 = s.log_dirs_of(FULL)[0]
        s.disks.other[(FULL, d0)] = 10 * MB + (nbytes if at <= s.t < until else 0)

    return hook


def kinds_at(events: list[dict], *kinds: str) -> list[dict]:
    return [e for e in events if e["event"] in kinds]


def test_a_move_into_a_dir_without_room_is_held_then_released(tmp_path):
    # moves off broker 3 end at 20 s; 105 MB of another writer's from 15 s to 40 s leave it
    # at 115 MB: under the ceiling (127.5 MB) with no room for a 20 MB arrival
    sim, plan = small_disk_cluster()
    sim.hook = writer(15, 105 * MB, 40)
    events = run(sim, plan, tmp_path)
    d0 = sim.log_dirs_of(FULL)[0]
    holds = kinds_at(events, "disk_hold")
    assert holds, [e["event"] for e in events]
    h = holds[0]
    assert (h["broker"], h["dir"], h["needs_bytes"]) == (FULL, d0, 20 * MB)
    assert h["reason"].startswith(f"waiting for space on broker {FULL} {d0}")
    assert h["free_bytes"] < h["needs_bytes"] <= h["limit_bytes"] - h["used_bytes"] + 20 * MB
    released = kinds_at(events, "disk_release")
    assert (h["topic"], h["partition"]) in {(e["topic"], e["partition"]) for e in released}
    # not submitted while held: its submission comes after the release, after 40 s
    sub = next(
        e
        for e in kinds_at(events, "submitted")
        if (e["topic"], e["partition"]) == (h["topic"], h["partition"])
    )
    assert events.index(sub) > events.index(released[0])
    assert len(kinds_at(events, "submitted")) == 8  # nothing lost
    # over the ceiling only while the moves off broker 3 still held their copies beside the
    # writer's bytes (15-20 s); from then on never, the writer's bytes included
    over = [t for t, used in sim.samples if used > 0.85 * TOTAL]
    assert over and max(over) <= 20.1


def test_a_dir_over_the_ceiling_pauses_every_submission_until_it_is_back_under(tmp_path):
    sim, plan = small_disk_cluster()
    sim.hook = writer(1, 100 * MB, 31)  # 190 MB from 1 s to 31 s: over by another writer
    events = run(sim, plan, tmp_path)
    over = kinds_at(events, "disk_over_ceiling")
    below = kinds_at(events, "disk_below_ceiling")
    assert [(e["broker"], e["used_bytes"] > e["limit_bytes"]) for e in over] == [(FULL, True)]
    assert len(below) == 1
    i, j = events.index(over[0]), events.index(below[0])
    assert not kinds_at(events[i:j], "submitted")  # nothing submitted while over
    assert len(kinds_at(events, "submitted")) == 8


def test_a_target_that_reported_its_sizes_and_then_stops_answering_holds_its_moves(tmp_path):
    sim, plan = small_disk_cluster()
    seen: list[dict] = []

    def on(e: dict) -> None:
        # broker 3 dies once the moves off it are submitted (it answered the run's first read)
        if e["event"] == "submitted" and e["topic"] == "b" and not seen:
            seen.append(e)
            sim.down.add(FULL)
        if e["event"] == "disk_hold" and FULL in sim.down:
            seen.append(e)
            sim.down.discard(FULL)  # it comes back

    r = Run(
        sim,
        plan,
        ExecuteOptions(throttle=4 * MB, batch_size=2, incremental=True, wait=True),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    r.subscribe(on)
    assert r.run().ok
    holds = [e for e in seen if e["event"] == "disk_hold"]
    assert holds and holds[0]["reason"] == (
        f"waiting for broker {FULL}: it reports no log dirs (down or not answering)"
    )


def test_the_live_view_and_the_panel_say_what_the_run_waits_for(tmp_path):
    from rich.console import Console

    from reassign_kit.cli.live import LiveState
    from reassign_kit.ui.status import status_of

    sim, plan = small_disk_cluster()
    sim.hook = writer(15, 105 * MB, 40)
    events = run(sim, plan, tmp_path)
    upto = next(i for i, e in enumerate(events) if e["event"] == "disk_hold") + 1
    live = LiveState(moves=8)
    for e in events[:upto]:
        live.on_event(e)
    c = Console(width=200, record=True)
    c.print(live.render())
    d0 = sim.log_dirs_of(FULL)[0]
    assert f"waiting for space on broker {FULL} {d0}" in c.export_text()
    st = status_of("running", events[:upto], 160 * MB, 8, now=events[upto - 1]["ts"])
    assert f"waiting for space on broker {FULL} {d0}" in st.line
    # released: said no more
    assert status_of("running", events, 160 * MB, 8, now=0).disk_wait is None
