"""reassign_kit: plan, execute (paced), watch, verify, cancel and analyse Kafka reassignments.

The Python API (`plan`, `execute`, `verify`, `cancel`, `progress`, `list_reassignments`) is
loaded lazily so that `import reassign_kit` stays cheap (no pyspark, no Kafka clients)."""

__version__ = "0.1.0"


def __getattr__(name: str):
    """``reassign_kit.progress(...)`` etc. without importing everything up front."""
    import importlib

    if name in ("progress", "execute"):  # callable modules: reassign_kit.execute(plan, ...)
        return importlib.import_module(f".{name}", __name__)
    if name in ("verify", "cancel", "list_reassignments", "rollback_plan"):
        return getattr(importlib.import_module(".ops", __name__), name)
    if name == "plan":  # reassign_kit.plan(snapshot, ...): pyspark is imported only when used
        return importlib.import_module(".planner", __name__).plan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
