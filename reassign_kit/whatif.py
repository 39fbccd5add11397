"""What-if before running: a plan's makespan predicted under each pacing policy,
by running the very executor against the simulator (``cluster.simulate``) set up like the
cluster — its partitions where they are now, their sizes, the throttle, Kafka's quota windows
and the fetch a receiving end loses when a stream ends among others (``cluster.quota``, the
ETA's model too) — and a calibration learned from earlier journals of the same cluster. Nothing
is sent to the cluster.

``calibrate(journals)`` learns what the runs' own ETA measured (the fields of their ``sample``
events): the share of the throttle the brokers achieved (``throttle_share``, bytes received
against the model's bytes) and the completion lag (``tail_s``: last byte to the run seeing
the move complete). Those are the two terms that earned their keep on the held-out shapes
(``bench/bench_heldout.py``'s ablation: calibrated on the other run of the same cluster, the
judged half within 15% on 12 of 13 shapes, median error 9%, against 10 of 13 and 12%
uncalibrated); the per-broker intake rates and the per-move fixed cost learned before (5 of 13,
30%) went: a broker's intake over the time moves came in says how the earlier plan's shape
shared the throttle, not what a broker can take. Without a calibration a broker takes in
data at the throttle (``DEFAULT_RATE_BPS`` unthrottled) and a move completes at its last
byte."""

from __future__ import annotations

import json
import math
import os
import statistics
from collections.abc import Mapping, Sequence
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
CALIBRATION_VERSION = 2  # 1: per-broker rates and a per-move cost, no longer used


@dataclass
class Calibration:
    """What a cluster did in earlier runs, as their ETA measured it: ``share`` of the throttle
    (of ``DEFAULT_RATE_BPS`` for runs without one) the brokers achieved, and ``lag_s`` from a
    move's last byte to its completion seen; None = not measured."""

    share: float | None = None
    lag_s: float | None = None
    throttle: float | None = None  # the throttle those runs had (None: unthrottled)
    journals: list[str] = field(default_factory=list)
    moves: int = 0

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"version": CALIBRATION_VERSION, **asdict(self)}, f, indent=2)

    @classmethod
    def read(cls, path: str) -> Calibration:
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
            if doc.get("version") != CALIBRATION_VERSION:
                raise UsageError(
                    f"--calibration: {path} is a calibration of version {doc.get('version')!r}"
                    f" (per-broker rates, which the what-if no longer uses); make it again "
                    "with reassign-kit calibrate --journal JOURNAL --output FILE"
                )
            return cls(
                share=_positive(doc.get("share")),
                lag_s=_positive(doc.get("lag_s")),
                throttle=_positive(doc.get("throttle")),
                journals=[str(j) for j in doc.get("journals", [])],
                moves=int(doc.get("moves", 0)),
            )
        except OSError as e:
            raise UsageError(f"--calibration: cannot read {path}: {e.strerror}") from None
        except (ValueError, TypeError, AttributeError) as e:
            raise UsageError(f"--calibration: {path} is not a calibration file: {e}") from None


def _number(v: Any) -> float | None:
    """A journal's figure as a positive number (anything else: not measured)."""
    try:
        return _positive(v)
    except (TypeError, ValueError):
        return None


def _positive(v: Any) -> float | None:
    """A measured figure from a file: a positive finite number, else not measured."""
    if v is None or isinstance(v, bool):
        return None
    f = float(v)
    return f if math.isfinite(f) and f > 0 else None


def calibrate(journals: Sequence[str]) -> Calibration:
    """The share of the throttle and the completion lag the runs in ``journals`` measured:
    the median of their samples' shares, the median of each run's last completion lag."""
    moves = 0
    throttles: list[float] = []
    shares: list[float] = []
    lags: list[float] = []
    for path in journals:
        lag = None
        for e in read_events(path):
            ev = e.get("event")
            if ev == "sample":  # the run's own measures: its last completion lag counts
                shares += [v for v in [_number(e.get("throttle_share"))] if v is not None]
                lag = _number(e.get("tail_s")) or lag
            elif ev == "run_started":
                t = _number((e.get("options") or {}).get("throttle"))
                throttles += [t] if t is not None else []
            elif ev == "completed" and e.get("duration_s"):
                moves += 1
        lags += [lag] if lag is not None else []
    if not moves or not (shares or lags):
        raise UsageError(
            "calibrate: no completed move with its share of the throttle or completion lag "
            "measured in " + ", ".join(journals) + " (a journal of a paced run that moved "
            "data is needed)"
        )
    return Calibration(  # a run too short to measure its share: the throttle stands
        share=min(1.0, statistics.median(shares)) if shares else None,
        lag_s=statistics.median(lags) if lags else None,
        throttle=statistics.median(throttles) if throttles else None,
        journals=[os.path.abspath(p) for p in journals],
        moves=moves,
    )


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
    # the share measured applies to what the runs had: a throttle, or none (DEFAULT_RATE_BPS)
    share = cal.share if cal.share is not None and bool(cal.throttle) == bool(throttle) else 1.0
    sim = SimCluster(list(brokers), bandwidth=float(throttle or DEFAULT_RATE_BPS), tick=0.5)
    if throttle:
        # Kafka's quota: the throttle is a rate averaged over 11 one-second windows, so a
        # broker that was idle (one move at a time, steps, waves) takes in a burst at full
        # speed; a fetch lost per stream ending among others (``quota.END_LOSS_BYTES``)
        sim.quota_windows = QUOTA_WINDOWS
        sim.end_loss_bytes = END_LOSS_BYTES
        sim.broker_bandwidth = dict.fromkeys(brokers, float(DEFAULT_RATE_BPS))
        sim.quota_factor = dict.fromkeys(brokers, min(1.0, share))
    else:
        sim.broker_bandwidth = dict.fromkeys(brokers, DEFAULT_RATE_BPS * share)
    if cal.lag_s is not None:  # a move completes this long after its last byte
        sim.finish_s = cal.lag_s
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
    given_only: bool = False,
) -> list[dict[str, Any]]:
    """``[{"policy", "seconds"}]``: the makespan of ``plan`` under each policy, in model time
    (the executor itself runs, on a simulator set up like the cluster); ``given_only``: the
    options given alone."""
    out = []
    for pol in policies(given, len(plan))[: 1 if given_only else None]:
        sim = model_of(states, sizes, brokers, given.throttle, calibration)
        opts = replace(pol.options, additional=True, poll_interval_ms=500)
        run = Run(sim, plan, opts, None, clock=sim.now, sleep=sim.sleep)
        res = run.run()
        out.append({"policy": pol.name, "seconds": round(sim.now(), 1), "state": res.state})
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


CALIBRATION_NONE = "none (the throttle, or 100 MiB/s per broker; no completion lag)"


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
    given_only: bool = False,
) -> WhatIf:
    """The plan's makespan predicted per pacing policy. ``source``: a gateway (read-only
    calls: partition states, sizes, brokers — what ``--execute --dry-run`` and the panel
    use) or a ``Snapshot`` (notebook 01: its replicas and sizes, no cluster call).
    ``calibration``: a Calibration or a calibration file. Sends nothing. ``view``: a
    ``cluster_view`` already read (the CLI validates with it first); ``given_only``: the
    options given alone, not the alternatives."""
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
    rows = predict(plan, states, sizes, brokers, options, calibration, given_only)
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
