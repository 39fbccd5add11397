"""Load from history: the reduction of per-partition series to the sampler's figures (pure,
synthetic series), the Prometheus range-query reader against a local HTTP server answering
as Prometheus does, and the options refused before anything is asked."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.errors import LoadSourceError, UsageError
from reassign_kit.model import TopicPartition
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.history import (
    END,
    GROUP_PREFIX,
    SIZE,
    START,
    LoadHistory,
    Window,
    bucketed,
    figures_of,
    loads_of,
    parse_quantile,
    quantile_of,
    series_figure,
    shown,
)
from reassign_kit.snapshot.prom_load import load_from_prometheus, parse_matrix, selectors
from reassign_kit.snapshot.snapshot import Snapshot

T0 = 1_700_000_000.0
A, B = TopicPartition("t.a-1", 0), TopicPartition("t.a-1", 1)


def _w(seconds=600.0, step=60.0, q="mean") -> Window:
    return Window.ending(T0 + seconds, seconds, step, q)


def _line(rate: float, times, base: float = 1000.0):
    return [(t, base + rate * (t - T0)) for t in times]


@settings(deadline=None)  # a loaded machine's first call may be slow: no timed assertion
@given(
    st.lists(st.floats(-1e9, 1e9), min_size=1, max_size=60),
    st.sampled_from(["p1", "p50", "p95", "p99.9", "p100"]),
)
def test_quantile_is_linear_interpolation_between_ranks(values, q):
    expect = float(np.percentile(values, float(q[1:]), method="linear"))
    assert quantile_of(values, q) == pytest.approx(expect, rel=1e-9, abs=1e-6)


def test_quantile_mean_and_max():
    assert quantile_of([1.0, 2.0, 6.0], "mean") == 3.0
    assert quantile_of([1.0, 2.0, 6.0], "max") == 6.0


@pytest.mark.parametrize("bad", ["95", "p0", "p101", "q95", "", "p9x"])
def test_a_bad_quantile_is_refused_by_name(bad):
    with pytest.raises(UsageError, match="--load-quantile"):
        parse_quantile(bad)


@settings(deadline=None)
@given(
    rate=st.floats(0, 1e6),
    jitter=st.lists(st.floats(0, 0.9), min_size=11, max_size=11),
    q=st.sampled_from(["p50", "p95", "mean", "max"]),
)
def test_a_steady_counter_gives_its_rate_whatever_the_quantile(rate, jitter, q):
    w = _w()
    times = [T0 + 60 * i + 30 * j for i, j in enumerate(jitter[:10])] + [T0 + 600]
    f = series_figure(_line(rate, times), w, counter=True)
    assert f is not None and f.buckets == 11 and f.resets == 0
    assert f.rate == pytest.approx(rate, rel=1e-6, abs=1e-6)


def test_the_last_sample_of_a_bucket_stands_for_it_and_outside_samples_are_dropped():
    w = _w()
    pts = [(T0 - 1, 5.0), (T0 + 1, 1.0), (T0 + 59, 2.0), (T0 + 61, 3.0), (T0 + 601, 9.0)]
    pts.append((T0 + 70, math.nan))
    assert bucketed(pts, w) == [(T0 + 59, 2.0), (T0 + 61, 3.0)]


def test_a_counter_reset_is_left_out_and_counted():
    w = _w(q="max")
    pts = [(T0, 100.0), (T0 + 60, 160.0), (T0 + 120, 10.0), (T0 + 180, 70.0)]
    f = series_figure(pts, w, counter=True)
    assert f is not None and f.resets == 1 and f.rate == pytest.approx(1.0)
    # a size may shrink (retention): signed, no reset
    g = series_figure(pts, w, counter=False)
    assert g is not None and g.resets == 0 and g.rate == pytest.approx(1.0)
    assert series_figure(pts, _w(q="p0.1"), counter=False).rate < 0


def test_the_quantile_is_taken_over_the_rates_of_the_window():
    w = _w(q="p95")
    rates = [10.0] * 9 + [110.0]  # one busy interval of ten
    pts, v = [(T0, 0.0)], 0.0
    for i, r in enumerate(rates, 1):
        v += r * 60
        pts.append((T0 + 60 * i, v))
    f = series_figure(pts, w, counter=True)
    assert f.rate == pytest.approx(float(np.percentile(rates, 95)))
    assert series_figure(pts, _w(q="mean"), counter=True).rate == pytest.approx(20.0)


def _partition(tp, msgs_s, bytes_per_msg, groups, times):
    out = {
        (tp, END): _line(msgs_s, times, 5000),
        (tp, START): [(t, 1000.0) for t in times],
        (tp, SIZE): [(t, (5000 + msgs_s * (t - T0) - 1000) * bytes_per_msg) for t in times],
    }
    for g, rate in groups.items():
        out[(tp, GROUP_PREFIX + g)] = _line(rate, times, 4000)
    return out


def test_partition_figures_are_the_samplers():
    w = _w()
    times = [T0 + 60 * i for i in range(11)]
    series = _partition(A, 10.0, 400, {"g1": 10.0, "g2": 5.0}, times)
    loads, unread = loads_of([A], figures_of(series, w), groups_known=True)
    assert unread == []
    load = loads[A]
    assert load.produce_msgs_s == pytest.approx(10.0)
    assert load.produce_bytes_s == pytest.approx(4000.0)
    assert load.fetch_bytes_s == pytest.approx(15.0 * 400)
    assert load.consumer_groups == 2
    assert load.growth_bytes_s == pytest.approx(4000.0)


def test_a_missing_series_is_named_never_guessed():
    w = _w()
    times = [T0 + 60 * i for i in range(11)]
    series = _partition(A, 10.0, 400, {}, times)
    series.update({k: v for k, v in _partition(B, 1.0, 10, {}, times).items() if k[1] != SIZE})
    loads, unread = loads_of([A, B], figures_of(series, w), groups_known=False)
    assert set(loads) == {A}
    assert any("fetch bytes/s and groups unknown" in u for u in unread)
    assert f"partition {B}: no size series in the window" in unread
    bad = dict(series)
    bad[(A, SIZE)] = [(t, -v) for t, v in series[(A, SIZE)]]
    loads, unread = loads_of([A], figures_of(bad, w), groups_known=True)
    assert loads == {} and unread[0].startswith(f"partition {A}: its last size (-")
    one = {(A, m): pts[:1] for (tp, m), pts in series.items() if tp == A}
    loads, unread = loads_of([A], figures_of(one, w), groups_known=True)
    assert loads == {} and "no rate of log_end_offset or size" in unread[0]


@pytest.mark.parametrize(
    ("seconds", "step", "says"),
    [
        (60, 60, "fewer than two"),
        (7 * 86400, 10, "over 10000 points"),
        (600, 0.5, "--load-step"),
        (-5, 60, "--load-window"),
    ],
)
def test_a_window_without_rates_is_refused(seconds, step, says):
    with pytest.raises(UsageError, match=says):
        Window.ending(T0, seconds, step, "p95")


def test_shown_urls_carry_no_secret():
    assert shown("http://u:secret@h:9090/p?token=abc") == "http://h:9090/p"
    with pytest.raises(UsageError) as e:
        LoadHistory("prometheus:http://u:secret@127.0.0.1:9090").check()
    assert "secret" not in str(e.value) and "credentials" in str(e.value)
    with pytest.raises(UsageError, match="prometheus:URL or parquet:PATH"):
        LoadHistory("influx:http://h").check()


def test_selectors_escape_and_bound_each_query():
    tps = [TopicPartition("t.a-1", 0), TopicPartition("plain", 0)]
    tps += [TopicPartition(f"x{i:04d}", 0) for i in range(400)]
    tps += [TopicPartition("big", p) for p in range(1200)]
    sels = selectors(tps)
    assert sels[0] == 'topic=~"big",partition=~"' + "|".join(map(str, range(500))) + '"'
    assert sels[2].endswith('partition=~"' + "|".join(map(str, range(1000, 1200))) + '"')
    assert sels[3].startswith('topic=~"plain|t\\\\.a\\\\-1|x0000')
    assert all(len(s) <= 1520 for s in sels[3:]) and len(sels) > 4
    covered = sum(s.count("|") + 1 for s in sels[3:])
    assert covered == 402


def test_a_matrix_that_is_not_one_is_refused():
    with pytest.raises(ValueError, match="not a range matrix"):
        parse_matrix(b'{"status":"success","data":{"resultType":"vector","result":[]}}')
    with pytest.raises(ValueError, match="bad_data"):
        parse_matrix(b'{"status":"error","error":"bad_data"}')
    with pytest.raises(ValueError, match="not JSON"):
        parse_matrix(b"<html>")


class _Prom(BaseHTTPRequestHandler):
    """Answers query_range as Prometheus does, from ``series`` (PromQL metric name -> rows)."""

    series: dict = {}
    asked: list = []

    def do_GET(self):  # noqa: N802 - http.server's name
        import urllib.parse

        q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        promql = q["query"][0]
        self.asked.append(promql)
        name = next((n for n in self.series if n + "{" in promql), None)
        if self.series.get(name) == "error":
            body = json.dumps({"status": "error", "error": "boom"}).encode()
            self.send_response(400)
        else:
            rows = self.series.get(name, [])
            if promql.startswith("timestamp(") and rows != "error":
                # each value scraped 0.5 s before the grid point it is answered at
                rows = [{**r, "values": [[t, str(t - 0.5)] for t, _ in r["values"]]} for r in rows]
            doc = {"status": "success", "data": {"resultType": "matrix", "result": rows}}
            body = json.dumps(doc).encode()
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def prom():
    srv = HTTPServer(("127.0.0.1", 0), _Prom)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        th.join(5)


def _rows(series, tp, metric, extra=None, less=0.0):
    """A grid series answering each point's value as scraped 0.5 s before it (``less``: a
    follower's lagging copy)."""
    labels = {"topic": tp.topic, "partition": str(tp.partition), **(extra or {})}
    pts = series[(tp, metric)]
    return {"metric": labels, "values": [[t + 0.5, str(v - less)] for t, v in pts]}


def _snap() -> Snapshot:
    return Snapshot.of(
        [BrokerEntry(1, "a")],
        [TopicEntry(A.topic, 1)],
        [PartitionEntry(A.topic, 0, (1,), 10, 1), PartitionEntry(A.topic, 1, (1,), 10, 1)],
    )


def test_load_from_a_prometheus_answer(prom):
    w = _w()
    times = [T0 + 60 * i for i in range(11)]
    s = _partition(A, 10.0, 400, {"g": 2.0}, times)
    _Prom.series = {
        "kafka_log_log_logendoffset": [
            _rows(s, A, END, {"instance": "b1"}),
            _rows(s, A, END, {"instance": "b2"}, less=5),
        ],
        "kafka_log_log_logstartoffset": [_rows(s, A, START)],
        "kafka_log_log_size": [_rows(s, A, SIZE)],
        "kafka_consumergroup_current_offset": [
            _rows(s, A, GROUP_PREFIX + "g", {"consumergroup": "g"})
        ],
    }
    url = f"http://127.0.0.1:{prom.server_port}/"
    snap = load_from_prometheus(url, _snap(), w)
    got = {p.tp: p.load for p in snap.partitions}
    assert got[A].produce_bytes_s == pytest.approx(4000.0) and got[A].consumer_groups == 1
    assert got[A].fetch_bytes_s == pytest.approx(800.0)
    assert got[B] is None
    assert snap.load.source == "prometheus mean" and snap.load.seconds == 600
    assert snap.load.unread == (
        f"partition {B}: no log_end_offset or log_start_offset or size series in the window",
    )
    assert any('topic=~"t\\\\.a\\\\-1"' in q for q in _Prom.asked)


def test_an_error_answer_or_no_server_is_named_by_its_url(prom):
    url = f"http://127.0.0.1:{prom.server_port}"
    _Prom.series = {"kafka_log_log_logendoffset": [{"metric": "x", "values": []}]}
    with pytest.raises(LoadSourceError, match=f"Prometheus at {url}: a malformed series"):
        load_from_prometheus(url + "/", _snap(), _w())
    _Prom.series = {"kafka_log_log_logendoffset": "error"}
    with pytest.raises(LoadSourceError, match=f"Prometheus at {url}: HTTP 400"):
        load_from_prometheus(url, _snap(), _w())
    closed = HTTPServer(("127.0.0.1", 0), _Prom)
    port = closed.server_port
    closed.server_close()
    with pytest.raises(LoadSourceError) as e:
        load_from_prometheus(f"http://127.0.0.1:{port}", _snap(), _w())
    assert f"Prometheus at http://127.0.0.1:{port}: unreachable" in str(e.value)
    with pytest.raises(UsageError) as e:
        load_from_prometheus(f"http://127.0.0.1:{port}?token=s3cret", _snap(), _w())
    assert "takes no query string" in str(e.value) and "s3cret" not in str(e.value)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--load-from", "prometheus:http://me:pw@127.0.0.1:1"], "credentials"),
        (["--load-from", "prometheus:http://127.0.0.1:1", "--load-quantile", "p0"], "p1 .. p100"),
        (["--load-from", "parquet:/x", "--load-window", "1m"], "fewer than two"),
        (["--load-from", "parquet:/nonexistent/export.parquet"], "no such file or directory"),
        (["--load-from", "x", "--load-window", "7d"], "prometheus:URL or parquet:PATH"),
        (["--load-from", "parquet:/x", "--sample-load", "5s"], "one source of load"),
    ],
)
def test_cli_refuses_bad_history_options_before_asking_the_cluster(
    extra, says, capsys, tmp_path, monkeypatch
):
    from reassign_kit.cli import main
    from reassign_kit.cli import plan as cli_plan

    def never(*a, **k):
        raise AssertionError("the cluster was asked")

    monkeypatch.setattr(cli_plan, "connect", never)
    out = tmp_path / "x.json"
    rc = main(["snapshot", "--bootstrap-server", "127.0.0.1:1", "--output", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert says in err and "Traceback" not in err and "pw" not in err
    assert not out.exists()
