"""What a run waits for on its disks, folded from its events (run/disks.py journals them): the
moves held for space ("waiting for space on broker 3 /data-1 ...") and a dir over the ceiling
that pauses new submissions. The live view and the panel say it in the same words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class DiskWaits:
    """The disk waits now: fold every event in order, then read ``line``."""

    def __init__(self) -> None:
        self.held: dict[tuple[Any, Any], str] = {}  # (topic, partition) -> why it waits
        self.over: dict[tuple[Any, Any], str] = {}  # (broker, dir) -> what is over

    def fold(self, e: Mapping[str, Any]) -> None:
        kind = e.get("event")
        tp = (e.get("topic"), e.get("partition"))
        if kind == "disk_hold":
            self.held[tp] = str(e.get("reason") or "waiting for space")
        elif kind in ("disk_release", "submitted", "cancelled", "failed"):
            self.held.pop(tp, None)
        elif kind == "disk_over_ceiling":
            self.over[(e.get("broker"), e.get("dir"))] = (
                f"broker {e.get('broker')} {e.get('dir')} is above the disk ceiling: new "
                "submissions paused"
            )
        elif kind == "disk_below_ceiling":
            self.over.pop((e.get("broker"), e.get("dir")), None)
        elif kind == "run_finished":
            self.held.clear()
            self.over.clear()

    def line(self) -> str | None:
        """The first thing waited for (and how many more moves wait), or None."""
        if self.over:
            return next(iter(self.over.values()))
        if not self.held:
            return None
        first = next(iter(self.held.values()))
        more = len(self.held) - 1
        return first + (f"; {more} more move(s) wait behind it" if more else "")
