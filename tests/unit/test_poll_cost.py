"""Poll cost (bench/bench_poll.py measures it; no timed assertion here): what was
made cheaper does the same. The fair share numbers its resources instead of hashing tuples
(the same rates as the scan it replaced, ties included); the journal's encoder (orjson)
writes the same JSON values as json's, ASCII only; a poll that submitted cleanly does not
list and sync the throttles a second time, and they are still exactly what the moves in
flight need at the end of every poll."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.quota import fair_share
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan
from reassign_kit.moves.journal import Journal, _json_encode, read_events
from reassign_kit.moves.journal_rules import unseal
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.throttles import configs as thr


def scan_fair_share(streams, out_cap, in_cap):
    """The max-min fair share as it was computed before (a scan of every resource keyed by
    ("o" | "i", broker) at each step): the reference."""
    n = len(streams)
    rates = [math.inf] * n
    if not n:
        return rates
    members: dict = {}
    for k, (src, dst) in enumerate(streams):
        if src is not None and src in out_cap:
            members.setdefault(("o", src), []).append(k)
        if dst in in_cap:
            members.setdefault(("i", dst), []).append(k)
    cap = {r: max(0.0, float((out_cap if r[0] == "o" else in_cap)[r[1]])) for r in members}
    used = dict.fromkeys(members, 0.0)
    free = {r: len(ks) for r, ks in members.items()}
    fixed = [False] * n
    while True:
        best, level = None, math.inf
        for r, f in free.items():
            if f > 0:
                lv = (cap[r] - used[r]) / f
                if lv < level:
                    best, level = r, lv
        if best is None:
            break
        level = max(0.0, level)
        for k in members[best]:
            if fixed[k]:
                continue
            fixed[k] = True
            rates[k] = level
            src, dst = streams[k]
            for r in (("o", src), ("i", dst)):
                if r in free:
                    free[r] -= 1
                    used[r] += level
    return rates


brokers = st.integers(0, 6)
caps = st.dictionaries(
    brokers, st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, 1e6, 7.25, -1.0, math.inf]), max_size=7
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), brokers), brokers), max_size=30), caps, caps)
def test_fair_share_gives_the_rates_of_the_scan_it_replaced(streams, out_cap, in_cap):
    assert fair_share(streams, out_cap, in_cap) == scan_fair_share(streams, out_cap, in_cap)


def test_fair_share_of_a_shift_over_100_brokers_is_the_scans():
    streams = [(b, (b + 2) % 100) for b in range(100) for _ in range(20)]
    streams += [((b + 1) % 100, (b + 3) % 100) for b in range(100) for _ in range(20)]
    cap = {b: 50e6 * (1 + b % 3) for b in range(100)}
    assert fair_share(streams, cap, cap) == scan_fair_share(streams, cap, cap)


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), values, max_size=5))
def test_journal_lines_hold_what_json_would_write_in_ascii(tmp_path_factory, fields):
    d = tmp_path_factory.mktemp("j")
    with Journal(d / "j.jsonl", "r1", clock=lambda: 1.5) as j:
        rec = j.write("sample", **{f"f_{k}": v for k, v in fields.items()})
    raw = (d / "j.jsonl").read_bytes()
    assert raw.isascii() and raw.count(b"\n") == 1  # one line (no U+2028 for splitlines)
    line = raw.decode().rstrip("\n")
    assert line.splitlines() == [line]
    body, sealed = unseal(line)
    assert sealed is True
    assert json.loads(body) == json.loads(_json_encode(rec))
    assert read_events(d / "j.jsonl") == [json.loads(_json_encode(rec))]


def test_a_tuple_set_and_int_keys_are_written_as_json_writes_them(tmp_path):
    with Journal(tmp_path / "j.jsonl", "r1", clock=lambda: 1.5) as j:
        rec = j.write("x", a=(1, 2), b=frozenset({3}), c={1: "é", 2: "\u2028"}, d=2**80)
    assert unseal((tmp_path / "j.jsonl").read_text().rstrip("\n")) == (_json_encode(rec), True)


def exact_throttles(sim: SimCluster) -> bool:
    need = thr.required_throttles({}, {}, sim.list_reassignments())
    topics = sorted({tp.topic for tp in sim.partitions})
    current = thr.current_throttles(sim, topics, sim.broker_ids)
    return thr.sync_changes(need, MB, current, topics, sim.broker_ids) == ({}, {})


def test_a_clean_submission_is_not_listed_and_synced_again_and_the_throttles_stay_exact(tmp_path):
    """Before: a poll that submitted listed the reassignments again at its end and synced
    the throttles a second time (one more ListPartitionReassignments per submitting poll)."""
    sim = SimCluster(6, bandwidth=2 * MB)
    sim.add_topic("a", [[p % 6, (p + 1) % 6] for p in range(12)], 2 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 6 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    run = Run(
        sim,
        plan,
        ExecuteOptions(throttle=MB, batch_size=3, incremental=True, wait=True),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    real_poll, real_alter = run.parts.loop.poll, sim.alter_reassignments
    polls = {"n": 0, "submitting": 0, "exact": [], "in": False}
    lists = []
    real_list = sim.list_reassignments

    def listing(*a, **k):
        lists.append(polls["n"] if polls["in"] else 0)  # 0: the start's, the end's
        return real_list(*a, **k)

    def alter(targets, **k):
        polls["submitting"] += any(t is not None for t in targets.values())
        return real_alter(targets, **k)

    def poll():
        polls["n"] += 1
        polls["in"] = True
        try:
            return real_poll()
        finally:
            polls["in"] = False
            sim.list_reassignments = real_list  # the check's own listing is not the run's
            polls["exact"].append(exact_throttles(sim))
            sim.list_reassignments = listing

    sim.list_reassignments, sim.alter_reassignments, run.parts.loop.poll = listing, alter, poll
    res = run.run()
    assert res.state == "done" and sim.current_throttles().is_empty()
    assert polls["submitting"] >= 4  # 12 moves, 3 at a time
    assert len(polls["exact"]) == polls["n"] and all(polls["exact"]), polls["exact"]
    per_poll = [lists.count(i) for i in range(1, polls["n"] + 1)]
    assert max(per_poll) == 1, str(per_poll)  # was 2 in each poll that submitted
