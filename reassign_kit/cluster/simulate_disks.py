"""The replication model's disks as a run fills them (the what-if's, ``whatif.disk_usage``):
``FsDisks`` gives each broker its real log dirs and the filesystem each lies on (two dirs on one
filesystem report its bytes together, as Kafka's DescribeLogDirs does), and ``DiskSim`` is the
model cluster whose partitions grow at their recorded rates while it runs, whose moved-out
replicas keep their bytes for their broker's delay after the move (``delete_delays``, else
``delete_delay_s``: the broker's ``log.segment.delete.delay.ms``, the server default of the
topic config ``file.delete.delay.ms`` that Kafka's LogManager applies to a ``-delete`` dir,
60 s by default) and whose filesystems' usage is sampled over time.

A new replica's copy grows on its target as bytes arrive and its source's copy stays whole
until deleted: what a disk holds at each instant of a run, the peak included."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..model import TopicPartition
from .gateway import DirCapacity, ReplicaLogInfo
from .simulate import SimCluster, SimDisks, SimPartition

DirKey = tuple[int, str]  # (broker, log dir)
DELETE_DELAY_S = 60.0  # Kafka's file.delete.delay.ms default
# the broker config holding it: LogManager deletes a moved-out replica's dir after its
# broker-wide default (a topic's own file.delete.delay.ms does not apply to it)
DELETE_DELAY_KEY = "log.segment.delete.delay.ms"
SAMPLE_S = 1.0  # how often (model seconds) each filesystem's usage is recorded


@dataclass
class FsDisks(SimDisks):
    """``SimDisks`` with named dirs (``names``: broker -> its dirs; absent: the model's two),
    the filesystem each dir lies on (``fs``: dir -> its filesystem's first dir; absent: its
    own) and bytes being deleted (``deleting``: until when, where, how many)."""

    names: dict[int, list[str]] = field(default_factory=dict)
    fs: dict[DirKey, DirKey] = field(default_factory=dict)
    deleting: list[tuple[float, DirKey, int]] = field(default_factory=list)

    def dirs_of(self, broker: int) -> list[str]:
        return list(self.names.get(broker) or super().dirs_of(broker))

    def fs_of(self, d: DirKey) -> DirKey:
        return self.fs.get(d, d)

    def used(self, logs: Iterable[ReplicaLogInfo]) -> Counter[DirKey]:
        """Each filesystem's used bytes: other writers', the replica logs, the deleted ones
        whose files are still there."""
        used: Counter[DirKey] = Counter()
        for d, n in self.other.items():
            used[self.fs_of(d)] += n
        for info in logs:
            used[self.fs_of((info.broker, info.log_dir))] += info.size_bytes
        for _, d, n in self.deleting:
            used[self.fs_of(d)] += n
        return used

    def capacity(
        self, dirs: Mapping[int, Sequence[str]], logs: Iterable[ReplicaLogInfo]
    ) -> dict[int, dict[str, DirCapacity]]:
        used = self.used(logs)
        out: dict[int, dict[str, DirCapacity]] = {}
        for b, ds in dirs.items():
            out[b] = {}
            for d in ds:
                k = self.fs_of((b, d))
                total = self.total.get(k, self.total.get((b, d)))
                usable = None if total is None else max(0, total - used[k])
                out[b][d] = DirCapacity(total, usable)
        return out


class DiskSim(SimCluster):
    """The model cluster with ``FsDisks``, growing partitions (``growth``: bytes/s each) and
    its filesystems' usage over time (``usage``: filesystem -> [(model s, bytes used)], every
    ``SAMPLE_S``, for the filesystems of known size)."""

    def __init__(self, *args, delete_delay_s: float = DELETE_DELAY_S, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.disks: FsDisks = FsDisks()
        self.delete_delay_s = delete_delay_s
        self.delete_delays: dict[int, float] = {}  # per broker, where it said its own
        self.growth: dict[TopicPartition, float] = {}
        self.usage: dict[DirKey, list[tuple[float, int]]] = {}
        self.sampled_at: float | None = None

    def _finish(self, sp: SimPartition) -> None:
        """The leaving replicas' files stay for their broker's delay, whole."""
        for b in sp.original or ():
            if b not in (sp.target or ()):
                d = (b, sp.dirs.get(b, self.log_dirs_of(b)[0]))
                until = self.t + self.delete_delays.get(b, self.delete_delay_s)
                self.disks.deleting.append((until, d, int(sp.size_bytes)))
        super()._finish(sp)

    def _advance(self, dt: float) -> None:
        for tp, rate in self.growth.items():
            sp = self.partitions.get(tp)
            if sp is not None and rate > 0:
                sp.size_bytes += rate * dt
        super()._advance(dt)
        self.disks.deleting = [x for x in self.disks.deleting if x[0] > self.t]
        if self.sampled_at is None or self.t - self.sampled_at >= SAMPLE_S - 1e-9:
            self.sample()

    def sample(self) -> None:
        """Each sized filesystem's used bytes now, appended to ``usage``."""
        self.sampled_at = self.t
        sized = {self.disks.fs_of(d) for d in self.disks.total}
        brokers = sorted({b for b, _ in sized})
        used = self.disks.used(self.disks.logs(self.partitions.values(), set(brokers), None))
        for k in sorted(sized):
            self.usage.setdefault(k, []).append((round(self.t, 3), int(used[k])))
