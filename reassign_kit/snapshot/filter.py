"""Which topics a snapshot (and so a plan) covers (re-exported by snapshot): Kafka's
internal topics left out unless asked, ``--topics-regex`` / ``--exclude-topics-regex`` as a
``TopicFilter``, and the one line that says what was left out."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError

# Kafka's own topics; every name starting with "__" is treated as internal
INTERNAL_TOPICS = ("__consumer_offsets", "__transaction_state", "__share_group_state")


def is_internal(topic: str) -> bool:
    return topic in INTERNAL_TOPICS or topic.startswith("__")


def compile(flag: str, pattern: str | None) -> re.Pattern | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as e:
        raise UsageError(f"{flag}: not a valid regular expression {pattern!r}: {e}") from None


@dataclass(frozen=True)
class TopicFilter:
    """Which topics a command works on: ``include`` and ``exclude`` are regular expressions a
    whole topic name must match (Python ``re.fullmatch``, like Java's ``matches``); internal
    topics (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``, any name
    starting with ``__``) are left out unless ``include_internal``."""

    include: str | None = None
    exclude: str | None = None
    include_internal: bool = False

    def __post_init__(self) -> None:
        compile("--topics-regex", self.include)
        compile("--exclude-topics-regex", self.exclude)

    def why_excluded(self, topic: str) -> str | None:
        """None when the topic is selected, else the reason it is not."""
        if not self.include_internal and is_internal(topic):
            return "internal (--include-internal plans it)"
        inc = compile("--topics-regex", self.include)
        if inc is not None and not inc.fullmatch(topic):
            return f"not matched by --topics-regex {self.include!r}"
        exc = compile("--exclude-topics-regex", self.exclude)
        if exc is not None and exc.fullmatch(topic):
            return f"matched by --exclude-topics-regex {self.exclude!r}"
        return None

    def selects(self, topic: str) -> bool:
        return self.why_excluded(topic) is None

    def split(self, topics: Iterable[str]) -> tuple[list[str], dict[str, str]]:
        """(selected topics, excluded topic -> reason), both sorted."""
        kept, out = [], {}
        for t in sorted(set(topics)):
            why = self.why_excluded(t)
            if why is None:
                kept.append(t)
            else:
                out[t] = why
        return kept, out

    @property
    def is_default(self) -> bool:
        return self == TopicFilter()

    def describe(self) -> dict[str, Any]:
        return {
            "topics_regex": self.include,
            "exclude_topics_regex": self.exclude,
            "include_internal": self.include_internal,
        }


def excluded_summary(
    reasons: Mapping[str, str],
    partitions: Mapping[str, int],
    on_removed: Mapping[int, int] | None = None,
) -> dict[str, Any]:
    """What a topic selection left out, for a report: each topic with its reason and partition
    count, and the replicas the excluded topics keep on brokers being removed."""
    return {
        "topics": [
            {"topic": t, "reason": why, "partitions": int(partitions.get(t, 0))}
            for t, why in sorted(reasons.items())
        ],
        "partitions": int(sum(partitions.get(t, 0) for t in reasons)),
        "replicas_left_on_removed_brokers": {
            int(b): int(n) for b, n in sorted((on_removed or {}).items()) if n
        },
    }
