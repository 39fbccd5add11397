"""What-if before running: a plan's makespan under each pacing policy from the run's own
ETA model (``eta.model.forecast`` of the whole plan, each broker end at the throttle times
the share of it the cluster gives): the ETA of a run not started. Nothing is sent.

``calibrate(journals)``: the share of the throttle (``throttle_share``) and the completion
lag (``tail_s``) earlier runs of the same cluster measured, the two terms that earned their
keep on the held-out shapes (bench/RESULTS.md); without one, ``DEFAULT_SHARE`` and
``DEFAULT_LAG_S`` (``DEFAULT_RATE_BPS`` where there is no throttle).

Disks (``DiskLayout``, where the cluster reports its log dirs' sizes): the options given are
also played by the executor against the simulator (``cluster.simulate_disks``), whose disk
ceiling's order and gate are the run's: each filesystem's usage over time and its peak."""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from .cluster.quota import END_LOSS_BYTES, QUOTA_WINDOWS
from .cluster.simulate_disks import DELETE_DELAY_KEY, DELETE_DELAY_S, DiskSim
from .errors import UsageError
from .eta.estimate import PRIOR_BPS as DEFAULT_RATE_BPS  # unthrottled inbound per broker
from .eta.model import forecast, plan_index
from .model import PartitionState, Plan, TopicPartition
from .moves.journal import read_events
from .run.disks import filesystems
from .run.options import ExecuteOptions
from .run.run import Run
from .snapshot.tier import copied_sizes, move_bytes_of

# without a calibration: the share of the throttle and the completion lag chosen on the
# held-out shapes' fit half, within what sandbox runs measured (bench/RESULTS.md)
DEFAULT_SHARE = 0.9
DEFAULT_LAG_S = 1.0
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
    return [
        Policy("as given", replace(given, wait=True)),
        Policy("legacy (one request)", replace(base, batch_size=max(1, moves))),
        Policy(f"batch {n}", replace(base, batch_size=n)),
        Policy(f"incremental {n}", replace(base, batch_size=n, incremental=True)),
        Policy(
            f"incremental {n}, steps R=1",
            replace(base, batch_size=n, incremental=True, parallel_replica_count=1),
        ),
    ]


DirKey = tuple[int, str]  # (broker, log dir)


@dataclass(frozen=True)
class DiskLayout:
    """The cluster's disks as the what-if's simulator takes them: each broker's log dirs with
    their filesystem's total and usable bytes (``caps``: broker -> [(dir, total, usable)];
    None: not reported), the dir each replica of the plan's partitions is in (``where``:
    (broker, partition) -> dir; absent: the broker's first), each partition's growth in
    bytes/s (``growth``) and how long a moved-out replica's files stay (``delete_delays``:
    per broker, as it said; else ``delete_delay_s``), with what was assumed (``notes``)."""

    caps: Mapping[int, Sequence[tuple[str, int | None, int | None]]]
    where: Mapping[tuple[int, TopicPartition], str] = field(default_factory=dict)
    growth: Mapping[TopicPartition, float] = field(default_factory=dict)
    delete_delay_s: float = DELETE_DELAY_S
    delete_delays: Mapping[int, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def apply(self, sim: DiskSim) -> None:
        """``sim``'s disks set up like the cluster's: its replicas in their dirs, the rest of
        each filesystem's used bytes as another writer's."""
        from .cluster.gateway import DirCapacity

        caps = {b: {d: DirCapacity(t, u) for d, t, u in ds} for b, ds in self.caps.items()}
        fs_of, total, used = filesystems(caps)
        sim.disks.names = {b: sorted(ds) for b, ds in caps.items() if ds}
        sim.disks.fs = dict(fs_of)
        sim.disks.total.update({d: total[k] for d, k in fs_of.items()})
        replicas: dict[DirKey, int] = {}
        for tp, sp in sim.partitions.items():
            for b in sp.replicas:
                d = self.where.get((b, tp))
                if d is not None and d in caps.get(b, {}):
                    sp.dirs[b] = d
                k = fs_of.get((b, sp.dirs.get(b, sim.log_dirs_of(b)[0])))
                if k is not None:
                    replicas[k] = replicas.get(k, 0) + int(sp.size_bytes)
        for k, n in used.items():
            sim.disks.other[k] = max(0, n - replicas.get(k, 0))
        sim.growth = {tp: r for tp, r in self.growth.items() if r > 0 and tp in sim.partitions}
        sim.delete_delay_s = self.delete_delay_s
        sim.delete_delays = dict(self.delete_delays)


@dataclass(frozen=True)
class DiskPeak:
    """One filesystem's predicted usage at its peak over the run (``at_s``: model seconds
    from the run's start), beside its size and the ceiling."""

    broker: int
    log_dir: str
    total_bytes: int
    start_bytes: int
    peak_bytes: int
    at_s: float
    ceiling_bytes: int | None

    def line(self) -> str:
        mib = 2**20
        over = ""
        if self.ceiling_bytes is not None:
            word = "above" if self.peak_bytes > self.ceiling_bytes else "under"
            over = f", {word} the ceiling of {self.ceiling_bytes / mib:.1f} MiB"
        return (
            f"broker {self.broker} {self.log_dir}: peak {self.peak_bytes / mib:.1f} MiB "
            f"({self.peak_bytes / self.total_bytes:.0%}) at {duration(self.at_s)}, from "
            f"{self.start_bytes / mib:.1f} MiB{over}"
        )


def disk_peaks(
    usage: Mapping[DirKey, Sequence[tuple[float, int]]],
    total: Mapping[DirKey, int],
    ceiling: float | None,
) -> list[DiskPeak]:
    """Each filesystem's peak, the fullest (share of its size) first."""
    out = []
    for k, series in usage.items():
        if not series or not total.get(k):
            continue
        t, peak = max(series, key=lambda p: (p[1], -p[0]))
        lim = int(total[k] * ceiling) if ceiling else None
        out.append(DiskPeak(k[0], k[1], total[k], series[0][1], peak, t, lim))
    return sorted(out, key=lambda p: (-p.peak_bytes / p.total_bytes, p.broker, p.log_dir))


def model_of(
    states: Mapping[TopicPartition, PartitionState],
    sizes: Mapping[TopicPartition, int],
    brokers: Sequence[int],
    throttle: float | None,
    calibration: Calibration | None,
    layout: DiskLayout,
) -> DiskSim:
    """A simulator holding the plan's partitions where they are now, with their sizes, on
    their log dirs' filesystems (the disks' timeline: ``predict_runs``)."""
    share, lag = terms(calibration, throttle)
    sim = DiskSim(list(brokers), bandwidth=float(throttle or DEFAULT_RATE_BPS), tick=0.5)
    if throttle:
        # Kafka's quota: the throttle is a rate averaged over 11 one-second windows, so a
        # broker that was idle (one move at a time, steps, waves) takes in a burst at full
        # speed; a fetch lost per stream ending among others (``quota.END_LOSS_BYTES``)
        sim.quota_windows = QUOTA_WINDOWS
        sim.end_loss_bytes = END_LOSS_BYTES
        sim.broker_bandwidth = dict.fromkeys(brokers, float(DEFAULT_RATE_BPS))
        sim.quota_factor = dict.fromkeys(brokers, share)
    else:
        sim.broker_bandwidth = dict.fromkeys(brokers, DEFAULT_RATE_BPS * share)
    sim.finish_s = lag  # a move completes this long after its last byte
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
    layout.apply(sim)
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
    """``[{"policy", "seconds", "state"}]``: the makespan of ``plan`` under each policy, in
    model time (``forecast_row``); ``given_only``: the options given alone."""
    return predict_runs(plan, states, sizes, brokers, given, calibration, given_only)[0]


HELD_FOR_S = 600.0  # a modelled run held for space this long with nothing moving is ended


class HeldGuard:
    """The model run's sleep, ending a run held for space while nothing moves (the space
    never frees in the model: a partition grows past the ceiling, or no order fits) after
    ``HELD_FOR_S``; ``held`` says why."""

    def __init__(self, sim: DiskSim) -> None:
        self.sim = sim
        self.run: Run | None = None
        self.since: float | None = None
        self.held: str | None = None

    def sleep(self, seconds: float) -> None:
        self.sim.sleep(seconds)
        why = self.run.waiting_reason if self.run is not None else None
        holding = bool(why) and str(why).startswith(("waiting for space", "new submissions"))
        if not holding or self.sim.active:
            self.since = None
            return
        self.since = self.sim.now() if self.since is None else self.since
        if self.sim.now() - self.since >= HELD_FOR_S and self.run is not None:
            self.held = str(why)
            self.run.stop()


def predict_runs(
    plan: Plan,
    states: Mapping[TopicPartition, PartitionState],
    sizes: Mapping[TopicPartition, int],
    brokers: Sequence[int],
    given: ExecuteOptions,
    calibration: Calibration | None = None,
    given_only: bool = False,
    layout: DiskLayout | None = None,
) -> tuple[list[dict[str, Any]], list[DiskPeak], dict[DirKey, list[tuple[float, int]]]]:
    """``predict``'s rows, and with ``layout`` the options given's run on the disks: each
    filesystem's peak and its usage over time (model s, bytes used). The makespans are the
    ETA's model (``eta.model.forecast``) of the whole plan; the disks' timeline is the
    executor's run against the simulator (the disk ceiling's order and gate are the run's).
    Options a run would refuse are refused here, by name (``ExecuteOptions.validate``)."""
    given = given.validate()
    out = [
        forecast_row(pol, plan, states, sizes, calibration)
        for pol in policies(given, len(plan))[: 1 if given_only else None]
    ]
    if layout is None or not out:
        return out, [], {}
    sim = model_of(states, sizes, brokers, given.throttle, calibration, layout)
    opts = replace(given, wait=True, additional=True, poll_interval_ms=POLL_MS)
    guard = HeldGuard(sim)
    run = Run(sim, plan, opts, None, clock=sim.now, sleep=guard.sleep)
    guard.run = run
    sim.sample()  # the usage before the first move
    res = run.run()
    sim.sample()
    if guard.held or res.state != "completed":  # the disks held it: the played run says so
        out[0] = {**out[0], "seconds": round(sim.now(), 1), "state": res.state}
        if guard.held:
            out[0]["state"] = f"held: {guard.held}"
    total = {sim.disks.fs_of(d): t for d, t in sim.disks.total.items()}
    return out, disk_peaks(sim.usage, total, given.disk_ceiling), sim.usage


POLL_MS = 500  # the modelled run's poll


def terms(calibration: Calibration | None, throttle: float | None) -> tuple[float, float]:
    """The share of the throttle and the completion lag: calibrated (the share where the runs
    had a throttle as this one has, or none as it has none), else the defaults."""
    cal = calibration or Calibration()
    same = cal.share is not None and bool(cal.throttle) == bool(throttle)
    share = min(1.0, cal.share) if same and cal.share is not None else DEFAULT_SHARE
    return share, cal.lag_s if cal.lag_s is not None else DEFAULT_LAG_S


def forecast_row(
    pol: Policy,
    plan: Plan,
    states: Mapping[TopicPartition, PartitionState],
    sizes: Mapping[TopicPartition, int],
    calibration: Calibration | None,
) -> dict[str, Any]:
    """One policy's makespan: the whole plan through the ETA's model, each broker end at the
    throttle times the share, each step a completion lag after its last byte (``terms``)."""
    opts, throttle = pol.options, pol.options.throttle
    share, lag = terms(calibration, throttle)
    caps = opts.caps()
    index = plan_index(plan, states, sizes, caps, opts.order)
    fc = forecast(
        index, float(throttle or DEFAULT_RATE_BPS) * share, caps, lag,
        r=opts.parallel_replica_count, poll=POLL_MS / 1000,
        elections=(0, opts.max_elections_per_poll) if opts.elect_leaders else None,
    )  # fmt: skip
    if not math.isfinite(fc.seconds):  # a refusal, not a row no front end can print
        raise UsageError(f"what-if: no bytes can move under {pol.name!r} (--throttle {throttle})")
    return {"policy": pol.name, "seconds": round(fc.seconds, 1), "state": "completed"}


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
    # the options given's run on the disks (none when the cluster reports no sizes): each
    # filesystem's peak, fullest first, and its usage over time ((broker, dir) -> [(s, bytes)])
    disk_peaks: tuple[DiskPeak, ...] = ()
    disk_usage: Mapping[DirKey, Sequence[tuple[float, int]]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()  # what the disk part assumed (a delay no broker said)

    @property
    def predicted_seconds(self) -> float:
        return float(self.rows[0]["seconds"]) if self.rows else 0.0

    def to_json_obj(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "predicted_seconds": self.predicted_seconds,
            "policies": list(self.rows),
        }
        if self.disk_peaks:
            out["disk_peaks"] = [asdict(p) for p in self.disk_peaks]
            out["disk_notes"] = list(self.notes)
        return out

    def disks_to_pandas(self):
        """Each filesystem's predicted usage over the run: broker, log_dir, seconds, bytes."""
        import pandas as pd

        rows = [(b, d, t, n) for (b, d), series in self.disk_usage.items() for t, n in series]
        return pd.DataFrame(rows, columns=["broker", "log_dir", "seconds", "bytes"])

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
        if self.disk_peaks:
            out.append("Predicted disk usage over the run (options given; fullest first):")
            out += [f"  {p.line()}" for p in self.disk_peaks[:DISK_LINES]]
            out += [f"  {n}" for n in self.notes]
        return out


DISK_LINES = 5  # filesystems named in the terminal table (all in the JSON and the chart)


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
    layout = disk_layout(source, brokers, tps)
    rows, peaks, usage = predict_runs(
        plan, states, sizes, brokers, options, calibration, given_only, layout
    )
    notes = layout.notes if layout is not None else ()
    return WhatIf(
        tuple(rows), len(plan), sum(sizes.values()), source_name, tuple(peaks), usage, notes
    )


def disk_layout(source: Any, brokers: Sequence[int], tps: Sequence[TopicPartition]):
    """The cluster's disks for the what-if (``DiskLayout``), from a Snapshot (its brokers'
    log dir sizes, each replica's recorded dir and its partitions' recorded growth) or a gateway (read-only DescribeLogDirs: sizes, and the dir of each replica); None when
    no log dir's size is known (Kafka before 3.3, or the call failed)."""
    from .errors import KafkaOperationError

    if hasattr(source, "by_tp") and hasattr(source, "broker_ids"):  # a Snapshot
        from .snapshot.load import loads_of

        caps = {b.id: tuple(b.log_dir_capacity or ()) for b in source.brokers}
        growth = {tp: ld.growth_bytes_s for tp, ld in loads_of(source.partitions).items()}
        where: dict[tuple[int, TopicPartition], str] = {
            (b, p.tp): d
            for p in source.partitions
            for b, d in zip(p.replicas, p.log_dirs or (), strict=False)
            if d is not None
        }
    else:
        try:
            got = source.log_dir_capacity(list(brokers))
            caps = {
                b: tuple((d, c.total_bytes, c.usable_bytes) for d, c in sorted(ds.items()))
                for b, ds in got.items()
            }
            sized = sorted(b for b, ds in caps.items() if any(t for _, t, _ in ds))
            logs = source.describe_log_dirs(sized, list(tps)) if sized else []
        except KafkaOperationError:
            return None
        where = {(i.broker, i.tp): i.log_dir for i in logs if not i.is_future}
        growth = {}
    if not any(t for ds in caps.values() for _, t, _ in ds):
        return None
    delays, notes = delete_delays(source, sorted(caps))
    return DiskLayout(caps, where, growth, delete_delays=delays, notes=notes)


def delete_delays(source: Any, brokers: Sequence[int]) -> tuple[dict[int, float], tuple]:
    """How long each broker keeps a moved-out replica's files (seconds): its
    ``log.segment.delete.delay.ms`` by DescribeConfigs (a gateway; read-only). A broker
    that does not say (a snapshot, configs unreadable, no or a bad value) is taken at Kafka's
    default, said once."""
    from .errors import KafkaOperationError

    configs: Mapping[int, Mapping[str, str]] = {}
    if hasattr(source, "broker_configs"):
        with contextlib.suppress(KafkaOperationError):
            configs = source.broker_configs(list(brokers))
    delays: dict[int, float] = {}
    for b in brokers:
        raw = (configs.get(b) or {}).get(DELETE_DELAY_KEY)
        with contextlib.suppress(TypeError, ValueError):
            ms = int(str(raw))
            if ms >= 0:
                delays[b] = ms / 1000.0
    unsaid = [b for b in brokers if b not in delays]
    if not unsaid:
        return delays, ()
    return delays, (
        f"broker(s) {unsaid} did not say their {DELETE_DELAY_KEY}: a moved-out replica's "
        f"files taken to stay {DELETE_DELAY_S:.0f} s (Kafka's default)",
    )


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
