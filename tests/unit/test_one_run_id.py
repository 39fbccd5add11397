"""One run id everywhere: a paced run's home in the state directory, its journal, its metrics,
its notifications and the lines it prints all name the same run (the home's id was another
than the journal's and the notifications')."""

from __future__ import annotations

import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan
from reassign_kit.moves.journal import read_events
from reassign_kit.operations import execute as ops


@pytest.fixture
def hook():
    """A webhook on 127.0.0.1 keeping each POST's JSON body."""
    posts: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            posts.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    srv.posts = posts
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/hook"
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def test_one_simulated_run_has_one_id_everywhere(monkeypatch, tmp_path, hook, capsys):
    monkeypatch.chdir(tmp_path)
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], 2 * MB)
    monkeypatch.setattr(ops, "connect", lambda *a, **k: sim)
    Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    ).write("plan.json")
    code = cli_main(
        ["--bootstrap-server", "sim:1", "--execute", "--reassignment-json-file", "plan.json"]
        + ["--reassignment-batch-size", "2", "--wait", "--state-dir", "state"]
        + ["--metrics-textfile", "run.prom", "--notify", hook.url]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    home = re.search(r"^Run state: (\S+)$", out, re.M).group(1)
    record = json.loads(open(os.path.join(home, "run.json")).read())
    ids = {
        "home dir": os.path.basename(home),
        "home record": record["run_id"],
        "printed end": re.search(r"^Run (\S+): done", out, re.M).group(1),
        "metrics": re.search(r'run_info\{[^}]*run_id="([^"]+)"', open("run.prom").read()).group(1),
    }
    journal_ids = {e["run_id"] for e in read_events(record["journal"])}
    notify_ids = {p["run_id"] for p in hook.posts}
    assert len(journal_ids) == 1 and len(notify_ids) == 1 and hook.posts, (journal_ids, hook.posts)
    ids["journal"], ids["notifications"] = journal_ids.pop(), notify_ids.pop()
    assert len(set(ids.values())) == 1, ids


def test_a_legacy_runs_notification_names_its_home(monkeypatch, tmp_path, hook, capsys):
    monkeypatch.chdir(tmp_path)
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], 2 * MB)
    monkeypatch.setattr(ops, "connect", lambda *a, **k: sim)
    Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    ).write("plan.json")
    code = cli_main(
        ["--bootstrap-server", "sim:1", "--execute", "--reassignment-json-file", "plan.json"]
        + ["--state-dir", "state", "--notify", hook.url]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    home = re.search(r"^Run state: (\S+) ", out, re.M).group(1)
    record = json.loads(open(os.path.join(home, "run.json")).read())
    assert [p["event"] for p in hook.posts] == ["finished"], hook.posts
    assert hook.posts[0]["run_id"] == record["run_id"] == os.path.basename(home)
    assert hook.posts[0]["text"].startswith(f"reassign-kit: run {record['run_id']}: ")
