"""Each log dir's size read from real brokers (DescribeLogDirs v4+, Kafka 3.3+): the snapshot
records every dir's total and usable bytes, and they agree with the filesystem under it."""

from __future__ import annotations

import os

import pytest

from reassign_kit.snapshot.snapshot import take_snapshot

pytestmark = pytest.mark.integration


def test_the_snapshot_records_each_log_dirs_filesystem(gw):
    snap = take_snapshot(gw, topics=[])
    assert snap.unreported_capacity() == []
    seen = 0
    for b in snap.brokers:
        assert b.log_dir_capacity, f"broker {b.id} recorded no log dir"
        assert {c[0] for c in b.log_dir_capacity} == set(b.log_dirs or ())
        for d, total, usable in b.log_dir_capacity:
            st = os.statvfs(d)
            assert total == st.f_blocks * st.f_frsize
            # the brokers and this test share the filesystem: usable moves a little between
            assert abs(usable - st.f_bavail * st.f_frsize) < 0.01 * total
            seen += 1
    assert seen >= 2 * len(snap.brokers)  # the sandbox gives each broker two dirs
