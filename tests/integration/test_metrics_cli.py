"""``--metrics-port`` / ``--metrics-textfile`` through the CLI on the sandbox: the
textfile holds the run's end as its report says it; a port already taken is refused by name,
exit 2, with nothing sent (the partition where it was, no throttle set). Cleans up its topic."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.throttles import configs as thr

pytestmark = pytest.mark.integration


def cli(bootstrap: str, *argv: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", bootstrap, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "REASSIGN_KIT_STATE_DIR": str(cwd / "state")},
    )


def test_textfile_matches_the_report_and_a_busy_port_sends_nothing(
    sandbox, gw, bootstrap, topic_name, tmp_path
):
    b = sorted(sandbox.nodes)
    t = topic_name("mcli")
    sandbox.create_topic(t, assignment=[[b[0]], [b[1]]])
    sandbox.load(t, 0.2)
    tps = [TopicPartition(t, 0), TopicPartition(t, 1)]
    plan = Plan.of(Move(tp, (b[-1],)) for tp in tps)
    path = tmp_path / "plan.json"
    plan.write(str(path))
    base = ("--execute", "--reassignment-json-file", str(path), "--additional", "--wait")
    try:
        busy = socket.socket()
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        try:
            port = busy.getsockname()[1]
            r = cli(
                bootstrap, *base, "--throttle", "300000", "--metrics-port", str(port), cwd=tmp_path
            )
        finally:
            busy.close()
        assert r.returncode == 2, r.stdout + r.stderr
        assert f"--metrics-port {port}: cannot listen" in r.stderr
        assert "Traceback" not in r.stderr
        st = gw.describe_partitions(tps)
        assert [st[tp].replicas for tp in tps] == [(b[0],), (b[1],)]  # nothing moved
        assert not thr.summary(thr.current_throttles(gw, [t], b))["broker_rates"]

        prom = tmp_path / "reassign.prom"
        r = cli(
            bootstrap, *base, "--throttle", "300000", "--metrics-textfile", str(prom), cwd=tmp_path
        )
        assert r.returncode == 0, r.stdout + r.stderr
        assert "complete 2" in r.stdout
        got = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(prom.read_text())
            for s in fam.samples
        }
        assert got[("reassign_kit_run_finished", (("state", "done"),))] == 1
        assert got[("reassign_kit_moves", (("state", "done"),))] == 2
        assert got[("reassign_kit_moves_completed_total", ())] == 2
        assert got[("reassign_kit_moved_bytes_total", ())] > 0
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("reassign")) == [
            "reassign.prom"
        ]  # no temp file left beside it
    finally:
        sandbox.admin().delete_topics([t])
