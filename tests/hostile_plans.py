"""Invalid reassignment plans, each as a file an operator, a broken disk or an attacker could
hand to any action that takes ``--reassignment-json-file``, with what the refusal must name.

The cluster they are checked against (``hostile_cluster``): brokers 0-3, topic ``t`` with
partitions 0 and 1, an operator's throttle rate on broker 1. Shared by the hostile-plan suite
(tests/unit/test_hostile_plans_all_actions.py)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass

from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster

OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}
FILE = "{file}"  # stands for the plan's path in what a refusal must name


def hostile_cluster() -> SimCluster:
    s = SimCluster(4, bandwidth=50 * MB)
    s.add_topic("t", [[0, 1], [1, 2]], MB)
    s.alter_broker_configs({1: dict(OPERATOR)})
    return s


@dataclass(frozen=True)
class Shape:
    """``make(path)`` writes the plan at ``path`` (or puts something else there) and returns
    the path to give; ``names``: what the error output must contain (``FILE``: the path)."""

    name: str
    make: Callable[[str], str]
    names: tuple[str, ...]


def _text(text: str | bytes) -> Callable[[str], str]:
    def make(path: str) -> str:
        with open(path, "wb") as f:
            f.write(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
        return path

    return make


def _doc(doc: object) -> Callable[[str], str]:
    return _text(json.dumps(doc))


def _entry(**kv: object) -> Callable[[str], str]:
    """One partition entry: topic t, partition 0, replicas [1, 2], with ``kv`` over it (a
    value of ``...`` drops the key)."""
    e = {"topic": "t", "partition": 0, "replicas": [1, 2], **kv}
    return _doc({"version": 1, "partitions": [{k: v for k, v in e.items() if v is not ...}]})


def _directory(path: str) -> str:
    os.mkdir(path)
    return path


def _fifo(path: str) -> str:
    os.mkfifo(path)
    return path


def _sparse_2gb(path: str) -> str:
    with open(path, "wb") as f:
        f.truncate(2 << 30)
    return path


def _missing(path: str) -> str:
    return path + ".missing"


def _dangling(path: str) -> str:
    os.symlink(path + ".gone", path)
    return path


def _unreadable(path: str) -> str:
    # a file whose read fails (EIO) whoever reads it, root included: this process's memory
    # at address 0 (chmod 000 stops no root)
    return "/proc/self/mem"


OK = {"topic": "t", "partition": 1, "replicas": [2, 3]}

SHAPES: list[Shape] = [
    # the file itself
    Shape("JSON that is not JSON", _text('{"version": 1, "partitions": ['), (FILE,)),
    Shape("plain text", _text("move t-0 to 1,2\n"), (FILE,)),
    Shape("an empty file", _text(""), (FILE,)),
    Shape("whitespace only", _text("  \n\t\n"), (FILE,)),
    Shape("a directory", _directory, (FILE, "a directory")),
    Shape("a FIFO", _fifo, (FILE, "named pipe")),
    Shape("an unreadable file", _unreadable, ("/proc/self/mem", "cannot read")),
    Shape("a missing file", _missing, ("cannot read",)),
    Shape("an empty path", lambda path: "", ("--reassignment-json-file needs a file path",)),
    Shape("a dangling symlink", _dangling, (FILE, "cannot read")),
    Shape("a 2 GB file", _sparse_2gb, (FILE, "2147483648 bytes")),
    Shape("a UTF-8 BOM", _text(b"\xef\xbb\xbf" + json.dumps({"version": 1, "partitions": [OK]}).encode()), (FILE,)),
    Shape("not UTF-8", _text(b'{"version":1,"partitions":[{"topic":"\xff","partition":0,"replicas":[1,2]}]}'), (FILE, "UTF-8")),
    Shape("UTF-16", _text(json.dumps({"version": 1, "partitions": [OK]}).encode("utf-16")), (FILE,)),
    Shape("NaN", _text('{"version":1,"partitions":[{"topic":"t","partition":NaN,"replicas":[1,2]}]}'), (FILE, "NaN")),
    Shape("Infinity", _text('{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,Infinity]}]}'), (FILE, "Infinity")),
    Shape("100k nested arrays", _text("[" * 100_000 + "]" * 100_000), (FILE,)),
    Shape("a top-level array", _doc([OK]), (FILE,)),
    Shape("a top-level null", _doc(None), (FILE,)),
    Shape("duplicate JSON keys", _text('{"version":1,"partitions":[{"topic":"t","partition":0,"partition":1,"replicas":[2,3]}]}'), (FILE, "partition")),
    # the document
    Shape("no version", _doc({"partitions": [OK]}), (FILE, "version")),
    Shape("version 2", _doc({"version": 2, "partitions": [OK]}), (FILE, "version")),
    Shape("version as a string", _doc({"version": "1", "partitions": [OK]}), (FILE, "version")),
    Shape("version true", _doc({"version": True, "partitions": [OK]}), (FILE, "version")),
    Shape("no partitions", _doc({"version": 1}), (FILE, "partitions")),
    Shape("partitions an object", _doc({"version": 1, "partitions": OK}), (FILE, "partitions")),
    Shape("no partition at all", _doc({"version": 1, "partitions": []}), (FILE,)),
    Shape("an extra top-level key", _doc({"version": 1, "partitions": [OK], "dry": True}), (FILE, "dry")),
    Shape("an entry that is a number", _doc({"version": 1, "partitions": [7]}), (FILE,)),
    Shape("duplicate partitions", _doc({"version": 1, "partitions": [OK, {**OK, "replicas": [3, 0]}]}), (FILE, "t-1")),
    Shape("an extra key in an entry", _entry(replica=[1, 2]), (FILE, "replica")),
    # topics
    Shape("no topic", _entry(topic=...), (FILE, "topic")),
    Shape("a topic that is a number", _entry(topic=7), (FILE, "topic")),
    Shape("an empty topic", _entry(topic=""), (FILE, "topic")),
    Shape("an unknown topic", _entry(topic="nope"), (FILE, "nope")),
    Shape("a topic with a NUL", _entry(topic="t\u0000"), (FILE, "topic")),
    Shape("a topic with a lone surrogate", _text('{"version":1,"partitions":[{"topic":"\\ud800","partition":0,"replicas":[1,2]}]}'), (FILE, "topic")),
    Shape("a topic with a control char", _entry(topic="t\u001b[31m"), (FILE, "topic")),
    Shape("a topic with a slash", _entry(topic="../t"), (FILE, "topic")),
    Shape("a 100k-character topic", _entry(topic="t" * 100_000), (FILE, "topic")),
    # partitions
    Shape("no partition", _entry(partition=...), (FILE, "partition")),
    Shape("a negative partition", _entry(partition=-1), (FILE, "partition")),
    Shape("a partition of 10^40", _entry(partition=10**40), (FILE, "partition")),
    Shape("a partition of 2^31", _entry(partition=2**31), (FILE, "partition")),
    Shape("a bool partition", _entry(partition=True), (FILE, "partition")),
    Shape("a float partition", _entry(partition=0.0), (FILE, "partition")),
    Shape("a string partition", _entry(partition="0"), (FILE, "partition")),
    Shape("a partition past the topic's count", _entry(partition=7), (FILE, "t-7")),
    # replicas
    Shape("no replicas", _entry(replicas=...), (FILE, "replicas")),
    Shape("empty replicas", _entry(replicas=[]), (FILE, "replicas")),
    Shape("replicas null", _entry(replicas=None), (FILE, "replicas")),
    Shape("replicas a number", _entry(replicas=1), (FILE, "replicas")),
    Shape("duplicate replicas", _entry(replicas=[2, 2]), (FILE, "t-0")),
    Shape("a negative broker", _entry(replicas=[1, -2]), (FILE, "t-0")),
    Shape("a broker of 2^31", _entry(replicas=[1, 2**31]), (FILE, "t-0")),
    Shape("a bool broker", _entry(replicas=[1, True]), (FILE, "t-0")),
    Shape("a float broker", _entry(replicas=[1, 2.0]), (FILE, "t-0")),
    Shape("a string broker", _entry(replicas=[1, "2"]), (FILE, "t-0")),
    Shape("an unknown broker", _entry(replicas=[1, 9]), (FILE, "9")),
    # log dirs
    Shape("a relative log dir", _entry(log_dirs=["data", "any"]), (FILE, "t-0", "log dir")),
    Shape("log dirs of the wrong length", _entry(log_dirs=["any"]), (FILE, "log_dirs")),
    Shape("a log dir that is a number", _entry(log_dirs=[7, "any"]), (FILE, "log_dirs")),
    Shape("log dirs a string", _entry(log_dirs="any"), (FILE, "log_dirs")),
    Shape("a missing log dir", _entry(log_dirs=["/nope", "any"]), (FILE, "/nope")),
]  # fmt: skip
