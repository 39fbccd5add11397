"""What a health source reports, one sample at a time: the contract between the sources
(probe, Prometheus server, brokers' exporters) and the pacing controller.

A value a source could not measure is ``None`` — never 0, which would read as "healthy" — so
the controller can tell "no signal" (degrade, never speed up) from "good signal".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ..model import TopicPartition


@dataclass(frozen=True)
class BrokerHealth:
    """One broker's signals at one instant. Latencies in milliseconds, ratios in 0..1,
    rates in bytes/s.

    ``produce_p99_low_ms``: a 95% lower confidence bound of that p99, from a source that
    estimates it on a few messages (the probe: ~50 a window, whose p99 is their worst: a broker
    whose true p99 is just the objective reads over it in 40% of its windows);
    None where the p99 is the brokers' own over thousands of requests. The pace slows a
    broker only when this bound is over the objective."""

    broker: int
    produce_p99_ms: float | None = None
    produce_p99_low_ms: float | None = None
    produce_p50_ms: float | None = None
    fetch_follower_p99_ms: float | None = None
    request_handler_idle: float | None = None
    network_processor_idle: float | None = None
    under_replicated: int | None = None
    under_min_isr: int | None = None
    bytes_in: float | None = None
    bytes_out: float | None = None


@dataclass(frozen=True)
class PartitionIsr:
    """One partition under min ISR as the Admin API shows it. ``elr``: its eligible leader
    replicas (KIP-966: replicas out of the ISR that are still safe to elect), counted where
    the brokers report them; None when they do not (no DescribeTopicPartitions, or the
    feature ``eligible.leader.replicas.version`` off) — unknown, never 0."""

    isr: int
    min_isr: int
    elr: int | None = None
    last_known_elr: int | None = None


@dataclass(frozen=True)
class HealthSample:
    """Everything one source measured at ``ts`` (epoch seconds).

    ``under_min_isr`` lists the partitions seen under min ISR (None: not measured); the
    controller subtracts the plan's own partitions. ``isr``: for those partitions, what the
    Admin API showed (ISR size, min ISR, ELR size; None when the source reads no such detail,
    e.g. Prometheus); ``elr_unknown`` says why ELR is not counted there (None: counted).
    ``degraded`` says, in words, why this sample is weaker than asked (e.g. "prometheus at
    http://…: timeout; using the probe")."""

    ts: float
    source: str
    brokers: Mapping[int, BrokerHealth] = field(default_factory=dict)
    under_min_isr: frozenset[TopicPartition] | None = None
    degraded: str | None = None
    isr: Mapping[TopicPartition, PartitionIsr] | None = None
    elr_unknown: str | None = None


class HealthSource(Protocol):
    """A source of samples. ``sample`` must not raise for a sick endpoint: it returns a sample
    with ``degraded`` set and the values it could not read as None."""

    name: str

    def sample(self) -> HealthSample: ...

    def close(self) -> None: ...
