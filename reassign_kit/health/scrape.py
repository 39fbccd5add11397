"""``--health-source scrape:URL,...``: the brokers' own exporters (the Prometheus JMX exporter
agent), read directly, no Prometheus server in between.

Each page is parsed with prometheus-client's parser of the text exposition format; the series
names come from ``queries.toml``. Rates (bytes in/out, the request handlers' idle ratio) are
the difference of two scrapes of the same endpoint. An endpoint that is down, slow or answers
garbage leaves its broker's values None, sets ``degraded`` and warns once (until it recovers):
the sample never looks better than what was measured.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from ..model import TopicPartition
from . import queries
from .fetch import FetchError, get
from .signals import BrokerHealth, HealthSample

log = logging.getLogger(__name__)

Labels = frozenset[tuple[str, str]]


@dataclass(frozen=True)
class Page:
    """One exporter page: every sample by (name, labels), and the broker it names."""

    at: float  # monotonic seconds of the scrape
    values: Mapping[tuple[str, Labels], float]
    broker: int | None

    def get(self, name: str, **labels: str) -> float | None:
        v = self.values.get((name, frozenset(labels.items())))
        return None if v is None or not math.isfinite(v) else v

    def series(self, name: str) -> list[tuple[dict[str, str], float]]:
        return [(dict(lb), v) for (n, lb), v in self.values.items() if n == name]


class GarbageError(ValueError):
    """A page that is not a usable exporter page."""


def parse_page(text: str, at: float, names: Mapping[str, object] | None = None) -> Page:
    """A page of the text exposition format (prometheus-client's parser); GarbageError when it
    does not parse or has no sample at all."""
    names = names or queries.scrape_names()
    values: dict[tuple[str, Labels], float] = {}
    try:
        for fam in text_string_to_metric_families(text):
            for s in fam.samples:
                values[(s.name, frozenset(s.labels.items()))] = float(s.value)
    except Exception as e:  # noqa: BLE001 - the parser raises several kinds on garbage
        raise GarbageError(f"not the Prometheus text format ({type(e).__name__}: {e})") from None
    if not values:
        raise GarbageError("no samples")
    broker = None
    ident = str(names["identity"])
    for (n, lb), _v in values.items():
        if n == ident:
            b = dict(lb).get("broker", "")
            if b.lstrip("-").isdigit():
                broker = int(b)
    return Page(at, values, broker)


def _counter_rate(cur: Page, prev: Page | None, names: Iterable[str]) -> float | None:
    """Per second, the sum of counters ``names`` between two pages (None: one missing, a
    counter went down — a restarted broker — or no time passed)."""
    if prev is None or cur.at <= prev.at:
        return None
    total = 0.0
    for n in names:
        a, b = prev.get(n), cur.get(n)
        if a is None or b is None or b < a:
            return None
        total += b - a
    return total / (cur.at - prev.at)


def _count(v: float | None) -> int | None:
    return None if v is None else int(round(v))


def broker_health(broker: int, cur: Page, prev: Page | None) -> BrokerHealth:
    """One broker's signals from its page now and its previous page (pure)."""
    nm = queries.scrape_names()
    idle = _counter_rate(cur, prev, [nm["request_handler_idle_ns"]])
    if idle is not None:
        idle = min(1.0, max(0.0, idle / 1e9))
    else:
        idle = cur.get(nm["request_handler_idle_ratio"])

    def pct(request: str, q: str) -> float | None:
        seen = cur.get(nm["requests"], request=request)
        if not seen:  # no request ever: a percentile of nothing is not a fast broker
            return None
        return cur.get(nm["request_time_ms"], request=request, quantile=q)

    return BrokerHealth(
        broker=broker,
        produce_p99_ms=pct(nm["produce_request"], "0.99"),
        produce_p50_ms=pct(nm["produce_request"], "0.5"),
        fetch_follower_p99_ms=pct(nm["fetch_follower_request"], "0.99"),
        request_handler_idle=idle,
        network_processor_idle=cur.get(nm["network_processor_idle"]),
        under_replicated=_count(cur.get(nm["under_replicated"])),
        under_min_isr=_count(cur.get(nm["under_min_isr"])),
        bytes_in=_counter_rate(cur, prev, nm["bytes_in"]),
        bytes_out=_counter_rate(cur, prev, nm["bytes_out"]),
    )


def partitions_under_min_isr(pages: Sequence[Page]) -> frozenset[TopicPartition] | None:
    """The partitions the leaders' exporters flag under min ISR; None when no page has the
    per-partition series, or a broker counts some it does not list."""
    nm = queries.scrape_names()
    out: set[TopicPartition] = set()
    seen_family = False
    for p in pages:
        listed = 0
        for lb, v in p.series(nm["partition_under_min_isr"]):
            seen_family = True
            if v >= 1 and lb.get("partition", "").isdigit():
                out.add(TopicPartition(lb.get("topic", ""), int(lb["partition"])))
                listed += 1
        counted = _count(p.get(nm["under_min_isr"]))
        if counted and listed < counted:
            return None
    return frozenset(out) if seen_family else None


@dataclass
class _Endpoint:
    url: str
    broker: int | None  # given (ID=URL) or learnt from its identity series
    given: bool = False
    prev: Page | None = None
    bad: str | None = None  # the failure warned about (warn once until it recovers)


def parse_endpoints(text: str) -> list[tuple[int | None, str]]:
    """``URL,URL`` or ``ID=URL,ID=URL`` (a broker id for an exporter that does not name it);
    ValueError naming the bad element."""
    out: list[tuple[int | None, str]] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            raise ValueError("an empty endpoint (two commas, or a trailing comma)")
        broker: int | None = None
        url = part
        head, sep, rest = part.partition("=")
        if sep and "://" not in head:
            if not head.strip().isdigit():
                raise ValueError(f"{part!r}: the part before '=' must be a broker id")
            broker, url = int(head), rest.strip()
        if not (url.startswith("http://") or url.startswith("https://")) or len(url) < 10:
            raise ValueError(f"{part!r} is not an http:// or https:// URL")
        out.append((broker, url))
    if not out:
        raise ValueError("no endpoint")
    urls = [u for _, u in out]
    if len(set(urls)) != len(urls):
        raise ValueError("an endpoint is listed twice")
    return out


class ScrapeSource:
    """Samples from the brokers' exporters (see the module docstring)."""

    name = "scrape"

    def __init__(
        self,
        endpoints: Sequence[tuple[int | None, str]],
        *,
        timeout: float = 2.0,
        brokers: Iterable[int] = (),
        warn: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ):
        self._eps = [_Endpoint(u, b, given=b is not None) for b, u in endpoints]
        self.timeout = timeout
        self._brokers = set(brokers)
        self._warn = warn or log.warning
        self._clock = clock
        self._wall = wall
        self._pool = ThreadPoolExecutor(max_workers=min(8, max(1, len(self._eps))))

    def _one(self, ep: _Endpoint) -> Page:
        body = get(ep.url, self.timeout)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            raise GarbageError("not UTF-8 text") from None
        return parse_page(text, self._clock())

    def sample(self) -> HealthSample:
        ts = self._wall()
        futures = [self._pool.submit(self._one, ep) for ep in self._eps]
        pages: list[Page] = []
        brokers: dict[int, BrokerHealth] = {}
        problems: list[str] = []
        for ep, fut in zip(self._eps, futures, strict=True):
            try:
                page = fut.result(timeout=self.timeout + 5)
                if page.broker is None and ep.broker is None:
                    raise GarbageError(
                        "no kafka_server_broker_identity series: name its broker as ID=URL"
                    )
                if page.broker is not None and ep.given and page.broker != ep.broker:
                    raise GarbageError(f"serves broker {page.broker}, not {ep.broker}")
            except (FetchError, GarbageError) as e:
                self._failed(ep, str(e))
                problems.append(f"{ep.url}: {e}")
                if ep.broker is not None:
                    brokers.setdefault(ep.broker, BrokerHealth(ep.broker))
                continue
            except Exception as e:  # noqa: BLE001 - a sample never raises (the protocol)
                why = "timeout: no answer" if isinstance(e, TimeoutError) else type(e).__name__
                self._failed(ep, f"{why}: {e}")
                problems.append(f"{ep.url}: {why}: {e}")
                if ep.broker is not None:
                    brokers.setdefault(ep.broker, BrokerHealth(ep.broker))
                continue
            broker = page.broker if page.broker is not None else ep.broker
            assert broker is not None
            prev = ep.prev if ep.prev is not None and ep.broker == broker else None
            ep.broker = broker
            brokers[broker] = broker_health(broker, page, prev)
            ep.prev = page
            pages.append(page)
            if ep.bad is not None:
                log.info("health source %s: %s answers again", self.name, ep.url)
                ep.bad = None
        for b in self._brokers - brokers.keys():
            brokers[b] = BrokerHealth(b)  # known to the run, served by no endpoint
        umi = partitions_under_min_isr(pages) if not problems else None
        degraded = None
        if problems:
            degraded = f"{self.name}: " + "; ".join(problems)
        return HealthSample(
            ts=ts,
            source=self.name,
            brokers=dict(sorted(brokers.items())),
            under_min_isr=umi,
            degraded=degraded,
        )

    def _failed(self, ep: _Endpoint, why: str) -> None:
        kind = why.split(":", 1)[0]
        if ep.bad != kind:  # one warning per failure, not one per sample
            self._warn(
                f"health source {self.name}: {ep.url}: {why}; its broker's signals are not measured"
            )
        ep.bad = kind

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
