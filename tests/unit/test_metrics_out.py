"""The run's own metrics out: RunMetrics from a run's events, served over HTTP and
written as a node-exporter textfile (atomically), the options refused by name, and the
Grafana dashboard in contrib/ naming only metrics the exporter serves."""

from __future__ import annotations

import json
import re
import socket
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.outputs.metrics import METRICS, RunMetrics, open_metrics

REPO = Path(__file__).resolve().parents[2]
DASHBOARD = REPO / "contrib" / "grafana" / "reassign-kit.json"
BS = ["--bootstrap-server", "127.0.0.1:1"]


def events() -> list[dict]:
    """A small run's events as the engine emits them (moves/table.py, track.py, retry.py,
    finish.py; pace_decision as the adaptive pace journals it)."""
    t = 1000.0
    return [
        {"ts": t, "event": "run_started", "run_id": "r1", "mode": "incremental", "moves": 3,
         "options": {"throttle": 500000}},
        {"ts": t + 1, "event": "submitted", "topic": "a", "partition": 0, "target": [2, 3],
         "current": [1, 2], "size_bytes": 1000},
        {"ts": t + 1, "event": "submitted", "topic": "a", "partition": 1, "target": [3, 4],
         "current": [1, 2], "size_bytes": 500},
        {"ts": t + 2, "event": "retry", "call": "list_reassignments", "attempt": 1},
        {"ts": t + 5, "event": "sample", "done": 0, "moving": 2, "pending": 1,
         "received": {"3": 400, "4": 100}, "left": {"3": 1100, "4": 400}, "bytes_left": 1500,
         "bytes_total": 2000, "rate_bps": 100, "eta_s": 15.0, "throttle": 500000,
         "inflight": {"3": 2, "4": 1}},
        {"ts": t + 10, "event": "sample", "done": 0, "moving": 2, "pending": 1,
         "received": {"3": 900, "4": 300}, "left": {"3": 600, "4": 200}, "bytes_left": 800,
         "bytes_total": 2000, "rate_bps": 140, "eta_s": None, "throttle": 500000,
         "inflight": {"3": 2, "4": 1}},
        {"ts": t + 11, "event": "pace_decision", "action": "decrease", "reason": "p99 over",
         "broker": 3, "old_rate": 500000, "new_rate": 250000},
        {"ts": t + 12, "event": "completed", "topic": "a", "partition": 0, "replicas": [2, 3]},
        {"ts": t + 13, "event": "warning", "message": "x"},
        {"ts": t + 14, "event": "failed", "topic": "a", "partition": 1, "reason": "gone"},
        {"ts": t + 15, "event": "run_finished", "state": "failed"},
    ]  # fmt: skip


def scrape_text(m: RunMetrics) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{m.port}/metrics", timeout=10) as r:
        return r.read().decode()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_from_events_served_over_http(tmp_path):
    m = open_metrics(0, None)
    assert m is not None and m.port
    try:
        for e in events():
            m.on_event(e)
        got = samples(scrape_text(m))
    finally:
        m.close()
    assert got[("reassign_kit_run_info", (("mode", "incremental"), ("run_id", "r1")))] == 1
    assert got[("reassign_kit_run_finished", (("state", "failed"),))] == 1
    assert got[("reassign_kit_moves", (("state", "done"),))] == 1
    assert got[("reassign_kit_moves", (("state", "failed"),))] == 1
    assert got[("reassign_kit_moves", (("state", "pending"),))] == 1
    assert got[("reassign_kit_moves_completed_total", ())] == 1
    assert got[("reassign_kit_moved_bytes_total", ())] == 1000  # one new replica of 1000 B
    assert got[("reassign_kit_bytes_left", ())] == 800
    assert ("reassign_kit_eta_seconds", ()) not in got  # unknown is absent, never 0
    assert got[("reassign_kit_broker_rate_bytes_per_second", (("broker", "3"),))] == 100
    assert got[("reassign_kit_broker_throttle_bytes_per_second", (("broker", "3"),))] == 250000
    assert got[("reassign_kit_retries_total", (("call", "list_reassignments"),))] == 1
    key = ("reassign_kit_pace_decisions_total", (("action", "decrease"), ("reason", "p99 over")))
    assert got[key] == 1
    assert got[("reassign_kit_warnings_total", ())] == 1


def test_moves_by_state_from_the_runs_status_when_given():
    class St:
        pending, moving, done, failed, cancelled, rolling_back = 4, 2, 7, 0, 1, 1

    m = RunMetrics(status=lambda: St)
    got = samples(_text(m))
    assert got[("reassign_kit_moves", (("state", "done"),))] == 7
    assert got[("reassign_kit_moves", (("state", "moving"),))] == 1  # rolling back apart
    assert got[("reassign_kit_moves", (("state", "rolling_back"),))] == 1


def _text(m: RunMetrics) -> str:
    from prometheus_client import generate_latest

    return generate_latest(m.registry).decode()


def test_textfile_is_replaced_whole_at_each_sample_and_at_the_end(tmp_path):
    path = tmp_path / "reassign.prom"
    m = open_metrics(None, str(path))
    assert m is not None and path.exists()  # written once before anything is sent
    for e in events()[:5]:
        m.on_event(e)
    assert "reassign_kit_bytes_left 1500.0" in path.read_text()
    for e in events()[5:]:
        m.on_event(e)
    m.close()
    text = path.read_text()
    assert 'reassign_kit_run_finished{state="failed"} 1.0' in text
    assert samples(text)  # node-exporter can parse it
    assert [p.name for p in tmp_path.iterdir()] == ["reassign.prom"]  # no temp file left


@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "event": st.sampled_from(
                    [
                        "sample",
                        "submitted",
                        "completed",
                        "retry",
                        "pace_decision",
                        "pace_sample",
                        "run_finished",
                        "x",
                    ]
                )
            },
            optional={
                "ts": st.one_of(st.none(), st.floats(allow_nan=True), st.integers()),
                "topic": st.text(max_size=3),
                "partition": st.integers(-2, 3),
                "received": st.dictionaries(st.text(max_size=2), st.floats()),
                "left": st.one_of(st.none(), st.dictionaries(st.text(max_size=2), st.integers())),
                "throttle": st.one_of(st.none(), st.integers(), st.text(max_size=2)),
                "inflight": st.dictionaries(st.text(max_size=2), st.integers()),
                "brokers": st.dictionaries(
                    st.text(max_size=2),
                    st.dictionaries(st.just("rate"), st.one_of(st.none(), st.integers())),
                ),
                "size_bytes": st.one_of(st.none(), st.integers(0, 10**9)),
                "target": st.lists(st.integers(0, 5)),
                "current": st.lists(st.integers(0, 5)),
            },
        ),
        max_size=20,
    )
)
@settings(max_examples=150, deadline=None)
def test_odd_events_never_break_a_scrape(evs):
    m = RunMetrics()
    for e in evs:
        m.on_event(e)  # never raises: an odd event is skipped, not a broken subscriber
    assert samples(_text(m))  # the exporter still serves what it has


# ---------------------------------------------------------------------------- options


def _free_port_in_use():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    return s


@pytest.mark.parametrize(
    "extra, says",
    [
        (["--health-source", "graphite:http://x"], "--health-source"),
        (["--health-source", "prometheus:http://u:pw@x:9090"], "credentials in the URL"),
        (["--metrics-port", "0"], "--metrics-port must be > 0"),
        (["--metrics-port", "http"], "--metrics-port must be an integer"),
        (["--metrics-textfile", "/no/such/dir/x.prom"], "--metrics-textfile"),
    ],
)
def test_bad_options_refused_by_name(extra, says, tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "a", "partition": 0, "replicas": [1]}]}))  # fmt: skip
    code = reassign_cli.main([*BS, "--execute", "--reassignment-json-file", str(plan), *extra])
    err = capsys.readouterr().err
    assert code != 0 and says in err and "Traceback" not in err, err
    assert "pw@" not in err


def test_a_metrics_port_in_use_is_refused_before_anything(tmp_path):
    s = _free_port_in_use()
    try:
        from reassign_kit.errors import UsageError

        with pytest.raises(UsageError, match=r"--metrics-port \d+: cannot listen"):
            open_metrics(s.getsockname()[1], None)
    finally:
        s.close()


# ---------------------------------------------------------------------------- Grafana

PROMQL_WORDS = {
    "sum", "by", "increase", "rate", "time", "avg", "max", "min", "without", "on",
    "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
}  # fmt: skip


def dashboard_metric_names() -> set[str]:
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    assert exprs, "the dashboard has no query"
    names = set()
    for e in exprs:
        e = re.sub(r"\{[^}]*\}", "", e)  # label matchers
        e = re.sub(r"\[[^\]]*\]", "", e)  # range selectors
        e = re.sub(r"\([^()]*\)\s*(?=\()", "", e)  # by (...) clauses before a call
        e = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", e)
        for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
            if w not in PROMQL_WORDS:
                names.add(w)
    return names


PAUSE = {"ts": 1021.0, "event": "pace_decision", "action": "pause", "cause": "x", "reason": "x",
         "signals": {"count": 3, "with_elr": 2}}  # fmt: skip


def test_under_min_isr_outside_the_plan_and_those_with_elr_are_served():
    """The pace's ISR view (KIP-966's ELR counted where the brokers report it):
    from the pause decision, then each pace_sample; ELR not reported: that series absent."""
    m = RunMetrics()
    got = lambda: {  # noqa: E731
        s.name: s.value
        for fam in m.collect()
        for s in fam.samples
        if s.name.startswith("reassign_kit_under_min_isr")
    }
    assert got() == {}  # no ISR view yet: no series (never a 0 that reads as healthy)
    m.on_event(PAUSE)
    assert got() == {
        "reassign_kit_under_min_isr_outside_plan": 3.0,
        "reassign_kit_under_min_isr_outside_plan_with_elr": 2.0,
    }
    m.on_event({"ts": 1030.0, "event": "pace_sample", "brokers": {}, "under_min_isr": 1,
                "under_min_isr_with_elr": None})  # fmt: skip
    assert got() == {"reassign_kit_under_min_isr_outside_plan": 1.0}
    m.on_event({"ts": 1031.0, "event": "pace_sample", "brokers": {}})  # no ISR view: kept
    assert got() == {"reassign_kit_under_min_isr_outside_plan": 1.0}


def test_grafana_dashboard_parses_and_names_only_served_metrics():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["title"] and dash["panels"]
    m = open_metrics(0, None)
    assert m is not None
    try:
        later = dict(events()[4], ts=1020.0, received={"3": 1500, "4": 500})  # ETA known
        for e in [*events()[:7], later, PAUSE]:  # mid-run: two samples, pace decisions
            m.on_event(e)
        served = {s.name for fam in text_string_to_metric_families(scrape_text(m))
                  for s in fam.samples}  # fmt: skip
    finally:
        m.close()
    used = dashboard_metric_names()
    assert used and used <= served, sorted(used - served)
    # every declared metric is served (and so can be charted)
    assert set(METRICS) <= served, sorted(set(METRICS) - served)


# ---------------------------------------------------------------------------- the API


def test_the_api_serves_and_writes_the_runs_metrics_and_closes_them(tmp_path, monkeypatch):
    """``reassign_kit.execute(..., metrics_port=, metrics_textfile=)`` on the simulator: the
    textfile holds the run's end; the port is free again after the run (closed on return)."""
    import reassign_kit
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.model import Move, Plan

    monkeypatch.chdir(tmp_path)
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], 2 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    prom = tmp_path / "run.prom"
    res = reassign_kit.execute(
        sim, plan,  throttle=MB, wait=True, metrics_port=port,
        metrics_textfile=str(prom), state_dir=str(tmp_path / "state"),
    )  # fmt: skip
    assert res.state == "done"
    got = samples(prom.read_text())
    assert got[("reassign_kit_moves", (("state", "done"),))] == len(plan) == len(res.completed)
    assert got[("reassign_kit_run_finished", (("state", "done"),))] == 1
    assert got[("reassign_kit_moved_bytes_total", ())] == 4 * 2 * 2 * MB  # 2 new replicas each
    with socket.socket() as again:  # the server was stopped: the port binds again
        again.bind(("127.0.0.1", port))


def test_a_textfile_unwritable_mid_run_is_said_once_and_written_again(tmp_path, capsys):
    """The textfile's directory removed mid-run (a cleanup job; a full disk fails the same
    write): before, the OSError reached the run's guard on its listeners, a traceback on
    stderr at every sample. Now: said once, the run goes on, written again when it can be."""
    from test_execute_sim import cluster, make_run, shift_plan

    out = tmp_path / "prom"
    out.mkdir()
    path = out / "rk.prom"
    sim = cluster(6, size=16 * 1024 * 1024)
    run = make_run(sim, shift_plan(sim), tmp_path, incremental=True, batch_size=2, wait=True)
    seen = {"samples": 0}

    def vandal(e):  # listens before the metrics do: each sample's write sees its doing
        if e["event"] != "sample":
            return
        seen["samples"] += 1
        if seen["samples"] == 2:
            path.unlink()
            out.rmdir()
        elif seen["samples"] == 6:
            out.mkdir()

    run.subscribe(vandal)
    m = open_metrics(None, str(path))
    assert m is not None
    m.attach(run)
    res = run.run()
    m.close()
    err = capsys.readouterr().err
    assert res.state == "done"
    assert seen["samples"] >= 7
    assert "Traceback" not in err
    assert err.count("not written") == 1 and err.count("written again") == 1, err
    assert f"--metrics-textfile {path}: not written (No such file or directory)" in err
    assert m.textfile_failures == 4  # samples 2-5
    got = samples(path.read_text())
    assert got[("reassign_kit_run_finished", (("state", "done"),))] == 1


# ---------------------------------------------------------------------------- scrapes mid-run


def test_scrapes_and_status_calls_in_a_tight_loop_never_stop_a_long_run(tmp_path):
    """A scrape takes the metrics' lock, then asks the run's status; the run emits its events
    into the metrics' listener. Before, the loop emitted "completed" holding the run's lock
    while a scrape held the metrics' lock and waited for it: the run hung for good. Now the
    listeners hear the events once the run's lock is released, and the status is read
    without it: the run ends, watched by a watchdog that fails it if its loop stops."""
    import threading

    from prometheus_client import generate_latest
    from test_execute_sim import cluster, make_run, shift_plan
    from watchdog import Watchdog, hammer

    sim = cluster(48, size=4 * 1024 * 1024)
    dog = Watchdog(sim, stall_s=20.0, limit_s=300.0)
    run = make_run(sim, shift_plan(sim), tmp_path, incremental=True, batch_size=2, wait=True)
    m = RunMetrics().attach(run)
    stop = threading.Event()
    scraper = hammer(lambda: generate_latest(m.registry), stop, "rk-test-scrape")
    reader = hammer(run.status, stop, "rk-test-status")
    try:
        run.start()
        res = dog.wait(run)
    finally:
        stop.set()  # the hammers end with the test, even a failed one
    scraper.join(10)
    reader.join(10)
    assert res.state == "done" and len(res.completed) == 48
    assert dog.polls > 48 and scraper.calls > 0 and reader.calls > 0
    assert not scraper.is_alive() and not reader.is_alive()
    got = samples(generate_latest(m.registry).decode())
    assert got[("reassign_kit_moves", (("state", "done"),))] == 48
    assert got[("reassign_kit_moves_completed_total", ())] == 48


def test_the_watchdog_fails_a_run_whose_loop_stops_polling():
    """The watchdog itself: a loop that never polls again fails the test (quickly), with the
    threads' stacks, instead of waiting on it."""
    from watchdog import Watchdog

    class Gateway:
        def list_reassignments(self):
            return {}

    class Stuck:  # a run whose loop never ends and never polls
        def wait(self, timeout=None):
            return None

    gw = Gateway()
    dog = Watchdog(gw, stall_s=0.5, limit_s=30.0)
    gw.list_reassignments()
    assert dog.polls == 1
    with pytest.raises(pytest.fail.Exception, match="no poll for 0.5s .* after 1 poll"):
        dog.wait(Stuck(), step_s=0.05)
