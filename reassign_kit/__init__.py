"""reassign_kit: plan, execute (paced), watch, verify, cancel and analyse Kafka reassignments.

The Python API (``plan``, ``execute``, ``progress``, ``verify``, ``cancel``,
``list_reassignments``, ``rollback_plan``, ``take_snapshot``, ``Run``) is loaded lazily from the table below so
that ``import reassign_kit`` stays cheap (no pyspark, no Kafka clients)."""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> (module relative to this package, attribute)
_LAZY: dict[str, tuple[str, str]] = {
    "plan": (".api", "plan"),
    "execute": (".api", "execute"),
    "progress": (".api", "progress"),
    "verify": (".api", "verify"),
    "cancel": (".api", "cancel"),
    "list_reassignments": (".api", "list_reassignments"),
    "rollback_plan": (".api", "rollback_plan"),
    "take_snapshot": (".api", "take_snapshot"),
    "Run": (".run.run", "Run"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    """Import a public name on first use (pyspark only when ``plan`` is called, etc.)."""
    try:
        module, attr = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module, __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
