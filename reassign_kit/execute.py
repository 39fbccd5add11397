"""The paced executor: poll → schedule → throttle → submit → journal, until the plan is
submitted (KIP-1335's return point) or complete (``wait``).

``Run`` is used alike by the CLI (``run()`` in the main thread, signals call ``stop()``) and by
the notebook panel (``start()`` in a worker thread; buttons call ``pause()`` / ``resume()`` /
``stop()`` / ``set_caps()`` from the UI thread). Every decision comes from ``schedule.decide``
(pure); every cluster call goes through a ``gateway.Gateway``, so the same loop runs against
Kafka (``admin.AdminGateway``) and against ``simulate.SimCluster``.

Invariants kept on every exit path (done, error, deadline, stop, Ctrl-C / SIGTERM): the
throttles on the cluster are those the moves still in flight need (no more, no less), and a
move is only submitted after the throttle it needs is set. The journal plus the cluster are
the whole state: ``Run(..., resume=True)`` after a SIGKILL resubmits nothing complete, adopts
moves still in flight and keeps the caps.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol

from . import __version__
from .errors import ReassignKitError, UsageError
from .gateway import Gateway
from .journal import Journal, read_events
from .model import Move, PartitionState, Plan, TopicPartition, is_complete
from .schedule import ORDERS, Caps, Item, assign_batches, decide, item_for, order_items
from .simulate import ThrottleState

log = logging.getLogger(__name__)

ON_DEADLINE = ("wait", "stop", "cancel")
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOST_AFTER_POLLS = 3  # a move seen neither reassigning nor at its target this often is lost


class RunError(ReassignKitError):
    """The run stopped on an error (a rejected submission, a lost move, a deadline)."""

    exit_code = 7


@dataclass
class ExecuteOptions:
    """Pacing, caps, throttle, deadlines. Durations in seconds; ``throttle`` in bytes/s."""

    batch_size: int = 0
    incremental: bool = False
    poll_interval_ms: int = 1000
    max_moves_per_broker: int | None = None
    max_leader_moves: int | None = None
    cluster_max_reassignments: int | None = None
    order: str = "topic-partition"
    throttle: int | None = None
    move_deadline: float | None = None
    run_deadline: float | None = None
    stuck_after: float | None = None
    on_deadline: str = "wait"
    wait: bool = False
    additional: bool = False
    allow_replication_factor_change: bool = True
    parallel_replica_count: int | None = None
    min_isr: int | None = None
    sample_interval: float = 5.0
    cancel_on_stop: bool = False

    def caps(self) -> Caps:
        return Caps(
            self.batch_size,
            self.incremental,
            self.max_moves_per_broker,
            self.max_leader_moves,
            self.cluster_max_reassignments,
            prefer_leader_moves=self.parallel_replica_count is not None,
        )

    def validate(self) -> ExecuteOptions:
        """Raise UsageError naming the option at fault (KIP-1335's rules and ours)."""
        self.caps().validate()
        if not isinstance(self.poll_interval_ms, int) or self.poll_interval_ms <= 0:
            raise UsageError(
                f"--reassignment-poll-interval-ms must be > 0, got {self.poll_interval_ms}"
            )
        if self.order not in ORDERS:
            raise UsageError(f"--order must be one of {', '.join(ORDERS)}, got {self.order!r}")
        if self.on_deadline not in ON_DEADLINE:
            raise UsageError(
                f"--on-deadline must be one of {', '.join(ON_DEADLINE)}, got {self.on_deadline!r}"
            )
        for name, v in (
            ("--move-deadline", self.move_deadline),
            ("--run-deadline", self.run_deadline),
            ("--stuck-after", self.stuck_after),
        ):
            if v is not None and not v > 0:
                raise UsageError(f"{name} must be > 0 seconds, got {v}")
        if self.throttle is not None and self.throttle <= 0:
            raise UsageError(
                f"--throttle must be a positive number of bytes/s, got {self.throttle}"
            )
        if self.parallel_replica_count is not None and self.parallel_replica_count < 1:
            raise UsageError(
                f"--parallel-replica-count must be >= 1, got {self.parallel_replica_count}"
            )
        return self

    def to_json_obj(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json_obj(cls, obj: Mapping[str, Any]) -> ExecuteOptions:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in obj.items() if k in names})


# ---------------------------------------------------------------------------- throttles


def needed_throttles(moving: Iterable[PartitionState], rate: int | None) -> ThrottleState:
    """What moves in flight need, as the official tool sets it: leader-throttle the replicas
    that already hold data (sources), follower-throttle the ones being added, a rate on every
    broker involved. Nothing when no rate was asked for."""
    if rate is None:
        return ThrottleState()
    leader: dict[str, set[tuple[int, int]]] = {}
    follower: dict[str, set[tuple[int, int]]] = {}
    brokers: set[int] = set()
    for st in moving:
        p = st.tp.partition
        sources = [b for b in st.replicas if b not in st.adding]
        for b in sources:
            leader.setdefault(st.tp.topic, set()).add((p, b))
        for b in st.adding:
            follower.setdefault(st.tp.topic, set()).add((p, b))
        brokers.update(st.replicas)
    return ThrottleState(
        {t: frozenset(v) for t, v in leader.items()},
        {t: frozenset(v) for t, v in follower.items()},
        dict.fromkeys(sorted(brokers), int(rate)),
    )


def merge_throttles(
    current: ThrottleState, ours: ThrottleState, others: Iterable[PartitionState]
) -> ThrottleState:
    """The throttles to leave on the cluster: ours, plus whatever of the current ones the
    other reassignments in flight (another run, ``--additional``) still need — never more."""
    others = list(others)
    keep = needed_throttles(others, 1)

    def union(a: Mapping, b: Mapping, kept: Mapping) -> dict[str, frozenset]:
        out: dict[str, frozenset] = {}
        for t in set(a) | set(b):
            v = frozenset(a.get(t, ())) | (frozenset(b.get(t, ())) & frozenset(kept.get(t, ())))
            if v:
                out[t] = v
        return out

    rates = {b: r for b, r in current.broker_rates.items() if b in keep.broker_rates}
    rates.update(ours.broker_rates)
    return ThrottleState(
        union(ours.leader_replicas, current.leader_replicas, keep.leader_replicas),
        union(ours.follower_replicas, current.follower_replicas, keep.follower_replicas),
        rates,
    )


def throttle_summary(state: ThrottleState) -> dict[str, Any]:
    return {
        "leader_replicas": {t: _fmt(v) for t, v in sorted(state.leader_replicas.items())},
        "follower_replicas": {t: _fmt(v) for t, v in sorted(state.follower_replicas.items())},
        "broker_rates": {str(b): r for b, r in sorted(state.broker_rates.items())},
    }


def _fmt(entries: Iterable[tuple[int, int]]) -> str:
    return ",".join(f"{p}:{b}" for p, b in sorted(entries))


def _parse(value: str | None) -> frozenset[tuple[int, int]]:
    out = set()
    for part in (value or "").split(","):
        part = part.strip()
        if ":" in part:
            p, b = part.split(":", 1)
            try:
                out.add((int(p), int(b)))
            except ValueError:
                continue
    return frozenset(out)


class ThrottleDriver(Protocol):
    def read(self, topics: Iterable[str], brokers: Iterable[int]) -> ThrottleState: ...

    def write(self, old: ThrottleState, new: ThrottleState) -> None: ...


class SimThrottles:
    """Throttles on a ``SimCluster``."""

    def __init__(self, sim: Any):
        self.sim = sim

    def read(self, topics: Iterable[str], brokers: Iterable[int]) -> ThrottleState:
        return self.sim.current_throttles()

    def write(self, old: ThrottleState, new: ThrottleState) -> None:
        cur = self.sim.current_throttles()
        topics = set(old.leader_replicas) | set(old.follower_replicas)
        brokers = set(old.broker_rates)
        self.sim.set_throttles(
            ThrottleState(
                {
                    **{t: v for t, v in cur.leader_replicas.items() if t not in topics},
                    **new.leader_replicas,
                },
                {
                    **{t: v for t, v in cur.follower_replicas.items() if t not in topics},
                    **new.follower_replicas,
                },
                {
                    **{b: r for b, r in cur.broker_rates.items() if b not in brokers},
                    **new.broker_rates,
                },
            )
        )


class KafkaThrottles:
    """Throttles as topic and broker configs, through ``admin.AdminGateway`` (incremental
    alters: only the throttle keys of the topics / brokers that change are touched)."""

    def __init__(self, admin: Any):
        self.admin = admin

    def read(self, topics: Iterable[str], brokers: Iterable[int]) -> ThrottleState:
        tc = self.admin.topic_configs(sorted(set(topics)))
        bc = self.admin.broker_configs(sorted(set(brokers)))
        leader = {t: _parse(c.get(LEADER_REPLICAS)) for t, c in tc.items()}
        follower = {t: _parse(c.get(FOLLOWER_REPLICAS)) for t, c in tc.items()}
        rates = {}
        for b, c in bc.items():
            r = c.get(FOLLOWER_RATE) or c.get(LEADER_RATE)
            if r:
                rates[int(b)] = int(float(r))
        return ThrottleState(
            {t: v for t, v in leader.items() if v},
            {t: v for t, v in follower.items() if v},
            rates,
        )

    def write(self, old: ThrottleState, new: ThrottleState) -> None:
        topics = set(old.leader_replicas) | set(old.follower_replicas)
        topics |= set(new.leader_replicas) | set(new.follower_replicas)
        tchanges: dict[str, dict[str, str | None]] = {}
        for t in sorted(topics):
            ch: dict[str, str | None] = {}
            for key, o, n in (
                (LEADER_REPLICAS, old.leader_replicas.get(t), new.leader_replicas.get(t)),
                (FOLLOWER_REPLICAS, old.follower_replicas.get(t), new.follower_replicas.get(t)),
            ):
                if frozenset(o or ()) != frozenset(n or ()):
                    ch[key] = _fmt(n) if n else None
            if ch:
                tchanges[t] = ch
        bchanges: dict[int, dict[str, str | None]] = {}
        for b in sorted(set(old.broker_rates) | set(new.broker_rates)):
            o, n = old.broker_rates.get(b), new.broker_rates.get(b)
            if o != n:
                v = None if n is None else str(n)
                bchanges[b] = {LEADER_RATE: v, FOLLOWER_RATE: v}
        # rates first when adding (no throttled replica without its rate), lists first when removing
        if tchanges:
            self.admin.alter_topic_configs(tchanges)
        if bchanges:
            self.admin.alter_broker_configs(bchanges)


def throttle_driver_for(gateway: Any) -> ThrottleDriver:
    if hasattr(gateway, "set_throttles") and hasattr(gateway, "current_throttles"):
        return SimThrottles(gateway)
    return KafkaThrottles(gateway)


# ---------------------------------------------------------------------------- steps hook

StepsFor = Callable[[Move, PartitionState, tuple[int, ...]], list[tuple[int, ...]]]


def single_step(
    move: Move, state: PartitionState, original: tuple[int, ...]
) -> list[tuple[int, ...]]:
    """Default: one step, the final target."""
    return [tuple(move.replicas)]


def steps_hook(options: ExecuteOptions) -> StepsFor:
    """The step planner to use: KIP-435 steps (``steps.plan_steps``) when
    ``parallel_replica_count`` is set, else one step per move."""
    if options.parallel_replica_count is None:
        return single_step
    from .steps import plan_steps

    r = options.parallel_replica_count
    min_isr = options.min_isr or 1

    def steps(
        move: Move, state: PartitionState, original: tuple[int, ...]
    ) -> list[tuple[int, ...]]:
        return plan_steps(state.replicas, move.replicas, r, min_isr, tp=move.tp) or [
            tuple(move.replicas)
        ]

    return steps


# ---------------------------------------------------------------------------- run state


@dataclass
class MoveState:
    move: Move
    item: Item
    status: str = "pending"  # pending | moving | ready | done | cancelled | failed
    steps: list[tuple[int, ...]] = field(default_factory=list)
    step: int = 0  # 1-based index of the step in flight (or last completed)
    original: tuple[int, ...] = ()
    submitted_at: float | None = None
    step_submitted_at: float | None = None
    completed_at: float | None = None
    bytes_copied: int | None = None
    progress_at: float | None = None
    lost_polls: int = 0
    stuck_reported: bool = False
    deadline_reported: bool = False
    error: str | None = None

    @property
    def step_target(self) -> tuple[int, ...]:
        if self.steps and 1 <= self.step <= len(self.steps):
            return self.steps[self.step - 1]
        return tuple(self.move.replicas)


@dataclass
class RunStatus:
    state: str
    run_id: str
    done: int
    moving: int
    pending: int
    failed: int
    cancelled: int
    total: int
    waiting_reason: str | None
    rows: list[dict[str, Any]]

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame(self.rows)


@dataclass
class RunResult:
    state: str  # done | submitted | stopped | deadline | failed
    run_id: str
    journal_path: str | None
    submitted: list[TopicPartition]
    completed: list[TopicPartition]
    still_moving: list[TopicPartition]
    pending: list[TopicPartition]
    failed: dict[TopicPartition, str]
    cancelled: list[TopicPartition]
    throttles_left: dict[str, Any]
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.state in ("done", "submitted")

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else (130 if self.state == "stopped" else RunError.exit_code)

    def to_pandas(self):
        import pandas as pd

        rows = [{"partition": str(t), "status": "completed"} for t in self.completed]
        rows += [{"partition": str(t), "status": "moving"} for t in self.still_moving]
        rows += [{"partition": str(t), "status": "pending"} for t in self.pending]
        rows += [{"partition": str(t), "status": "cancelled"} for t in self.cancelled]
        rows += [
            {"partition": str(t), "status": "failed", "error": e} for t, e in self.failed.items()
        ]
        return pd.DataFrame(rows)


# ---------------------------------------------------------------------------- the Run


class Run:
    """One paced execution of a plan. See the module docstring."""

    def __init__(
        self,
        gateway: Gateway,
        plan: Plan,
        options: ExecuteOptions | None = None,
        journal_path: str | os.PathLike | None = None,
        *,
        resume: bool = False,
        run_id: str | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] | None = None,
        throttles: ThrottleDriver | None = None,
        steps_for: StepsFor | None = None,
        plan_path: str | None = None,
        secrets: Sequence[str] = (),
    ):
        self.gw = gateway
        self.plan = plan
        self.options = (options or ExecuteOptions()).validate()
        self.journal_path = os.fspath(journal_path) if journal_path is not None else None
        self.resume_requested = resume
        self.plan_path = plan_path
        self._clock = clock
        self._sleep_fn = sleep
        self._throttles = throttles if throttles is not None else throttle_driver_for(gateway)
        self._steps_for = steps_for or steps_hook(self.options)
        self._secrets = tuple(secrets)
        self._caps = self.options.caps()
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._cancel_on_stop = self.options.cancel_on_stop
        self._paused = False
        self._subscribers: list[Callable[[dict[str, Any]], None]] = []
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._result: RunResult | None = None
        self.state = "created"
        self.waiting_reason: str | None = None
        self.run_id = run_id or ""
        self._started_at: float | None = None
        self._moves: dict[TopicPartition, MoveState] = {}
        self._order: list[TopicPartition] = []
        self._applied: ThrottleState | None = None
        self._managed_brokers: set[int] = set()
        self._last_sample = -1e18
        self._journal: Journal | None = None
        self._stop_submitting = False
        self._end_state: str | None = None
        self._error: str | None = None
        for m in plan:
            if m.log_dirs is not None and any(d != "any" for d in m.log_dirs):
                raise UsageError(
                    f"partition {m.tp}: log_dirs are not supported by paced execution; "
                    "run it without --reassignment-batch-size (legacy) or drop log_dirs"
                )

    # ---- control, from any thread ---------------------------------------------------------

    def start(self) -> Run:
        """Run the loop in a worker thread (for the notebook panel)."""
        self._thread = threading.Thread(target=self._run_safe, name="reassign-run", daemon=True)
        self._thread.start()
        return self

    def pause(self) -> None:
        """Stop submitting; keep watching completions and keep throttles right."""
        with self._lock:
            if not self._paused:
                self._paused = True
                self._emit("paused")
        self._wake.set()

    def resume(self) -> None:
        with self._lock:
            if self._paused:
                self._paused = False
                self._emit("resumed")
        self._wake.set()

    def stop(self, cancel_inflight: bool = False) -> None:
        """Stop submitting and end the run; in-flight moves keep running with their throttles,
        or are cancelled when ``cancel_inflight``."""
        with self._lock:
            self._cancel_on_stop = self._cancel_on_stop or cancel_inflight
        self._stop.set()
        self._wake.set()

    def set_caps(self, **changes: Any) -> Caps:
        """Change caps (batch_size, incremental, max_moves_per_broker, max_leader_moves,
        cluster_max_reassignments); effective at the next decision."""
        with self._lock:
            new = self._caps.with_changes(**changes)
            if new.mode != self._caps.mode and self.state not in ("created",):
                raise UsageError(
                    f"cannot switch pacing mode from {self._caps.mode} to {new.mode} during a run"
                )
            self._caps = new
            self._emit("caps_changed", caps=asdict(new))
        self._wake.set()
        return new

    def subscribe(self, fn: Callable[[dict[str, Any]], None]) -> None:
        """``fn(event)`` for every journal event, called from the loop's thread."""
        with self._lock:
            self._subscribers.append(fn)

    def status(self) -> RunStatus:
        with self._lock:
            rows = []
            counts = {"done": 0, "moving": 0, "pending": 0, "failed": 0, "cancelled": 0}
            for tp in self._order:
                ms = self._moves[tp]
                key = {"ready": "moving"}.get(ms.status, ms.status)
                counts[key] = counts.get(key, 0) + 1
                rows.append(
                    {
                        "topic": tp.topic,
                        "partition": tp.partition,
                        "status": ms.status,
                        "step": ms.step,
                        "steps": len(ms.steps) or 1,
                        "target": list(ms.move.replicas),
                        "batch": ms.item.batch,
                        "size_bytes": ms.item.size_bytes,
                        "bytes_copied": ms.bytes_copied,
                        "submitted_at": ms.submitted_at,
                        "completed_at": ms.completed_at,
                        "error": ms.error,
                    }
                )
            return RunStatus(
                self.state,
                self.run_id,
                counts["done"],
                counts["moving"],
                counts["pending"],
                counts["failed"],
                counts["cancelled"],
                len(self._order),
                self.waiting_reason,
                rows,
            )

    def wait(self, timeout: float | None = None) -> RunResult | None:
        """Block until the run ends; its result (None on timeout)."""
        self._done.wait(timeout)
        return self._result

    @property
    def caps(self) -> Caps:
        return self._caps

    # ---- the loop -------------------------------------------------------------------------

    def _run_safe(self) -> None:
        try:
            self.run()
        except ReassignKitError:
            pass  # recorded in the result and the journal
        except Exception:  # noqa: BLE001 - a worker thread must not die silently
            log.exception("run %s failed", self.run_id)

    def run(self) -> RunResult:
        """Run to the end in the calling thread; raise RunError if it ended on an error."""
        interrupted: BaseException | None = None
        try:
            self._begin()
            self.state = "running"
            while True:
                if self._step_once():
                    break
                self._sleep(self.options.poll_interval_ms / 1000.0)
        except KeyboardInterrupt as e:
            interrupted = e
            self._stop.set()
            self._end_state = "stopped"
        except ReassignKitError as e:
            self._exc = e
            self._fail(str(e))
        except Exception as e:  # noqa: BLE001 - recorded, throttles fixed, then re-raised as RunError
            self._fail(f"{type(e).__name__}: {e}")
        finally:
            self._finish()
        assert self._result is not None
        if interrupted is not None:
            raise interrupted
        if self._result.state == "failed":
            if self._exc is not None:
                raise self._exc
            raise RunError(self._result.error or "the run failed")
        return self._result

    def _sleep(self, seconds: float) -> None:
        if self._stop.is_set():
            return
        if self._sleep_fn is not None:
            self._sleep_fn(seconds)
        else:
            self._wake.wait(seconds)
            self._wake.clear()

    def _fail(self, msg: str) -> None:
        self._error = msg
        self._end_state = "failed"
        self._emit("error", message=msg)

    # ---- begin / resume -------------------------------------------------------------------

    def _begin(self) -> None:
        prior: list[dict[str, Any]] = []
        if self.journal_path and os.path.exists(self.journal_path):
            prior = read_events(self.journal_path)
        first = next((e for e in prior if e.get("event") == "run_started"), None)
        resuming = self.resume_requested and first is not None
        if self.resume_requested and first is None:
            raise UsageError(f"--resume: no run_started event in journal {self.journal_path}")
        if resuming:
            if first.get("plan_digest") != self.plan.digest():
                raise UsageError(
                    f"--resume: the plan differs from the one journaled in {self.journal_path}"
                )
            self.run_id = first["run_id"]
            self._started_at = float(first["ts"])
        else:
            self.run_id = self.run_id or time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:6]
            self._started_at = self._clock()
        if self.journal_path:
            self._journal = Journal(self.journal_path, self.run_id, self._clock, self._secrets)

        tps = [m.tp for m in self.plan]
        states = self.gw.describe_partitions(tps)
        cluster = self.gw.list_reassignments()
        missing = [tp for tp in tps if tp not in states]
        if missing:
            raise UsageError(
                "unknown partition(s), nothing was sent: " + ", ".join(str(t) for t in missing[:10])
            )
        journaled = self._journaled_submissions(prior) if resuming else {}
        foreign = [tp for tp in cluster if tp not in journaled]
        if foreign and not self.options.additional and not resuming:
            raise UsageError(
                f"{len(foreign)} reassignment(s) already in progress on the cluster (e.g. "
                f"{foreign[0]}); use --additional to add this plan's moves on top of them"
            )
        sizes = self._sizes(tps)
        items = []
        for m in self.plan:
            st = states[m.tp]
            under = len(st.isr) < len(st.replicas) if st.isr else False
            base = (
                st.replicas
                if not st.reassigning
                else tuple(b for b in st.replicas if b not in st.adding)
            )
            items.append(item_for(m.tp, base, m.replicas, st.leader, sizes.get(m.tp, 0), under))
        ordered = assign_batches(order_items(items, self.options.order), self._caps)
        self._order = [i.tp for i in ordered]
        plan_by_tp = self.plan.by_tp()
        for it in ordered:
            self._moves[it.tp] = MoveState(plan_by_tp[it.tp], it)

        self._emit(
            "run_started",
            resumed=resuming,
            plan_digest=self.plan.digest(),
            plan_path=self.plan_path,
            plan=self.plan.to_json_obj() if len(self.plan) <= 20000 else None,
            moves=len(self.plan),
            options=self.options.to_json_obj(),
            mode=self._caps.mode,
            batches=(max((i.batch for i in ordered), default=-1) + 1),
            reassign_kit_version=__version__,
            kafka_version=_kafka_version(self.gw),
            foreign_in_flight=len(foreign),
        )
        if foreign and self._caps.cluster_max_reassignments is None:
            self._emit(
                "warning",
                message=f"{len(foreign)} other reassignment(s) in flight; this run's caps do "
                "not count them (set --cluster-max-reassignments to)",
            )
        now = self._clock()
        for it in ordered:
            ms = self._moves[it.tp]
            st = states[it.tp]
            j = journaled.get(it.tp)
            if is_complete(ms.move.replicas, st):
                ms.status = "done"
                ms.completed_at = now
                if j is not None and not j.get("completed"):
                    self._emit("completed", **_tpf(it.tp), replicas=list(st.replicas), adopted=True)
                elif j is None:
                    self._emit("completed", **_tpf(it.tp), replicas=list(st.replicas), already=True)
            elif resuming and j is not None and st.reassigning:
                ms.status = "moving"
                ms.original = tuple(j.get("original") or ())
                ms.submitted_at = float(j.get("submitted_ts", now))
                ms.step_submitted_at = now
                ms.steps = [st.target, *self._plan_steps(ms, st, adopted_target=st.target)]
                ms.step = 1
                ms.progress_at = now
                self._emit(
                    "adopted",
                    **_tpf(it.tp),
                    target=list(st.target),
                    step=ms.step,
                    steps=len(ms.steps),
                )
            elif resuming and j is not None:
                # submitted before, neither moving nor complete: an earlier step completed
                # or the move was cancelled; continue from what the cluster shows
                ms.original = tuple(j.get("original") or st.replicas)
                ms.submitted_at = float(j.get("submitted_ts", now))
                ms.status = "ready"
        if resuming:
            for e in prior:
                if e.get("event") == "throttle_set":
                    self._managed_brokers.update(int(b) for b in e.get("broker_rates", {}))
        self._sync_throttles(cluster, extra=())

    def _journaled_submissions(self, prior: list[dict[str, Any]]) -> dict[TopicPartition, dict]:
        out: dict[TopicPartition, dict] = {}
        for e in prior:
            ev = e.get("event")
            if "topic" not in e:
                continue
            tp = TopicPartition(e["topic"], int(e["partition"]))
            if ev == "submitted":
                out.setdefault(tp, {}).update(
                    submitted_ts=e["ts"], original=e.get("current"), completed=False
                )
            elif ev == "completed" and tp in out:
                out[tp]["completed"] = True
        return out

    def _sizes(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """Bytes per partition (largest replica): used to order and to report."""
        try:
            infos = self.gw.describe_log_dirs([b.id for b in self.gw.brokers()])
        except ReassignKitError as e:
            self._emit("warning", message=f"cannot read partition sizes: {e}")
            return {}
        want = set(tps)
        sizes: dict[TopicPartition, int] = {}
        for r in infos:
            if r.tp in want and not r.is_future:
                sizes[r.tp] = max(sizes.get(r.tp, 0), r.size_bytes)
        return sizes

    def _plan_steps(
        self, ms: MoveState, st: PartitionState, adopted_target: tuple[int, ...] | None = None
    ) -> list[tuple[int, ...]]:
        base = PartitionState(st.tp, adopted_target or st.replicas, st.isr, st.leader)
        if adopted_target is not None and tuple(adopted_target) == tuple(ms.move.replicas):
            return []
        steps = self._steps_for(ms.move, base, ms.original or base.replicas)
        return [tuple(s) for s in steps] or [tuple(ms.move.replicas)]

    # ---- one iteration --------------------------------------------------------------------

    def _step_once(self) -> bool:
        """Poll, update, decide, submit; True when the loop should end."""
        cluster = self.gw.list_reassignments()
        watch = [tp for tp, ms in self._moves.items() if ms.status in ("moving", "ready")]
        states = self.gw.describe_partitions(watch) if watch else {}
        now = self._clock()
        with self._lock:
            self._update(states, now)
        self._maybe_sample(now, force=False)
        self._check_deadlines(now)
        if self._stop.is_set():
            self._end_state = self._end_state or "stopped"
            return True
        if self._end_state is not None:
            return True
        if not self._paused and not self._stop_submitting:
            self._schedule(cluster, states, now)
            if self._end_state is not None:
                return True
        self._sync_throttles(self.gw.list_reassignments() if self._dirty else cluster, extra=())
        return self._finished()

    _dirty = False
    _exc: ReassignKitError | None = None
    _deadline_hit = False

    def _update(self, states: Mapping[TopicPartition, PartitionState], now: float) -> None:
        for tp, ms in self._moves.items():
            if ms.status not in ("moving", "ready"):
                continue
            st = states.get(tp)
            if st is None:
                ms.status, ms.error = "failed", "partition no longer exists"
                self._emit("failed", **_tpf(tp), reason=ms.error)
                continue
            if ms.status == "ready":
                continue
            if is_complete(ms.step_target, st):
                ms.lost_polls = 0
                if ms.step >= len(ms.steps) or tuple(st.replicas) == tuple(ms.move.replicas):
                    ms.status = "done"
                    ms.completed_at = now
                    self._emit(
                        "completed",
                        **_tpf(tp),
                        replicas=list(st.replicas),
                        duration_s=round(now - (ms.submitted_at or now), 3),
                    )
                else:
                    ms.status = "ready"
                    self._emit(
                        "step_completed",
                        **_tpf(tp),
                        step=ms.step,
                        steps=len(ms.steps),
                        replicas=list(st.replicas),
                    )
            elif not st.reassigning:
                ms.lost_polls += 1
                if ms.lost_polls >= LOST_AFTER_POLLS:
                    ms.status = "failed"
                    ms.error = (
                        f"no longer reassigning and not at its target {list(ms.step_target)} "
                        f"(replicas {list(st.replicas)}): cancelled or replaced outside this run"
                    )
                    self._emit("failed", **_tpf(tp), reason=ms.error)
            else:
                ms.lost_polls = 0

    def _schedule(
        self,
        cluster: Mapping[TopicPartition, PartitionState],
        states: Mapping[TopicPartition, PartitionState],
        now: float,
    ) -> None:
        with self._lock:
            caps = self._caps
        # the next steps of moves that hold a slot
        ready_items: list[Item] = []
        ready_states: dict[TopicPartition, PartitionState] = {}
        ready_tps = [tp for tp in self._order if self._moves[tp].status == "ready"]
        if ready_tps:
            fresh = {tp: states[tp] for tp in ready_tps if tp in states}
            missing = [tp for tp in ready_tps if tp not in fresh]
            if missing:
                fresh.update(self.gw.describe_partitions(missing))
            for tp in ready_tps:
                st = fresh.get(tp)
                ms = self._moves[tp]
                if st is None:
                    continue
                if not ms.steps or ms.step == 0 or tuple(st.replicas) != ms.step_target:
                    ms.steps = self._plan_steps(ms, st)
                    ms.step = 0
                if is_complete(ms.move.replicas, st):
                    ms.status, ms.completed_at = "done", now
                    self._emit("completed", **_tpf(tp), replicas=list(st.replicas))
                    continue
                nxt = ms.steps[ms.step] if ms.step < len(ms.steps) else tuple(ms.move.replicas)
                ready_states[tp] = st
                it = item_for(tp, st.replicas, nxt, st.leader, ms.item.size_bytes)
                ready_items.append(
                    Item(
                        tp,
                        it.brokers,
                        it.moves_leader,
                        ms.item.size_bytes,
                        ms.item.under_replicated,
                        ms.item.batch,
                    )
                )
        inflight = [self._inflight_item(ms) for ms in self._moves.values() if ms.status == "moving"]
        pending = [
            self._moves[tp].item for tp in self._order if self._moves[tp].status == "pending"
        ]
        if not pending and not ready_items:
            self.waiting_reason = None
            return
        d = decide(pending, inflight, caps, ready=ready_items, cluster_inflight=len(cluster))
        self.waiting_reason = d.waiting_reason
        if not d.submit:
            return
        new_tps = [tp for tp in d.submit if self._moves[tp].status == "pending"]
        new_states = self.gw.describe_partitions(new_tps) if new_tps else {}
        targets: dict[TopicPartition, tuple[int, ...]] = {}
        steps_info: dict[TopicPartition, tuple[int, int]] = {}
        for tp in d.submit:
            ms = self._moves[tp]
            st = ready_states.get(tp) or new_states.get(tp)
            if st is None:
                ms.status, ms.error = "failed", "partition no longer exists"
                self._emit("failed", **_tpf(tp), reason=ms.error)
                continue
            if ms.status == "pending":
                ms.original = tuple(st.replicas)
                ms.steps = self._plan_steps(ms, st)
                ms.step = 0
            nxt_i = ms.step + 1
            tgt = ms.steps[nxt_i - 1] if nxt_i <= len(ms.steps) else tuple(ms.move.replicas)
            targets[tp] = tgt
            steps_info[tp] = (nxt_i, len(ms.steps))
        if not targets:
            return
        # throttles first: the moves about to start must never run unthrottled
        future = [
            _future_state(self._moves[tp], tp, targets[tp], ready_states.get(tp) or new_states[tp])
            for tp in targets
        ]
        self._sync_throttles(cluster, extra=future)
        batch = d.batch
        results = self.gw.alter_reassignments(
            targets, allow_replication_factor_change=self.options.allow_replication_factor_change
        )
        self._dirty = True
        now = self._clock()
        errors: dict[TopicPartition, str] = {}
        for tp, tgt in targets.items():
            ms = self._moves[tp]
            err = results.get(tp, "no answer from the controller")
            i, n = steps_info[tp]
            if err:
                ms.status, ms.error = "failed", err
                errors[tp] = err
                self._emit(
                    "error",
                    **_tpf(tp),
                    message=f"{tp}: submission rejected: {err}",
                    target=list(tgt),
                    step=i,
                    steps=n,
                )
                continue
            first = ms.submitted_at is None
            ms.status = "moving"
            ms.step = i
            ms.step_submitted_at = now
            ms.progress_at = now
            ms.bytes_copied = None
            ms.stuck_reported = False
            if first:
                ms.submitted_at = now
                self._emit(
                    "submitted",
                    **_tpf(tp),
                    target=list(ms.move.replicas),
                    current=list(ms.original),
                    batch=batch if caps.mode == "batch" else None,
                    size_bytes=ms.item.size_bytes,
                    moves_leader=ms.item.moves_leader,
                    brokers=sorted(ms.item.brokers),
                )
            self._emit("step_submitted", **_tpf(tp), step=i, steps=n, target=list(tgt))
        if errors:
            tp0, e0 = next(iter(errors.items()))
            submitted = sum(1 for m in self._moves.values() if m.submitted_at is not None)
            self._fail(
                f"{len(errors)} submission(s) rejected, e.g. {tp0}: {e0}; the run stopped "
                f"after submitting {submitted} move(s) (see the journal)"
            )

    def _inflight_item(self, ms: MoveState) -> Item:
        it = item_for(ms.move.tp, _step_from(ms), ms.step_target)
        return Item(
            ms.move.tp,
            it.brokers,
            it.moves_leader,
            ms.item.size_bytes,
            ms.item.under_replicated,
            ms.item.batch,
        )

    def _finished(self) -> bool:
        statuses = [ms.status for ms in self._moves.values()]
        if any(s == "failed" for s in statuses) and self._end_state is None:
            bad = next(ms for ms in self._moves.values() if ms.status == "failed")
            self._fail(f"{bad.move.tp}: {bad.error}")
            return True
        if all(s in ("done", "cancelled") for s in statuses):
            self._end_state = self._end_state or ("deadline" if self._deadline_hit else "done")
            return True
        if self.options.wait:
            return False
        # KIP-1335: return once every move is submitted; multi-step moves must be driven on
        if any(s in ("pending", "ready") for s in statuses):
            return False
        if any(ms.status == "moving" and ms.step < len(ms.steps) for ms in self._moves.values()):
            return False
        self._end_state = "submitted"
        return True

    # ---- deadlines and stuck detection ------------------------------------------------------

    def _check_deadlines(self, now: float) -> None:
        o = self.options
        moving = [ms for ms in self._moves.values() if ms.status == "moving"]
        expired: list[tuple[MoveState, str]] = []
        if o.move_deadline is not None:
            for ms in moving:
                if ms.submitted_at is not None and now - ms.submitted_at > o.move_deadline:
                    if not ms.deadline_reported:
                        ms.deadline_reported = True
                        self._emit(
                            "deadline",
                            **_tpf(ms.move.tp),
                            scope="move",
                            after_s=o.move_deadline,
                            policy=o.on_deadline,
                        )
                        expired.append((ms, "move deadline"))
        if o.stuck_after is not None:
            for ms in moving:
                if ms.progress_at is not None and now - ms.progress_at > o.stuck_after:
                    if not ms.stuck_reported:
                        ms.stuck_reported = True
                        self._emit(
                            "stuck",
                            **_tpf(ms.move.tp),
                            no_progress_s=round(now - ms.progress_at, 3),
                            bytes_copied=ms.bytes_copied,
                            policy=o.on_deadline,
                        )
                        expired.append((ms, "stuck"))
        run_expired = (
            o.run_deadline is not None
            and self._started_at is not None
            and now - self._started_at > o.run_deadline
            and self._end_state is None
        )
        if run_expired:
            self._emit("deadline", scope="run", after_s=o.run_deadline, policy=o.on_deadline)
        if o.on_deadline == "wait":
            return
        if expired or run_expired:
            self._deadline_hit = True
        if o.on_deadline == "stop" and (expired or run_expired):
            self._stop_submitting = True
            self._end_state = "deadline"
            return
        if o.on_deadline == "cancel":
            victims = [ms for ms, _ in expired]
            if run_expired:
                victims = moving
                self._end_state = "deadline"
            self._cancel([ms.move.tp for ms in victims], reason="deadline")

    def _cancel(self, tps: Sequence[TopicPartition], reason: str) -> None:
        tps = [tp for tp in tps if self._moves[tp].status in ("moving",)]
        if not tps:
            return
        res = self.gw.alter_reassignments(dict.fromkeys(tps))
        self._dirty = True
        for tp in tps:
            ms = self._moves[tp]
            err = res.get(tp)
            if err and "NO_REASSIGNMENT" not in str(err).upper().replace(" ", "_"):
                self._emit("error", **_tpf(tp), message=f"{tp}: cancel failed: {err}")
                continue
            ms.status = "cancelled"
            self._emit("cancelled", **_tpf(tp), reason=reason)

    def _maybe_sample(self, now: float, force: bool) -> None:
        """Bytes copied by the moves in flight (DescribeLogDirs, one call), at a bounded rate
        (and at every poll when stuck detection is on)."""
        moving = [ms for ms in self._moves.values() if ms.status == "moving"]
        due = now - self._last_sample >= self.options.sample_interval
        if not moving or not (force or due or self.options.stuck_after is not None):
            return
        adding: dict[TopicPartition, set[int]] = {}
        for ms in moving:
            prev = _step_from(ms)
            adding[ms.move.tp] = {b for b in ms.step_target if b not in prev}
        brokers = sorted(set().union(*adding.values())) if adding else []
        copied: dict[TopicPartition, int] = {}
        if brokers:
            try:
                infos = self.gw.describe_log_dirs(brokers)
            except ReassignKitError as e:
                self._emit("warning", message=f"cannot sample progress: {e}")
                return
            for r in infos:
                if r.tp in adding and r.broker in adding[r.tp]:
                    copied[r.tp] = copied.get(r.tp, 0) + r.size_bytes
        for ms in moving:
            b = copied.get(ms.move.tp, 0)
            if ms.bytes_copied is None or b > ms.bytes_copied:
                ms.progress_at = now if ms.bytes_copied is not None or b > 0 else ms.progress_at
            ms.bytes_copied = b
        if due or force:
            self._last_sample = now
            rows = [
                {
                    **_tpf(ms.move.tp),
                    "bytes": ms.bytes_copied,
                    "size": ms.item.size_bytes,
                    "step": ms.step,
                }
                for ms in moving[:200]
            ]
            counts = self.status()
            self._emit(
                "sample",
                done=counts.done,
                moving=counts.moving,
                pending=counts.pending,
                bytes_copied=sum(copied.values()),
                moves=rows,
            )

    # ---- throttles ----------------------------------------------------------------------------

    def _sync_throttles(
        self, cluster: Mapping[TopicPartition, PartitionState], extra: Sequence[PartitionState]
    ) -> None:
        """Make the cluster's throttles exactly what the moves in flight (plus ``extra``, about
        to be submitted) need; write only when that changes."""
        self._dirty = False
        if self.options.throttle is None:
            return
        ours = [st for tp, st in cluster.items() if tp in self._moves]
        ours += list(extra)
        others = [st for tp, st in cluster.items() if tp not in self._moves]
        want_ours = needed_throttles(ours, self.options.throttle)
        topics = set(self.plan.topics()) | {st.tp.topic for st in cluster.values()}
        brokers = self._managed_brokers | set(want_ours.broker_rates)
        for st in others:
            brokers.update(st.replicas)
        if (
            self._applied is not None
            and not extra
            and self._applied_for == (want_ours, frozenset(others_key(others)))
        ):
            return
        current = self._throttles.read(topics, brokers)
        current = _restrict(current, topics, brokers)
        target = merge_throttles(current, want_ours, others)
        if _same(current, target):
            self._applied, self._applied_for = target, (want_ours, frozenset(others_key(others)))
            return
        self._throttles.write(current, target)
        self._managed_brokers |= set(target.broker_rates)
        self._applied, self._applied_for = target, (want_ours, frozenset(others_key(others)))
        if target.is_empty():
            self._emit("throttle_cleared", **throttle_summary(current))
        else:
            self._emit("throttle_set", rate=self.options.throttle, **throttle_summary(target))

    _applied_for: Any = None

    # ---- the end ------------------------------------------------------------------------------

    def _finish(self) -> None:
        """Every exit path: cancel if asked, leave exactly the throttles still needed, report."""
        state = self._end_state or ("stopped" if self._stop.is_set() else "failed")
        try:
            if self._cancel_on_stop and state in ("stopped", "deadline", "failed"):
                self._cancel(
                    [tp for tp, ms in self._moves.items() if ms.status == "moving"], reason="stop"
                )
            cluster = self.gw.list_reassignments() if self._moves else {}
            watch = [tp for tp, ms in self._moves.items() if ms.status in ("moving", "ready")]
            if watch:
                states = self.gw.describe_partitions(watch)
                with self._lock:
                    self._update(states, self._clock())
                    for tp in watch:
                        st = states.get(tp)
                        ms = self._moves[tp]
                        if ms.status == "moving" and st is not None and not st.reassigning:
                            ms.status = "ready"  # between steps or lost: nothing in flight
            self._applied = None
            self._sync_throttles(cluster, extra=())
            if state == "submitted" and all(
                ms.status in ("done", "cancelled") for ms in self._moves.values()
            ):
                state = "done"
        except BaseException as e:  # noqa: BLE001 - the report must still be written
            self._emit("error", message=f"while finishing: {type(e).__name__}: {e}")
            if self._error is None:
                self._error = f"while finishing: {e}"
        self.state = state
        moving = [tp for tp in self._order if self._moves[tp].status in ("moving",)]
        left = throttle_summary(self._applied) if self._applied is not None else {}
        self._result = RunResult(
            state=state,
            run_id=self.run_id,
            journal_path=self.journal_path,
            submitted=[tp for tp in self._order if self._moves[tp].submitted_at is not None],
            completed=[tp for tp in self._order if self._moves[tp].status == "done"],
            still_moving=moving,
            pending=[tp for tp in self._order if self._moves[tp].status in ("pending", "ready")],
            failed={
                tp: self._moves[tp].error or ""
                for tp in self._order
                if self._moves[tp].status == "failed"
            },
            cancelled=[tp for tp in self._order if self._moves[tp].status == "cancelled"],
            throttles_left=left,
            error=self._error,
        )
        r = self._result
        self._emit(
            "run_finished",
            state=state,
            completed=len(r.completed),
            still_moving=len(r.still_moving),
            pending=len(r.pending),
            failed=len(r.failed),
            cancelled=len(r.cancelled),
            throttles_left=left,
            error=self._error,
        )
        if self._journal is not None:
            self._journal.close()
        self._done.set()

    # ---- events -------------------------------------------------------------------------------

    def _emit(self, event: str, **fields_: Any) -> dict[str, Any]:
        if self._journal is not None:
            rec = self._journal.write(event, **fields_)
        else:
            from .journal import redact

            rec = redact(
                {"ts": self._clock(), "event": event, "run_id": self.run_id, **fields_},
                self._secrets,
            )
        for fn in list(self._subscribers):
            try:
                fn(rec)
            except Exception:  # noqa: BLE001 - a broken subscriber must not stop the run
                log.exception("subscriber failed on %s", event)
        return rec


def others_key(others: Iterable[PartitionState]) -> list[tuple]:
    return [(st.tp, st.replicas, st.adding) for st in others]


def _restrict(state: ThrottleState, topics: set[str], brokers: set[int]) -> ThrottleState:
    return ThrottleState(
        {t: v for t, v in state.leader_replicas.items() if t in topics},
        {t: v for t, v in state.follower_replicas.items() if t in topics},
        {b: r for b, r in state.broker_rates.items() if b in brokers},
    )


def _same(a: ThrottleState, b: ThrottleState) -> bool:
    def norm(m: Mapping) -> dict:
        return {k: frozenset(v) for k, v in m.items() if v}

    return (
        norm(a.leader_replicas) == norm(b.leader_replicas)
        and norm(a.follower_replicas) == norm(b.follower_replicas)
        and dict(a.broker_rates) == dict(b.broker_rates)
    )


def _future_state(
    ms: MoveState, tp: TopicPartition, target: tuple[int, ...], st: PartitionState
) -> PartitionState:
    """The state a partition will be in once ``target`` is submitted (for throttles)."""
    cur = tuple(b for b in st.replicas if b not in st.adding) if st.reassigning else st.replicas
    adding = tuple(b for b in target if b not in cur)
    removing = tuple(b for b in cur if b not in target)
    return PartitionState(tp, tuple(target) + removing, st.isr, st.leader, adding, removing)


def _step_from(ms: MoveState) -> tuple[int, ...]:
    """The replicas the step in flight started from."""
    if ms.step >= 2 and len(ms.steps) >= ms.step - 1:
        return ms.steps[ms.step - 2]
    return ms.original


def _tpf(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}


def _kafka_version(gw: Any) -> str | None:
    fn = getattr(gw, "kafka_version", None)
    try:
        return fn() if callable(fn) else None
    except Exception:  # noqa: BLE001 - informative only
        return None
