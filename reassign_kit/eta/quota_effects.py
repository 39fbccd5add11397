"""What Kafka's replication quota does to the streams ``model.simulate`` plays: the windows
replayed after a throttle change (``replay_caps``), the credit an end idle within them bursts
(``burst_idle``). Pure. (The fetch a receiving end loses when one of its streams ends among
others is the simulator's: in the ETA it did not earn its keep, bench_heldout_ablation.)"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..cluster.quota import QUOTA_WINDOW_S, Windows, idle_credit

Flow = Any  # ``model.Flow`` (its ``src`` and ``left``), not imported: ``model`` imports this

REPLAY_STEP_S = QUOTA_WINDOW_S / 2  # the replay's step: half a window


def copy_windows(w: Windows) -> Windows:
    """The simulation's own copy: replaying the windows must not change the run's."""
    out = Windows(w.n, w.size_s)
    out.wins = [list(x) for x in w.wins]
    return out


def replay_caps(
    wins: Mapping[tuple[str, int], Windows],
    at: float,
    out_cap: Mapping[int, float],
    in_cap: Mapping[int, float],
    burst: float,
    held: set[tuple[str, int]],
) -> tuple[dict, dict]:
    """Each end's capacity over the next replay step as its quota windows allow: below its
    capacity when they are full (a stall), above it by ``burst`` of the credit beyond; by all
    of it once they stalled the end (added to ``held``): a stall and its catch-up are one
    mechanism, Kafka's windows (bench_eta's throttle x2 then x1: the quota stalled every end
    9.5 s, let 19 MiB through in a second, stalled again; replayed with the catch-up at the
    burst measured, 0 on a plan whose ends never idled, the stall ran 5-6 s long)."""
    o_cap, i_cap = dict(out_cap), dict(in_cap)
    for (kind, b), w in wins.items():
        caps = o_cap if kind == "o" else i_cap
        if b not in caps:
            continue
        base = caps[b]
        allow = w.credit(at + REPLAY_STEP_S, base) / REPLAY_STEP_S  # by the step's end
        if allow < base:
            held.add((kind, b))
        share = 1.0 if (kind, b) in held else burst
        caps[b] = allow if allow < base else base + share * (allow - base)
    return o_cap, i_cap


def burst_idle(
    copying: list[tuple[Flow, int]],
    before: set[tuple[str, int | None]],
    last_busy: dict[tuple[str, int | None], float],
    t: float,
    out_cap: Mapping[int, float],
    in_cap: Mapping[int, float],
    share: float = 1.0,
) -> set[tuple[str, int | None]]:
    """The quota's catch-up at ``t`` (see ``simulate``): each end copying again after an
    idle spell within the windows bursts its credit, shared by its streams; a stream takes
    what both its ends give (an end copying all along gives nothing: it is at its limit).
    Returns the ends copying now."""
    ends = {("i", b) for _, b in copying} | {("o", f.src) for f, _ in copying if f.src is not None}
    woke = {}
    for e in ends - before:
        if e in last_busy:
            cap = (in_cap if e[0] == "i" else out_cap).get(e[1], 0.0)
            c = share * idle_credit(t - last_busy[e], cap)
            if c > 0:
                woke[e] = c
    if woke:
        count: dict[tuple[str, int | None], int] = {}
        for f, b in copying:
            for e in (("i", b), ("o", f.src)):
                count[e] = count.get(e, 0) + 1
        for f, b in copying:
            give = [woke.get(("i", b), 0.0) / count[("i", b)]]
            if f.src is not None:
                give.append(woke.get(("o", f.src), 0.0) / count[("o", f.src)])
            f.left[b] = max(0.0, f.left[b] - min(give))
            if f.left[b] <= 1e-6:
                f.left[b] = 0.0
    return ends
