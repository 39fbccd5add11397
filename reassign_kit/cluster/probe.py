"""The tool's own health probe, the adaptive pace's default health source when no
metrics stack is given: per-broker produce latency from a canary topic, and the partitions
under min ISR from the Admin API (``probe_isr.IsrWatch``).

The canary topic (``_reassign_kit_canary_<id>``) has one partition led by each broker (its
replicas: that broker, then the next ones, up to 3 and fewer than the brokers;
``min.insync.replicas`` 1 so the canary itself never blocks). A producer thread sends one small message to each partition at a fixed
low rate with ``acks=all`` — the latency a producer of the cluster sees, replication to the
followers included (nothing reads them back: a consumer's fetches would only add load to
the cluster measured). ``sample()`` gives each broker's p50/p99
over a sliding window — the partition it leads, unless a follower slow everywhere explains
it (then the best of the partitions it replicates: ``per_broker``), so a stalled broker slows
itself and not its neighbours, and a source whose followers' fetchers are full of a move's
bytes reads slow — counting a message still unacknowledged at its age so far (a stalled
broker shows at once, not after the delivery timeout), and a 95% lower confidence bound of
that p99 (``_p99_low``): the pace slows a broker on the bound, not on the window's 3rd worst
message. ``close()`` deletes the topic, unless it is a kept canary (``--health-source
probe:TOPIC``: made if missing, measured as it is laid out, left for the next run); a probe
that cannot start or produce reports None with ``degraded`` set and never raises.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..health.signals import BrokerHealth, HealthSample
from . import isr_view
from .probe_isr import IsrWatch

log = logging.getLogger(__name__)

CANARY_PREFIX = "_reassign_kit_canary_"
# a partition is measured once this many canary messages reached it; their own latencies (the
# producer's connections, the new topic's metadata: 100-235 ms on an idle sandbox) are never
# counted — counted, they halved every broker's rate on the run's first sample (bench-pacing)
WARM_UP = 5


def _quantile(values: list[float], q: float) -> float:
    """The nearest-rank quantile (no interpolation: p99 of 100 values is the 99th)."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, int(-(-q * len(s) // 1)) - 1))
    return s[k]


EXPLAINED = 0.5  # a follower slow everywhere explains a partition this slow relative to it


def per_broker(
    replicas: Mapping[int, tuple[int, ...]], per_part: Mapping[int, tuple[float, float, float]]
) -> dict[int, BrokerHealth]:
    """Each broker's latency from its canary partitions' (p50, p99, p99 low), in seconds:
    the partition it leads (its first replica) — its producers' acks=all, its followers'
    fetches from it included — unless a follower of that partition is slow in every
    partition it is in (its best at least ``EXPLAINED`` of this one): that follower is the
    cause, and the broker reads as the best of the partitions it replicates. A stalled
    broker so slows only itself (each other broker is also in a partition without it), and a
    broker whose followers' fetchers from it are full of a move's bytes reads slow: the
    best-of rule alone read a move's sources as fast while the load's acks=all producers
    waited seconds (every broker also replicates a partition whose followers fetch from
    brokers the move does not read; figures: bench/RESULTS.md, "Figures behind comments in
    the code")."""
    brokers = sorted({b for reps in replicas.values() for b in reps})
    best: dict[int, tuple[float, float, float]] = {}
    for b in brokers:
        seen = [per_part[p] for p, reps in replicas.items() if b in reps and p in per_part]
        if seen:
            best[b] = (min(x[0] for x in seen), min(x[1] for x in seen), min(x[2] for x in seen))
    out = {}
    for b in brokers:
        pick = best.get(b)
        led = [p for p, reps in replicas.items() if reps and reps[0] == b and p in per_part]
        if pick is not None and led:
            own = max((per_part[p] for p in led), key=lambda x: x[1])
            followers = {f for p in led for f in replicas[p][1:]}
            if not any(f in best and best[f][1] >= EXPLAINED * own[1] for f in followers):
                pick = own
        out[b] = (
            BrokerHealth(
                b,
                produce_p50_ms=pick[0] * 1000,
                produce_p99_ms=pick[1] * 1000,
                produce_p99_low_ms=pick[2] * 1000,
            )
            if pick is not None
            else BrokerHealth(b)
        )
    return out


LOW_ALPHA = 0.05  # the p99's lower bound is wrong (above the true p99) at most this often


@functools.lru_cache(maxsize=1024)
def _rank_from_top(n: int, q: float = 0.99, alpha: float = LOW_ALPHA) -> int:
    """k: the k-th largest of ``n`` values is above the true ``q``-quantile with probability
    <= ``alpha`` (it is, only if k or more of the n values are: a binomial tail)."""
    p, tail = 1.0 - q, 1.0  # tail = P(at least k of n are above the quantile)
    for k in range(1, n + 1):
        tail -= math.comb(n, k - 1) * p ** (k - 1) * (1 - p) ** (n - k + 1)
        if tail <= alpha:
            return k
    return n


def _p99_low(values: list[float]) -> float:
    """A 95% lower confidence bound of the p99 of the distribution ``values`` were drawn from:
    over 50 values the 3rd largest, not the largest — one slow message in a window is not a
    breach, a stall (every message late) is."""
    s = sorted(values)
    return s[len(s) - _rank_from_top(len(s))]


class NoHealth:
    """A source with no signal (a gateway the probe cannot use, a probe that failed to start):
    every sample degraded, every value None — the pace never rises on it."""

    name = "none"

    def __init__(self, why: str, clock: Any = time.time):
        self.why, self.clock = why, clock

    def sample(self) -> HealthSample:
        return HealthSample(ts=self.clock(), source=self.name, degraded=self.why)

    def close(self) -> None:
        pass


class Probe:
    """The canary producer and the ISR view (see the module docstring)."""

    name = "probe"

    def __init__(
        self,
        bootstrap_servers: str,
        client_conf: Mapping[str, Any] | None = None,
        *,
        rate_per_broker: float = 10.0,
        window_s: float = 5.0,
        timeout_s: float = 10.0,
        topic: str | None = None,
        keep: bool = False,
        isr_gateway: Any = None,
        elr_unknown: str | None = "no Admin API gateway for DescribeTopicPartitions",
        before_create: Callable[[str], None] | None = None,
    ):
        """``isr_gateway``: an ``AdminGateway`` of the probe's own (``AdminGateway.twin``)
        whose kafka-python client reads ISR + ELR through DescribeTopicPartitions, unless
        ``elr_unknown`` says why the cluster cannot answer it (then: the metadata's ISR)."""
        self.isr_gateway = isr_gateway
        self.elr_unknown = elr_unknown if isr_gateway is not None else (elr_unknown or "no gateway")
        self._isr: IsrWatch | None = None  # the ISR view, once the admin client is up
        self.bootstrap = bootstrap_servers
        self.conf = dict(client_conf or {})
        self.rate = float(rate_per_broker)
        self.window_s = float(window_s)
        self.timeout_s = float(timeout_s)
        self.topic = topic or f"{CANARY_PREFIX}{uuid.uuid4().hex[:12]}"
        self.keep = keep  # a kept canary (``--health-source probe:TOPIC``): never deleted here
        # called with the topic's name before it is made (a run journals it there, so that a
        # run killed with its probe up leaves a name its resume or --cancel deletes); what it
        # raises stops the probe before anything is made
        self.before_create = before_create
        self.gone = False  # the canary is known deleted (by close(), or never made)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # per canary partition: (done at, latency s), msg id -> sent at, last error, count
        self._done: dict[int, deque[tuple[float, float]]] = {}
        self._inflight: dict[int, dict[int, float]] = {}
        self._errors: dict[int, str] = {}
        self._delivered: dict[int, int] = {}
        self._delivered_at = 0.0
        self._started_at = time.monotonic()
        self._replicas: dict[int, tuple[int, ...]] = {}  # canary partition -> its replicas
        self._failed: str | None = None
        self._created = False
        self._admin: Any = None
        try:
            self._start()
        except Exception as e:  # noqa: BLE001 - reported as a degraded source, never raised
            self._failed = f"probe: cannot start the canary topic {self.topic}: {e}"
            log.warning("%s", self._failed)

    # ---- start ------------------------------------------------------------------------------

    def _client(self, **extra: Any) -> dict[str, Any]:
        from .admin import QUIET

        return {"bootstrap.servers": self.bootstrap, "logger": QUIET, **self.conf, **extra}

    def _start(self) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic

        self._admin = AdminClient(self._client())
        self._isr = IsrWatch(
            self._admin, self.topic, self.timeout_s, self.isr_gateway, self.elr_unknown
        )
        md = self._admin.list_topics(timeout=self.timeout_s)
        brokers = sorted(md.brokers)
        if not brokers:
            raise RuntimeError("no broker in the metadata")
        rf = min(3, max(1, len(brokers) - 1))  # each broker also in a partition without another
        assignment = [
            [brokers[(i + k) % len(brokers)] for k in range(rf)] for i in range(len(brokers))
        ]
        kept = md.topics.get(self.topic) if self.keep else None
        if kept is not None and kept.error is None and kept.partitions:
            # a kept canary made by an earlier run (or the operator): measured as it is laid out
            assignment = [list(kept.partitions[p].replicas) for p in sorted(kept.partitions)]
            self._warn_uncovered(brokers, assignment)
        else:
            if not self.keep and self.before_create is not None:
                self.before_create(self.topic)
            nt = NewTopic(
                self.topic,
                num_partitions=len(assignment),
                replica_assignment=assignment,
                config={"min.insync.replicas": "1", "retention.ms": "600000"},
            )
            try:
                self._admin.create_topics([nt], operation_timeout=self.timeout_s)[
                    self.topic
                ].result(self.timeout_s)
                self._created = not self.keep
            except Exception as e:
                if not (self.keep and "TOPIC_ALREADY_EXISTS" in str(e)):
                    raise
                # another run made the kept canary just now: its layout once it is led
        deadline = time.monotonic() + self.timeout_s
        while True:  # every partition led before the first message (else it only queues)
            t = self._admin.list_topics(timeout=self.timeout_s).topics.get(self.topic)
            if t is not None and t.error is None and t.partitions:
                if all(p.leader >= 0 for p in t.partitions.values()):
                    assignment = [list(t.partitions[p].replicas) for p in sorted(t.partitions)]
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"no leader for every partition after {self.timeout_s:.0f}s")
            time.sleep(0.2)
        self._replicas = {p: tuple(reps) for p, reps in enumerate(assignment)}
        for part in self._replicas:
            self._done[part] = deque()
            self._inflight[part] = {}
        for target in (self._produce_loop,):
            th = threading.Thread(target=target, name=f"rk-{target.__name__[1:]}", daemon=True)
            th.start()
            self._threads.append(th)

    def _warn_uncovered(self, brokers: list[int], assignment: list[list[int]]) -> None:
        """A kept canary made when the cluster had other brokers: those it has no replica on
        are not measured (their pace never rises); said once, with the way out."""
        missing = sorted(set(brokers) - {b for reps in assignment for b in reps})
        if missing:
            log.warning(
                "probe: the kept canary topic %s has no replica on broker(s) %s: their "
                "latency is not measured and their pace never rises (delete the topic to have "
                "the next run make it again over every broker)",
                self.topic,
                missing,
            )

    # ---- the threads ------------------------------------------------------------------------

    def _produce_loop(self) -> None:
        from confluent_kafka import Producer

        p = Producer(
            self._client(
                acks="all",
                **{
                    "linger.ms": 0,
                    "message.timeout.ms": int(self.timeout_s * 1000),
                    "enable.idempotence": False,
                    "max.in.flight.requests.per.connection": 5,
                },
            )
        )
        period = 1.0 / self.rate
        seq = 0
        next_at = time.monotonic()
        try:
            while not self._stop.is_set():
                for part in self._replicas:
                    seq += 1
                    sent = time.monotonic()
                    with self._lock:
                        self._inflight[part][seq] = sent
                    try:
                        p.produce(
                            self.topic,
                            value=repr(time.time()).encode(),
                            partition=part,
                            on_delivery=self._on_delivery(part, seq, sent),
                        )
                    except BufferError:
                        with self._lock:
                            self._inflight[part].pop(seq, None)
                            self._errors[part] = "the producer's queue is full"
                p.poll(0)
                next_at += period
                delay = next_at - time.monotonic()
                if delay < 0:
                    next_at = time.monotonic()
                    delay = 0
                while delay > 0 and not self._stop.is_set():  # deliveries served while waiting
                    p.poll(min(delay, 0.05))
                    delay = next_at - time.monotonic()
        finally:
            p.flush(1.0)

    def _on_delivery(self, part: int, seq: int, sent: float) -> Any:
        def cb(err: Any, _msg: Any) -> None:
            now = time.monotonic()
            with self._lock:
                self._inflight[part].pop(seq, None)
                warm = self._delivered.get(part, 0) >= WARM_UP
                if warm:  # a failed delivery counts at the time it took to fail: slow is slow
                    self._done[part].append((now, now - sent))
                if err is None:
                    self._delivered_at = now
                    self._delivered[part] = self._delivered.get(part, 0) + 1
                    self._errors.pop(part, None)
                else:
                    self._errors[part] = str(err)

        return cb

    # ---- the sample -------------------------------------------------------------------------

    def sample(self) -> HealthSample:
        """Per broker p50/p99 over the window; the partitions under min ISR. Never raises."""
        ts = time.time()
        if self._failed:
            return HealthSample(ts=ts, source=self.name, degraded=self._failed)
        now = time.monotonic()
        per_part: dict[int, tuple[float, float, float]] = {}  # partition -> p50, p99, low (s)
        with self._lock:
            for part, dq in self._done.items():
                while dq and dq[0][0] < now - self.window_s:
                    dq.popleft()
                # messages still in flight count at their age so far: a stall shows
                lat = [x for _, x in dq] + [now - s for s in self._inflight[part].values()]
                if lat and self._delivered.get(part, 0) >= WARM_UP:
                    per_part[part] = (_quantile(lat, 0.5), _quantile(lat, 0.99), _p99_low(lat))
            delivered_at, errors = self._delivered_at, dict(self._errors)
        brokers = per_broker(self._replicas, per_part)
        why: list[str] = []
        alive = all(t.is_alive() for t in self._threads)
        if not alive:
            why.append("probe: its producer thread ended")
            brokers = {b: BrokerHealth(b) for b in brokers}
        elif now - max(delivered_at, self._started_at) > max(3 * self.window_s, self.timeout_s):
            why.append(f"probe: nothing delivered to {self.topic} for {self.timeout_s:.0f}s+")
        if errors and not why:
            log.debug("probe delivery errors: %s", errors)
        assert self._isr is not None  # made with the admin client; else ``_failed`` is set
        under, isr, elr_why, isr_why = self._isr.read()
        if isr_why:
            why.append(isr_why)
        return HealthSample(
            ts=ts,
            source=self.name,
            brokers=brokers,
            under_min_isr=under,
            degraded="; ".join(why) or None,
            isr=isr,
            elr_unknown=elr_why if isr is not None else None,
        )

    # ---- the end ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop the threads and delete the canary topic (retried once; never raises); a kept
        canary (``keep``) stays for the next run."""
        self._stop.set()
        if self.isr_gateway is not None:
            try:
                self.isr_gateway.close()
            except Exception:  # noqa: BLE001 - its client only: nothing to report
                pass
        for t in self._threads:
            t.join(5.0)
        if self._created and self._admin is not None:
            for attempt in range(2):
                err = _delete_topics(self._admin, [self.topic], self.timeout_s)[self.topic]
                if err is None:
                    self._created, self.gone = False, True
                    break
                if attempt:
                    log.warning("probe: cannot delete the canary topic %s: %s", self.topic, err)

    @property
    def deleted(self) -> bool:
        return not self._created and not self.keep


def delete_canaries(gateway: Any, topics: Iterable[str], timeout_s: float = 10.0) -> dict:
    """Delete canary topics a run journaled (``probe_canary``) and did not see deleted: a run
    killed with its probe up leaves one (RF 3, a partition on every broker) that nothing else
    would ever remove. Per topic: None when it is gone (deleted now, or already), else why
    not. Only names with the canary prefix are touched: a journal is not trusted to name a
    topic to delete. A gateway without topics to delete (the simulator) has none."""
    from .admin import AdminGateway

    names = sorted({t for t in topics if t.startswith(CANARY_PREFIX)})
    if not names or not isinstance(gateway, AdminGateway):
        return {}
    return _delete_topics(gateway.ck, names, timeout_s)


def _delete_topics(admin: Any, names: list[str], timeout_s: float) -> dict[str, str | None]:
    """DeleteTopics through a confluent-kafka AdminClient: per topic None when it is gone
    (deleted, or unknown already), else why not; never raising (the probe's close and the
    deletion of canaries a killed run left share it)."""
    try:
        futures = admin.delete_topics(names, operation_timeout=timeout_s)
    except Exception as e:  # noqa: BLE001 - reported per topic, never raised
        return dict.fromkeys(names, str(e))
    out: dict[str, str | None] = {}
    for name in names:
        try:
            futures[name].result(timeout_s)
            out[name] = None
        except Exception as e:  # noqa: BLE001
            out[name] = None if "UNKNOWN_TOPIC" in str(e) else str(e)
    return out


def probe_for(gateway: Any, **kwargs: Any) -> Any:
    """The default health source for a gateway: a ``Probe`` on a real cluster (its client
    configuration, security included), ``NoHealth`` elsewhere (a simulator)."""
    from .admin import AdminGateway

    if isinstance(gateway, AdminGateway):
        try:
            why = isr_view.elr_unknown_why(gateway.capabilities())
        except Exception as e:  # noqa: BLE001 - ISR from the metadata, ELR unknown
            why = f"the brokers' capabilities could not be read: {e}"
        kwargs.setdefault("isr_gateway", gateway.twin(min(gateway.timeout_s, 10.0)))
        kwargs.setdefault("elr_unknown", why)
        kwargs.setdefault("keep", kwargs.get("topic") is not None)  # probe:TOPIC is kept
        return Probe(gateway.bootstrap_servers, gateway._ck_conf, **kwargs)
    return NoHealth(f"no health probe for {type(gateway).__name__}")
