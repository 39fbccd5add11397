"""``reassign_kit.plan``: the planner's façade. It picks the engine (Spark, or the same chunk
planner in process) so that neither the planner core nor the Spark job imports the other's
caller (no cycle planner <-> spark.planner)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from .errors import UsageError
from .planner.in_process import plan_in_process
from .planner.params import (
    DEFAULT_BYTES_TOLERANCE,
    DEFAULT_CHUNKS,
    PlanParams,
    parse_balance,
    rule_context,
)
from .planner.report import PlanResult
from .planner.rules import Capacity
from .snapshot.filter import TopicFilter
from .snapshot.snapshot import Snapshot
from .spark.frames import brokers_and_topics
from .spark.planner import plan_spark
from .spark.session import get_spark


def plan(
    snapshot,
    remove_brokers: Iterable[int] = (),
    balance: str | Iterable[str] | None = None,
    replication_factor: int | None = None,
    topics: Iterable[str] = (),
    spark_master: str | None = None,
    engine: str = "spark",
    chunks: int = DEFAULT_CHUNKS,
    topic_filter: TopicFilter | None = None,
    demote_brokers: Iterable[int] = (),
    capacity: Capacity | str | None = None,
    bytes_tolerance: float = DEFAULT_BYTES_TOLERANCE,
    drain_cordoned: bool = False,
) -> PlanResult:
    """``reassign_kit.plan``: a minimal-movement, balanced, rack-aware plan for a snapshot
    (a ``Snapshot``, or a path to its JSON / Parquet form). ``engine="spark"`` (the default)
    runs in Spark (local mode unless ``spark_master``); ``"local"`` runs the same planner in
    this process. Either way the same snapshot and parameters give the same plan.
    ``topic_filter`` selects the topics planned (default: all but the internal ones).
    ``demote_brokers``: a leaders-only plan (replica order only) after which those brokers lead
    no partition another replica can lead.
    ``capacity``: a capacity file (path) or ``Capacity``: per broker ``disk_bytes`` and optional
    ``max_replicas``, hard limits the plan never exceeds (else ``CapacityError``, exit 3), and
    the weights of each broker's bytes share; with ``balance`` including ``bytes`` every broker
    ends within ``bytes_tolerance`` of its share. ``drain_cordoned``: every broker whose log dirs
    are all cordoned (KIP-1066, as the snapshot recorded them) is drained like a removed one; a
    cordoned broker never receives a new replica either way."""
    demote = tuple(sorted(set(demote_brokers)))
    params = PlanParams(
        remove_brokers=tuple(sorted(set(remove_brokers))),
        balance=("leaders",) if demote else parse_balance(balance),
        replication_factor=replication_factor,
        rf_topics=tuple(sorted(set(topics))),
        chunks=chunks,
        topic_filter=topic_filter or TopicFilter(),
        demote_brokers=demote,
        capacity=Capacity.read(capacity) if isinstance(capacity, str) else capacity,
        bytes_tolerance=bytes_tolerance,
        drain_cordoned=drain_cordoned,
    )
    if engine not in ("spark", "local"):
        raise UsageError(f"engine must be 'spark' or 'local', got {engine!r}")
    source = snapshot
    if isinstance(snapshot, str):
        is_parquet = os.path.isdir(snapshot) or snapshot.endswith(".parquet")
        source = snapshot if (engine == "spark" and is_parquet) else Snapshot.read(snapshot)
    if engine == "local":
        return plan_in_process(source, params)
    rule_context(brokers_and_topics(source), params)  # bad input fails before Spark starts
    return plan_spark(get_spark(spark_master), source, params)
