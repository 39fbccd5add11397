"""The rows the passes hand one another, named: a partition as read (``Row``) and as planned
(``Changed``), and the chunk a partition belongs to (``chunk_key``)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import NamedTuple


class Row(NamedTuple):
    """A partition as the snapshot has it."""

    topic: str
    partition: int
    replicas: Sequence[int]
    size: int


class Changed(NamedTuple):
    """A partition as planned: its replicas before and after (``old == new``: unchanged)."""

    topic: str
    partition: int
    old: list[int]
    new: list[int]
    size: int


def chunk_key(topic: str, partition: int) -> int:
    """crc32 of 'topic-partition' (Spark's crc32 of the same string gives the same number)."""
    return zlib.crc32(f"{topic}-{partition}".encode())
