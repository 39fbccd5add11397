"""Notebook UI: ``panel(plan, bootstrap_servers=...)`` shows a plan and runs it live."""

from .panel import Panel, panel

__all__ = ["Panel", "panel"]
