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

The family, by job (each name importable from here too): ``progress_report`` (the report as
data), ``progress_core`` (the pure core), ``progress_journal`` (what a run's journal says),
``progress_text`` (how it reads); here the Admin calls, the tracker, ``watch`` and ``report``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..cluster.gateway import Gateway, ReplicaLogInfo
from ..errors import ReassignKitError
from ..eta.estimate import ETA_WINDOW_S
from ..model import Plan, TopicPartition
from .build import (
    build_report,
)
from .from_journal import (
    rates_from_events,
    samples_from_events,
    steps_from_events,
)
from .report import (
    Observation,
    ProgressReport,
    Sample,
)

# ------------------------------------------------------------------------------ the bytes copied (I/O)


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
    from ..moves.journal import read_events

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
