__version__ = '0.1.0'


def __getattr__(name: str):
    """``reassign_kit.progress(...)`` etc. without importing everything up front."""
    import importlib

    if name == "progress":  # a callable module: reassign_kit.progress(gateway, plan, journal)
        return importlib.import_module(".progress", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
