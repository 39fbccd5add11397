"""Append-only run journal: one JSON object per line, so that a run killed at any moment
leaves a record that, with the cluster's state, is enough to resume it and to write its
postmortem.

Durability: each line goes to the operating system when it is written (a SIGKILL loses
nothing written) — inside a ``batch()`` (a run's poll) when the batch ends, or earlier when
``commit()`` runs, which hands over what is pending first — and ``commit()`` fsyncs — once per
poll of a run and before anything is sent to the cluster (group commit: one fsync per poll
instead of one per event). So whatever happens, the lines describing a change are on disk
before the change is sent; a SIGKILL in the middle of a poll may lose that poll's lines
written since its last change (what the cluster shows then, which a resume reads). A torn last line
(the process died mid-write) is cut off before the next append; a line before the last that
is not JSON is corruption, reported with its line number, never skipped. A failed write
raises ``JournalError`` and every later write raises too. The file is created mode 0600.

Every event carries ``ts`` (epoch seconds), ``event`` and ``run_id``. A redaction guard runs
on every write: the values of secret-looking keys (and the password inside a JAAS line) are
replaced, whole, before anything touches the disk (``redact``: by key, no global state).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from ..errors import JournalError
from .journal_rules import SEAL_KEY, event_problem, seal_bytes, unseal

REDACTED = "***"
# Keys whose values are secrets, whole: passwords, secrets, tokens, credentials, JAAS lines,
# private keys (``ssl.key.location`` names a file, not a secret, but it stays masked too).
_SECRET_KEY = re.compile(
    r"(passw|secret|token|credential|sasl\.jaas|jaas|private|api[._-]?key|keystore\.key|ssl\.key)",
    re.IGNORECASE,
)
# ``password="..."`` (JAAS) or ``password=...`` inside a string: only the value after the ``=``
# is masked, never the same characters elsewhere in the data (a topic may be called like a
# password). Topic names cannot contain ``=``, so this never touches one.
_INLINE_SECRET = re.compile(
    r"""((?:password|passwd|secret|token)\s*=\s*)("[^"]*"|'[^']*'|[^\s;,"']+)""", re.I
)


@functools.lru_cache(maxsize=4096)
def _secret_name(key: str) -> bool:
    return bool(_SECRET_KEY.search(key))


def is_secret_key(key: object, extra: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether values under ``key`` are secrets (by its name, or listed in ``extra``)."""
    k = str(key)
    return _secret_name(k) or k in extra


_SCALARS = (int, float, bool, type(None))


def secret_keys(config: Mapping[str, Any] | None) -> frozenset[str]:
    """The keys of a client config (``--command-config``) whose values are secrets."""
    return frozenset(str(k) for k in (config or {}) if is_secret_key(k))


def redact(obj: Any, secret_keys: Iterable[str] = ()) -> Any:
    """A copy of ``obj`` in which the value of every secret-looking key (and of each key in
    ``secret_keys``) is replaced, whole, by ``***``, and the value after ``password=`` /
    ``secret=`` / ``token=`` inside a string (a JAAS line) too.

    Nothing else is touched: redaction is by key, never by searching the data for the secret,
    so a topic named like a password stays itself. No state: each caller (a run, a journal,
    a connection) passes what it knows, nothing outlives the call."""
    extra = frozenset(str(k) for k in secret_keys)

    def walk(o: Any) -> Any:
        if isinstance(o, Mapping):
            return {
                str(k): (REDACTED if is_secret_key(k, extra) and v not in (None, "") else walk(v))
                for k, v in o.items()
            }
        if isinstance(o, list | tuple | set | frozenset):
            if all(type(v) in _SCALARS for v in o):  # replica lists: nothing to look at
                return list(o)
            return [walk(v) for v in o]
        if isinstance(o, str) and "=" in o:
            return _INLINE_SECRET.sub(lambda m: m.group(1) + REDACTED, o)
        return o

    return walk(obj)


def might_hold_secrets(text: str, secret_keys: Iterable[str] = ()) -> bool:
    """Whether ``redact`` could change anything in the JSON ``text``: a secret-looking key
    name or an inline ``password=`` anywhere in it (a conservative test: a topic called
    ``tokens`` takes the slow path, and is then left as it is by ``redact``)."""
    return bool(
        _SECRET_KEY.search(text)
        or ("=" in text and _INLINE_SECRET.search(text))
        or any(k in text for k in secret_keys)
    )


def _may_redact(obj: Any, extra: frozenset[str]) -> bool:
    """Whether ``redact`` could change ``obj``: a secret-looking key at any depth, or a string
    holding ``=`` (maybe an inline secret). False says the event is written as it is, without
    the regex of ``might_hold_secrets`` over its line (a ``throttle_set`` event
    carries every throttled-replica list, tens of kilobytes the regex read at every change;
    and ``_plain``, the flat test it replaces, sent every nested event to the regex)."""
    t = type(obj)
    if t in _SCALARS:
        return False
    if t is str:
        return "=" in obj
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            if is_secret_key(k, extra) or _may_redact(v, extra):
                return True
        return False
    if isinstance(obj, list | tuple | set | frozenset):
        return any(type(v) not in _SCALARS and _may_redact(v, extra) for v in obj)
    return isinstance(obj, str) and "=" in obj  # a str subclass (an enum's value)


# the bytes the writer looks for in a line, as ints: ``b"=" in line`` first tries the
# pattern as an int, and builds a TypeError, at each of the ~10,000 lines of a wave's poll
_EQ, _BRACE = ord("="), ord("{")


def _hold(fd: int, path: str) -> None:
    """An exclusive lock on the journal for the writer's life (``flock``: released when its
    file closes or its process dies, a SIGKILL included, so never stale). The same command
    run twice (a second ``--resume`` in another terminal) appended a second run's events to
    the live one's and cut what it took for a torn last line, the other's line being
    written; it is refused before anything is read or sent."""
    import errno
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
            return  # a file system without locks (some FUSE mounts): the run goes on unguarded
        os.close(fd)
        raise JournalError(
            f"the journal {path} (--journal) is in use: another run is writing it (the same "
            "command twice?). Nothing was sent; wait for that run or stop it, or give another "
            f"--journal ({e.strerror or e})"
        ) from None


def writer_alive(path: str | os.PathLike) -> bool:
    """Whether a run is writing the journal at ``path`` now (it holds ``_hold``'s lock): a
    reader in another process (``--cancel --journal``) then leaves what that run still owns.
    False when the file is missing or its file system has no locks."""
    import errno
    import fcntl

    try:
        fd = os.open(os.fspath(path), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES)
    finally:
        os.close(fd)  # a shared lock taken goes with it
    return False


class Journal:
    """Append events to a JSON-lines file (see the module's notes on durability); one writer
    at a time (``_hold``)."""

    def __init__(
        self,
        path: str | os.PathLike,
        run_id: str,
        clock: Callable[[], float] = time.time,
        secrets: Iterable[str] = (),
    ):
        self.path = os.fspath(path)
        self.run_id = run_id
        self._clock = clock
        self._secrets = tuple(secrets)
        self._secret_set = frozenset(str(k) for k in self._secrets)
        self._plain_keys: dict[tuple, bool] = {}  # keys of an event -> none secret-looking
        self._lock = threading.Lock()
        self._dirty = False
        self._batching = 0  # inside batch(): lines handed to the OS at its end
        self._now, self._ts = float("nan"), 0.0  # the clock's last reading, and it rounded
        self.error: JournalError | None = None
        self.fsyncs = 0
        d = os.path.dirname(os.path.abspath(self.path))
        try:  # before anything is sent: a path that cannot be a journal is named, not a traceback
            os.makedirs(d, exist_ok=True)
        except OSError as e:
            raise JournalError(
                f"cannot open the journal {self.path} (--journal): its directory {d} cannot be "
                f"created: {e.strerror or e}"
            ) from None
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as e:
            raise JournalError(
                f"cannot open the journal {self.path} (--journal): {e.strerror or e}"
            ) from None
        _hold(fd, self.path)  # one writer at a time: before its torn tail is cut
        try:
            self.torn_bytes = cut_torn_tail(self.path)
        except OSError as e:
            os.close(fd)
            raise JournalError(
                f"cannot open the journal {self.path} (--journal): {e.strerror or e}"
            ) from None
        # binary: a line is encoded once, the ASCII bytes its seal is computed over; a poll's
        # lines wait in ``_pending`` and go to the OS together at its end (``batch``)
        self._f = os.fdopen(fd, "ab")
        self._pending: list[bytes] = []
        self._closed = False

    def write(self, event: str, **fields: Any) -> dict[str, Any]:
        """Append one event (handed to the OS at once, or at the end of the ``batch`` it is
        written in); returns the (redacted) dict written. Raises JournalError when the write
        fails, and on every write after that."""
        return self.record(event, fields)

    def record(self, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """``write(event, **fields)`` for a caller that holds the fields as a dict already (the
        run's ``emit``): not copied into keyword arguments once more."""
        now = self._clock()
        if now != self._now:  # round() is a fifth of a write: once per reading of the clock
            self._now, self._ts = now, round(now, 6)
        rec = {"ts": self._ts, "event": event, "run_id": self.run_id, **fields}
        line = _encode(rec)
        keys = tuple(rec)
        plain_keys = self._plain_keys.get(keys)
        if plain_keys is None:  # once per kind of event, not at every event
            plain_keys = self._plain_keys[keys] = all(
                type(k) is str and not is_secret_key(k, self._secret_set) for k in keys
            )
        # redact changes nothing in a line whose keys are not secret-looking, with no "="
        # (no inline secret) and no nested object (no key inside it) — a move's events; else
        # the structure (_may_redact), then the regex (might_hold_secrets) decide
        quick = plain_keys and _EQ not in line and line.count(_BRACE) == 1
        if not quick and _may_redact(rec, self._secret_set):
            if might_hold_secrets(line.decode(), self._secrets):
                rec = redact(rec, self._secrets)
                line = _encode(rec)
        data = seal_bytes(line)  # after redaction: the checksum is of what is on disk
        with self._lock:
            if self._closed:
                return rec
            if self.error is not None:
                raise self.error
            self._dirty = True
            if self._batching:  # handed over with the batch's other lines, in one write
                self._pending.append(data)
                return rec
            try:
                self._f.write(data)
                self._f.flush()
            except OSError as e:
                self.error = JournalError(f"cannot write the journal {self.path}: {e}")
                raise self.error from e
        return rec

    def _hand_over(self) -> None:
        """The batch's lines to the OS, in one write (under ``_lock``); raises OSError."""
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._f.write(data)
        self._f.flush()

    @contextlib.contextmanager
    def batch(self) -> Iterator[Journal]:
        """Lines written inside go to the OS together when it ends (however it ends), or at a
        ``commit()`` inside it: one write for a poll's events instead of one per event
        (a poll turning 2,000 moves over writes ~10,000). A failure to hand them
        over is raised by the next ``write`` or ``commit``."""
        self._batching += 1
        try:
            yield self
        finally:
            self._batching -= 1
            if not self._batching:
                with self._lock:
                    if not self._closed and self.error is None:
                        try:
                            self._hand_over()
                        except OSError as e:
                            self.error = JournalError(f"cannot write the journal {self.path}: {e}")

    def commit(self) -> None:
        """fsync what was written since the last commit (no-op when nothing was)."""
        with self._lock:
            if self._closed or not self._dirty:
                return
            if self.error is not None:
                raise self.error
            try:
                self._hand_over()  # lines of a batch not handed over yet
            except OSError as e:
                self.error = JournalError(f"cannot write the journal {self.path}: {e}")
                raise self.error from e
            try:
                os.fsync(self._f.fileno())
            except OSError as e:
                self.error = JournalError(f"cannot sync the journal {self.path}: {e}")
                raise self.error from e
            self.fsyncs += 1
            self._dirty = False

    def close(self) -> None:
        try:
            self.commit()
        except JournalError:
            pass  # already raised to the writer; closing must not raise again
        with self._lock:
            if not self._closed:
                self._closed = True
                self._pending.clear()  # lines of a failed write: reported when it failed
                try:
                    self._f.close()
                except OSError:
                    pass  # the buffered tail of a failed write: reported when it failed

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def cut_torn_tail(path: str) -> int:
    """Cut a last line that has no newline (the writer died mid-line) so that the next event
    starts on a line of its own; returns the bytes cut (0 when the file is whole)."""
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return 0
    if size == 0:
        return 0
    with open(path, "rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return 0
        pos = size
        while pos > 0:  # back to the last newline, in blocks
            start = max(0, pos - 65536)
            f.seek(start)
            nl = f.read(pos - start).rfind(b"\n")
            if nl >= 0:
                keep = start + nl + 1
                break
            pos = start
        else:
            keep = 0
        f.truncate(keep)
        f.flush()
        os.fsync(f.fileno())
        return size - keep


def _default(o: Any) -> Any:
    if isinstance(o, set | frozenset | tuple):
        return list(o)
    return str(o)


_ENCODER = json.JSONEncoder(default=_default, separators=(",", ":"))
try:  # json's C encoder, made once: JSONEncoder.encode makes one (and a closure) per call
    from json.encoder import c_make_encoder as _c_make_encoder
    from json.encoder import encode_basestring_ascii as _encode_str
except ImportError:  # pragma: no cover - CPython has it
    _c_make_encoder = None
if _c_make_encoder is not None:
    # no circular-reference bookkeeping (markers None): an event is built here, never circular
    _C_ENCODER = _c_make_encoder(None, _default, _encode_str, None, ":", ",", False, False, True)

    def _json_encode(rec: Mapping[str, Any]) -> str:
        """``json.dumps(rec, default=_default, separators=(",", ":"))``, the same bytes."""
        return "".join(_C_ENCODER(rec, 0))
else:  # pragma: no cover
    _json_encode = _ENCODER.encode

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency; json's encoder writes the same events
    orjson = None

if orjson is not None:
    # orjson writes an event in a fifth of the time (a poll turning 2,000 moves
    # over writes ~10,000 events, and their encoding was a fifth of that poll). The same
    # JSON values as json's: what it would encode itself that json hands to ``_default``
    # (dataclasses, dates) goes to ``_default`` too; non-string keys become strings as in
    # json; a line that is not ASCII (orjson writes UTF-8, json \u escapes: a U+2028 in a
    # line would split it for ``str.splitlines``) and a value orjson refuses (an int over 64
    # bits) are json's. Differences: a float that is not a number is written null (json
    # writes NaN, which is not JSON), an Enum that is not a str its value (json: its str).
    _OPTS = (
        orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
    )
    _dumps = orjson.dumps

    def _encode(rec: Mapping[str, Any]) -> bytes:
        """The event's line without its newline: ASCII bytes."""
        try:
            line = _dumps(rec, default=_default, option=_OPTS)
        except TypeError:  # orjson.JSONEncodeError: e.g. an int over 64 bits
            return _json_encode(rec).encode()
        return line if line.isascii() else _json_encode(rec).encode()
else:  # pragma: no cover

    def _encode(rec: Mapping[str, Any]) -> bytes:
        return _json_encode(rec).encode()


def read_events(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Every event in the file, each line checked (``journal_rules``: its seal, its kind, its
    fields). A last line without its newline (being written, or torn by a crash) is left out,
    unless it is the only one (a journal cut inside its first line is damaged, not empty); any
    other line that breaks a rule raises JournalError naming the file and the line: a corrupt
    journal is never read as a shorter one, nor as another one."""
    name = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise  # callers that look before they read say "no such file" themselves
    except OSError as e:
        raise JournalError(f"cannot read the journal {name}: {e.strerror}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line_no = data[: e.start].count(b"\n") + 1
        raise JournalError(
            f"{name}:{line_no}: not UTF-8 text at byte {e.start} (the "
            "journal is corrupt; nothing was sent: start a new journal)"
        ) from None
    lines = text.split("\n")
    reader = LineReader(name, len(lines) - 1)
    for i, line in enumerate(lines):
        reader.add(i, line)
    if not reader.events and text.strip():
        raise JournalError(
            f"{name}:1: cut inside its first line (the journal is damaged; nothing was sent: "
            "start a new journal)"
        )
    return reader.events


class LineReader:
    """A journal's lines checked one by one and across lines: each sealed once one was (a
    journal older than the seal has none), every line of one run's id (a journal path holds
    one run: ``run.resume.set_aside``). The events read are in ``events``."""

    def __init__(self, name: str, last: int) -> None:
        self.name, self.last = name, last
        self.events: list[dict[str, Any]] = []
        self.sealed = False
        self.run_id: str | None = None

    def add(self, i: int, line: str) -> None:
        """Line ``i`` (0-based): its event appended, or JournalError (a last line without
        its newline that breaks a rule is a torn write: left out)."""
        if not line.strip():
            return
        rec, problem = self._decode(line)
        if problem is None and rec is not None:
            self.events.append(rec)
        elif i != self.last:
            raise JournalError(
                f"{self.name}:{i + 1}: {problem} (the journal is corrupt; nothing was sent: "
                "fix or remove that line, or start a new journal)"
            )

    def _decode(self, line: str) -> tuple[dict[str, Any] | None, str | None]:
        body, seal_ok = unseal(line)
        if seal_ok is False:
            return None, "its checksum does not match its content"
        if seal_ok is None and self.sealed:
            return None, "it has no checksum where every line has one"
        try:
            rec = json.loads(body)
        except (json.JSONDecodeError, RecursionError):
            return None, "not a journal event (not JSON)"
        if not isinstance(rec, dict):
            return None, "not a journal event"
        if seal_ok is None and SEAL_KEY in rec:
            return None, "its checksum is not where a journal writes it"
        problem = event_problem(rec)
        if problem is None:
            if self.run_id is None:
                self.run_id = rec["run_id"]
            elif rec["run_id"] != self.run_id:
                problem = f"run id {rec['run_id'][:40]!r} is not the journal's {self.run_id!r}"
        if problem is None:
            self.sealed = self.sealed or bool(seal_ok)
        return rec, problem


def to_pandas(paths: str | os.PathLike | Iterable[str | os.PathLike]):
    """One DataFrame of the events of one or many journals (column ``journal`` = source file),
    with ``time`` as a UTC timestamp; nested values stay as Python objects."""
    import pandas as pd

    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    rows: list[dict[str, Any]] = []
    for p in paths:
        for e in read_events(p):
            rows.append({**e, "journal": os.fspath(p)})
    df = pd.DataFrame(rows)
    if not df.empty:
        df["time"] = pd.to_datetime(df["ts"], unit="s", utc=True)
    return df


def to_spark(spark, paths: str | Iterable[str]):
    """The events of one or many journals as a Spark DataFrame (schema inferred from JSON).
    A local path is made absolute here: Spark resolves a relative one against the JVM's working
    directory, the one the session started in, not this process's current one (a second
    ``report run.jsonl`` in another directory of the same process read the first's file)."""
    import os

    if isinstance(paths, str):
        paths = [paths]
    return spark.read.json([p if ":" in p else os.path.abspath(p) for p in paths])


def concurrency(
    events: Iterable[Mapping[str, Any]], run_id: str | None = None
) -> list[tuple[float, int]]:
    """(ts, moves of the run in flight) after each submission / completion / cancellation.

    A partition is in flight from its ``submitted`` (or ``adopted``) event until its
    ``completed``, ``cancelled`` or ``failed`` event; steps of one move keep one slot."""
    inflight: set[tuple[str, int]] = set()
    out: list[tuple[float, int]] = []
    for e in events:
        if run_id is not None and e.get("run_id") != run_id:
            continue
        ev = e.get("event")
        if ev in ("submitted", "adopted"):
            tps = [(e["topic"], e["partition"])] if "topic" in e else []
            inflight.update(tps)
        elif ev in ("completed", "cancelled", "failed"):
            if "topic" in e:
                inflight.discard((e["topic"], e["partition"]))
        else:
            continue
        out.append((e["ts"], len(inflight)))
    return out


def peak_concurrency(events: Iterable[Mapping[str, Any]], run_id: str | None = None) -> int:
    return max((n for _, n in concurrency(events, run_id)), default=0)
