"""The small pieces every one-shot operation's result prints with (ops, ops_verify,
ops_cancel): a pandas table of its rows, a replica list as the official tool writes it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def rows_table(rows: list[dict[str, Any]], columns: list[str]) -> Any:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns)


def fmt_replicas(rs: Iterable[int]) -> str:
    return ",".join(str(r) for r in rs)
