"""The network goals (``--balance network``) against an exhaustive search written here
independently of the planner: on small random clusters with loads (racks, network capacities,
RF 1-4, a removed broker sometimes), every hard limit the plan claims holds; the plan never
misses a capacity where some rack-aware placement meets them all; the distribution targets
are met whenever some placement meets them with the capacities. Also the formulas, the
refusal of a snapshot without loads, the capacity file's network fields, and exit 15."""

from __future__ import annotations

import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit import api
from reassign_kit.errors import InvalidPlanError, UsageError
from reassign_kit.planner.network import broker_loads
from reassign_kit.planner.params import parse_balance
from reassign_kit.planner.rules import BrokerCapacity, Capacity
from reassign_kit.snapshot.entries import BrokerEntry, PartitionEntry, TopicEntry
from reassign_kit.snapshot.load import LoadWindow, PartitionLoad
from reassign_kit.snapshot.snapshot import Snapshot

TOL = 0.25


def test_formulas_per_broker():
    got = broker_loads([([1, 2, 3], (10.0, 5.0)), ([2], (7.0, 1.0))], [1, 2, 3, 4])
    assert got["network_in"] == {1: 10.0, 2: 17.0, 3: 10.0, 4: 0.0}
    # the leader sends consumers' fetch plus one copy of produce per follower
    assert got["network_out"] == {1: 5.0 + 2 * 10.0, 2: 1.0, 3: 0.0, 4: 0.0}
    assert got["leader_load"] == {1: 10.0, 2: 7.0, 3: 0.0, 4: 0.0}


def test_balance_network_names_its_parts():
    assert parse_balance("replicas,network") == (
        "replicas",
        "network_in",
        "network_out",
        "leader_load",
    )
    with pytest.raises(UsageError, match="choose from .*network"):
        parse_balance("cpu")


def _loaded(parts, brokers, window=True):
    return Snapshot.of(
        brokers, [TopicEntry("t", 1)], parts, LoadWindow("sample", 1.0, 60.0) if window else None
    )


def test_a_snapshot_without_loads_is_refused_naming_the_partitions():
    brokers = [BrokerEntry(1), BrokerEntry(2)]
    parts = [PartitionEntry("t", 0, (1, 2), 1, load=PartitionLoad()), PartitionEntry("t", 1, (2,))]
    with pytest.raises(UsageError, match=r"1 partition\(s\) without a load: t-1"):
        api.plan(_loaded(parts, brokers), balance="network", engine="local")
    unread = Snapshot.of(
        brokers,
        [TopicEntry("t", 1)],
        [PartitionEntry("t", 0, (1, 2), 1, load=PartitionLoad())],
        LoadWindow("sample", 1.0, 60.0, ("group g: GROUP_AUTHORIZATION_FAILED",)),
    )
    with pytest.raises(UsageError, match="not read when sampled: group g"):
        api.plan(unread, balance="network_in", engine="local")


def test_capacity_file_network_fields_read_strictly():
    cap = Capacity.from_json_obj(
        {"version": 1, "default": {"disk_bytes": 10, "network_in_bytes_s": 5}}
    )
    assert cap.of(3).network_in_bytes_s == 5 and cap.of(3).network_out_bytes_s is None
    with pytest.raises(InvalidPlanError, match="broker 2: 'network_out_bytes_s' must be"):
        Capacity.from_json_obj(
            {"version": 1, "brokers": [{"id": 2, "disk_bytes": 1, "network_out_bytes_s": -1}]}
        )


def test_an_unmeetable_goal_is_said_with_numbers_and_exit_15(tmp_path, capsys):
    from reassign_kit.cli.plan import main

    brokers = [BrokerEntry(1), BrokerEntry(2)]
    parts = [PartitionEntry("t", 0, (1,), 1, 1, load=PartitionLoad(4e6, 1, 0, 0, 0))]
    snap = tmp_path / "s.json"
    _loaded(parts, brokers).write(str(snap))
    cap = tmp_path / "cap.json"
    cap.write_text(
        json.dumps({"version": 1, "default": {"disk_bytes": 100, "network_in_bytes_s": 3_000_000}})
    )
    out = tmp_path / "plan.json"
    code = main(
        ["plan", "--snapshot", str(snap), "--balance", "network_in", "--engine", "local"]
        + ["--capacity", str(cap), "--output", str(out)]
    )
    err = capsys.readouterr()
    assert code == 15
    assert "network_in capacity (hard) exceeded: broker 1 4.000 > 3.000 MB/s" in err.out + err.err


# -- the property: against every placement -----------------------------------------------------
@st.composite
def cases(draw):
    n = draw(st.integers(2, 4))
    n_racks = draw(st.sampled_from([0, 2]))
    brokers = [BrokerEntry(b, None if not n_racks else "ab"[b % n_racks]) for b in range(1, n + 1)]
    ids = [b.id for b in brokers]
    remove = draw(st.sampled_from([(), (ids[-1],)])) if n >= 3 else ()
    usable = [b for b in ids if b not in remove]
    parts = []
    for p in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, min(4, len(usable))))
        reps = tuple(draw(st.permutations(ids))[:rf])
        produce = float(draw(st.integers(0, 100)))
        fetch = float(draw(st.integers(0, 300)))
        parts.append(
            PartitionEntry("t", p, reps, 1, reps[0], load=PartitionLoad(produce, 1, fetch, 1, 0))
        )
    caps = {}
    if draw(st.booleans()):
        for b in ids:
            caps[b] = BrokerCapacity(
                10**9,
                None,
                draw(st.sampled_from([None, 50, 100, 200, 400])),
                draw(st.sampled_from([None, 100, 300, 600, 1200])),
            )
    capacity = Capacity(tuple(caps.items()), source="caps") if caps else None
    return _loaded(parts, brokers), remove, capacity, usable


def _racks_ok(reps, racks, usable) -> bool:
    if any(racks[b] is None for b in usable):
        return True
    return len({racks[b] for b in reps}) >= min(len(reps), len({racks[b] for b in usable}))


def _reference(snap, usable, capacity):
    """(some placement meets every capacity, some meets capacities and targets) by brute force."""
    racks = snap.racks()
    options = [
        [c for c in itertools.permutations(usable, len(p.replicas)) if _racks_ok(c, racks, usable)]
        for p in snap.partitions
    ]
    loads = [(p.load.produce_bytes_s, p.load.fetch_bytes_s) for p in snap.partitions]
    hard = soft = False
    for combo in itertools.product(*options):
        got = broker_loads(zip(combo, loads, strict=True), usable)
        caps_ok = _within_caps(got, capacity)
        hard |= caps_ok
        soft |= caps_ok and _within_targets(got, usable, capacity)
        if soft:
            break
    return hard, soft


def _within_caps(got, capacity) -> bool:
    if capacity is None:
        return True
    for res, key in (("network_in", "network_in_bytes_s"), ("network_out", "network_out_bytes_s")):
        for b, v in got[res].items():
            cap = getattr(capacity.of(b), key, None) if capacity.of(b) else None
            if cap is not None and v > cap + 1e-6:
                return False
    return True


def _within_targets(got, usable, capacity) -> bool:
    for res in ("network_in", "network_out", "leader_load"):
        total = sum(got[res].values())
        key = {"network_in": "network_in_bytes_s", "network_out": "network_out_bytes_s"}.get(res)
        caps = {b: getattr(capacity.of(b), key, None) for b in usable} if capacity and key else {}
        weighted = caps and all(v is not None for v in caps.values())
        w = {b: (caps[b] if weighted else 1.0) for b in usable}
        for b in usable:
            if got[res].get(b, 0.0) > (1 + TOL) * total * w[b] / sum(w.values()) + 1e-6:
                return False
    return True


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_network_goals_against_every_placement(case):
    snap, remove, capacity, usable = case
    result = api.plan(
        snap,
        balance="network",
        remove_brokers=remove,
        capacity=capacity,
        engine="local",
        network_tolerance=TOL,
    )
    ng = result.report()["network_goal"]
    final = {p.tp: list(p.replicas) for p in snap.partitions}
    for m in result.plan:
        final[m.tp] = list(m.replicas)
    racks = snap.racks()
    assert all(b in usable for r in final.values() for b in r)
    assert all(_racks_ok(r, racks, usable) for r in final.values())
    got = broker_loads(
        ((final[p.tp], (p.load.produce_bytes_s, p.load.fetch_bytes_s)) for p in snap.partitions),
        usable,
    )
    claims_caps = not any("capacity" in u for u in ng["unmet"])
    assert claims_caps == _within_caps(got, capacity), ng["unmet"]
    assert ng["met"] == (claims_caps and _within_targets(got, usable, capacity)), ng["unmet"]
    hard, soft = _reference(snap, usable, capacity)
    assert claims_caps or not hard, f"a placement within every capacity exists: {ng['unmet']}"
    assert ng["met"] or not soft, f"a placement meeting every goal exists: {ng['unmet']}"
