"""The sandbox's state file, ``<dir>/sandbox.json`` (ports, pids, racks, release, mode): how
every command, and another process, finds a cluster again."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .processes import Node

STATE_FILE = "sandbox.json"


def write_new(
    d: Path,
    cluster_id: str,
    version: str,
    metadata: str,
    security: str,
    controllers: list[Node],
    zookeeper: Node | None,
    brokers: list[Node],
) -> None:
    state = {
        "cluster_id": cluster_id,
        "kafka_version": version,
        "metadata": metadata,
        "security": security,
        "controller": controllers[0].__dict__ if controllers else None,
        "controllers": [c.__dict__ for c in controllers],
        "zookeeper": zookeeper.__dict__ if zookeeper is not None else None,
        "brokers": [n.__dict__ for n in brokers],
    }
    (d / STATE_FILE).write_text(json.dumps(state, indent=2))


def save_nodes(
    d: Path, controllers: list[Node], zookeeper: Node | None, brokers: list[Node]
) -> None:
    """The nodes (their pids) written back, atomically, the rest of the file kept."""
    path = d / STATE_FILE
    data: dict[str, Any] = json.loads(path.read_text())
    data["controller"] = controllers[0].__dict__ if controllers else None
    data["controllers"] = [c.__dict__ for c in controllers]
    if zookeeper is not None:
        data["zookeeper"] = zookeeper.__dict__
    data["brokers"] = [n.__dict__ for n in brokers]
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, path)


def reload_pids(
    d: Path, controllers: dict[int, Node], zookeeper: Node | None, brokers: dict[int, Node]
) -> None:
    """The pids as the file holds them now (another handle may have restarted a node)."""
    try:
        data = json.loads((d / STATE_FILE).read_text())
    except (OSError, ValueError):
        return
    for c in data.get("controllers") or []:
        if c["id"] in controllers:
            controllers[c["id"]].pid = c.get("pid")
    for b in data.get("brokers") or []:
        if b["id"] in brokers:
            brokers[b["id"]].pid = b.get("pid")
    if zookeeper is not None and data.get("zookeeper"):
        zookeeper.pid = data["zookeeper"].get("pid")
