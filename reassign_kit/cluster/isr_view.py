"""The Admin API's view of ISR for the health probe: which partitions are under min
ISR, and how many eligible leader replicas (KIP-966's ELR) each still has.

Where every broker lists DescribeTopicPartitions (API 75) and the feature
``eligible.leader.replicas.version`` is finalized >= 1, ISR and ELR come from that API (one
answer: both from the same instant); elsewhere, or when that call fails, from the metadata as
before, with ELR unknown (None, and the reason said) — never an exception, and never a
different pause: under min ISR is judged on the ISR alone either way (ELR members make a clean
election possible; they do not make copying more data safe).

Only the topics the metadata shows with a partition under min ISR are described again (a
healthy cluster costs one metadata call per sample, as before). The parts that read the answers
are pure (``rows_from_dtp``, ``rows_from_metadata``, ``merged``, ``under_min_isr``);
``read_dtp`` pages through the API with kafka-python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..health.signals import PartitionIsr
from ..model import TopicPartition
from .capabilities import DESCRIBE_TOPIC_PARTITIONS, ELR, Capabilities

PAGE_PARTITIONS = 2000  # DescribeTopicPartitions' response limit per page (the API's default)
MAX_PAGES = 1000  # a cursor that never ends (a broker bug) stops here: 2 M partitions


@dataclass(frozen=True)
class IsrRow:
    """One partition's ISR size and ELR sizes (None: ELR not reported) from one answer."""

    tp: TopicPartition
    isr: int
    elr: int | None = None
    last_known_elr: int | None = None


def elr_unknown_why(caps: Capabilities | None) -> str | None:
    """Why ELR cannot be read from this cluster (None: it can)."""
    if caps is None:
        return "the brokers' capabilities could not be read"
    if caps.api is not None and caps.max_version(DESCRIBE_TOPIC_PARTITIONS) is None:
        return "the brokers do not list DescribeTopicPartitions (KIP-966, Kafka 3.7+)"
    if not caps.has(ELR):
        return ELR.missing()
    return None


def rows_from_dtp(topics: Iterable[Mapping[str, Any]], skip: str | None = None) -> list[IsrRow]:
    """DescribeTopicPartitions' topics (kafka-python's dicts) as rows; a topic or partition
    answered with an error (deleted meanwhile) is left out, as is the topic ``skip``."""
    out = []
    for t in topics:
        name = t.get("name")
        if not name or t.get("error_code") or name == skip:
            continue
        for p in t.get("partitions") or ():
            if p.get("error_code"):
                continue
            out.append(
                IsrRow(
                    TopicPartition(str(name), int(p["partition_index"])),
                    len(p.get("isr_nodes") or ()),
                    # kafka-python gives None for an empty list: the API was read, so 0
                    len(p.get("eligible_leader_replicas") or ()),
                    len(p.get("last_known_elr") or ()),
                )
            )
    return out


def rows_from_metadata(topics: Mapping[str, Any]) -> list[IsrRow]:
    """confluent-kafka's TopicMetadata (``list_topics``) as rows, ELR unknown."""
    return [
        IsrRow(TopicPartition(name, p.id), len(p.isrs))
        for name, t in topics.items()
        for p in t.partitions.values()
    ]


def under_min_isr(
    rows: Iterable[IsrRow], min_isr: Callable[[str], int]
) -> dict[TopicPartition, PartitionIsr]:
    """The partitions whose ISR is below their topic's min ISR, each with its ISR / ELR."""
    out = {}
    for r in rows:
        need = min_isr(r.tp.topic)
        if r.isr < need:
            out[r.tp] = PartitionIsr(r.isr, need, r.elr, r.last_known_elr)
    return out


def merged(dtp: list[IsrRow], metadata: Iterable[IsrRow]) -> list[IsrRow]:
    """DescribeTopicPartitions' rows, and the metadata's for every topic that answer lacks
    (not asked, or answered with an error): a partial answer never hides a partition."""
    covered = {r.tp.topic for r in dtp}
    return dtp + [r for r in metadata if r.tp.topic not in covered]


def read_dtp(kp: Any, topics: list[str], limit: int = PAGE_PARTITIONS) -> list[dict[str, Any]]:
    """Every page of DescribeTopicPartitions for ``topics`` (kafka-python's admin client)."""
    out: list[dict[str, Any]] = []
    cursor = None
    for _ in range(MAX_PAGES):
        got = kp.describe_topic_partitions(topics, response_partition_limit=limit, cursor=cursor)
        out += list(got.get("topics") or ())
        cursor = got.get("next_cursor")
        if not cursor:
            return out
    raise RuntimeError(f"DescribeTopicPartitions: still paging after {MAX_PAGES} pages")
