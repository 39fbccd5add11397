"""A target broker that dies mid-run and stays dead, on real brokers: broker 4 is stopped once
both moves into it copied some bytes; the run (the real CLI) journals each move ``stuck`` with
"target broker 4 is down since ..." within ``--stuck-after``, and a stop (SIGTERM) then ends
without waiting for the dead broker (the journal says so: stopping -> stopped with no cleanup
retry, the broker's throttles named as left). Broker 4 is restarted and the cluster cleaned up.

Long (about 2 minutes): ``make long``. The simulator's twin is tests/unit/test_dead_target.py."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition, is_complete
from reassign_kit.moves.journal import read_events
from reassign_kit.run.finish import CLEANUP_RETRY_S
from reassign_kit.sandbox.sandbox import Sandbox

pytestmark = [pytest.mark.integration, pytest.mark.long]
DEAD = 4
STUCK_AFTER_S = 15
POLL_S = 0.5
DOWN = re.compile(rf"target broker {DEAD} is down since \d\d:\d\d:\d\d")


def events(path: Path) -> list[dict]:
    try:
        return read_events(path)
    except Exception:  # noqa: BLE001 - being written: read again later
        return []


def wait_for(path: Path, proc: subprocess.Popen, pred, what: str, timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ev = events(path)
        if pred(ev):
            return ev
        assert proc.poll() is None, f"the run ended before {what}: {[e['event'] for e in ev]}"
        time.sleep(0.2)
    raise AssertionError(f"no {what} within {timeout:.0f}s")


def copying(ev: list[dict]) -> bool:
    """Both moves submitted and some bytes copied (the run's own sample says so)."""
    subs = sum(1 for e in ev if e["event"] == "submitted")
    return subs >= 2 and any((e.get("bytes_copied") or 0) > 0 for e in ev if e["event"] == "sample")


def test_a_dead_target_makes_its_moves_stuck_and_a_stop_ends_promptly(tmp_path):
    journal = tmp_path / "run.jsonl"
    with Sandbox.start(brokers=4, dir=tmp_path / "sb") as sb:
        sb.create_topic("dead", assignment=[[1, 2], [2, 1]])
        sb.load("dead", mb_per_partition=20)
        plan = Plan.of(
            [Move(TopicPartition("dead", 0), (1, DEAD)), Move(TopicPartition("dead", 1), (2, DEAD))]
        )
        plan_file = tmp_path / "plan.json"
        plan.write(str(plan_file))
        args = [
            *(sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", sb.bootstrap_servers),
            *("--execute", "--reassignment-json-file", str(plan_file), "--wait"),
            *("--reassignment-batch-size", "2", "--throttle", str(512 * 1024)),
            *("--stuck-after", f"{STUCK_AFTER_S}s", "--journal", str(journal)),
            *("--reassignment-poll-interval-ms", str(int(POLL_S * 1000))),
            *("--rollback-file", str(tmp_path / "rollback.json")),
        ]
        log = open(tmp_path / "cli.log", "wb")  # noqa: SIM115 - the child's output
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        stopped = None
        try:
            wait_for(journal, proc, copying, "bytes copied into broker 4", 90)
            sb.stop_broker(DEAD)
            stopped = time.time()
            ev = wait_for(
                journal,
                proc,
                lambda ev: sum(1 for e in ev if e["event"] == "stuck") >= 2,
                "two stuck moves",
                STUCK_AFTER_S + 60,
            )
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(120)
            ev = read_events(journal)
            out = (tmp_path / "cli.log").read_text(errors="replace")
            stuck = [e for e in ev if e["event"] == "stuck"]
            assert {(e["topic"], e["partition"]) for e in stuck} == {("dead", 0), ("dead", 1)}
            for e in stuck:
                assert DOWN.search(e["reason"]), e
                # within --stuck-after of the broker's death, plus a poll and the sample's lag
                assert e["ts"] - stopped <= STUCK_AFTER_S + 10 * POLL_S, (e, stopped)
            life = [(e["to"], e["ts"]) for e in ev if e["event"] == "lifecycle"]
            to = dict(life)
            assert "stopping" in to and to.get("stopped"), life
            # the stop did not wait on the dead broker: no cleanup retry between the two
            assert to["stopped"] - to["stopping"] < CLEANUP_RETRY_S / 2, life
            fin = [e for e in ev if e["event"] == "run_finished"]
            assert fin and fin[-1]["state"] == "stopped", fin
            left = [e["message"] for e in ev if e["event"] == "warning"]
            assert any(f"broker(s) {DEAD} not cleaned up" in m for m in left), left
            assert code != 0 or "stopped" in out, out
            print(
                f"died at {stopped:.1f}; stuck after "
                f"{[round(e['ts'] - stopped, 1) for e in stuck]} s; stopping -> stopped in "
                f"{to['stopped'] - to['stopping']:.1f} s; exit {code}"
            )
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
            log.close()
            if stopped is not None:
                sb.start_broker(DEAD)
        # clean up: the moves finish once broker 4 is back, then the throttles go
        gw = AdminGateway(sb.bootstrap_servers)
        try:
            deadline = time.monotonic() + 180
            while True:
                states = gw.describe_partitions([m.tp for m in plan])
                if all(is_complete(m.replicas, states.get(m.tp)) for m in plan):
                    break
                assert time.monotonic() < deadline, states
                time.sleep(1)
        finally:
            gw.close()
        clean = subprocess.run(
            [*args[:3], "throttles", *args[3:5], "--clean", "--journal", str(journal)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert clean.returncode == 0, clean.stdout + clean.stderr
