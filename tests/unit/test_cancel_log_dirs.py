"""A cancel puts every replica of the plan back in its ORIGINAL log dir, as the rollback file
recorded it before anything was sent: a move between dirs in flight is cancelled, one that
finished while another replica of its partition has not is moved back; a partition whose
replicas and dirs are all at the plan's is left (completed). The rule is pure
(moves.originals.dirs_back); the cancel runs on the simulator here."""

from __future__ import annotations

from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.originals import dirs_back, dirs_contradicted, recorded_dirs
from reassign_kit.operations.cancel import cancel
from reassign_kit.operations.execute import execute

T0, T1 = TopicPartition("a", 0), TopicPartition("a", 1)


def cluster() -> SimCluster:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p, (p + 1) % 4] for p in range(2)], MB)
    return sim


def other_dirs(sim: SimCluster) -> Plan:
    """Both replicas of each partition to their broker's second dir, replicas unchanged."""
    return Plan.of(
        Move(tp, tuple(sp.replicas), tuple(sim.log_dirs_of(b)[1] for b in sp.replicas))
        for tp, sp in sim.partitions.items()
    )


def where(sim: SimCluster, tp: TopicPartition) -> dict[int, str]:
    sp = sim.partitions[tp]
    return {b: sp.dirs.get(b, sim.log_dirs_of(b)[0]) for b in sp.replicas}


def test_the_rollback_file_records_the_original_dirs_and_cancel_puts_them_back(tmp_path):
    sim = cluster()
    before = {tp: where(sim, tp) for tp in sim.partitions}
    plan = other_dirs(sim)
    rb = str(tmp_path / "rollback.json")
    execute(sim, plan, rollback_path=rb)
    recorded = Plan.read(rb).by_tp()
    for tp, dirs in before.items():  # written before anything was sent
        assert dict(zip(recorded[tp].replicas, recorded[tp].log_dirs, strict=True)) == dirs
    sim.sleep(60)  # every move between dirs done
    assert all(where(sim, tp) != before[tp] for tp in sim.partitions)
    # another tool puts one replica of a-0 back: a-0 is not at the plan's any more
    b = sim.partitions[T0].replicas[1]
    sim.alter_replica_log_dirs({(T0, b): sim.log_dirs_of(b)[0]})
    sim.sleep(60)
    res = cancel(sim, plan, rollback_file=rb)
    sim.sleep(60)
    assert where(sim, T0) == before[T0]  # the replica that had finished is back too
    assert where(sim, T1) != before[T1]  # a-1 completed (replicas and dirs): left
    assert not any(sp.future for sp in sim.partitions.values())
    a0 = sim.partitions[T0].replicas[0]
    assert res.log_dirs_back == {(T0, a0): before[T0][a0]}
    assert any("original log dirs" in line for line in res.lines())


def test_a_move_between_dirs_in_flight_is_cancelled_back_to_its_original(tmp_path):
    sim = cluster()
    before = {tp: where(sim, tp) for tp in sim.partitions}
    plan = other_dirs(sim)
    rb = str(tmp_path / "rollback.json")
    execute(sim, plan, rollback_path=rb)
    assert any(sp.future for sp in sim.partitions.values())  # no time passed: under way
    cancel(sim, plan, rollback_file=rb)
    sim.sleep(60)
    assert {tp: where(sim, tp) for tp in sim.partitions} == before
    assert not any(sp.future for sp in sim.partitions.values())


def test_dirs_back_rule():
    orig = {(T0, 1): "/a", (T0, 2): "/a"}
    targets = {(T0, 1): "/b", (T0, 2): "/b"}
    # one replica there, one still moving: both back
    assert dirs_back(orig, targets, {(T0, 1): "/b", (T0, 2): "/a"}, {(T0, 2): "/b"}, [T0], []) == {
        (T0, 1): "/a",
        (T0, 2): "/a",
    }
    # completed and at the plan's dirs: left
    done = {(T0, 1): "/b", (T0, 2): "/b"}
    assert dirs_back(orig, targets, done, {}, [T0], [T0]) == {}
    # no original recorded: a move in flight is cancelled in its current dir
    assert dirs_back({}, targets, {(T0, 1): "/a"}, {(T0, 1): "/b"}, [T0], []) == {(T0, 1): "/a"}


def test_two_rollback_files_disagreeing_on_a_dir_name_the_replica_and_send_nothing_for_it():
    one = [Move(T0, (1, 2), ("/a", "/a"))]
    two = [Move(T0, (1, 2), ("/a", "/b"))]
    dirs, bad = recorded_dirs({"r1.json": one, "r2.json": two})
    assert dirs == {(T0, 1): "/a"}
    assert "r1.json says /a, r2.json says /b" in bad[(T0, 2)]


def test_a_planted_original_dir_is_refused_by_name_and_the_replica_left(tmp_path):
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[0, 1]], MB)
    sim.log_dirs_of = lambda b: [f"/sim/{b}/d0", f"/sim/{b}/d1", f"/sim/{b}/d2"]
    plan = Plan.of([Move(T0, (0, 1), ("/sim/0/d1", "/sim/1/d1"))])
    rb = str(tmp_path / "rollback.json")
    execute(sim, plan, rollback_path=rb)
    # the record edited: replica 0 "was in" d2, where it never was (it is in d0, moving to d1)
    Plan.of([Move(T0, (0, 1), ("/sim/0/d2", "/sim/1/d0"))]).write(rb)
    res = cancel(sim, plan, rollback_file=rb)
    sim.sleep(60)
    assert where(sim, T0) == {0: "/sim/0/d0", 1: "/sim/1/d0"}  # nothing sent into d2
    assert "recorded original dir /sim/0/d2" in res.errors[T0]
    assert (T0, 0) not in res.log_dirs_back


def test_dirs_contradicted_rule():
    targets = {(T0, 1): "/b"}
    assert dirs_contradicted({(T0, 1): "/a"}, targets, {(T0, 1): "/b"}) == {}  # moved: ok
    assert dirs_contradicted({(T0, 1): "/a"}, targets, {(T0, 1): "/a"}) == {}  # not yet
    bad = dirs_contradicted({(T0, 1): "/c"}, targets, {(T0, 1): "/a"})
    assert "recorded original dir /c" in bad[(T0, 1)]
