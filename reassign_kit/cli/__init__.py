"""`reassign-kit`: dispatch to the sub-tools. Anything that is not a sub-command is the drop-in
for `kafka-reassign-partitions` (same flags), so runbooks written for it work unchanged.

Static: ``SUBCOMMANDS`` maps a first word to its command module's ``main``; every command
module translates flags into library calls and prints results.

A front end: it parses, calls the service (``api``) or the operation it exposes, presents;
it may import everything below it."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator

from ..errors import EXIT_INTERRUPTED, ReassignKitError, missing_extra
from . import calibrate, plan, reassign, report, runbook, sandbox, throttles
from .pipes import tolerant_output

# first word -> (main, whether the word is passed on)
SUBCOMMANDS: dict[str, tuple[Callable[[list[str]], int], bool]] = {
    "sandbox": (sandbox.main, False),
    "snapshot": (plan.main, True),
    "plan": (plan.main, True),
    "validate": (plan.main, True),
    "calibrate": (calibrate.main, False),
    "throttles": (throttles.main, False),
    "runbook": (runbook.main, False),
    "report": (report.main, False),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    with tolerant_output(), thread_errors_as_a_line():  # cli/pipes; the hook below
        return _main(argv)


@contextlib.contextmanager
def thread_errors_as_a_line() -> Iterator[None]:
    """A background thread's uncaught error is one line on stderr, never a traceback: its
    message may quote a secret (a webhook URL's path), so only its type and the thread are
    named (RK_DEBUG=1: the traceback)."""
    before = threading.excepthook

    def hook(a: threading.ExceptHookArgs) -> None:
        if os.environ.get("RK_DEBUG") or a.exc_type is SystemExit:
            before(a)
            return
        name = a.thread.name if a.thread is not None else "?"
        print(
            f"reassign-kit: background thread {name} failed: {a.exc_type.__name__} "
            "(set RK_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = before


def _main(argv: list[str]) -> int:
    try:
        if argv and argv[0] in SUBCOMMANDS:
            run, keep_word = SUBCOMMANDS[argv[0]]
            return int(run(argv if keep_word else argv[1:]) or 0)
        return int(reassign.main(argv) or 0)
    except ReassignKitError as e:
        print(f"reassign-kit: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("reassign-kit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except ImportError as e:  # an optional dependency: name the extra, never a traceback
        found = missing_extra(e)
        if found is None or os.environ.get("RK_DEBUG"):
            raise
        print(f"reassign-kit: {found}", file=sys.stderr)
        return found.exit_code
    except SystemExit as e:  # --help of a sub-command (argparse exits)
        return e.code if isinstance(e.code, int) else 0 if e.code is None else 2
    except Exception as e:  # a bug: a message, not a traceback (as the drop-in CLI)
        if os.environ.get("RK_DEBUG"):
            raise
        print(
            f"reassign-kit: unexpected {type(e).__name__}: {e} (set RK_DEBUG=1 for a traceback)",
            file=sys.stderr,
        )
        return ReassignKitError.exit_code
