"""Notebook UI: ``panel(plan, bootstrap_servers=...)`` shows a plan and runs it live.

A front end: the panel starts, verifies and cancels through the service (``api``) and
controls a live ``Run``; it may import everything below the service."""

from .panel import Panel, panel

__all__ = ["Panel", "panel"]
