"""`--notify URL`: a real HTTP server on 127.0.0.1 receives the run's notifications
(Slack-compatible JSON with `text`): started and finished for a paced run, stuck and cancelled
for a stalled one rolled back, failed for a refused plan, one for the legacy request and for
--cancel; a dead webhook never fails the run; the URL never reaches the journal or output.
The simulator stands in for the cluster (the drop-in CLI's ops.connect returns it)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.operations import execute as ops
from reassign_kit.outputs.notify import Notifier, check_url

TP = TopicPartition


@pytest.fixture
def hook():
    """A webhook on 127.0.0.1: every POST body, parsed, in ``server.posts``."""
    posts: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            n = int(self.headers.get("Content-Length", 0))
            posts.append(
                {
                    "path": self.path,
                    "type": self.headers.get("Content-Type"),
                    **json.loads(self.rfile.read(n)),
                }
            )
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *a):  # quiet
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    srv.posts = posts
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/hooks/T000/SECRET-TOKEN"
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def sim(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    s = SimCluster(4, bandwidth=50 * MB)
    s.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], 2 * MB)
    monkeypatch.setattr(ops, "connect", lambda *a, **k: s)
    monkeypatch.setattr(s, "close", lambda: None)
    return s


def plan_file(sim, tmp_path, name="plan.json") -> str:
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    path = tmp_path / name
    plan.write(str(path))
    return str(path)


def base(path, tmp_path):
    return ["--bootstrap-server", "sim:1", "--reassignment-json-file", path] + [
        "--rollback-file",
        str(tmp_path / "rb.json"),
    ]


def test_paced_run_posts_started_and_finished(sim, hook, tmp_path, capsys):
    path = plan_file(sim, tmp_path)
    journal = tmp_path / "j.jsonl"
    code = cli_main(
        ["--execute", *base(path, tmp_path), "--reassignment-batch-size", "2", "--wait"]
        + ["--journal", str(journal), "--notify", hook.url]
    )
    out = capsys.readouterr()
    assert code == 0, out
    events = [p["event"] for p in hook.posts]
    assert events == ["started", "finished"], hook.posts
    assert all(p["text"].startswith("reassign-kit: run ") for p in hook.posts)
    assert hook.posts[0]["type"] == "application/json"
    assert hook.posts[1]["completed"] == 4 and hook.posts[0]["run_id"] == hook.posts[1]["run_id"]
    assert "SECRET-TOKEN" not in journal.read_text() + out.out + out.err


def test_stuck_then_failed(sim, hook, tmp_path, capsys):
    """--on-deadline cancel: the stuck move is reported, the run fails (a deadline) and rolls
    back; the failed post says how many moves were cancelled."""
    path = plan_file(sim, tmp_path)
    sim.stall(TP("a", 1))
    code = cli_main(
        ["--execute", *base(path, tmp_path), "--reassignment-batch-size", "4", "--wait"]
        + ["--journal", str(tmp_path / "j.jsonl"), "--stuck-after", "5s"]
        + ["--on-deadline", "cancel", "--notify", hook.url]
    )
    capsys.readouterr()
    assert code != 0
    events = [p["event"] for p in hook.posts]
    assert events == ["started", "stuck", "failed"], events
    stuck = next(p for p in hook.posts if p["event"] == "stuck")
    assert stuck["partition"] == "a-1" and "a-1 is stuck" in stuck["text"]
    assert hook.posts[-1]["cancelled"] >= 1 and "cancelled" in hook.posts[-1]["text"]


def test_a_cancelled_run_posts_cancelled(sim, hook, tmp_path):
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.preflight import preflight

    for tp in sim.partitions:
        sim.stall(tp)
    plan = Plan.read(plan_file(sim, tmp_path))
    p = preflight(
        sim,
        plan,
        ExecuteOptions(batch_size=4, wait=True),
        str(tmp_path / "j.jsonl"),
        rollback_path=None,
    )
    n = Notifier(hook.url)
    submitted = threading.Event()
    p.run.subscribe(n.on_event)
    p.run.subscribe(lambda e: submitted.set() if e["event"] == "submitted" else None)

    def unstall(e):  # the way back copies nothing, but let it finish — once the cancel is
        # under way (unstalled before, the moves could complete first: a race with the loop)
        if e["event"] == "cancel_started":
            for tp in sim.partitions:
                sim.stall(tp, False)

    p.run.subscribe(unstall)
    p.run.start()
    assert submitted.wait(60)
    assert p.run.cancel()
    p.run.wait(120)
    n.close()
    assert [x["event"] for x in hook.posts] == ["started", "cancelled"], hook.posts
    assert hook.posts[-1]["cancelled"] == 4


def test_legacy_request_refused_plan_and_cancel(sim, hook, tmp_path, capsys):
    path = plan_file(sim, tmp_path)
    assert cli_main(["--execute", *base(path, tmp_path), "--notify", hook.url]) == 0
    assert [p["event"] for p in hook.posts] == ["finished"]
    assert "4 move(s) submitted" in hook.posts[0]["text"]
    bad = tmp_path / "bad.json"
    Plan.of([Move(TP("a", 0), (9, 1))]).write(str(bad))
    code = cli_main(
        ["--execute", "--bootstrap-server", "sim:1", "--reassignment-json-file", str(bad)]
        + ["--rollback-file", str(tmp_path / "rb2.json"), "--notify", hook.url, "--additional"]
    )
    assert code == 3
    assert hook.posts[-1]["event"] == "failed" and "bad.json" in hook.posts[-1]["text"]
    code = cli_main(
        ["--cancel", "--bootstrap-server", "sim:1", "--all", "--notify", hook.url]
        + ["--rollback-timeout", "30s"]
    )
    capsys.readouterr()
    assert hook.posts[-1]["event"] in ("cancelled", "failed") and len(hook.posts) == 3


def test_a_dead_webhook_never_fails_the_run(sim, tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = plan_file(sim, tmp_path)
    code = cli_main(
        ["--execute", *base(path, tmp_path), "--notify", f"http://127.0.0.1:{port}/x/SECRET"]
    )
    err = capsys.readouterr().err
    assert code == 0
    assert "--notify to http://127.0.0.1 failed" in err and "SECRET" not in err


def test_bad_url_is_a_usage_error(sim, tmp_path, capsys):
    path = plan_file(sim, tmp_path)
    assert cli_main(["--execute", *base(path, tmp_path), "--notify", "ftp://x/y"]) == 2
    assert "--notify takes an http" in capsys.readouterr().err
    with pytest.raises(ValueError):
        check_url("not a url")


def test_stuck_posts_are_bounded(hook):
    n = Notifier(hook.url)
    for i in range(50):
        n.post("stuck", f"p{i}")
    n.close()
    assert len(hook.posts) == 20
