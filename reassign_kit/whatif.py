"""What-if before running: a plan's makespan predicted under each pacing policy,
by running the very executor against the simulator (``cluster.simulate``) set up like the
cluster — its partitions where they are now, their sizes, the throttle — and a calibration
learned from earlier journals of the same cluster (effective inbound rate per broker, the
fixed cost of one move). Nothing is sent to the cluster.

``calibrate(journals)`` learns the calibration: per broker, the bytes its new replicas
received divided by the time it had moves coming in (the union of their intervals), and per
move the fixed cost (the shortest move's duration less its copy time). Without a calibration
a broker takes in data at the throttle (or ``DEFAULT_RATE_BPS`` unthrottled) and a move costs
one poll interval."""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .cluster.quota import END_LOSS_BYTES, QUOTA_WINDOWS
from .cluster.simulate import SimCluster
from .errors import UsageError
from .model import PartitionState, Plan, TopicPartition
from .moves.journal import read_events
from .run.options import ExecuteOptions
from .run.run import Run
from .snapshot.tier import copied_sizes, move_bytes_of

DEFAULT_RATE_BPS = 100 * 1024 * 1024  # unthrottled, uncalibrated inbound replication per broker


@dataclass
class Calibration:
    """What a cluster did in earlier runs."""

    rate_bps: dict[int, float] = field(default_factory=dict)  # broker -> effective B/s in
    overhead_s: float = 0.0  # per move: submission to first byte, completion seen
    throttle: float | None = None  # the throttle those runs had (rates above are under it)
    journals: list[str] = field(default_factory=list)
    moves: int = 0

    def rate_of(self, broker: int, throttle: float | None) -> float:
        """The broker's inbound rate for a run with ``throttle``: its calibrated rate, scaled
        by the ratio of throttles when the calibration ran under another (capped by it)."""
        known = self.rate_bps.get(broker) or (
            statistics.median(self.rate_bps.values()) if self.rate_bps else None
        )
        if known is None:
            return float(throttle or DEFAULT_RATE_BPS)
        if throttle and self.throttle and throttle != self.throttle:
            known = known * throttle / self.throttle
        return min(known, float(throttle)) if throttle else known

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"version": 1, **asdict(self)}, f, indent=2)

    @classmethod
    def read(cls, path: str) -> Calibration:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            return cls(
                rate_bps={int(b): float(r) for b, r in doc.get("rate_bps", {}).items()},
                overhead_s=float(doc.get("overhead_s", 0.0)),
                throttle=doc.get("throttle"),
                journals=list(doc.get("journals", [])),
                moves=int(doc.get("moves", 0)),
            )
        except OSError as e:
            raise UsageError(f"--calibration: cannot read {path}: {e.strerror}") from None
        except (ValueError, TypeError, AttributeError) as e:
            raise UsageError(f"--calibration: {path} is not a calibration file: {e}") from None


def _union_seconds(intervals: Iterable[tuple[float, float]]) -> float:
    total, end = 0.0, -math.inf
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def calibrate(journals: Sequence[str]) -> Calibration:
    """Per broker, bytes received by its new replicas over the time moves were coming in;
    per move, the fixed cost. From every completed move of every run in ``journals``."""
    intervals: dict[int, list[tuple[float, float]]] = {}
    bytes_in: dict[int, float] = {}
    samples: list[tuple[float, int, list[int]]] = []  # (duration, size, new brokers)
    throttles: list[float] = []
    for path in journals:
        submitted: dict[tuple[str, str, int], dict[str, Any]] = {}
        for e in read_events(path):
            ev = e.get("event")
            if ev == "run_started":
                t = (e.get("options") or {}).get("throttle")
                if t:
                    throttles.append(float(t))
            key = (e.get("run_id"), e.get("topic"), e.get("partition"))
            if ev == "submitted":
                submitted[key] = e
            elif ev == "completed" and key in submitted and e.get("duration_s"):
                s = submitted[key]
                new = [b for b in s.get("target", []) if b not in s.get("current", [])]
                size = int(s.get("size_bytes") or 0)
                start, end = float(s["ts"]), float(e["ts"])
                samples.append((float(e["duration_s"]), size, new))
                for b in new:
                    intervals.setdefault(b, []).append((start, end))
                    bytes_in[b] = bytes_in.get(b, 0.0) + size
    if not samples:
        raise UsageError(
            "calibrate: no completed move with its submission in "
            + ", ".join(journals)
            + " (a journal of a paced run that moved data is needed)"
        )
    rates = {
        b: bytes_in[b] / busy
        for b, ivs in intervals.items()
        if (busy := _union_seconds(ivs)) > 0 and bytes_in[b] > 0
    }
    # A broker's own figure is a lower bound: its new replicas may have waited for another
    # broker's (a partition completes when all its new replicas have caught up). The brokers
    # that were the bottleneck show their real rate; none is taken below the upper half's.
    if rates:
        floor = statistics.median_high(sorted(rates.values())[len(rates) // 2 :])
        rates = {b: max(r, floor) for b, r in rates.items()}
    cal = Calibration(
        rate_bps=rates,
        throttle=statistics.median(throttles) if throttles else None,
        journals=[os.path.abspath(p) for p in journals],
        moves=len(samples),
    )
    fixed = [
        d - (size / min(cal.rate_of(b, None) for b in new) if new else 0)
        for d, size, new in samples
    ]
    cal.overhead_s = max(0.0, min(fixed))
    return cal


# ---------------------------------------------------------------- prediction


@dataclass(frozen=True)
class Policy:
    name: str
    options: ExecuteOptions


def policies(given: ExecuteOptions, moves: int) -> list[Policy]:
    """The options given, then the usual alternatives at the same caps."""
    n = given.batch_size or 10
    base = replace(given, wait=True, incremental=False, batch_size=None)
    out = [
        Policy("as given", replace(given, wait=True)),
        Policy("legacy (one request)", replace(base, batch_size=max(1, moves))),
        Policy(f"batch {n}", replace(base, batch_size=n)),
        Policy(f"incremental {n}", replace(base, batch_size=n, incremental=True)),
        Policy(
            f"incremental {n}, steps R=1",
            replace(base, batch_size=n, incremental=True, parallel_replica_count=1),
        ),
    ]
    return out


def model_of(
    states: Mapping[TopicPartition, PartitionState],
    sizes: Mapping[TopicPartition, int],
    brokers: Sequence[int],
    throttle: float | None,
    calibration: Calibration | None,
) -> SimCluster:
    """A simulator holding the plan's partitions where they are now, with their sizes."""
    cal = calibration or Calibration()
    sim = SimCluster(list(brokers), bandwidth=float(throttle or DEFAULT_RATE_BPS), tick=0.5)
    if throttle:
        # Kafka's quota: the throttle is a rate averaged over 11 one-second windows, so a
        # broker that was idle (one move at a time, steps, waves) takes in a burst at full
        # speed; the calibration says which share of the throttle each broker achieves
        sim.quota_windows = QUOTA_WINDOWS
        # a fetch lost per stream ending among others (``quota.END_LOSS_BYTES``); a calibrated
        # rate (bytes over the time moves came in) already holds what the cluster lost
        sim.end_loss_bytes = 0.0 if cal.rate_bps else END_LOSS_BYTES
        sim.broker_bandwidth = {
            b: max(float(DEFAULT_RATE_BPS), cal.rate_of(b, None)) for b in brokers
        }
        sim.quota_factor = {b: min(1.0, cal.rate_of(b, throttle) / throttle) for b in brokers}
    else:
        sim.broker_bandwidth = {b: cal.rate_of(b, throttle) for b in brokers}
    by_topic: dict[str, dict[int, PartitionState]] = {}
    for tp, st in states.items():
        by_topic.setdefault(tp.topic, {})[tp.partition] = st
    for topic, parts in by_topic.items():
        count = max(parts) + 1
        sim.add_topic(
            topic,
            [list(parts[p].replicas) if p in parts else list(brokers[:1]) for p in range(count)],
            0,
        )
        for p in parts:
            sim.partitions[TopicPartition(topic, p)].size_bytes = int(
                sizes.get(TopicPartition(topic, p), 0)
            )
    return sim


def predict(
    plan: Plan,
    states: Mapping[TopicPartition, PartitionState],
    sizes: Mapping[TopicPartition, int],
    brokers: Sequence[int],
    given: ExecuteOptions,
    calibration: Calibration | None = None,
) -> list[dict[str, Any]]:
    """``[{"policy", "seconds"}]``: the makespan of ``plan`` under each policy, in model time
    (the executor itself runs, on a simulator set up like the cluster)."""
    cal = calibration or Calibration()
    out = []
    for pol in policies(given, len(plan)):
        sim = model_of(states, sizes, brokers, given.throttle, cal)
        opts = replace(pol.options, additional=True, poll_interval_ms=500)
        run = Run(sim, plan, opts, None, clock=sim.now, sleep=sim.sleep)
        res = run.run()
        waves = math.ceil(len(plan) / max(1, opts.batch_size or len(plan)))
        seconds = sim.now() + cal.overhead_s * waves
        out.append({"policy": pol.name, "seconds": round(seconds, 1), "state": res.state})
    return out


# ---------------------------------------------------------------- one call for every front end


@dataclass(frozen=True)
class WhatIf:
    """The what-if of one plan: per policy its predicted makespan (model seconds), the first
    row being the options given. ``--execute --dry-run``, notebook 01 and the panel all show
    this (``what_if``)."""

    rows: tuple[dict[str, Any], ...]
    moves: int
    bytes_total: int
    calibration: str | None  # where the calibration came from (None: throttle / defaults)

    @property
    def predicted_seconds(self) -> float:
        return float(self.rows[0]["seconds"]) if self.rows else 0.0

    def to_json_obj(self) -> dict[str, Any]:
        return {"predicted_seconds": self.predicted_seconds, "policies": list(self.rows)}

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(list(self.rows), columns=["policy", "seconds", "state"])

    def lines(self) -> list[str]:
        """The terminal table (``--execute --dry-run``)."""
        out = [
            f"Predicted makespan of {self.moves} move(s), "
            f"{self.bytes_total / 2**20:.1f} MiB (nothing was sent to the cluster)",
            f"calibration: {self.calibration or CALIBRATION_NONE}",
        ]
        width = max((len(r["policy"]) for r in self.rows), default=0)
        out += [f"  {r['policy']:<{width}}  {duration(r['seconds'])}" for r in self.rows]
        return out


CALIBRATION_NONE = "none (throttle or 100 MiB/s per broker, 0 s per move)"


def duration(seconds: float) -> str:
    s = int(round(seconds))
    return (
        f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s"
        if s >= 3600
        else f"{s // 60}m{s % 60:02d}s"
    )


def calibration_beside(journal: str | None) -> str | None:
    """``calibration.json`` beside a run's journal, if there is one (the cluster's latest)."""
    if not journal:
        return None
    beside = os.path.join(os.path.dirname(os.path.abspath(journal)), "calibration.json")
    return beside if os.path.exists(beside) else None


def what_if(
    source: Any,
    plan: Plan,
    options: ExecuteOptions,
    calibration: Calibration | str | os.PathLike | None = None,
    *,
    view: Any = None,
) -> WhatIf:
    """The plan's makespan predicted per pacing policy. ``source``: a gateway (read-only
    calls: partition states, sizes, brokers — what ``--execute --dry-run`` and the panel
    use) or a ``Snapshot`` (notebook 01: its replicas and sizes, no cluster call).
    ``calibration``: a Calibration or a calibration file. Sends nothing. ``view``: a
    ``cluster_view`` already read (the CLI validates with it first)."""
    source_name = None
    if isinstance(calibration, str | os.PathLike):
        source_name = os.fspath(calibration)
        calibration = Calibration.read(source_name)
    elif calibration is not None:
        source_name = ", ".join(calibration.journals) or "given"
    tps = [m.tp for m in plan]
    if hasattr(source, "by_tp") and hasattr(source, "broker_ids"):  # a Snapshot
        entries = source.by_tp()
        states = {
            tp: PartitionState(tp, e.replicas, e.replicas, e.replicas[0] if e.replicas else None)
            for tp in tps
            if (e := entries.get(tp)) is not None
        }
        # what each move copies (a tiered topic's local log, not its whole size)
        copied = move_bytes_of(source)
        sizes = {tp: copied[tp].copied for tp in states}
        brokers = list(source.broker_ids())
    else:
        from .cluster.views import cluster_view, partition_sizes

        view = view if view is not None else cluster_view(source, plan)
        states = dict(view.states)
        brokers = [b.id for b in source.brokers()]
        sizes = copied_sizes(source, partition_sizes(source, tps, brokers))
    rows = predict(plan, states, sizes, brokers, options, calibration)
    return WhatIf(tuple(rows), len(plan), sum(sizes.values()), source_name)


def replay_pace(
    journal: str,
    *,
    beta: float | None = None,
    settle_s: float | None = None,
    step: int | None = None,
    start: int | None = None,
) -> list[dict[str, Any]]:
    """An adaptive run's pace replayed on the signals its journal holds, with
    another tuning of the controller (``beta``: the decrease factor, ``settle_s``, ``step``:
    the additive increase, ``start``: the start rate; None = the run's): the decisions it
    would have made, as journal-shaped rows (``pacing.controller.pace_line`` prints each).
    Sends nothing."""
    from .pacing.replay import replay

    tuning = {
        k: v
        for k, v in (("beta", beta), ("settle_s", settle_s), ("step", step), ("start", start))
        if v is not None
    }
    return [
        {"ts": d.ts, "event": "pace_decision", **d.to_event()}
        for d in replay(read_events(journal), **tuning)
    ]
