"""Chaos: the disk of a target broker fills from outside during a run (``make chaos``). Broker
4's log dirs lie on a 64 MiB tmpfs the test mounts; once the run has submitted its first moves
another writer fills that filesystem past the 85% ceiling, keeps it there 15 s and deletes its
file. The run journals ``disk_over_ceiling`` naming broker 4, submits nothing while it is over
(moves in flight go on), reports ``disk_below_ceiling`` once the space is back, and completes;
the harness checks what every scenario checks (no acknowledged message lost, no stray
throttle, every partition at its target, no RF change) and its row joins the chaos table."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from harness import Ctx, _events, run_scenario
from test_chaos import OUT, check

pytestmark = [pytest.mark.integration, pytest.mark.chaos]
MIB = 1024 * 1024
FS_BYTES = 64 * MIB
CEILING = 0.85
TARGET = 4
HOLD_S = 15


@pytest.fixture(scope="module")
def small_target(tmp_path_factory):
    """4 brokers (one controller); broker 4's data on a 64 MiB tmpfs."""
    from reassign_kit.sandbox.sandbox import Sandbox

    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (the CI machine runs as root)")
    root = tmp_path_factory.mktemp("disk")
    with Sandbox.start(brokers=4, dir=root / "sb") as sb:
        bdir = root / "sb" / f"broker-{TARGET}"
        sb.stop_broker(TARGET)
        keep = root / "broker-data"
        shutil.copytree(bdir, keep, symlinks=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES}", "tmpfs", str(bdir)], check=True
        )
        try:
            shutil.copytree(keep, bdir, symlinks=True, dirs_exist_ok=True)
            sb.start_broker(TARGET)
            yield sb, bdir
        finally:
            try:
                sb.stop_broker(TARGET)
            finally:
                subprocess.run(["umount", "-l", str(bdir)], check=True)


def used(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bavail) * st.f_frsize


@pytest.fixture
def work(request) -> Path:
    """The scenario's folder under tests/out/chaos, kept for a person to read."""
    d = OUT / request.node.name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def fill_from_outside(bdir: Path, seen: dict):
    def fault(ctx: Ctx) -> None:
        ctx.wait_event("submitted")
        junk = bdir / "another-writer.bin"
        try:
            with open(junk, "wb") as f:  # past the ceiling by 1 MiB, whatever the moves wrote
                f.write(b"\0" * max(0, int(CEILING * FS_BYTES) - used(bdir) + 1 * MIB))
            seen["filled_mib"] = round(used(bdir) / MIB, 1)
            ctx.wait_event("disk_over_ceiling", timeout=60)
            time.sleep(HOLD_S)
        finally:
            junk.unlink(missing_ok=True)
            seen["deleted"] = time.time()
        ctx.notes.append(f"filled to {seen['filled_mib']} MiB, deleted {HOLD_S} s later")

    return fault


def test_a_target_disk_filled_from_outside_pauses_submissions_until_space_returns(
    small_target, work
):
    sb, bdir = small_target
    seen: dict = {}
    row = run_scenario(
        sb,
        "target disk filled",
        work,
        fill_from_outside(bdir, seen),
        partitions=6,
        mb=2,
        throttle=1 * 1024 * 1024,
    )
    events = _events(work / "journal.jsonl")
    over = [e for e in events if e["event"] == "disk_over_ceiling"]
    below = [e for e in events if e["event"] == "disk_below_ceiling"]
    row.notes.append(f"over: {len(over)}, below: {len(below)}")
    check(row)
    assert over and below, [e["event"] for e in events]
    assert over[0]["broker"] == TARGET and over[0]["used_bytes"] > over[0]["limit_bytes"]
    i, j = events.index(over[0]), events.index(below[0])
    # nothing submitted while the filesystem was over the ceiling
    assert not [e for e in events[i:j] if e["event"] in ("submitted", "step_submitted")]
    assert below[0]["ts"] >= seen["deleted"] - 1
    # the run went on once the space returned: every move submitted and completed
    submitted = {(e["topic"], e["partition"]) for e in events if e["event"] == "submitted"}
    completed = {(e["topic"], e["partition"]) for e in events if e["event"] == "completed"}
    assert len(submitted) == 6 and completed == submitted
    assert [e for e in events[j:] if e["event"] == "submitted"], "nothing submitted after"
    print(f"{OUT}: over {over[0]}, below {below[0]}")
