"""Nothing the operator types or a file holds is trusted to be well formed: a webhook URL, an
approval hash, a number, an output path or a plan that is malformed is refused by the option or
file it came from (its exit code, nothing sent to the cluster, no traceback), and never by
echoing a secret. The simulator stands in for the cluster (the drop-in's ops.connect returns
it), so ``sim.calls`` says whether anything was asked of it."""

from __future__ import annotations

import json
import os
import threading
import urllib.request
from http.client import InvalidURL
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from reassign_kit import api
from reassign_kit.cli import reassign
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import InvalidPlanError, UsageError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.operations import execute as ops
from reassign_kit.outputs.notify import Notifier
from reassign_kit.planner.record import PlanRecord
from reassign_kit.run.options import ExecuteOptions

TP = TopicPartition
SECRET = "T000-SECRET-TOKEN"


@pytest.fixture
def sim(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    s = SimCluster(4, bandwidth=50 * MB)
    s.add_topic("a", [[0, 1], [1, 2], [2, 3], [3, 0]], 1 * MB)
    monkeypatch.setattr(ops, "connect", lambda *a, **k: s)
    monkeypatch.setattr(s, "close", lambda: None)
    return s


@pytest.fixture
def plan(tmp_path) -> str:
    path = tmp_path / "plan.json"
    Plan.of([Move(TP("a", 0), (2, 3))]).write(str(path))
    return str(path)


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = reassign.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def execute(plan: str, *extra: str) -> list[str]:
    return ["--bootstrap-server", "sim:x", "--execute", "--reassignment-json-file", plan, *extra]


def assert_nothing_sent(sim: SimCluster) -> None:
    assert not [c for c in sim.calls if c.startswith("alter")], sim.calls
    assert not sim.list_reassignments() and sim.partitions[TP("a", 0)].replicas == [0, 1]


# ----------------------------------------------------------------------------- --notify


@pytest.mark.parametrize(
    "url",
    [
        f"http://127.0.0.1:9/hooks {SECRET}",
        f"http://127.0.0.1:9/hooks\t{SECRET}",
        f"http://127.0.0.1:9/hooks/\x7f{SECRET}",
        f"http://127.0.0.1:9/hooks/\n{SECRET}",
        f"http://127.0.0.1:abc/hooks/{SECRET}",
        f"http://127.0.0.1:0/hooks/{SECRET}",
        f"http://127.0.0.1:70000/hooks/{SECRET}",
        f"http://[::1/hooks/{SECRET}",
        f"ftp://127.0.0.1/hooks/{SECRET}",
        f"http:///hooks/{SECRET}",
        "",
    ],
)
def test_a_malformed_notify_url_is_refused_by_name_never_echoed(sim, plan, url, capsys):
    """Before: a space, tab, DEL or a non-numeric port passed; the notifier's thread died with
    a traceback quoting the URL's path (the webhook's token), exit 0, nothing said."""
    code, out, err = run(execute(plan, "--notify", url), capsys)
    assert code == UsageError.exit_code, err
    assert "--notify" in err and "Traceback" not in err
    assert SECRET not in out + err
    assert_nothing_sent(sim)


def test_an_error_in_the_notifier_thread_is_one_redacted_line(monkeypatch, capsys):
    """Whatever a post raises (here http.client's InvalidURL, whose message quotes the path)
    is caught on the thread, said once, naming the scheme and host only."""

    def fail(self, req, *a, **k):
        raise InvalidURL(f"URL can't contain control characters. '/hooks/{SECRET}'")

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", fail)
    n = Notifier(f"http://127.0.0.1:9/hooks/{SECRET}")
    n.post("started", "one")
    n.post("finished", "two")
    n.close()
    err = capsys.readouterr().err
    assert n.failed == 2 and not n.sent
    assert err.count("\n") == 1 and "Traceback" not in err and SECRET not in err
    assert "--notify to http://127.0.0.1 failed (InvalidURL)" in err


def test_a_background_thread_error_reaches_the_terminal_as_one_line(capsys, monkeypatch):
    from reassign_kit.cli import thread_errors_as_a_line

    monkeypatch.delenv("RK_DEBUG", raising=False)

    def boom():
        raise RuntimeError(f"/hooks/{SECRET}")

    with thread_errors_as_a_line():
        t = threading.Thread(target=boom, name="rk-test")
        t.start()
        t.join()
    err = capsys.readouterr().err
    assert "background thread rk-test failed: RuntimeError" in err
    assert "Traceback" not in err and SECRET not in err


@pytest.fixture
def redirecting():
    """A webhook on 127.0.0.1 that answers every POST with a redirect (303 to a GET here,
    302 to ftp://), and counts the requests that follow one; stopped at the test's end."""
    followed: list[str] = []
    answers = iter([("303", "/elsewhere"), ("302", "ftp://127.0.0.1/x")] * 10)

    class Handler(BaseHTTPRequestHandler):
        timeout = 5

        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            code, where = next(answers)
            if where.startswith("/"):
                where = f"http://127.0.0.1:{self.server.server_address[1]}{where}"
            self.send_response(int(code))
            self.send_header("Location", where)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):  # noqa: N802 - only a followed redirect arrives here
            followed.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    srv.followed = followed
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}/hooks/{SECRET}"
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        t.join(5)


def test_a_redirect_is_a_failed_delivery_said_once(redirecting, capsys):
    """Before: the 303 became a body-less GET counted as delivered, the 302 to ftp:// was
    followed."""
    n = Notifier(redirecting.url, timeout_s=5)
    n.post("started", "one")
    n.post("finished", "two")
    n.close()
    err = capsys.readouterr().err
    assert not n.sent and n.failed == 2
    assert not redirecting.followed
    assert err.count("--notify to http://127.0.0.1 failed (HTTP 303") == 1
    assert err.count("\n") == 1 and SECRET not in err


def test_the_cli_run_goes_on_when_the_webhook_redirects(sim, plan, redirecting, capsys):
    code, out, err = run(execute(plan, "--notify", redirecting.url), capsys)
    assert code == 0, err
    assert "redirects are not followed" in err and "Traceback" not in err
    assert SECRET not in out + err and not redirecting.followed


# ----------------------------------------------------------------------------- approval


@pytest.mark.parametrize(
    "value", ["", " ", "sha256:", "abc", "0" * 63, "0" * 65, "g" * 64, "sha256 " + "0" * 64]
)
def test_an_empty_or_malformed_expected_hash_is_a_usage_error(sim, plan, value, capsys):
    """Before: --expect-plan-hash "" ran any plan (exit 0, the moves submitted)."""
    code, _, err = run(execute(plan, "--expect-plan-hash", value), capsys)
    assert code == UsageError.exit_code, err
    assert "--expect-plan-hash" in err and "Traceback" not in err
    assert_nothing_sent(sim)


def test_a_well_formed_expected_hash_still_runs_its_plan(sim, plan, capsys):
    digest = Plan.read(plan).digest()
    code, _, err = run(execute(plan, "--expect-plan-hash", f"  SHA256:{digest.upper()} "), capsys)
    assert code == 0, err
    assert sim.calls["alter_reassignments"] == 1


def test_an_empty_plan_record_is_a_usage_error(sim, plan, capsys):
    """An empty --plan-record would skip the drift check instead of naming a record."""
    code, _, err = run(execute(plan, "--plan-record", ""), capsys)
    assert code == UsageError.exit_code and "--plan-record" in err
    assert_nothing_sent(sim)


@pytest.mark.parametrize("value", ["", "abc"])
def test_the_api_refuses_an_empty_or_malformed_expected_hash(sim, plan, value):
    with pytest.raises(UsageError, match="--expect-plan-hash"):
        api.execute(plan=plan, gateway=sim, expect_plan_hash=value)
    assert_nothing_sent(sim)


def test_a_record_with_a_hash_that_is_not_hex_is_refused(tmp_path):
    path = tmp_path / "p.record.json"
    doc = {"version": 1, "kind": "reassign-kit plan record", "plan_sha256": "z" * 64}
    path.write_text(json.dumps({**doc, "brokers": [], "topics": [], "partitions": []}))
    with pytest.raises(InvalidPlanError, match="plan_sha256"):
        PlanRecord.read(str(path))


# ----------------------------------------------------------------------------- bounds


@pytest.mark.parametrize(
    "flags",
    [
        ["--throttle", str(2**63)],
        ["--replica-alter-log-dirs-throttle", str(2**63)],
        ["--timeout", str(2**63)],
        ["--reassignment-batch-size", str(2**31)],
        ["--max-moves-per-broker", str(2**31), "--reassignment-batch-size", "1"],
        ["--metrics-port", "65536", "--reassignment-batch-size", "1"],
        ["--run-deadline", "inf", "--reassignment-batch-size", "1"],
        ["--rollback-timeout", "1e400", "--reassignment-batch-size", "1"],
    ],
)
def test_numbers_beyond_their_kafka_type_are_refused_by_name(sim, plan, flags, capsys):
    """Before: --throttle 9223372036854775808 (past Kafka's LONG) was accepted and sent."""
    code, _, err = run(execute(plan, *flags), capsys)
    assert code == UsageError.exit_code, err
    assert flags[0] in err and "Traceback" not in err
    assert_nothing_sent(sim)


def test_the_api_refuses_a_throttle_beyond_a_long():
    with pytest.raises(UsageError, match="--throttle"):
        ExecuteOptions(throttle=2**63).validate()
    assert ExecuteOptions(throttle=2**63 - 1).validate().throttle == 2**63 - 1


@pytest.mark.skipif(not os.path.isfile("/proc/version"), reason="needs Linux's /proc")
@pytest.mark.parametrize("kind", ["proc", "fifo"])
def test_a_metrics_textfile_that_cannot_be_replaced_is_a_usage_error(
    sim, plan, tmp_path, kind, capsys
):
    """Before: /proc/version passed the check and failed at the first write (exit 1,
    FileNotFoundError); a device or FIFO was renamed over (never test that with /dev/null:
    code without the check replaces it)."""
    path = "/proc/version"
    if kind == "fifo":
        path = str(tmp_path / "metrics.fifo")
        os.mkfifo(path)
    code, _, err = run(
        execute(plan, "--reassignment-batch-size", "1", "--metrics-textfile", path), capsys
    )
    assert code == UsageError.exit_code, err
    assert "--metrics-textfile" in err and "Traceback" not in err
    assert_nothing_sent(sim)


def test_a_rollback_file_that_is_a_directory_is_refused(sim, plan, tmp_path, capsys):
    """Before: --rollback-file DIR wrote DIR-2 beside it (``/tmp`` -> ``/tmp-2``)."""
    d = tmp_path / "out"
    d.mkdir()
    for flags in ([], ["--reassignment-batch-size", "1"]):
        code, _, err = run(execute(plan, "--rollback-file", str(d), *flags), capsys)
        assert code == UsageError.exit_code, err
        assert "--rollback-file" in err and "is a directory" in err
    assert not (tmp_path / "out-2").exists() and not list(d.iterdir())
    assert_nothing_sent(sim)


def test_the_api_refuses_a_rollback_path_that_is_a_directory(sim, plan, tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    with pytest.raises(UsageError, match="--rollback-file"):
        api.execute(plan=plan, gateway=sim, rollback_path=str(d), state_dir=str(tmp_path / "s"))
    assert not (tmp_path / "out-2").exists()
    assert_nothing_sent(sim)


def test_a_plan_nested_too_deeply_is_an_invalid_plan(sim, tmp_path, capsys):
    """Before: 100,000 nested '[' raised RecursionError (exit 1)."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000)
    code, _, err = run(execute(str(path)), capsys)
    assert code == InvalidPlanError.exit_code, err
    assert str(path) in err and "nested too deeply" in err and "Traceback" not in err
    assert_nothing_sent(sim)


def test_a_record_nested_too_deeply_is_named(tmp_path):
    path = tmp_path / "p.record.json"
    path.write_text('{"a":' * 100_000)
    with pytest.raises(InvalidPlanError, match="nested too deeply"):
        PlanRecord.read(str(path))


def test_a_plan_of_many_bad_entries_prints_a_bounded_list(sim, tmp_path, capsys):
    """Before: every problem was printed (10^6 bad partitions: 1,000,019 lines)."""
    path = tmp_path / "many.json"
    entries = [{"topic": "a", "partition": -1 - i, "replicas": [1]} for i in range(5000)]
    path.write_text(json.dumps({"version": 1, "partitions": entries}))
    code, out, err = run(execute(str(path)), capsys)
    assert code == InvalidPlanError.exit_code
    assert len((out + err).splitlines()) < 120
    assert "… and 4900 more" in err and str(path) in err
    assert_nothing_sent(sim)
