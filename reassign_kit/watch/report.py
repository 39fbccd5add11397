"""KIP-179's progress report, as data (watch/progress.py's family): the statuses, the
observation it is built from (``Observation``), the samples of bytes still to copy
(``Sample``), a row per replica, partition and broker, and ``ProgressReport`` with its
tables, series, JSON and text."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.gateway import ReplicaLogInfo
from ..model import PartitionState, Plan, TopicPartition
from .text import eta_range_text, fmt_bytes, fmt_eta, fmt_pct, fmt_rate

IN_SYNC = "In sync"


BEHIND = "Behind"


UNKNOWN_TOPIC = "Unknown topic"


UNKNOWN_PARTITION = "Unknown partition"


UNKNOWN_BROKER = "Unknown broker"


NOT_HOSTED = "Broker does not host this partition"


DONE = "Done"


PENDING = "Pending"


MOVING = "Moving"


ReplicaKey = tuple[str, int, int]  # topic, partition, broker


@dataclass(frozen=True)
class Observation:
    """Everything the report needs, gathered at one instant (``observe`` fills it)."""

    ts: float
    plan: Plan
    partition_counts: Mapping[str, int]
    brokers: frozenset[int]
    states: Mapping[TopicPartition, PartitionState]
    logs: Sequence[ReplicaLogInfo] = ()
    step_info: Mapping[TopicPartition, tuple[int, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Sample:
    """Bytes still to copy per (topic, partition, broker) at ``ts`` (0 = in sync)."""

    ts: float
    remaining: Mapping[ReplicaKey, int]


@dataclass(frozen=True)
class ReplicaRow:
    topic: str
    partition: int
    broker: int
    status: str
    kind: str  # in_sync | behind | not_hosted | unknown_topic | unknown_partition | unknown_broker
    basis: str = ""  # what the status is based on
    size_bytes: int | None = None
    leader_bytes: int | None = None
    bytes_behind: int | None = None
    messages_behind: int | None = None
    pct: float | None = None
    rate_bps: float | None = None
    eta_s: float | None = None


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    status: str
    replicas: tuple[int, ...]
    target: tuple[int, ...]
    step: int | None = None
    steps: int | None = None
    bytes_remaining: int = 0
    pct: float | None = None
    rate_bps: float | None = None
    eta_s: float | None = None


@dataclass(frozen=True)
class BrokerRow:
    broker: int
    replicas: int
    in_sync: int
    behind: int
    not_hosted: int
    unknown: int
    bytes_remaining: int
    rate_bps: float | None = None
    eta_s: float | None = None


@dataclass(frozen=True)
class ProgressReport:
    """One report; ``to_pandas()`` is KIP-179's table (one row per partition and broker)."""

    ts: float
    status: str
    replicas: tuple[ReplicaRow, ...]
    partitions: tuple[PartitionRow, ...]
    brokers: tuple[BrokerRow, ...]
    bytes_remaining: int = 0
    bytes_total: int = 0
    pct: float | None = None
    rate_bps: float | None = None
    eta_s: float | None = None
    eta_reason: str | None = None  # why there is no ETA, or what it is bound by
    eta_low_s: float | None = None  # the range (a run's journal: 10th-90th percentile)
    eta_high_s: float | None = None

    @property
    def done(self) -> bool:
        return self.status == DONE

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame([r.__dict__ for r in self.replicas], columns=cols(ReplicaRow))

    def partitions_pandas(self):
        import pandas as pd

        return pd.DataFrame([r.__dict__ for r in self.partitions], columns=cols(PartitionRow))

    def brokers_pandas(self):
        import pandas as pd

        return pd.DataFrame([r.__dict__ for r in self.brokers], columns=cols(BrokerRow))

    def series(self) -> list[dict[str, Any]]:
        """Long-format points for the charts: one per plan / partition / broker at ``ts``
        (``level``, ``key``, ``pct``, ``bytes_remaining``, ``rate_bps``, ``eta_s``)."""
        pts = [
            chart_point(
                self.ts, "plan", "plan", self.pct, self.bytes_remaining, self.rate_bps, self.eta_s
            )
        ]
        for p in self.partitions:
            key = f"{p.topic}-{p.partition}"
            pts.append(
                chart_point(
                    self.ts, "partition", key, p.pct, p.bytes_remaining, p.rate_bps, p.eta_s
                )
            )
        for b in self.brokers:
            pts.append(
                chart_point(
                    self.ts, "broker", str(b.broker), None, b.bytes_remaining, b.rate_bps, b.eta_s
                )
            )
        return pts

    def sample(self) -> Sample:
        return Sample(self.ts, remaining_of(self.replicas))

    def sample_event(self) -> dict[str, Any]:
        """Fields of a journal ``sample`` event that ``samples_from_events`` reads back."""
        rem = remaining_of(self.replicas)
        return {"remaining": [[t, p, b, n] for (t, p, b), n in sorted(rem.items())]}

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "ts": self.ts,
            "status": self.status,
            "pct": self.pct,
            "bytes_remaining": self.bytes_remaining,
            "bytes_total": self.bytes_total,
            "rate_bps": self.rate_bps,
            "eta_s": self.eta_s,
            "eta_reason": self.eta_reason,
            "eta_low_s": self.eta_low_s,
            "eta_high_s": self.eta_high_s,
            "replicas": [r.__dict__ for r in self.replicas],
            "partitions": [{**p.__dict__, "replicas": list(p.replicas)} for p in self.partitions],
            "brokers": [b.__dict__ for b in self.brokers],
        }

    def render_text(self) -> str:
        """KIP-179's table, then one line per partition and the plan's summary."""
        rows = [("Topic", "Partition", "Broker", "Status")]
        rows += [(r.topic, str(r.partition), str(r.broker), r.status) for r in self.replicas]
        w = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {d}" for a, b, c, d in rows]
        lines.append("")
        for p in self.partitions:
            lines.append(
                f"{p.topic}-{p.partition}: {p.status}  {fmt_pct(p.pct)}  "
                f"{fmt_bytes(p.bytes_remaining)} to copy  {fmt_rate(p.rate_bps)}  "
                f"ETA {fmt_eta(p.eta_s)}"
            )
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self) -> str:
        return (
            f"plan: {self.status}  {fmt_pct(self.pct)}  {fmt_bytes(self.bytes_remaining)} "
            f"of {fmt_bytes(self.bytes_total)} to copy  {fmt_rate(self.rate_bps)}  "
            + eta_range_text(
                self.eta_s,
                self.eta_reason,
                self.eta_low_s,
                self.eta_high_s,
                self.ts if self.eta_low_s is not None else None,
            )
        )

    def to_rich(self, max_rows: int = 40):
        """A rich renderable (table + summary) for the terminal view."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        t = Table(title="reassignment progress (KIP-179)", expand=False)
        for c in ("Topic", "Partition", "Broker", "Status", "Rate", "ETA"):
            t.add_column(c)
        style = {"in_sync": "green", "behind": "yellow", "not_hosted": "cyan"}
        rows = sorted(self.replicas, key=lambda r: (r.kind == "in_sync", r.topic, r.partition))
        for r in rows[:max_rows]:
            t.add_row(
                r.topic,
                str(r.partition),
                str(r.broker),
                Text(r.status, style=style.get(r.kind, "red")),
                fmt_rate(r.rate_bps) if r.kind == "behind" else "",
                fmt_eta(r.eta_s) if r.kind == "behind" else "",
            )
        more = len(rows) - max_rows
        parts: list[Any] = [t]
        if more > 0:
            parts.append(Text(f"… {more} more rows (in sync last)"))
        parts.append(Text(self.summary(), style="bold"))
        return Group(*parts)


def cols(cls: type) -> list[str]:
    return list(cls.__dataclass_fields__)


def chart_point(ts, level, key, pct, rem, rate, eta) -> dict[str, Any]:
    return {
        "ts": ts,
        "level": level,
        "key": key,
        "pct": pct,
        "bytes_remaining": rem,
        "rate_bps": rate,
        "eta_s": eta,
    }


def remaining_of(rows: Iterable[ReplicaRow]) -> dict[ReplicaKey, int]:
    out = {}
    for r in rows:
        if r.kind == "in_sync":
            out[(r.topic, r.partition, r.broker)] = 0
        elif r.bytes_behind is not None:
            out[(r.topic, r.partition, r.broker)] = r.bytes_behind
    return out
