"""KIP-179 progress report: per partition and broker of a plan, how far along, how fast, when done.

Per (partition, target broker) one of KIP-179's statuses: ``In sync``, ``Behind: …``,
``Unknown topic``, ``Unknown partition``, ``Unknown broker``, ``Broker does not host this
partition``; per partition ``Done`` / ``Pending`` / ``Moving (step i of n)``; and the plan as
a whole.

What "behind" is based on — only what the Admin API can tell honestly:

- ISR membership (Metadata): a replica in the ISR is ``In sync``; one outside it is behind.
- Bytes (DescribeLogDirs): a follower's log size against the leader's log size gives bytes
  still to copy and a percentage. Segment sizes of a follower and its leader can differ a
  little (different roll times), so this is an estimate, exact only in direction.
- Messages: a follower's message lag is known only to its leader (KIP-179's ReplicaStatus was
  never built), so it is not reported; a replica moving between log dirs of one broker is the
  exception: DescribeLogDirs gives its future log's offset lag, reported as messages.

Rates and ETAs come from samples (remaining bytes over time): the journal's ``sample`` events
and/or successive observations; rate = drop of remaining bytes over a sliding window, ETA =
remaining / rate. Pending moves count their whole size, so the plan's ETA assumes the current
throughput goes on. Pure core (``Observation`` → ``ProgressReport``) + ``observe`` (one round
of Admin calls through the gateway) + ``watch`` (a terminal view that refreshes in place).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..cluster.gateway import Gateway, ReplicaLogInfo
from ..errors import ReassignKitError
from ..model import PartitionState, Plan, TopicPartition, is_complete
from .eta import ETA_WINDOW_S, window_rates

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

        return pd.DataFrame([r.__dict__ for r in self.replicas], columns=_cols(ReplicaRow))

    def partitions_pandas(self):
        import pandas as pd

        return pd.DataFrame([r.__dict__ for r in self.partitions], columns=_cols(PartitionRow))

    def brokers_pandas(self):
        import pandas as pd

        return pd.DataFrame([r.__dict__ for r in self.brokers], columns=_cols(BrokerRow))

    def series(self) -> list[dict[str, Any]]:
        """Long-format points for the charts: one per plan / partition / broker at ``ts``
        (``level``, ``key``, ``pct``, ``bytes_remaining``, ``rate_bps``, ``eta_s``)."""
        pts = [
            _pt(self.ts, "plan", "plan", self.pct, self.bytes_remaining, self.rate_bps, self.eta_s)
        ]
        for p in self.partitions:
            key = f"{p.topic}-{p.partition}"
            pts.append(
                _pt(self.ts, "partition", key, p.pct, p.bytes_remaining, p.rate_bps, p.eta_s)
            )
        for b in self.brokers:
            pts.append(
                _pt(self.ts, "broker", str(b.broker), None, b.bytes_remaining, b.rate_bps, b.eta_s)
            )
        return pts

    def sample(self) -> Sample:
        return Sample(self.ts, _remaining_of(self.replicas))

    def sample_event(self) -> dict[str, Any]:
        """Fields of a journal ``sample`` event that ``samples_from_events`` reads back."""
        rem = _remaining_of(self.replicas)
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
                f"{p.topic}-{p.partition}: {p.status}  {_fmt_pct(p.pct)}  "
                f"{_fmt_bytes(p.bytes_remaining)} to copy  {_fmt_rate(p.rate_bps)}  "
                f"ETA {_fmt_eta(p.eta_s)}"
            )
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self) -> str:
        return (
            f"plan: {self.status}  {_fmt_pct(self.pct)}  {_fmt_bytes(self.bytes_remaining)} "
            f"of {_fmt_bytes(self.bytes_total)} to copy  {_fmt_rate(self.rate_bps)}  "
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
                _fmt_rate(r.rate_bps) if r.kind == "behind" else "",
                _fmt_eta(r.eta_s) if r.kind == "behind" else "",
            )
        more = len(rows) - max_rows
        parts: list[Any] = [t]
        if more > 0:
            parts.append(Text(f"… {more} more rows (in sync last)"))
        parts.append(Text(self.summary(), style="bold"))
        return Group(*parts)


def _cols(cls: type) -> list[str]:
    return list(cls.__dataclass_fields__)


def _pt(ts, level, key, pct, rem, rate, eta) -> dict[str, Any]:
    return {
        "ts": ts,
        "level": level,
        "key": key,
        "pct": pct,
        "bytes_remaining": rem,
        "rate_bps": rate,
        "eta_s": eta,
    }


def _remaining_of(rows: Iterable[ReplicaRow]) -> dict[ReplicaKey, int]:
    out = {}
    for r in rows:
        if r.kind == "in_sync":
            out[(r.topic, r.partition, r.broker)] = 0
        elif r.bytes_behind is not None:
            out[(r.topic, r.partition, r.broker)] = r.bytes_behind
    return out


# ------------------------------------------------------------------------------ pure core


def _logs_by_replica(
    logs: Iterable[ReplicaLogInfo],
) -> tuple[
    dict[tuple[TopicPartition, int], ReplicaLogInfo],
    dict[tuple[TopicPartition, int], ReplicaLogInfo],
]:
    current: dict[tuple[TopicPartition, int], ReplicaLogInfo] = {}
    future: dict[tuple[TopicPartition, int], ReplicaLogInfo] = {}
    for li in logs:
        (future if li.is_future else current)[(TopicPartition(*li.tp), li.broker)] = li
    return current, future


def replica_status(obs: Observation) -> list[ReplicaRow]:
    """KIP-179's per (partition, target broker) status, rates left empty."""
    current, future = _logs_by_replica(obs.logs)
    rows: list[ReplicaRow] = []
    for mv in obs.plan:
        tp = mv.tp
        st = obs.states.get(tp)
        n_parts = obs.partition_counts.get(tp.topic)
        leader_log = None
        if st is not None and st.leader is not None:
            leader_log = current.get((tp, st.leader))
        leader_bytes = leader_log.size_bytes if leader_log is not None else None
        for b in mv.replicas:
            base = {"topic": tp.topic, "partition": tp.partition, "broker": b}
            if n_parts is None:
                rows.append(ReplicaRow(**base, status=UNKNOWN_TOPIC, kind="unknown_topic"))
            elif not 0 <= tp.partition < n_parts or st is None:
                rows.append(ReplicaRow(**base, status=UNKNOWN_PARTITION, kind="unknown_partition"))
            elif b not in obs.brokers:
                rows.append(ReplicaRow(**base, status=UNKNOWN_BROKER, kind="unknown_broker"))
            elif b not in st.replicas:
                rows.append(
                    ReplicaRow(
                        **base,
                        status=NOT_HOSTED,
                        kind="not_hosted",
                        basis="replica list",
                        size_bytes=0,
                        leader_bytes=leader_bytes,
                        bytes_behind=leader_bytes,
                        pct=0.0,
                    )
                )
            elif (tp, b) in future:
                fut = future[(tp, b)]
                cur = current.get((tp, b))
                pct = _pct(fut.size_bytes, cur.size_bytes if cur else None)
                rows.append(
                    ReplicaRow(
                        **base,
                        status=f"{BEHIND}: {fut.offset_lag} messages behind (moving to log dir "
                        f"{fut.log_dir}; offset lag from DescribeLogDirs)",
                        kind="behind",
                        basis="DescribeLogDirs future-log offset lag",
                        size_bytes=fut.size_bytes,
                        leader_bytes=cur.size_bytes if cur else None,
                        bytes_behind=max(0, cur.size_bytes - fut.size_bytes) if cur else None,
                        messages_behind=fut.offset_lag,
                        pct=pct,
                    )
                )
            elif b in st.isr:
                mine = current.get((tp, b))
                rows.append(
                    ReplicaRow(
                        **base,
                        status=IN_SYNC,
                        kind="in_sync",
                        basis="ISR",
                        size_bytes=mine.size_bytes if mine else None,
                        leader_bytes=leader_bytes,
                        bytes_behind=0,
                        pct=100.0,
                    )
                )
            else:
                mine = current.get((tp, b))
                if mine is not None and leader_bytes is not None:
                    gap = max(0, leader_bytes - mine.size_bytes)
                    pct = _pct(mine.size_bytes, leader_bytes)
                    status = (
                        f"{BEHIND}: {gap} bytes ({_fmt_pct(pct)} of leader's log, "
                        "from DescribeLogDirs; not in ISR)"
                    )
                    rows.append(
                        ReplicaRow(
                            **base,
                            status=status,
                            kind="behind",
                            basis="ISR + DescribeLogDirs sizes",
                            size_bytes=mine.size_bytes,
                            leader_bytes=leader_bytes,
                            bytes_behind=gap,
                            pct=pct,
                        )
                    )
                else:
                    why = "no leader" if st.leader is None else "log size unknown"
                    rows.append(
                        ReplicaRow(
                            **base,
                            status=f"{BEHIND}: not in ISR ({why})",
                            kind="behind",
                            basis="ISR",
                            size_bytes=mine.size_bytes if mine else None,
                            leader_bytes=leader_bytes,
                        )
                    )
    return rows


def _pct(have: int | None, of: int | None) -> float | None:
    if have is None or of is None:
        return None
    if of <= 0:
        return 100.0
    return max(0.0, min(100.0, 100.0 * have / of))


def _rate(
    history: Sequence[Sample], key_of: Callable[[Sample], int | None], now: Sample, window_s: float
) -> float | None:
    """Bytes/s by which the remaining amount dropped since the oldest sample in the window."""
    rem_now = key_of(now)
    if rem_now is None:
        return None
    ref = None
    for s in history:
        if s.ts < now.ts and now.ts - s.ts <= window_s and key_of(s) is not None:
            ref = s
            break
    if ref is None:
        return None
    dt = now.ts - ref.ts
    if dt <= 0:
        return None
    return (key_of(ref) - rem_now) / dt  # type: ignore[operator]


def _eta(remaining: int, rate: float | None) -> float | None:
    if remaining <= 0:
        return 0.0
    if rate is None or rate <= 0:
        return None
    return remaining / rate


def build_report(
    obs: Observation,
    history: Sequence[Sample] = (),
    window_s: float = 60.0,
    history_only: bool = False,
) -> ProgressReport:
    """The report for ``obs``; ``history`` (oldest first) gives rates and ETAs.

    ``history_only``: the samples come from elsewhere (the journal), on another basis than
    this observation, so rates are measured between samples only (the newest one standing
    for "now", if it is within the window) and applied to the remaining bytes seen now."""
    rows = replica_status(obs)
    now = Sample(obs.ts, _remaining_of(rows))
    hist = sorted((s for s in history if s.ts <= obs.ts), key=lambda s: s.ts)
    if history_only:
        fresh = bool(hist) and obs.ts - hist[-1].ts <= window_s
        rate_now = hist[-1] if fresh else Sample(obs.ts, {})
        hist = hist[:-1] if fresh else []
    else:
        rate_now = now
        hist = [s for s in hist if s.ts < obs.ts]

    def summed(keys: list[ReplicaKey]) -> Callable[[Sample], int | None]:
        def f(s: Sample) -> int | None:
            vals = [s.remaining.get(k) for k in keys]
            if any(v is None for v in vals):
                return None
            return sum(vals)  # type: ignore[arg-type]

        return f

    out_rows = []
    for r in rows:
        key = (r.topic, r.partition, r.broker)
        if r.kind == "behind" and r.bytes_behind is not None:
            rate = _rate(hist, summed([key]), rate_now, window_s)
            r = _replace(r, rate_bps=rate, eta_s=_eta(r.bytes_behind, rate))
        out_rows.append(r)
    rows = out_rows

    # bytes that this plan copies: replicas behind now or at any earlier sample (a replica
    # already in sync when first seen copies nothing and does not dilute the percentages)
    moving = {k for k, v in now.remaining.items() if v > 0}
    moving |= {k for s in hist for k, v in s.remaining.items() if v > 0}

    def size_of(r: ReplicaRow) -> int:
        return (r.leader_bytes or 0) if (r.topic, r.partition, r.broker) in moving else 0

    parts: list[PartitionRow] = []
    part_rates: list[float] = []
    total_remaining = total_bytes = 0
    by_tp: dict[tuple[str, int], list[ReplicaRow]] = {}
    by_broker: dict[int, list[ReplicaRow]] = {}
    for r in rows:  # grouped once: the loops below cost what the plan holds, not its square
        by_tp.setdefault((r.topic, r.partition), []).append(r)
        by_broker.setdefault(r.broker, []).append(r)
    for mv in obs.plan:
        tp = mv.tp
        mine = by_tp.get((tp.topic, tp.partition), [])
        st = obs.states.get(tp)
        unknown = [r for r in mine if r.kind.startswith("unknown")]
        if any(r.kind in ("unknown_topic", "unknown_partition") for r in unknown):
            parts.append(PartitionRow(tp.topic, tp.partition, unknown[0].status, (), mv.replicas))
            continue
        step = obs.step_info.get(tp)
        if is_complete(mv.replicas, st):
            status = DONE
        elif step is not None:
            status = f"{MOVING} (step {step[0]} of {step[1]})"
        elif st is not None and st.reassigning:
            status = f"{MOVING} (step 1 of 1)" if st.target == tuple(mv.replicas) else MOVING
        elif st is not None and set(st.replicas) > set(mv.replicas):
            # every target replica is there plus old ones: only a reassignment gets here (the
            # controller may already have finished while metadata still shows the old list)
            status = MOVING
        else:
            status = PENDING
        keys = [(r.topic, r.partition, r.broker) for r in mine if r.bytes_behind is not None]
        rem = sum(r.bytes_behind or 0 for r in mine)
        size = sum(size_of(r) for r in mine)
        if status == DONE:
            rem = 0
        total_remaining += rem
        total_bytes += size
        rate = _rate(hist, summed(keys), rate_now, window_s) if keys else None
        if rate is None:  # partition-level samples (the executor's): bytes copied per step
            pk = [k for k in rate_now.remaining if k[:2] == tuple(tp) and k[2] < 0]
            rate = _rate(hist, summed(pk), rate_now, window_s) if pk else None
        if rate is not None:
            part_rates.append(rate)
        parts.append(
            PartitionRow(
                tp.topic,
                tp.partition,
                status,
                st.replicas if st else (),
                mv.replicas,
                step[0] if step else None,
                step[1] if step else None,
                rem,
                100.0 if status == DONE else _pct(size - rem, size),
                rate,
                _eta(rem, rate),
            )
        )

    brokers: list[BrokerRow] = []
    for b in sorted(by_broker):
        mine = by_broker[b]
        keys = [(r.topic, r.partition, r.broker) for r in mine if r.bytes_behind is not None]
        rem = sum(r.bytes_behind or 0 for r in mine)
        rate = _rate(hist, summed(keys), rate_now, window_s) if keys else None
        brokers.append(
            BrokerRow(
                b,
                len(mine),
                sum(r.kind == "in_sync" for r in mine),
                sum(r.kind == "behind" for r in mine),
                sum(r.kind == "not_hosted" for r in mine),
                sum(r.kind.startswith("unknown") for r in mine),
                rem,
                rate,
                _eta(rem, rate),
            )
        )

    all_keys = [k for k in rate_now.remaining if k[2] >= 0]
    rate = _rate(hist, summed(all_keys), rate_now, window_s) if all_keys else None
    if rate is None and part_rates:
        rate = sum(part_rates)
    eta, eta_reason = plan_eta(total_remaining, rate, brokers, bool(hist))
    n_done = sum(p.status == DONE for p in parts)
    if parts and n_done == len(parts):
        status = DONE
    elif len(parts) == 1:
        status = parts[0].status
    elif any(p.status.startswith(MOVING) for p in parts) or n_done:
        status = f"{MOVING} ({n_done} of {len(parts)} partitions done)"
    else:
        status = PENDING
    return ProgressReport(
        obs.ts,
        status,
        tuple(rows),
        tuple(parts),
        tuple(brokers),
        total_remaining,
        total_bytes,
        100.0 if status == DONE else _pct(total_bytes - total_remaining, total_bytes),
        rate,
        eta,
        None if status == DONE else eta_reason,
    )


def plan_eta(
    remaining: int,
    rate: float | None,
    brokers: Sequence[BrokerRow],
    sampled: bool,
    cap: float | None = None,
) -> tuple[float | None, str | None]:
    """The plan's ETA and what it rests on: the larger of two bounds.

    - Per broker: the plan ends when its slowest broker has taken in all it must (bytes
      still to come in over the rate it takes them in at) — not the total over the total
      rate, which a fast idle broker would make look short. A broker with nothing in flight
      now (queued behind a cap or a step) is counted at ``cap`` (the throttle), else at the
      fastest broker's rate; every rate is capped by ``cap`` (Kafka's replication quota
      averages over ~11 s, so a burst above it does not last).
    - Overall: everything left over the plan's rate (``rate``, bytes/s over the window), the
      bound when the caps, not the brokers, set the pace (one move at a time, steps).

    Without a rate yet, no number but the reason; a broker with moves in flight that took in
    nothing in the window (stalled) is named."""
    if remaining <= 0:
        return 0.0, None
    if not sampled:
        return None, "no earlier sample yet: a rate needs two"
    busy = [b for b in brokers if b.bytes_remaining > 0]
    stalled = [b.broker for b in busy if b.behind and b.rate_bps is not None and b.rate_bps <= 0]
    if stalled:
        return None, "broker(s) " + ", ".join(map(str, stalled)) + " took in nothing in the window"
    if rate is None or rate <= 0:
        return None, "no bytes copied in the window (stalled, throttled to 0, or just started)"

    def capped(r: float) -> float:
        return min(r, cap) if cap else r

    bound, why = remaining / rate, "at the run's rate"
    known = [capped(b.rate_bps) for b in busy if b.rate_bps is not None and b.rate_bps > 0]
    fastest = max(known) if known else capped(rate)
    for b in busy:
        r = capped(b.rate_bps) if b.rate_bps is not None and b.rate_bps > 0 else cap or fastest
        eta = b.bytes_remaining / r
        if eta >= bound:
            bound, why = eta, f"bound by broker {b.broker}"
    return bound, why


def _replace(r: ReplicaRow, **kw: Any) -> ReplicaRow:
    from dataclasses import replace

    return replace(r, **kw)


# ------------------------------------------------------------------------------ journal


def samples_from_events(events: Iterable[Mapping[str, Any]]) -> list[Sample]:
    """The journal's ``sample`` events, in either of two forms:

    - ``remaining: [[topic, partition, broker, bytes], ...]`` (``ProgressReport.sample_event``):
      bytes still to copy per replica;
    - ``moves: [{topic, partition, bytes, step, ...}, ...]`` (``execute.Run``): bytes copied so
      far by the step in flight; kept as (topic, partition, -step) -> -bytes, so that a drop of
      "remaining" is bytes copied and a new step starts a new series."""
    out = []
    for e in events:
        if e.get("event") != "sample" or "ts" not in e:
            continue
        rem: dict[ReplicaKey, int] = {}
        for item in e.get("remaining") or ():
            try:
                t, p, b, n = item
                rem[(str(t), int(p), int(b))] = int(n)
            except (TypeError, ValueError):
                continue
        for m in e.get("moves") or ():
            try:
                step = int(m.get("step") or 1)
                rem[(str(m["topic"]), int(m["partition"]), -max(1, step))] = -int(m["bytes"] or 0)
            except (TypeError, ValueError, KeyError, AttributeError):
                continue
        if rem:
            out.append(Sample(float(e["ts"]), rem))
    return out


def steps_from_events(events: Iterable[Mapping[str, Any]]) -> dict[TopicPartition, tuple[int, int]]:
    """Latest (step, of steps) per partition from ``step_submitted`` events; a partition's
    later plain ``submitted``/``completed`` without step fields does not erase it."""
    out: dict[TopicPartition, tuple[int, int]] = {}
    for e in events:
        if e.get("event") != "step_submitted" or "topic" not in e:
            continue
        i = e.get("step", e.get("index"))
        n = e.get("steps", e.get("total"))
        if isinstance(i, int) and isinstance(n, int):
            out[TopicPartition(e["topic"], int(e["partition"]))] = (i, n)
    return out


def bytes_copied(
    gateway: Gateway, adding: Mapping[TopicPartition, set[int]]
) -> tuple[dict[TopicPartition, int], dict[int, str]]:
    """Bytes the new replicas (``adding``: partition -> brokers it is being copied to) hold
    so far, summed per partition (``replica_bytes_copied``, summed)."""
    per, failed = replica_bytes_copied(gateway, adding)
    copied: dict[TopicPartition, int] = {}
    for (tp, _b), n in per.items():
        copied[tp] = copied.get(tp, 0) + n
    return copied, failed


def replica_bytes_copied(
    gateway: Gateway, adding: Mapping[TopicPartition, set[int]]
) -> tuple[dict[tuple[TopicPartition, int], int], dict[int, str]]:
    """Bytes each new replica (``adding``: partition -> brokers it is being copied to) holds
    so far, from one DescribeLogDirs call on those brokers asking for those partitions only
    (not every replica the brokers hold); when that call fails, one call per broker, so that
    a broker that cannot answer leaves only its own moves unmeasured. Returns (bytes per
    (partition, broker), broker -> error of those that failed)."""
    brokers = sorted(set().union(*adding.values())) if adding else []
    copied: dict[tuple[TopicPartition, int], int] = {}
    failed: dict[int, str] = {}
    if not brokers:
        return copied, failed
    tps = sorted(adding)  # only these partitions: the answer stays as small as the work
    try:
        infos = list(gateway.describe_log_dirs(brokers, tps))
    except ReassignKitError:
        infos = []
        for b in brokers:
            try:
                infos += gateway.describe_log_dirs([b], tps)
            except ReassignKitError as e:
                failed[b] = str(e)
    for r in infos:
        if r.tp in adding and r.broker in adding[r.tp]:
            key = (r.tp, r.broker)
            copied[key] = copied.get(key, 0) + r.size_bytes
    return copied, failed


# ------------------------------------------------------------------------------ the run's ETA
# (engine/eta.py computes it, issue 21; here: how the journal's samples show it)


def eta_text(eta_s: float | None, reason: str | None = None) -> str:
    """The ETA as every front end shows it: ``1m02s``, ``0h..`` or ``unknown (reason)``."""
    return _fmt_eta(eta_s, reason)


def rates_from_events(
    events: Iterable[Mapping[str, Any]], window_s: float = ETA_WINDOW_S
) -> dict[str, Any] | None:
    """The run's ETA as its journal's latest ``sample`` carrying one says (``eta.RunEta``):
    {ts, eta, low, high, reason, rates (per broker, over the window), total_rate, cap,
    changed (the throttle changed after it), tail}, or None without such a sample."""
    events = list(events)
    hist: list[tuple[float, dict[int, float], dict[int, float]]] = []
    last: Mapping[str, Any] | None = None
    changed_to = None
    for e in sorted(events, key=lambda e: float(e.get("ts") or 0.0)):
        if e.get("event") == "throttle_changed":
            changed_to = e.get("rate")
            continue
        if e.get("event") != "sample" or not isinstance(e.get("received"), Mapping):
            continue
        try:
            rec = {int(b): float(n) for b, n in e["received"].items()}
            busy = {int(b): float(n) for b, n in (e.get("busy") or {}).items()}
            hist.append((float(e["ts"]), rec, busy))
            last, changed_to = e, None
        except (TypeError, ValueError, KeyError, AttributeError):
            continue
    if last is None:
        return None
    rates, _ = window_rates(hist[:-1], hist[-1], window_s)
    cap = changed_to if changed_to is not None else last.get("throttle")
    rng = last.get("eta_range_s")
    eta = _number(last.get("eta_s"))
    low, high = (
        (_number(rng[0]), _number(rng[1]))
        if isinstance(rng, list | tuple) and len(rng) == 2
        else (eta, eta)
    )
    return {
        "ts": float(last["ts"]),
        "eta": eta,
        "low": low if low is not None else eta,
        "high": high if high is not None else eta,
        "reason": last.get("eta_reason") if isinstance(last.get("eta_reason"), str) else None,
        "rates": rates,
        "total_rate": _number(last.get("rate_bps")),
        "cap": float(cap) if isinstance(cap, int | float) and cap else None,
        "changed": changed_to is not None,
        "tail": float(_number(last.get("tail_s")) or 0.0),
        "bytes_left": _number(last.get("bytes_left")),
    }


def _event_tp(e: Mapping[str, Any]) -> TopicPartition | None:
    try:
        return TopicPartition(str(e["topic"]), int(e["partition"]))
    except (KeyError, TypeError, ValueError):
        return None


def behind_from_events(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """How far behind each moving partition is, from a journal's latest ``sample``: bytes it
    still has to copy (summed over its new replicas) and the percentage copied so far; one
    row per partition (``topic``, ``partition``, ``state``, ``behind_bytes``, ``percent``,
    ``detail``). Both sample forms count: ``remaining`` per replica
    (``ProgressReport.sample_event``) and ``moves`` with bytes copied (``Run``'s samples,
    against the partition's size times its new replicas). Finished moves are left out."""
    peak: dict[TopicPartition, float] = {}
    latest: dict[tuple[str, int, int], float] = {}
    finished: set[TopicPartition] = set()
    moves_rows: dict[TopicPartition, Mapping[str, Any]] = {}
    n_new: dict[TopicPartition, int] = {}
    for e in sorted(events, key=lambda e: float(e.get("ts") or 0.0)):
        kind, tp = e.get("event"), _event_tp(e)
        if kind == "submitted" and "target" in e and tp is not None:
            cur = set(e.get("current") or ())
            n_new[tp] = max(1, len([b for b in e["target"] if b not in cur]))
        if kind == "sample" and "moves" in e:
            moves_rows = {
                t: row
                for row in e.get("moves") or ()
                if isinstance(row, Mapping) and (t := _event_tp(row)) is not None
            }
        if kind == "sample" and "remaining" in e:
            latest = {}
            for item in e.get("remaining") or ():
                try:
                    t, p, b, n = item
                    latest[(str(t), int(p), int(b))] = float(n)
                except (TypeError, ValueError):
                    continue
            per: dict[TopicPartition, float] = {}
            for (t, p, _b), n in latest.items():
                per[TopicPartition(t, p)] = per.get(TopicPartition(t, p), 0.0) + n
            for t, n in per.items():
                peak[t] = max(peak.get(t, 0.0), n)
        elif tp is not None and (
            (kind == "completed" and not _intermediate(e)) or kind in ("cancelled", "failed")
        ):
            finished.add(tp)
    per_tp: dict[TopicPartition, list[tuple[int, float]]] = {}
    for (t, p, b), n in latest.items():
        per_tp.setdefault(TopicPartition(t, p), []).append((b, n))
    rows = []
    for tp, row in moves_rows.items():
        if tp in finished or tp in per_tp:
            continue
        size, got = _number(row.get("size")), _number(row.get("bytes"))
        if size is None or got is None:
            continue
        want = size * n_new.get(tp, 1)
        step = row.get("step")
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "state": "moving",
                "behind_bytes": max(0.0, want - got),
                "percent": 100.0 * got / want if want else None,
                "detail": f"step {step}" if step else "",
            }
        )
    for tp, reps in per_tp.items():
        if tp in finished:
            continue
        left = sum(n for _, n in reps)
        top = peak.get(tp, 0.0)
        behind = sorted(b for b, n in reps if n > 0)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "state": "moving" if left else "catching up",
                "behind_bytes": left,
                "percent": (100.0 * (1 - left / top)) if top else None,
                "detail": f"new replica(s) on broker(s) {behind} behind" if behind else "",
            }
        )
    return rows


def _intermediate(e: Mapping[str, Any]) -> bool:
    """A ``completed`` of an intermediate step does not finish the move."""
    if e.get("final") is False:
        return True
    step, steps = e.get("step"), e.get("steps")
    return isinstance(step, int) and isinstance(steps, int) and step < steps


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


# ------------------------------------------------------------------------------ I/O


def observe(
    gateway: Gateway,
    plan: Plan,
    events: Iterable[Mapping[str, Any]] = (),
    clock: Callable[[], float] = time.time,
) -> Observation:
    """One round of Admin calls (metadata, reassignments, DescribeLogDirs) for ``plan``."""
    counts = gateway.topic_partition_counts(plan.topics())
    live = frozenset(b.id for b in gateway.brokers())
    known = [
        m.tp for m in plan if m.tp.topic in counts and 0 <= m.tp.partition < counts[m.tp.topic]
    ]
    states = gateway.describe_partitions(known) if known else {}
    involved = set()
    for tp in known:
        st = states.get(tp)
        involved.update(plan.by_tp()[tp].replicas)
        if st is not None:
            involved.update(st.replicas)
            if st.leader is not None:
                involved.add(st.leader)
    involved &= live
    logs: list[ReplicaLogInfo] = []
    if involved and known:
        logs = gateway.describe_log_dirs(sorted(involved), tps=known)
    return Observation(clock(), plan, counts, live, states, logs, steps_from_events(events))


class ProgressTracker:
    """Keeps the samples between reports so rates and ETAs have a history (no I/O)."""

    def __init__(self, plan: Plan, window_s: float = 60.0, samples: Iterable[Sample] = ()):
        self.plan = plan
        self.window_s = window_s
        self.samples: list[Sample] = sorted(samples, key=lambda s: s.ts)
        self.reports: list[ProgressReport] = []

    def update(self, obs: Observation) -> ProgressReport:
        rep = build_report(obs, self.samples, self.window_s)
        self.samples.append(rep.sample())
        cutoff = obs.ts - 2 * self.window_s
        self.samples = [s for s in self.samples if s.ts >= cutoff]
        self.reports.append(rep)
        return rep

    def series_pandas(self):
        """Every report's chart points (``ProgressReport.series``) as one long DataFrame."""
        import pandas as pd

        return pd.DataFrame([pt for r in self.reports for pt in r.series()])


def progress(
    gateway: Gateway,
    plan: Plan,
    events: Iterable[Mapping[str, Any]] = (),
    window_s: float = 60.0,
    clock: Callable[[], float] = time.time,
) -> ProgressReport:
    """One report now; rates and ETAs from the journal's ``sample`` events, if any."""
    events = list(events)
    obs = observe(gateway, plan, events, clock)
    rep = build_report(obs, samples_from_events(events), window_s, history_only=True)
    return with_run_eta(rep, rates_from_events(events, window_s))


def with_run_eta(rep: ProgressReport, info: Mapping[str, Any] | None) -> ProgressReport:
    """The report with the ETA of the run whose journal it read (``rates_from_events``): the
    finish time and range the run estimated at its latest sample, counted from now — what
    the paced CLI's line and the panel showed then. Unchanged without such a sample, or
    once the plan is done."""
    from dataclasses import replace

    if info is None or rep.done:
        return rep
    brokers = tuple(
        replace(b, rate_bps=info["rates"].get(b.broker, b.rate_bps)) for b in rep.brokers
    )
    rate = info["total_rate"] if info["total_rate"] is not None else rep.rate_bps
    eta, why = info["eta"], info["reason"]
    if eta is None:
        return replace(rep, brokers=brokers, rate_bps=rate, eta_s=None, eta_reason=why)
    age = rep.ts - info["ts"]
    low, high = info["low"], info["high"]
    if info["changed"]:
        why = f"{why}; the throttle changed after the run's latest sample"
    if not 0.0 <= age <= ETA_WINDOW_S:
        if ETA_WINDOW_S < age < 30 * 86400:
            why = f"{why}; from the run's sample {age:.0f} s ago (is it still running?)"
        # the sample is old (or on another clock: a model's): counted down by the bytes
        # moved since at the run's rate, not by the time
        was, r = info["bytes_left"], info["total_rate"]
        age = max(0.0, was - rep.bytes_remaining) / r if was is not None and r else 0.0
    return replace(
        rep,
        brokers=brokers,
        rate_bps=rate,
        eta_s=max(0.0, eta - age),
        eta_reason=why,
        eta_low_s=max(0.0, low - age),
        eta_high_s=max(0.0, high - age),
    )


def run_progress_line(sample: Mapping[str, Any]) -> str | None:
    """The paced run's progress line from one of its ``sample`` events (the paced CLI prints
    it, the panel shows it): percent of the bytes copied, how much, the rate, the ETA with
    its range and the finish time."""
    total, left = sample.get("bytes_total"), sample.get("bytes_left")
    if not isinstance(total, int | float) or not isinstance(left, int | float):
        return None
    pct = 100.0 if not total else _pct(int(total - left), int(total))
    rng = sample.get("eta_range_s")
    low, high = (
        (rng[0], rng[1]) if isinstance(rng, list | tuple) and len(rng) == 2 else (None, None)
    )
    ts = sample.get("ts")
    return (
        f"progress: {_fmt_pct(pct)}  {_fmt_bytes(int(left))} of {_fmt_bytes(int(total))} to "
        f"copy  {_fmt_rate(sample.get('rate_bps'))}  "
        + eta_range_text(
            _number(sample.get("eta_s")),
            sample.get("eta_reason") if isinstance(sample.get("eta_reason"), str) else None,
            _number(low),
            _number(high),
            _number(ts),
        )
    )


def eta_range_text(
    eta: float | None,
    reason: str | None,
    low: float | None,
    high: float | None,
    now: float | None,
) -> str:
    """``ETA 1m02s [55s–1m10s], finish 04:12:33 UTC [04:12:26–04:12:41]``: the point, the
    range (10th–90th percentile) and the finish time at ``now`` (a Unix time)."""
    text = f"ETA {eta_text(eta, reason)}"
    if eta is None:
        return text
    if low is not None and high is not None:
        text += f" [{eta_text(low)}–{eta_text(high)}]"
    if now is not None:
        text += f", finish {_fmt_clock(now + eta)}"
        if low is not None and high is not None:
            text += f" [{_fmt_clock(now + low)}–{_fmt_clock(now + high)}]"
    return text


def _fmt_clock(ts: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(ts))


def watch(
    gateway: Gateway,
    plan: Plan,
    interval_s: float = 2.0,
    events: Callable[[], Iterable[Mapping[str, Any]]] | None = None,
    until_done: bool = True,
    max_reports: int | None = None,
    console: Any = None,
    on_report: Callable[[ProgressReport], None] | None = None,
    tracker: ProgressTracker | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ProgressTracker:
    """A terminal view that refreshes in place (rich Live) until the plan is done (or
    ``max_reports``); Ctrl-C stops watching, never the reassignment."""
    from rich.live import Live

    tracker = tracker or ProgressTracker(plan)
    n = 0
    try:
        with Live(console=console, auto_refresh=False, transient=False) as live:
            while True:
                evs = list(events()) if events is not None else []
                rep = tracker.update(observe(gateway, plan, evs))
                # a paced run's journal: its own rates (the paced CLI's and the panel's ETA)
                rep = with_run_eta(rep, rates_from_events(evs, tracker.window_s))
                tracker.reports[-1] = rep
                live.update(rep.to_rich(), refresh=True)
                if on_report is not None:
                    on_report(rep)
                n += 1
                if (until_done and rep.done) or (max_reports is not None and n >= max_reports):
                    break
                sleep(interval_s)
    except KeyboardInterrupt:
        pass
    return tracker


# ------------------------------------------------------------------------------ formatting


def _fmt_pct(p: float | None) -> str:
    return "?%" if p is None else f"{p:.1f}%"


def _fmt_bytes(n: int | None) -> str:
    if n is None:
        return "? B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


def _fmt_rate(r: float | None) -> str:
    return "rate ?" if r is None else f"{_fmt_bytes(int(r))}/s"


def _fmt_eta(s: float | None, reason: str | None = None) -> str:
    if s is None:
        return f"unknown ({reason})" if reason else "?"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m{sec:02d}s" if h else f"{m}m{sec:02d}s"


# ------------------------------------------------------------------------------ Python API


def report(
    gateway: Gateway,
    plan: Plan | str | os.PathLike,
    journal: str | os.PathLike | Iterable[Mapping[str, Any]] | None = None,
    *,
    window_s: float = 60.0,
) -> ProgressReport:
    """The report of ``plan`` (a Plan or a JSON file path) on a gateway; ``journal`` (path or
    events) adds steps and rates. ``reassign_kit.progress`` (api.py) also takes a bootstrap
    string: it connects, calls this and closes."""
    from ..cluster.views import require_permissions
    from .journal import read_events

    require_permissions(gateway, "progress", ["DESCRIBE"])
    if isinstance(plan, str | os.PathLike):
        plan = Plan.read(os.fspath(plan))
    if journal is None:
        events: list[Mapping[str, Any]] = []
    elif isinstance(journal, str | os.PathLike):
        events = list(read_events(journal))
    else:
        events = list(journal)
    return progress(gateway, plan, events, window_s)
