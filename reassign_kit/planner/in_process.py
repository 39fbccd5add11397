"""The in-process engine: the pipeline's backend over lists of rows grouped by chunk, and
Kafka's ``--generate`` on top of it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from ..errors import UsageError
from ..model import Move, Plan
from ..snapshot.filter import TopicFilter, excluded_summary
from ..snapshot.snapshot import Snapshot
from ..snapshot.tier import move_bytes_of
from . import pipeline
from .aggregates import Aggregates, aggregate_rows
from .bytes_pass import BytesPlan, bytes_chunk, chunk_totals
from .finish import fit_capacity
from .leaders import NO_STATE, LeaderPlan, lead_chunk, leader_groups
from .level import level_chunk
from .params import PlanParams, rule_context
from .quotas import Prepared
from .replica_chunk import plan_chunk
from .report import PlanResult
from .rows import Changed, Row, chunk_key
from .rules import (
    Capacity,
    RuleContext,
)


class InProcess:
    """The pipeline's backend in one process: every chunk's rows in a dict, each pass a loop over
    the chunks in order (the same functions a Spark task runs)."""

    def __init__(self, rows: list[Row], chunks: int, partitions: Sequence):
        self.rows = rows
        self.chunks = chunks
        self.partitions = partitions  # of every topic: the demoted brokers' recorded state
        self.finals: dict[int, list[Changed]] = {}

    def aggregate(self, params: PlanParams, ctx: RuleContext) -> Aggregates:
        return aggregate_rows(self.rows, params, ctx)

    def plan_replicas(self, prep: Prepared, keep_all: bool) -> None:
        by_chunk: dict[int, list[Row]] = defaultdict(list)
        for r in self.rows:
            by_chunk[chunk_key(r[0], r[1]) % self.chunks].append(r)
        self.finals = {c: plan_chunk(by_chunk[c], prep, c) for c in sorted(by_chunk)}

    def chunk_totals(self) -> dict[tuple[int, int], tuple[int, int]]:
        totals: dict = {}
        for c, rs in self.finals.items():
            totals.update(chunk_totals(rs, c))
        return totals

    def apply_bytes(self, bp: BytesPlan) -> None:
        self.finals = {c: bytes_chunk(rs, bp, c) for c, rs in self.finals.items()}

    def apply_level(self, pairs: Mapping[int, list[tuple[int, int]]], prep: Prepared) -> None:
        self.finals = {c: level_chunk(rs, pairs.get(c, ()), prep) for c, rs in self.finals.items()}

    def fit_capacity(self, prep: Prepared) -> None:
        self.finals = fit_capacity(self.finals, prep)

    def demoted_partitions(self, demoted: frozenset) -> list:
        if not demoted:
            return []
        return [p for p in self.partitions if any(b in demoted for b in p.replicas)]

    def leader_groups(self, ctx: RuleContext, demoted: frozenset, states: Mapping) -> dict:
        return leader_groups(
            [
                (c, r[2], r[3], states.get((r[0], r[1]), NO_STATE)[1])
                for c, rs in self.finals.items()
                for r in rs
            ],
            ctx,
            demoted,
        )

    def apply_leaders(self, lp: LeaderPlan) -> list[Changed]:
        changed: list[Changed] = []
        for c in sorted(self.finals):
            changed += lead_chunk(self.finals[c], lp, c)
        return changed

    def changed(self) -> list[Changed]:
        changed: list[Changed] = []
        for c in sorted(self.finals):
            changed += [r for r in self.finals[c] if list(r[3]) != list(r[2])]
        return changed


def plan_in_process(snapshot, params: PlanParams | None = None) -> PlanResult:
    """The plain, single-process planner: the same chunks and the same plan as on Spark."""
    params = params or PlanParams()
    ctx = rule_context(snapshot, params)
    full = snapshot
    snapshot, excluded = snapshot.select(params.topic_filter)
    # a row's size is what a move of it copies (tiered topics: their local log, or less under
    # KIP-1023), so the movement goal prefers the cheap replicas and counts what moves
    cost = move_bytes_of(snapshot)
    rows = [Row(p.topic, p.partition, p.replicas, cost[p.tp].copied) for p in snapshot.partitions]
    backend = InProcess(rows, params.chunks, full.partitions)
    result = pipeline.run(backend, params, ctx, excluded)
    result.topic_bytes = sum(c.total for c in cost.values())
    return _with_excluded(result, full, excluded, ctx)


def _with_excluded(result: PlanResult, full, excluded: Mapping[str, str], ctx) -> PlanResult:
    """Record what the topic selection left out (the report lists it)."""
    parts: dict[str, int] = defaultdict(int)
    on_removed: dict[int, int] = defaultdict(int)
    for p in full.partitions:
        if p.topic in excluded:
            parts[p.topic] += 1
            for b in p.replicas:
                if b in ctx.removed:
                    on_removed[b] += 1
    result.excluded = excluded_summary(excluded, parts, on_removed)
    return result


def generate(
    snapshot,
    topics: Iterable[str],
    broker_list: Iterable[int],
    topic_filter: TopicFilter | None = None,
    capacity: Capacity | None = None,
) -> tuple[Plan, Plan]:
    """``--generate``: place the partitions of ``topics`` on ``broker_list`` with this planner
    (within ``capacity``'s hard limits when given; counted over those topics only).

    Returns (current assignment, proposed assignment) for every partition of those topics that
    ``topic_filter`` selects (internal topics only with ``include_internal``)."""
    topic_filter = topic_filter or TopicFilter()
    topics = sorted(set(topics))
    brokers = sorted(set(broker_list))
    known_t = {t.name for t in snapshot.topics}
    missing = [t for t in topics if t not in known_t]
    if missing:
        raise UsageError(f"--topics-to-move-json-file: topic(s) {missing} do not exist")
    known_b = set(snapshot.broker_ids())
    unknown = [b for b in brokers if b not in known_b]
    if unknown:
        raise UsageError(f"--broker-list: broker(s) {unknown} are not in the cluster")
    if not brokers:
        raise UsageError("--broker-list is empty")
    sub = Snapshot.of(
        snapshot.brokers,
        [t for t in snapshot.topics if t.name in set(topics)],
        [p for p in snapshot.partitions if p.topic in set(topics)],
    )
    remove = tuple(b for b in sorted(known_b) if b not in set(brokers))
    result = plan_in_process(
        sub, PlanParams(remove_brokers=remove, topic_filter=topic_filter, capacity=capacity)
    )
    sub, _ = sub.select(topic_filter)
    proposed = {m.tp: m for m in result.plan}
    cur = [Move(p.tp, tuple(p.replicas)) for p in sub.partitions]
    prop = [proposed.get(p.tp, Move(p.tp, tuple(p.replicas))) for p in sub.partitions]
    return Plan.of(cur), Plan.of(prop)
