"""A journal's adaptive pace replayed (``reassign-kit whatif`` on a journal): what
another tuning of ``pacing.Controller`` would have decided on the signals the run journaled.
Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import UsageError
from ..health.signals import BrokerHealth, HealthSample
from .controller import Bounds, Controller, Decision, Objective


def replay(events: Iterable[Mapping[str, Any]], **overrides: Any) -> list[Decision]:
    """A journal's pace replayed (``whatif.replay_pace``): a controller set up as the run's
    (``pace_started``: objective, bounds, start rate, step; ``run_started``: settle time; a
    relative objective's baseline from its ``baseline`` decision), stepped on the signals the
    run journaled (each ``pace_sample``, and the broker signals behind each ``pace_decision``)
    in time order, with ``overrides`` of the controller's parameters (``beta``, ``settle_s``,
    ``step``, ``start``) — what another tuning would have decided on the same signals. The
    busy brokers are not journaled: every broker counts as busy. Pure."""
    events = list(events)
    started = next((e for e in events if e.get("event") == "pace_started"), None)
    if started is None:
        raise UsageError("the journal has no adaptive pace (no pace_started event)")
    run = next((e for e in events if e.get("event") == "run_started"), {})
    opts = run.get("options") or {}
    samples: list[HealthSample] = []
    brokers: set[int] = set()
    for e in events:
        if e.get("event") == "pace_sample":
            per = {
                int(b): BrokerHealth(
                    int(b),
                    produce_p99_ms=row.get("produce_p99_ms"),
                    produce_p99_low_ms=row.get("produce_p99_low_ms"),
                )
                for b, row in (e.get("brokers") or {}).items()
            }
            brokers |= set(per)
            samples.append(
                HealthSample(
                    float(e.get("signal_ts") or e["ts"]), "replay", per, None, e.get("degraded")
                )
            )
        elif e.get("event") == "pace_decision" and e.get("broker") is not None:
            sig = e.get("signals") or {}
            b = int(e["broker"])
            brokers.add(b)
            h = BrokerHealth(
                b,
                produce_p99_ms=sig.get("produce_p99_ms"),
                produce_p99_low_ms=sig.get("produce_p99_low_ms"),
            )
            ts = float(sig.get("ts") or e["ts"])
            samples.append(HealthSample(ts, "replay", {b: h}, None, sig.get("degraded")))
    kw: dict[str, Any] = {
        "start": started.get("start_rate"),
        "step": started.get("step"),
        "settle_s": float(opts.get("pace_settle_s") or 5.0),
        "cap_max": opts.get("max_moves_per_broker"),
    }
    kw.update(overrides)
    c = Controller(
        Objective.parse(str(started["objective"])),
        Bounds(int(started["floor"]), int(started["ceiling"])),
        sorted(brokers),
        **kw,
    )
    if c.needs_baseline:
        base = next(
            (
                e
                for e in events
                if e.get("event") == "pace_decision" and e.get("action") == "baseline"
            ),
            None,
        )
        got = ((base or {}).get("signals") or {}).get("baseline_ms") or {}
        c.baseline = {int(b): float(v) for b, v in got.items()}
    out: list[Decision] = []
    for s in sorted(samples, key=lambda x: x.ts):
        out += c.step(s, s.ts)
    return out
