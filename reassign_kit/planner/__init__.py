"""The planner (one package of small modules by job, one pipeline for both
engines). ``pipeline`` sequences the passes; ``in_process`` and ``spark/planner.py`` are the two
backends. Every name the CLI, the Spark job, the tests and the notebooks import is here."""

from .aggregates import Aggregates, aggregate_rows, can_change_rack, forced_racks, replica_options
from .apportion import apportion, apportion_2d
from .bytes_pass import BytesPlan, BytesQuota, bytes_chunk, bytes_off, chunk_totals, prepare_bytes
from .demotion import demote_states, demoted_leading_after, demoted_left
from .finish import finish, fit_capacity
from .in_process import InProcess, generate, plan_in_process
from .leaders import NO_STATE, LeaderPlan, lead_chunk, leader_groups, leader_key, prepare_leaders
from .level import level_chunk, level_quotas
from .params import (
    BYTES_ROUNDS,
    DEFAULT_BYTES_TOLERANCE,
    DEFAULT_CHUNKS,
    GOALS,
    PlanParams,
    parse_balance,
    rule_context,
)
from .pipeline import Backend
from .quotas import ChunkQuota, Prepared, prepare
from .replica_chunk import plan_chunk
from .report import PlanResult
from .rows import Changed, Row, chunk_key
from .targets import broker_targets, bytes_bands, lower_bound, relay_bound

__all__ = [
    "Aggregates",
    "BYTES_ROUNDS",
    "Backend",
    "BytesPlan",
    "BytesQuota",
    "Changed",
    "ChunkQuota",
    "DEFAULT_BYTES_TOLERANCE",
    "DEFAULT_CHUNKS",
    "GOALS",
    "InProcess",
    "LeaderPlan",
    "NO_STATE",
    "PlanParams",
    "PlanResult",
    "Prepared",
    "Row",
    "aggregate_rows",
    "apportion",
    "apportion_2d",
    "broker_targets",
    "bytes_bands",
    "bytes_chunk",
    "bytes_off",
    "can_change_rack",
    "chunk_key",
    "chunk_totals",
    "demote_states",
    "demoted_leading_after",
    "demoted_left",
    "finish",
    "fit_capacity",
    "forced_racks",
    "generate",
    "lead_chunk",
    "level_chunk",
    "level_quotas",
    "leader_groups",
    "leader_key",
    "lower_bound",
    "parse_balance",
    "plan_chunk",
    "plan_in_process",
    "prepare",
    "prepare_bytes",
    "prepare_leaders",
    "relay_bound",
    "replica_options",
    "rule_context",
]
