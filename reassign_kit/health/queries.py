"""The series names and PromQL queries of ``queries.toml`` (one file names them all).

``RK_HEALTH_QUERIES=PATH`` reads another file of the same shape: for a cluster whose exporter
names the series otherwise, or whose Prometheus labels brokers its own way."""

from __future__ import annotations

import os
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

from ..errors import UsageError

QUERIES_FILE = Path(__file__).with_name("queries.toml")
QUERIES_ENV = "RK_HEALTH_QUERIES"
SCRAPE_KEYS = (
    "identity", "request_handler_idle_ns", "request_handler_idle_ratio", "network_processor_idle",
    "request_time_ms", "requests", "under_replicated", "under_min_isr", "partition_under_min_isr",
    "bytes_in", "bytes_out", "produce_request", "fetch_follower_request",
)  # fmt: skip
PROMQL_KEYS = (
    "request_handler_idle", "network_processor_idle", "produce_p99_ms", "produce_p50_ms",
    "fetch_follower_p99_ms", "under_replicated", "under_min_isr", "bytes_in", "bytes_out",
    "partitions_under_min_isr",
)  # fmt: skip


def path() -> Path:
    env = os.environ.get(QUERIES_ENV)
    return Path(env) if env else QUERIES_FILE


def load() -> dict[str, Any]:
    """The file's tables, checked: every key present (UsageError naming the file and key)."""
    return _load(str(path()))


@cache
def _load(p: str) -> dict[str, Any]:
    try:
        with open(p, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"health queries file {p} ({QUERIES_ENV}): {e}") from None
    for table, keys in (("scrape", SCRAPE_KEYS), ("prometheus", PROMQL_KEYS)):
        have = data.get(table)
        missing = [k for k in keys if not isinstance(have, dict) or k not in have]
        if missing:
            raise UsageError(f"health queries file {p}: [{table}] lacks {', '.join(missing)}")
    return data


def scrape_names() -> dict[str, Any]:
    return load()["scrape"]


def promql(window: str = "1m") -> dict[str, str]:
    """Each signal's PromQL with the rate window filled in."""
    return {
        k: " ".join(str(v).split()).replace("{window}", window)
        for k, v in load()["prometheus"].items()
    }
