"""What a journal line must be before any reader acts on it: sealed (a checksum of the line, so
a flipped byte anywhere is found), of a known event kind, and every field it carries of the
type and within the bounds its writer gives it — partitions and broker ids as Kafka allows
them, throttle rates within a Kafka long, option names a run has, lifecycle states the run
knows, a plan whose digest is the one journaled beside it. A line that breaks a rule is named
with its line number (``journal.read_events``); nothing is guessed, nothing skipped.

Pure: the rules are values here, kept equal to their writers' by tests (the option names are
``ExecuteOptions``'s, the states ``run.lifecycle``'s)."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from ..cluster.config import (
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
)
from ..cluster.gateway import DEFAULT_BROKER
from ..model import Plan

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1  # a throttle rate is a Kafka long

# every event a run writes (moves/table's transitions and the run's parts)
MOVE_EVENTS = frozenset(
    {"submitted", "step_submitted", "step_completed", "completed", "adopted", "rolling_back",
     "cancelled", "failed", "error"}
)  # fmt: skip
EVENTS = MOVE_EVENTS | frozenset(
    {"run_started", "run_finished", "lifecycle", "intent", "warning", "sample", "deadline",
     "stuck", "retry", "paused", "resumed", "caps_changed", "cancel_started", "pace_started",
     "pace_decision", "pace_sample", "probe_canary", "probe_canary_deleted", "throttle_prior",
     "throttle_set", "throttle_cleared", "throttle_changed", "throttle_broker_back",
     "election_queued", "election_failed", "leader_elected", "leaders_checked",
     "log_dir_resent", "log_dir_started", "disk_hold", "disk_release", "disk_over_ceiling",
     "disk_below_ceiling", "disk_unknown", "disk_no_order"}
)  # fmt: skip

# the lifecycle's states and triggers (run/lifecycle.py)
STATES = frozenset(
    {"created", "running", "paused", "stopping", "cancelling", "done", "submitted", "stopped",
     "cancelled", "deadline", "failed"}
)  # fmt: skip
TRIGGERS = frozenset({"start", "pause", "resume", "stop", "cancel", "finish"})
INTENT_ACTIONS = frozenset({"alter", "rollback", "elect"})

_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_DIGITS = re.compile(r"[0-9]{1,19}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_RUN_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# a throttled-replicas list: "*" or partition:broker entries
_REPLICA_LIST = re.compile(r"\*|([0-9]{1,10}:[0-9]{1,10})(,[0-9]{1,10}:[0-9]{1,10})*|")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and v == v and abs(v) != float("inf")


def _int_in(lo: int, hi: int) -> Callable[[Any], bool]:
    return lambda v: _is_int(v) and lo <= v <= hi


def _num_in(lo: float, hi: float) -> Callable[[Any], bool]:
    return lambda v: _is_number(v) and lo <= v <= hi


def _nullable(ok: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda v: v is None or ok(v)


def _str(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= 4096


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def is_topic(v: Any) -> bool:
    return isinstance(v, str) and _TOPIC.fullmatch(v) is not None and v not in (".", "..")


def is_broker(v: Any) -> bool:
    return _is_int(v) and 0 <= v <= INT32_MAX


def is_broker_list(v: Any) -> bool:
    return (
        isinstance(v, list)
        and 1 <= len(v) <= 1024
        and all(is_broker(b) for b in v)
        and len(set(v)) == len(v)
    )


def is_rate(v: Any) -> bool:
    return _is_int(v) and 1 <= v <= INT64_MAX


def _broker_key(k: Any) -> bool:
    return k == DEFAULT_BROKER or (
        isinstance(k, str) and _DIGITS.fullmatch(k) is not None and int(k) <= INT32_MAX
    )


def _rate_text(v: Any) -> bool:
    return v is None or (
        isinstance(v, str) and _DIGITS.fullmatch(v) is not None and 0 <= int(v) <= INT64_MAX
    )


def _replicas_text(v: Any) -> bool:
    return v is None or (isinstance(v, str) and _REPLICA_LIST.fullmatch(v) is not None)


_NN_INT = _int_in(0, INT32_MAX)
_NN_LONG = _int_in(0, INT64_MAX)
_SECONDS = _num_in(0, 10**9)
# ExecuteOptions' fields as run_started journals them (run/options.py), each with its rule
OPTIONS: dict[str, Callable[[Any], bool]] = {
    "batch_size": _NN_INT,
    "incremental": _bool,
    "poll_interval_ms": _int_in(1, INT32_MAX),
    "max_moves_per_broker": _nullable(_NN_INT),
    "max_leader_moves": _nullable(_NN_INT),
    "cluster_max_reassignments": _nullable(_NN_INT),
    "order": _str,
    "throttle": _nullable(is_rate),
    "pace": _str,
    "slo_produce_p99": _nullable(_str),
    "throttle_floor": _nullable(is_rate),
    "pace_settle_s": _SECONDS,
    "move_deadline": _nullable(_SECONDS),
    "run_deadline": _nullable(_SECONDS),
    "stuck_after": _nullable(_SECONDS),
    "on_deadline": _str,
    "wait": _bool,
    "additional": _bool,
    "allow_replication_factor_change": _bool,
    "require_broker_rf_guard": _bool,
    "parallel_replica_count": _nullable(_int_in(1, 1024)),
    "elect_leaders": _bool,
    "max_elections_per_poll": _NN_INT,
    "min_isr": _nullable(_NN_INT),
    "sample_interval": _SECONDS,
    "health_source": _nullable(_str),
    "metrics_port": _nullable(_int_in(0, 65535)),
    "metrics_textfile": _nullable(_str),
    "cancel_on_stop": _bool,
    "rollback_timeout": _SECONDS,
    "log_dir_throttle": _nullable(is_rate),
    "timeout_s": _SECONDS,
    "disk_ceiling": _nullable(_num_in(0, 1)),
}

BROKER_RATE_KEYS = frozenset({LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE})
TOPIC_LIST_KEYS = frozenset({LEADER_REPLICAS, FOLLOWER_REPLICAS})


def options_problem(options: Any) -> str | None:
    if not isinstance(options, dict):
        return "'options' must be an object"
    for key, value in options.items():
        ok = OPTIONS.get(key)
        if ok is None:
            return f"'options' has an unknown option {str(key)[:60]!r}"
        if not ok(value):
            return f"option {key!r} is out of its bounds or of the wrong type"
    return None


def priors_problem(rec: Mapping[str, Any]) -> str | None:
    """A ``throttle_prior``: the operator's values, per broker and topic, as Kafka holds them."""
    brokers, topics = rec.get("brokers"), rec.get("topics")
    if not isinstance(brokers, dict) or not isinstance(topics, dict):
        return "'brokers' and 'topics' must be objects"
    for b, kv in brokers.items():
        if not _broker_key(b) or not isinstance(kv, dict):
            return f"broker {str(b)[:20]!r} is not a broker id with its configs"
        for k, v in kv.items():
            if k not in BROKER_RATE_KEYS:
                return f"broker {b}: unknown config {str(k)[:60]!r}"
            if not _rate_text(v):
                return f"broker {b}: {k} is not a rate"
    for t, kv in topics.items():
        if not is_topic(t) or not isinstance(kv, dict):
            return f"topic {str(t)[:60]!r} is not a topic name with its configs"
        for k, v in kv.items():
            if k not in TOPIC_LIST_KEYS:
                return f"topic {t}: unknown config {str(k)[:60]!r}"
            if not _replicas_text(v):
                return f"topic {t}: {k} is not a throttled-replicas list"
    return None


def throttles_problem(rec: Mapping[str, Any]) -> str | None:
    """``throttle_set`` / ``throttle_cleared`` / ``throttle_changed``: rates and lists."""
    for key in ("rate", "log_dir_rate"):
        if rec.get(key) is not None and not is_rate(rec[key]):
            return f"{key!r} must be a rate (1 .. 2^63-1 bytes/s)"
    for key in ("broker_rates", "log_dir_rates"):
        rates = rec.get(key)
        if rates is None:
            continue
        if not isinstance(rates, dict):
            return f"{key!r} must be an object"
        for b, r in rates.items():
            if not _broker_key(b) or not is_rate(r):
                return f"{key!r}: broker {str(b)[:20]!r} with a rate out of bounds"
    for key in ("leader_replicas", "follower_replicas"):
        lists = rec.get(key)
        if lists is None:
            continue
        if not isinstance(lists, dict):
            return f"{key!r} must be an object"
        for t, v in lists.items():
            if not is_topic(t) or not isinstance(v, str) or not _replicas_text(v):
                return f"{key!r}: topic {str(t)[:60]!r} with a list that is not one"
    return None


def run_started_problem(rec: Mapping[str, Any]) -> str | None:
    if not isinstance(rec.get("run_id"), str) or not _RUN_ID.fullmatch(rec["run_id"]):
        return "'run_id' is not a run id"
    digest = rec.get("plan_digest")
    if digest is not None and (not isinstance(digest, str) or not _HEX64.fullmatch(digest)):
        return "'plan_digest' is not a plan digest"
    if "options" in rec and (problem := options_problem(rec["options"])) is not None:
        return problem
    # a run's own run_started (it names its version) holds every option it ran with
    missing = sorted(set(OPTIONS) - set(rec.get("options") or {}))
    if "reassign_kit_version" in rec and missing:
        return f"'options' lacks {missing[0]!r}"
    plan = rec.get("plan")
    if plan is not None and digest is None:
        return "a journaled 'plan' without its 'plan_digest'"
    if plan is not None:
        if not isinstance(plan, dict):
            return "'plan' must be an object"
        try:
            journaled = Plan.from_json(json.dumps(plan), source="the journaled plan")
        except Exception:  # noqa: BLE001 - any problem of the inline plan is this line's
            return "'plan' is not a valid plan"
        if journaled.digest() != digest:
            return "'plan_digest' is not the digest of the journaled 'plan'"
    for key in ("moves", "batches", "foreign_in_flight"):
        if rec.get(key) is not None and not _int_in(-1, INT32_MAX)(rec[key]):
            return f"{key!r} must be a count"
    if rec.get("resumed") is not None and not _bool(rec["resumed"]):
        return "'resumed' must be true or false"
    return None


def lifecycle_problem(rec: Mapping[str, Any]) -> str | None:
    if rec.get("from") not in STATES or rec.get("to") not in STATES:
        return "'from' and 'to' must be states of a run"
    if rec.get("trigger") not in TRIGGERS:
        return "'trigger' is not a lifecycle trigger"
    return None


def run_finished_problem(rec: Mapping[str, Any]) -> str | None:
    if rec.get("state") not in STATES:
        return "'state' is not a state of a run"
    for key in ("completed", "still_moving", "pending", "failed", "cancelled", "rolling_back"):
        if rec.get(key) is not None and not _NN_INT(rec[key]):
            return f"{key!r} must be a count"
    left = rec.get("throttles_left")
    if left is not None and not isinstance(left, dict):
        return "'throttles_left' must be an object"
    return None


def intent_problem(rec: Mapping[str, Any]) -> str | None:
    if rec.get("action") not in INTENT_ACTIONS:
        return "'action' is not an intent's"
    if rec["action"] != "elect" and "topic" not in rec:
        return "an alter or rollback intent names its partition"
    return None


_BY_KIND: dict[str, Callable[[Mapping[str, Any]], str | None]] = {
    "run_started": run_started_problem,
    "lifecycle": lifecycle_problem,
    "run_finished": run_finished_problem,
    "intent": intent_problem,
    "throttle_prior": priors_problem,
    "throttle_set": throttles_problem,
    "throttle_cleared": throttles_problem,
    "throttle_changed": throttles_problem,
}


def _nn_number(v: Any) -> bool:
    return _is_number(v) and v >= 0


# field -> (check, what it must be), wherever it appears (``null`` stands for absent)
FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "ts": (_num_in(0, 10**11), "a time in epoch seconds"),
    "run_id": (lambda v: isinstance(v, str) and _RUN_ID.fullmatch(v) is not None, "a run id"),
    "topic": (is_topic, "a topic name"),
    "partition": (_NN_INT, "a partition number (0 .. 2^31-1)"),
    "current": (is_broker_list, "a list of distinct broker ids, not empty"),
    "original": (is_broker_list, "a list of distinct broker ids, not empty"),
    "target": (is_broker_list, "a list of distinct broker ids, not empty"),
    "replicas": (is_broker_list, "a list of distinct broker ids, not empty"),
    "preferred": (is_broker, "a broker id"),
    "previous_preferred": (is_broker, "a broker id"),
    "size_bytes": (_NN_LONG, "a size in bytes"),
    "options": (lambda v: isinstance(v, dict), "an object"),
    "plan": (lambda v: isinstance(v, dict), "an object"),
    "plan_path": (lambda v: isinstance(v, str), "a string"),
    "duration_s": (_nn_number, "a non-negative number"),
    "step_s": (_nn_number, "a non-negative number"),
    "received": (lambda v: isinstance(v, dict), "an object"),
    "busy": (lambda v: isinstance(v, dict), "an object"),
    "inflight": (lambda v: isinstance(v, dict), "an object"),
    "brokers": (lambda v: isinstance(v, dict | list), "an object or a list"),
    "topics": (lambda v: isinstance(v, dict | list), "an object or a list"),
    "order_known": (_bool, "true or false"),
    "canary": (is_topic, "a topic name"),
}
# a move's own fields (events naming a partition)
MOVE_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "step": (_int_in(0, 1024), "a step number"),
    "steps": (_int_in(0, 1024), "a count of steps"),
}
REQUIRED = {
    "run_started": ("run_id",),
    "election_queued": ("preferred",),
    "intent": ("action",),
    "lifecycle": ("from", "to"),
    "run_finished": ("state",),
    "throttle_prior": ("brokers", "topics"),
    # the probe's canary topic (``pace_memory.orphan_canaries``: what a resume deletes)
    "probe_canary": ("canary",),
    "probe_canary_deleted": ("canary",),
}


def event_problem(rec: Mapping[str, Any]) -> str | None:
    """What makes a decoded line unusable as an event for the journal's readers (resume,
    cancel, progress, throttle priors, calibrate, postmortem), or None."""
    kind = rec.get("event")
    if not isinstance(kind, str):
        return "not a journal event (no 'event' name)"
    if kind not in EVENTS:
        return f"unknown event {kind[:60]!r}"
    if "ts" not in rec:
        return f"event {kind!r} has no 'ts'"
    if not isinstance(rec.get("run_id"), str):
        return f"event {kind!r} has no 'run_id'"
    if kind in MOVE_EVENTS and "topic" not in rec and kind != "error":
        return f"event {kind!r} names no partition"
    if "topic" in rec and "partition" not in rec:
        return f"event {kind!r}: 'topic' without its 'partition'"
    for key in REQUIRED.get(kind, ()):
        if rec.get(key) is None:
            return f"event {kind!r} has no {key!r}"
    for key, (ok, what) in FIELDS.items():
        value = rec.get(key)
        if value is not None and not ok(value):
            return f"event {kind!r}: {key!r} must be {what}"
    if "topic" in rec:
        for key, (ok, what) in MOVE_FIELDS.items():
            value = rec.get(key)
            if value is not None and not ok(value):
                return f"event {kind!r}: {key!r} must be {what}"
    check = _BY_KIND.get(kind)
    problem = check(rec) if check is not None else None
    return None if problem is None else f"event {kind!r}: {problem}"


# ---- the seal: a checksum over each line, so that damage anywhere in it is found ---------

SEAL_KEY = "crc"
_SEAL_HEAD = ',"crc":"'
_SEAL_HEAD_B = _SEAL_HEAD.encode()
_SEAL_LEN = len(_SEAL_HEAD) + 8 + 2  # ,"crc":"xxxxxxxx"}


def seal(line: str) -> str:
    """``line`` (one JSON object, as the journal encodes it) with its CRC-32 as its last field."""
    return f'{line[:-1]}{_SEAL_HEAD}{zlib.crc32(line.encode()):08x}"}}'


def seal_bytes(line: bytes) -> bytes:
    """``seal`` of an ASCII line given as bytes, with its newline (the same bytes as
    ``seal(line.decode()).encode() + b"\\n"``): the journal's writer, which encodes a line
    once."""
    return line[:-1] + _SEAL_HEAD_B + b"%08x" % zlib.crc32(line) + b'"}\n'


def unseal(line: str) -> tuple[str, bool | None]:
    """The line without its seal, and whether the seal holds (None: the line has none)."""
    if len(line) <= _SEAL_LEN or line[-_SEAL_LEN:-10] != _SEAL_HEAD or line[-2:] != '"}':
        return line, None
    body = line[:-_SEAL_LEN] + "}"
    crc = line[-10:-2]
    return body, f"{zlib.crc32(body.encode()):08x}" == crc
