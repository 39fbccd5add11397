"""The notebook panel on the real sandbox (no browser): a cap raised while the run goes on lets
the waiting moves start, Stop leaves the moves in flight running, and Resume from journal
adopts them and finishes the plan; Verify then says done and no throttle is left."""

from __future__ import annotations

import json
import time

import pytest

from reassign_kit import runbook
from reassign_kit.operations import cancel as cancel_mod
from reassign_kit.operations import verify as verify_mod
from reassign_kit.ui import panel

pytestmark = [pytest.mark.integration]


def wait_for(cond, what: str, timeout: float = 120.0) -> None:
    """Wait (the bound only turns a hang into a failure; nothing is timed)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.05)


def events(p, kind: str) -> list[dict]:
    with p._lock:
        return [e for e in p.events if e["event"] == kind]


def test_live_cap_stop_and_resume_from_journal(sandbox, bootstrap, topic_name, tmp_path):
    topic = topic_name("panel")
    plan_path = runbook.demo_topic_and_plan(
        str(sandbox.dir), str(tmp_path / "in"), topic, partitions=3, mb_per_partition=3.0
    )
    out = tmp_path / "out"
    # additional: the shared sandbox may hold other tests' moves; 200 kB/s on 3 MB partitions:
    # each move takes about 15 s, so Stop right after the third submission finds them in flight
    p = panel(
        plan_path,
        bootstrap,
        output_dir=str(out),
        batch_size=3,
        incremental=True,
        cluster_max_reassignments=1,
        throttle=200_000,
        poll_interval_ms=200,
        additional=True,
    )
    try:
        assert p.phase == "ready", p.summary.problems
        p.buttons["execute"].click()
        wait_for(lambda: events(p, "submitted"), "the first submission")
        assert len(events(p, "submitted")) == 1  # the cluster-wide cap holds the others back
        p.controls["cluster_max_reassignments"].value = 3
        wait_for(lambda: len(events(p, "submitted")) == 3, "the moves the raised cap lets in")
        assert "cluster-wide cap: 1 -> 3" in " ".join(p.report()["changes"])

        p.buttons["stop"].click()
        p.wait(120)
        assert p.phase == "stopped", p.message.value  # moves still in flight: resume adopts them
        assert p.enabled() == {"resume_run", "verify"}
        p.buttons["resume_run"].click()
        p.wait(300)
        assert p.phase == "done", p.message.value
        p.buttons["verify"].click()
        assert p.report()["verify_complete"] is True, p.message.value
        journal = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
        assert len({e["run_id"] for e in journal}) == 1
        assert sum(e["event"] == "submitted" for e in journal) == 3  # nothing resubmitted
        assert [e["resumed"] for e in journal if e["event"] == "run_started"] == [False, True]
        # in flight at resume: adopted; finished meanwhile: completed, adopted
        assert any(
            e["event"] == "adopted" or (e["event"] == "completed" and e.get("adopted"))
            for e in journal
        )
        left = journal[-1]["throttles_left"]  # other tests' moves on the shared sandbox keep theirs
        assert journal[-1]["event"] == "run_finished"
        assert topic not in {**left.get("leader_replicas", {}), **left.get("follower_replicas", {})}
    finally:
        if p.phase in ("running", "paused"):
            p.cancel()
            p.wait(120)
        if p.phase != "verifying":
            p._verify_fn(p.gateway, p.plan)  # clears the plan's throttles once nothing moves


def test_others_moves_in_flight_refused_like_the_cli_and_no_throttle_changed(
    sandbox, bootstrap, topic_name, tmp_path, capsys
):
    """Someone else moves the plan's partitions (throttled, so it stays in flight): without
    "additional" the panel's Execute is refused with the CLI's message (the CLI exits 6), and
    no throttle config changes — the other move keeps the throttles it needs."""
    from reassign_kit.cli import reassign as reassign_cli
    from reassign_kit.model import Plan
    from reassign_kit.operations import execute as ops
    from reassign_kit.throttles.configs import current_throttles

    topic = topic_name("panel-foreign")
    plan_path = runbook.demo_topic_and_plan(
        str(sandbox.dir), str(tmp_path / "in"), topic, partitions=2, mb_per_partition=3.0
    )
    plan = Plan.read(plan_path)
    gw = ops.connect(bootstrap)
    brokers = [b.id for b in gw.brokers()]
    try:
        ops.execute(gw, plan, throttle=10_000, rollback_path=None)  # someone else's run
        wait_for(lambda: set(gw.list_reassignments()) & {m.tp for m in plan}, "the other move")
        before = current_throttles(gw, [topic], brokers)
        assert before["topics"], "the other run's throttles are set"

        code = reassign_cli.main(
            [
                "--bootstrap-server",
                bootstrap,
                "--execute",
                "--reassignment-json-file",
                plan_path,
                "--reassignment-batch-size",
                "1",
                "--rollback-file",
                str(tmp_path / "cli-rollback.json"),
                "--journal",
                str(tmp_path / "cli.jsonl"),
            ]
        )
        cli_err = capsys.readouterr().err
        assert code == 6

        p = panel(
            plan_path, bootstrap, output_dir=str(tmp_path / "out"), batch_size=1, throttle=500_000
        )
        assert p.phase == "ready", p.summary.problems
        p.buttons["execute"].click()
        assert p.run is None and p.phase == "ready"
        assert len(p.errors) == 1 and p.errors[0] in cli_err
        assert p.errors[0].startswith("cannot execute: ")
        assert current_throttles(gw, [topic], brokers) == before
        assert not (tmp_path / "out" / "journal.jsonl").exists()
    finally:
        cancel_mod.cancel(gw, plan)
        wait_for(lambda: not set(gw.list_reassignments()) & {m.tp for m in plan}, "the cancel")
        verify_mod.verify(gw, plan)  # clears the plan's throttles once nothing moves
        gw.close()
