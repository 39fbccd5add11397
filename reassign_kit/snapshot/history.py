"""Load from history: the per-partition series a metrics stack kept (a Prometheus server, or a
metrics export) reduced to the same ``PartitionLoad`` figures as the sampler, taken as a
quantile over a window (default p95 over 7 days) instead of one mean over minutes.

The series, by the names a metrics export uses (``metric`` column) and where Prometheus has
them (``snapshot.prom_load`` queries them):

- ``log_end_offset``, ``log_start_offset``, ``size``: ``kafka_log_log_logendoffset``,
  ``kafka_log_log_logstartoffset``, ``kafka_log_log_size`` (the JMX exporter's
  ``kafka.log:type=Log,name=LogEndOffset|LogStartOffset|Size`` per topic/partition; every
  replica's broker publishes them: the largest of the replicas' values stands for the leader's);
- ``committed_offset:GROUP``: ``kafka_consumergroup_current_offset`` (kafka_exporter's series of
  a group's committed offset), where present.

The reduction, the same on the driver (here) and on Spark (``spark.history``):

1. a series' samples in the window (at the times they were taken) are put in buckets of
   ``step`` seconds from the window's start; the last sample of each bucket stands for it
   (Prometheus answers one sample per step: the last scraped before each point of its grid);
2. between consecutive buckets, a rate = value change / time between their samples; for the
   offsets (counters) a negative change is a reset (a truncation, a recreated topic, a group
   whose offsets were reset): that interval is left out and counted;
3. a series' figure = the quantile of its rates (``p50``, ``p95``, ``p99.9`` ...: linear
   interpolation between the two nearest ranks, as Spark's ``percentile``; ``mean``; ``max``);
4. per partition: messages/s = the figure of ``log_end_offset``; bytes per offset = the last
   ``size`` / (last ``log_end_offset`` - last ``log_start_offset``); produce bytes/s = messages/s
   x bytes per offset; growth = the figure of ``size``; fetch bytes/s = the sum over groups of
   their figures x bytes per offset (a sum of quantiles: never under the quantile of the sum);
   consumer groups = the groups with a committed offset in the window.

A partition whose offsets or size have fewer than two buckets in the window is named in the
window's ``unread`` and carries no load, never a guess; so is the whole fetch when no group's
offsets are known at all (the planner's network goals then refuse rather than guess)."""

from __future__ import annotations

import math
import os
import re
import time
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import UsageError
from ..model import TopicPartition
from .load import PartitionLoad

END, START, SIZE = "log_end_offset", "log_start_offset", "size"
GROUP_PREFIX = "committed_offset:"
PARTITION_METRICS = (END, START, SIZE)
COUNTERS = (END, START)  # and every committed_offset:GROUP
DEFAULT_WINDOW_S = 7 * 86_400.0
DEFAULT_STEP_S = 300.0  # Cruise Control's partition metrics window: 5 minutes
DEFAULT_QUANTILE = "p95"
MAX_POINTS = 10_000  # Prometheus answers at most 11,000 points per series
_QUANTILE = re.compile(r"p(\d{1,2}(?:\.\d+)?|100)")
# a bucket index from (t - start) / step: a sample exactly on the grid stays in its bucket
EPSILON = 1e-9


def is_counter(metric: str) -> bool:
    return metric in COUNTERS or metric.startswith(GROUP_PREFIX)


def parse_quantile(text: str, option: str = "--load-quantile") -> str:
    """``p95``, ``p50``, ``p99.9``, ``mean`` or ``max`` (canonical text), else UsageError."""
    t = str(text).strip().lower()
    if t in ("mean", "max"):
        return t
    m = _QUANTILE.fullmatch(t)
    if m is None or not 0 < float(m.group(1)) <= 100:
        raise UsageError(f"{option} {text!r}: one of p1 .. p100 (p95, p99.9), mean or max")
    return t


def quantile_fraction(q: str) -> float | None:
    """``p95`` -> 0.95; None for ``mean`` and ``max``."""
    return float(q[1:]) / 100 if q.startswith("p") else None


def quantile_of(values: Sequence[float], q: str) -> float:
    """The quantile ``q`` of ``values`` (not empty): linear interpolation between the two
    nearest ranks at (n - 1) x fraction, as Spark SQL's ``percentile``."""
    if not values:
        raise ValueError("quantile of no values")
    if q == "mean":
        return math.fsum(values) / len(values)
    xs = sorted(values)
    if q == "max":
        return xs[-1]
    pos = (len(xs) - 1) * float(quantile_fraction(q))
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Window:
    """The history a load is taken from: [start, end] in epoch seconds, bucket ``step`` and
    the ``quantile`` of the rates."""

    start: float
    end: float
    step: float
    quantile: str

    @classmethod
    def ending(
        cls,
        end: float,
        seconds: float = DEFAULT_WINDOW_S,
        step: float = DEFAULT_STEP_S,
        quantile: str = DEFAULT_QUANTILE,
    ) -> Window:
        """The window of ``seconds`` up to ``end``; UsageError naming the option at fault."""
        q = parse_quantile(quantile)
        if not (math.isfinite(seconds) and seconds > 0):
            raise UsageError(f"--load-window: a positive duration, got {seconds}")
        if not (math.isfinite(step) and step >= 1):
            raise UsageError(f"--load-step: at least 1s, got {step}")
        if seconds < 2 * step:
            raise UsageError(
                f"--load-window {seconds:g}s holds fewer than two --load-step buckets of "
                f"{step:g}s: no rate can be taken"
            )
        if seconds / step > MAX_POINTS:
            raise UsageError(
                f"--load-window {seconds:g}s / --load-step {step:g}s is over {MAX_POINTS} "
                "points per series: take a longer step"
            )
        if not (math.isfinite(end) and end > seconds):
            raise UsageError(f"the window's end must be epoch seconds, got {end}")
        end = round(end, 3)  # Prometheus takes milliseconds: its grid is start + k x step
        return cls(round(end - seconds, 3), end, float(step), q)

    @property
    def seconds(self) -> float:
        return self.end - self.start


@dataclass(frozen=True)
class SeriesFigure:
    """One series reduced over the window: the quantile of its rates (None: no interval), its
    last value, how many buckets held a sample and how many intervals were resets."""

    rate: float | None
    last: float
    buckets: int
    resets: int = 0


def bucketed(points: Iterable[tuple[float, float]], w: Window) -> list[tuple[float, float]]:
    """The last sample of each step bucket in the window, in time order (non-finite values and
    samples outside the window left out)."""
    last: dict[int, tuple[float, float]] = {}
    for t, v in points:
        if not (math.isfinite(t) and math.isfinite(v)) or not w.start <= t <= w.end:
            continue
        b = math.floor((t - w.start) / w.step + EPSILON)
        if b not in last or t >= last[b][0]:
            last[b] = (t, v)
    return [last[b] for b in sorted(last)]


def series_figure(
    points: Iterable[tuple[float, float]], w: Window, counter: bool
) -> SeriesFigure | None:
    """A series' figure over the window (None: no sample in it)."""
    kept = bucketed(points, w)
    if not kept:
        return None
    rates: list[float] = []
    resets = 0
    for (t0, v0), (t1, v1) in zip(kept, kept[1:], strict=False):
        if counter and v1 < v0:
            resets += 1
            continue
        rates.append((v1 - v0) / (t1 - t0))
    rate = quantile_of(rates, w.quantile) if rates else None
    return SeriesFigure(rate, kept[-1][1], len(kept), resets)


Figures = Mapping[tuple[TopicPartition, str], SeriesFigure]


def figures_of(
    series: Mapping[tuple[TopicPartition, str], Iterable[tuple[float, float]]], w: Window
) -> dict[tuple[TopicPartition, str], SeriesFigure]:
    """Every series' figure (the driver's step 1-3; Spark's is ``spark.history``)."""
    out = {}
    for (tp, metric), points in series.items():
        f = series_figure(points, w, is_counter(metric))
        if f is not None:
            out[(tp, metric)] = f
    return out


def _missing(tp: TopicPartition, figs: Figures) -> str | None:
    gone = [m for m in PARTITION_METRICS if (tp, m) not in figs]
    if gone:
        return f"partition {tp}: no {' or '.join(gone)} series in the window"
    if figs[(tp, SIZE)].last < 0 or figs[(tp, START)].last > figs[(tp, END)].last:
        # read back from a store anything may have written: a value no broker reports
        return (
            f"partition {tp}: its last size ({figs[(tp, SIZE)].last:g}) or offsets "
            f"({figs[(tp, START)].last:g}..{figs[(tp, END)].last:g}) are not a log's"
        )
    few = [m for m in (END, SIZE) if figs[(tp, m)].rate is None]
    if few:
        return (
            f"partition {tp}: no rate of {' or '.join(few)} in the window (fewer than two "
            "samples a step apart, or every interval a reset)"
        )
    return None


def loads_of(
    tps: Iterable[TopicPartition], figs: Figures, groups_known: bool
) -> tuple[dict[TopicPartition, PartitionLoad], list[str]]:
    """Each partition's load from its series' figures (step 4), and what is unknown.
    ``groups_known``: whether any group's committed offsets were found at all."""
    unread: list[str] = []
    if not groups_known:
        unread.append(
            "no consumer group's committed offsets (kafka_consumergroup_current_offset, or "
            f"{GROUP_PREFIX}GROUP in an export) in the window: fetch bytes/s and groups unknown"
        )
    groups: dict[TopicPartition, list[SeriesFigure]] = {}
    for (tp, metric), f in figs.items():
        if metric.startswith(GROUP_PREFIX):
            groups.setdefault(tp, []).append(f)
    out: dict[TopicPartition, PartitionLoad] = {}
    for tp in tps:
        why = _missing(tp, figs)
        if why is not None:
            unread.append(why)
            continue
        end, start, size = (figs[(tp, m)] for m in PARTITION_METRICS)
        span = end.last - start.last
        per_offset = size.last / span if span > 0 else 0.0
        msgs = float(end.rate or 0.0)
        fetch = math.fsum(g.rate for g in groups.get(tp, []) if g.rate is not None)
        out[tp] = PartitionLoad(
            produce_bytes_s=msgs * per_offset,
            produce_msgs_s=msgs,
            fetch_bytes_s=fetch * per_offset,
            consumer_groups=len(groups.get(tp, [])),
            growth_bytes_s=float(size.rate or 0.0),
        )
    return out, unread


def shown(url: str) -> str:
    """``url`` as a message may show it: scheme, host, port and path (no user, password or
    query string, where a token may sit)."""
    try:
        u = urllib.parse.urlsplit(url)
        host = u.hostname or "?"
        port = f":{u.port}" if u.port else ""
    except ValueError:
        return "<a malformed URL>"
    host = f"[{host}]" if ":" in host else host
    return f"{u.scheme}://{host}{port}{u.path}"


def check_url(url: str) -> str:
    """The server URL (no trailing slash), or UsageError saying what is wrong with it."""
    try:
        u = urllib.parse.urlsplit(url)
        u.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise UsageError(f"--load-from prometheus:{shown(url)}: a bad URL or port") from None
    if u.scheme not in ("http", "https") or not u.hostname:
        raise UsageError(f"--load-from prometheus:{shown(url)}: not an http:// or https:// URL")
    if u.username or u.password:
        raise UsageError(
            f"--load-from prometheus:{shown(url)}: credentials in the URL are refused (they would "
            "be echoed in messages); put an authenticating proxy on loopback instead"
        )
    if u.query or u.fragment:
        raise UsageError(
            f"--load-from prometheus:{shown(url)}: a server URL takes no query string or "
            "fragment (not shown: it may hold a token)"
        )
    return url.rstrip("/")


@dataclass(frozen=True)
class LoadHistory:
    """Where a snapshot's loads come from when not sampled: ``source`` is
    ``prometheus:URL`` or ``parquet:PATH`` (a metrics export, reduced on Spark); the rates'
    ``quantile`` over ``window`` seconds in buckets of ``step`` seconds, ending at ``until``
    (epoch seconds; default: now for Prometheus, the export's latest sample for Parquet)."""

    source: str
    window: float = 7 * 86_400.0
    quantile: str = "p95"
    step: float = 300.0
    until: float | None = None

    def kind(self) -> tuple[str, str]:
        kind, sep, where = self.source.partition(":")
        if kind not in ("prometheus", "parquet") or not sep or not where.strip():
            raise UsageError(
                f"--load-from {self.source.split('@')[-1]!r}: prometheus:URL or parquet:PATH"
            )
        return kind, where.strip()

    def check(self) -> None:
        """Every option checked before the cluster is asked anything."""
        kind, where = self.kind()
        Window.ending(self.until or time.time(), self.window, self.step, self.quantile)
        if kind == "prometheus":
            check_url(where)
        elif "://" not in where and not os.path.exists(where):  # hdfs://, s3a://: Spark's
            raise UsageError(f"--load-from parquet:{where}: no such file or directory")
