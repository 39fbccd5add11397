"""A closed output pipe never stops a command (``reassign-kit ... --execute | head``, a pager
quit early): what it prints after is dropped, as the official kafka-reassign-partitions' is
(Java's PrintStream swallows the error), and the work goes on to its own exit code.

Unguarded, the first print after the reader left raises BrokenPipeError: a run piped to
``head -3`` would stop before it began, one whose reader left mid-run exit 1 at its summary."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO


class TolerantStream:
    """``stream`` whose writes never raise BrokenPipeError: on the first, its file descriptor
    is pointed at /dev/null (what is still buffered, and anything a child process or the
    interpreter's exit writes there, goes nowhere) and ``dropped`` says so; ``on_drop`` is
    called once. Everything else is the stream's own."""

    def __init__(self, stream: TextIO, on_drop: Any = None):
        self._stream = stream
        self._on_drop = on_drop
        self.dropped = False

    def write(self, text: str) -> int:
        if not self.dropped:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.dropped:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self.dropped = True
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            self._stream.flush()  # the buffer's rest, to /dev/null now
        if self._on_drop is not None:
            self._on_drop()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def tolerant_output() -> Iterator[tuple[TolerantStream, TolerantStream]]:
    """sys.stdout and sys.stderr as TolerantStreams for the block (the command), put back
    after it. A closed stdout is said once on stderr (dropped too if it is the same pipe)."""
    out, err = sys.stdout, sys.stderr
    t_err = TolerantStream(err)

    def said() -> None:
        t_err.write(
            "reassign-kit: the output pipe closed: what the command prints from here on is "
            "dropped; it goes on (its journal and exit code are whole)\n"
        )
        t_err.flush()

    t_out = TolerantStream(out, said)
    sys.stdout, sys.stderr = t_out, t_err  # type: ignore[assignment]
    try:
        yield t_out, t_err
    finally:
        with contextlib.suppress(Exception):
            t_out.flush()
        with contextlib.suppress(Exception):
            t_err.flush()
        sys.stdout, sys.stderr = out, err
