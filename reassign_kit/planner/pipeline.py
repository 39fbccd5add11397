"""The one pipeline: the passes in order, over a ``Backend`` that the in-process
engine (lists of rows per chunk) and the Spark job (chunk-partitioned frames, ``mapInPandas``)
both implement. A change to a pass is made once, here or in the pass's module.

1. aggregates: per-(chunk, broker) counts of the snapshot after the RF change (engine);
2. quotas: targets, bounds and every chunk's share of the moves, from the aggregates (driver);
3. replicas: each chunk planned on its own within its quotas (engine, per chunk);
3b. level: within each rack, brokers at most one replica apart across chunks (driver pairs,
   chunks apply);
4. bytes: rounds until every broker is within its band (driver splits, chunks apply);
5. capacity: the exact fit of every row within the hard limits (driver, only when needed);
6. leaders: one flow over the final sets' groups (driver), applied per chunk (engine);
7. finish: the plan and its report (driver).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Protocol

from .aggregates import Aggregates
from .bytes_pass import BytesPlan, prepare_bytes
from .demotion import demote_states, demoted_leading_after, demoted_left
from .finish import finish
from .leaders import LeaderPlan, prepare_leaders
from .level import LEVEL_ROUNDS, level_quotas
from .params import BYTES_ROUNDS, PlanParams
from .quotas import Prepared, prepare
from .report import PlanResult
from .rows import Changed
from .rules import RuleContext


class Backend(Protocol):
    """Where the partitions live and how a pass runs over each chunk of them. The backend keeps
    every partition's current row (after the replica pass: its final replica set) between calls;
    the pipeline sees only aggregates, quotas and, at the end, the rows that change."""

    def aggregate(self, params: PlanParams, ctx: RuleContext) -> Aggregates:
        """Pass 1: the aggregates (``aggregates.aggregate_rows`` over every row)."""
        ...

    def plan_replicas(self, prep: Prepared, keep_all: bool) -> None:
        """Pass 3: ``replica_chunk.plan_chunk`` on every chunk; ``keep_all``: later passes need
        the unchanged rows too."""
        ...

    def chunk_totals(self) -> dict[tuple[int, int], tuple[int, int]]:
        """(chunk, broker) -> (bytes, replicas) of the current rows."""
        ...

    def apply_bytes(self, bp: BytesPlan) -> None:
        """Pass 4, one round: ``bytes_pass.bytes_chunk`` on every chunk with a share of it."""
        ...

    def apply_level(self, pairs: Mapping[int, list[tuple[int, int]]], prep: Prepared) -> None:
        """Pass 3b on every chunk with levelling pairs (``level.level_chunk``)."""
        ...

    def fit_capacity(self, prep: Prepared) -> None:
        """Pass 5: ``finish.fit_capacity`` over every row (only when a limit or band is off)."""
        ...

    def demoted_partitions(self, demoted: frozenset) -> list:
        """The partitions a demoted broker holds, of every topic (selected or not), with their
        recorded leader and ISR (``PartitionEntry``)."""
        ...

    def leader_groups(self, ctx: RuleContext, demoted: frozenset, states: Mapping) -> dict:
        """(chunk, brokers that may lead, current leader) -> partitions
        (``leaders.leader_groups`` over the current rows)."""
        ...

    def apply_leaders(self, lp: LeaderPlan) -> list[Changed]:
        """Pass 6 per chunk (``leaders.lead_chunk``): the rows the plan changes."""
        ...

    def changed(self) -> list[Changed]:
        """The rows whose replica list changed (when no leader pass runs)."""
        ...


def run(
    backend: Backend, params: PlanParams, ctx: RuleContext, excluded: Mapping[str, str]
) -> PlanResult:
    """Every pass in order; ``excluded``: the topics the selection left out (topic -> why), for
    the partitions a demoted broker keeps leading."""
    timings: dict[str, float] = {}
    t = time.perf_counter()
    agg = backend.aggregate(params, ctx)
    timings["aggregate_s"] = time.perf_counter() - t
    t = time.perf_counter()
    prep = prepare(agg, ctx, params)
    timings["prepare_s"] = time.perf_counter() - t
    leaders = "leaders" in params.balance
    t = time.perf_counter()
    level = "replicas" in params.balance
    backend.plan_replicas(prep, keep_all=leaders or prep.bytes_pass or level)
    timings["plan_replicas_s"] = time.perf_counter() - t
    if level:
        t = time.perf_counter()
        for r in range(LEVEL_ROUNDS):
            pairs = level_quotas(backend.chunk_totals(), prep, r)
            if not pairs:  # within every rack the brokers are at most one replica apart
                break
            backend.apply_level(pairs, prep)
        timings["level_s"] = time.perf_counter() - t
    if prep.bytes_pass:
        t = time.perf_counter()
        seen = None
        rounds = 0
        for _ in range(BYTES_ROUNDS):
            totals = backend.chunk_totals()
            bp = prepare_bytes(totals, prep) if totals != seen else None
            if bp is None:  # within the bands, or the last round changed nothing
                break
            seen = totals
            rounds += 1
            backend.apply_bytes(bp)
        timings["bytes_rounds"] = rounds
        timings["bytes_s"] = time.perf_counter() - t
    if params.capacity is not None or "bytes" in params.balance:
        t = time.perf_counter()
        backend.fit_capacity(prep)
        timings["capacity_fit_s"] = time.perf_counter() - t
    lp = None
    if not leaders:
        changed = backend.changed()
    else:
        t = time.perf_counter()
        demoted = frozenset(params.demote_brokers)
        every = backend.demoted_partitions(demoted)
        held = [p for p in every if p.topic not in excluded]
        states = demote_states(held, demoted)
        lp = prepare_leaders(backend.leader_groups(ctx, demoted, states), ctx, demoted, states)
        timings["leader_flow_s"] = time.perf_counter() - t
        t = time.perf_counter()
        changed = backend.apply_leaders(lp)
        timings["leaders_s"] = time.perf_counter() - t
        if lp.demoted:  # what the recorded leaders and ISRs say the demoted brokers still lead
            lp.stuck = demoted_leading_after(held, changed, lp.demoted)
            lp.left = demoted_left(every, changed, lp.demoted, excluded)
    result = finish(changed, prep, lp)
    result.timings = timings
    return result
