"""``--balance network`` (and ``network_in``, ``network_out``, ``leader_load``) on a plan the
other passes made: the snapshot's loads checked (an unknown load is a refusal, never a zero),
the network pass (``network_pass``) run over the plan's final replica lists, and the plan and
its report rebuilt from the result. It reads only the final rows, so both engines — which give
the same rows — give the same network plan."""

from __future__ import annotations

import heapq

from ..errors import UsageError
from ..snapshot.snapshot import Snapshot
from .finish import finish
from .network import RESOURCES, Goals, broker_loads
from .network_pass import Placement, solve
from .network_report import HOTTEST, network_report
from .params import PlanParams
from .report import PlanResult
from .rows import Changed

SHOWN = 10


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


def _led_first(p) -> list[int]:
    """The replicas with the recorded leader first (the state now), else as listed."""
    reps = list(p.replicas)
    if p.leader is not None and p.leader in reps:
        reps.remove(p.leader)
        reps.insert(0, p.leader)
    return reps


def balance_network(result: PlanResult, snap: Snapshot, params: PlanParams) -> PlanResult:
    """``result`` with the network goals of ``params.balance`` met where they can be."""
    require_loads(snap)
    prep = result.prepared
    ctx = prep.ctx
    selected, _ = snap.select(params.topic_filter)
    movable = {(p.topic, p.partition) for p in selected.partitions}
    keys = sorted(movable)
    original = {(p.topic, p.partition): p for p in snap.partitions}
    final = {k: list(p.replicas) for k, p in original.items()}
    for t, part, _old, new, _size in result.changed:
        final[(t, part)] = list(new)
    load = {
        (p.topic, p.partition): (p.load.produce_bytes_s, p.load.fetch_bytes_s)
        for p in snap.partitions
    }
    size = {(p.topic, p.partition): p.size_bytes for p in snap.partitions}
    background = [(final[k], load[k]) for k in final if k not in movable]
    bg_bytes: dict[int, int] = {}
    bg_count: dict[int, int] = {}
    for k in final:
        if k not in movable:
            for b in final[k]:
                bg_bytes[b] = bg_bytes.get(b, 0) + size[k]
                bg_count[b] = bg_count.get(b, 0) + 1
    goals = Goals.of(ctx.allowed, params.capacity, params.balance, params.network_tolerance)
    placement = Placement(
        reps={k: final[k] for k in keys},
        load=load,
        size=size,
        background=background,
        background_bytes=bg_bytes,
        background_count=bg_count,
        racks=ctx.racks,
        placeable=frozenset(ctx.placeable),
        holders=frozenset(ctx.allowed),
        goals=goals,
        capacity=params.capacity,
    )
    before = broker_loads(
        ((_led_first(p), load[(p.topic, p.partition)]) for p in snap.partitions), ctx.racks
    )
    start = {k: list(v) for k, v in placement.reps.items()}
    solve(placement)
    steps = sum(placement.reps[k] != start[k] for k in start)
    changed = [
        Changed(t, part, list(was.replicas), list(placement.reps[(t, part)]), was.size_bytes)
        for (t, part) in keys
        if list((was := original[(t, part)]).replicas) != placement.reps[(t, part)]
    ]
    out = finish(changed, prep, None)
    out.leader_balance, out.excluded, out.timings = (
        result.leader_balance,
        result.excluded,
        result.timings,
    )
    after = broker_loads(  # afresh: the pass kept its totals by additions
        [(r, load[k]) for k, r in placement.reps.items()] + background, ctx.racks
    )
    hottest = heapq.nsmallest(  # the report names the first few only
        HOTTEST,
        ((f"{t}-{part}", *load[(t, part)]) for t, part in load),
        key=lambda h: (-(h[1] + h[2]), h[0]),
    )
    out.network = network_report(before, after, goals, goals.unmet(after), hottest, steps)
    return out


def wants_network(balance: tuple[str, ...]) -> bool:
    return any(g in RESOURCES for g in balance)
