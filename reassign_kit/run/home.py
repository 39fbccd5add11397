"""A run's home: where every execute records what a later command needs to finish or undo it.

Kafka's own tool leaves the rollback JSON wherever the operator saved its output and nothing
else, so a runbook's next step (``--verify`` / ``--cancel`` with the same plan) cannot know
which throttle values were the operator's or in which order the replicas were. Here every
execute (legacy and paced, CLI and API) records, before anything is sent, a run directory::

    <state root>/<cluster id>/<plan hash>/<run id>/
        run.json                        what ran: kind, started, plan source, where its files are
        plan.json                       the plan (canonical JSON)
        rollback.json                   the originals (each partition's replica list, in order)
        rollback.throttle-priors.json   legacy --execute --throttle: the configs as they were
        journal.jsonl                   a paced run's journal (its originals and priors too)

The state root is ``--state-dir``, else ``$REASSIGN_KIT_STATE_DIR``, else
``./.reassign-kit/runs``. The key is the cluster id (DescribeCluster) and the plan's content
hash (the canonical JSON: sorted partitions, so the same plan reformatted is the same key).
An explicit ``--rollback-file`` / ``--journal`` is honoured and recorded in ``run.json``.

``find`` (for ``--verify``, ``--cancel``, ``--list``, ``throttles``) picks the newest run of
the key not marked finished (else the newest), says which, and names a damaged record by its
file rather than guessing past it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from ..errors import (
    AuthorizationError,
    InvalidPlanError,
    JournalError,
    PlanDriftError,
    PlanHashError,
    ReassignmentInProgressError,
    UsageError,
)
from ..model import Plan
from ..throttles.priors import Priors, load_priors, priors_path_for

STATE_DIR_ENV = "REASSIGN_KIT_STATE_DIR"
DEFAULT_STATE_DIR = os.path.join(".reassign-kit", "runs")
RUN_FILE = "run.json"
PLAN_FILE = "plan.json"
ROLLBACK_FILE = "rollback.json"
JOURNAL_FILE = "journal.jsonl"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
# a run id names a directory and is journaled: within the journal's rule, never "." or ".."
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


# what a preflight refuses with before anything is sent: the run's directory is removed then
REFUSED = (
    InvalidPlanError,
    ReassignmentInProgressError,
    UsageError,
    AuthorizationError,
    PlanHashError,  # not the approved plan
    PlanDriftError,  # the cluster drifted since the plan was made
)


class StateRecordError(JournalError):
    """A run's record (``run.json``) cannot be read: named by its file (exit 12, as a corrupt
    journal: a guess past it could restore the wrong run's values)."""


def state_root(state_dir: str | os.PathLike | None = None) -> str:
    """``state_dir``, else ``$REASSIGN_KIT_STATE_DIR``, else ``./.reassign-kit/runs``
    (absolute, so what is recorded and printed stays valid from another directory)."""
    root = os.fspath(state_dir) if state_dir else os.environ.get(STATE_DIR_ENV) or ""
    return os.path.abspath(root or DEFAULT_STATE_DIR)


def _where(state_dir: str | os.PathLike | None) -> str:
    """How the operator chose the root, for messages."""
    if state_dir:
        return "--state-dir"
    return f"${STATE_DIR_ENV}" if os.environ.get(STATE_DIR_ENV) else "the default state dir"


def plan_hash(plan: Plan) -> str:
    """The plan's content hash: sha256 of its canonical JSON (sorted partitions)."""
    return hashlib.sha256(plan.to_json().encode()).hexdigest()[:16]


def key_dir(root: str, cluster_id: str, plan: Plan) -> str:
    return os.path.join(root, _SAFE.sub("_", cluster_id or "unknown"), plan_hash(plan))


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _write_json(path: str, obj: Any) -> None:
    """Atomically and durably (tmp, fsync, rename), mode 0600: it describes the cluster."""
    tmp = f"{path}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


@dataclass
class RunRecord:
    """One run's ``run.json``: paths are absolute; ``finished`` is set (UTC time) by the
    command that ended it (a paced run done, a verify that found it complete, a cancel)."""

    dir: str
    run_id: str
    kind: str  # "legacy" | "paced"
    started_ts: float
    cluster_id: str
    plan_hash: str
    plan_source: str
    rollback: str | None = None
    priors: str | None = None
    journal: str | None = None
    throttle: int | None = None
    finished: str | None = None
    outcome: str | None = None
    # plan partitions already reassigning when it started (--additional over an earlier run
    # of the same plan): its rollback has their set, not their order (KIP-455)
    in_flight_at_start: list[str] = field(default_factory=list)

    @property
    def started(self) -> str:
        return _iso(self.started_ts)

    def save(self) -> None:
        obj = {k: v for k, v in asdict(self).items() if k != "dir"}
        _write_json(os.path.join(self.dir, RUN_FILE), obj)

    def describe(self) -> str:
        what = "paced --execute" if self.kind == "paced" else "--execute"
        end = f", finished {self.finished} ({self.outcome})" if self.finished else ", not finished"
        return f"run {self.run_id} ({what}, started {self.started}{end}) at {self.dir}"

    def throttle_priors(self) -> Priors:
        """The configs as they were before this run changed them: its priors file (legacy),
        else its journal's ``throttle_prior`` events (paced); empty when it changed none."""
        out = Priors()
        for source in (self.priors, self.journal):
            if source and os.path.exists(source):
                got = load_priors(source)
                if got:
                    out.update(got)
        return out

    def rollback_file(self) -> str | None:
        return self.rollback if self.rollback and os.path.exists(self.rollback) else None

    def journal_file(self) -> str | None:
        return self.journal if self.journal and os.path.exists(self.journal) else None

    def wrote_undo(self) -> bool:
        """Whether it got as far as writing its undo information (rollback file, journal)."""
        return bool(self.rollback_file() or self.journal_file())

    def written(
        self, rollback: str | None, priors: str | None = None, in_flight: Iterable[Any] = ()
    ) -> None:
        """Record where the preflight actually wrote the rollback (a taken name gets a
        ``-2`` suffix), the priors file (None: nothing to restore was recorded) and the plan's
        partitions that were already reassigning."""
        self.rollback = os.path.abspath(rollback) if rollback else None
        if self.kind == "legacy":
            self.priors = os.path.abspath(priors) if priors else None
        self.in_flight_at_start = sorted(str(tp) for tp in in_flight)
        self.save()

    def written_prepared(self, prepared: Any, plan: Plan) -> None:
        """``written`` from a paced preflight's result: its rollback file and the plan's
        partitions it found already reassigning."""
        self.written(
            prepared.rollback_path, in_flight=[m.tp for m in plan if m.tp in prepared.in_flight]
        )

    def mark_finished(self, outcome: str) -> None:
        if self.finished is None:
            self.finished, self.outcome = _iso(time.time()), outcome
            self.save()


def _new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def check_run_id(run_id: Any) -> str:
    """``run_id`` as given, or ``UsageError`` naming it: it becomes the run's directory
    name and every journal line's id, so a path separator or a control character is refused."""
    if not isinstance(run_id, str) or not RUN_ID.fullmatch(run_id):
        raise UsageError(
            f"run id {run_id!r} is not a run id: 1 to 128 of A-Z a-z 0-9 . _ : - starting "
            "with a letter or digit. Nothing was sent."
        )
    return run_id


def begin(
    gateway: Any,
    plan: Plan,
    *,
    kind: str,
    state_dir: str | os.PathLike | None = None,
    source: str = "the plan",
    rollback: str | None = None,
    journal: str | None = None,
    throttle: int | None = None,
    run_id: str | None = None,
) -> RunRecord:
    """Create this run's directory and record (before anything is sent). ``rollback`` /
    ``journal``: an explicit path (kept where asked, recorded here), else one in the run's
    directory (a paced run's journal; a legacy run has none). ``run_id``: the caller's (checked,
    and never an earlier run's home), else a new one. Raises ``UsageError`` naming the
    directory and how it was chosen when it cannot be written: nothing is sent then."""
    run_id = _new_run_id() if run_id is None else check_run_id(run_id)
    root = state_root(state_dir)
    cid = str(gateway.cluster_id())
    base = key_dir(root, cid, plan)
    d = os.path.join(base, run_id)
    if os.path.lexists(d):  # the same id twice: the first run's record and originals stay
        raise UsageError(
            f"run id {run_id!r} already has a home at {d}: give a new id (or resume that "
            "run from its journal). Nothing was sent."
        )
    try:
        os.makedirs(d, mode=0o700)
        with open(os.path.join(d, PLAN_FILE), "w", encoding="utf-8") as f:
            f.write(plan.to_json(indent=2) + "\n")
        rec = RunRecord(
            dir=d,
            run_id=run_id,
            kind=kind,
            started_ts=time.time(),
            cluster_id=cid,
            plan_hash=plan_hash(plan),
            plan_source=os.path.abspath(source) if os.path.exists(source) else source,
            rollback=os.path.abspath(rollback) if rollback else os.path.join(d, ROLLBACK_FILE),
            journal=(
                os.path.abspath(journal)
                if journal
                else (os.path.join(d, JOURNAL_FILE) if kind == "paced" else None)
            ),
            throttle=throttle,
        )
        rec.priors = priors_path_for(rec.rollback) if kind == "legacy" else None
        rec.save()
    except OSError as e:
        raise UsageError(
            f"run state: cannot write {d} ({e.strerror or e}); the state dir ({_where(state_dir)}: "
            f"{root}) must be writable: every execute records its originals and throttle "
            f"priors there before anything is sent (choose another with --state-dir or "
            f"${STATE_DIR_ENV}). Nothing was sent."
        ) from None
    return rec


@contextmanager
def recording(
    gateway: Any, plan: Plan, *, enabled: bool = True, **begin_args: Any
) -> Iterator[Any]:
    """The one sequence every execute follows (CLI legacy and paced, the API, the panel): the
    run's home is created (``begin``) before anything is sent and yielded (None when not
    ``enabled``: a resume keeps the home it has); a refusal inside the block (``REFUSED``:
    nothing was sent) removes it again, so a later --verify / --cancel does not find it."""
    home = begin(gateway, plan, **begin_args) if enabled else None
    try:
        yield home
    except REFUSED:
        if home is not None:
            discard(home)
        raise


def discard(rec: RunRecord) -> None:
    """Remove the directory of a run refused before anything was sent (an invalid plan,
    others' moves in flight, a bad option), so a later command does not find it."""
    shutil.rmtree(rec.dir, ignore_errors=True)


def read_record(d: str) -> RunRecord:
    """A run directory's record; a damaged one is named by its file (``StateRecordError``)."""
    path = os.path.join(d, RUN_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            obj = json.load(f)
    except FileNotFoundError:
        raise StateRecordError(f"run state {path}: missing") from None
    except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        raise StateRecordError(
            f"run state {path}: damaged ({e}); give --rollback-file / --journal / "
            "--throttle-priors explicitly, or move that run directory away"
        ) from None
    problems = _record_problems(obj)
    if problems:
        raise StateRecordError(
            f"run state {path}: damaged ({'; '.join(problems)}); give --rollback-file / "
            "--journal / --throttle-priors explicitly, or move that run directory away"
        )
    fields_ = {k: obj.get(k) for k in RunRecord.__dataclass_fields__ if k != "dir"}
    fields_["in_flight_at_start"] = list(obj.get("in_flight_at_start") or [])
    return RunRecord(dir=d, **fields_)


def _record_problems(obj: Any) -> list[str]:
    if not isinstance(obj, Mapping):
        return ["not a JSON object"]
    out = []
    for k, types in (
        ("run_id", str),
        ("kind", str),
        ("started_ts", int | float),
        ("cluster_id", str),
        ("plan_hash", str),
        ("plan_source", str),
    ):
        if not isinstance(obj.get(k), types) or isinstance(obj.get(k), bool):
            out.append(f'"{k}" missing or of the wrong type')
    for k in ("rollback", "priors", "journal", "finished", "outcome"):
        if obj.get(k) is not None and not isinstance(obj.get(k), str):
            out.append(f'"{k}" must be a path / text or null')
    if obj.get("throttle") is not None and not isinstance(obj.get("throttle"), int):
        out.append('"throttle" must be a whole number or null')
    moving = obj.get("in_flight_at_start", [])
    if not isinstance(moving, list) or not all(isinstance(x, str) for x in moving):
        out.append('"in_flight_at_start" must be a list of partition names')
    if obj.get("kind") not in (None, "legacy", "paced") and isinstance(obj.get("kind"), str):
        out.append('"kind" must be "legacy" or "paced"')
    return out


def _records(base: str) -> list[RunRecord]:
    """Every run under one key (or one cluster) directory, oldest first."""
    if not os.path.isdir(base):
        return []
    # a directory without run.json sent nothing (begin writes it before anything is sent)
    recs = [
        read_record(os.path.join(base, n))
        for n in sorted(os.listdir(base))
        if os.path.isfile(os.path.join(base, n, RUN_FILE))
    ]
    return sorted(recs, key=lambda r: (r.started_ts, r.run_id))


@dataclass
class Found:
    """The run a command acts on (``run``), and the others of the same key, oldest first."""

    run: RunRecord
    runs: list[RunRecord] = field(default_factory=list)

    @property
    def unfinished(self) -> list[RunRecord]:
        return [r for r in self.runs if r.finished is None]

    def throttle_priors(self) -> Priors:
        """The operator's values: the priors of the unfinished runs of this plan, oldest first
        (a value recorded first wins: a second ``--execute --additional --throttle`` of the
        same plan recorded the first run's rate, not the operator's)."""
        out = Priors()
        for r in self.unfinished or [self.run]:
            out.update(r.throttle_priors())
        return out

    def lines(self, what: str) -> list[str]:
        out = [f"Run state ({what}): found {self.run.describe()}."]
        others = [r for r in self.unfinished if r is not self.run]
        if others:
            out.append(
                f"  {len(others)} earlier unfinished run(s) of the same plan there too (the "
                "newest is used; their throttle priors count, the earliest value winning): "
                + ", ".join(r.run_id for r in others)
            )
        return out

    def mark_finished(self, outcome: str) -> None:
        for r in self.unfinished:
            r.mark_finished(outcome)

    @property
    def origin(self) -> RunRecord:
        """The run whose originals are the partitions' lists before any of these runs: the
        found run, or, when it started over an earlier unfinished run's moves still in
        flight (its rollback then holds their sets in Kafka's order), that earlier run."""
        earlier = [r for r in self.unfinished if r.started_ts < self.run.started_ts]
        run = self.run
        while run.in_flight_at_start and earlier:
            run = earlier.pop()
        return run

    def origin_lines(self) -> list[str]:
        o = self.origin
        if o is self.run:
            return []
        return [
            f"  It started while {len(self.run.in_flight_at_start)} of its partitions were "
            f"still moving for run {o.run_id}: the originals are that run's ({o.rollback})."
        ]


def refuse_untrusted(root: str, path: str) -> None:
    """A state directory another user can write (mode 1777, 0777, group-writable) or that
    another user owns could hold a planted record: every directory from ``root`` down to
    ``path`` (and ``path`` itself) must be the operator's own and writable by them only."""
    root = os.path.abspath(root)
    chain = [os.path.abspath(path)]
    while chain[-1] != root and os.path.dirname(chain[-1]) != chain[-1]:
        chain.append(os.path.dirname(chain[-1]))
        if not chain[-1].startswith(root):
            break
    for p in reversed(chain):
        try:
            st = os.lstat(p)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise StateRecordError(f"run state {p}: a symbolic link: refused")
        if st.st_uid != os.getuid():
            raise StateRecordError(
                f"run state {p}: owned by uid {st.st_uid}, not this user: refused (another "
                "user could plant a run there); use a --state-dir only you can write"
            )
        if st.st_mode & 0o022:
            raise StateRecordError(
                f"run state {p}: writable by others (mode {stat.S_IMODE(st.st_mode):o}): "
                "refused (another user could plant a run there); use a --state-dir only you "
                "can write"
            )


def find(gateway: Any, plan: Plan, state_dir: str | os.PathLike | None = None) -> Found | None:
    """The newest unfinished run of ``plan`` on this cluster (else its newest run), or None.
    Refused when the state directory is not the operator's alone, or a record there is of
    another plan or cluster than its place says (planted or moved)."""
    root = state_root(state_dir)
    base = key_dir(root, str(gateway.cluster_id()), plan)
    refuse_untrusted(root, base)
    runs = _records(base)
    for r in runs:
        refuse_untrusted(root, os.path.join(r.dir, RUN_FILE))
        if r.plan_hash != plan_hash(plan) or r.cluster_id != str(gateway.cluster_id()):
            raise StateRecordError(
                f"run state {os.path.join(r.dir, RUN_FILE)}: records plan {r.plan_hash} on "
                f"cluster {r.cluster_id}, not this plan ({plan_hash(plan)}) on this cluster: "
                "refused (planted or moved there); move that run directory away"
            )
    if not runs:
        return None
    unfinished = [r for r in runs if r.finished is None]
    # a run that wrote no undo information sent nothing (killed in its preflight): an
    # unfinished one that did is the one to act on
    acted = [r for r in unfinished if r.wrote_undo()]
    return Found((acted or unfinished or runs)[-1], runs)


def cluster_runs(gateway: Any, state_dir: str | os.PathLike | None = None) -> list[RunRecord]:
    """Every run recorded for this cluster (any plan), oldest first."""
    root = state_root(state_dir)
    base = os.path.join(root, _SAFE.sub("_", str(gateway.cluster_id())))
    refuse_untrusted(root, base)
    if not os.path.isdir(base):
        return []
    out: list[RunRecord] = []
    for h in sorted(os.listdir(base)):
        if os.path.isdir(os.path.join(base, h)):
            out += _records(os.path.join(base, h))
    return sorted(out, key=lambda r: (r.started_ts, r.run_id))


def run_plan(rec: RunRecord) -> Plan | None:
    """The plan a run recorded (None when its file is gone)."""
    path = os.path.join(rec.dir, PLAN_FILE)
    return Plan.read(path) if os.path.exists(path) else None


def runs_in_flight_lines(
    gateway: Any, in_flight: Mapping[Any, Any], state_dir: str | os.PathLike | None = None
) -> list[str]:
    """``--list``: the unfinished runs recorded for this cluster, each with how many of its
    partitions are in flight now (newest first, at most 10)."""
    runs = [r for r in cluster_runs(gateway, state_dir) if r.finished is None]
    if not runs:
        return []
    out = ["", f"Unfinished runs recorded for this cluster ({state_root(state_dir)}):"]
    for r in list(reversed(runs))[:10]:
        plan = run_plan(r)
        moving = sum(1 for m in plan if m.tp in in_flight) if plan is not None else 0
        total = len(plan) if plan is not None else 0
        out.append(f"  {r.describe()}: {moving} of its {total} partitions in flight")
    if len(runs) > 10:
        out.append(f"  … and {len(runs) - 10} older")
    return out


def cluster_priors(
    gateway: Any, state_dir: str | os.PathLike | None = None
) -> tuple[Priors | None, list[str]]:
    """``throttles --check / --clean`` given no journal: the throttle priors of the unfinished
    runs recorded for this cluster (oldest first: the first value recorded is the operator's),
    None when there is none, and lines saying which runs they came from."""
    runs = [r for r in cluster_runs(gateway, state_dir) if r.finished is None]
    if not runs:
        return None, [
            f"Run state: no unfinished run recorded for this cluster under {state_root(state_dir)}."
        ]
    out = Priors()
    for r in runs:
        out.update(r.throttle_priors())
    lines = [f"Run state: the throttle priors of {len(runs)} unfinished run(s) of this cluster:"]
    lines += [f"  {r.describe()}" for r in reversed(runs)]
    return out, lines
