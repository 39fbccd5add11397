"""Preferred leader elections after moves (leadership that takes effect).

Reordering replicas changes only the *preferred* leader (the first replica); Kafka moves
leadership by itself only when the leader leaves the replica set, or at its automatic rebalance
(every 5 minutes, past a 10% imbalance per broker, or never when disabled). So once a move
that changed a partition's preferred leader completes, its preferred leader is elected
(Admin ``electLeaders``, ``PREFERRED``, KIP-460), and at the end a check says whether each
such partition is led by its preferred replica, and why not where it is not.

Two ways in, one library:

- ``Elections``, in a paced run (``run.run.Run``): a move that completes and changed its
  preferred leader is queued (journal ``election_queued``); at each poll at most
  ``max_elections_per_poll`` queued partitions are elected in one request (each call retried
  by ``retry.RetryingGateway``, the journal committed before it is sent); each result is
  journaled (``leader_elected`` with ``result`` elected / not_needed, or ``election_failed``);
  a resumed run replays the queue from the journal (queued and not yet final). At the end,
  ``leaders_checked``.
- ``elect_preferred``: one request for the partitions given (the drop-in's ``--execute
  --elect-leaders`` and ``--verify --elect-leaders``, the panel's Verify), then the same check.

``ELECTION_NOT_NEEDED`` (the preferred replica leads already) is success;
``PREFERRED_LEADER_NOT_AVAILABLE`` (the preferred replica is not in the ISR, or its broker is
down) is reported with the reason; a request that fails as a whole, or a partition answered
with a transient error (not the controller, timed out, no answer), is tried again at the next
polls, ``MAX_ATTEMPTS`` times in all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ..errors import KafkaOperationError
from ..model import PartitionState, TopicPartition

DEFAULT_MAX_PER_POLL = 100
MAX_ATTEMPTS = 3  # a failed request / a transient partition error: tried again at later polls
SETTLE_S, SETTLE_PAUSE_S = 3.0, 0.5  # the check re-reads a leader not yet preferred this long
_TRANSIENT = ("NOT_CONTROLLER", "REQUEST_TIMED_OUT", "TIMED_OUT", "NO_ANSWER", "NETWORK_EXCEPTION")


def _norm(error: object) -> str:
    return str(error).upper().replace(" ", "_")


def not_needed(error: object) -> bool:
    """ELECTION_NOT_NEEDED: the preferred replica leads already (success)."""
    return bool(error) and "ELECTION_NOT_NEEDED" in _norm(error)


def not_available(error: object) -> bool:
    """PREFERRED_LEADER_NOT_AVAILABLE: not in the ISR, or its broker down."""
    return bool(error) and "PREFERRED_LEADER_NOT_AVAILABLE" in _norm(error)


def transient(error: object) -> bool:
    return bool(error) and any(t in _norm(error) for t in _TRANSIENT)


def why_not_preferred(
    st: PartitionState | None, live: Iterable[int] | None = None, error: object = None
) -> str:
    """Why a partition is not led by its first replica, from its state (and the brokers alive,
    and the election's error when there was one), as a person reads it."""
    if st is None:
        return "the partition no longer exists"
    if not st.replicas:
        return "no replicas"
    pref = st.replicas[0]
    if st.reassigning:
        return f"a reassignment is in flight (replicas {list(st.replicas)})"
    if live is not None and pref not in set(live):
        return f"its preferred replica {pref} is on a broker that is not alive"
    if st.isr and pref not in st.isr:
        return f"its preferred replica {pref} is not in the ISR {list(st.isr)}"
    if st.leader is None:
        return "it has no leader (offline)"
    if error:
        return f"the election failed: {error}"
    return (
        f"led by {st.leader}: leadership moved after the election (e.g. a broker restarted); "
        "`reassign-kit --verify --elect-leaders` or Kafka's auto leader rebalance elects it again"
    )


@dataclass
class LeaderCheck:
    """After elections: the partitions checked and those not led by their preferred replica
    (partition -> (leader, preferred, why))."""

    checked: list[TopicPartition] = field(default_factory=list)
    not_preferred: dict[TopicPartition, tuple[int | None, int | None, str]] = field(
        default_factory=dict
    )

    @property
    def preferred(self) -> int:
        return len(self.checked) - len(self.not_preferred)

    def rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        return [
            {"topic": tp.topic, "partition": tp.partition, "leader": ld, "preferred": p, "why": w}
            for tp, (ld, p, w) in islice(self.not_preferred.items(), limit)
        ]

    def lines(self, limit: int = 20) -> list[str]:
        if not self.checked:
            return []
        out = [
            f"Leaders checked: {self.preferred} of {len(self.checked)} partition(s) led by "
            "their preferred replica."
        ]
        for r in self.rows(limit):
            out.append(
                f"  NOT preferred: {r['topic']}-{r['partition']} led by {r['leader']}, "
                f"preferred {r['preferred']}: {r['why']}"
            )
        if len(self.not_preferred) > limit:
            out.append(f"  … {len(self.not_preferred) - limit} more (see the journal)")
        return out


def check_leaders(
    gateway: Any,
    tps: Sequence[TopicPartition],
    errors: Mapping[TopicPartition, object] | None = None,
    sleep: Callable[[float], None] | None = None,
    settle_s: float = SETTLE_S,
) -> LeaderCheck:
    """Is each of ``tps`` led by its first replica? Those that are not are read again for up
    to ``settle_s`` (an election's result reaches a broker's metadata a moment later), then
    explained (``why_not_preferred``, with the election's error from ``errors``)."""
    tps = list(dict.fromkeys(tps))
    if not tps:
        return LeaderCheck()
    wait = sleep or gateway.sleep  # the gateway's clock: model time on the simulator

    def off(states: Mapping[TopicPartition, PartitionState]) -> list[TopicPartition]:
        return [
            tp
            for tp in tps
            if (st := states.get(tp)) is None or not st.replicas or st.leader != st.replicas[0]
        ]

    states = dict(gateway.describe_partitions(tps))
    bad = off(states)
    for _ in range(int(settle_s / SETTLE_PAUSE_S)):
        if not bad:
            break
        wait(SETTLE_PAUSE_S)
        states.update(gateway.describe_partitions(bad))
        bad = off(states)
    live: set[int] | None = None
    if bad:
        try:
            live = {b.id for b in gateway.brokers()}
        except KafkaOperationError:
            live = None
    errors = errors or {}
    out = LeaderCheck(checked=tps)
    for tp in bad:
        st = states.get(tp)
        out.not_preferred[tp] = (
            st.leader if st is not None else None,
            st.replicas[0] if st is not None and st.replicas else None,
            why_not_preferred(st, live, errors.get(tp)),
        )
    return out


# ----------------------------------------------------------------- the one-request path


@dataclass
class ElectionResult:
    """One election request (``elect_preferred``) and the check after it."""

    elected: list[TopicPartition] = field(default_factory=list)
    not_needed: list[TopicPartition] = field(default_factory=list)  # led by it already
    failed: dict[TopicPartition, str] = field(default_factory=dict)
    check: LeaderCheck = field(default_factory=LeaderCheck)

    def lines(self) -> list[str]:
        out = [
            f"Preferred leader elections (KIP-460): {len(self.elected)} elected, "
            f"{len(self.not_needed)} already led by their preferred replica, "
            f"{len(self.failed)} failed."
        ]
        for tp, e in islice(self.failed.items(), 20):
            out.append(f"  election failed: {tp}: {e}")
        return out + self.check.lines()


def elect_preferred(
    gateway: Any,
    states: Mapping[TopicPartition, PartitionState],
    sleep: Callable[[float], None] | None = None,
) -> ElectionResult:
    """Elect, in one request, the preferred leader of each partition of ``states`` (its
    current state: not reassigning, replicas in their final order) that another replica
    leads; then check every one of them (``check_leaders``). A request that fails as a whole
    is reported for each partition, never raised."""
    res = ElectionResult()
    todo = []
    for tp, st in states.items():
        if st.replicas and st.leader == st.replicas[0]:
            res.not_needed.append(tp)
        else:
            todo.append(tp)
    if todo:
        try:
            answers = gateway.elect_preferred_leaders(todo)
        except KafkaOperationError as e:
            answers = dict.fromkeys(todo, str(e))
        for tp in todo:
            err = answers.get(tp, "no answer from the cluster")
            if not err:
                res.elected.append(tp)
            elif not_needed(err):
                res.not_needed.append(tp)
            else:
                res.failed[tp] = str(err)
    res.check = check_leaders(gateway, list(states), res.failed, sleep)
    return res


# ----------------------------------------------------------------- the paced run's queue


@dataclass
class _Queued:
    preferred: int
    if_off: bool = False  # found complete at start: elected only if another replica leads
    attempts: int = 0


def _tpf(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}


class Elections:
    """The paced run's elections (see the module docstring). ``gw``: the run's retrying
    gateway; ``emit``: the run's journal; ``original_of(tp)``: the replicas a move started
    from (() when unknown); ``target_of(tp)``: its target."""

    HEARS = frozenset({"completed"})  # the run's events ``on_event`` is handed (a subscriber)

    def __init__(
        self,
        gw: Any,
        emit: Callable[..., Any],
        original_of: Callable[[TopicPartition], Sequence[int]],
        target_of: Callable[[TopicPartition], Sequence[int]],
        *,
        enabled: bool = True,
        per_poll: int = DEFAULT_MAX_PER_POLL,
    ):
        self.gw = gw
        self._emit = emit
        self._original_of = original_of
        self._target_of = target_of
        self.enabled = enabled
        self.per_poll = max(1, int(per_poll))
        self.queue: dict[TopicPartition, _Queued] = {}
        # final results: None = led by its preferred replica (elected or not needed), else why
        self.done: dict[TopicPartition, str | None] = {}
        self.counts = {"elected": 0, "not_needed": 0, "failed": 0}
        self.check: LeaderCheck | None = None

    # ---- what to elect --------------------------------------------------------------------

    def on_event(self, rec: Mapping[str, Any]) -> None:
        """The run's events (a subscriber): a completed move is considered for election."""
        if rec.get("event") == "completed" and self.enabled:
            self.completed(TopicPartition(rec["topic"], int(rec["partition"])), rec)

    def completed(self, tp: TopicPartition, rec: Mapping[str, Any]) -> None:
        target = tuple(self._target_of(tp))
        if not target or tp in self.queue or tp in self.done:
            return
        if rec.get("already"):  # complete before this run: only if another replica leads
            self.queue[tp] = _Queued(target[0], if_off=True)
            return
        original = tuple(self._original_of(tp))
        if original and original[0] == target[0]:
            return  # its preferred leader did not change
        self.queue[tp] = _Queued(target[0])
        self._emit(
            "election_queued",
            topic=tp.topic,
            partition=tp.partition,
            preferred=target[0],
            previous_preferred=original[0] if original else None,
        )

    def replay(self, prior: Iterable[Mapping[str, Any]]) -> None:
        """A resumed run: the elections its journal queued and did not finish are queued
        again; those it finished count as done (and are checked at the end)."""
        if not self.enabled:
            return
        for e in prior:
            kind = e.get("event")
            if "topic" not in e or kind not in (
                "election_queued",
                "leader_elected",
                "election_failed",
            ):
                continue
            tp = TopicPartition(e["topic"], int(e["partition"]))
            if kind == "election_queued":
                self.queue.setdefault(tp, _Queued(int(e["preferred"])))
            elif kind == "leader_elected" and e.get("result"):
                self.queue.pop(tp, None)
                self.done[tp] = None
            elif kind == "election_failed" and e.get("final"):
                self.queue.pop(tp, None)
                self.done[tp] = str(e.get("error"))

    # ---- electing, at each poll --------------------------------------------------------------

    @property
    def pending(self) -> int:
        return len(self.queue)

    def poll(self) -> None:
        """Elect at most ``per_poll`` queued partitions, in one request."""
        if not self.queue:
            return
        batch = list(islice(self.queue, self.per_poll))
        states = self.gw.describe_partitions(batch)
        todo: list[TopicPartition] = []
        for tp in batch:
            q = self.queue[tp]
            st = states.get(tp)
            if st is None:
                self._fail(tp, q, None, "the partition no longer exists")
            elif st.reassigning or not st.replicas or st.replicas[0] != q.preferred:
                self._fail(
                    tp,
                    q,
                    st,
                    f"its replicas are now {list(st.replicas)}"
                    + (" (a reassignment is in flight)" if st.reassigning else "")
                    + f": {q.preferred} is no longer its preferred replica",
                )
            elif st.leader == q.preferred:
                del self.queue[tp]
                if not q.if_off:
                    self._elected(tp, st, "not_needed")
            elif st.isr and q.preferred not in st.isr:
                # checked when the election is sent: a replica out of the ISR is
                # not elected; tried again at the next polls (it may catch up), then final
                self._again(
                    tp,
                    st,
                    f"its preferred replica {q.preferred} is not in the ISR {list(st.isr)}: "
                    "not elected",
                )
            else:
                todo.append(tp)
        if not todo:
            return
        # write-ahead: the request and what it changes, on disk before it is sent
        self._emit("intent", action="elect", partitions=[str(tp) for tp in todo])
        try:
            answers = self.gw.elect_preferred_leaders(todo)
        except KafkaOperationError as e:  # after the gateway's retries: again at later polls
            for tp in todo:
                self._again(tp, states[tp], f"the election request failed: {e}")
            return
        refused: dict[TopicPartition, str] = {}
        for tp in todo:
            err = answers.get(tp, "no answer from the cluster")
            st = states[tp]
            if not err:
                self._elected(tp, st, "elected")
            elif not_needed(err):
                self._elected(tp, st, "not_needed")
            elif transient(err):
                self._again(tp, st, str(err))
            else:
                refused[tp] = str(err)
        if refused:  # why, from the state after the refusal (e.g. out of the ISR since)
            try:
                now = self.gw.describe_partitions(list(refused))
            except KafkaOperationError:
                now = {}
            for tp, err in refused.items():
                self._fail(tp, self.queue[tp], now.get(tp) or states[tp], err)

    def _elected(self, tp: TopicPartition, st: PartitionState, result: str) -> None:
        self.queue.pop(tp, None)
        self.done[tp] = None
        self.counts[result] += 1
        self._emit(
            "leader_elected",
            **_tpf(tp),
            leader=st.replicas[0],
            previous=st.leader,
            result=result,
        )

    def _again(self, tp: TopicPartition, st: PartitionState, error: str) -> None:
        q = self.queue[tp]
        q.attempts += 1
        if q.attempts >= MAX_ATTEMPTS:
            self._fail(tp, q, st, error)
            return
        del self.queue[tp]
        self.queue[tp] = q  # to the back: the others go first at the next poll
        self._emit(
            "election_failed",
            **_tpf(tp),
            preferred=q.preferred,
            leader=st.leader,
            error=error,
            attempt=q.attempts,
            final=False,
        )

    def _fail(self, tp: TopicPartition, q: _Queued, st: PartitionState | None, error: str) -> None:
        self.queue.pop(tp, None)
        self.done[tp] = error
        self.counts["failed"] += 1
        why = why_not_preferred(st, None, error) if st is not None else error
        self._emit(
            "election_failed",
            **_tpf(tp),
            preferred=q.preferred,
            leader=st.leader if st is not None else None,
            error=error,
            why=why,
            attempt=q.attempts + 1,
            final=True,
        )

    # ---- the end ----------------------------------------------------------------------------

    def finish(self, sleep: Callable[[float], None]) -> LeaderCheck | None:
        """The check after the elections (journal ``leaders_checked``); None when none was
        made. Each partition elected or failed is read; those not led by their preferred
        replica are named with why."""
        errors = {tp: e for tp, e in self.done.items() if e is not None}
        if not self.done:
            return None
        self.check = check_leaders(self.gw, list(self.done), errors, sleep)
        self._emit(
            "leaders_checked",
            checked=len(self.check.checked),
            preferred=self.check.preferred,
            not_preferred=len(self.check.not_preferred),
            # names no other event uses with another type (Spark infers one schema)
            not_preferred_partitions=self.check.rows(200),
            elections_not_sent=[str(tp) for tp in islice(self.queue, 200)],
        )
        return self.check
