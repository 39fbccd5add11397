"""How one execute option is declared: its ``Option`` (CLI flag, help, panel widget, live or
not), the argparse converters its flags use (errors naming the option) and the choices of the
options that have some. ``run.options`` declares ``ExecuteOptions`` with these and
re-exports every name here."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..pacing.controller import Objective

ON_DEADLINE = ("wait", "stop", "cancel")
PACES = ("static", "adaptive")
ON_INTERRUPT = ("leave", "cancel")


# ----------------------------------------------------------------------- CLI converters


# Kafka's INT32 and INT64: a value past them is refused by name here rather than sent
# (a broker rejects it, or a client wraps it around to a negative number)
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def int_arg(name: str, minimum: int = 0, maximum: int = INT32_MAX) -> Callable[[str], int]:
    """An argparse type: an integer in ``minimum`` .. ``maximum``, the error naming the
    option."""

    def conv(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, not {s!r}") from None
        if v < minimum:
            rule = ">= 0" if minimum == 0 else f">= {minimum}" if minimum > 1 else "> 0"
            raise argparse.ArgumentTypeError(f"{name} must be {rule}, not {v}")
        if v > maximum:
            raise argparse.ArgumentTypeError(f"{name} must be <= {maximum}, not {v}")
        return v

    return conv


def duration_arg(name: str) -> Callable[[str], float]:
    """An argparse type: seconds > 0, or a number with s / m / h."""

    def conv(s: str) -> float:
        mult = {"s": 1, "m": 60, "h": 3600}.get(s[-1:].lower(), None)
        num = s[:-1] if mult else s
        try:
            v = float(num) * (mult or 1)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be a duration like 90, 90s, 15m or 2h, not {s!r}"
            ) from None
        if not 0 < v < math.inf:  # "inf" and "nan" parse as floats
            raise argparse.ArgumentTypeError(f"{name} must be > 0 and finite, not {s}")
        return v

    return conv


def share_arg(name: str) -> Callable[[str], float]:
    """An argparse type: a share in (0, 1], as 0.85 or 85%."""

    def conv(s: str) -> float:
        text = s.strip()
        try:
            v = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{name} must be a share like 0.85 or 85%, not {s!r}"
            ) from None
        if not 0 < v <= 1:
            raise argparse.ArgumentTypeError(f"{name} must be above 0 and at most 100%, not {s}")
        return v

    return conv


def slo_arg(name: str) -> Callable[[str], str]:
    """An argparse type: a produce-latency objective (``50ms``, ``0.05s``, ``+20ms``),
    kept as its canonical text (the journal's ``run_started`` holds it for a resume)."""

    def conv(s: str) -> str:
        try:
            return str(Objective.parse(s, name))
        except UsageError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return conv


# ----------------------------------------------------------------------- the declaration


@dataclass(frozen=True)
class Option:
    """How one ExecuteOptions field appears to people.

    CLI: ``flag`` (None = not a flag), ``group`` ("official": kafka-reassign-partitions has it
    too; "paced"; "steps"), argparse ``action`` / ``type`` / ``choices`` / ``metavar`` /
    ``cli_default``, and ``from_cli`` turning the parsed value into the field's value (e.g.
    ``--timeout`` milliseconds into seconds). Panel: ``label`` (None = no control), ``widget``
    (int | float | bool | choice | text), ``unset`` (the widget value that means None) and
    ``widget_help``. ``live``: may change while a run goes on (``Run.set_caps``)."""

    help: str
    flag: str | None = None
    group: str = "paced"
    action: Any = None  # an argparse action name or class
    type: Callable[[str], Any] | None = None
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    cli_default: Any = None
    from_cli: Callable[[Any], Any] | None = None
    label: str | None = None
    widget: str = "int"
    unset: Any = None
    widget_help: str = ""
    live: bool = False

    def argparse_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``add_argument(self.flag, **...)``."""
        kw: dict[str, Any] = {"help": self.help}
        if self.action:
            kw["action"] = self.action
        if self.type is not None:
            kw["type"] = self.type
        if self.choices:
            kw["choices"] = self.choices
        if self.metavar:
            kw["metavar"] = self.metavar
        if self.cli_default is not None:
            kw["default"] = self.cli_default
        return kw
