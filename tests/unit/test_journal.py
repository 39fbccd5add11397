"""The journal on its worst day (with its group commit), on the simulator: a
torn last line is cut before the next append, corruption before the last line is an error
naming the line, a write that fails (ENOSPC from /dev/full) ends the run with the failure
reported and ``wait()`` returning, one fsync per poll and before every change, mode 0600."""

from __future__ import annotations

import os
import stat

import pytest

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import EXIT_CODES, JournalError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import Journal, cut_torn_tail, read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TP = TopicPartition


def sim_plan(partitions: int = 8, size: float = 2 * MB) -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(partitions)], size)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    return sim, plan


def run_of(sim: SimCluster, plan: Plan, path, resume: bool = False, **opts) -> Run:
    opts.setdefault("throttle", MB)
    return Run(
        sim, plan, ExecuteOptions(**opts), str(path), resume=resume, clock=sim.now, sleep=sim.sleep
    )


def test_a_torn_last_line_is_cut_and_the_resume_is_readable(tmp_path):
    sim, plan = sim_plan()
    path = tmp_path / "run.jsonl"
    sim.stall(TP("a", 0))  # one move stays in flight: the run is left to resume
    run_of(sim, plan, path, incremental=True, batch_size=4).run()
    whole = path.read_bytes()
    with open(path, "ab") as f:  # the process died mid-write
        f.write(b'{"ts": 1.0, "event": "sample", "run_id": "x", "rows": [{"top')
    assert cut_torn_tail(str(path)) > 0 and path.read_bytes() == whole
    with open(path, "ab") as f:
        f.write(b'{"ts": 1.0, "event": "sam')
    sim.stall(TP("a", 0), False)
    res = run_of(sim, plan, path, incremental=True, batch_size=4, wait=True, resume=True).run()
    assert res.state == "done"
    evs = read_events(path)  # no error: every line is whole again
    started = [e for e in evs if e["event"] == "run_started"]
    assert [e["resumed"] for e in started] == [False, True]
    warn = [e for e in evs if e["event"] == "warning" and "torn" in e["message"]]
    assert len(warn) == 1 and "cut off" in warn[0]["message"]


def test_corruption_before_the_last_line_is_an_error_naming_the_line(tmp_path):
    path = tmp_path / "run.jsonl"
    with Journal(path, "r1") as j:
        j.write("run_started", resumed=False)
        j.write("submitted", topic="a", partition=0)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "#garbage#", lines[1]]) + "\n")
    with pytest.raises(JournalError, match=r"run\.jsonl:2: "):
        read_events(path)
    # a last line still being written is not corruption
    path.write_text("\n".join(lines) + "\n" + '{"ts": 2, "ev')
    assert [e["event"] for e in read_events(path)] == ["run_started", "submitted"]
    # a complete last line that is not an event is
    path.write_text("\n".join(lines) + "\n[1, 2]\n")
    with pytest.raises(JournalError, match=":3:"):
        read_events(path)
    assert JournalError.exit_code in EXIT_CODES


def test_resume_from_a_corrupt_journal_fails_naming_the_line_and_sends_nothing(tmp_path):
    sim, plan = sim_plan()
    path = tmp_path / "run.jsonl"
    sim.stall(TP("a", 0))
    run_of(sim, plan, path, incremental=True, batch_size=4).run()
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "not json", *lines[1:]]) + "\n")
    assigned = sim.assignment()
    in_flight = set(sim.list_reassignments())
    with pytest.raises(JournalError, match=":2:"):
        run_of(sim, plan, path, incremental=True, batch_size=4, resume=True).run()
    assert sim.assignment() == assigned and set(sim.list_reassignments()) == in_flight


def test_a_failed_write_ends_the_run_reported_and_wait_returns(tmp_path):
    """Disk full mid-run (the journal's file becomes /dev/full, which answers ENOSPC): the
    run stops submitting, lets the moves in flight finish, cleans its throttles up, reports
    the journal failure, and ``wait()`` returns (it blocked forever before)."""
    sim, plan = sim_plan(partitions=8)
    original = sim.assignment()
    path = tmp_path / "run.jsonl"
    run = run_of(sim, plan, path, incremental=True, batch_size=2, wait=True)
    full = open("/dev/full", "ab")  # noqa: SIM115 - closed below
    seen = []

    def disk_full_after_first_submission(ev):
        seen.append(ev["event"])
        if ev["event"] == "submitted" and run.shared.journal is not None and not seen.count("full"):
            seen.append("full")
            run.shared.journal._f = full  # the next write hits ENOSPC

    run.subscribe(disk_full_after_first_submission)
    try:
        run.start()
        res = run.wait(120)
    finally:
        full.close()
    assert res is not None, "Run.wait() did not return after the journal write failed"
    assert "full" in seen
    assert res.state == "failed" and "cannot write the journal" in (res.error or ""), res
    assert "No space left" in res.error
    # nothing was submitted after the failure; the moves in flight then finished (drained)
    # and no throttle is left; every partition is at its target or where it was
    assert len(res.pending) >= 4 and not res.still_moving, res
    assert not sim.list_reassignments()
    assert sim.current_throttles().is_empty(), sim.current_throttles()
    placed = sim.assignment()
    for m in plan:
        assert placed[m.tp] in (tuple(m.replicas), original[m.tp]), (m.tp, placed[m.tp])


def test_group_commit_one_fsync_per_poll_and_before_every_change(tmp_path, monkeypatch):
    sim, plan = sim_plan(partitions=40, size=1 * MB)
    path = tmp_path / "run.jsonl"
    run = run_of(sim, plan, path, incremental=True, batch_size=10, wait=True)
    counts = {"fsync": 0, "polls": 0, "changes": 0, "dirty_at_change": 0}
    real_fsync = os.fsync

    def fsync(fd):
        counts["fsync"] += 1
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    for name in ("alter_reassignments", "alter_topic_configs", "alter_broker_configs"):
        real = getattr(sim, name)

        def change(*a, _real=real, **k):
            counts["changes"] += 1
            counts["dirty_at_change"] += bool(
                run.shared.journal is not None and run.shared.journal._dirty
            )
            return _real(*a, **k)

        monkeypatch.setattr(sim, name, change)
    real_poll = run.parts.loop.poll

    def poll():
        counts["polls"] += 1
        return real_poll()

    monkeypatch.setattr(run.parts.loop, "poll", poll)
    res = run.run()
    assert res.state == "done"
    events = len(read_events(path))
    assert counts["changes"] > 0 and counts["polls"] > 0
    assert counts["dirty_at_change"] == 0, "a change was sent before its events were synced"
    assert counts["fsync"] <= counts["polls"] + counts["changes"] + 2, counts
    assert counts["fsync"] < events / 2, (counts, events)


def test_the_journal_is_created_private(tmp_path):
    path = tmp_path / "run.jsonl"
    with Journal(path, "r1") as j:
        j.write("run_started")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_one_writer_at_a_time_the_second_is_refused_and_nothing_is_cut(tmp_path):
    """The same command run twice (a second --resume in another terminal): the second writer
    is refused before it cuts anything (before: it cut the live writer's line being written
    as a torn tail and appended its events to the live run's). The lock goes with the file:
    closed (or its process dead), the journal opens again."""
    path = tmp_path / "run.jsonl"
    first = Journal(path, "r1")
    first.write("run_started")
    first.commit()
    with open(path, "a") as f:
        f.write('{"ts": 1, "event": "sam')  # the live writer's line, half written
    with pytest.raises(JournalError, match="is in use: another run is writing it") as e:
        Journal(path, "r2")
    assert e.value.exit_code == 12 and str(path) in str(e.value)
    assert open(path).read().endswith('"event": "sam')  # not cut
    first.close()
    again = Journal(path, "r1")  # the writer gone: opens, and cuts the torn tail now
    assert again.torn_bytes > 0
    again.close()


def test_a_second_run_on_a_live_journal_sends_nothing(tmp_path):
    sim, plan = sim_plan()
    path = tmp_path / "run.jsonl"
    live = Journal(path, "other")  # another process's run, alive
    try:
        r = run_of(sim, plan, path, resume=False)
        with pytest.raises(JournalError, match="in use"):
            r.run()
        assert not sim.list_reassignments() and sim.calls["alter_reassignments"] == 0
    finally:
        live.close()


def test_a_file_system_without_locks_does_not_stop_the_run(tmp_path, monkeypatch):
    """flock failing for another reason than a holder (ENOLCK, EOPNOTSUPP on some FUSE
    mounts) is not 'in use': the journal opens (unguarded), as it did before the lock."""
    import errno
    import fcntl

    def no_locks(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    j = Journal(tmp_path / "run.jsonl", "r1")
    j.write("run_started")
    j.close()
    assert [e["event"] for e in read_events(tmp_path / "run.jsonl")] == ["run_started"]
