"""A replication model behind the ``Gateway`` interface: reassignments copy bytes per tick at
the throttle rate, so the executor's pacing, caps, deadlines and throttle bookkeeping can be
unit-tested in milliseconds and rehearsed at scales no sandbox holds.

The model follows KRaft's semantics where they matter to the executor: during a reassignment
``replicas`` = target followed by the original replicas leaving, ``adding`` / ``removing`` are
set; a new target replaces one in flight; a cancel reverts to the original replicas; the move
completes once every adding replica has caught up. Time is the model's own: ``sleep(dt)``
advances it, so a run driven with ``clock=sim.now, sleep=sim.sleep`` never waits for real.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import PartitionState, TopicPartition
from .capabilities import ALL, RF_GUARD, Capabilities, degraded, say_once
from .config import (
    FOLLOWER_RATE,
    LEADER_RATE,
    LOG_DIR_RATE,
)
from .flows import SteadyRates, TickFlows
from .gateway import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    BrokerInfo,
    DirCapacity,
    ErrorCode,
    PartitionError,
    ReplicaLogInfo,
)
from .quota import BrokerQuotas, EndLosses
from .simulate_configs import ConfigsPart, ThrottleState
from .simulate_offsets import OffsetsPart

MB = 1024 * 1024


@dataclass
class SimPartition:
    tp: TopicPartition
    replicas: list[int]
    size_bytes: int = 0
    leader: int | None = None
    isr: list[int] = field(default_factory=list)
    original: list[int] | None = None  # set while reassigning
    target: list[int] | None = None
    copied: dict[int, float] = field(default_factory=dict)
    stalled: bool = False
    dirs: dict[int, str] = field(default_factory=dict)  # broker -> log dir (default: its first)
    future: dict[int, list] = field(default_factory=dict)  # broker -> [log dir, bytes copied]
    full_at: float | None = None  # when every adding replica had caught up (``finish_s``)

    _cached: tuple | None = field(default=None, repr=False, compare=False)

    def state(self) -> PartitionState:
        """What the partition is now; the same PartitionState again while nothing it is made
        of changed (building it was a third of a simulated poll). The lists are
        held, not their ids, so a new list never passes for an old one; the model only
        appends to ``isr`` in place (its length tells) and assigns new lists otherwise."""
        c = self._cached
        if (
            c is not None
            and c[0] is self.replicas
            and c[1] == len(self.replicas)
            and c[2] is self.isr
            and c[3] == len(self.isr)
            and c[4] == self.leader
            and c[5] is self.target
            and c[6] is self.original
        ):
            return c[7]
        st = self._state()
        self._cached = (
            self.replicas,
            len(self.replicas),
            self.isr,
            len(self.isr),
            self.leader,
            self.target,
            self.original,
            st,
        )
        return st

    def start(self, target: list[int]) -> None:
        """A reassignment to ``target`` in flight (replacing one in flight: the original
        replicas stay those it started from); the replicas already copied keep their bytes."""
        original = self.original if self.target is not None else list(self.replicas)
        self.original = list(original or [])
        self.target = target
        self.replicas = target + [b for b in self.original if b not in target]
        self.copied = {b: self.copied.get(b, 0.0) for b in target if b not in self.original}
        self.full_at = None
        self._cached = None  # stale (new lists): not kept alive until the next ``state``

    def cancel(self) -> str | None:
        """Back to the original replicas (those not in the ISR drop out of it); an error when
        no reassignment is in flight."""
        if self.target is None:
            return PartitionError(
                ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "NO_REASSIGNMENT_IN_PROGRESS"
            )
        orig = list(self.original or self.replicas)
        self.replicas = orig
        self.isr = [b for b in orig if b in self.isr]
        if self.leader not in orig:
            self.leader = next((b for b in orig if b in self.isr), orig[0])
        self.target = None
        self.original = None
        self.copied = {}
        self._cached = None
        return None

    def finish(self) -> None:
        """The reassignment complete: the target is the replica set, the leaving replicas'
        log dirs (and moves between them) gone."""
        target = list(self.target or [])
        self.replicas = target
        self.isr = [b for b in target if b in self.isr]
        if self.leader not in target:
            self.leader = next((b for b in target if b in self.isr), None)
        self.target = None
        self.original = None
        self.copied = {}
        self.full_at = None
        self._cached = None
        for b in set(self.dirs) | set(self.future):
            if b not in target:
                self.dirs.pop(b, None)
                self.future.pop(b, None)

    def _state(self) -> PartitionState:
        if self.target is None:
            return PartitionState(self.tp, tuple(self.replicas), tuple(self.isr), self.leader)
        orig = self.original or []
        adding = tuple(b for b in self.target if b not in orig)
        removing = tuple(b for b in orig if b not in self.target)
        return PartitionState(
            self.tp, tuple(self.replicas), tuple(self.isr), self.leader, adding, removing
        )


@dataclass
class SimDisks:
    """The log dirs' filesystems: (broker, dir) -> total bytes (absent: not reported, an older
    broker) and the bytes other writers keep there besides the replicas."""

    total: dict[tuple[int, str], int] = field(default_factory=dict)
    other: Counter[tuple[int, str]] = field(default_factory=Counter)

    def dirs_of(self, broker: int) -> list[str]:
        """Every broker has two log dirs; a replica with no recorded dir is in the first."""
        return [f"/sim/{broker}/d0", f"/sim/{broker}/d1"]

    def logs(
        self, sps: Iterable[SimPartition], brokers: set[int], fetch_bytes: int | None
    ) -> list[ReplicaLogInfo]:
        """The replica logs (current and future) of ``sps`` on ``brokers``: a follower still
        filling shows its bytes rounded down to ``fetch_bytes`` (None: exact)."""
        out: list[ReplicaLogInfo] = []
        for sp in sps:
            for b in sp.replicas:
                if b not in brokers:
                    continue
                size = int(sp.copied.get(b, sp.size_bytes)) if sp.target else sp.size_bytes
                if fetch_bytes and sp.target and size < sp.size_bytes:
                    size -= size % fetch_bytes
                d = sp.dirs[b] if b in sp.dirs else self.dirs_of(b)[0]
                out.append(ReplicaLogInfo(b, sp.tp, d, size, 0, False))
                if b in sp.future:
                    fd, copied = sp.future[b]
                    out.append(ReplicaLogInfo(b, sp.tp, fd, int(copied), 0, True))
        return out

    def capacity(
        self, dirs: Mapping[int, Sequence[str]], logs: Iterable[ReplicaLogInfo]
    ) -> dict[int, dict[str, DirCapacity]]:
        """Each dir's total and usable bytes, its replicas' logs (``logs``) counted as used."""
        used: Counter[tuple[int, str]] = Counter(self.other)
        for info in logs:
            used[(info.broker, info.log_dir)] += info.size_bytes
        out: dict[int, dict[str, DirCapacity]] = {}
        for b, ds in dirs.items():
            out[b] = {}
            for d in ds:
                total = self.total.get((b, d))
                usable = None if total is None else max(0, total - used[(b, d)])
                out[b][d] = DirCapacity(total, usable)
        return out


class SimCluster(ConfigsPart, OffsetsPart):
    """The model cluster. ``bandwidth`` is a broker's unthrottled inbound replication rate."""

    def __init__(
        self,
        brokers: Sequence[int] | int = 4,
        racks: Mapping[int, str] | None = None,
        bandwidth: float = 100 * MB,
        tick: float = 0.1,
    ):
        ids = list(range(brokers)) if isinstance(brokers, int) else list(brokers)
        self.broker_ids = ids
        self.racks = dict(racks or {})
        self.down: set[int] = set()
        self.bandwidth = float(bandwidth)
        self.broker_bandwidth: dict[int, float] = {}  # per broker, where it differs (what-if)
        # Kafka's replication quota (what-if): None = the throttle is a plain rate
        # cap; N = a rate averaged over N windows of quota_window_s (Kafka's
        # replication.quota.window.num, 11, and .size.seconds, 1), so a broker idle for a
        # while copies (N - 1) s worth of the throttle at full speed before it bites
        self.quota_windows: int | None = None
        self.quota_window_s = 1.0
        self.quota_factor: dict[int, float] = {}  # share of the throttle a broker achieves
        self._quotas = BrokerQuotas()
        # what a real cluster spends besides copying (bench_eta: 1-2 s of admin
        # calls between batches, zero-byte KIP-435 steps of 1.3-2 s): a reassignment whose
        # replicas have all caught up completes ``finish_s`` later (the ISR change, the
        # controller ending it; a step that only drops replicas too); each
        # ``alter_reassignments`` call takes ``call_s`` of model time (bytes copy meanwhile)
        self.finish_s = 0.0
        self.call_s = 0.0
        # a follower's log grows a fetch at a time (replica.fetch.max.bytes, 1 MiB; bench_eta's
        # samples read 0.94 MiB steps): DescribeLogDirs of a replica still filling shows its
        # bytes rounded down to this (None: exact)
        self.fetch_bytes: int | None = None
        # a stream ending at a broker that others still fill costs it up to this many bytes
        # of its inbound capacity (``quota.end_loss``: a fetch, at most a tenth of the
        # partition; measured on the sandbox; 0: fluid)
        self.end_loss_bytes = 0.0
        self._debts = EndLosses()
        self._steady = SteadyRates()  # the last tick's rates, for a tick like it (``_play``)
        self.tick = tick
        self.t = 0.0
        self.partitions: dict[TopicPartition, SimPartition] = {}
        # partitions with a reassignment or a log-dir move in flight: what a tick and a
        # listing look at (the model's cost follows the moves, not the cluster's size)
        self.active: dict[TopicPartition, SimPartition] = {}
        self.fail_on: dict[TopicPartition, str] = {}
        self.disks = SimDisks()
        self.calls: Counter[str] = Counter()
        self.topic_cfg: dict[str, dict[str, str]] = {}
        self.broker_cfg: dict[int, dict[str, str]] = {}
        self.default_broker_cfg: dict[str, str] = {}  # the cluster default (<default>)
        self.static_broker_cfg: dict[int, dict[str, str]] = {}  # server.properties
        self.throttles = ThrottleState()
        self.throttle_history: list[tuple[float, ThrottleState]] = []
        # what the client's principal may do on the cluster (a reader: DESCRIBE and
        # DESCRIBE_CONFIGS only; a principal without ACLs: empty)
        self.permissions: frozenset[str] | None = CLUSTER_OPERATIONS
        # what the model's brokers report they support (ALL; a test models an older release
        # with e.g. Capabilities(api={45: (0, 0)}): no broker-side RF guard)
        self.caps: Capabilities = ALL
        self.topic_permissions_of: dict[str, frozenset[str]] = {}  # default: every operation
        self._topics: set[str] = set()  # _known_topics
        self._topics_for = -1
        self._parsed: dict[tuple[str, str], tuple[str, frozenset]] = {}  # simulate_configs._lists
        self.id = "simulated"  # what cluster_id() answers (a test may name its model)

    # ---- building the model -------------------------------------------------------------

    def add_topic(
        self,
        topic: str,
        assignment: Sequence[Sequence[int]],
        size_bytes: int | Sequence[int] = 0,
    ) -> None:
        for p, reps in enumerate(assignment):
            size = size_bytes if isinstance(size_bytes, int) else size_bytes[p]
            tp = TopicPartition(topic, p)
            self.partitions[tp] = SimPartition(tp, list(reps), size, reps[0], list(reps))

    def stall(self, tp: TopicPartition, stalled: bool = True) -> None:
        """Make a partition stop copying (a stuck move)."""
        self.partitions[tp].stalled = stalled

    # ---- clock --------------------------------------------------------------------------

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        """Advance model time by ``seconds`` in ticks, copying bytes as it goes."""
        remaining = max(0.0, seconds)
        while remaining > 1e-12:
            dt = min(self.tick, remaining)
            self._advance(dt)
            remaining -= dt

    def _advance(self, dt: float) -> None:
        self.t += dt
        # every new replica being filled is a stream from the partition's leader: the
        # leader's outbound and the target's inbound throttle are both shared
        streams: list[tuple[SimPartition, int]] = []
        moving = list(self.active.values())
        for sp in moving:
            if sp.target is None or sp.stalled:
                continue
            for b in sp.target:
                if b not in sp.isr and b not in self.down:
                    streams.append((sp, b))
        debts = self._debts
        if debts.owed:  # a broker no stream fills any more idles: the quota gives it back
            debts.keep({b for _, b in streams})
        if streams and dt > 0:
            self._play(streams, dt)
        for sp in moving:
            if sp.target is not None and all(b in sp.isr for b in sp.target):
                sp.full_at = self.t if sp.full_at is None else sp.full_at
                if self.t - sp.full_at >= self.finish_s - 1e-9:
                    self._finish(sp)
        for sp in moving:
            if sp.target is None and not sp.future:
                self.active.pop(sp.tp, None)
        for sp in moving:  # moves between log dirs, at the log-dir rate
            for b, fut in list(sp.future.items()):
                if b in self.down:
                    continue
                rate = self.effective_broker_configs(b).get(LOG_DIR_RATE)
                fut[1] += (float(rate) if rate else self.bandwidth) * dt
                if fut[1] >= sp.size_bytes:
                    sp.dirs[b] = fut[0]
                    del sp.future[b]

    def _play(self, streams: list[tuple[SimPartition, int]], dt: float) -> None:
        """One tick of the streams: as the last one when nothing that sets their rates
        changed and none ends (``flows.SteadyRates``), else played in full (``_flows``)."""
        ends = self._ends(streams)
        key = None
        if not self.quota_windows and not self._debts.owed:
            sources, thr_in, thr_out = ends
            dsts = [b for _, b in streams]
            throttled = {b for b, t in zip(dsts, thr_in, strict=True) if t}
            in_caps = {b: self._cap(b, True, b in throttled, dt) for b in dict.fromkeys(dsts)}
            throttling = (s for s, t in zip(sources, thr_out, strict=True) if t and s is not None)
            out_caps = {s: self._cap(s, False, True, dt) for s in dict.fromkeys(throttling)}
            key = (dsts, sources, thr_in, thr_out, in_caps, out_caps)
            if self._steady.replay(streams, key, dt):
                return
        flows = self._flows(streams, dt, ends)
        flows.run()
        if key is not None:
            self._steady.learn(key, flows)

    def _ends(
        self, streams: list[tuple[SimPartition, int]]
    ) -> tuple[list[int | None], list[bool], list[bool]]:
        """Each stream's source (None: no live leader) and whether it is throttled at its
        target and at its source."""
        sources: list[int | None] = []
        thr_in: list[bool] = []
        thr_out: list[bool] = []
        follower, leader = self.throttles.follower_replicas, self.throttles.leader_replicas
        for sp, b in streams:
            src = sp.leader if sp.leader is not None and sp.leader not in self.down else None
            sources.append(src)
            p, topic = sp.tp.partition, sp.tp.topic
            thr_in.append((p, b) in follower.get(topic, ()))
            thr_out.append(src is not None and (p, src) in leader.get(topic, ()))
        return sources, thr_in, thr_out

    def _flows(
        self,
        streams: list[tuple[SimPartition, int]],
        dt: float,
        ends: tuple[list[int | None], list[bool], list[bool]] | None = None,
    ) -> TickFlows:
        """The tick's streams (``flows.TickFlows``): a target takes in at most its bandwidth,
        or its follower throttle when a stream into it is throttled; a source whose leader
        replica is throttled sends at most its leader throttle; with ``quota_windows`` both
        throttles are Kafka's windowed averages. A stream ending within the tick leaves its
        share to the others for the rest of it (the model is fluid, not a tick's granularity)."""
        sources, thr_in, thr_out = ends if ends is not None else self._ends(streams)
        return TickFlows(
            streams,
            sources,
            thr_in,
            thr_out,
            self._cap,
            dt,
            self._quotas if self.quota_windows else None,
            self._debts,
            self.end_loss_bytes,
        )

    def _cap(self, broker: int, inbound: bool, throttled: bool, dt: float) -> float | None:
        """What one end of a broker allows now (bytes/s); None: unbounded (an outbound end
        without a throttle)."""
        eff = self.effective_broker_configs(broker)
        first, second = (FOLLOWER_RATE, LEADER_RATE) if inbound else (LEADER_RATE, FOLLOWER_RATE)
        r = eff.get(first) or eff.get(second)
        rate = int(float(r)) if r else None
        bandwidth = self.broker_bandwidth.get(broker, self.bandwidth)
        if rate is None or not throttled:
            return bandwidth if inbound else None
        if self.quota_windows and dt > 0:
            limit = rate * self.quota_factor.get(broker, 1.0)
            n, size_s = self.quota_windows, self.quota_window_s
            credit = self._quotas.credit(broker, inbound, self.t, limit, n, size_s)
            return min(bandwidth * dt, credit) / dt
        return min(rate, bandwidth)

    def _finish(self, sp: SimPartition) -> None:
        """The controller ends ``sp``'s reassignment (a test's subclass delays or records it)."""
        sp.finish()

    # ---- Gateway ------------------------------------------------------------------------

    def cluster_permissions(self) -> frozenset[str] | None:
        """As ``AdminGateway.cluster_permissions``: ``self.permissions``."""
        return self.permissions

    def topic_permissions(self, topics: Iterable[str]) -> dict[str, frozenset[str]] | None:
        """As ``AdminGateway.topic_permissions``: ``topic_permissions_of``, else all."""
        return {t: self.topic_permissions_of.get(t, TOPIC_OPERATIONS) for t in topics}

    def cluster_id(self) -> str:
        """As ``AdminGateway.cluster_id``: the model's ``id``."""
        return self.id

    def capabilities(self) -> Capabilities:
        """As ``AdminGateway.capabilities``: ``self.caps``."""
        return self.caps

    def cluster_info(self) -> dict[str, Any]:
        """As ``AdminGateway.cluster_info``: the model says what it is."""
        return {
            "cluster_id": self.id,
            "brokers": len(self.broker_ids),
            "kafka_version": "simulated",
        }

    def brokers(self) -> list[BrokerInfo]:
        self.calls["brokers"] += 1
        return [
            BrokerInfo(b, "127.0.0.1", 9092 + b, self.racks.get(b))
            for b in self.broker_ids
            if b not in self.down
        ]

    def topic_partition_counts(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        self.calls["topic_partition_counts"] += 1
        counts: Counter[str] = Counter(tp.topic for tp in self.partitions)
        if topics is None:
            return dict(counts)
        return {t: counts[t] for t in topics if t in counts}

    def describe_partitions(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, PartitionState]:
        self.calls["describe_partitions"] += 1
        return {tp: self.partitions[tp].state() for tp in tps if tp in self.partitions}

    def list_reassignments(
        self, tps: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionState]:
        self.calls["list_reassignments"] += 1
        if tps is None:
            return {sp.tp: sp.state() for sp in self.active.values() if sp.target is not None}
        sps = (self.partitions.get(tp) for tp in set(tps))
        return {sp.tp: sp.state() for sp in sps if sp is not None and sp.target is not None}

    def alter_reassignments(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, str | None]:
        self.calls["alter_reassignments"] += 1
        if self.call_s > 0:
            self.sleep(self.call_s)
        if not allow_replication_factor_change and not self.caps.has(RF_GUARD):
            say_once(degraded(RF_GUARD))  # as the admin gateway: v0, the client-side check
            allow_replication_factor_change = True
            self.calls["alter_reassignments_v0_guard"] += 1
        out: dict[TopicPartition, str | None] = {}
        for tp, target in targets.items():
            sp = self.partitions.get(tp)
            if sp is None:
                out[tp] = PartitionError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "UNKNOWN_TOPIC_OR_PARTITION"
                )
            elif tp in self.fail_on:
                out[tp] = self.fail_on[tp]
            elif target is None:
                out[tp] = sp.cancel()
            else:
                out[tp] = self._submit(sp, list(target), allow_replication_factor_change)
        return out

    def _submit(self, sp: SimPartition, target: list[int], allow_rf: bool) -> str | None:
        if not target or len(set(target)) != len(target):
            return "INVALID_REPLICA_ASSIGNMENT: empty or duplicate replicas"
        unknown = [b for b in target if b not in self.broker_ids]
        if unknown:
            return f"INVALID_REPLICA_ASSIGNMENT: unknown broker {unknown[0]}"
        if not allow_rf and len(target) != len(sp.target or sp.replicas):
            return "INVALID_REPLICATION_FACTOR: replication factor change not allowed"
        if sp.target is None and target == sp.replicas:
            return None
        sp.start(target)
        self.active[sp.tp] = sp
        if all(b in sp.isr for b in target):
            if self.finish_s > 0:
                sp.full_at = self.t
            else:
                self._finish(sp)
        return None

    def log_dirs_of(self, broker: int) -> list[str]:
        return self.disks.dirs_of(broker)

    def describe_log_dirs(
        self, brokers: Iterable[int], tps: Iterable[TopicPartition] | None = None
    ) -> list[ReplicaLogInfo]:
        self.calls["describe_log_dirs"] += 1
        sps = (
            self.partitions.values()
            if tps is None
            else [self.partitions[tp] for tp in set(tps) if tp in self.partitions]
        )
        return self.disks.logs(sps, set(brokers) - self.down, self.fetch_bytes)

    def tier_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, dict[str, int]]:
        return {}  # the simulator models no tiered storage: nothing listed

    def broker_log_dirs(self, brokers: Iterable[int] | None = None) -> dict[int, list[str]]:
        self.calls["describe_log_dirs"] += 1
        ids = self.broker_ids if brokers is None else brokers
        return {b: self.log_dirs_of(b) for b in ids if b not in self.down}

    def log_dir_capacity(self, brokers: Iterable[int]) -> dict[int, dict[str, DirCapacity]]:
        up = {b: self.log_dirs_of(b) for b in brokers if b not in self.down}
        sized = [b for b in up if any((b, d) in self.disks.total for d in up[b])]
        return self.disks.capacity(up, self.describe_log_dirs(sized) if sized else [])

    def elect_preferred_leaders(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, str | None]:
        """As Kafka: the first replica becomes the leader if it is alive and in the ISR."""
        self.calls["elect_leaders"] += 1
        out: dict[TopicPartition, str | None] = {}
        for tp in tps:
            sp = self.partitions.get(tp)
            if sp is None:
                out[tp] = PartitionError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "UNKNOWN_TOPIC_OR_PARTITION"
                )
            elif sp.replicas[0] not in sp.isr or sp.replicas[0] in self.down:
                out[tp] = "PREFERRED_LEADER_NOT_AVAILABLE"
            else:
                sp.leader = sp.replicas[0]
                out[tp] = None
        return out

    def alter_replica_log_dirs(
        self, assignments: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], str | None]:
        """Start moving replicas between log dirs; a replica not (yet) on its broker is
        ReplicaNotAvailable, as Kafka answers before a reassignment creates it."""
        self.calls["alter_replica_log_dirs"] += 1
        out: dict[tuple[TopicPartition, int], str | None] = {}
        for (tp, b), d in assignments.items():
            sp = self.partitions.get(tp)
            if sp is None:
                out[(tp, b)] = "UnknownTopicOrPartition"
            elif b not in sp.replicas or b in self.down:
                out[(tp, b)] = "ReplicaNotAvailable"
            elif d not in self.log_dirs_of(b):
                out[(tp, b)] = "LogDirNotFound"
            else:
                out[(tp, b)] = None
                if sp.dirs.get(b, self.log_dirs_of(b)[0]) == d:
                    sp.future.pop(b, None)
                elif sp.future.get(b, [None])[0] != d:
                    sp.future[b] = [d, 0.0]
                    self.active[sp.tp] = sp
        return out

    # ---- configs and throttles: simulate_configs.ConfigsPart --------------------------

    def close(self) -> None:
        """Nothing to release: the model lives in this process."""

    # ---- observation --------------------------------------------------------------------

    def assignment(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {tp: tuple(sp.replicas) for tp, sp in self.partitions.items()}
