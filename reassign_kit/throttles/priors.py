"""The operator's throttle values as they were before this tool first changed them
(``Priors``), and where they are kept: a paced run's journal (``throttle_prior`` events) or
the priors file legacy ``--execute`` writes beside its rollback file. What the end of a run,
``--verify``, ``--cancel`` and ``throttles --clean`` put back instead of deleting the key
(throttles/configs.py's ``sync_changes``); re-exported by throttles/configs.py."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cluster.gateway import DEFAULT_BROKER
from ..errors import UsageError


@dataclass
class Priors:
    """The operator's throttle configs as they were before this tool first changed them:
    ``brokers``: broker id (or ``DEFAULT_BROKER``) -> key -> value (None: not set);
    ``topics``: topic -> key -> the operator's entries of the list (None: none). A key
    recorded once is never recorded again: that first value is what the end puts back."""

    brokers: dict[Any, dict[str, str | None]] = field(default_factory=dict)
    topics: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def known(self, part: str, name: Any, key: str) -> bool:
        return key in getattr(self, part).get(name, {})

    def get(self, part: str, name: Any, key: str) -> str | None:
        return getattr(self, part).get(name, {}).get(key)

    def record(self, part: str, name: Any, key: str, value: str | None) -> None:
        getattr(self, part).setdefault(name, {}).setdefault(key, value)

    def update(self, other: Priors) -> None:
        for part in ("brokers", "topics"):
            for name, kv in getattr(other, part).items():
                for k, v in kv.items():
                    self.record(part, name, k, v)

    def __bool__(self) -> bool:
        return bool(self.brokers or self.topics)

    def operator_values(self) -> dict[str, Any]:
        """Only the values to put back (recorded keys that were set), for reports."""
        return {
            part: {
                str(n): {k: v for k, v in kv.items() if v}
                for n, kv in getattr(self, part).items()
                if any(kv.values())
            }
            for part in ("brokers", "topics")
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "brokers": {str(b): dict(kv) for b, kv in sorted(self.brokers.items(), key=str)},
            "topics": {t: dict(kv) for t, kv in sorted(self.topics.items())},
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Priors:
        def broker(b: str) -> Any:
            return b if b == DEFAULT_BROKER else int(b)

        return cls(
            {broker(b): dict(kv) for b, kv in (obj.get("brokers") or {}).items()},
            {t: dict(kv) for t, kv in (obj.get("topics") or {}).items()},
        )

    @classmethod
    def from_events(cls, events: Iterable[Mapping[str, Any]]) -> Priors:
        """The priors a journal recorded (its ``throttle_prior`` events; the first wins)."""
        out = cls()
        for e in events:
            if e.get("event") == "throttle_prior":
                out.update(cls.from_json(e))
        return out


def priors_path_for(rollback_path: str) -> str:
    """Where legacy ``--execute`` saves the throttle priors: beside its rollback file."""
    stem, _ = os.path.splitext(rollback_path)
    return f"{stem}.throttle-priors.json"


def load_priors(source: Priors | str | os.PathLike | None) -> Priors | None:
    """Priors from a run's journal (``.jsonl``: its ``throttle_prior`` events) or the priors
    file legacy ``--execute`` wrote; a ``Priors`` as is; None as None."""
    if source is None or isinstance(source, Priors):
        return source
    path = os.fspath(source)
    if not os.path.exists(path):
        raise UsageError(f"throttle priors {path}: no such file")
    if path.endswith(".jsonl"):
        from ..moves.journal import read_events

        return Priors.from_events(read_events(path))
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except (OSError, ValueError) as e:
        raise UsageError(f"throttle priors {path}: cannot read it: {e}") from None
    if not isinstance(obj, dict):
        raise UsageError(f"throttle priors {path}: not a priors file")
    return Priors.from_json(obj.get("throttle_priors", obj))
