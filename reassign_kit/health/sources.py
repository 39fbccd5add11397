"""``--health-source``: which source a run's pace reads, and ``open_source`` that makes it.

``prometheus:URL`` (a Prometheus server's HTTP API), ``scrape:URL,...`` (the brokers' exporters,
``ID=URL`` where an exporter does not name its broker), ``probe`` (the tool's own canary; the
default when none is given: made by the caller's ``default_factory``, as the probe lives in
``reassign_kit.cluster``, a layer above this one) or ``probe:TOPIC`` (the probe on a canary
topic that is kept: created by the first run that needs it, reused and never deleted by the
next — Xinfra Monitor's way — so a run does not start by creating a topic, which disturbs the
cluster's acks=all producers for a second while its moves start). A metrics source whose sample is degraded
falls back to the probe for what it could not measure, when a ``default_factory`` is given.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from ..errors import UsageError
from . import queries
from .prom import PrometheusSource
from .scrape import ScrapeSource, parse_endpoints
from .signals import BrokerHealth, HealthSample, HealthSource

log = logging.getLogger(__name__)

KINDS = ("probe", "prometheus", "scrape")
OPTION = "--health-source"
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


@dataclass(frozen=True)
class SourceSpec:
    kind: str
    url: str | None = None
    endpoints: tuple[tuple[int | None, str], ...] = ()
    topic: str | None = None  # probe:TOPIC, a kept canary

    def __str__(self) -> str:
        if self.kind == "probe" and self.topic:
            return f"probe:{self.topic}"
        if self.kind == "prometheus":
            return f"prometheus:{self.url}"
        if self.kind == "scrape":
            return "scrape:" + ",".join(u if b is None else f"{b}={u}" for b, u in self.endpoints)
        return self.kind


def _check_url(url: str, what: str) -> str:
    u = urllib.parse.urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise UsageError(f"{OPTION}: {what} {url!r} is not an http:// or https:// URL")
    if u.username or u.password:
        # the spec is journaled (run_started's options): no credential may reach it
        raise UsageError(
            f"{OPTION}: {what} {u.scheme}://…@{u.hostname}: credentials in the URL are refused "
            "(they would be written to the journal)"
        )
    try:
        u.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise UsageError(f"{OPTION}: {what} {url!r} has a bad port") from None
    return url


def parse_spec(text: str) -> SourceSpec:
    """The option's value as a SourceSpec; UsageError naming the option and what is wrong."""
    if not isinstance(text, str) or not text.strip():
        raise UsageError(
            f"{OPTION} must be one of probe, probe:TOPIC, prometheus:URL, scrape:URL[,URL...]"
        )
    text = text.strip()
    kind, sep, rest = text.partition(":")
    if kind == "probe" and not sep:
        return SourceSpec("probe")
    if kind not in KINDS or not sep:
        raise UsageError(
            f"{OPTION} {text!r}: the kind must be one of probe, probe:TOPIC, prometheus:URL, "
            "scrape:URL[,URL...]"
        )
    if kind == "probe":
        topic = rest.strip()
        if not _TOPIC.fullmatch(topic) or topic in (".", ".."):
            raise UsageError(
                f"{OPTION} probe:TOPIC: {topic!r} is not a Kafka topic name (1-249 of "
                "a-z A-Z 0-9 . _ -)"
            )
        return SourceSpec("probe", topic=topic)
    if not rest.strip():
        raise UsageError(f"{OPTION} {kind}: needs a URL after '{kind}:'")
    if kind == "prometheus":
        if "," in rest:
            raise UsageError(f"{OPTION} prometheus: takes one server URL, got {rest!r}")
        return SourceSpec("prometheus", url=_check_url(rest.strip(), "Prometheus server"))
    try:
        eps = parse_endpoints(rest)
    except ValueError as e:
        raise UsageError(f"{OPTION} scrape: {e}") from None
    for _b, u in eps:
        _check_url(u, "exporter")
    brokers = [b for b, _ in eps if b is not None]
    if len(set(brokers)) != len(brokers):
        raise UsageError(f"{OPTION} scrape: a broker id is given twice")
    return SourceSpec("scrape", endpoints=tuple(eps))


def health_source_arg(text: str) -> str:
    """An argparse type: the spec checked, kept as its canonical text (journaled as is)."""
    import argparse

    try:
        return str(parse_spec(text))
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class FallbackSource:
    """A metrics source backed by the probe: while the metrics source is degraded, each value
    it could not measure is the probe's (if the probe measured it); ``degraded`` keeps saying
    why. The probe is made on first need and closed with this source."""

    def __init__(self, primary: HealthSource, fallback: Callable[[], HealthSource]):
        self.primary = primary
        self._make = fallback
        self._fallback: HealthSource | None = None
        self.name = f"{primary.name}+probe"

    def sample(self) -> HealthSample:
        s = self.primary.sample()
        if not s.degraded:
            return s
        try:
            if self._fallback is None:
                self._fallback = self._make()
            f = self._fallback.sample()
        except Exception as e:  # noqa: BLE001 - never an exception from sample
            return replace(s, degraded=f"{s.degraded}; the probe failed too: {e}")
        brokers = dict(s.brokers)
        for b, fh in f.brokers.items():
            brokers[b] = _merge(brokers.get(b), fh)
        return HealthSample(
            ts=s.ts,
            source=self.name,
            brokers=dict(sorted(brokers.items())),
            under_min_isr=s.under_min_isr if s.under_min_isr is not None else f.under_min_isr,
            degraded=f"{s.degraded}; using the probe" + (f" ({f.degraded})" if f.degraded else ""),
            # the ISR detail goes with the view it came from
            isr=s.isr if s.under_min_isr is not None else f.isr,
            elr_unknown=s.elr_unknown if s.under_min_isr is not None else f.elr_unknown,
        )

    def close(self) -> None:
        try:
            self.primary.close()
        finally:
            if self._fallback is not None:
                self._fallback.close()


def _merge(primary: BrokerHealth | None, fallback: BrokerHealth) -> BrokerHealth:
    if primary is None:
        return fallback
    changes = {
        k: getattr(fallback, k)
        for k in primary.__dataclass_fields__
        if k != "broker" and getattr(primary, k) is None
    }
    return replace(primary, **changes)


def open_source(
    spec: str | SourceSpec | None,
    *,
    brokers: Iterable[int] = (),
    timeout: float = 2.0,
    window: str = "1m",
    warn: Callable[[str], None] | None = None,
    default_factory: Callable[..., HealthSource] | None = None,
) -> HealthSource:
    """The source ``spec`` names (None or ``probe``: ``default_factory()``; ``probe:TOPIC``:
    ``default_factory(topic=TOPIC)``, the canary kept). ``brokers``: the
    cluster's brokers, each in every sample (all None when not measured); ``timeout``: the
    bound of one sample's HTTP calls; ``warn``: where the one warning per failure goes.
    With a ``default_factory``, a metrics source falls back to it while degraded."""
    s = parse_spec(spec) if isinstance(spec, str) else spec
    if s is None or s.kind == "probe":
        if default_factory is None:
            raise UsageError(f"{OPTION} probe: no probe available here (no default_factory)")
        return default_factory(topic=s.topic) if s is not None and s.topic else default_factory()
    if not timeout > 0:
        raise UsageError(f"the health source's timeout must be > 0 seconds, got {timeout}")
    queries.load()  # a bad RK_HEALTH_QUERIES file is refused here, not at the first sample
    src: HealthSource
    if s.kind == "prometheus":
        assert s.url is not None
        src = PrometheusSource(s.url, timeout=timeout, window=window, brokers=brokers, warn=warn)
    else:
        src = ScrapeSource(s.endpoints, timeout=timeout, brokers=brokers, warn=warn)
    return FallbackSource(src, default_factory) if default_factory is not None else src
