"""What is left of a paced run, simulated at both ends of every copy: the model behind
``eta.estimate.RunEta`` and, for a whole plan not started, the what-if's makespan
(``plan_index``, ``forecast``), pure.

What is left is a set of *flows*, one per move not done: the step in flight (bytes each new
replica still needs), the steps after it (KIP-435, ``steps.plan_steps`` for a queued move),
the moves queued behind batches and caps, admitted by the run's own ``schedule.decide``.
Each new replica being filled is a stream from the partition's leader; a broker's leader
throttle is shared by the streams reading from it and its follower throttle by those
writing to it (``cluster.quota.fair_share``, the simulator's model too). A step completes a
completion lag after its last byte, seen at one of the run's polls; the preferred leader
elections go out at the polls, so many per poll."""

from __future__ import annotations

import contextlib
import functools
import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..cluster.quota import QUOTA_WINDOW_S, QUOTA_WINDOWS, Windows, fair_share
from ..errors import ReassignKitError
from ..model import PartitionState, Plan, TopicPartition
from ..moves.schedule import Caps, Item, assign_batches, decide, item_for, order_items
from ..moves.steps import plan_steps
from ..moves.table import MoveIndex, MoveState, MoveStatus, copy_bytes
from .quota_effects import REPLAY_STEP_S, burst_idle, copy_windows, replay_caps

SIM_PENDING = 300  # queued moves simulated one by one; the rest in proportion
MAX_EVENTS = 400  # steps of one simulation (larger plans advance in coarser steps)
WORK_BUDGET = 200_000  # streams x steps of one simulation
MAX_STEPS_MEASURE = 50  # steps of the model's bytes over one interval
# how long the simulation replays Kafka's quota windows from now, in steps of half a window
QUOTA_REPLAY_S = 4 * QUOTA_WINDOWS * QUOTA_WINDOW_S
Steps = list[tuple[int, ...]]


# one per move: compared by identity (``in`` and ``remove`` on lists of 2,000 were a
# field-by-field comparison per element); slots: each simulation copies every flow
@dataclass(eq=False, slots=True)
class Flow:
    """One move not done, for the simulation: ``steps`` are the new brokers of each step
    left (the first in flight when ``state`` is moving), ``srcs`` the leader each reads
    from (``src`` the first), ``left`` the bytes each new replica of the step in flight
    still needs, ``full_s`` how long that step has had every byte."""

    tp: TopicPartition
    item: Item
    src: int | None
    size: float
    steps: Steps
    state: str  # moving | ready | pending
    left: dict[int, float] = field(default_factory=dict)
    full_s: float = 0.0
    srcs: list[int | None] = field(default_factory=list)


def _new(step: Sequence[int], before: Sequence[int]) -> tuple[int, ...]:
    return tuple(b for b in step if b not in before)


def _chain(before: Sequence[int], targets: Sequence[Sequence[int]]) -> tuple[Steps, list]:
    """The new brokers of each of ``targets`` (successive replicas from ``before``; a step
    that only drops replicas copies nothing but still costs a completion) and the leader
    each copies from: the first of ``before`` until a step leaves it out, then the first of
    that step's replicas (the controller elects it)."""
    lead = before[0] if before else None
    steps, srcs, prev = [], [], before
    for tgt in targets:
        steps.append(_new(tgt, prev))
        srcs.append(lead)
        if tgt and lead not in tgt:
            lead = tgt[0]
        prev = tgt
    return steps, srcs


def flows_of(
    index: MoveIndex,
    copied: Mapping[tuple[TopicPartition, int], int],
    r: int | None,
    limit: int = SIM_PENDING,
    known: dict[TopicPartition, tuple] | None = None,
) -> tuple[list[Flow], int, float]:
    """The run's work left as flows: moves in flight and between steps, then the first
    ``limit`` queued ones in run order; also, of the queued ones left out, how many move a
    leader (an election each) and their bytes. ``known``: what the last call made of each
    move's steps, kept by the caller between calls (a run's ETA): worked out again only when
    the move's steps, step, replicas or move objects were replaced (never changed in place)
    or ``r`` changed, not at every sample (its bytes are)."""
    last = known if known is not None else {}
    now: dict[TopicPartition, tuple] = {}

    def shape(ms: MoveState, at_r: int | None, make: Callable) -> tuple:
        got = last.get(ms.tp)
        if got is None or got[:4] != (ms.steps, ms.step, ms.original, ms.move) or got[4] != at_r:
            got = (ms.steps, ms.step, ms.original, ms.move, at_r, make(ms, at_r))
        now[ms.tp] = got
        return got[5]

    out = [
        _moving(ms, copied, *shape(ms, None, _moving_steps)) for ms in index.iter(MoveStatus.MOVING)
    ]
    for ms in index.iter(MoveStatus.READY):
        k = ms.step
        if ms.steps or k == 0:
            prev = ms.steps[k - 1] if 1 <= k <= len(ms.steps) else ms.original
            steps, srcs = _chain(prev, ms.steps[k:] if ms.steps else [ms.move.replicas])
            if steps:
                out.append(Flow(ms.tp, ms.item, srcs[0], ms.item.size_bytes, steps, "ready",
                                srcs=srcs))  # fmt: skip
    # the queue beyond the first ``limit``: the index's tally of every pending move less those
    # simulated (integers: the same sums, exactly, as adding the rest one by one)
    rest, rest_bytes = index.pending_leaders, index.pending_copy
    for ms in itertools.islice(index.iter(MoveStatus.PENDING), limit):
        rest -= ms.item.moves_leader
        rest_bytes -= copy_bytes(ms)
        out.append(shape(ms, r, _pending))
    if known is not None:
        known.clear()
        known.update(now)
    return out, rest, float(rest_bytes)


def _moving_steps(ms: MoveState, _r: int | None) -> tuple[tuple[int, ...], Steps, list]:
    """A move in flight's steps: the new brokers of its step in flight, of it and each step
    after it, and the leader each reads from."""
    if not ms.steps:  # the whole move in one step: from the original
        steps, srcs = _chain(ms.original, [ms.move.replicas])
    else:
        steps, srcs = _chain(ms.step_from, ms.steps[max(0, ms.step - 1) :])
    return steps[0], steps, srcs


def _moving(
    ms: MoveState,
    copied: Mapping[tuple[TopicPartition, int], int],
    now_new: tuple[int, ...],
    steps: Steps,
    srcs: list[int | None],
) -> Flow:
    """A move in flight: the bytes each new replica of its step in flight still needs. The
    lists are shared: a flow's are only ever replaced."""
    size = float(ms.item.size_bytes)
    tp = ms.tp
    left = {b: max(0.0, size - min(float(copied.get((tp, b), 0)), size)) for b in now_new}
    return Flow(tp, ms.item, srcs[0], size, steps, "moving", left, srcs=srcs)


def _pending(ms: MoveState, r: int | None) -> Flow:
    """A queued move: its current replicas are not known before it starts, but its item says
    which brokers it adds and removes; the leader it will read from is guessed among those
    it leaves (exact for one replica). Steps: KIP-435's (``steps.plan_steps``) with ``r``
    from that guess, at min.insync.replicas 1."""
    target = tuple(ms.move.replicas)
    removed = sorted(ms.item.brokers - set(target))
    kept = [b for b in target if b not in ms.item.brokers]
    current = tuple(ms.original) or tuple(removed + kept)  # known before the run (the what-if)
    planned: Sequence[Sequence[int]] = [target]
    if r is not None and current:
        with contextlib.suppress(ReassignKitError):
            planned = plan_steps(current, target, r)
    steps, srcs = _chain(current, planned)
    if r is None or not current:
        added = tuple(b for b in target if b in ms.item.brokers)
        steps = [added] if added or removed else []
    src = current[0] if current else None
    return Flow(ms.tp, ms.item, src, float(ms.item.size_bytes), steps, "pending", srcs=srcs)


def plan_index(
    plan: Plan,
    states: Mapping[TopicPartition, PartitionState],
    sizes: Mapping[TopicPartition, int],
    caps: Caps,
    order: str = "topic-partition",
) -> MoveIndex:
    """A plan not started, as a run loads it (``run.begin``): every move queued in the run's
    order and batches, its replicas now known (the what-if's work left: ``forecast``). The
    disk ceiling's reordering is the executor's (the what-if plays it where disks are known)."""
    items, base = [], {}
    for m in plan:
        st = states.get(m.tp)
        now = tuple(st.replicas if st is not None else ())
        if st is not None and st.reassigning:
            now = tuple(b for b in now if b not in st.adding)
        base[m.tp] = now
        under = st is not None and bool(st.isr) and len(st.isr) < len(st.replicas)
        leader = st.leader if st is not None else None
        size = int(sizes.get(m.tp, 0))
        items.append(item_for(m.tp, now, m.replicas, leader, size, under))
    index = MoveIndex()
    by_tp = plan.by_tp()
    for it in assign_batches(order_items(items, order), caps):
        ms = MoveState(by_tp[it.tp], it)
        ms.original = base[it.tp]
        index.add(ms)
    return index


def forecast(
    index: MoveIndex,
    capacity: float,
    caps: Caps,
    lag: float,
    *,
    r: int | None = None,
    poll: float = 0.0,
    elections: tuple[int, int] | None = None,
    copied: Mapping[tuple[TopicPartition, int], int] | None = None,
) -> Forecast:
    """The work left in ``index`` (a whole plan for the what-if) played by ``simulate``:
    each broker end at ``capacity`` (the throttle times the share of it the cluster gives),
    each step completing ``lag`` after its last byte at the polls. The run's ETA calls
    ``simulate`` with what it measured besides (the quota's windows, the ends' idle spells)."""
    flows, rest_leaders, rest_bytes = flows_of(index, copied or {}, r)
    return simulate(flows, capacity, caps, lag, rest_bytes, poll, elections, rest_leaders)


# ------------------------------------------------------------------------- the simulation


@dataclass(frozen=True)
class Forecast:
    """One simulation of what is left: ``seconds`` to the last completion, of which
    ``copy_s`` with bytes moving (they scale with the share), and the end that binds."""

    seconds: float
    copy_s: float
    bottleneck: str | None
    busiest_bytes: float = 0.0  # what the busiest end must still pass (``physical_bound``)


@dataclass(frozen=True)
class Ends:
    """What a simulation reads of its flows before it starts: each broker end's capacity
    (sending, receiving) and the bytes it must still pass (``end_loads``), the bytes left in
    all, the streams copying and the ends busy now. One state's simulations share it (the
    ETA's and its pace's, ``ends_of``), not rebuilt."""

    out_cap: dict
    in_cap: dict
    loads: dict
    total_left: float
    n_streams: int
    busy: frozenset


def ends_of(flows: Sequence[Flow], capacity: float) -> Ends:
    """``Ends`` of ``flows`` at ``capacity`` per end (summed in the order a simulation
    holds the flows: moving, ready, pending)."""
    brokers_in: set[int] = set()
    brokers_out: set[int | None] = set()
    for f in flows:
        for st in f.steps:
            brokers_in.update(st)
        brokers_out.add(f.src)
        brokers_out.update(f.srcs)
    brokers_out.discard(None)  # a source unknown
    out_cap, in_cap = dict.fromkeys(brokers_out, capacity), dict.fromkeys(brokers_in, capacity)
    active = [f for f in flows if f.state == "moving"]
    queued = [f for st in ("ready", "pending") for f in flows if f.state == st]
    total_left = sum(n for f in active for n in f.left.values())
    total_left += sum(f.size * sum(len(s) for s in f.steps) for f in queued)
    busy = {("i", b) for f in active for b, n in f.left.items() if n > 0}
    busy |= {("o", f.src) for f in active if f.src is not None and any(f.left.values())}
    n_streams = sum(len(f.left) for f in active) + 1
    loads = end_loads(active + queued)
    return Ends(out_cap, in_cap, loads, total_left, n_streams, frozenset(busy))


def shares_at(streams: Sequence[tuple[int | None, int]], capacity: float) -> Sequence[float]:
    """``fair_share`` of ``streams`` with every end at ``capacity`` (an unknown source
    unbounded), remembered for the last few: a sample's rate, the first step of both its
    simulations and the next sample's measure ask for the same streams (each a pass over
    2,000 of them)."""
    return _shares(tuple(streams), float(capacity))


@functools.lru_cache(maxsize=8)
def _shares(streams: tuple[tuple[int | None, int], ...], capacity: float) -> tuple[float, ...]:
    out_cap = {s: capacity for s, _ in streams if s is not None}
    in_cap = {b: capacity for _, b in streams}
    return tuple(fair_share(streams, out_cap, in_cap))


def model_rate(flows: Sequence[Flow], capacity: float) -> float:
    """The model's rate (bytes/s) of the streams in flight now, at ``capacity`` per end."""
    streams = [(f.src, b) for f in flows if f.state == "moving" for b, n in f.left.items() if n > 0]
    if not streams:
        return 0.0
    return float(sum(r for r in shares_at(streams, capacity) if math.isfinite(r)))


# the streams in flight: (source, target, bytes left, partition)
Snapshot = list[tuple[int | None, int, float, TopicPartition]]


def snapshot_of(flows: Sequence[Flow]) -> Snapshot:
    """The streams copying now: started (a follower's first fetch may wait for its quota
    window: until its first byte a stream says nothing of the rate) and not done."""
    return [
        (f.src, b, n, f.tp)
        for f in flows
        if f.state == "moving"
        for b, n in f.left.items()
        if 0 < n < f.size
    ]


def model_bytes(snap: Snapshot, capacity: float, seconds: float) -> float:
    """The bytes the model moves in ``seconds`` from the streams ``snap``, none starting:
    a stream that ends leaves its share to the others (at ``capacity`` per end). Bounded:
    at most ``MAX_STEPS_MEASURE`` steps (streams ending within one step end together)."""
    left = [n for _, _, n, _ in snap]
    ends = [(s, b) for s, b, _, _ in snap]
    moved, t = 0.0, 0.0
    min_step = seconds / MAX_STEPS_MEASURE
    for _ in range(MAX_STEPS_MEASURE + 1):
        live = [k for k, n in enumerate(left) if n > 0]
        if not live or t >= seconds - 1e-9:
            break
        rates = shares_at([ends[k] for k in live], capacity)
        step = min([seconds - t] + [left[k] / r for k, r in zip(live, rates, strict=True) if r > 0])
        step = min(seconds - t, max(step, min_step))
        for k, r in zip(live, rates, strict=True):
            d = min(left[k], r * step)
            left[k] -= d
            moved += d
            if left[k] <= 1e-6:
                left[k] = 0.0
        t += step
    return moved


def simulate(
    flows: Sequence[Flow],
    capacity: float,
    caps: Caps,
    lag: float,
    rest_bytes: float = 0.0,
    poll: float = 0.0,
    elections: tuple[int, int] | None = None,
    rest_leaders: int = 0,
    idle: Mapping[tuple[str, int], float] | None = None,
    burst: float = 1.0,
    windows: Mapping[tuple[str, int], Windows] | None = None,
    now: float = 0.0,
    on_polls: bool = True,
    ends: Ends | None = None,
) -> Forecast:
    """Seconds until every flow completes, each broker end at ``capacity`` bytes/s, the
    queued flows admitted by ``schedule.decide`` under ``caps``, each step completing
    ``lag`` after its last byte as the run sees it: at one of its polls (every ``poll`` s
    from now; half a poll of the lag is that wait) or, not ``on_polls``, half a poll after
    it whatever the polls' phase (a smooth function of the state, as the run's pace needs).
    At most ``MAX_EVENTS`` steps; ``rest_bytes`` (queued moves not simulated) are added in
    proportion. ``elections``: (queued now, at most per poll): a move changing its preferred
    leader queues one as it completes, sent at the polls. (The admin calls between a
    completion and the next submission did not earn their keep on held-out shapes,
    bench_heldout_ablation; the run's pace counts them.)

    Kafka's quota averages ``QUOTA_WINDOWS`` one-second windows: an end idle between two
    copies catches up at once what it did not copy (``quota.idle_credit``). The simulation
    bursts ``burst`` of that credit (measured by the run's ETA; 0 on a plain rate cap) into
    the streams of an end copying again, a stream what both its ends allow (``idle``:
    seconds since each idle end last copied). ``windows`` (``EndBytes.windows`` at absolute
    time ``now``) are replayed for ``QUOTA_REPLAY_S`` in half-window steps: an end whose
    windows hold more than its limit stalls until they expire (a throttle lowered mid-run:
    the sandbox stalled 7 s), one whose windows hold less catches up (all of its credit
    after a stall). ``ends``: ``ends_of(flows, capacity)`` when the caller has it (one
    state simulated twice)."""
    sim = _Simulation(flows, capacity, caps, lag, poll, on_polls, ends)
    sim.quota(idle, burst, windows, now)
    sim.elect = _Elections(elections, poll, on_polls)
    return sim.run(rest_bytes, rest_leaders)


class _Simulation:
    """One ``simulate``: the copies of the flows, what is queued and what completes when, in
    model time ``t``; each method one part of a step (see ``simulate`` for the model)."""

    def __init__(
        self,
        flows: Sequence[Flow],
        capacity: float,
        caps: Caps,
        lag: float,
        poll: float,
        on_polls: bool,
        ends: Ends | None = None,
    ) -> None:
        self.caps, self.poll, self.on_polls = caps, poll, on_polls
        # the lag beyond the wait for a poll; never none: the follower joining the ISR and the
        # controller ending the reassignment take a moment, so a copy ending right at a poll
        # is seen at the next one
        self.extra = max(0.0, lag - poll / 2) if poll > 0 else lag
        self.active: list[Flow] = []
        self.ready: list[Flow] = []
        self.pending: list[Flow] = []
        lists = {"moving": self.active, "ready": self.ready, "pending": self.pending}
        for f in flows:
            into = lists.get(f.state)
            if into is not None:
                into.append(_copy(f))
        self.done_at: list[tuple[float, int, Flow]] = []  # bytes all in: completes at
        self.scheduled: set[int] = set()
        # whether the scheduler may start something: not after it started nothing, until a
        # step completes (``schedule.decide`` reads only the flows active, ready and queued)
        self.admit = True
        self.seq = 0
        self.t = self.copy_s = 0.0
        for f in self.active:
            if not any(f.left.values()):
                self.completes_at(self.seen(max(1e-6, self.extra - f.full_s)), f)
        self.ends = ends = ends or ends_of(flows, capacity)
        self.total_left = ends.total_left
        # every end of every stream, at ``capacity`` (``ends_of``: each flow's brokers)
        self.out_cap, self.in_cap, loads = ends.out_cap, ends.in_cap, ends.loads
        self.capacity = capacity
        # the end with the most bytes to pass (a receiving end first on a tie)
        self.bottleneck = max(loads, key=lambda k: (loads[k], k[0] == "i")) if loads else None
        self.busiest = loads[self.bottleneck] if self.bottleneck else 0.0
        horizon = self.total_left / max(capacity, 1.0) + lag
        # at most MAX_EVENTS steps, fewer when many streams copy (the work of a step)
        self.min_dt = horizon / max(20, min(MAX_EVENTS, WORK_BUDGET // ends.n_streams))

    def quota(
        self,
        idle: Mapping[tuple[str, int], float] | None,
        burst: float,
        windows: Mapping[tuple[str, int], Windows] | None,
        now: float,
    ) -> None:
        """Kafka's quota windows replayed at first, then the credit of ends idle."""
        self.burst, self.now = burst, now
        self.wins = {e: copy_windows(w) for e, w in (windows or {}).items()}
        self.held: set[tuple[str, int]] = set()  # ends the windows stalled (``replay_caps``)
        self.last_busy: dict[tuple[str, int | None], float] = {
            e: -d for e, d in (idle or {}).items()
        }
        self.busy_before = set(self.ends.busy)
        for e in self.busy_before:
            self.last_busy[e] = 0.0

    def seen(self, x: float) -> float:
        """When the run sees a completion at model time ``x``: at its polls."""
        if self.poll <= 0:
            return x
        if not self.on_polls:
            return x + self.poll / 2
        return math.ceil(x / self.poll - 1e-4) * self.poll  # bytes rounding

    def completes_at(self, end: float, f: Flow) -> None:
        self.seq += 1
        self.scheduled.add(id(f))
        heapq.heappush(self.done_at, (end, self.seq, f))

    def run(self, rest_bytes: float, rest_leaders: int) -> Forecast:
        for _ in range(MAX_EVENTS * 4):
            self.start_what_fits()
            copying = [(f, b) for f in self.active for b, n in f.left.items() if n > 0]
            if not copying and not self.done_at:
                break
            dt = self.advance(copying)
            if dt is None:
                return Forecast(math.inf, math.inf, _name(self.bottleneck))
            self.t += dt
            self.complete_due()
        return self.forecast(rest_bytes, rest_leaders)

    def start_what_fits(self) -> None:
        """What ``schedule.decide`` lets start now: next steps, then queued moves; they hold
        their slot and copy from now, a step copying nothing completing a lag after."""
        active, ready, pending = self.active, self.ready, self.pending
        if not self.admit:  # what decides (active, ready, queued) is as it was: nothing starts
            return
        if not ready and not pending:
            self.admit = False
            return
        by_tp = {f.tp: f for f in ready + pending}
        chosen: Iterable[TopicPartition] = list(by_tp)
        if self.caps.mode != "legacy":
            chosen = decide(
                (f.item for f in pending),
                [f.item for f in active],
                self.caps,
                ready=[f.item for f in ready],
                cluster_inflight=len(active) + len(ready),
            ).submit
        first = len(active)
        for tp in chosen:
            f = by_tp[tp]
            (ready if f in ready else pending).remove(f)
            if f.steps:
                f.state, f.left = "moving", dict.fromkeys(f.steps[0], f.size)
                active.append(f)
        self.admit = len(active) > first
        # every flow active before is scheduled once its bytes are in (``__init__``,
        # ``copy``): only one just admitted can be a step copying nothing
        for f in active[first:]:
            if id(f) not in self.scheduled and not any(f.left.values()):
                self.completes_at(self.seen(self.t + max(self.extra, 1e-6)), f)

    def advance(self, copying: list[tuple[Flow, int]]) -> float | None:
        """One step: the streams' fair shares up to the next event; its length, None when
        nothing would ever end."""
        t = self.t
        replay = bool(self.wins) and t < QUOTA_REPLAY_S
        if replay:  # the windows hold what idling gave
            self.busy_before = {("i", b) for _, b in copying}
            self.busy_before |= {("o", f.src) for f, _ in copying if f.src is not None}
        else:
            self.busy_before = burst_idle(
                copying, self.busy_before, self.last_busy, t, self.out_cap, self.in_cap, self.burst
            )
        o_cap, i_cap = self.out_cap, self.in_cap
        if replay and copying:
            o_cap, i_cap = replay_caps(
                self.wins, self.now + t, self.out_cap, self.in_cap, self.burst, self.held
            )
        dt = math.inf
        rates: Sequence[float] = []
        if copying:
            streams = [(f.src, b) for f, b in copying]
            if o_cap is self.out_cap and i_cap is self.in_cap:  # every end at the capacity
                rates = shares_at(streams, self.capacity)
            else:  # the quota's windows replayed: each end its own
                rates = fair_share(streams, o_cap, i_cap)
            ends = [f.left[b] / r for (f, b), r in zip(copying, rates, strict=True) if r > 0]
            dt = min(dt, min(ends, default=math.inf))
        if self.done_at:
            dt = min(dt, self.done_at[0][0] - t)
        if replay:
            dt = min(dt, REPLAY_STEP_S)
        if not math.isfinite(dt):
            return None
        dt = max(dt, self.min_dt if copying else 0.0)
        if replay:
            dt = min(dt, REPLAY_STEP_S)
            for (f, b), r in zip(copying, rates, strict=True):
                for e in (("i", b), ("o", f.src)):
                    if e in self.wins:
                        self.wins[e].record(r * dt)
        if copying:
            self.copy(copying, rates, dt)
        return dt

    def copy(self, copying: list[tuple[Flow, int]], rates: Sequence[float], dt: float) -> None:
        """The bytes of ``dt`` at ``rates``; a step with every byte in completes a lag later."""
        t = self.t
        self.copy_s += dt
        for e in self.busy_before:
            self.last_busy[e] = t + dt
        ended = []  # flows a stream of which has every byte now: the only ones that may be done
        for (f, b), r in zip(copying, rates, strict=True):
            left = f.left
            n = left[b] - r * dt
            if n > 1e-6:
                left[b] = n
            else:
                left[b] = 0.0
                ended.append(f)
        if not ended:
            return
        # in the order of ``copying`` (a flow's streams are next to each other there): the
        # completions' order breaks ties in their heap
        at = self.seen(t + dt + self.extra)
        scheduled = self.scheduled
        for f in ended:
            if id(f) not in scheduled and not any(f.left.values()):
                self.completes_at(at, f)

    def complete_due(self) -> None:
        """The steps completing by now: the next step of their move ready, or the move done
        (its election queued)."""
        t = self.t
        gone: set[int] = set()
        leaders = 0  # elections queued by the moves completing now (one count per poll)
        done_at, due, pop = self.done_at, t + 1e-9, heapq.heappop
        scheduled, ready = self.scheduled, self.ready
        while done_at and done_at[0][0] <= due:
            f = pop(done_at)[2]
            key = id(f)
            scheduled.discard(key)
            gone.add(key)
            f.steps = f.steps[1:]
            if len(f.srcs) > 1:  # the leader the next step reads from
                f.srcs = f.srcs[1:]
                f.src = f.srcs[0]
            if f.steps:
                f.state, f.left = "ready", {}
                ready.append(f)
            elif self.elect.on and f.item.moves_leader:
                leaders += 1
        if gone:  # one pass (a removal each scanned the list: quadratic on 2,000 moves)
            self.admit = True
            self.active[:] = [f for f in self.active if id(f) not in gone]
        if leaders:
            self.elect.queue(t, leaders)

    def forecast(self, rest_bytes: float, rest_leaders: int) -> Forecast:
        """The end: the queued moves not simulated added in proportion, the elections sent."""
        el = self.elect
        t, copy_s, elect_end = self.t, self.copy_s, el.end
        if rest_bytes > 0 and self.total_left > 0:
            extra_s = copy_s * rest_bytes / self.total_left
            copy_s += extra_s
            if el.on and rest_leaders:  # their elections go out meanwhile
                drain = math.ceil((el.queued + rest_leaders) / el.per) * el.step
                elect_end = max(elect_end, t + drain)
            t += extra_s
        t = max(t, elect_end)
        return Forecast(t, copy_s, _name(self.bottleneck), self.busiest)


def physical_bound(flows: Iterable[Flow], capacity: float) -> float:
    """The physical bound: the bytes each broker end must still send or receive, over
    ``capacity``, through the busiest end (the baseline every other term of the ETA beats)."""
    return max(end_loads(flows).values(), default=0.0) / max(capacity, 1.0)


def end_loads(flows: Iterable[Flow]) -> dict[tuple[str, int], float]:
    """The bytes each broker end ("i" receiving, "o" sending) must still pass."""
    load: dict[tuple[str, int], float] = {}
    get = load.get
    for f in flows:
        srcs, size, left = f.srcs, f.size, f.left
        moving = f.state == "moving"
        for i, st in enumerate(f.steps):
            src = srcs[i] if i < len(srcs) else f.src
            for b in st:
                n = left.get(b, size) if (i == 0 and moving) else size
                load[("i", b)] = get(("i", b), 0.0) + n
                if src is not None:
                    load[("o", src)] = get(("o", src), 0.0) + n
    return load


class _Elections:
    """The preferred leader elections a run sends at its polls (a poll every ``step`` s of
    model time from 0, each sending up to ``per``, those queued at it included): ``end``,
    when the last one queued so far is sent (off the polls' grid when not ``on_polls``: the
    time queued at is then a completion already seen, see ``simulate``)."""

    def __init__(self, elections: tuple[int, int] | None, poll: float, on_polls: bool) -> None:
        self.on = elections is not None  # the run elects at all
        self.queued, per_poll = elections if elections is not None else (0, 0)
        self.per, self.step = max(1, per_poll), poll if poll > 0 else 1.0
        self.on_polls = on_polls
        self.last, self.room = -1, 0  # the last poll counted, what it may still send
        self.end = 0.0
        if self.queued:
            self.queue(0.0, 0)

    def queue(self, t: float, more: int) -> None:
        """``more`` elections queued at the run's poll at ``t``."""
        k = math.floor(t / self.step + 1e-6)
        if k > self.last:  # the polls in between sent ``per`` each; this one may send ``per``
            self.queued = max(0, self.queued - max(0, k - self.last - 1) * self.per)
            self.last, self.room = k, self.per
        self.queued += more
        sent = min(self.queued, self.room)
        self.queued, self.room = self.queued - sent, self.room - sent
        polls = math.ceil(self.queued / self.per)
        end = t + polls * self.step if not self.on_polls else (k + polls) * self.step
        self.end = max(self.end, end)


def _name(res: tuple[str, int] | None) -> str | None:
    if res is None:
        return None
    return f"bound by broker {res[1]} ({'sending' if res[0] == 'o' else 'receiving'})"


def _copy(f: Flow) -> Flow:
    """The simulation's own flow: ``left`` changes in place; ``steps`` and ``srcs`` are only
    ever replaced (``complete_due``), so the lists are shared."""
    return Flow(f.tp, f.item, f.src, f.size, f.steps, f.state, dict(f.left), f.full_s, f.srcs)
