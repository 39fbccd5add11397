"""One tick of the simulator's copies, played event by event: each stream (a new replica filled
from its partition's leader) goes at its max-min fair rate (``quota.fair_share``) until
something it shares a broker end with changes. A stream ending changes only the rates of the
streams its brokers' ends connect it to (its *group*); every other stream keeps its rate and
its progress is worked out when it is next looked at, so a tick costs the streams in flight
once plus, per completion, the streams of the group it ended in (recomputing every stream at
every completion made a run's cost grow with the square of its moves in flight).

Groups are the streams sharing a target, joined through the leaders whose throttle is seen
binding (a leader sending more than its throttle once its groups were played without it): the
leaders' throttles would otherwise tie every broker to every other while rarely limiting a
rate. The results are the fair share with every throttle, to float rounding: rates fair
without some constraints that still keep within them are fair with them. Kafka's quota windows
(``BrokerQuotas``) are charged the bytes each end moved; a broker's windowed limit is read
again whenever its group is recomputed."""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Sequence
from typing import Protocol

from .quota import BrokerQuotas, EndLosses, fair_share

END_BYTES = 1e-6  # a replica within this of its size has caught up (float rounding)
_SOON = 1e-9  # events this close in model time are looked at together


class Partition(Protocol):  # what a stream needs of ``simulate.SimPartition``
    size_bytes: int
    copied: dict[int, float]
    isr: list[int]


Cap = Callable[[int, bool, bool, float], float | None]


class TickFlows:
    """The streams of one tick of ``dt`` seconds: ``streams`` are (partition, target) pairs,
    ``sources`` each one's sending broker (None: no live leader), ``thr_in`` / ``thr_out``
    whether the stream is throttled at its target / its source. ``cap`` is
    ``SimCluster._cap``; ``quotas`` the windows to charge (None: the throttle is a plain rate cap)."""

    def __init__(
        self,
        streams: Sequence[tuple[Partition, int]],
        sources: Sequence[int | None],
        thr_in: Sequence[bool],
        thr_out: Sequence[bool],
        cap: Cap,
        dt: float,
        quotas: BrokerQuotas | None,
        debts: EndLosses,
        end_loss_bytes: float,
    ):
        self.streams = list(streams)
        self.src = list(sources)
        self.dst = [b for _, b in streams]
        self.thr_in, self.thr_out = list(thr_in), list(thr_out)
        self.cap, self.dt, self.quotas = cap, dt, quotas
        self.debts, self.end_loss_bytes = debts, end_loss_bytes
        n = len(self.streams)
        self.alive = [True] * n
        self.rate = [0.0] * n
        self.at = [0.0] * n  # when ``copied`` was last brought up to date
        self.version = [0] * n
        self.heap: list[tuple[float, int, int]] = []  # (end time, stream, version)
        self.n_in: dict[int, int] = {}  # streams into a broker, alive
        self.n_thr_in: dict[int, int] = {}  # of them throttled at the broker
        self.n_thr_out: dict[int, int] = {}  # streams throttled at their source
        self.by_dst: dict[int, list[int]] = {}
        for k, (b, s) in enumerate(zip(self.dst, self.src, strict=True)):
            self.by_dst.setdefault(b, []).append(k)
            self.n_in[b] = self.n_in.get(b, 0) + 1
            if self.thr_in[k]:
                self.n_thr_in[b] = self.n_thr_in.get(b, 0) + 1
            if self.thr_out[k] and s is not None:
                self.n_thr_out[s] = self.n_thr_out.get(s, 0) + 1
        # what each end moves per second now, and since when its windows were charged
        self.in_rate: dict[int, float] = {}
        self.out_rate: dict[int, float] = {}
        self.charged_in: dict[int, float] = {}
        self.charged_out: dict[int, float] = {}
        # the leaders whose throttle is in force (a rate set): their windows are charged
        self.out_limited = {s for s in self.n_thr_out if cap(s, False, True, dt) is not None}
        self.kept_out: set[int] = set()  # leader throttles seen binding this tick
        self.group: list[int] = []
        self.members: dict[int, list[int]] = {}
        # the fair rates the tick starts with, when nothing but the streams' ends set them
        # (no leader seen binding, no quota windows, no broker owing): ``SteadyRates`` keeps
        # them for the next tick
        self.first_rates: list[float] | None = None
        # brokers that owe (``EndLosses``): their streams copy nothing until it is paid
        self.owed_at: dict[int, float] = {}
        self.pay_heap: list[tuple[float, int, int]] = []
        self.pay_version: dict[int, int] = {}

    # ---- setting up ---------------------------------------------------------------------

    def _groups(self) -> list[int]:
        """Each stream's group: streams sharing a target, or a leader seen binding, are one."""
        parent: dict[tuple[bool, int], tuple[bool, int]] = {}

        def root(x: tuple[bool, int]) -> tuple[bool, int]:
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for k, s in enumerate(self.src):
            if s in self.kept_out:
                a, b = root((False, s)), root((True, self.dst[k]))
                if a != b:
                    parent[a] = b
        ids: dict[tuple[bool, int], int] = {}
        return [ids.setdefault(root((True, b)), len(ids)) for b in self.dst]

    # ---- playing the tick ---------------------------------------------------------------

    def run(self) -> None:
        """Play the tick: rates for every group, then each completion (or debt paid) in time
        order; every replica's bytes brought up to the tick's end."""
        self._regroup()
        self._settled(list(range(len(self.streams))), 0.0)
        if not self.kept_out and self.quotas is None and not self.debts.owed:
            self.first_rates = list(self.rate)
        for b in list(self.debts.owed):
            if b in self.n_in:
                self._owing_from(b, 0.0)
        now = 0.0
        while True:
            when = self._next_event()
            if when >= self.dt:
                break
            now = max(now, when)
            self._pay_debts(now)
            ended = self._ended(now)
            if ended:
                groups = {self.group[k] for k in ended}
                self._end(ended, now)
                ks = [k for g in sorted(groups) for k in self.members[g] if self.alive[k]]
                self._settled(ks, now)
        self._finish_tick()

    def _regroup(self) -> None:
        self.group = self._groups()
        self.members: dict[int, list[int]] = {}
        for k, g in enumerate(self.group):
            self.members.setdefault(g, []).append(k)

    def _settled(self, ks: list[int], now: float) -> None:
        """New rates for ``ks`` (whole groups), grouped without the leader throttles not seen
        binding; a leader then sending more than its throttle is one more that binds, its
        streams' groups joined and played again. Rates that keep every leader within its
        throttle are the fair share with them all (fair without them, and allowed)."""
        while True:
            self._refresh(ks, now)
            over = self._over(ks, now)
            if not over:
                return
            self.kept_out |= over
            self._regroup()
            groups = {self.group[k] for k in ks} | {
                self.group[k] for k, s in enumerate(self.src) if s in over
            }
            ks = [k for g in sorted(groups) for k in self.members[g] if self.alive[k]]

    def _over(self, ks: list[int], now: float) -> set[int]:
        """The throttled leaders of ``ks`` not yet grouped that send more than they may."""
        out = set()
        left = self.dt - now
        for s in {self.src[k] for k in ks}:
            if s is None or s in self.kept_out or not self.n_thr_out.get(s, 0):
                continue
            c = self.cap(s, False, True, left)
            if c is not None and self.out_rate.get(s, 0.0) > c * (1 + 1e-9) + 1e-9:
                out.add(s)
        return out

    def _next_event(self) -> float:
        while self.heap and self.heap[0][2] != self.version[self.heap[0][1]]:
            heapq.heappop(self.heap)
        while self.pay_heap and self.pay_heap[0][2] != self.pay_version.get(self.pay_heap[0][1]):
            heapq.heappop(self.pay_heap)
        end = self.heap[0][0] if self.heap else math.inf
        pay = self.pay_heap[0][0] if self.pay_heap else math.inf
        return min(end, pay)

    def _copied(self, k: int, now: float) -> float:
        sp, b = self.streams[k]
        c = sp.copied.get(b, 0.0)
        if b in self.owed_at:
            return c
        return c + self.rate[k] * (now - self.at[k])

    def _bring(self, k: int, now: float) -> None:
        sp, b = self.streams[k]
        sp.copied[b] = self._copied(k, now)
        self.at[k] = now

    def _schedule(self, k: int) -> None:
        self.version[k] += 1
        sp, b = self.streams[k]
        r = self.rate[k]
        if r > 0 and b not in self.owed_at:
            left = sp.size_bytes - sp.copied.get(b, 0.0)
            heapq.heappush(self.heap, (self.at[k] + left / r, k, self.version[k]))

    def _ended(self, now: float) -> list[int]:
        """The streams due to have caught up by ``now``, in stream order."""
        out = []
        while self.heap and self.heap[0][0] <= now + _SOON:
            _, k, v = heapq.heappop(self.heap)
            if v == self.version[k] and self.alive[k]:
                out.append(k)
        return sorted(out)

    def _end(self, ended: list[int], now: float) -> None:
        """Replicas caught up: in the ISR; their brokers' counts and charges follow; a broker
        still filled by others owes (``end_loss``)."""
        losses: list[tuple[int, int]] = []
        for k in ended:
            sp, b = self.streams[k]
            s = self.src[k]
            self._charge(b, s, now)
            self._set_rate(k, 0.0)
            self.alive[k] = False
            self.version[k] += 1
            sp.copied[b] = float(sp.size_bytes)
            sp.isr.append(b)
            losses.append((b, sp.size_bytes))
            self.n_in[b] -= 1
            if self.thr_in[k]:
                self.n_thr_in[b] -= 1
            if self.thr_out[k] and s is not None:
                self.n_thr_out[s] -= 1
                if not self.n_thr_out[s] and s in self.out_limited:
                    self.out_limited.discard(s)  # its throttle no longer applies to the rest
        if self.end_loss_bytes > 0:
            still = {b for b, _ in losses if self.n_in[b]}
            for b in still:
                self._settle(b, now)
            self.debts.owe(losses, still, self.end_loss_bytes)
            for b in still:
                if b in self.debts.owed:
                    self._owing_from(b, now)
        for b, _ in losses:
            if not self.n_in[b]:
                self._settle(b, now)

    def _refresh(self, ks: list[int], now: float) -> None:
        """New fair rates for streams ``ks`` (whole groups) from ``now``: their brokers'
        limits read again (a windowed quota's depends on what is left of the tick)."""
        if not ks:
            return
        left = self.dt - now
        for k in ks:
            self._bring(k, now)
            self._charge(self.dst[k], self.src[k], now)
        kept = self.kept_out
        ends = [(self.src[k] if self.src[k] in kept else None, self.dst[k]) for k in ks]
        # once per broker (the limit is the same for each of its streams), in stream order
        in_cap = {
            b: self.cap(b, True, self.n_thr_in.get(b, 0) > 0, left)
            for b in dict.fromkeys(b for _, b in ends)
        }
        out_cap: dict[int, float] = {}
        for s, _ in ends:
            if s is not None and s not in out_cap and self.n_thr_out.get(s, 0) > 0:
                c = self.cap(s, False, True, left)
                if c is not None:
                    out_cap[s] = c
        owing = {b for _, b in ends if b in self.owed_at}
        for b in owing:
            self._settle(b, now)
        for k, r in zip(ks, fair_share(ends, out_cap, in_cap), strict=True):
            self._set_rate(k, r)
            self._schedule(k)
        for b in owing:
            self._owing_from(b, now)

    def _set_rate(self, k: int, r: float) -> None:
        b, s, old = self.dst[k], self.src[k], self.rate[k]
        self.rate[k] = r
        self.in_rate[b] = self.in_rate.get(b, 0.0) + r - old
        if s is not None:
            self.out_rate[s] = self.out_rate.get(s, 0.0) + r - old

    def _charge(self, b: int, s: int | None, now: float) -> None:
        """Kafka's windows of target ``b`` and source ``s`` charged what they moved since they
        last were (while throttled there)."""
        if self.quotas is None:
            return
        since = self.charged_in.get(b, 0.0)
        if now > since:
            w = self.quotas.inbound.get(b)
            if w is not None and self.n_thr_in.get(b, 0) > 0:
                w.record(self.in_rate.get(b, 0.0) * (now - since))
            self.charged_in[b] = now
        if s is not None:
            self._charge_out(s, now)

    def _charge_out(self, s: int, now: float) -> None:
        since = self.charged_out.get(s, 0.0)
        if self.quotas is not None and now > since:
            w = self.quotas.outbound.get(s)
            if w is not None and s in self.out_limited:
                w.record(self.out_rate.get(s, 0.0) * (now - since))
            self.charged_out[s] = now

    # ---- what a broker owes -------------------------------------------------------------

    def _settle(self, b: int, now: float) -> None:
        """Bring broker ``b``'s debt to ``now`` (it paid at its inbound rate meanwhile)."""
        if b not in self.owed_at:
            return
        owed = self.debts.owed.get(b)
        if owed is not None:
            owed -= self.in_rate.get(b, 0.0) * (now - self.owed_at[b])
            if owed <= 1e-6:
                del self.debts.owed[b]
            else:
                self.debts.owed[b] = owed
        del self.owed_at[b]
        self.pay_version[b] = self.pay_version.get(b, 0) + 1
        for k in self.by_dst[b]:  # its streams copy again from now
            if self.alive[k]:
                self.at[k] = now
                self._schedule(k)

    def _owing_from(self, b: int, now: float) -> None:
        """Broker ``b`` owes from ``now``: its streams stop copying until it has paid."""
        if b not in self.debts.owed or b in self.owed_at:
            return
        for k in self.by_dst[b]:
            if self.alive[k]:
                self._bring(k, now)
        self.owed_at[b] = now
        self.pay_version[b] = v = self.pay_version.get(b, 0) + 1
        for k in self.by_dst[b]:
            self.version[k] += 1  # no end while it owes
        r = self.in_rate.get(b, 0.0)
        if r > 0:
            heapq.heappush(self.pay_heap, (now + self.debts.owed[b] / r, b, v))

    def _pay_debts(self, now: float) -> None:
        while self.pay_heap and self.pay_heap[0][0] <= now + _SOON:
            _, b, v = heapq.heappop(self.pay_heap)
            if v == self.pay_version.get(b):
                self._settle(b, now)
                if b in self.debts.owed:  # not quite paid (rounding): owes on
                    self._owing_from(b, now)

    def _finish_tick(self) -> None:
        end = self.dt
        for b in list(self.owed_at):
            self._settle(b, end)
        for k in range(len(self.streams)):
            if self.alive[k]:
                self._bring(k, end)
        for b in self.n_in:
            self._charge(b, None, end)
        for s in self.out_rate:
            self._charge_out(s, end)
        done = [
            k
            for k in range(len(self.streams))
            if self.alive[k]
            and self.streams[k][0].copied.get(self.dst[k], 0.0)
            >= self.streams[k][0].size_bytes - END_BYTES
        ]
        if done:
            self._end(done, end)


class SteadyRates:
    """The rates the last tick played in full started with, and what set them: each stream's
    ends, which of them are throttled and every end's limit (``key``). Between two waves of a
    run the streams of one tick are those of the last with the same ends and limits, so the
    fair share is the same; a tick in which none of them ends (and none owes, with no quota
    windows, whose limits change with time) is then each replica's bytes at that rate — what
    ``TickFlows.run`` computes for it, to the bit, without the fair share, the event heap and
    the bookkeeping of every stream (most of a simulated poll at 4,000 streams)."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.rates: list[float] = []

    def learn(self, key: tuple, flows: TickFlows) -> None:
        """``flows`` was played in full from ``key``: its first rates kept (or forgotten)."""
        if flows.first_rates is None:
            self.key = None
            return
        self.key, self.rates = key, flows.first_rates

    def replay(self, streams: Sequence[tuple[Partition, int]], key: tuple, dt: float) -> bool:
        """Play a tick of ``dt`` when its ``key`` is the one learnt and no stream would end in
        it; False (nothing changed) when it must be played in full."""
        if self.key is None or key != self.key:
            return False
        after: list[float] = []
        for (sp, b), r in zip(streams, self.rates, strict=True):
            c = sp.copied.get(b, 0.0)
            # the tests ``TickFlows`` makes: an end due within the tick, or caught up at its end
            if r > 0 and (sp.size_bytes - c) / r < dt:
                return False
            n = c + r * dt
            if n >= sp.size_bytes - END_BYTES:
                return False
            after.append(n)
        for (sp, b), n in zip(streams, after, strict=True):
            sp.copied[b] = n
        return True
