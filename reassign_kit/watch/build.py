"""KIP-179's progress, the pure core (watch/progress.py's family): an ``Observation`` (the
plan, the partitions' states, the log dirs' sizes) and samples in, a ``ProgressReport`` out —
each replica's status and bytes behind, rates and ETAs per partition, broker and plan."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ..cluster.gateway import ReplicaLogInfo
from ..model import PartitionState, TopicPartition, is_complete
from .report import (
    BEHIND,
    DONE,
    IN_SYNC,
    MOVING,
    NOT_HOSTED,
    PENDING,
    UNKNOWN_BROKER,
    UNKNOWN_PARTITION,
    UNKNOWN_TOPIC,
    BrokerRow,
    Observation,
    PartitionRow,
    ProgressReport,
    ReplicaKey,
    ReplicaRow,
    Sample,
    remaining_of,
)
from .text import fmt_pct, percent_of


def logs_by_replica(
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
    current, future = logs_by_replica(obs.logs)
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
            elif (tp, b) in future and b in st.replicas:
                rows.append(_dir_move_row(base, future[(tp, b)], current.get((tp, b))))
            else:
                rows.append(_hosted_row(base, st, current.get((tp, b)), leader_bytes))
    return rows


def _dir_move_row(
    base: dict[str, Any], fut: ReplicaLogInfo, cur: ReplicaLogInfo | None
) -> ReplicaRow:
    """A replica moving to another log dir on its broker: behind by its future log's lag."""
    pct = percent_of(fut.size_bytes, cur.size_bytes if cur else None)
    return ReplicaRow(
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


def _hosted_row(
    base: dict[str, Any],
    st: PartitionState,
    mine: ReplicaLogInfo | None,
    leader_bytes: int | None,
) -> ReplicaRow:
    """A target replica by the partition's replica list, its ISR and its log's size
    against the leader's: not hosted yet, in sync, or behind."""
    if base["broker"] not in st.replicas:
        return ReplicaRow(
            **base,
            status=NOT_HOSTED,
            kind="not_hosted",
            basis="replica list",
            size_bytes=0,
            leader_bytes=leader_bytes,
            bytes_behind=leader_bytes,
            pct=0.0,
        )
    if base["broker"] in st.isr:
        return ReplicaRow(
            **base,
            status=IN_SYNC,
            kind="in_sync",
            basis="ISR",
            size_bytes=mine.size_bytes if mine else None,
            leader_bytes=leader_bytes,
            bytes_behind=0,
            pct=100.0,
        )
    if mine is not None and leader_bytes is not None:
        gap = max(0, leader_bytes - mine.size_bytes)
        pct = percent_of(mine.size_bytes, leader_bytes)
        status = (
            f"{BEHIND}: {gap} bytes ({fmt_pct(pct)} of leader's log, "
            "from DescribeLogDirs; not in ISR)"
        )
        return ReplicaRow(
            **base,
            status=status,
            kind="behind",
            basis="ISR + DescribeLogDirs sizes",
            size_bytes=mine.size_bytes,
            leader_bytes=leader_bytes,
            bytes_behind=gap,
            pct=pct,
        )
    why = "no leader" if st.leader is None else "log size unknown"
    return ReplicaRow(
        **base,
        status=f"{BEHIND}: not in ISR ({why})",
        kind="behind",
        basis="ISR",
        size_bytes=mine.size_bytes if mine else None,
        leader_bytes=leader_bytes,
    )


def rate_over_window(
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


def eta_at_rate(remaining: int, rate: float | None) -> float | None:
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
    now = Sample(obs.ts, remaining_of(rows))
    rates = _Rates.of_history(obs.ts, now, history, window_s, history_only)
    out_rows = []
    for r in rows:
        key = (r.topic, r.partition, r.broker)
        if r.kind == "behind" and r.bytes_behind is not None:
            rate = rates.over([key])
            r = replace_row(r, rate_bps=rate, eta_s=eta_at_rate(r.bytes_behind, rate))
        out_rows.append(r)
    rows = out_rows

    # bytes that this plan copies: replicas behind now or at any earlier sample (a replica
    # already in sync when first seen copies nothing and does not dilute the percentages)
    moving = {k for k, v in now.remaining.items() if v > 0}
    moving |= {k for s in rates.hist for k, v in s.remaining.items() if v > 0}
    by_tp: dict[tuple[str, int], list[ReplicaRow]] = {}
    by_broker: dict[int, list[ReplicaRow]] = {}
    for r in rows:  # grouped once: the loops below cost what the plan holds, not its square
        by_tp.setdefault((r.topic, r.partition), []).append(r)
        by_broker.setdefault(r.broker, []).append(r)
    parts, part_rates, total_remaining, total_bytes = _partitions(obs, by_tp, rates, moving)
    brokers = [_broker_row(b, by_broker[b], rates) for b in sorted(by_broker)]

    rate = rates.over([k for k in rates.now.remaining if k[2] >= 0])
    if rate is None and part_rates:
        rate = sum(part_rates)
    eta, eta_reason = plan_eta(total_remaining, rate, brokers, bool(rates.hist))
    status = _plan_status(parts)
    return ProgressReport(
        obs.ts,
        status,
        tuple(rows),
        tuple(parts),
        tuple(brokers),
        total_remaining,
        total_bytes,
        100.0 if status == DONE else percent_of(total_bytes - total_remaining, total_bytes),
        rate,
        eta,
        None if status == DONE else eta_reason,
    )


class _Rates:
    """Rates measured over the samples of the window: ``hist`` (oldest first) up to ``now``
    (the observation, or the newest sample standing for it)."""

    def __init__(self, hist: list[Sample], now: Sample, window_s: float) -> None:
        self.hist, self.now, self.window_s = hist, now, window_s

    @classmethod
    def of_history(
        cls,
        ts: float,
        now: Sample,
        history: Sequence[Sample],
        window_s: float,
        history_only: bool,
    ) -> _Rates:
        """See ``build_report``: ``history_only`` measures between the samples only."""
        hist = sorted((s for s in history if s.ts <= ts), key=lambda s: s.ts)
        if history_only:
            fresh = bool(hist) and ts - hist[-1].ts <= window_s
            return cls(hist[:-1] if fresh else [], hist[-1] if fresh else Sample(ts, {}), window_s)
        return cls([s for s in hist if s.ts < ts], now, window_s)

    def over(self, keys: list[ReplicaKey]) -> float | None:
        """Bytes/s by which the remaining of ``keys`` dropped (None: none, or not measured)."""
        if not keys:
            return None
        return rate_over_window(self.hist, _summed(keys), self.now, self.window_s)


def _summed(keys: list[ReplicaKey]) -> Callable[[Sample], int | None]:
    def f(s: Sample) -> int | None:
        vals = [s.remaining.get(k) for k in keys]
        if any(v is None for v in vals):
            return None
        return sum(vals)  # type: ignore[arg-type]

    return f


def _partitions(
    obs: Observation,
    by_tp: dict[tuple[str, int], list[ReplicaRow]],
    rates: _Rates,
    moving: set[ReplicaKey],
) -> tuple[list[PartitionRow], list[float], int, int]:
    """Each partition's row, the rates measured, the bytes left and the bytes the plan copies
    (a replica's leader's size, when it is one that moves)."""
    parts: list[PartitionRow] = []
    part_rates: list[float] = []
    total_remaining = total_bytes = 0
    for mv in obs.plan:
        tp = mv.tp
        mine = by_tp.get((tp.topic, tp.partition), [])
        st = obs.states.get(tp)
        unknown = [r for r in mine if r.kind.startswith("unknown")]
        if any(r.kind in ("unknown_topic", "unknown_partition") for r in unknown):
            parts.append(PartitionRow(tp.topic, tp.partition, unknown[0].status, (), mv.replicas))
            continue
        step = obs.step_info.get(tp)
        status = _partition_status(mv.replicas, st, step)
        keys = [(r.topic, r.partition, r.broker) for r in mine if r.bytes_behind is not None]
        rem = sum(r.bytes_behind or 0 for r in mine)
        size = sum(
            (r.leader_bytes or 0) if (r.topic, r.partition, r.broker) in moving else 0 for r in mine
        )
        if status == DONE:
            rem = 0
        total_remaining += rem
        total_bytes += size
        rate = rates.over(keys)
        if rate is None:  # partition-level samples (the executor's): bytes copied per step
            rate = rates.over([k for k in rates.now.remaining if k[:2] == tuple(tp) and k[2] < 0])
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
                100.0 if status == DONE else percent_of(size - rem, size),
                rate,
                eta_at_rate(rem, rate),
            )
        )
    return parts, part_rates, total_remaining, total_bytes


def _partition_status(
    replicas: Sequence[int], st: PartitionState | None, step: tuple[int, int] | None
) -> str:
    if is_complete(replicas, st):
        return DONE
    if step is not None:
        return f"{MOVING} (step {step[0]} of {step[1]})"
    if st is not None and st.reassigning:
        return f"{MOVING} (step 1 of 1)" if st.target == tuple(replicas) else MOVING
    if st is not None and set(st.replicas) > set(replicas):
        # every target replica is there plus old ones: only a reassignment gets here (the
        # controller may already have finished while metadata still shows the old list)
        return MOVING
    return PENDING


def _broker_row(b: int, mine: list[ReplicaRow], rates: _Rates) -> BrokerRow:
    keys = [(r.topic, r.partition, r.broker) for r in mine if r.bytes_behind is not None]
    rem = sum(r.bytes_behind or 0 for r in mine)
    rate = rates.over(keys)
    return BrokerRow(
        b,
        len(mine),
        sum(r.kind == "in_sync" for r in mine),
        sum(r.kind == "behind" for r in mine),
        sum(r.kind == "not_hosted" for r in mine),
        sum(r.kind.startswith("unknown") for r in mine),
        rem,
        rate,
        eta_at_rate(rem, rate),
    )


def _plan_status(parts: list[PartitionRow]) -> str:
    n_done = sum(p.status == DONE for p in parts)
    if parts and n_done == len(parts):
        return DONE
    if len(parts) == 1:
        return parts[0].status
    if any(p.status.startswith(MOVING) for p in parts) or n_done:
        return f"{MOVING} ({n_done} of {len(parts)} partitions done)"
    return PENDING


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


def replace_row(r: ReplicaRow, **kw: Any) -> ReplicaRow:
    from dataclasses import replace

    return replace(r, **kw)
