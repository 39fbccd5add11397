"""``--load-from prometheus:URL``: a snapshot's partitions given the load a Prometheus server's
history says they carried (``snapshot.history`` reduces the series). Two ``query_range``s per
series kind and batch of topics over the window at the window's step: the series themselves
and ``timestamp()`` of them (when each value was scraped); per partition and grid point, the
largest value across the replicas' brokers stands for the leader's.

A server that cannot be reached, answers an error or something that is not a range matrix is
a ``LoadSourceError`` naming the server by its URL without credentials or query string; a
URL with credentials in it is refused before anything is sent (they would be echoed)."""

from __future__ import annotations

import dataclasses
import math
import re
import urllib.parse
from collections.abc import Iterable
from typing import Any

from ..errors import LoadSourceError
from ..health.fetch import FetchError, get
from ..health.prom_answer import result_rows
from ..model import TopicPartition
from .history import END, GROUP_PREFIX, SIZE, START, Window, check_url, figures_of, loads_of, shown
from .load import LoadWindow
from .snapshot import Snapshot

SOURCE = "prometheus"
SERIES = {
    END: "kafka_log_log_logendoffset",
    START: "kafka_log_log_logstartoffset",
    SIZE: "kafka_log_log_size",
}
GROUP_SERIES = "kafka_consumergroup_current_offset"  # kafka_exporter's; label consumergroup
MAX_REGEX = 1500  # characters of topic regex per query: a GET URL stays short
MAX_PARTITIONS = 500  # partitions per query: x replicas x points bounds the answer
MAX_ANSWER = 256 * 1024 * 1024


def _escaped(topic: str) -> str:
    """A topic name as a literal inside a PromQL regex string (RE2 takes a backslash before
    any punctuation; PromQL's string doubles it)."""
    return re.sub(r"([^A-Za-z0-9_])", r"\\\\\1", topic)


def selectors(tps: Iterable[TopicPartition]) -> list[str]:
    """Label matchers covering the partitions, each for at most ``MAX_PARTITIONS`` of them
    and ``MAX_REGEX`` characters of topic names: one answer stays far below ``MAX_ANSWER``
    (a week at 5-minute steps is ~70 KB per series and replica)."""
    by_topic: dict[str, list[int]] = {}
    for tp in set(tps):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out: list[str] = []
    cur: list[str] = []
    count = 0

    def flush() -> None:
        nonlocal count
        if cur:
            out.append(f'topic=~"{"|".join(cur)}"')
        cur.clear()
        count = 0

    for topic, parts in sorted(by_topic.items()):
        esc = _escaped(topic)
        if len(parts) > MAX_PARTITIONS:
            parts.sort()
            for i in range(0, len(parts), MAX_PARTITIONS):
                chunk = "|".join(map(str, parts[i : i + MAX_PARTITIONS]))
                out.append(f'topic=~"{esc}",partition=~"{chunk}"')
            continue
        if cur and (
            count + len(parts) > MAX_PARTITIONS
            or sum(len(c) + 1 for c in cur) + len(esc) > MAX_REGEX
        ):
            flush()
        cur.append(esc)
        count += len(parts)
    flush()
    return out


def parse_matrix(body: bytes) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    """A range query's series: (labels, [(t, value)]); ValueError saying what is wrong."""
    rows = result_rows(body, "matrix")
    out = []
    for row in rows:
        try:
            labels = {str(k): str(v) for k, v in dict(row["metric"]).items()}
            points = [(float(t), float(v)) for t, v in row["values"]]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"a malformed series ({type(e).__name__})") from None
        out.append((labels, [(t, v) for t, v in points if math.isfinite(v)]))
    return out


class PrometheusHistory:
    """Range queries against one server (``url`` checked by ``check_url``)."""

    def __init__(self, url: str, timeout: float = 60.0):
        self.url = check_url(url)
        self.timeout = timeout

    def range(
        self, promql: str, w: Window
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        q = urllib.parse.urlencode(
            {"query": promql, "start": f"{w.start:.3f}", "end": f"{w.end:.3f}", "step": w.step}
        )
        where = f"Prometheus at {shown(self.url)}"
        try:
            body = get(f"{self.url}/api/v1/query_range?{q}", self.timeout, MAX_ANSWER)
        except FetchError as e:
            raise LoadSourceError(f"--load-from: {where}: {e}") from None
        try:
            return parse_matrix(body)
        except ValueError as e:
            raise LoadSourceError(f"--load-from: {where}: {e}") from None


Points = list[tuple[float, float]]


def sampled(
    prom: PrometheusHistory, selector: str, w: Window
) -> list[tuple[dict[str, str], dict[float, tuple[float, float]]]]:
    """Each series of ``selector`` at the window's grid: grid time -> (the time of the sample
    Prometheus answers with there, its value). The sample's own time, from ``timestamp()``:
    a grid point's value was scraped up to a scrape interval before it, and rates taken over
    the grid's times would carry that jitter into every interval."""
    times: dict[frozenset, dict[float, float]] = {}
    for labels, points in prom.range(f"timestamp({selector})", w):
        times[_key(labels)] = dict(points)
    out = []
    for labels, points in prom.range(selector, w):
        at = times.get(_key(labels), {})
        out.append((labels, {g: (at[g], v) for g, v in points if g in at}))
    return out


def _key(labels: dict[str, str]) -> frozenset:
    return frozenset((k, v) for k, v in labels.items() if k != "__name__")


def read_series(
    prom: PrometheusHistory, tps: Iterable[TopicPartition], w: Window
) -> tuple[dict[tuple[TopicPartition, str], Points], bool]:
    """The partitions' series over the window as (sample time, value), the largest of the
    replicas' (or exporters') values at each grid point; and whether any group's committed
    offsets were found."""
    wanted = set(tps)
    merged: dict[tuple[TopicPartition, str], dict[float, tuple[float, float]]] = {}
    kinds = [(metric, name, "") for metric, name in SERIES.items()]
    kinds.append((GROUP_PREFIX, GROUP_SERIES, "consumergroup"))
    for matcher in selectors(wanted):
        for metric, name, by in kinds:
            for labels, at in sampled(prom, f"{name}{{{matcher}}}", w):
                tp = _tp(labels)
                if tp not in wanted or (by and not labels.get(by)):
                    continue
                into = merged.setdefault((tp, metric + labels.get(by, "")), {})
                for g, (t, v) in at.items():
                    if g not in into or v > into[g][1]:
                        into[g] = (t, v)
    series = {k: [into[g] for g in sorted(into)] for k, into in merged.items()}
    groups_known = any(m.startswith(GROUP_PREFIX) for _, m in series)
    return series, groups_known


def _tp(labels: dict[str, str]) -> TopicPartition | None:
    p = labels.get("partition", "")
    return TopicPartition(labels["topic"], int(p)) if p.isdigit() and labels.get("topic") else None


def load_from_prometheus(url: str, snap: Snapshot, w: Window, timeout: float = 60.0) -> Snapshot:
    """``snap`` with each partition's load from the server's history over ``w``."""
    prom = PrometheusHistory(url, timeout)
    tps = [p.tp for p in snap.partitions]
    series, groups_known = read_series(prom, tps, w)
    loads, unread = loads_of(tps, figures_of(series, w), groups_known)
    return with_history(snap, loads, unread, f"{SOURCE} {w.quantile}", w)


def with_history(
    snap: Snapshot, loads: dict[TopicPartition, Any], unread: list[str], source: str, w: Window
) -> Snapshot:
    """``snap`` with the loads and a window saying where they come from."""
    parts = [dataclasses.replace(p, load=loads.get(p.tp)) for p in snap.partitions]
    window = LoadWindow(source, w.start, w.seconds, tuple(unread))
    return Snapshot.of(snap.brokers, snap.topics, parts, window)
