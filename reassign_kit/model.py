"""Value types and the reassignment JSON of ``kafka-reassign-partitions`` (version 1).

The same JSON is used for input plans, ``--list`` output and rollback files. Reading is strict
(every problem is collected, each naming the entry at fault); writing is canonical (sorted by
topic then partition, fixed key order) so that the same plan always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from .errors import InvalidPlanError

ANY_LOG_DIR = "any"


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Move:
    """One partition's target: the replica list in order (first = preferred leader) and,
    optionally, one log dir per replica (absolute path or ``"any"``)."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None

    @property
    def topic(self) -> str:
        return self.tp.topic

    @property
    def partition(self) -> int:
        return self.tp.partition

    def to_json_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "replicas": list(self.replicas),
        }
        if self.log_dirs is not None:
            obj["log_dirs"] = list(self.log_dirs)
        return obj


@dataclass(frozen=True)
class Plan:
    """An ordered collection of moves, at most one per partition."""

    moves: tuple[Move, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, moves: Iterable[Move]) -> Plan:
        return cls(tuple(sorted(moves, key=lambda m: m.tp)))

    def __iter__(self) -> Iterator[Move]:
        return iter(self.moves)

    def __len__(self) -> int:
        return len(self.moves)

    def by_tp(self) -> dict[TopicPartition, Move]:
        return {m.tp: m for m in self.moves}

    def topics(self) -> list[str]:
        return sorted({m.tp.topic for m in self.moves})

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "version": 1,
            "partitions": [m.to_json_obj() for m in sorted(self.moves, key=lambda m: m.tp)],
        }

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_json_obj(), indent=indent)

    def digest(self) -> str:
        """sha256 of the canonical JSON: identifies a plan in journals whatever its file order."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json(indent=2) + "\n")

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> Plan:
        """Parse strictly; raise InvalidPlanError listing every structural problem at once.

        Cluster-dependent rules (known brokers, topics, partitions) live in ``validate``."""
        from .validate import parse_plan  # the structural rules live with the other rules

        return parse_plan(text, source)

    @classmethod
    def read(cls, path: str) -> Plan:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise InvalidPlanError([f"cannot read {path}: {e.strerror}"], header=f"{path}") from e
        return cls.from_json(text, source=path)


@dataclass(frozen=True)
class PartitionState:
    """What the cluster says about one partition right now."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    isr: tuple[int, ...] = ()
    leader: int | None = None
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """The replica set a reassignment in flight is heading to (replicas minus removing)."""
        return tuple(r for r in self.replicas if r not in self.removing)


def is_complete(target: Iterable[int], state: PartitionState | None) -> bool:
    """THE completion predicate, shared by verify, batch pacing, steps and the UI: the current
    replica list equals the target, in order, and the partition is not reassigning."""
    return state is not None and tuple(state.replicas) == tuple(target) and not state.reassigning
