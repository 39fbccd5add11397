"""``--balance disks``: the log-dir pass (planner.dir_balance) on random brokers, and the plan
it makes from a snapshot (planner.dir_plan): every broker's dirs within the tolerance when a
replica is no bigger than a band, no filesystem above its room, a dir named for every replica
the plan adds, cordoned dirs receiving nothing, a drained one emptied, refusals by name."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reassign_kit import api
from reassign_kit.cli import main
from reassign_kit.errors import CapacityError, UsageError
from reassign_kit.model import ANY_LOG_DIR, Plan, TopicPartition
from reassign_kit.planner.dir_balance import DirReplica, DirSpec, balance_broker
from reassign_kit.planner.report import format_report, unmet_goals
from reassign_kit.snapshot.snapshot import Snapshot

GB = 10**9


@st.composite
def brokers(draw):
    """One broker: 1-4 dirs (sizes, some cordoned), replicas in them, some new."""
    n = draw(st.integers(1, 4))
    sized = draw(st.booleans())
    dirs = [
        DirSpec(
            f"/d{i}",
            float(draw(st.integers(1, 8)) * GB) if sized else 1.0,
            fs=f"/d{i}",
            cordoned=n > 1 and i == n - 1 and draw(st.booleans()),
        )
        for i in range(n)
    ]
    k = draw(st.integers(0, 60))
    sizes = draw(st.lists(st.integers(0, 5000), min_size=k, max_size=k))
    now = draw(st.lists(st.sampled_from([None, *[d.name for d in dirs]]), min_size=k, max_size=k))
    reps = [DirReplica(("t", i), s, d) for i, (s, d) in enumerate(zip(sizes, now, strict=True))]
    return dirs, reps


def _check(dirs, reps, out, tol, drain):
    spec = {d.name: d for d in dirs}
    for r in reps:  # a dir for every replica; a new one never in a cordoned dir
        d = out.placed[r.key]
        assert d in spec
        if r.now is None or drain:
            assert not spec[d].cordoned or r.now == d and not drain
        if r.now is not None and spec[r.now].cordoned and not drain:
            assert d == r.now  # a cordoned dir's replicas stay without --drain-cordoned
    for r in reps:
        if drain and r.now is not None and spec[r.now].cordoned:
            assert not spec[out.placed[r.key]].cordoned  # drained
    moved = sum(r.size for r in reps if r.now is not None and out.placed[r.key] != r.now)
    assert out.moved_bytes == moved


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(brokers(), st.sampled_from([0.05, 0.1, 0.25]), st.booleans())
def test_every_dir_within_its_band_when_no_replica_is_bigger_than_a_band(b, tol, drain):
    dirs, reps = b
    out = balance_broker(1, dirs, reps, tol, drain=drain)
    _check(dirs, reps, out, tol, drain)
    movable_sizes = [
        r.size
        for r in reps
        if r.now is None or not next(d for d in dirs if d.name == r.now).cordoned or drain
    ]
    feasible = out.band and movable_sizes and max(movable_sizes) <= min(out.band.values())
    if feasible:  # a replica no bigger than the smallest band: the pass reaches every band
        assert out.outside == [], out
        for d, share in out.share.items():
            assert abs(out.after[d] - share) <= out.band[d] + 1e-6
    assert not out.no_room


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(brokers(), st.integers(0, 40_000))
def test_no_filesystem_takes_more_than_its_room(b, room):
    dirs, reps = b
    rooms = {d.fs: float(room) for d in dirs}
    out = balance_broker(1, dirs, reps, 0.1, room=rooms)
    _check(dirs, reps, out, 0.1, False)
    for d in dirs:  # what the pass adds to a dir: new replicas, replicas moved in or out
        added = sum(r.size for r in reps if out.placed[r.key] == d.name and r.now != d.name)
        left = sum(r.size for r in reps if r.now == d.name and out.placed[r.key] != d.name)
        if not out.no_room:
            assert added - left <= room, (d, added, left, room)


def test_fewest_bytes_moved_new_replicas_fill_the_low_dir_first():
    dirs = [DirSpec("/a"), DirSpec("/b")]
    reps = [DirReplica(("t", i), 100, "/a") for i in range(10)]
    reps += [DirReplica(("n", i), 100, None) for i in range(10)]
    out = balance_broker(1, dirs, reps, 0.1)
    assert out.moved_bytes == 0  # the ten new ones land in /b: nothing existing moves
    assert out.after == {"/a": 1000, "/b": 1000}


def test_a_replica_that_fits_nowhere_is_named_with_the_room():
    out = balance_broker(
        3, [DirSpec("/a", fs="fa"), DirSpec("/b", fs="fb")], [DirReplica(("t", 0), 500, None)],
        0.1, room={"fa": 100.0, "fb": 200.0},
    )  # fmt: skip
    assert out.no_room and "/a" in out.no_room[0] and "/b" in out.no_room[0]


def snapshot(
    n_parts=24, dirs=("/k/a", "/k/b"), cordoned=(), size=10_000, all_in=0, unknown=False
) -> Snapshot:
    """4 brokers, RF 2 on brokers 1-3 (broker 4 empty), every replica in its broker's dir
    ``all_in``; each dir on its own 1 GB filesystem."""
    brokers = [
        {
            "id": b,
            "rack": None,
            "log_dirs": list(dirs),
            "cordoned_log_dirs": list(cordoned),
            "log_dir_capacity": [
                {"log_dir": d, "total_bytes": GB + i, "usable_bytes": GB // 2}
                for i, d in enumerate(dirs)
            ],
        }  # fmt: skip
        for b in (1, 2, 3, 4)
    ]
    parts = []
    for p in range(n_parts):
        reps = [1 + p % 3, 1 + (p + 1) % 3]
        e = {"topic": "t", "partition": p, "replicas": reps, "size_bytes": size + p}
        e["log_dirs"] = [None if unknown else dirs[all_in]] * 2
        parts.append(e)
    return Snapshot.from_json_obj(
        {"version": 1, "brokers": brokers, "topics": [{"name": "t"}], "partitions": parts}
    )


def test_plan_names_a_dir_for_every_replica_and_balances_each_broker():
    snap = snapshot()
    r = api.plan(snap, balance="replicas,disks", engine="local")
    dg = r.report()["disk_goal"]
    assert dg["met"] and not unmet_goals(r.report())
    by = snap.by_tp()
    intra = 0
    for m in r.plan:
        assert m.log_dirs is not None and ANY_LOG_DIR not in m.log_dirs
        old = by[m.tp]
        if tuple(m.replicas) == old.replicas:
            intra += 1  # a move between dirs of one broker: same replicas, new dirs
            assert m.log_dirs != old.log_dirs
    assert intra > 0
    for b, ds in dg["brokers"].items():
        for d, v in ds.items():
            assert abs(v["after"] - v["share"]) <= 0.1 * v["share"] + 1, (b, d, v)
    cur = r.current.by_tp()
    for m in r.plan:  # the rollback names each replica's dir before
        assert cur[m.tp].log_dirs == by[m.tp].log_dirs
    assert "log dirs: within 10%" in format_report(r.report())


def test_a_cordoned_dir_receives_nothing_and_drain_empties_it():
    snap = snapshot(cordoned=("/k/b",))
    r = api.plan(snap, balance="replicas,disks", engine="local")
    assert all(d != "/k/b" for m in r.plan for d in m.log_dirs)
    snap = snapshot(cordoned=("/k/a",))  # everything sits in the cordoned dir
    r = api.plan(snap, balance="replicas,disks", engine="local", drain_cordoned=True)
    placed = {(m.tp, b): d for m in r.plan for b, d in zip(m.replicas, m.log_dirs, strict=True)}
    for p in snap.partitions:
        for b in r.plan.by_tp().get(p.tp, p).replicas:
            assert placed.get((p.tp, b)) == "/k/b", (p.tp, b)
    # without --balance disks, --drain-cordoned alone empties the cordoned dir too
    r = api.plan(snap, balance="replicas", engine="local", drain_cordoned=True)
    assert r.report()["disk_goal"]["goal"] is False
    assert all(d == "/k/b" for m in r.plan for d in m.log_dirs)


def test_unmet_goal_is_said_with_the_numbers():
    snap = snapshot(n_parts=2, size=10**6)  # two replicas per broker at most: no 10% split
    snap = Snapshot.from_json_obj(
        {**snap.to_json_obj(), "partitions": [
            {**p, "size_bytes": s} for p, s in
            zip(snap.to_json_obj()["partitions"], (10**6, 3 * 10**6), strict=True)
        ]}
    )  # fmt: skip
    r = api.plan(snap, balance="disks", engine="local")
    unmet = unmet_goals(r.report())
    assert unmet and "disks goal" in unmet[0] and "share" in unmet[0] and "MB" in unmet[0]


def test_a_replica_whose_dir_is_not_recorded_is_refused_by_name():
    with pytest.raises(UsageError, match=r"t-0 on broker 1: the snapshot does not record"):
        api.plan(snapshot(unknown=True), balance="replicas,disks", engine="local")


def test_no_room_under_the_ceiling_is_refused_naming_the_dirs():
    # half-full 1 GB dirs: broker 4's two take 800 MB at 90%, but a 500 MB replica fits in
    # neither (the broker-level check, which sums them, lets it through)
    snap = snapshot(n_parts=2, size=500 * 10**6)
    with pytest.raises(CapacityError) as e:
        api.plan(snap, balance="replicas,disks", engine="local", disk_ceiling=0.9)
    assert "/k/a" in str(e.value) and "free" in str(e.value)


def test_disk_tolerance_out_of_range_is_a_usage_error():
    with pytest.raises(UsageError, match="--disk-tolerance"):
        api.plan(snapshot(), balance="disks", engine="local", disk_tolerance=1.5)


def test_the_snapshot_keeps_each_replicas_dir_and_refuses_a_bad_one():
    snap = snapshot()
    again = Snapshot.from_json(snap.to_json())
    assert again.by_tp()[TopicPartition("t", 0)].log_dirs == ("/k/a", "/k/a")
    obj = json.loads(snap.to_json())
    obj["partitions"][0]["log_dirs"] = ["relative", None]
    with pytest.raises(Exception, match=r"partition t-0: 'log_dirs' must be a list of 2"):
        Snapshot.from_json_obj(obj)


def test_when_no_one_replica_moves_well_two_are_swapped():
    # /a 4000 and /b 3000 (share 3500, band 350): every replica of /a is as big as the two
    # dirs' distance, so moving one only swaps their excess; a 1000 for a 500 meets both
    reps = [DirReplica(("a", i), 1000, "/a") for i in range(4)]
    reps += [DirReplica(("b", i), s, "/b") for i, s in enumerate((1000, 1000, 500, 500))]
    out = balance_broker(1, [DirSpec("/a"), DirSpec("/b")], reps, 0.1)
    assert out.outside == [] and out.after == {"/a": 3500, "/b": 3500}
    assert out.moved_bytes == 1500


def test_a_broker_with_every_dir_cordoned_keeps_what_the_drain_left_in_place():
    dirs = [DirSpec("/a", cordoned=True), DirSpec("/b", cordoned=True)]
    reps = [DirReplica(("t", 0), 100, "/a"), DirReplica(("t", 1), 100, "/b")]
    out = balance_broker(1, dirs, reps, 0.1, drain=True)
    assert out.placed == {("t", 0): "/a", ("t", 1): "/b"} and not out.no_room


def test_the_cli_writes_the_plan_and_exits_15_naming_the_dirs_when_the_goal_is_not_met(
    tmp_path, capsys
):
    snap = tmp_path / "s.json"
    snapshot(n_parts=2, size=10**6).write(str(snap))
    out, rb = tmp_path / "plan.json", tmp_path / "rollback.json"
    argv = ["plan", "--snapshot", str(snap), "--engine", "local", "--output", str(out)]
    assert main([*argv, "--balance", "disks", "--rollback", str(rb)]) == 15
    err = capsys.readouterr().err
    assert "disks goal" in err and "/k/a" in err and "exit 15" in err
    assert all(m.log_dirs for m in Plan.read(str(rb)))  # the rollback names the dirs before
    assert main([*argv, "--balance", "disks", "--disk-tolerance", "2"]) == 2
    assert "--disk-tolerance must be in [0, 1)" in capsys.readouterr().err


def test_a_log_dir_that_is_not_an_absolute_path_is_refused_by_name():
    obj = snapshot().to_json_obj()
    obj["brokers"][3]["log_dirs"] = ["/k/a", "/k/b", "data-2"]
    with pytest.raises(UsageError, match=r"broker 4: log dir\(s\) \['data-2'\] are not absolute"):
        api.plan(Snapshot.from_json_obj(obj), balance="replicas,disks", engine="local")
