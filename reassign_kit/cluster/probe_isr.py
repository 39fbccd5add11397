"""The health probe's view of ISR (for ``cluster.probe.Probe``): every partition
outside the canary whose ISR is below its topic's ``min.insync.replicas``, each with its ISR,
min ISR and KIP-966's eligible leader replicas where the cluster reports them
(``isr_view``: DescribeTopicPartitions for the topics the metadata shows under min ISR, the
metadata alone elsewhere). One metadata call per sample on a healthy cluster; each topic's
min ISR read once, again every ``MIN_ISR_REFRESH_S`` and whenever a partition reads under it
(an operator may have just lowered it). Never raises: no view is None, with the reason."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from ..health.signals import PartitionIsr
from ..model import TopicPartition
from . import isr_view

log = logging.getLogger(__name__)

MIN_ISR_REFRESH_S = 30.0


class IsrWatch:
    """The ISR view through ``admin`` (confluent-kafka's AdminClient), the ``skip`` topic (the
    canary) left out. ``isr_gateway``: an ``AdminGateway`` whose kafka-python client reads
    ISR + ELR through DescribeTopicPartitions, unless ``elr_unknown`` says why the cluster
    cannot answer it."""

    def __init__(
        self,
        admin: Any,
        skip: str,
        timeout_s: float,
        isr_gateway: Any = None,
        elr_unknown: str | None = None,
    ):
        self._admin = admin
        self.skip = skip
        self.timeout_s = timeout_s
        self.isr_gateway = isr_gateway
        self.elr_unknown = elr_unknown
        self._elr_warned: str | None = None
        self._min_isr: dict[str, int] = {}
        self._min_isr_read = -1e18

    def read(
        self,
    ) -> tuple[
        frozenset[TopicPartition] | None,
        dict[TopicPartition, PartitionIsr] | None,
        str | None,
        str | None,
    ]:
        """Every partition (but the canary's) whose ISR is below its topic's min ISR, each
        with its ISR / min ISR / ELR; why ELR is unknown (None: counted); why no view at all."""
        try:
            md = self._admin.list_topics(timeout=min(5.0, self.timeout_s))
            topics = {n: t for n, t in md.topics.items() if t.error is None and n != self.skip}
            self._refresh_min_isr(sorted(topics))
            rows, elr_why = self._isr_rows(topics)
            out = isr_view.under_min_isr(rows, self._min_isr_of)
            if out:  # read their topics' min ISR again: an operator may have just lowered it
                self._refresh_min_isr(sorted({tp.topic for tp in out}), force=True)
                out = isr_view.under_min_isr(rows, self._min_isr_of)
            return frozenset(out), out, elr_why, None
        except Exception as e:  # noqa: BLE001 - no ISR view: the pause keeps its last state
            return None, None, None, f"probe: cannot read the ISR view: {e}"

    def _min_isr_of(self, topic: str) -> int:
        return self._min_isr.get(topic, 1)

    def _isr_rows(self, topics: Mapping[str, Any]) -> tuple[list[isr_view.IsrRow], str | None]:
        """The metadata's ISR; for the topics it shows under min ISR, ISR + ELR from
        DescribeTopicPartitions where the cluster answers it (else ELR unknown: a failed call
        warned once per reason, never raised)."""
        rows = isr_view.rows_from_metadata(topics)
        why = self.elr_unknown
        suspect = sorted({tp.topic for tp in isr_view.under_min_isr(rows, self._min_isr_of)})
        if why is not None or not suspect:
            return rows, why
        try:
            gw = self.isr_gateway
            raw = gw._kp_call("describe topic partitions", isr_view.read_dtp, gw.kp, suspect)
            return isr_view.merged(isr_view.rows_from_dtp(raw, skip=self.skip), rows), None
        except Exception as e:  # noqa: BLE001 - the metadata's ISR instead, ELR unknown
            why = f"DescribeTopicPartitions failed: {e}"
            if why != self._elr_warned:
                self._elr_warned = why
                log.warning("probe: %s; ISR from the metadata, ELR unknown", why)
        return rows, why

    def _refresh_min_isr(self, topics: list[str], force: bool = False) -> None:
        from confluent_kafka.admin import ConfigResource, ResourceType

        now = time.monotonic()
        new = topics if force else [t for t in topics if t not in self._min_isr]
        if not force and now - self._min_isr_read > MIN_ISR_REFRESH_S:
            new, self._min_isr_read = topics, now
        if not new:
            return
        res = [ConfigResource(ResourceType.TOPIC, t) for t in new]
        for r, fut in self._admin.describe_configs(res, request_timeout=self.timeout_s).items():
            try:
                entry = fut.result(self.timeout_s).get("min.insync.replicas")
                self._min_isr[r.name] = int(entry.value) if entry is not None else 1
            except Exception:  # noqa: BLE001 - a topic deleted meanwhile: 1 (never under)
                self._min_isr[r.name] = 1
