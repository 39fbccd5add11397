"""The adaptive pace inside a run (a part of ``Run``, run/run.py): at every poll,
one health sample (``health.signals.HealthSource``: the probe by default) goes to the pure
controller (``pacing/controller.py``); its decisions become per-broker throttle rates
(``ThrottleKeeper.set_broker_rates``: written by the loop's next sync, before any submission)
and a hold on new submissions; each is journaled as ``pace_decision`` with its signals.

A relative objective (``+20ms``) first measures the baseline: nothing is submitted until each
broker has ``Controller.baseline_samples`` samples (or ``BASELINE_TIMEOUT_S`` passed). A health
source that raises is taken as no signal (never a faster pace) with a warning; the run owns
the source and closes it on every exit path (the probe deletes its canary topic then).

The source is opened on a thread of its own (the probe creates its canary topic and waits for
its leaders: 0.3-0.6 s on an idle sandbox, seconds on a busy cluster; ``probe:TOPIC``, a kept
canary, skips that): the loop goes on polling (a stop or cancel is served at once), but nothing
is submitted before the source's first sample — its ISR view may already call for a pause —
or ``OPEN_HOLD_S`` (then the run goes on, warned, at a pace that never rises without a signal).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..health.signals import HealthSample, HealthSource
from ..moves.schedule import Caps
from ..moves.table import MoveStatus
from ..pacing.controller import Bounds, Controller, Decision, Objective, elr_signals
from ..pacing.copying import Copying, CopyRates
from ..pacing.memory import PaceMemory, pace_memory, take_over
from ..pacing.ramp import Ramp

if TYPE_CHECKING:
    from .shared import RunParts, RunState

MOVING, READY, DONE = MoveStatus.MOVING, MoveStatus.READY, MoveStatus.DONE

log = logging.getLogger("reassign_kit.run.run")

BASELINE_TIMEOUT_S = 30.0  # a relative objective's baseline: at most this long before moves
BASELINE_EVERY_S = 2.0  # its samples this far apart (a health window overlaps the last)
OPEN_JOIN_S = 30.0  # the run's end waits this long for a source still opening (to close it)
OPEN_HOLD_S = 30.0  # no submission before the source's first sample, at most this long


class Pace:
    """The adaptive pace (see the module docstring)."""

    def __init__(self, shared: RunState, parts: RunParts) -> None:
        self.shared = shared
        self.parts = parts

    _pacer: Controller | None = None
    _pace_sampled = False  # the source answered once (or was given up on: OPEN_HOLD_S)
    _pace_began: float | None = None
    _pace_degraded: str | None = None
    _pace_last_sample = -1e18
    _pace_last_baseline = -1e18
    _ramp: Ramp | None = None  # the rates written: a raise in steps (pace_ramp.Ramp)
    _pace_memory: PaceMemory | None = None  # on resume, the journaled run's pace
    _ramp_started = False  # the start rate's ramp began (with the first submission)
    _health_closed = False
    _copy_rates: CopyRates | None = None  # whose moves copy at their rate (the caps' evidence)

    @property
    def adaptive(self) -> bool:
        return self.shared.options.pace == "adaptive"

    def _pace_start(self, now: float, brokers: list[int]) -> None:
        """The controller, over every broker of the cluster (those that need no throttle get
        none); each starts at the controller's start rate, set before the first submission."""
        o = self.shared.options
        assert o.slo_produce_p99 is not None  # options.validate
        self._pacer = Controller(
            Objective.parse(o.slo_produce_p99),
            self._pace_bounds(),
            brokers,
            [m.tp for m in self.shared.plan],
            settle_s=o.pace_settle_s,
            cap_max=self.shared.caps.max_moves_per_broker,
        )
        self._pace_began = now
        # the start rate is written before the first move, as a static run's is: a quota idle
        # since its windows expired moves at the limit from the first second, where a ramp
        # from the floor let the fetchers take 2x the rate written (its windows fill as the
        # limit rises) and left that surge in the quota's 11-s rhythm. A resumed run goes on
        # from the journaled pace: the rates written stay, the ramp goes on toward the
        # controller's
        start = dict(self._pacer.rates)
        took = None if self._pace_memory is None else take_over(self._pace_memory, self._pacer)
        if took is not None:
            start.update((b, r) for b, r in took.written.items() if b in start)
        self._ramp = Ramp(start, now)
        self.shared.throttles.set_broker_rates(self._ramp.at(now))
        self.shared.pace_hold = True  # until the first sample (``_pace_decide``)
        self.parts.loop.emit(
            "pace_started",
            objective=str(self._pacer.objective),
            floor=self._pacer.bounds.floor,
            ceiling=self._pacer.bounds.ceiling,
            start_rate=next(iter(self._pacer.rates.values()), None),
            step=self._pacer.step_bps,
            # the caller's source by name; else what was asked (it opens on its own thread:
            # each pace_sample names the source that answered)
            source=(
                getattr(self.shared.health, "name", type(self.shared.health).__name__)
                if self.shared.health_opener is None and self.shared.health is not None
                else (self.shared.options.health_source or "probe")
            ),
            **({"resumed_from": took.to_event()} if took is not None else {}),
        )
        if took is not None and took.baseline is not None:
            self.parts.loop.emit(
                "pace_decision",
                **Decision(
                    now,
                    "baseline",
                    "taken over from the journaled run (not measured again with its moves "
                    "in flight)",
                    signals={"baseline_ms": {str(b): v for b, v in took.baseline.items()}},
                ).to_event(),
            )

    def _pace_bounds(self) -> Bounds:
        """Floor and ceiling: the ceiling is the keeper's rate (a set_throttle before the first
        poll is the ceiling too), else --throttle."""
        o = self.shared.options
        assert o.throttle is not None  # options.validate: --pace adaptive needs --throttle
        ceiling = self.shared.throttles.rate or o.throttle
        return Bounds(min(o.throttle_floor or max(1, o.throttle // 20), ceiling), ceiling)

    def pace_resume(self, prior: list[dict[str, Any]]) -> None:
        """On resume (``_begin``, before the throttles of the moves in flight are set again):
        keep the journaled pace, and the rates written to the brokers, which those moves
        then keep (not the ceiling, nor the floor)."""
        if not self.adaptive:
            return
        self._pace_memory = pace_memory(prior)
        if self._pace_memory is not None and self._pace_memory.written:
            bounds = self._pace_bounds()
            self.shared.throttles.set_broker_rates(
                {b: bounds.clamp(r) for b, r in self._pace_memory.written.items()}
            )

    def _pace_source(self, brokers: list[int]) -> HealthSource:
        """``--health-source`` (a Prometheus server, the brokers' exporters: falling back to
        the probe while degraded), else the probe; never raising (a source that cannot be
        opened is no signal, warned)."""
        from ..cluster.probe import NoHealth, probe_for
        from ..health.sources import open_source

        gw = self.shared.gw.wrapped  # the RetryingGateway the run wraps its gateway in

        def probe(**kw: Any) -> HealthSource:
            return self.parts.canary.probe_opened(
                probe_for(gw, before_create=self.parts.canary.canary_made, **kw)
            )

        try:
            return open_source(
                self.shared.options.health_source,
                brokers=brokers,
                warn=self._pace_warn,
                default_factory=probe,
            )
        except Exception as e:  # noqa: BLE001 - the run goes on, at a pace that never rises
            return NoHealth(f"health source {self.shared.options.health_source}: {e}")

    def _pace_warn(self, message: str) -> None:
        with self.shared.lock:  # a source may warn from its own worker thread
            self.parts.loop.emit("warning", message=message)

    def _open_health(self, brokers: list[int]) -> None:
        """The opener thread: the source, kept unless the run ended meanwhile (then closed)."""
        src = self._pace_source(brokers)
        with self.shared.lock:
            late = self._health_closed
            if not late:
                self.shared.health = src
        if late:
            _close(src, self.parts.loop.emit)

    def _pace_sample(self) -> HealthSample | None:
        """One sample (None while the source is still opening); a source that raises is no
        signal (warned once per kind of failure)."""
        if self.shared.health is None:
            return None
        self._pace_sampled = True
        try:
            s = self.shared.health.sample()
        except Exception as e:  # noqa: BLE001 - a health source must never stop the run
            s, why = None, f"health source {getattr(self.shared.health, 'name', '?')} failed: {e}"
        else:
            why = s.degraded
        if why != self._pace_degraded:
            self._pace_degraded = why
            if why:
                self.parts.loop.emit(
                    "warning", message=f"{why}; the pace does not rise without a signal"
                )
        return s

    def pace(self, now: float) -> None:
        """One poll of the adaptive pace: sample, decide, apply, journal."""
        if not self.adaptive:
            return
        if self._pacer is None:
            brokers = [b.id for b in self.shared.gw.brokers()]
            if self.shared.health is None and self.shared.health_opener is None:
                self.shared.health_opener = threading.Thread(
                    target=self._open_health, args=(brokers,), name="rk-health-open", daemon=True
                )
                self.shared.health_opener.start()
            with self.shared.lock:  # set_throttle (another thread) reads the controller
                self._pace_start(now, brokers)
        pacer = self._pacer
        assert pacer is not None
        sample = self._pace_sample()
        with self.shared.lock:  # set_throttle (another thread) changes the ceiling under it too
            self._pace_decide(pacer, sample, now)

    def _pace_decide(self, pacer: Controller, sample: HealthSample | None, now: float) -> None:
        decisions = []
        if pacer.needs_baseline:
            if sample is not None and now - self._pace_last_baseline >= BASELINE_EVERY_S:
                self._pace_last_baseline = now
                pacer.observe_baseline(sample)
            assert self._pace_began is not None
            if pacer.baseline_ready() or now - self._pace_began >= BASELINE_TIMEOUT_S:
                decisions.append(pacer.fix_baseline(now))
        # the brokers the moves in flight put bytes on: their leaders (the first of the
        # replicas they started from) and new replicas; one they only remove carries none,
        # and a raise on its reading met the load only once it led the next move
        busy = {
            b
            for ms in self.shared.index.of(MOVING, READY)
            for b in (
                *ms.original[:1],
                *(r for r in ms.move.replicas if r not in ms.original),
            )
        }
        decisions += pacer.step(sample, now, busy, self._bound())
        self._pace_write(now)
        broker_caps = tuple(sorted(pacer.caps.items()))
        if broker_caps != self.shared.caps.broker_caps:  # the scheduler's next decision reads them
            self.shared.caps = replace(self.shared.caps, broker_caps=broker_caps)
        for d in decisions:
            self.parts.loop.emit("pace_decision", **d.to_event())
        if not self._pace_sampled:
            assert self._pace_began is not None
            if now - self._pace_began >= OPEN_HOLD_S:
                self._pace_sampled = True
                self.parts.loop.emit(
                    "warning",
                    message=f"the health source did not open within {OPEN_HOLD_S:.0f}s: the "
                    "moves start without it, at a pace that does not rise without a signal",
                )
        self.shared.pace_hold = pacer.needs_baseline or pacer.paused or not self._pace_sampled
        if (
            sample is not None
            and now - self._pace_last_sample >= self.shared.options.sample_interval
        ):
            self._pace_last_sample = now
            self.parts.loop.emit("pace_sample", **self._pace_fields(sample))

    def _bound(self) -> frozenset[int]:
        """The brokers whose moves copy at their rate, from the bytes the run's progress
        samples read (no call of its own); the rates written are the next interval's."""
        if self._copy_rates is None:
            self._copy_rates = CopyRates()
        moves = (
            Copying(
                ms.tp,
                ms.original[0] if ms.original else None,  # the leader its fetchers copy from
                adding := tuple(b for b in ms.step_target if b not in ms.step_from),
                (*ms.original, *ms.move.replicas),
                ms.bytes_copied,
                ms.item.size_bytes * len(adding),
                ms.step_submitted_at,
            )
            for ms in self.shared.index.of(MOVING)
        )
        moves_of = self.shared.moves
        return self._copy_rates.read(
            moves,
            self.shared.last_sample,
            self.shared.throttles.broker_rates,
            lambda tp: tp in moves_of and moves_of[tp].status in (READY, DONE),
        )

    def _pace_write(self, now: float) -> None:
        """The controller's rates, through the ramp, to the keeper (written at the next sync
        when they changed)."""
        assert self._pacer is not None and self._ramp is not None
        if not self._ramp_started and self.shared.pace_hold:
            return  # nothing submitted yet: the start rates written stay until the first move
        self._ramp_started = True
        self._ramp.retarget(self._pacer.rates, now, self._pacer.ramp_steps)
        rates = self._ramp.at(now)
        if rates != dict(self.shared.throttles.broker_rates):
            self.shared.throttles.set_broker_rates(rates)

    def _pace_fields(self, sample: HealthSample) -> dict[str, Any]:
        """Per broker: rate, p99/p50 measured and the limit (the panel's and bench's series)."""
        pacer = self._pacer
        assert pacer is not None
        brokers = {}
        written = self.shared.throttles.broker_rates
        for b, r in sorted(pacer.rates.items()):
            h = sample.brokers.get(b)
            brokers[str(b)] = {
                "rate": r,
                "written": written.get(b, r),  # on its way to ``rate`` (pace_ramp.Ramp)
                "produce_p99_ms": h.produce_p99_ms if h else None,
                "produce_p99_low_ms": h.produce_p99_low_ms if h else None,
                "produce_p50_ms": h.produce_p50_ms if h else None,
                "limit_ms": pacer.limit_of(b),
            }
        out: dict[str, Any] = {
            "signal_ts": sample.ts,
            "source": sample.source,
            "brokers": brokers,
            "paused": pacer.paused,
        }
        if sample.under_min_isr is not None:
            outside = sorted(sample.under_min_isr - pacer.plan_partitions, key=str)
            out["under_min_isr"] = len(outside)
            out["under_min_isr_with_elr"] = elr_signals(sample, outside)["with_elr"]
        if sample.degraded:
            out["degraded"] = sample.degraded
        return out

    def set_broker_throttles(self, rates: Mapping[int, int]) -> None:
        """Per-broker replication rates (bytes/s) over the run's throttle for the rest of the
        run (brokers not named keep it; ``{}`` goes back to one rate): written at the next
        poll, journaled as ``throttle_changed`` with ``broker_rates``. Only a run started
        with a throttle and not ``--pace adaptive`` (which sets them itself)."""
        with self.shared.lock:
            if not self.shared.throttles.active or self.shared.options.throttle is None:
                raise UsageError("this run has no throttle to change (start it with --throttle)")
            if self.adaptive:
                raise UsageError("--pace adaptive sets the per-broker rates itself")
            self.shared.throttles.set_broker_rates({int(b): r for b, r in rates.items()})
            self.shared.eta.restart()
            self.parts.loop.emit(
                "throttle_changed",
                rate=self.shared.throttles.rate,
                broker_rates={
                    str(b): r for b, r in sorted(self.shared.throttles.broker_rates.items())
                },
            )
        self.shared.wake.set()

    def pace_caps(self, caps: Caps, changes: Mapping[str, Any]) -> Caps:
        """``set_caps`` on an adaptive run: a new ``max_moves_per_broker`` is every broker's
        maximum (their own caps come under it)."""
        if self._pacer is None or "max_moves_per_broker" not in changes:
            return caps
        self._pacer.set_cap_max(caps.max_moves_per_broker)
        return replace(caps, broker_caps=tuple(sorted(self._pacer.caps.items())))

    def pace_ceiling(self, rate: int) -> None:
        """``set_throttle`` on an adaptive run: the new ceiling (rates above it come down)."""
        if self._pacer is None:
            return
        for d in self._pacer.set_ceiling(rate):
            self.parts.loop.emit("pace_decision", **d.to_event())
        self._pace_write(self.shared.clock())

    def pace_close(self) -> None:
        """The health source closed (the probe's canary topic deleted), on every exit path;
        one still opening is closed by its opener, which the run's end waits for (a process
        that exits at once would otherwise leave the canary topic behind)."""
        with self.shared.lock:
            self._health_closed = True
            h, self.shared.health = self.shared.health, None
        if h is not None:
            _close(h, self.parts.loop.emit)
        opener = self.shared.health_opener
        if opener is not None and opener is not threading.current_thread():
            opener.join(OPEN_JOIN_S)
        self.parts.canary.canaries_closed()


def _close(source: HealthSource, emit: Any) -> None:
    try:
        source.close()
    except Exception as e:  # noqa: BLE001 - the run's end must go on
        log.warning("closing the health source failed: %s", e)
        emit("warning", message=f"closing the health source failed: {e}")
