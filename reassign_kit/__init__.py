__version__ = '0.1.0'


def __getattr__(name: str):
    """``reassign_kit.progress(...)`` etc. without importing everything up front."""
    import importlib

    if name == "progress":  # a callable module: reassign_kit.progress(gateway, plan, journal)
        return importlib.import_module(".progress", __name__)
    if name == "plan":  # reassign_kit.plan(snapshot, ...): pyspark is imported only when used
        return importlib.import_module(".planner", __name__).plan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
