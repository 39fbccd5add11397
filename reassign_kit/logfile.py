"""Quiet output: what Spark's log4j, the JVM, papermill, Jupyter and the kernel
print goes to a log file named at the end, not to the terminal; ``-v`` keeps them on it.

``to_log_file(path)`` points this process's file descriptors 1 and 2 at the log for the
duration of a block (so child processes started inside it, a JVM or a kernel, keep writing
there for their whole life), with Python's own ``sys.stdout`` kept on the terminal: the
command's own lines still show."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator


def default_log_path(name: str) -> str:
    """``$RK_LOG_DIR/<name>.log`` or the temp dir's ``reassign-kit-<name>-<pid>.log``."""
    d = os.environ.get("RK_LOG_DIR")
    if d:
        return os.path.join(d, f"{name}.log")
    return os.path.join(tempfile.gettempdir(), f"reassign-kit-{name}-{os.getpid()}.log")


@contextlib.contextmanager
def to_log_file(path: str, verbose: bool = False, stdout_too: bool = False) -> Iterator[str]:
    """Inside the block, fd 2 (and fd 1 with ``stdout_too``) write to ``path`` (appended);
    Python's ``sys.stdout`` keeps writing to the terminal. ``verbose``: no redirection."""
    if verbose:
        yield path
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    fds = [2, 1] if stdout_too else [2]
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved = {fd: os.dup(fd) for fd in fds}
    old_stdout = sys.stdout
    try:
        if stdout_too:  # the command's own prints stay on the terminal
            sys.stdout = os.fdopen(os.dup(saved[1]), "w", buffering=1, closefd=True)
        for fd in fds:
            os.dup2(log, fd)
        yield path
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        if stdout_too and sys.stdout is not old_stdout:
            with contextlib.suppress(Exception):
                sys.stdout.close()
            sys.stdout = old_stdout
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)
        os.close(log)
