"""The committed offsets of consumer groups read on a cluster whose offsets topic does not
exist yet: the first OffsetFetch requests meet NOT_COORDINATOR while the topic is created.
librdkafka's admin client crashes the whole process there (a segmentation fault), which is
what ``snapshot --sample-load`` hit on a fresh cluster; the gateway must answer every group
instead. The reads run in a child process, so a crash is an exit code, not a lost test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from reassign_kit.sandbox.sandbox import Sandbox

pytestmark = pytest.mark.integration

READS = textwrap.dedent(
    """
    import sys, uuid
    from reassign_kit.cluster.admin import AdminGateway
    with AdminGateway(sys.argv[1]) as gw:
        got = [gw.group_offsets("never-seen-" + uuid.uuid4().hex) for _ in range(30)]
    print("read", len(got), "groups,", sum(map(len, got)), "offsets")
    """
)


def test_group_offsets_on_a_cluster_without_an_offsets_topic(tmp_path):
    with Sandbox.start(brokers=2, dir=tmp_path / "fresh") as sb:
        run = subprocess.run(
            [sys.executable, "-c", READS, sb.bootstrap_servers],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert run.stdout.strip() == "read 30 groups, 0 offsets", run.stdout
