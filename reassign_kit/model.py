"""Value types and the reassignment JSON of ``kafka-reassign-partitions`` (version 1).

The same JSON is used for input plans, ``--list`` output and rollback files. Reading is strict
(every problem is collected, each naming the entry at fault); writing is canonical (sorted by
topic then partition, fixed key order) so that the same plan always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import posixpath
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_str
from typing import Any, NamedTuple

from .errors import InvalidPlanError

ANY_LOG_DIR = "any"


# The largest input file (plan, snapshot, plan record, capacity file) read: a plan of a
# million moves is ~60 MB; a bigger file is refused by its size before it is read (a 2 GB
# plan took 6 GB of memory to be refused). ``REASSIGN_KIT_MAX_INPUT_BYTES`` sets another.
MAX_INPUT_BYTES = 256 << 20
MAX_INPUT_ENV = "REASSIGN_KIT_MAX_INPUT_BYTES"


def max_input_bytes() -> int:
    value = os.environ.get(MAX_INPUT_ENV, "")
    return int(value) if value.isascii() and value.isdigit() else MAX_INPUT_BYTES


def read_text(path: str, kind: str) -> str:
    """An input file's text, or InvalidPlanError naming the file and what it was meant to be
    (``kind``: "reassignment plan", "snapshot", ...) — never an OSError or UnicodeDecodeError.
    A file over ``max_input_bytes()`` is refused by its size, unread (a device or a pipe that
    gives more is cut there and refused the same)."""
    limit = max_input_bytes()
    try:
        st = os.stat(path)
        size = st.st_size
        # a named pipe with no writer would block the read for good; an anonymous one (a
        # shell's <(...), /dev/fd/N) has its writer and is read
        if stat.S_ISFIFO(st.st_mode) and not os.path.basename(os.path.realpath(path)).startswith(
            "pipe:"
        ):
            raise InvalidPlanError(
                ["a named pipe (FIFO): give a regular file; nothing was read"],
                header=f"{kind} {path}",
            )
        if stat.S_ISDIR(st.st_mode):
            raise InvalidPlanError(
                ["a directory: give a regular file; nothing was read"], header=f"{kind} {path}"
            )
        if size > limit:
            raise InvalidPlanError(
                [f"{size} bytes, over the {limit} an input file may have; nothing was read "
                 f"(${MAX_INPUT_ENV} sets another limit)"],
                header=f"{kind} {path}",
            )  # fmt: skip
        with open(path, encoding="utf-8") as f:
            text = f.read(limit + 1)
        if len(text) > limit:
            raise InvalidPlanError(
                [f"more than the {limit} bytes an input file may have (${MAX_INPUT_ENV} sets "
                 "another limit)"],
                header=f"{kind} {path}",
            )  # fmt: skip
        return text
    except OSError as e:
        raise InvalidPlanError(
            [f"cannot read {path}: {e.strerror}"], header=f"{kind} {path}"
        ) from e
    except UnicodeDecodeError as e:
        raise InvalidPlanError(
            [f"not UTF-8 text (byte {e.start}: {e.reason})"], header=f"{path} is not a {kind}"
        ) from None


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Move:
    """One partition's target: the replica list in order (first = preferred leader) and,
    optionally, one log dir per replica (absolute path or ``"any"``)."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...] | None = None

    @property
    def topic(self) -> str:
        return self.tp.topic

    @property
    def partition(self) -> int:
        return self.tp.partition

    def to_json_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "topic": self.tp.topic,
            "partition": self.tp.partition,
            "replicas": list(self.replicas),
        }
        if self.log_dirs is not None:
            obj["log_dirs"] = list(self.log_dirs)
        return obj


@dataclass(frozen=True)
class Plan:
    """An ordered collection of moves, at most one per partition."""

    moves: tuple[Move, ...] = field(default_factory=tuple)

    @classmethod
    def of(cls, moves: Iterable[Move]) -> Plan:
        return cls(tuple(sorted(moves, key=lambda m: m.tp)))

    def __iter__(self) -> Iterator[Move]:
        return iter(self.moves)

    def __len__(self) -> int:
        return len(self.moves)

    def by_tp(self) -> dict[TopicPartition, Move]:
        return {m.tp: m for m in self.moves}

    def topics(self) -> list[str]:
        return sorted({m.tp.topic for m in self.moves})

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "version": 1,
            "partitions": [m.to_json_obj() for m in sorted(self.moves, key=lambda m: m.tp)],
        }

    def to_json(self, indent: int | None = None) -> str:
        obj = self.to_json_obj()
        return json.dumps(obj) if indent is None else indented_json(obj, indent)

    def digest(self) -> str:
        """sha256 of the canonical JSON: identifies a plan in journals whatever its file order."""
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_json(indent=2) + "\n")

    @classmethod
    def from_json(cls, text: str, source: str = "plan") -> Plan:
        """Parse strictly; raise InvalidPlanError listing every structural problem at once.

        Cluster-dependent rules (known brokers, topics, partitions) live in ``validate``."""
        return parse_plan(text, source)

    @classmethod
    def read(cls, path: str) -> Plan:
        return cls.from_json(read_text(path, "reassignment plan"), source=path)


@dataclass(frozen=True)
class PartitionState:
    """What the cluster says about one partition right now."""

    tp: TopicPartition
    replicas: tuple[int, ...]
    isr: tuple[int, ...] = ()
    leader: int | None = None
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def target(self) -> tuple[int, ...]:
        """The replica set a reassignment in flight is heading to (replicas minus removing)."""
        return tuple(r for r in self.replicas if r not in self.removing)


def is_complete(target: Iterable[int], state: PartitionState | None) -> bool:
    """THE completion predicate, shared by verify, batch pacing, steps and the UI: the current
    replica list equals the target, in order, and the partition is not reassigning."""
    return state is not None and tuple(state.replicas) == tuple(target) and not state.reassigning


# ---------------------------------------------------------- the reassignment JSON: structure
# Rule names (``Problem.rule``) are stable identifiers; tests and other modules match on them.
MALFORMED_JSON = "malformed-json"
NOT_AN_OBJECT = "not-an-object"
DUPLICATE_KEY = "duplicate-key"
UNKNOWN_FIELD = "unknown-field"
MISSING_FIELD = "missing-field"
WRONG_TYPE = "wrong-type"
WRONG_VERSION = "wrong-version"
EMPTY_PLAN = "empty-plan"
EMPTY_TOPIC = "empty-topic"
NEGATIVE_PARTITION = "negative-partition"
DUPLICATE_PARTITION = "duplicate-partition"
EMPTY_REPLICAS = "empty-replicas"
DUPLICATE_BROKER = "duplicate-broker"
NEGATIVE_BROKER = "negative-broker"
LOG_DIRS_LENGTH = "log-dirs-length"
LOG_DIR_NOT_ABSOLUTE = "log-dir-not-absolute"
# Cluster rules (validate_plan).

_TOP_FIELDS = {"version", "partitions"}
_ENTRY_FIELDS = {"topic", "partition", "replicas", "log_dirs"}


@dataclass(frozen=True)
class Problem:
    """One violated rule: ``where`` names the entry (partition, or file position), ``rule`` is a
    stable identifier, ``detail`` says what is wrong in words an SRE can act on."""

    where: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: [{self.rule}] {self.detail}"


class _Obj(dict):
    """A JSON object that remembers keys it saw more than once (json keeps the last silently)."""

    dup_keys: list[str]


def _pairs_hook(pairs: list[tuple[str, Any]]) -> dict:
    plain = dict(pairs)
    if len(plain) == len(pairs):  # the common case: no key repeated
        return plain
    obj = _Obj()
    obj.dup_keys = []
    for k, v in pairs:
        if k in obj and k not in obj.dup_keys:
            obj.dup_keys.append(k)
        obj[k] = v
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array"}.get(
        type(v), "object" if isinstance(v, dict) else type(v).__name__
    )


class _NotPlain(Exception):
    """A value ``indented_json`` leaves to ``json.dumps``."""


def indented_json(obj: Any, indent: int) -> str:
    """``json.dumps(obj, indent=indent)``, the same text, in one plain pass: json's C encoder
    takes no indent, so with one it runs its pure-Python generators (writing the
    rollback file was two fifths of a 200,000-partition legacy request). For dicts with
    string keys, lists, tuples, strings, ints, bools, None and finite floats; anything else
    goes to ``json.dumps``."""
    out: list[str] = []
    append = out.append

    def scalar(v: Any) -> str:
        t = type(v)
        if t is str:
            return _json_str(v)
        if t is int:
            return int.__repr__(v)
        if v is None:
            return "null"
        if t is bool:
            return "true" if v else "false"
        if t is float and math.isfinite(v):
            return float.__repr__(v)
        raise _NotPlain

    def enc(o: Any, level: int) -> None:
        t = type(o)
        if t is dict:
            if not o:
                append("{}")
                return
            pad = "\n" + " " * (indent * (level + 1))
            sep = "{" + pad
            for k, v in o.items():
                if type(k) is not str:
                    raise _NotPlain
                append(sep + _json_str(k) + ": ")
                sep = "," + pad
                tv = type(v)
                if tv is dict or tv is list or tv is tuple:
                    enc(v, level + 1)
                else:
                    append(scalar(v))
            append("\n" + " " * (indent * level) + "}")
        elif t is list or t is tuple:
            if not o:
                append("[]")
                return
            pad = "\n" + " " * (indent * (level + 1))
            if all(type(v) is int for v in o):  # replica lists
                append("[" + pad + ("," + pad).join(map(int.__repr__, o)))
            else:
                sep = "[" + pad
                for v in o:
                    append(sep)
                    sep = "," + pad
                    tv = type(v)
                    if tv is dict or tv is list or tv is tuple:
                        enc(v, level + 1)
                    else:
                        append(scalar(v))
            append("\n" + " " * (indent * level) + "]")
        else:
            append(scalar(o))

    try:
        enc(obj, 0)
        plain = True
    except _NotPlain:
        plain = False
    return "".join(out) if plain else json.dumps(obj, indent=indent)


def parse_plan(text: str, source: str = "plan") -> Plan:
    """Parse the reassignment JSON strictly; raise ``InvalidPlanError`` listing every problem."""
    moves, problems = parse_plan_partial(text, source)
    if problems:
        raise InvalidPlanError(problems, header=f"{source} is not a valid reassignment plan")
    return Plan.of(moves)


def parse_plan_partial(text: str, source: str = "plan") -> tuple[list[Move], list[Problem]]:
    """The entries that parse and the problems of the others, so that a caller with a cluster
    at hand can report the file's problems and the cluster's problems in one go. Malformed JSON
    still raises (there are no entries to go on with)."""
    problems: list[Problem] = []
    try:
        doc = json.loads(text, object_pairs_hook=_pairs_hook, parse_constant=_reject_constant)
    except json.JSONDecodeError as e:
        raise InvalidPlanError(
            [Problem(f"{source}:{e.lineno}:{e.colno}", MALFORMED_JSON, f"not valid JSON: {e.msg}")],
            header=f"{source} is not a valid reassignment plan",
        ) from None
    except ValueError as e:  # NaN / Infinity
        raise InvalidPlanError(
            [Problem(source, MALFORMED_JSON, str(e))],
            header=f"{source} is not a valid reassignment plan",
        ) from None
    except RecursionError:  # arrays or objects nested thousands deep: no plan is
        raise InvalidPlanError(
            [Problem(source, MALFORMED_JSON, "not valid JSON: nested too deeply")],
            header=f"{source} is not a valid reassignment plan",
        ) from None

    return _parse_doc(doc, problems), problems


def _parse_doc(doc: Any, problems: list[Problem]) -> list[Move]:
    where = "plan"
    if not isinstance(doc, dict):
        problems.append(
            Problem(
                where, NOT_AN_OBJECT, f"the top level must be a JSON object, not {_type_name(doc)}"
            )
        )
        return []
    for k in getattr(doc, "dup_keys", []):
        problems.append(Problem(where, DUPLICATE_KEY, f"key '{k}' appears more than once"))
    for k in sorted(set(doc) - _TOP_FIELDS):
        problems.append(
            Problem(
                where, UNKNOWN_FIELD, f"unknown field '{k}' (expected 'version' and 'partitions')"
            )
        )
    if "version" not in doc:
        problems.append(Problem(where, MISSING_FIELD, "field 'version' is missing (it must be 1)"))
    elif not _is_int(doc["version"]) or doc["version"] != 1:
        problems.append(
            Problem(
                where,
                WRONG_VERSION,
                f"unsupported version {json.dumps(doc['version'])}; only 1 is known",
            )
        )
    if "partitions" not in doc:
        problems.append(Problem(where, MISSING_FIELD, "field 'partitions' is missing"))
        return []
    entries = doc["partitions"]
    if not isinstance(entries, list):
        problems.append(
            Problem(where, WRONG_TYPE, f"'partitions' must be an array, not {_type_name(entries)}")
        )
        return []
    if not entries:
        problems.append(
            Problem(where, EMPTY_PLAN, "'partitions' is empty: there is nothing to reassign")
        )
        return []

    moves: list[Move] = []
    first_seen: dict[TopicPartition, int] = {}
    for i, entry in enumerate(entries):
        tp, move = _parse_entry(i, entry, problems)
        if tp is not None and tp in first_seen:
            problems.append(
                Problem(
                    _where(i, tp),
                    DUPLICATE_PARTITION,
                    f"partition {tp} is already listed at partitions[{first_seen[tp]}]",
                )
            )
            continue
        if tp is not None:
            first_seen[tp] = i
        if move is not None:
            moves.append(move)
    return moves


def _where(i: int, tp: TopicPartition | None = None) -> str:
    return f"partitions[{i}] ({tp})" if tp is not None else f"partitions[{i}]"


def _fast_entry(entry: Any) -> Move | None:
    """The move of an entry that passes every rule at a glance (the common case, so a
    million-partition plan parses quickly); None sends it through the full checks."""
    if type(entry) is not dict:
        return None
    topic, partition, replicas = entry.get("topic"), entry.get("partition"), entry.get("replicas")
    log_dirs = entry.get("log_dirs")
    if not (
        len(entry) == (3 if log_dirs is None else 4)
        and type(topic) is str
        and topic
        and type(partition) is int
        and partition >= 0
        and type(replicas) is list
        and replicas
        and all(type(r) is int and r >= 0 for r in replicas)
        and len(set(replicas)) == len(replicas)
    ):
        return None
    if log_dirs is not None:
        if not (
            type(log_dirs) is list
            and len(log_dirs) == len(replicas)
            and all(type(d) is str and (d == ANY_LOG_DIR or d.startswith("/")) for d in log_dirs)
        ):
            return None
        log_dirs = tuple(log_dirs)
    elif "log_dirs" in entry:  # "log_dirs": null
        return None
    tp = TopicPartition(topic, partition)
    return Move(tp, tuple(replicas), log_dirs)


def _parse_entry(
    i: int, entry: Any, problems: list[Problem]
) -> tuple[TopicPartition | None, Move | None]:
    """The entry's partition (when topic and partition are usable) and its move (when valid)."""
    fast = _fast_entry(entry)
    if fast is not None:
        return fast.tp, fast
    if not isinstance(entry, dict):
        problems.append(
            Problem(_where(i), WRONG_TYPE, f"each entry must be an object, not {_type_name(entry)}")
        )
        return None, None
    n0 = len(problems)
    topic, partition = entry.get("topic"), entry.get("partition")
    tp = TopicPartition(topic, partition) if isinstance(topic, str) and _is_int(partition) else None
    where = _where(i, tp)

    def bad(rule: str, detail: str) -> None:
        problems.append(Problem(where, rule, detail))

    for k in getattr(entry, "dup_keys", []):
        bad(DUPLICATE_KEY, f"key '{k}' appears more than once")
    for k in sorted(set(entry) - _ENTRY_FIELDS):
        bad(UNKNOWN_FIELD, f"unknown field '{k}' (expected topic, partition, replicas, log_dirs)")
    for k in ("topic", "partition", "replicas"):
        if k not in entry:
            bad(MISSING_FIELD, f"field '{k}' is missing")

    if "topic" in entry:
        if not isinstance(topic, str):
            bad(WRONG_TYPE, f"'topic' must be a string, not {_type_name(topic)}")
        elif not topic:
            bad(EMPTY_TOPIC, "'topic' is an empty string")
    if "partition" in entry:
        if not _is_int(partition):
            bad(WRONG_TYPE, f"'partition' must be an integer, not {_type_name(partition)}")
        elif partition < 0:
            bad(NEGATIVE_PARTITION, f"partition {partition} is negative")

    replicas = _checked_replicas(entry, bad)
    log_dirs = _checked_log_dirs(entry, replicas, bad)
    if len(problems) > n0 or tp is None or not isinstance(replicas, list):
        return tp, None
    return tp, Move(tp, tuple(replicas), tuple(log_dirs) if isinstance(log_dirs, list) else None)


def _checked_replicas(entry: dict[str, Any], bad: Callable[[str, str], None]) -> Any:
    """The entry's replicas, each problem with them reported; None when unusable."""
    replicas = entry.get("replicas")
    if "replicas" in entry:
        if not isinstance(replicas, list):
            bad(
                WRONG_TYPE, f"'replicas' must be an array of broker ids, not {_type_name(replicas)}"
            )
            replicas = None
        elif not all(_is_int(r) for r in replicas):
            wrong = [json.dumps(r) for r in replicas if not _is_int(r)]
            bad(
                WRONG_TYPE,
                f"'replicas' must hold integer broker ids; not integers: {', '.join(wrong)}",
            )
            replicas = None
        elif not replicas:
            bad(EMPTY_REPLICAS, "'replicas' is empty: a partition needs at least one replica")
        else:
            dups = sorted({r for r in replicas if replicas.count(r) > 1})
            if dups:
                bad(DUPLICATE_BROKER, f"replicas {replicas} name broker(s) {dups} more than once")
            neg = [r for r in replicas if r < 0]
            if neg:
                bad(NEGATIVE_BROKER, f"replicas {replicas} hold negative broker id(s) {neg}")

    return replicas


def _checked_log_dirs(entry: dict[str, Any], replicas: Any, bad: Callable[[str, str], None]) -> Any:
    """The entry's log dirs (one per replica, absolute or "any"), each problem reported; None
    when unusable."""
    log_dirs = entry.get("log_dirs")
    if "log_dirs" in entry:
        if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
            bad(WRONG_TYPE, "'log_dirs' must be an array of strings (absolute paths or \"any\")")
            log_dirs = None
        else:
            if isinstance(replicas, list) and len(log_dirs) != len(replicas):
                bad(
                    LOG_DIRS_LENGTH,
                    f"'log_dirs' has {len(log_dirs)} entries but 'replicas' has {len(replicas)}; "
                    'give one log dir (or "any") per replica',
                )
            for d in log_dirs:
                if d != ANY_LOG_DIR and not posixpath.isabs(d):
                    bad(
                        LOG_DIR_NOT_ABSOLUTE, f'log dir {d!r} is neither an absolute path nor "any"'
                    )

    return log_dirs


# ----------------------------------------------------------------------------- cluster rules
