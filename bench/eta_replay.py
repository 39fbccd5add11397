"""Replay a paced run's journal through the run's ETA (``eta.estimate.RunEta``), offline.

Every input of ``RunEta.update`` is in the journal: the moves' submissions, step completions
and completions (timestamps), and at each ``sample`` the bytes each moving replica holds,
each broker's received / left / in-flight counts, the throttle and the completion lag. This
rebuilds the run's moves at each sample and recomputes the ETA and its range, so a change to
the ETA can be judged on the journals of a bench_eta run (bench/out/eta-run-N.jsonl) without a
sandbox. The recomputed ETA matches the journal's ``eta_s`` when the code is the run's.

Usage: .venv/bin/python bench/eta_replay.py bench/out/eta-run-1.jsonl [...] [--trace]
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from reassign_kit.errors import ReassignKitError
from reassign_kit.eta.estimate import RunEta
from reassign_kit.eta.lag import LagMeter
from reassign_kit.model import Move, TopicPartition
from reassign_kit.moves.schedule import Caps, item_for
from reassign_kit.moves.steps import plan_steps
from reassign_kit.moves.table import MoveIndex, MoveState

FROM_PCT = 25


def _tp(e: Mapping[str, Any]) -> TopicPartition:
    return TopicPartition(e["topic"], int(e["partition"]))


def _caps(opts: Mapping[str, Any]) -> Caps:
    return Caps(
        batch_size=int(opts.get("batch_size") or 0),
        incremental=bool(opts.get("incremental")),
        max_moves_per_broker=opts.get("max_moves_per_broker"),
        max_leader_moves=opts.get("max_leader_moves"),
        cluster_max_reassignments=opts.get("cluster_max_reassignments"),
    )


def _steps(current: tuple[int, ...], target: tuple[int, ...], r: int | None) -> list:
    """The steps the run planned at the submission (KIP-435's with R; the journal names each
    step only as it goes)."""
    if r is None:
        return [target]
    try:
        return [tuple(s) for s in plan_steps(current, target, r)] or [target]
    except ReassignKitError:
        return [target]


def replay(events: Iterable[Mapping[str, Any]], relag: bool = False) -> list[dict[str, Any]]:
    """Per ``sample`` of the journal carrying an ETA: its ts, the journal's eta_s / range and
    the recomputed ones, bytes left and total. ``relag``: the completion lag recomputed as the
    run does it now (``track.full_since``) instead of the journal's ``tail_s``."""
    events = list(events)
    start = next(e for e in events if e["event"] == "run_started")
    opts = start.get("options") or {}
    poll_s = float(opts.get("poll_interval_ms") or 500) / 1000
    caps = _caps(opts)
    per_poll = int(opts.get("max_elections_per_poll") or 100)
    elect = bool(opts.get("elect_leaders"))
    targets = {
        TopicPartition(p["topic"], int(p["partition"])): tuple(p["replicas"])
        for p in start["plan"]["partitions"]
    }
    sub = {_tp(e): e for e in events if e["event"] == "submitted"}
    index = MoveIndex()
    moves: dict[TopicPartition, MoveState] = {}
    for tp in sorted(sub, key=lambda t: (sub[t]["ts"], t.partition)):
        e = sub[tp]
        item = item_for(tp, tuple(e["current"]), targets[tp], None, int(e["size_bytes"]))
        item = type(item)(item.tp, item.brokers, item.moves_leader, item.size_bytes, False,
                          int(e.get("batch") or 0))  # fmt: skip
        ms = MoveState(Move(tp, targets[tp]), item)
        ms.original = tuple(e["current"])
        moves[tp] = ms
        index.add(ms)
    r = opts.get("parallel_replica_count")
    eta = RunEta(poll_s=poll_s)
    queued = 0
    lag = LagMeter()  # the completion lag as the run measures it now (``relag``)
    prev: float | None = None
    out: list[dict[str, Any]] = []
    for e in events:
        kind = e["event"]
        ts = float(e["ts"])
        if kind == "intent" and e.get("action") == "alter":
            ms = moves.get(_tp(e))
            if ms is not None and not ms.steps:
                ms.original = tuple(e["original"])
        elif kind == "submitted":
            ms = moves[_tp(e)]
            ms.steps = _steps(tuple(e["current"]), tuple(e["target"]), r)
            ms.submit(ts, e.get("batch"))
        elif kind == "step_submitted":
            ms = moves[_tp(e)]
            k = int(e["step"])
            if int(e.get("steps") or 1) != len(ms.steps) or len(ms.steps) < k:
                ms.steps = [*ms.steps[: k - 1], tuple(e["target"])]  # replanned
            ms.steps[k - 1] = tuple(e["target"])
            ms.submit_step(ts, k, tuple(e["target"]))
        elif kind == "step_completed":
            moves[_tp(e)].complete_step(e.get("replicas") or (), ts)
            lag.landed(_tp(e), ts)
        elif kind == "completed":
            moves[_tp(e)].complete(ts, e.get("replicas") or ())
            lag.landed(_tp(e), ts)
        elif kind == "election_queued":
            queued += 1
        elif kind in ("leader_elected", "election_failed", "election_dropped"):
            queued = max(0, queued - 1)
        elif kind == "throttle_changed":
            eta.restart()
        elif kind == "sample" and e.get("bytes_total"):
            copied: dict[tuple[TopicPartition, int], int] = {}
            steps: dict[TopicPartition, tuple[int, float, float | None]] = {}
            for row in e.get("moves") or []:
                ms = moves[_tp(row)]
                new = [b for b in ms.step_target if b not in ms.step_from]
                got = int(row.get("bytes") or 0) // max(1, len(new))
                for b in new:  # one new replica per step in the bench's shapes
                    copied[(ms.tp, b)] = got
                need = float(max(0, ms.item.size_bytes - got)) if new else 0.0
                steps[ms.tp] = (ms.step, need, ms.step_submitted_at)
            lag.sampled(ts, ts if prev is None else prev, steps)
            prev = ts
            tail = float(e.get("tail_s") or 0.0)
            spread = 0.0
            if relag:
                left = {int(b): float(n) for b, n in e["left"].items()}
                tail, spread = lag.tail(poll_s, not any(left.values()), ts)
            got, why, _ = eta.update(
                ts,
                {int(b): float(n) for b, n in e["received"].items()},
                {int(b): float(n) for b, n in e["left"].items()},
                {int(b): int(n) for b, n in e["inflight"].items()},
                e.get("throttle"),
                tail,
                moves=index,
                copied=copied,
                caps=caps,
                r=r,
                elections=(queued, per_poll) if elect else None,
                tail_spread=spread,
            )
            f = eta.fields()
            out.append(
                {
                    "ts": ts,
                    "left": float(e["bytes_left"]),
                    "total": float(e["bytes_total"]),
                    "journal": e.get("eta_s"),
                    "journal_range": e.get("eta_range_s"),
                    "eta": got,
                    "range": f["eta_range_s"],
                    "share": f.get("throttle_share"),
                    "pace": f.get("run_pace"),
                    "why": why,
                }
            )
    return out


def score(rows: list[dict[str, Any]], finish: float, key: str = "eta") -> dict[str, float]:
    """Median / p90 error from ``FROM_PCT`` of the bytes, signed median (s), held, and the
    since-start formula's median on the same samples."""
    first = rows[0]
    errs, signed, held, since, finishes = [], [], [], [], []
    rng_key = "range" if key == "eta" else "journal_range"
    for r in rows:
        truth = finish - r["ts"]
        if (1 - r["left"] / r["total"]) * 100 < FROM_PCT or truth <= 0:
            continue
        v = r[key]
        errs.append(abs(v - truth) / truth if v is not None else 1.0)
        if v is not None:
            finishes.append(r["ts"] + v)
        signed.append((v - truth) if v is not None else 0.0)
        rng = r[rng_key]
        held.append(bool(rng) and rng[0] <= truth <= rng[1])
        gained = first["left"] - r["left"]
        ss = r["left"] / (gained / (r["ts"] - first["ts"])) if gained > 0 else None
        since.append(abs(ss - truth) / truth if ss is not None else 1.0)
    errs_sorted = sorted(errs)
    return {
        "n": len(errs),
        "med": statistics.median(errs),
        "p90": errs_sorted[min(len(errs) - 1, int(0.9 * len(errs)))],
        "signed_s": statistics.median(signed),
        "held": sum(held) / len(held),
        "since": statistics.median(since),
        # how far the finish estimated moves from one sample to the next (median, seconds)
        "wander_s": statistics.median(
            abs(b - a) for a, b in zip(finishes, finishes[1:], strict=False)
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("journals", nargs="+")
    ap.add_argument("--trace", action="store_true", help="print every sample")
    ap.add_argument(
        "--relag", action="store_true", help="the completion lag as the run measures it now"
    )
    a = ap.parse_args()
    for path in a.journals:
        events = [json.loads(line) for line in Path(path).read_text().splitlines() if line]
        finish = max(float(e["ts"]) for e in events if e["event"] == "completed")
        rows = replay(events, a.relag)
        if a.trace:
            t0 = float(events[0]["ts"])
            for r in rows:
                print(
                    f"  {r['ts'] - t0:6.2f} truth {finish - r['ts']:6.2f} journal {r['journal']} "
                    f"{r['journal_range']} replay {r['eta'] and round(r['eta'], 2)} {r['range']} "
                    f"share {r['share']} pace {r['pace']}"
                )
        j, o = score(rows, finish, "journal"), score(rows, finish)
        print(
            f"{path}: n {o['n']} | journal med {j['med']:.1%} signed {j['signed_s']:+.2f}s held "
            f"{j['held']:.0%} | replay med {o['med']:.1%} p90 {o['p90']:.1%} signed "
            f"{o['signed_s']:+.2f}s held {o['held']:.0%} wander {j['wander_s']:.2f}s -> "
            f"{o['wander_s']:.2f}s | since-start {o['since']:.1%}"
        )


if __name__ == "__main__":
    main()
