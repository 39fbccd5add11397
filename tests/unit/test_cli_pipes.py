"""A closed output pipe never stops a command (cli/pipes.py): `reassign-kit ... | head`."""

from __future__ import annotations

import io
import os
import subprocess
import sys

from reassign_kit.cli.pipes import TolerantStream


def test_a_write_to_a_pipe_without_reader_is_dropped_once_and_never_raises():
    r, w = os.pipe()
    os.close(r)  # the reader left (`head` exited)
    stream = io.TextIOWrapper(os.fdopen(w, "wb"), line_buffering=True)
    said = []
    t = TolerantStream(stream, lambda: said.append(1))
    t.write("first line\n")  # EPIPE: dropped, not raised
    t.write("more\n" * 10_000)
    t.flush()
    assert t.dropped and said == [1]
    assert os.readlink(f"/proc/self/fd/{stream.fileno()}") == os.devnull
    stream.close()


def test_the_cli_goes_on_to_its_own_exit_code_when_its_reader_is_gone():
    """`reassign-kit --help` with its stdout a pipe nobody reads: before, the first print
    raised ("unexpected BrokenPipeError", exit 1); now the command ends as it would have
    (exit 0), saying once on stderr that its output is dropped. (A paced run piped to
    `head -3` on the sandbox, by hand: it stopped before it began; now it completes.)"""
    r, w = os.pipe()
    os.close(r)  # no reader at all: the child's first write fails, whatever the timing
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "reassign_kit.cli", "--help"],
            stdout=w, stderr=subprocess.PIPE, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.close(w)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("the output pipe closed") == 1, proc.stderr
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr
