"""``--balance network`` (and ``network_in``, ``network_out``, ``leader_load``) on a plan the
other passes made: the snapshot's loads checked (an unknown load is a refusal, never a zero),
the network pass (``network_pass``) run over the plan's final replica lists, and the plan and
its report rebuilt from the result. It reads only the final rows, so both engines — which give
the same rows — give the same network plan."""

from __future__ import annotations

import gc
import heapq
import itertools
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter, itemgetter

import numpy as np

from ..errors import UsageError
from ..snapshot.snapshot import Snapshot
from .finish import finish
from .network import RESOURCES, Goals
from .network_arrays import Flat, columns
from .network_pass import Placement, solve
from .network_report import HOTTEST, network_report
from .params import PlanParams
from .report import PlanResult
from .rows import Changed

SHOWN = 10
KEY = itemgetter(0, 1)  # a row's (topic, partition)
REPLICAS, LEADER = attrgetter("replicas"), attrgetter("leader")


def require_loads(snap: Snapshot) -> None:
    """Every partition's load known, nothing left unread: else a refusal naming them."""
    problems: list[str] = []
    if snap.load is not None and snap.load.unread:
        problems += [f"not read when sampled: {u}" for u in snap.load.unread]
    missing = [str(p.tp) for p in snap.partitions if p.load is None]
    if missing:
        problems.append(
            f"{len(missing)} partition(s) without a load: {', '.join(missing[:SHOWN])}"
            + (" ..." if len(missing) > SHOWN else "")
        )
    if problems:
        raise UsageError(
            "--balance network needs every partition's load (reassign-kit snapshot "
            "--sample-load DURATION): " + "; ".join(problems[: SHOWN + 1])
        )


@dataclass
class Inputs:
    """What the pass starts from, read in one walk over the snapshot's partitions: each
    partition's load, size and replicas after the count passes, the movable ones (by key, in
    key order) apart from the fixed background, and each broker's loads now (``before``: the
    recorded leader first, as ``broker_loads`` sums them, partition by partition)."""

    load: dict[tuple[str, int], tuple[float, float]]
    size: dict[tuple[str, int], int]
    was: dict[tuple[str, int], Sequence[int]]  # the replicas now of those the passes moved
    reps: dict[tuple[str, int], list[int]]
    background: list[tuple[Sequence[int], tuple[float, float]]]
    background_bytes: dict[int, int]
    background_count: dict[int, int]
    before: dict[str, dict[int, float]]

    @classmethod
    def of(
        cls, snap: Snapshot, changed: Sequence[Changed], excluded: Mapping, brokers: Iterable[int]
    ) -> Inputs:
        new_of = {(t, part): new for t, part, _old, new, _size in changed}
        load, size, was, movable = {}, {}, {}, {}
        background, bg_bytes, bg_count = [], {}, {}
        for p in snap.partitions:
            k = (p.topic, p.partition)
            load[k] = lk = (p.load.produce_bytes_s, p.load.fetch_bytes_s)
            size[k] = n = p.size_bytes
            new = new_of.get(k)
            if new is not None:
                was[k] = p.replicas
            reps = list(p.replicas if new is None else new)
            if p.topic not in excluded:
                movable[k] = reps
                continue
            background.append((reps, lk))
            for b in reps:
                bg_bytes[b] = bg_bytes.get(b, 0) + n
                bg_count[b] = bg_count.get(b, 0) + 1
        keys = list(movable)
        order = sorted(keys)  # a snapshot lists them in key order: then nothing to rebuild
        reps = movable if order == keys else {k: movable[k] for k in order}
        parts = snap.partitions
        before = before_loads(
            list(map(REPLICAS, parts)), list(map(LEADER, parts)), list(load.values()), brokers
        )
        return cls(load, size, was, reps, background, bg_bytes, bg_count, before)


def before_loads(
    now: Sequence[Sequence[int]],
    leaders: Sequence[int | None],
    lks: Sequence[tuple[float, float]],
    brokers: Iterable[int],
) -> dict[str, dict[int, float]]:
    """Each broker's loads now: the recorded leader leads (else the first listed)."""
    flat = Flat.of(now, brokers)
    led = np.fromiter((-1 if x is None else x for x in leaders), dtype=np.int64, count=len(now))
    return flat.loads(*columns(lks), flat.heads(led))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the pass, back as it was after: the pass makes no
    cycles, and each collection would walk every object of a million-replica snapshot."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def balance_network(result: PlanResult, snap: Snapshot, params: PlanParams) -> PlanResult:
    """``result`` with the network goals of ``params.balance`` met where they can be."""
    with collector_paused():
        return _balanced(result, snap, params)


def _balanced(result: PlanResult, snap: Snapshot, params: PlanParams) -> PlanResult:
    t = time.perf_counter()
    require_loads(snap)
    prep = result.prepared
    ctx = prep.ctx
    _, excluded = snap.select(params.topic_filter)
    got = Inputs.of(snap, result.changed, excluded, ctx.racks)
    load = got.load
    goals = Goals.of(ctx.allowed, params.capacity, params.balance, params.network_tolerance)
    placement = Placement(
        reps=got.reps,
        load=load,
        size=got.size,
        background=got.background,
        background_bytes=got.background_bytes,
        background_count=got.background_count,
        racks=ctx.racks,
        placeable=frozenset(ctx.placeable),
        holders=frozenset(ctx.allowed),
        goals=goals,
        capacity=params.capacity,
    )
    solve(placement)
    final, start = placement.reps, placement.start
    steps = [k for k, was in start.items() if final[k] != was]  # ``start``: those it changed
    differ = sorted(set(steps).union(k for k in map(KEY, result.changed) if k in final))
    changed = []
    for k in differ:  # as the snapshot has it: moved by the count passes, else as it began
        was = got.was[k] if k in got.was else start[k]
        if list(was) != final[k]:
            changed.append(Changed(*k, list(was), list(final[k]), got.size[k]))
    out = finish(changed, prep, None)
    out.leader_balance, out.excluded = result.leader_balance, result.excluded
    after = placement.afresh()
    out.network = network_report(
        got.before, after, goals, goals.unmet(after), hottest(load), len(steps)
    )
    out.timings = {**result.timings, "network_s": time.perf_counter() - t}
    return out


def hottest(load: Mapping[tuple[str, int], tuple[float, float]]) -> list:
    """The ``HOTTEST`` partitions by produce + fetch, as ``(name, produce, fetch)`` (ties: by
    name): only those as hot as the ``HOTTEST``-th are named, not every partition."""
    sums = [p + c for p, c in load.values()]
    if not sums:
        return []
    floor = heapq.nlargest(HOTTEST, sums)[-1]
    hot = itertools.compress(load.items(), map(floor.__le__, sums))
    return heapq.nsmallest(
        HOTTEST,
        ((f"{t}-{part}", *pc) for (t, part), pc in hot),
        key=lambda h: (-(h[1] + h[2]), h[0]),
    )


def wants_network(balance: tuple[str, ...]) -> bool:
    return any(g in RESOURCES for g in balance)
