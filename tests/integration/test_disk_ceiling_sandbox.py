"""The disk ceiling on real brokers: broker 3's log dirs on a 100 MiB tmpfs the test mounts,
56 MiB of partitions leaving it and 36 MiB arriving (the end state ~40%). Kafka keeps a moved
replica's files for file.delete.delay.ms (60 s) after the move, so sending the plan as its
file says — all at once, Kafka's own kafka-reassign-partitions — takes the filesystem past the
85% ceiling; reassign-kit's run (incremental, 2 in flight) completes with the measured peak
under it, a move held ("waiting for space") and released in the journal. A file another
writer puts into the tmpfs mid-run holds every move into it until the file is deleted. The
what-if, asked before the run, predicts the filesystem's peak within 10% of the measured one.

Long (about 4 minutes): ``make long``. Needs root (mount); the sandbox is the test's own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition, is_complete
from reassign_kit.moves.journal import read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.sandbox.kafka import run_kafka_class
from reassign_kit.sandbox.sandbox import Sandbox
from reassign_kit.whatif import what_if

pytestmark = [pytest.mark.integration, pytest.mark.long]
MIB = 1024 * 1024
FS_BYTES = 100 * MIB
CEILING = 0.85
SMALL = 3  # the broker on the small filesystem
OFFICIAL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


class Peak:
    """The filesystem's used bytes (statvfs: total less available), sampled every 0.1 s."""

    def __init__(self, path: Path) -> None:
        self.path, self.peak, self.samples = path, 0, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def used(self) -> int:
        st = os.statvfs(self.path)
        return (st.f_blocks - st.f_bavail) * st.f_frsize

    def _run(self) -> None:
        while not self.stop.is_set():
            self.peak = max(self.peak, self.used())
            self.samples += 1
            time.sleep(0.1)

    def __enter__(self) -> Peak:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(5)


@pytest.fixture
def small_disk_sandbox(tmp_path):
    """A 3-broker sandbox whose broker 3 keeps both log dirs on one 100 MiB tmpfs."""
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (the CI machine runs as root)")
    with Sandbox.start(brokers=3, dir=tmp_path / "sb") as sb:
        bdir = tmp_path / "sb" / f"broker-{SMALL}"
        sb.stop_broker(SMALL)
        keep = tmp_path / "broker-data"
        shutil.copytree(bdir, keep, symlinks=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES}", "tmpfs", str(bdir)], check=True
        )
        try:
            shutil.copytree(keep, bdir, symlinks=True, dirs_exist_ok=True)
            sb.start_broker(SMALL)
            yield sb, bdir
        finally:
            try:
                sb.stop_broker(SMALL)
            finally:
                subprocess.run(["umount", "-l", str(bdir)], check=True)


def setup_topics(sb, suffix: str = "") -> Plan:
    """``leave``: 4 partitions of 14 MiB on broker 3; ``arrive``: 4 of 9 MiB on 1 and 2.
    The plan swaps them: in topic order the arrivals come first."""
    leave, arrive = f"leave{suffix}", f"arrive{suffix}"
    sb.create_topic(leave, assignment=[[SMALL]] * 4)
    sb.create_topic(arrive, assignment=[[1], [2], [1], [2]])
    sb.load(leave, mb_per_partition=14)
    sb.load(arrive, mb_per_partition=9)
    return Plan.of(
        [Move(TopicPartition(arrive, p), (SMALL,)) for p in range(4)]
        + [Move(TopicPartition(leave, p), (1 + p % 2,)) for p in range(4)]
    )


def delete_topics(bootstrap: str, names: list[str]) -> None:
    """Kafka's own kafka-topics --delete (the files go file.delete.delay.ms later)."""
    for name in names:
        proc = run_kafka_class(
            "org.apache.kafka.tools.TopicCommand",
            ["--bootstrap-server", bootstrap, "--delete", "--topic", name],
            timeout=120,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr


def wait_done(gw: AdminGateway, plan: Plan, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while True:
        states = gw.describe_partitions([m.tp for m in plan])
        if all(is_complete(m.replicas, states.get(m.tp)) for m in plan):
            return
        assert time.monotonic() < deadline, f"not complete: {states}"
        time.sleep(0.5)


def wait_freed(peak: Peak, below: int, timeout: float = 150) -> None:
    """Until the moved-out replicas' files are deleted (file.delete.delay.ms after the move)."""
    deadline = time.monotonic() + timeout
    while peak.used() > below:
        assert time.monotonic() < deadline, f"{peak.used()} bytes still used"
        time.sleep(1)


def run_ours(bootstrap: str, plan_file: Path, journal: Path, tmp_path: Path):
    return subprocess.run(
        [
            *(sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", bootstrap),
            *("--execute", "--reassignment-json-file", str(plan_file), "--wait"),
            *("--reassignment-batch-size", "2", "--incremental"),
            *("--journal", str(journal), "--reassignment-poll-interval-ms", "300"),
            *("--rollback-file", str(tmp_path / "rollback.json")),
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )


def test_our_run_holds_the_ceiling_and_the_official_tool_crosses_it(small_disk_sandbox, tmp_path):
    sb, bdir = small_disk_sandbox
    bootstrap = sb.bootstrap_servers
    limit = CEILING * FS_BYTES
    gw = AdminGateway(bootstrap)
    try:
        # our run: incremental, 2 in flight
        plan = setup_topics(sb)
        plan_file, journal = tmp_path / "plan.json", tmp_path / "run.jsonl"
        plan.write(str(plan_file))
        # the what-if of the same options, before: nothing sent, each filesystem's peak
        opts = ExecuteOptions(batch_size=2, incremental=True, wait=True, poll_interval_ms=300)
        wi = what_if(gw, plan, opts, given_only=True)
        predicted = [p for p in wi.disk_peaks if p.broker == SMALL]
        print("\n".join(wi.lines()))
        with Peak(bdir) as ours:
            start = ours.used()
            proc = run_ours(bootstrap, plan_file, journal, tmp_path)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        wait_done(gw, plan, timeout=30)
        events = read_events(journal)
        holds = [e for e in events if e["event"] == "disk_hold"]
        released = [e for e in events if e["event"] == "disk_release"]
        print(f"ours: start {start / MIB:.1f} MiB, peak {ours.peak / MIB:.1f} MiB, holds {holds}")
        # the same plan, on topics of the same shape, through Kafka's own tool once the first
        # ones' files are gone: every move at once, as the file says
        delete_topics(bootstrap, sorted({m.tp.topic for m in plan}))
        wait_freed(ours, int(0.1 * FS_BYTES))
        plan2 = setup_topics(sb, "2")
        plan2_file = tmp_path / "plan2.json"
        plan2.write(str(plan2_file))
        with Peak(bdir) as official:
            start2 = official.used()
            proc = run_kafka_class(
                OFFICIAL,
                [
                    "--bootstrap-server",
                    bootstrap,
                    "--execute",
                    "--reassignment-json-file",
                    str(plan2_file),
                ],
                timeout=180,
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
            wait_done(gw, plan2)
            time.sleep(2)
        summary = {
            "filesystem_mib": FS_BYTES // MIB,
            "ceiling_mib": round(limit / MIB, 1),
            "ours_start_mib": round(start / MIB, 1),
            "ours_peak_mib": round(ours.peak / MIB, 1),
            "ours_samples": ours.samples,
            "predicted_peak_mib": [round(p.peak_bytes / MIB, 1) for p in predicted],
            "predicted_at_s": [p.at_s for p in predicted],
            "official_start_mib": round(start2 / MIB, 1),
            "official_peak_mib": round(official.peak / MIB, 1),
            "holds": [(e["topic"], e["partition"], e["reason"]) for e in holds],
            "released": [(e["topic"], e["partition"]) for e in released],
        }
        (tmp_path / "summary.json").write_text(json.dumps(summary, indent=1))
        print(json.dumps(summary, indent=1))
        assert ours.peak <= limit, summary
        # one filesystem holds both of broker 3's dirs: one peak, within 10% of the measured
        assert len(predicted) == 1, summary
        assert abs(predicted[0].peak_bytes - ours.peak) <= 0.1 * ours.peak, summary
        assert official.peak > limit, summary
        assert holds and released, summary
        assert holds[0]["broker"] == SMALL and holds[0]["reason"].startswith(
            f"waiting for space on broker {SMALL} "
        )
        assert {(e["topic"], e["partition"]) for e in holds} <= {
            (e["topic"], e["partition"]) for e in released
        }
    finally:
        gw.close()


def test_a_disk_filled_from_outside_pauses_submissions_until_the_file_goes(
    small_disk_sandbox, tmp_path
):
    """Fault: 30 MiB written into broker 3's filesystem by another writer once the run has
    submitted its first moves (56 -> 86 MiB, over the 85 MiB ceiling); deleted 20 s later."""
    sb, bdir = small_disk_sandbox
    bootstrap = sb.bootstrap_servers
    plan = setup_topics(sb)
    plan_file, journal = tmp_path / "plan.json", tmp_path / "run.jsonl"
    plan.write(str(plan_file))
    junk = bdir / "another-writer.bin"
    times: dict[str, float] = {}

    def writer() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if journal.exists() and '"submitted"' in journal.read_text():
                break
            time.sleep(0.1)
        with open(junk, "wb") as f:
            f.write(os.urandom(30 * MIB))
        times["written"] = time.time()
        time.sleep(20)
        times["deleting"] = time.time()
        junk.unlink()

    t = threading.Thread(target=writer, daemon=True)
    gw = AdminGateway(bootstrap)
    try:
        t.start()
        proc = run_ours(bootstrap, plan_file, journal, tmp_path)
        t.join(60)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        wait_done(gw, plan, timeout=30)
    finally:
        gw.close()
        junk.unlink(missing_ok=True)
    events = read_events(journal)
    over = [e for e in events if e["event"] == "disk_over_ceiling"]
    below = [e for e in events if e["event"] == "disk_below_ceiling"]
    assert over and below, [e["event"] for e in events]
    assert over[0]["broker"] == SMALL and over[0]["used_bytes"] > over[0]["limit_bytes"]
    # nothing submitted between the report and the return under the ceiling
    i, j = events.index(over[0]), events.index(below[0])
    assert not [e for e in events[i:j] if e["event"] == "submitted"]
    assert below[0]["ts"] >= times["deleting"] - 1
    submitted = {(e["topic"], e["partition"]) for e in events if e["event"] == "submitted"}
    assert submitted == {(m.tp.topic, m.tp.partition) for m in plan}  # nothing lost
