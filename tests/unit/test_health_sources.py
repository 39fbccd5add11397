"""Health sources on the HTTP path: the spec's parsing, the exporter page's
signals, and endpoints that are down, slow or answer garbage — each a sample with None values,
``degraded`` set and one warning, never an exception and never better-looking numbers.

The endpoints are a local http.server on 127.0.0.1 the tests start and stop."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit.errors import UsageError
from reassign_kit.health import scrape
from reassign_kit.health.prom import PrometheusSource, parse_vector
from reassign_kit.health.signals import BrokerHealth, HealthSample
from reassign_kit.health.sources import FallbackSource, open_source, parse_spec
from reassign_kit.model import TopicPartition


def exporter_page(broker: int, idle_ns: float = 1e9, bytes_in: float = 0.0, produce: int = 5,
                  p99: float = 12.5, under_min_isr: int = 0, flagged=()) -> str:  # fmt: skip
    """A page as the sandbox's JMX exporter rules serve it (tools/jmx-exporter.yaml)."""
    lines = [
        "# TYPE kafka_server_broker_identity gauge",
        f'kafka_server_broker_identity{{broker="{broker}"}} 1.0',
        "# TYPE kafka_server_request_handler_idle_ns counter",
        f"kafka_server_request_handler_idle_ns_total {idle_ns}",
        "# TYPE kafka_server_request_handler_avg_idle_ratio gauge",
        "kafka_server_request_handler_avg_idle_ratio 0.42",
        "# TYPE kafka_network_processor_avg_idle_ratio gauge",
        "kafka_network_processor_avg_idle_ratio 0.9",
        "# TYPE kafka_network_request_total_time_ms gauge",
        f'kafka_network_request_total_time_ms{{quantile="0.99",request="Produce"}} {p99}',
        'kafka_network_request_total_time_ms{quantile="0.5",request="Produce"} 2.0',
        'kafka_network_request_total_time_ms{quantile="0.99",request="FetchFollower"} 500.0',
        "# TYPE kafka_network_requests counter",
        f'kafka_network_requests_total{{request="Produce"}} {produce}',
        'kafka_network_requests_total{request="FetchFollower"} 100',
        "# TYPE kafka_server_under_replicated_partitions gauge",
        "kafka_server_under_replicated_partitions 2.0",
        "# TYPE kafka_server_under_min_isr_partitions gauge",
        f"kafka_server_under_min_isr_partitions {under_min_isr}",
        "# TYPE kafka_cluster_partition_under_min_isr gauge",
        'kafka_cluster_partition_under_min_isr{partition="0",topic="ok"} 0.0',
        *(
            f'kafka_cluster_partition_under_min_isr{{partition="{p}",topic="{t}"}} 1.0'
            for t, p in flagged
        ),  # fmt: skip
    ]
    for n in ("bytesin", "replicationbytesin", "bytesout", "replicationbytesout"):
        lines += [f"# TYPE kafka_server_{n} counter", f"kafka_server_{n}_total {bytes_in}"]
    return "\n".join(lines) + "\n"


class Endpoint:
    """One local HTTP endpoint whose answer the test sets: ``body`` (text), ``status``,
    ``delay`` (seconds before answering) or ``trickle`` (seconds between bytes)."""

    def __init__(self) -> None:
        self.body = ""
        self.status = 200
        self.delay = 0.0
        self.trickle = 0.0
        self.content_type = "text/plain; version=0.0.4"
        self.hits = 0
        ep = self

        class H(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                ep.hits += 1
                if ep.delay:
                    time.sleep(ep.delay)
                data = ep.body.encode() if isinstance(ep.body, str) else ep.body
                try:
                    self.send_response(ep.status)
                    self.send_header("Content-Type", ep.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    if ep.trickle:
                        for i in range(len(data)):
                            self.wfile.write(data[i : i + 1])
                            self.wfile.flush()
                            time.sleep(ep.trickle)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *a) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoints() -> Iterator[list[Endpoint]]:
    eps = [Endpoint() for _ in range(3)]
    try:
        yield eps
    finally:
        for e in eps:
            e.close()


def down_url() -> str:
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/metrics"


def all_none(h: BrokerHealth) -> bool:
    return all(getattr(h, k) is None for k in h.__dataclass_fields__ if k != "broker")


# ---------------------------------------------------------------------------- the spec


@pytest.mark.parametrize(
    "text, kind",
    [
        ("probe", "probe"),
        ("probe:_rk_canary.ops-1", "probe"),
        ("prometheus:http://127.0.0.1:9090", "prometheus"),
        ("scrape:http://a:1/metrics,http://b:2/metrics", "scrape"),
        ("scrape:1=http://a:1/metrics,2=http://b:2/metrics", "scrape"),
    ],
)
def test_spec_accepted_and_canonical(text, kind):
    s = parse_spec(text)
    assert s.kind == kind
    assert parse_spec(str(s)) == s


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "--health-source"),
        ("graphite:http://x", "kind must be one of"),
        ("prometheus:", "needs a URL"),
        ("prometheus:ftp://x", "not an http"),
        ("prometheus:http://u:secret@x:9090", "credentials in the URL are refused"),
        ("prometheus:http://a,http://b", "one server URL"),
        ("scrape:http://a:1/m,,http://b", "empty endpoint"),
        ("scrape:x=http://a:1/m", "broker id"),
        ("scrape:1=http://a:1/m,1=http://b:1/m", "given twice"),
        ("scrape:http://a:1/m,http://a:1/m", "listed twice"),
        ("scrape:http://a:99999/m", "bad port"),
        ("probe:", "not a Kafka topic name"),
        ("probe:two words", "not a Kafka topic name"),
        ("probe:..", "not a Kafka topic name"),
        ("probe:" + "x" * 250, "not a Kafka topic name"),
    ],
)
def test_spec_refused_by_name(text, says):
    with pytest.raises(UsageError) as e:
        parse_spec(text)
    assert says in str(e.value) and "--health-source" in str(e.value)
    assert "secret" not in str(e.value)


@given(st.text(max_size=60))
@settings(max_examples=200)
def test_any_spec_text_is_accepted_or_refused_by_name(text):
    try:
        s = parse_spec(text)
    except UsageError as e:
        assert "--health-source" in str(e)
    else:
        assert s.kind in ("probe", "prometheus", "scrape")


def test_open_source_probe_needs_the_callers_factory():
    made = []

    class Probe:
        name = "probe"

        def sample(self):
            return HealthSample(ts=0, source="probe")

        def close(self):
            pass

    with pytest.raises(UsageError, match="no probe"):
        open_source(None)
    src = open_source(None, default_factory=lambda: made.append(1) or Probe())
    assert src.name == "probe" and made == [1]
    kept = open_source("probe:rk-canary", default_factory=lambda **kw: made.append(kw) or Probe())
    assert kept.name == "probe" and made == [1, {"topic": "rk-canary"}]
    assert isinstance(
        open_source("prometheus:http://127.0.0.1:1", default_factory=Probe), FallbackSource
    )


# ---------------------------------------------------------------------------- pages


def test_broker_health_from_two_pages_rates_and_ratios():
    a = scrape.parse_page(exporter_page(3, idle_ns=1e9, bytes_in=1000), at=10.0)
    b = scrape.parse_page(exporter_page(3, idle_ns=1.5e9, bytes_in=3000), at=12.0)
    assert a.broker == 3
    first = scrape.broker_health(3, a, None)
    assert first.bytes_in is None and first.bytes_out is None  # one scrape: no rate yet
    assert first.request_handler_idle == pytest.approx(0.42)  # the exporter's 1-min ratio
    h = scrape.broker_health(3, b, a)
    assert h.request_handler_idle == pytest.approx(0.25)  # 0.5e9 ns idle in 2 s
    assert h.bytes_in == pytest.approx(2 * 2000 / 2)  # client + replication, per second
    assert h.produce_p99_ms == 12.5 and h.produce_p50_ms == 2.0
    assert h.fetch_follower_p99_ms == 500.0
    assert h.network_processor_idle == 0.9 and h.under_replicated == 2


def test_no_requests_is_not_measured_and_a_restart_is_not_a_rate():
    a = scrape.parse_page(exporter_page(1, bytes_in=5000, produce=0, p99=0.0), at=1.0)
    b = scrape.parse_page(exporter_page(1, bytes_in=10, produce=0, p99=0.0), at=2.0)
    h = scrape.broker_health(1, b, a)
    assert h.produce_p99_ms is None  # a p99 of 0 requests is not a fast broker
    assert h.bytes_in is None  # the counter went down (restarted): no rate


def test_partitions_under_min_isr_and_an_inconsistent_count():
    p1 = scrape.parse_page(exporter_page(1, under_min_isr=1, flagged=[("t", 4)]), at=1)
    p2 = scrape.parse_page(exporter_page(2), at=1)
    assert scrape.partitions_under_min_isr([p1, p2]) == {TopicPartition("t", 4)}
    # a broker counting more than it lists: unknown, not "none"
    p3 = scrape.parse_page(exporter_page(3, under_min_isr=2, flagged=[("t", 5)]), at=1)
    assert scrape.partitions_under_min_isr([p1, p3]) is None


@given(st.text(max_size=300))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_garbage_pages_raise_only_garbage_error(text):
    try:
        page = scrape.parse_page(text, at=1.0)
    except scrape.GarbageError:
        return
    h = scrape.broker_health(page.broker or 1, page, None)
    assert isinstance(h, BrokerHealth)


# ---------------------------------------------------------------------------- sources


def test_scrape_source_down_slow_garbage_never_raise_and_warn_once(endpoints):
    good, slow, junk = endpoints
    good.body = exporter_page(1)
    slow.body, slow.delay = exporter_page(2), 8.0  # well past the bound, on a loaded machine
    junk.body = "<html><body>502 Bad Gateway</body></html>"
    warned: list[str] = []
    src = scrape.ScrapeSource(
        [(None, good.url), (2, slow.url), (3, junk.url), (4, down_url())],
        timeout=2.5,
        brokers=[1, 2, 3, 4, 5],
        warn=warned.append,
    )
    try:
        for _ in range(2):
            s = src.sample()
            assert s.degraded is not None
            for what in (slow.url, junk.url, "unreachable", "timeout", "not the Prometheus"):
                assert what in s.degraded, s.degraded
            assert not all_none(s.brokers[1])  # the good one measured
            assert s.brokers[1].produce_p99_ms == 12.5
            for b in (2, 3, 4, 5):
                assert all_none(s.brokers[b]), s.brokers[b]
            assert s.under_min_isr is None  # a partial view is no view
        assert len(warned) == 3, warned  # one per failing endpoint, not one per sample
    finally:
        src.close()


def test_scrape_source_trickle_is_slow_and_a_recovery_measures_again(endpoints):
    ep = endpoints[0]
    ep.body, ep.trickle = exporter_page(7), 0.01  # ~2 kB at 100 B/s: well over the bound
    warned: list[str] = []
    src = scrape.ScrapeSource([(7, ep.url)], timeout=2.5, warn=warned.append)
    try:
        s = src.sample()
        assert "timeout" in (s.degraded or "") and all_none(s.brokers[7])
        ep.trickle = 0.0
        s = src.sample()
        assert s.degraded is None and s.brokers[7].produce_p99_ms == 12.5
        assert s.under_min_isr == frozenset()
        assert len(warned) == 1
    finally:
        src.close()


def test_scrape_source_an_exporter_of_another_broker_is_refused(endpoints):
    ep = endpoints[0]
    ep.body = exporter_page(9)
    src = scrape.ScrapeSource([(2, ep.url)], timeout=5.0, warn=lambda m: None)
    try:
        s = src.sample()
        assert "serves broker 9, not 2" in (s.degraded or "")
        assert all_none(s.brokers[2]) and 9 not in s.brokers
    finally:
        src.close()


def _vector(rows) -> str:
    return json.dumps(
        {
            "status": "success",
            "data": {
                "resultType": "vector",
                "result": [{"metric": m, "value": [1.0, v]} for m, v in rows],
            },
        }
    )


def test_prometheus_source_good_then_garbage_then_down(endpoints):
    ep = endpoints[0]
    ep.body = _vector([({"broker": "1"}, "0.75"), ({"broker": "2"}, "NaN")])
    warned: list[str] = []
    src = PrometheusSource(ep.base, timeout=10.0, brokers=[1, 2, 3], warn=warned.append)
    s = src.sample()
    assert s.degraded is None
    assert s.brokers[1].request_handler_idle == 0.75 and s.brokers[1].under_replicated == 1
    assert s.brokers[2].request_handler_idle is None  # NaN is not a number measured
    assert all_none(s.brokers[3])
    ep.body = "{not json"
    s = src.sample()
    assert "not JSON" in (s.degraded or "") and all(all_none(h) for h in s.brokers.values())
    ep.body = json.dumps({"status": "error", "error": "parse error at char 3"})
    s = src.sample()
    assert "parse error" in (s.degraded or "")
    src.close()
    ep.delay = 5.0
    slow = PrometheusSource(ep.base, timeout=0.5, brokers=[1, 2, 3], warn=warned.append)
    hits = ep.hits
    s = slow.sample()
    slow.close()
    assert "timeout" in (s.degraded or "") and s.under_min_isr is None
    assert all(all_none(h) for h in s.brokers.values())
    assert ep.hits == hits + 1  # a slow server: no further query waits out its own timeout
    src2 = PrometheusSource(down_url().rsplit("/", 1)[0], timeout=0.5, brokers=[1])
    s = src2.sample()
    src2.close()
    assert "unreachable" in (s.degraded or "") and all_none(s.brokers[1])
    assert len(warned) == 2, warned  # each source warned once (not once per sample)


@given(st.binary(max_size=200))
@settings(max_examples=200)
def test_prometheus_answers_garbage_raise_only_answer_error(body):
    from reassign_kit.health.prom import AnswerError

    try:
        rows = parse_vector(body)
    except AnswerError:
        return
    assert isinstance(rows, list)


def test_fallback_fills_only_what_the_metrics_source_could_not_measure(endpoints):
    ep = endpoints[0]
    ep.body = "garbage {"

    class Probe:
        name = "probe"
        closed = False

        def sample(self):
            return HealthSample(
                ts=1.0,
                source="probe",
                brokers={1: BrokerHealth(1, produce_p99_ms=80.0)},
                under_min_isr=frozenset(),
            )

        def close(self):
            Probe.closed = True

    src = open_source(f"scrape:1={ep.url}", timeout=5, warn=lambda m: None, default_factory=Probe)
    s = src.sample()
    assert s.brokers[1].produce_p99_ms == 80.0  # the probe's, as measured: not a guess
    assert s.brokers[1].request_handler_idle is None
    assert "using the probe" in (s.degraded or "")
    src.close()
    assert Probe.closed


def test_another_queries_file_is_checked_when_the_source_opens(tmp_path, monkeypatch):
    from reassign_kit.health import queries

    bad = tmp_path / "q.toml"
    bad.write_text('[scrape]\nidentity = "x"\n[prometheus]\n')
    monkeypatch.setenv(queries.QUERIES_ENV, str(bad))
    with pytest.raises(UsageError, match=r"q.toml: \[scrape\] lacks request_handler_idle_ns"):
        open_source("scrape:http://127.0.0.1:1/metrics")
    good = tmp_path / "good.toml"
    good.write_text(
        queries.QUERIES_FILE.read_text().replace("kafka_server_broker_identity", "my_id")
    )
    monkeypatch.setenv(queries.QUERIES_ENV, str(good))
    page = scrape.parse_page('my_id{broker="4"} 1\n', at=0.0)
    assert page.broker == 4
