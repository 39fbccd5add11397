"""``--health-source prometheus:URL``: a Prometheus server's HTTP API (``/api/v1/query``), one
instant query per signal, the PromQL from ``queries.toml``.

A query that fails (the server down, slow, an error answer, JSON that is not a vector) leaves
that signal None for every broker and sets ``degraded``; a broker with no series (its exporter
down: its series went stale) reads as not measured. Never an exception from ``sample``.
"""

from __future__ import annotations

import logging
import math
import time
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any

from ..model import TopicPartition
from . import queries
from .fetch import FetchError, get
from .prom_answer import AnswerError, result_rows
from .signals import BrokerHealth, HealthSample

log = logging.getLogger(__name__)

PER_BROKER = {
    "request_handler_idle": float,
    "network_processor_idle": float,
    "produce_p99_ms": float,
    "produce_p50_ms": float,
    "fetch_follower_p99_ms": float,
    "under_replicated": int,
    "under_min_isr": int,
    "bytes_in": float,
    "bytes_out": float,
}


def parse_vector(body: bytes) -> list[tuple[dict[str, str], float | None]]:
    """The series of an instant-query answer: (labels, value; None for NaN/Inf)."""
    rows = result_rows(body, "vector")
    out: list[tuple[dict[str, str], float | None]] = []
    for row in rows:
        try:
            metric = {str(k): str(v) for k, v in dict(row["metric"]).items()}
            v = float(row["value"][1])
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise AnswerError(f"a malformed series ({type(e).__name__})") from None
        out.append((metric, v if math.isfinite(v) else None))
    return out


class PrometheusSource:
    """Samples from a Prometheus server (see the module docstring)."""

    name = "prometheus"

    def __init__(
        self,
        url: str,
        *,
        timeout: float = 2.0,
        window: str = "1m",
        brokers: Iterable[int] = (),
        warn: Callable[[str], None] | None = None,
        wall: Callable[[], float] = time.time,
    ):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._queries = queries.promql(window)
        self._brokers = set(brokers)
        self._warn = warn or log.warning
        self._wall = wall
        self._bad: str | None = None
        self._pool = ThreadPoolExecutor(max_workers=2)

    def _query(self, promql: str, deadline: float) -> list[tuple[dict[str, str], float | None]]:
        left = deadline - time.monotonic()
        if left <= 0:
            raise FetchError(f"timeout: no complete answer within {self.timeout:g}s")
        q = urllib.parse.urlencode({"query": promql})
        url = f"{self.url}/api/v1/query?{q}"
        # in a worker: a name lookup is not bounded by the socket timeout
        fut = self._pool.submit(get, url, min(left, self.timeout))
        try:
            body = fut.result(timeout=left + 1)
        except FuturesTimeout:
            raise FetchError(f"timeout: no complete answer within {self.timeout:g}s") from None
        return parse_vector(body)

    def sample(self) -> HealthSample:
        ts = self._wall()
        deadline = time.monotonic() + self.timeout  # the whole sample, every query
        values: dict[int, dict[str, Any]] = {}
        problems: list[str] = []
        umi: frozenset[TopicPartition] | None = None
        for key, promql in self._queries.items():
            try:
                rows = self._query(promql, deadline)
            except (FetchError, AnswerError) as e:
                if isinstance(e, FetchError) and e.args[0].startswith(("timeout", "unreachable")):
                    problems.append(f"{e} (no signal measured)")
                    values.clear()
                    break  # the server is down or slow: the next queries would be too
                problems.append(f"{key}: {e}")
                continue
            except Exception as e:  # noqa: BLE001 - a sample never raises
                problems.append(f"{key}: {type(e).__name__}: {e}")
                continue
            if key == "partitions_under_min_isr":
                umi = _partitions(rows)
                continue
            conv = PER_BROKER.get(key)
            if conv is None:
                continue
            for labels, v in rows:
                b = labels.get("broker", "")
                if not b.isdigit():
                    continue
                values.setdefault(int(b), {})[key] = (
                    None if v is None else (int(round(v)) if conv is int else v)
                )
        brokers = {b: BrokerHealth(broker=b, **vals) for b, vals in values.items()}
        for b in self._brokers - brokers.keys():
            brokers[b] = BrokerHealth(b)
        degraded = None
        if problems:
            degraded = f"{self.name} at {self.url}: " + "; ".join(problems)
            umi = None
            if self._bad is None:
                self._warn(f"health source {degraded}; those signals are not measured")
            self._bad = degraded
        elif self._bad is not None:
            log.info("health source %s at %s answers again", self.name, self.url)
            self._bad = None
        return HealthSample(
            ts=ts,
            source=self.name,
            brokers=dict(sorted(brokers.items())),
            under_min_isr=umi,
            degraded=degraded,
        )

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _partitions(
    rows: list[tuple[Mapping[str, str], float | None]],
) -> frozenset[TopicPartition] | None:
    """Partitions flagged under min ISR; None when no partition has the series at all."""
    if not rows:
        return None
    out = set()
    for labels, v in rows:
        p = labels.get("partition", "")
        if v is not None and v >= 1 and p.isdigit():
            out.add(TopicPartition(labels.get("topic", ""), int(p)))
    return frozenset(out)
