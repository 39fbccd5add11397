"""A run's listeners (``Run.subscribe``): one that fails never stops the run, and is said
once, on one line, not with a traceback at every event."""

from __future__ import annotations

import logging

from test_execute_sim import cluster, make_run, shift_plan


def test_a_listener_failing_at_every_event_is_said_once_without_a_traceback(tmp_path, caplog):
    sim = cluster(6, size=8 * 1024 * 1024)
    run = make_run(sim, shift_plan(sim), tmp_path, incremental=True, batch_size=2, wait=True)
    calls = {"n": 0}

    def closed_stdout(e):  # what printing to a closed pipe (`| head`) raises at every event
        calls["n"] += 1
        raise BrokenPipeError(32, "Broken pipe")

    heard = []
    run.subscribe(closed_stdout)
    run.subscribe(heard.append)  # the listeners after it still hear every event
    with caplog.at_level(logging.DEBUG, logger="reassign_kit"):
        res = run.run()
    assert res.state == "done"
    assert calls["n"] == len(heard) > 20
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1, [r.getMessage() for r in warned]
    msg = warned[0].getMessage()
    assert "closed_stdout" in msg and "BrokenPipeError" in msg and "the run goes on" in msg
    assert warned[0].exc_info is None  # one line: the traceback only at DEBUG
    assert any(r.levelno == logging.DEBUG and r.exc_info for r in caplog.records)


def test_listeners_hear_every_event_in_order_outside_the_runs_lock(tmp_path):
    """A listener runs on the loop's thread with the run's lock released: another thread it
    waits for gets the status and a control call through (under the lock, both waited on
    the listener: a run and a reader waiting on each other hung). Events emitted under the
    lock, the control call's included, are heard later, in the journal's order."""
    import threading

    from reassign_kit.moves.journal import read_events

    sim = cluster(6, size=8 * 1024 * 1024)
    run = make_run(sim, shift_plan(sim), tmp_path, incremental=True, batch_size=2, wait=True)
    heard, threads, got_through = [], set(), []

    def listener(e):
        heard.append(e)
        threads.add(threading.current_thread().name)
        if e["event"] == "completed" and not got_through:
            other = threading.Thread(target=lambda: (run.status(), run.set_caps(batch_size=3)))
            other.start()
            other.join(5)  # bounded: were the lock held here, it would wait for it
            got_through.append(not other.is_alive())

    run.subscribe(listener)
    run.start()
    res = run.wait(120)
    assert res is not None and res.state == "done"
    assert got_through == [True]
    assert threads == {"reassign-run"}
    journaled = [(e["event"], e["ts"]) for e in read_events(tmp_path / "run.jsonl")]
    assert [(e["event"], e["ts"]) for e in heard] == journaled
    assert "caps_changed" in [e["event"] for e in heard]
