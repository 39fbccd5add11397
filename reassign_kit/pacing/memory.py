"""What a resumed adaptive run takes over from the run it resumes: the pace as the
journal left it. Pure.

A resumed run started its pace afresh: every broker written the ceiling while the throttles
of the moves in flight were set again, then the floor, then ramped to the middle of the
bounds, and a relative objective's baseline measured again with those moves copying. A
broker the run had backed off (its latency over the objective) was sent back up at once,
and the baseline read the run's own load as the cluster's quiet. What the journal holds is
what the run had learnt: each broker's rate (``pace_decision``, ``pace_sample``), the rate
written to it (the ramp's step), its cap on moves, the baseline (its ``baseline``
decision)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .controller import Controller


@dataclass(frozen=True)
class PaceMemory:
    """The pace at the end of a journaled run: per broker the controller's rate, the rate
    written to the broker (lower while a raise ramps), the cap on moves; the baseline of a
    relative objective (None: not fixed yet)."""

    rates: dict[int, int] = field(default_factory=dict)
    written: dict[int, int] = field(default_factory=dict)
    caps: dict[int, int] = field(default_factory=dict)
    baseline: dict[int, float] | None = None

    def to_event(self) -> dict[str, Any]:
        """For the resumed run's ``pace_started`` (``resumed_from``)."""
        return {
            "rates": {str(b): r for b, r in sorted(self.rates.items())},
            "written": {str(b): r for b, r in sorted(self.written.items())},
            "caps": {str(b): c for b, c in sorted(self.caps.items())},
            "baseline_ms": None
            if self.baseline is None
            else {str(b): v for b, v in sorted(self.baseline.items())},
        }


def pace_memory(events: Iterable[Mapping[str, Any]]) -> PaceMemory | None:
    """The pace the journal's events leave (None: no adaptive pace journaled). Read in
    order; a resumed run's own ``pace_started`` carries what it took over."""
    started = False
    rates: dict[int, int] = {}
    written: dict[int, int] = {}
    caps: dict[int, int] = {}
    baseline: dict[int, float] | None = None
    for e in events:
        kind = e.get("event")
        if kind == "pace_started":
            started = True
            took = e.get("resumed_from") or {}
            rates = {int(b): int(r) for b, r in (took.get("rates") or {}).items()}
            written = {int(b): int(r) for b, r in (took.get("written") or {}).items()}
            caps = {int(b): int(c) for b, c in (took.get("caps") or {}).items()}
        elif kind == "pace_sample":
            for b, row in (e.get("brokers") or {}).items():
                if row.get("rate") is not None:
                    rates[int(b)] = int(row["rate"])
                if row.get("written") is not None:
                    written[int(b)] = int(row["written"])
        elif kind == "pace_decision":
            if e.get("action") == "baseline":
                got = (e.get("signals") or {}).get("baseline_ms") or {}
                baseline = {int(b): float(v) for b, v in got.items()}
            elif e.get("broker") is not None and e.get("new_rate") is not None:
                b, new = int(e["broker"]), int(e["new_rate"])
                rates[b] = new
                if b in written and new < written[b]:  # a decrease is written at once
                    written[b] = new
                if e.get("new_cap") is not None:
                    caps[b] = int(e["new_cap"])
    if not started:
        return None
    return PaceMemory(rates, written, caps, baseline)


def take_over(mem: PaceMemory, pacer: Controller) -> PaceMemory:
    """``mem`` into a resumed run's ``pacer``: its brokers' rates within the bounds, caps
    within the maximum, the baseline where one is still to be measured. Returns what was
    taken (the written rates clamped too, the ramp's start)."""
    rates = {b: pacer.bounds.clamp(r) for b, r in mem.rates.items() if b in pacer.rates}
    written = {b: pacer.bounds.clamp(r) for b, r in mem.written.items() if b in pacer.rates}
    pacer.rates.update(rates)
    caps = {}
    if pacer.cap_max:
        caps = {b: min(c, pacer.cap_max) for b, c in mem.caps.items() if b in pacer.rates}
        pacer.caps.update(caps)
    if mem.baseline is not None and pacer.needs_baseline:
        pacer.baseline = {b: v for b, v in mem.baseline.items() if b in pacer.rates}
    return PaceMemory(rates, written, caps, mem.baseline)


def orphan_canaries(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The probe's canary topics a journaled run made (``probe_canary``, journaled before
    the topic was made) and did not see deleted (``probe_canary_deleted``): what a run
    killed with its probe up left on the cluster, for its resume or ``--cancel --journal``
    to delete."""
    made: dict[str, None] = {}
    for e in events:
        if e.get("event") == "probe_canary" and e.get("canary"):
            made[str(e["canary"])] = None
        elif e.get("event") == "probe_canary_deleted":
            made.pop(str(e.get("canary")), None)
    return list(made)
