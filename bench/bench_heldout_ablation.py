"""The ETA's terms removed one at a time, judged on held-out shapes (the ablation).

The ETA starts from the physical bound (``bound``: the bytes each broker end must still send
or receive over the throttle, the busiest end) and adds terms; each row below removes one
term from today's ETA (``full``) and gives the median ETA error from 25% of the bytes (after
the last throttle change or broker return) per shape, on:

- the simulator: each seed's shape run once (``bench_heldout.run_shape``), its journal then
  replayed through the run's ETA (``eta_replay.replay``) with the term removed;
- the sandbox: the journals ``bench_heldout_sandbox.py --out DIR`` kept, replayed the same way.

A term earns its keep when the ETA without it is worse on the judged half (odd seeds) than
with it; the fit half (even seeds) is shown beside it. The journal's own ``eta_s`` (the run's
ETA) is the ``run`` row: the replay's ``full`` row should match it (on journals of older code
it is that code's ETA). ``VARIANTS`` (``+name``) are changes tried rather than terms removed:
a change goes in only when the fit half says so. ``--phases``: the full ETA's signed error
by the run's phase (share of the bytes moved, the last 5 s), per place and sandbox shape.

Usage: nice -n 10 .venv/bin/python bench/bench_heldout_ablation.py [--seeds 0-47 --half judged]
  (--seeds defaults to 0-47; --seeds '' replays only the --sandbox journals)
           [--sandbox DIR[,DIR]] [--terms full,pace,+burst1,...] [--phases] [--json OUT]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from bench_heldout import errors, parse_seeds, run_shape  # noqa: E402
from eta_replay import replay  # noqa: E402
from heldout_shapes import shape_of  # noqa: E402

from reassign_kit.eta import estimate, model, pace, share  # noqa: E402

FROM_SHARE = 0.25


def _patch(obj: Any, name: str, value: Any) -> Callable[[], None]:
    old = getattr(obj, name)
    setattr(obj, name, value)
    return lambda: setattr(obj, name, old)


def _no_burst() -> list[Callable[[], None]]:
    def no_burst(copying, before, last_busy, t, out_cap, in_cap, burst=1.0):  # noqa: ANN001, ANN202
        ends = {("i", b) for _, b in copying}
        return ends | {("o", f.src) for f, _ in copying if f.src is not None}

    return [_patch(model, "burst_idle", no_burst)]


def _no_quota() -> list[Callable[[], None]]:
    return [
        *_no_burst(),
        _patch(estimate.EndBytes, "windows", lambda self, ts: {}),
    ]


def _no_lag() -> list[Callable[[], None]]:
    update = estimate.RunEta.update

    def no_tail(self, ts, received, left, inflight, cap=None, tail=0.0, **k):  # noqa: ANN001, ANN202
        k["tail_spread"] = 0.0
        return update(self, ts, received, left, inflight, cap, 0.0, **k)

    return [_patch(estimate.RunEta, "update", no_tail)]


def _all_at_once() -> list[Callable[[], None]]:
    def decide(pending, active, caps, ready=(), cluster_inflight=0):  # noqa: ANN001, ANN202
        return SimpleNamespace(submit=[i.tp for i in ready] + [i.tp for i in pending])

    return [_patch(model, "decide", decide)]


# each term and how it is removed (in-process patches of the ETA's own modules)
TERMS: dict[str, Callable[[], list[Callable[[], None]]]] = {
    "full": list,
    # the run's measured pace taking over the model's estimate
    "pace": lambda: [_patch(pace.RunPace, "estimate", lambda self, *a, **k: None)],
    # Kafka's quota windows: replayed after a change, idle credit burst, holds not measured
    "quota": _no_quota,
    # its parts alone: the idle credit burst; the windows replayed after a throttle change
    "burst": _no_burst,
    "replay": lambda: [_patch(estimate.EndBytes, "windows", lambda self, ts: {})],
    # the completion lag after a step's last byte (and its spread)
    "lag": _no_lag,
    # the share and the pace measured anew when a stalled broker copies again
    "resume": lambda: [_patch(estimate.RunEta, "_resumed", lambda self, ts: None)],
    # an interval in which a move came and went unseen, not counted in the share
    "unseen": lambda: [_patch(share.ShareMeter, "unseen", lambda self, moves: False)],
    # brokers taking in nothing for a while named stalled (the pace and share anew on return)
    "stalled": lambda: [_patch(estimate.RunEta, "_stalled", lambda self, *a: [])],
    # the credit a new stream bursts, expected in the share's interval
    "woke": lambda: [_patch(share.ShareMeter, "woke", lambda self, *a: 0.0)],
    # the queued moves admitted by the run's scheduler (batches, caps, incremental)
    "schedule": _all_at_once,
    # the pace measured again one quota span after a throttle raise (not QUOTA_REPLAY_S)
    "raisedhold": lambda: [_patch(estimate, "RAISED_HOLD_S", estimate.QUOTA_REPLAY_S)],
}


def _burst_prior() -> list[Callable[[], None]]:
    init = share.ShareMeter.__init__

    def with_prior(self, window_s):  # noqa: ANN001, ANN202
        init(self, window_s)
        self.burst = 1.0

    return [_patch(share.ShareMeter, "__init__", with_prior)]


def _pace_burst() -> list[Callable[[], None]]:
    simulate = estimate.simulate

    def with_credit(*a, **k):  # noqa: ANN002, ANN003, ANN202
        if k.get("on_polls") is False:  # the pace's model: the idle credit whole
            k["burst"] = 1.0
        return simulate(*a, **k)

    return [_patch(estimate, "simulate", with_credit)]


# changes tried against the sandbox's misses (bench/RESULTS.md, "Why the sandbox shapes
# miss"): each row is the ETA *with* the change; of them only the pace's ceiling at 1.1 is
# in (the fit half chose it; ``+ceil5`` is the ETA before it)
VARIANTS: dict[str, Callable[[], list[Callable[[], None]]]] = {
    # Kafka's full idle credit until a burst is measured (the what-if's simulator gives it)
    "+burst1": _burst_prior,
    # the ends' quota windows replayed at every sample, not only after a throttle change
    "+replay": lambda: [_patch(share.ShareMeter, "replaying", lambda self, ts: True)],
    # the pace measured over one quota span / three, not two
    "+pace11": lambda: [_patch(pace, "PACE_WINDOW_S", 11.0)],
    "+pace33": lambda: [_patch(pace, "PACE_WINDOW_S", 33.0)],
    # the model's prior weighing 10 s of the pace, not 5 s
    "+prior10": lambda: [_patch(pace, "PACE_PRIOR_S", 10.0)],
    # the pace's ceiling: the throttle itself, or the 5x it was before 1.1
    "+ceil1.0": lambda: [_patch(pace, "PACE_RANGE", (0.2, 1.0))],
    "+ceil5": lambda: [_patch(pace, "PACE_RANGE", (0.2, 5.0))],
    # the pace measured again 11 / 22 s after a throttle change, not 44 s
    "+hold11": lambda: [_patch(estimate, "QUOTA_REPLAY_S", 11.0)],
    "+hold22": lambda: [_patch(estimate, "QUOTA_REPLAY_S", 22.0)],
    # the pace's model with Kafka's whole idle credit (a burst it gave is not pace)
    "+paceburst": _pace_burst,
}


def _undo_all(fns: list[Callable[[], list[Callable[[], None]]]]) -> list[Callable[[], None]]:
    return [u for f in fns for u in f()]


@contextlib.contextmanager
def removed(term: str) -> Iterator[None]:
    """``term`` removed (a name of ``TERMS``), or changes applied (``VARIANTS`` names joined
    by ``&``, e.g. ``+burst1&+hold22``)."""
    if term in TERMS:
        undo = TERMS[term]()
    else:
        undo = _undo_all([VARIANTS[v] for v in term.split("&")])
    try:
        yield
    finally:
        for u in reversed(undo):
            u()


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def replay_error(events: list[dict[str, Any]], end: float, after: float) -> dict[str, Any]:
    """Median |ETA - truth| / truth of the replayed ETA (and of the run's own, ``run``) over
    the samples from ``FROM_SHARE`` of the bytes, after ``after``; and the range's hold."""
    rows = replay(events)
    ours, run, held = [], [], []
    signed: list[tuple[float, float, float]] = []  # (share moved, truth, signed error)
    for r in rows:
        truth = end - r["ts"]
        moved = 1 - r["left"] / r["total"]
        if moved < FROM_SHARE or truth <= 0 or r["ts"] < after:
            continue
        ours.append(abs(r["eta"] - truth) / truth if r["eta"] is not None else 1.0)
        signed.append((moved, truth, (r["eta"] - truth) / truth if r["eta"] is not None else 1.0))
        run.append(abs(r["journal"] - truth) / truth if r["journal"] is not None else 1.0)
        rng = r["range"]
        held.append(bool(rng) and rng[0] <= truth <= rng[1])
    med = statistics.median
    return {
        "n": len(ours),
        "ours": med(ours) if ours else None,
        "run": med(run) if run else None,
        "held": (sum(held), len(held)),
        "signed": signed,
    }


# the run's phases a sample falls in: its share of the bytes moved, or its last seconds
PHASES: dict[str, Callable[[float, float], bool]] = {
    "25-50%": lambda moved, truth: moved < 0.5,
    "50-75%": lambda moved, truth: 0.5 <= moved < 0.75,
    "75-100%": lambda moved, truth: moved >= 0.75,
    "last 5 s": lambda moved, truth: truth <= 5.0,
}


def phases(cases: list[dict[str, Any]], term: str = "full") -> str:
    """Per place, per phase of the run: the median signed error (the ETA long: +) and the
    median error of the samples in it; per sandbox shape, the signed median per phase."""
    out = ["```text", f"{'where':<8} {'phase':<9} {'signed':>7} {'error':>6} {'samples':>8}"]
    for where in ("sim", "sandbox"):
        part = [c for c in cases if c["where"] == where and "terms" in c]
        for name, inside in PHASES.items():
            errs = [e for c in part for m, t, e in c["terms"][term]["signed"] if inside(m, t)]
            if errs:
                med = statistics.median
                out.append(
                    f"{where:<8} {name:<9} {med(errs):>+7.1%} {med(map(abs, errs)):>6.1%} "
                    f"{len(errs):>8}"
                )
    for c in cases:
        if c["where"] != "sandbox" or "terms" not in c:
            continue
        cells = []
        for name, inside in PHASES.items():
            errs = [e for m, t, e in c["terms"][term]["signed"] if inside(m, t)]
            cells.append(f"{name} {statistics.median(errs):+.0%}/{len(errs)}" if errs else "-")
        out.append(f"{c.get('run', ''):<10} {c['seed']:>3} {c['half']:<6} " + "  ".join(cells))
    out.append("```")
    return "\n".join(out)


def sim_cases(seeds: list[int], workdir: Path) -> list[dict[str, Any]]:
    """Each seed's shape run once on the simulator: its journal, end, baselines."""
    out = []
    for seed in seeds:
        shape = shape_of(seed)
        journal = workdir / f"seed-{seed}.jsonl"
        res = run_shape(shape, journal)
        base = errors(res["points"], res["end"], res["from"])
        out.append(
            {"where": "sim", "seed": seed, "half": shape.half, "journal": str(journal),
             "end": res["end"], "after": res["from"], "bound": base["bound"],
             "since": base["since"]}
        )  # fmt: skip
        print(f"sim seed {seed}: ran ({base['n']} samples)", flush=True)
    return out


def sandbox_cases(d: Path) -> list[dict[str, Any]]:
    rows = json.loads((d / "rows.json").read_text())
    return [
        {"where": "sandbox", "seed": r["seed"], "half": r["half"], "journal": r["journal"],
         "end": r["end_ts"], "after": r["after_ts"], "bound": r["bound"], "since": r["since"],
         "run": d.name}
        for r in rows
    ]  # fmt: skip


def ablate(cases: list[dict[str, Any]], terms: list[str]) -> None:
    for c in cases:
        events = read(Path(c["journal"]))
        c["terms"] = {}
        for term in terms:
            with removed(term):
                c["terms"][term] = replay_error(events, c["end"], c["after"])
        print(
            f"{c['where']} seed {c['seed']}: "
            + " ".join(f"{t} {pct(v['ours'])}" for t, v in c["terms"].items()),
            flush=True,
        )


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def summary(cases: list[dict[str, Any]], terms: list[str]) -> str:
    """Per place and half, per term removed: shapes within 10%, no worse than the better
    baseline, median of the shapes' median errors, the range's hold."""
    head = f"{'where':<8} {'half':<6} {'without':<10} {'<=10%':>7} {'<=base':>7} {'median':>7} {'held':>6}"
    out = ["```text", head, "-" * len(head)]
    for where in ("sim", "sandbox"):
        for half in ("fit", "judged"):
            part = [c for c in cases if c["where"] == where and c["half"] == half and "terms" in c]
            part = [c for c in part if c["terms"]["full"]["n"]]
            if not part:
                continue
            rows = [("run", "run")] + [(t, "ours") for t in terms]
            for term, key in rows:
                src = "full" if term == "run" else term
                errs = [c["terms"][src][key] for c in part]
                ok = sum(e <= 0.10 for e in errs)
                base = sum(
                    e <= min(c["bound"], c["since"]) + 1e-9 for e, c in zip(errs, part, strict=True)
                )
                h = [c["terms"][src]["held"] for c in part]
                held = sum(x[0] for x in h) / max(1, sum(x[1] for x in h))
                name = "(run)" if term == "run" else ("nothing" if term == "full" else term)
                out.append(
                    f"{where:<8} {half:<6} {name:<10} {ok:>3}/{len(part):<3} "
                    f"{base:>3}/{len(part):<3} {pct(statistics.median(errs)):>7} {held:>6.0%}"
                )
            for name, key in (("bound", "bound"), ("since", "since")):
                errs = [c[key] for c in part]
                ok = sum(e <= 0.10 for e in errs)
                out.append(
                    f"{where:<8} {half:<6} {'=' + name:<10} {ok:>3}/{len(part):<3} {'':>7} "
                    f"{pct(statistics.median(errs)):>7} {'':>6}"
                )
            out.append("-" * len(head))
    out.append("```")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # the default is the held-out set, so ``make bench`` (no arguments) runs the ablation
    ap.add_argument("--seeds", default="0-47", help="simulator seeds, e.g. 0-47 ('': skip)")
    ap.add_argument("--half", choices=("fit", "judged", "both"), default="both")
    ap.add_argument("--sandbox", help="bench_heldout_sandbox --out DIRs to replay, DIR[,DIR]")
    ap.add_argument(
        "--terms",
        default=",".join(TERMS),
        help=f"terms to remove ({', '.join(TERMS)}) or changes to try ({', '.join(VARIANTS)}; "
        "joined by &: all of them)",
    )
    ap.add_argument("--phases", action="store_true", help="the full ETA's error by phase")
    ap.add_argument("--json", help="write the cases here too")
    args = ap.parse_args()
    terms = [t for t in args.terms.split(",") if t]
    if "full" not in terms:
        terms.insert(0, "full")
    t0 = time.time()
    cases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="heldout-abl-") as d:
        if args.seeds:
            seeds = [s for s in parse_seeds(args.seeds) if args.half in ("both", shape_of(s).half)]
            cases += sim_cases(seeds, Path(d))
        for d in (args.sandbox or "").split(","):
            cases += sandbox_cases(Path(d)) if d else []
        ablate(cases, terms)
    print()
    print(
        "`nice -n 10 .venv/bin/python bench/bench_heldout_ablation.py "
        + " ".join(sys.argv[1:])
        + "`"
    )
    print(summary(cases, terms))
    if args.phases:
        print(phases(cases))
    print(f"wall {time.time() - t0:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(cases, indent=1, default=str))


if __name__ == "__main__":
    main()
