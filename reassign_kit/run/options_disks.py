"""The options of the disk ceiling a run holds (run/disks.py), declared as fields that
``ExecuteOptions`` (run/options.py) takes in with its own: one flag, one panel control, one
journaled value each, like every execute option."""

from __future__ import annotations

from dataclasses import dataclass, field

from .option_spec import Option, share_arg


@dataclass
class DiskOptions:
    """The disk ceiling: a share of each log dir's filesystem (None: off)."""

    disk_ceiling: float | None = field(
        default=0.85,
        metadata={
            "option": Option(
                "No log dir above this share of its filesystem (default 0.85): before each "
                "submission the usable bytes are read (DescribeLogDirs v4+) and a move that would "
                "take a target dir over, counting what the moves in flight still write, is held "
                "until space frees; a dir over it anyway pauses new submissions.",
                flag="--disk-ceiling",
                type=share_arg("--disk-ceiling"),
                metavar="SHARE",
                label="disk ceiling (share)",
                widget="float",
                unset=0.0,
                widget_help="of each log dir; 0 = off",
            )
        },
    )
