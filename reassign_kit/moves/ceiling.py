"""The disk ceiling: no log dir goes above a share of its filesystem (default 85%) at any
instant of a run, counting that a moving partition's new copy grows on its target while the
source still holds the old one (pure: values in, an order or a refusal out).

A move *adds* its bytes to each target dir when it starts (the worst instant: the whole copy,
before any source frees) and *frees* them from each source dir when it completes. The bytes it
adds count what the partition grows by while it moves (``growth_during``: its write rate over
the time its copy takes, bounded); what a source frees is its size at rest (its own growth
stays counted on it: conservative). Three questions, one model:

- ``end_state_problems``: the plan's end state above a ceiling, each dir named with its bytes;
- ``order_within_ceiling``: an order of the moves such that, run one after another, no dir
  goes over; the file's order when it already does, else a search (exact on small plans,
  bounded on big ones) that refuses naming the dir that blocks;
- ``hold_reason``: the run's gate before each submission, from measured usage plus what the
  moves in flight may still write. A held move holds every later one too, so that whenever
  nothing is in flight the moves done are a prefix of the order, where the next one fits:
  with ``order_within_ceiling``'s order the run never waits for space it cannot get.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..errors import InvalidPlanError
from ..model import TopicPartition

DEFAULT_CEILING = 0.85
# a move's growth is counted over at most this long (a partition written faster than it
# copies never catches up: no bound from its rate alone)
GROWTH_HORIZON_S = 3600.0
# beyond this many states the search gives up (the file order and a greedy pass come first)
SEARCH_BUDGET = 20_000

DirKey = tuple[int, str]  # (broker, log dir)


def dir_name(d: DirKey) -> str:
    return f"broker {d[0]} {d[1]}"


def fmt_bytes(n: float) -> str:
    for unit, k in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= k:
            return f"{n / k:.1f} {unit}"
    return f"{int(n)} B"


def growth_during(size_bytes: int, rate_bps: float | None, copy_bps: float) -> int:
    """Bytes a partition of ``size_bytes`` written at ``rate_bps`` (net growth; None or below
    zero: none) grows by while its copy runs at ``copy_bps``: rate x the copy's time, the copy
    chasing what is written meanwhile (size / (copy - rate)), the time bounded by
    ``GROWTH_HORIZON_S``."""
    if not rate_bps or rate_bps <= 0 or size_bytes <= 0:
        return 0
    catch_up = copy_bps - rate_bps
    seconds = GROWTH_HORIZON_S if catch_up <= 0 else min(size_bytes / catch_up, GROWTH_HORIZON_S)
    return int(rate_bps * seconds)


@dataclass(frozen=True)
class DiskMove:
    """One partition move as the disks see it: ``adds`` gain ``size_bytes`` plus
    ``growth_bytes`` (what it grows by while moving) when it starts, ``frees`` lose
    ``size_bytes`` when it completes."""

    tp: TopicPartition
    size_bytes: int
    adds: tuple[DirKey, ...] = ()
    frees: tuple[DirKey, ...] = ()
    growth_bytes: int = 0

    @property
    def need(self) -> int:
        """What its new copy may take on each target dir by the time it completes."""
        return self.size_bytes + max(0, self.growth_bytes)


@dataclass(frozen=True)
class Disks:
    """Each dir's bytes used now and its ceiling in bytes (share x total)."""

    used: Mapping[DirKey, int]
    limit: Mapping[DirKey, int]

    @classmethod
    def of(cls, total: Mapping[DirKey, int], used: Mapping[DirKey, int], ceiling: float) -> Disks:
        return cls(dict(used), {d: int(t * ceiling) for d, t in total.items()})

    def headroom(self, d: DirKey, used: Mapping[DirKey, int]) -> int | None:
        """Bytes ``d`` may still take below its ceiling (None: a dir with no known size)."""
        lim = self.limit.get(d)
        return None if lim is None else lim - used.get(d, 0)


def end_state_problems(moves: Iterable[DiskMove], disks: Disks) -> list[str]:
    """Every dir the plan leaves above its ceiling, with the bytes."""
    used = dict(disks.used)
    for m in moves:
        _apply(used, m)
    return [
        f"{dir_name(d)}: {fmt_bytes(used[d])} after the plan, above its ceiling of "
        f"{fmt_bytes(lim)} by {fmt_bytes(used[d] - lim)}"
        for d, lim in sorted(disks.limit.items())
        if used.get(d, 0) > lim
    ]


def blocking_dir(m: DiskMove, disks: Disks, used: Mapping[DirKey, int]) -> DirKey | None:
    """The first dir (in sorted order) that ``m``'s start would take over its ceiling."""
    for d in sorted(set(m.adds)):
        room = disks.headroom(d, used)
        if room is not None and m.need > room:
            return d
    return None


def _apply(used: dict[DirKey, int], m: DiskMove) -> None:
    for d in m.adds:
        used[d] = used.get(d, 0) + m.need
    for d in m.frees:
        used[d] = used.get(d, 0) - m.size_bytes


def order_within_ceiling(moves: Sequence[DiskMove], disks: Disks) -> list[DiskMove]:
    """An order that keeps every dir under its ceiling when moves run one after another (the
    given order when it does). Raises InvalidPlanError naming the dir and the bytes when the
    search finds none (exact: no order exists when the search was not cut by its budget)."""
    moves = list(moves)
    if _fits_in_order(moves, disks):
        return moves
    failed: set[frozenset[int]] = set()
    budget = [SEARCH_BUDGET]
    deepest: list[tuple[int, dict[DirKey, int], frozenset[int]]] = [(-1, {}, frozenset())]
    order = _search(moves, disks, dict(disks.used), frozenset(), failed, budget, deepest)
    if order is not None:
        return [moves[i] for i in order]
    _, used, done = deepest[0]
    raise InvalidPlanError(
        _refusal(moves, disks, used, done, exhausted=budget[0] > 0),
        header="no order of the moves keeps every log dir under its disk ceiling",
    )


def _fits_in_order(moves: Sequence[DiskMove], disks: Disks) -> bool:
    used = dict(disks.used)
    for m in moves:
        if blocking_dir(m, disks, used) is not None:
            return False
        _apply(used, m)
    return True


def _search(
    moves: Sequence[DiskMove],
    disks: Disks,
    used: dict[DirKey, int],
    done: frozenset[int],
    failed: set[frozenset[int]],
    budget: list[int],
    deepest: list[tuple[int, dict[DirKey, int], frozenset[int]]],
) -> list[int] | None:
    """Depth first over the sets of moves done (the usage depends on the set, not its order):
    moves that free the most of the tightest dirs first, failed sets remembered."""
    if len(done) == len(moves):
        return []
    if done in failed or budget[0] <= 0:
        return None
    budget[0] -= 1
    if len(done) > deepest[0][0]:
        deepest[0] = (len(done), dict(used), done)
    fitting = [
        i for i, m in enumerate(moves) if i not in done and blocking_dir(m, disks, used) is None
    ]
    for i in sorted(fitting, key=lambda i: (-_relief(moves[i], disks, used), i)):
        nxt = dict(used)
        _apply(nxt, moves[i])
        rest = _search(moves, disks, nxt, done | {i}, failed, budget, deepest)
        if rest is not None:
            return [i, *rest]
    if budget[0] > 0:
        failed.add(done)
    return None


def _relief(m: DiskMove, disks: Disks, used: Mapping[DirKey, int]) -> float:
    """How much ``m`` eases the tightest dirs once done (freed share of their ceiling)."""
    gain = 0.0
    for d in m.frees:
        lim = disks.limit.get(d)
        if lim:
            gain += m.size_bytes / lim * (used.get(d, 0) / lim)
    for d in m.adds:
        lim = disks.limit.get(d)
        if lim:
            gain -= m.need / lim * (used.get(d, 0) / lim)
    return gain


def _refusal(
    moves: Sequence[DiskMove],
    disks: Disks,
    used: Mapping[DirKey, int],
    done: frozenset[int],
    exhausted: bool,
) -> list[str]:
    out = []
    for i, m in enumerate(moves):
        if i in done:
            continue
        d = blocking_dir(m, disks, used)
        if d is not None:
            out.append(
                f"{m.tp}: {dir_name(d)} would hold {fmt_bytes(used.get(d, 0) + m.need)} "
                f"while {m.tp} copies ({_needs(m)}), above its ceiling of "
                f"{fmt_bytes(disks.limit[d])}"
            )
    if not exhausted:
        out.append(f"(the search stopped after {SEARCH_BUDGET} states; splitting the plan helps)")
    return out


def hold_reason(
    m: DiskMove,
    disks: Disks,
    inflight_remaining: Mapping[DirKey, int] | None = None,
) -> str | None:
    """None when ``m`` may start now, else "waiting for space on broker 3 /data-1 (...)".
    ``disks.used`` is measured now; ``inflight_remaining`` is what the moves in flight may
    still write into each dir (their copies are part grown)."""
    extra = inflight_remaining or {}
    for d in sorted(set(m.adds)):
        room = disks.headroom(d, disks.used)
        if room is None:
            continue
        room -= extra.get(d, 0)
        if m.need > room:
            return (
                f"waiting for space on {dir_name(d)} ({m.tp} needs {_needs(m)}, "
                f"{fmt_bytes(max(room, 0))} free below the ceiling of "
                f"{fmt_bytes(disks.limit[d])})"
            )
    return None


def _needs(m: DiskMove) -> str:
    """A move's bytes as said: "9.4 MB", or "9.4 MB + 1.2 MB growth while it moves"."""
    if m.growth_bytes > 0:
        return f"{fmt_bytes(m.size_bytes)} + {fmt_bytes(m.growth_bytes)} growth while it moves"
    return fmt_bytes(m.size_bytes)
