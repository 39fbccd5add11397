"""The series names and PromQL queries of ``queries.toml`` (one file names them all)."""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from typing import Any

QUERIES_FILE = Path(__file__).with_name("queries.toml")


@cache
def load() -> dict[str, Any]:
    with QUERIES_FILE.open("rb") as f:
        return tomllib.load(f)


def scrape_names() -> dict[str, Any]:
    return load()["scrape"]


def promql(window: str = "1m") -> dict[str, str]:
    """Each signal's PromQL with the rate window filled in."""
    return {
        k: " ".join(v.split()).replace("{window}", window) for k, v in load()["prometheus"].items()
    }
