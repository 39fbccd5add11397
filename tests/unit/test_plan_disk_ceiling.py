"""`plan` refuses an end state above the disk ceiling, naming the log dir and the bytes,
with nothing written; the snapshot's recorded filesystems are what it weighs (a capacity file
replaces them), and a snapshot without them plans as before."""

from __future__ import annotations

import json

import pytest

from reassign_kit.cli import main
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.snapshot import Snapshot

MB = 1_000_000


def snapshot(tmp_path, small_total: int | None = 100 * MB, name: str = "s.json"):
    """Brokers 1 and 2 hold 12 partitions of 10 MB (60 MB each) on roomy disks; broker 3 is
    new and empty, its one dir on a ``small_total`` filesystem with 20 MB of other files."""
    roomy = (("/data", 10_000 * MB, 9_000 * MB),)
    brokers = [
        BrokerEntry(1, log_dirs=("/data",), log_dir_capacity=roomy),
        BrokerEntry(2, log_dirs=("/data",), log_dir_capacity=roomy),
        BrokerEntry(
            3,
            log_dirs=("/data-1",),
            log_dir_capacity=None
            if small_total is None
            else (("/data-1", small_total, small_total - 20 * MB),),
        ),
    ]
    parts = [PartitionEntry("t", p, (1 + p % 2,), 10 * MB) for p in range(12)]
    s = tmp_path / name
    Snapshot.of(brokers, [TopicEntry("t", 1)], parts).write(str(s))
    return s


def plan_argv(tmp_path, snap) -> list[str]:
    out = tmp_path / "plan.json"
    return ["plan", "--snapshot", str(snap), "--engine", "local", "--output", str(out)]


def test_an_end_state_above_the_ceiling_is_refused_naming_the_dir_and_the_bytes(tmp_path, capsys):
    # balancing replicas puts 4 partitions (40 MB) on broker 3: 60 MB of 100 MB fits 85%,
    # but not a 50% ceiling
    argv = plan_argv(tmp_path, snapshot(tmp_path))
    assert main([*argv, "--disk-ceiling", "50%"]) == 3
    err = capsys.readouterr().err
    assert "above the disk ceiling (50% of a log dir)" in err
    assert (
        "broker 3 /data-1: 60.0 MB after the plan, above its ceiling of 50.0 MB by 10.0 MB" in err
    )
    assert "Traceback" not in err
    assert not (tmp_path / "plan.json").exists()
    assert main(argv) == 0  # the default ceiling (85%) holds it


@pytest.mark.parametrize("bad", ["0", "1.5", "abc", "-5%"])
def test_a_bad_ceiling_is_refused_by_name(tmp_path, capsys, bad):
    assert main([*plan_argv(tmp_path, snapshot(tmp_path)), "--disk-ceiling", bad]) == 2
    assert "--disk-ceiling" in capsys.readouterr().err


def test_a_capacity_file_replaces_the_recorded_size(tmp_path, capsys):
    cap = tmp_path / "cap.json"
    cap.write_text(json.dumps({"version": 1, "default": {"disk_bytes": 45 * MB}}))
    argv = [*plan_argv(tmp_path, snapshot(tmp_path, 10_000 * MB)), "--capacity", str(cap)]
    # every broker ends with 40 MB: within 45 MB (the file's hard limit) but above 85% of it
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "broker 1 (disk_bytes of the capacity file): 40.0 MB after the plan" in err


def test_a_snapshot_without_sizes_plans_as_before(tmp_path):
    assert main(plan_argv(tmp_path, snapshot(tmp_path, None))) == 0
    assert (tmp_path / "plan.json").exists()
