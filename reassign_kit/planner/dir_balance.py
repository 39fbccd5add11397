"""The log-dir pass of ``--balance disks``, one broker at a time: every replica the broker
holds after the broker-level plan gets a log dir, so that each dir's bytes are within the
tolerance of its share of the broker's bytes (shares by each dir's total bytes when the broker
reported them all, else equal), moving as few bytes between dirs as it can.

- a replica new to the broker costs nothing wherever it lands: it is placed first, largest
  first, in the dir furthest below its share;
- then, while a dir is outside its band, one replica goes from the dir furthest above its
  share to the one furthest below (the one whose size is nearest the gap, those that cost
  nothing first; when none moves well, one swapped for a smaller one); each step lowers the
  sum of the dirs' distances to their shares, so the pass ends, and when every movable
  replica is at most a band's size it ends with every dir in its band;
- a cordoned dir (KIP-1066) receives nothing; what it holds stays unless ``drain``, then
  every replica it holds is placed like a new one;
- a filesystem never goes above the ceiling in the end state: a dir without room for a
  replica is not chosen; a replica that fits nowhere is a problem naming the dirs' room.

Pure: the broker's dirs and replicas are given (``dir_plan`` reads them from the snapshot)."""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DirSpec:
    """One log dir of a broker: its weight in the shares (its total bytes, or 1), the
    filesystem it lies on (dirs of one filesystem share its room) and whether it is cordoned."""

    name: str
    weight: float = 1.0
    fs: Hashable = None
    cordoned: bool = False


@dataclass(frozen=True)
class DirReplica:
    """A replica the broker holds after the plan: ``now`` its dir (None: new to the broker);
    ``fixed``: counted where it is, never moved (a topic the selection leaves out)."""

    key: Hashable
    size: int
    now: str | None
    fixed: bool = False


@dataclass
class BrokerDirPlan:
    """The pass's answer for one broker: each replica's dir, the dirs' bytes before / after,
    their shares and bands, the bytes moved between dirs and what could not be met."""

    broker: int
    placed: dict[Hashable, str]
    before: dict[str, int]
    after: dict[str, int]
    share: dict[str, float]
    band: dict[str, float]
    moved_bytes: int = 0
    outside: list[str] = field(default_factory=list)  # dirs left outside their band
    no_room: list[str] = field(default_factory=list)  # replicas that fit under no ceiling


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


class _Broker:
    """The pass's state for one broker: loads per dir, each replica's dir, the room left."""

    def __init__(
        self,
        dirs: Sequence[DirSpec],
        replicas: Sequence[DirReplica],
        room: dict[Hashable, float],
        drain: bool,
    ):
        self.active = [d for d in dirs if not d.cordoned]
        drain = drain and bool(self.active)  # every dir cordoned: the broker's drain, not ours
        self.spec = {d.name: d for d in dirs}
        self.room = dict(room)  # filesystem -> bytes it may still take (absent: unbounded)
        self.load = {d.name: 0 for d in dirs}
        self.where: dict[Hashable, str] = {}
        self.by_key = {r.key: r for r in replicas}
        self.by_name = {str(r.key): r for r in replicas}
        # per dir, the movable replicas in it by (size, name): those whose move out costs
        # nothing ("away": new to the broker, or from another dir) and those it costs ("home")
        self.away: dict[str, list[tuple[int, str]]] = {d.name: [] for d in dirs}
        self.home: dict[str, list[tuple[int, str]]] = {d.name: [] for d in dirs}
        self.loose: list[DirReplica] = []  # to place: new, or in a cordoned dir drained
        for r in replicas:
            spec = self.spec.get(r.now) if r.now is not None else None
            if not r.fixed and (spec is None or (spec.cordoned and drain)):
                self.loose.append(r)
                if spec is not None:  # leaving its dir frees its bytes there
                    self._free(spec.fs, r.size)
            elif spec is not None:
                self.where[r.key] = spec.name
                self.load[spec.name] += r.size
                if not r.fixed:
                    self._listed(r, spec.name).append((r.size, str(r.key)))
        for lists in (self.away, self.home):
            for v in lists.values():
                v.sort()
        movable = sum(r.size for r in replicas) - sum(self.load[d.name] for d in dirs if d.cordoned)
        w = sum(d.weight for d in self.active)
        self.share = {d.name: movable * d.weight / w for d in self.active} if w else {}

    def _free(self, fs: Hashable, size: int) -> None:
        if fs in self.room:
            self.room[fs] += size

    def fits(self, d: str, size: int) -> bool:
        fs = self.spec[d].fs
        return fs not in self.room or self.room[fs] >= size

    def _listed(self, r: DirReplica, d: str) -> list[tuple[int, str]]:
        return (self.home if r.now == d else self.away)[d]

    def put(self, r: DirReplica, d: str) -> None:
        old = self.where.get(r.key)
        if old is not None:
            lst = self._listed(r, old)
            del lst[bisect_left(lst, (r.size, str(r.key)))]
            self.load[old] -= r.size
            if self.spec[old].fs != self.spec[d].fs:
                self._free(self.spec[old].fs, r.size)
        if old is None or self.spec[old].fs != self.spec[d].fs:
            fs = self.spec[d].fs
            if fs in self.room:
                self.room[fs] -= r.size
        self.where[r.key] = d
        self.load[d] += r.size
        insort(self._listed(r, d), (r.size, str(r.key)))

    def dev(self, d: str) -> float:
        return self.load[d] - self.share[d]

    def room_for(self, over: str, under: str) -> float:
        """The largest replica ``under`` may take from ``over`` (its filesystem's room)."""
        fs = self.spec[under].fs
        if fs not in self.room or fs == self.spec[over].fs:
            return float("inf")
        return self.room[fs]

    def swap(
        self, over: str, under: str, gap: float, limit: float
    ) -> tuple[DirReplica, DirReplica] | None:
        """When no one replica moves well: a replica of ``over`` for a smaller one of
        ``under``, their difference nearest ``gap`` and below ``limit``."""
        pair = _swap_pair(
            sorted(self.away[over] + self.home[over]),
            sorted(self.away[under] + self.home[under]),
            gap,
            limit,
        )
        return None if pair is None else (self.by_name[pair[0]], self.by_name[pair[1]])

    def nearest(self, over: str, gap: float, limit: float) -> DirReplica | None:
        """The movable replica of ``over`` whose size is nearest ``gap`` and below ``limit``:
        among those whose move costs nothing first, else among those it costs."""
        for lst in (self.away[over], self.home[over]):
            i = bisect_left(lst, (limit,))  # the first at or above the limit: excluded
            near = [c for c in (lst[i - 1] if i else None,) if c is not None]
            j = bisect_left(lst, (gap,), 0, i)
            near += [lst[k] for k in (j - 1, j) if 0 <= k < i]
            if near:
                size, name = min(near, key=lambda c: (abs(c[0] - gap), c))
                return self.by_name[name]
        return None


def _swap_pair(
    over: list[tuple[int, str]], under: list[tuple[int, str]], gap: float, limit: float
) -> tuple[str, str] | None:
    """Names of a replica of ``over`` and one of ``under`` whose difference in size is
    nearest ``gap``, above 0 and below ``limit`` (sorted (size, name) lists)."""
    best: tuple[float, str, str] | None = None
    for size, name in over:
        j = bisect_left(under, (size - gap,))
        for k in (j - 1, j):
            if 0 <= k < len(under):
                diff = size - under[k][0]
                if 0 < diff < limit and (best is None or abs(diff - gap) < best[0]):
                    best = (abs(diff - gap), name, under[k][1])
    return None if best is None else best[1:]


def _place_loose(b: _Broker, tolerance_band: dict[str, float], no_room: list[str]) -> None:
    """New (and drained) replicas, largest first, each in the active dir with room whose
    bytes after it are lowest against its share."""
    for r in sorted(b.loose, key=lambda r: (-r.size, str(r.key))):
        fit = [d.name for d in b.active if b.fits(d.name, r.size)]
        if not fit:
            rooms = ", ".join(f"{d.name} {_mb(max(b.room.get(d.fs, 0), 0))} free" for d in b.active)
            no_room.append(f"{r.key} ({_mb(r.size)}): {rooms or 'no log dir takes replicas'}")
            fit = [d.name for d in b.active] or [next(iter(b.spec))]
        best = min(fit, key=lambda d: ((b.load[d] + r.size) / b.spec[d].weight, d))
        b.put(r, best)


def _step(b: _Broker, band: dict[str, float]) -> bool:
    """One replica from the dir furthest above its share to the one furthest below, or False
    when every dir is in its band or no move lowers their distance to the shares."""
    names = [d.name for d in b.active]
    out = [d for d in names if abs(b.dev(d)) > band[d]]
    if not out or len(names) < 2:
        return False
    over = max(names, key=lambda d: (b.dev(d), d))
    under = min(names, key=lambda d: (b.dev(d), d))
    e, u = b.dev(over), -b.dev(under)
    if e <= 0 or u <= 0:
        return False
    gap = min(e, u)
    room = b.room_for(over, under)  # a replica of at most this size fits (sizes are whole)
    limit = min(e + u, room if room == float("inf") else math.floor(room) + 1)
    best = b.nearest(over, gap, limit)
    if best is not None:
        b.put(best, under)
        return True
    pair = b.swap(over, under, gap, limit)
    if pair is None:
        return False
    b.put(pair[0], under)
    b.put(pair[1], over)
    return True


def balance_broker(
    broker: int,
    dirs: Sequence[DirSpec],
    replicas: Sequence[DirReplica],
    tolerance: float,
    room: dict[Hashable, float] | None = None,
    drain: bool = False,
    balance: bool = True,
) -> BrokerDirPlan:
    """Every replica of ``replicas`` in a dir of ``dirs`` (see the module doc). ``room``:
    filesystem -> the bytes it may still take under the ceiling (after what leaves the
    broker); ``balance`` False: only new and drained replicas are placed, nothing else moves."""
    b = _Broker(dirs, replicas, room or {}, drain)
    before = {d.name: 0 for d in dirs}
    for r in replicas:
        if r.now in before:
            before[r.now] += r.size
    band = {d: tolerance * s for d, s in b.share.items()}
    no_room: list[str] = []
    _place_loose(b, band, no_room)
    if balance:
        for _ in range(20 * len(replicas) + 100):  # bound: each step lowers the distance
            if not _step(b, band):
                break
    moved = sum(
        r.size for r in replicas if r.now is not None and b.where.get(r.key, r.now) != r.now
    )
    outside = [
        f"broker {broker} {d} {_mb(b.load[d])} (share {_mb(b.share[d])} ± {_mb(band[d])})"
        for d in sorted(b.share)
        if balance and abs(b.dev(d)) > band[d]
    ]
    return BrokerDirPlan(
        broker, dict(b.where), before, dict(b.load), b.share, band, moved, outside, no_room
    )


def disk_lines(dg: dict[str, Any] | None) -> list[str]:
    """The report's lines for the log-dir pass."""
    if not dg:
        return []
    head = (
        f"log dirs: within {100 * dg['tolerance']:g}% of their share on every broker"
        if dg["goal"] and dg["met"]
        else "log dirs: cordoned dirs drained"
        if not dg["goal"]
        else "log dirs: " + "; ".join(dg["unmet"])
    )
    lines = [head + f"   moved between dirs: {dg['moved_bytes_between_dirs'] / 1e6:.1f} MB"]
    if dg["cordons_unknown"]:
        lines.append(
            "  cordoned log dirs not known for broker(s) "
            + ",".join(map(str, dg["cordons_unknown"]))
            + " (no cordoned.log.dirs config, KIP-1066): taken as none cordoned"
        )
    return lines
