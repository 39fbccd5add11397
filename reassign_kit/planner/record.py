"""Plans run as approved: a plan's content hash and the cluster state it was
made from, kept BESIDE the plan (the plan file itself stays kafka-reassign-partitions' JSON).

``reassign-kit plan --output plan.json`` also writes ``plan.record.json``::

    {"version": 1, "kind": "reassign-kit plan record",
     "plan_sha256": "<Plan.digest()>", "made_at": "2026-11-25T03:30:00Z",
     "snapshot": "snap.json", "brokers": [1, 2, 3, 4],
     "topics": ["t"],                          # the planned topics
     "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 2, 3],
                     "growth_bytes_s": 52428.8}]}  # as planned from; the rate: when known

``growth_bytes_s`` is the partition's size growth the snapshot recorded (its loads), for the
disk ceiling's order at a run's start (``rates_for``: only when the record is the plan's).

The hash is ``Plan.digest()``: sha256 of the canonical JSON, so it names the plan's content
whatever the file's key order or whitespace (the same digest journals carry as
``plan_digest``). Before anything is sent, ``--execute --expect-plan-hash H`` refuses a plan
with another hash, and the drift since the record (``drift``) refuses the run unless
``--allow-drift``. A plain Kafka-format plan with no record beside it has no known basis:
its drift is not checked (a note says so; the rollback file written at execute is the state
it starts from). Pure: the cluster reads are the caller's (``run.preflight``).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidPlanError, PlanDriftError, PlanHashError, UsageError
from ..model import PartitionState, Plan, TopicPartition, read_text

VERSION = 1
KIND = "reassign-kit plan record"


def record_path(plan_path: str) -> str:
    """Where the record of ``plan_path`` lives: ``plan.json`` -> ``plan.record.json``."""
    stem, ext = os.path.splitext(plan_path)
    return f"{stem}.record.json" if ext == ".json" else f"{plan_path}.record.json"


@dataclass(frozen=True)
class Approval:
    """What a run must match before anything is sent: ``expect_plan_hash`` (None: any plan),
    ``allow_drift`` (run despite drift, showing it), ``record`` (the plan record's path;
    None: the one beside the plan file when there is one; "": check no drift)."""

    expect_plan_hash: str | None = None
    allow_drift: bool = False
    record: str | None = None

    def __post_init__(self) -> None:
        # an empty or mistyped hash must refuse the run, not turn the check off
        if self.expect_plan_hash is not None:
            expected_hash(self.expect_plan_hash)

    def record_for(self, plan_path: str | None) -> str | None:
        """The record file to check, or None (none given, none beside the plan)."""
        if self.record is not None:
            return self.record or None
        if plan_path and os.path.isfile(record_path(plan_path)):
            return record_path(plan_path)
        return None


def plan_hash(plan: Plan) -> str:
    """The plan's content hash (``Plan.digest()``, hex sha256 of the canonical JSON)."""
    return plan.digest()


def normalise_hash(text: str) -> str:
    """``sha256:ABC…`` / ``ABC…`` -> ``abc…``; what ``--expect-plan-hash`` accepts."""
    t = text.strip().lower()
    return t[len("sha256:") :] if t.startswith("sha256:") else t


SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def expected_hash(text: object) -> str:
    """``--expect-plan-hash``'s value normalised, or ``UsageError`` (exit 2) when it is not a
    sha256 (64 hex digits, ``sha256:`` prefix allowed): no value is not "any plan"."""
    want = normalise_hash(text) if isinstance(text, str) else ""
    if not SHA256_HEX.fullmatch(want):
        raise UsageError(
            "--expect-plan-hash must be the plan's sha256: 64 hex digits (a sha256: prefix is "
            "accepted), as `reassign-kit plan` printed it; nothing was sent to the cluster"
        )
    return want


def check_hash(plan: Plan, expected: str | None, source: str) -> None:
    """Refuse (``PlanHashError``, nothing sent) a plan whose hash is not ``expected``; None
    (and only None) means no hash was asked for."""
    if expected is None:
        return
    want, got = expected_hash(expected), plan_hash(plan)
    if want != got:
        raise PlanHashError(
            f"{source} is not the approved plan: its sha256 is {got}, --expect-plan-hash "
            f"is {want}; nothing was sent to the cluster"
        )


@dataclass(frozen=True)
class PlanRecord:
    """What a plan was made from: its hash, the brokers, the planned topics and each planned
    partition's replicas at planning time."""

    plan_sha256: str
    brokers: tuple[int, ...]
    topics: tuple[str, ...]
    partitions: Mapping[TopicPartition, tuple[int, ...]]
    made_at: str = ""
    snapshot: str = ""
    # each planned partition's size growth as the snapshot recorded it (bytes/s; absent: none)
    growth: Mapping[TopicPartition, float] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        plan: Plan,
        current: Plan,
        brokers: Iterable[int],
        snapshot: str = "",
        growth: Mapping[TopicPartition, float] | None = None,
    ) -> PlanRecord:
        """The record of ``plan`` made from a snapshot: ``current`` is the planned partitions'
        assignment at that moment (``PlanResult.current``), ``brokers`` the snapshot's,
        ``growth`` the partitions' recorded growth rates (only the planned ones are kept)."""
        planned = {m.tp for m in current}
        return cls(
            plan_sha256=plan_hash(plan),
            brokers=tuple(sorted(set(brokers))),
            topics=tuple(plan.topics()),
            partitions={m.tp: tuple(m.replicas) for m in current},
            made_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            snapshot=snapshot,
            growth={
                tp: float(r)
                for tp, r in (growth or {}).items()
                if tp in planned and math.isfinite(r)
            },
        )

    @classmethod
    def for_result(cls, result: Any, snapshot: str = "") -> PlanRecord:
        """The record of a ``plan_report.PlanResult`` (the brokers: the snapshot's; the
        growth rates: its ``growth_bytes_s``, when the snapshot had loads)."""
        return cls.of(
            result.plan,
            result.current,
            result.prepared.ctx.racks.keys(),
            snapshot,
            getattr(result, "growth_bytes_s", None),
        )

    def rates_for(self, plan: Plan) -> dict[TopicPartition, float]:
        """The recorded growth rates of ``plan``'s partitions, or none when this record is not
        ``plan``'s (another digest: its numbers describe another plan, never trusted)."""
        if self.plan_sha256 != plan_hash(plan):
            return {}
        return {m.tp: self.growth[m.tp] for m in plan if m.tp in self.growth}

    def to_json_obj(self) -> dict[str, Any]:
        return {
            "version": VERSION,
            "kind": KIND,
            "plan_sha256": self.plan_sha256,
            "made_at": self.made_at,
            "snapshot": self.snapshot,
            "brokers": list(self.brokers),
            "topics": sorted(self.topics),
            "partitions": [self._entry(tp, r) for tp, r in sorted(self.partitions.items())],
        }

    def _entry(self, tp: TopicPartition, replicas: tuple[int, ...]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "topic": tp.topic,
            "partition": tp.partition,
            "replicas": list(replicas),
        }
        if tp in self.growth:
            out["growth_bytes_s"] = round(self.growth[tp], 3)
        return out

    def write(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json_obj(), f, indent=1)
            f.write("\n")

    @classmethod
    def read(cls, path: str) -> PlanRecord:
        """Strictly: every problem names the file (``InvalidPlanError``, exit 3)."""
        header = f"{path} is not a plan record"
        try:
            doc = json.loads(read_text(path, "plan record"))
        except json.JSONDecodeError as e:
            raise InvalidPlanError([f"not valid JSON: {e}"], header=header) from None
        except RecursionError:  # nested thousands deep: no record is
            raise InvalidPlanError(["not valid JSON: nested too deeply"], header=header) from None
        problems: list[str] = []
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise InvalidPlanError([f"'kind' must be {KIND!r}"], header=header)
        if doc.get("version") != VERSION:
            problems.append(f"unsupported version {doc.get('version')!r}; only 1 is known")
        digest = doc.get("plan_sha256")
        if not isinstance(digest, str) or not SHA256_HEX.fullmatch(digest):
            problems.append("'plan_sha256' must be a hex sha256")
        brokers = doc.get("brokers")
        if not isinstance(brokers, list) or not all(_is_int(b) for b in brokers):
            problems.append("'brokers' must be a list of broker ids")
            brokers = []
        topics = doc.get("topics")
        if not isinstance(topics, list) or not all(isinstance(t, str) and t for t in topics):
            problems.append("'topics' must be a list of topic names")
            topics = []
        parts: dict[TopicPartition, tuple[int, ...]] = {}
        growth: dict[TopicPartition, float] = {}
        entries = doc.get("partitions")
        if not isinstance(entries, list):
            problems.append("'partitions' must be a list")
            entries = []
        for i, e in enumerate(entries):
            ok = (
                isinstance(e, dict)
                and isinstance(e.get("topic"), str)
                and _is_int(e.get("partition"))
                and isinstance(e.get("replicas"), list)
                and all(_is_int(r) for r in e["replicas"])
            )
            if not ok:
                problems.append(f"partitions[{i}]: needs topic, partition and replicas (ids)")
                continue
            tp = TopicPartition(e["topic"], e["partition"])
            parts[tp] = tuple(e["replicas"])
            if "growth_bytes_s" in e:
                rate = e["growth_bytes_s"]
                if not _is_rate(rate):
                    problems.append(
                        f"partitions[{i}] ({tp}): 'growth_bytes_s' must be a finite number "
                        f"(bytes/s), got {rate!r}"
                    )
                    continue
                growth[tp] = float(rate)
        if problems:
            raise InvalidPlanError(problems, header=header)
        return cls(
            plan_sha256=digest,
            brokers=tuple(brokers),
            topics=tuple(topics),
            partitions=parts,
            made_at=str(doc.get("made_at") or ""),
            snapshot=str(doc.get("snapshot") or ""),
            growth=growth,
        )


def _is_rate(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


@dataclass(frozen=True)
class Drift:
    """What changed in the cluster since the record: each entry names what drifted."""

    moved: tuple[tuple[TopicPartition, tuple[int, ...], tuple[int, ...]], ...] = ()
    partitions_gone: tuple[TopicPartition, ...] = ()
    topics_gone: tuple[str, ...] = ()
    brokers_gone: tuple[int, ...] = ()
    plan_changed: str = ""  # the plan's hash is not the record's
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __bool__(self) -> bool:
        return bool(
            self.moved
            or self.partitions_gone
            or self.topics_gone
            or self.brokers_gone
            or self.plan_changed
        )

    def lines(self) -> list[str]:
        out = []
        if self.plan_changed:
            out.append(self.plan_changed)
        out += [
            f"broker {b} is gone (it was in the cluster the plan was made from)"
            for b in self.brokers_gone
        ]
        out += [f"topic {t} was deleted" for t in self.topics_gone]
        out += [f"partition {tp} no longer exists" for tp in self.partitions_gone]
        out += [
            f"partition {tp}: replicas {list(was)} when planned, now {list(now)}"
            for tp, was, now in self.moved
        ]
        return out


def drift(
    record: PlanRecord,
    plan: Plan,
    states: Mapping[TopicPartition, PartitionState],
    live_brokers: Iterable[int],
    live_topics: Iterable[str],
) -> Drift:
    """The drift between ``record`` and the cluster now (``states`` of the recorded
    partitions, the live broker ids, the topics that exist among the recorded ones).
    A partition already at its target, or reassigning toward it (a resumed run), has not
    drifted: it is where the plan takes it."""
    live = set(live_brokers)
    targets = {m.tp: tuple(m.replicas) for m in plan}
    changed = ""
    if record.plan_sha256 != plan_hash(plan):
        changed = (
            f"the plan is not the one the record describes (plan sha256 {plan_hash(plan)}, "
            f"recorded {record.plan_sha256}): it was edited after `reassign-kit plan` made it"
        )
    existing = set(live_topics)
    topics_gone = tuple(
        sorted((set(record.topics) | {tp.topic for tp in record.partitions}) - existing)
    )
    gone_topics = set(topics_gone)
    moved, parts_gone = [], []
    for tp, was in sorted(record.partitions.items()):
        if tp.topic in gone_topics:
            continue
        st = states.get(tp)
        if st is None:
            parts_gone.append(tp)
            continue
        now = tuple(st.replicas)
        if (
            now == was
            or now == targets.get(tp)
            or (st.reassigning and st.target == targets.get(tp))
        ):
            continue
        moved.append((tp, was, now))
    return Drift(
        moved=tuple(moved),
        partitions_gone=tuple(parts_gone),
        topics_gone=topics_gone,
        brokers_gone=tuple(sorted(set(record.brokers) - live)),
        plan_changed=changed,
    )


def refuse_drift(d: Drift, source: str, record_file: str, allow: bool) -> list[str]:
    """``PlanDriftError`` naming every drifted partition / broker / topic unless ``allow``;
    with ``allow``, the lines to show before proceeding."""
    if not d:
        return [f"no drift since {source} was planned ({record_file})"]
    lines = d.lines()
    if not allow:
        raise PlanDriftError(
            f"the cluster changed since {source} was planned ({record_file}); nothing was sent "
            f"(re-plan from a new snapshot, or --allow-drift to run it anyway):\n  "
            + "\n  ".join(lines)
        )
    return [f"--allow-drift: running {source} despite its drift since planning:", *lines]
