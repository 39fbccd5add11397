"""The Run controller against the replication model (simulate.SimCluster): pacing visible in the
journal, throttles right on every exit path, pause / stop / caps from callbacks, deadlines and
stuck detection, a killed run resumed, bounded Admin calls per poll, steps."""

from __future__ import annotations

import pytest
from killfuzz import cli, killed, path_of, sim_file

from reassign_kit.cluster.simfile import load, save
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import ReassignmentInProgressError, RunError, UsageError
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal import (
    Journal,
    concurrency,
    peak_concurrency,
    read_events,
    redact,
    to_pandas,
)
from reassign_kit.operations import verify as verify_mod
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.throttles import configs as thr

RATE = 1 * MB


def cluster(partitions: int = 8, size: int | list = 2 * MB, brokers: int = 4) -> SimCluster:
    sim = SimCluster(brokers, bandwidth=50 * MB)
    sim.add_topic("a", [[p % brokers, (p + 1) % brokers] for p in range(partitions)], size)
    return sim


def shift_plan(sim: SimCluster, by: int = 2) -> Plan:
    n = len(sim.broker_ids)
    return Plan.of(
        Move(tp, tuple((b + by) % n for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )


def make_run(sim, plan, tmp_path, **opts) -> Run:
    opts.setdefault("throttle", RATE)
    return Run(
        sim,
        plan,
        ExecuteOptions(**opts),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )


def exact_throttles(sim: SimCluster) -> bool:
    """The model's throttle configs equal what the reassignments in flight need (none when
    idle): throttle.py's own diff finds nothing to change."""
    need = thr.required_throttles({}, {}, sim.list_reassignments())
    topics = sorted({tp.topic for tp in sim.partitions})
    current = thr.current_throttles(sim, topics, sim.broker_ids)
    return thr.sync_changes(need, RATE, current, topics, sim.broker_ids) == ({}, {})


def guard_submissions(sim: SimCluster) -> list:
    """Wrap alter_reassignments: every submitted move must already have its throttle."""
    real = sim.alter_reassignments
    seen: list = []

    def checked(targets, allow_replication_factor_change=True):
        th = sim.current_throttles()
        for tp, tgt in targets.items():
            if tgt is None:
                continue
            adding = [b for b in tgt if b not in sim.partitions[tp].replicas]
            for b in adding:
                assert (tp.partition, b) in th.follower_replicas.get(tp.topic, ()), (tp, b)
                assert th.broker_rates.get(b) == RATE
        seen.append(dict(targets))
        return real(targets, allow_replication_factor_change)

    sim.alter_reassignments = checked
    return seen


def events(tmp_path, name=None):
    ev = read_events(tmp_path / "run.jsonl")
    return [e for e in ev if name is None or e["event"] == name]


def test_legacy_one_request_then_returns_with_throttles_of_moves_in_flight(tmp_path):
    sim = cluster()
    calls = guard_submissions(sim)
    res = make_run(sim, shift_plan(sim), tmp_path).run()
    assert len(calls) == 1 and len(calls[0]) == 8
    assert res.state == "submitted" and len(res.still_moving) == 8
    assert exact_throttles(sim) and not sim.current_throttles().is_empty()
    fin = events(tmp_path, "run_finished")[-1]
    assert fin["still_moving"] == 8 and fin["throttles_left"]["broker_rates"]


def test_batch_mode_waves(tmp_path):
    sim = cluster(10)
    guard_submissions(sim)
    res = make_run(sim, shift_plan(sim), tmp_path, batch_size=3, wait=True).run()
    assert res.state == "done" and sim.assignment() == {
        m.tp: m.replicas for m in shift_plan(cluster(10))
    }
    ev = events(tmp_path)
    assert peak_concurrency(ev) <= 3
    sub = {(e["topic"], e["partition"]): e for e in ev if e["event"] == "submitted"}
    done = {(e["topic"], e["partition"]): e["ts"] for e in ev if e["event"] == "completed"}
    batches: dict[int, list] = {}
    for k, e in sub.items():
        batches.setdefault(e["batch"], []).append(k)
    assert sorted(len(v) for v in batches.values()) == [1, 3, 3, 3]
    for b in range(1, 4):
        assert min(sub[k]["ts"] for k in batches[b]) >= max(done[k] for k in batches[b - 1])
    assert [k[1] for k in sorted(sub, key=lambda k: (sub[k]["ts"], k))] == list(range(10))
    assert sim.current_throttles().is_empty()


def test_incremental_refills_as_slots_free(tmp_path):
    sim = SimCluster(6, bandwidth=50 * MB)
    sizes = [4 * MB, 1 * MB, 3 * MB, 1 * MB, 2 * MB, 1 * MB, 1 * MB, 2 * MB]
    sim.add_topic("a", [[p % 3, (p + 1) % 3] for p in range(8)], sizes)
    plan = Plan.of(Move(tp, tuple(b + 3 for b in sp.replicas)) for tp, sp in sim.partitions.items())
    guard_submissions(sim)
    res = make_run(
        sim, plan, tmp_path, batch_size=3, incremental=True, wait=True, poll_interval_ms=200
    ).run()
    assert res.state == "done"
    ev = events(tmp_path)
    assert peak_concurrency(ev) == 3
    # a slot freed by a small move is refilled while the big move 0 is still in flight
    done0 = next(e["ts"] for e in ev if e["event"] == "completed" and e["partition"] == 0)
    sub3 = next(e["ts"] for e in ev if e["event"] == "submitted" and e["partition"] == 3)
    assert sub3 < done0
    assert exact_throttles(sim) and sim.current_throttles().is_empty()


def test_per_broker_and_leader_caps_hold_in_the_journal(tmp_path):
    sim = cluster(12)
    res = make_run(
        sim, shift_plan(sim, 1), tmp_path, max_moves_per_broker=1, max_leader_moves=2, wait=True
    ).run()
    assert res.state == "done"
    inflight: dict = {}
    for e in events(tmp_path):
        key = (e.get("topic"), e.get("partition"))
        if e["event"] == "submitted":
            inflight[key] = e
            load: dict[int, int] = {}
            for s in inflight.values():
                for b in s["brokers"]:
                    load[b] = load.get(b, 0) + 1
            assert max(load.values()) <= 1
            assert sum(s["moves_leader"] for s in inflight.values()) <= 2
        elif e["event"] == "completed":
            inflight.pop(key, None)


def test_caps_changed_from_a_callback_take_effect(tmp_path):
    sim = cluster(12)
    run = make_run(sim, shift_plan(sim), tmp_path, batch_size=4, incremental=True, wait=True)
    changed = []

    def on(e):
        if e["event"] == "completed" and not changed:
            changed.append(run.set_caps(batch_size=1))

    run.subscribe(on)
    run.run()
    ev = events(tmp_path)
    t = next(e["ts"] for e in ev if e["event"] == "caps_changed")
    after = [(ts, n) for ts, n in concurrency(ev) if ts > t]
    # once the slots drained below the new cap, never more than 1 again
    first_low = next(i for i, (_, n) in enumerate(after) if n <= 1)
    assert all(n <= 1 for _, n in after[first_low:])
    with pytest.raises(UsageError, match="mode"):
        run.set_caps(incremental=False)


def test_pause_and_resume_from_a_callback(tmp_path):
    sim = cluster(6)
    run = make_run(sim, shift_plan(sim), tmp_path, batch_size=1, incremental=True, wait=True)
    state = {"n": 0, "idle_polls": 0}

    def on(e):
        if e["event"] == "submitted" and state["n"] == 0:
            state["n"] = 1
            run.pause()
        if e["event"] == "completed" and state["n"] == 1:
            state["n"] = 2
            state["paused_at"] = e["ts"]

    def sleep(dt):  # the "user" clicks Resume after five idle polls
        if state["n"] == 2:
            state["idle_polls"] += 1
            if state["idle_polls"] == 5:
                state["n"] = 3
                run.resume()
        sim.sleep(dt)

    run.subscribe(on)
    run.shared.sleep_fn = sleep
    res = run.run()
    assert res.state == "done"
    ev = events(tmp_path)
    subs = [e["ts"] for e in ev if e["event"] == "submitted"]
    resumed = next(e["ts"] for e in ev if e["event"] == "resumed")
    assert subs[1] >= resumed >= state["paused_at"] + 4


@pytest.mark.parametrize("cancel", [False, True])
def test_stop_leaves_exactly_the_needed_throttles(tmp_path, cancel):
    sim = cluster(8, size=[MB, 3 * MB, 4 * MB, MB, MB, MB, MB, MB])
    run = make_run(sim, shift_plan(sim), tmp_path, batch_size=3, incremental=True)

    def on(e):
        if e["event"] == "completed":
            run.stop(cancel_inflight=cancel)

    run.subscribe(on)
    res = run.run()
    assert res.state == ("cancelled" if cancel else "stopped") and res.exit_code != 0
    assert exact_throttles(sim)
    if cancel:
        assert not sim.list_reassignments() and sim.current_throttles().is_empty()
        assert res.cancelled and not res.still_moving
    else:
        assert set(res.still_moving) == set(sim.list_reassignments())
    assert res.pending  # nothing more was submitted after the stop


def test_failure_in_a_later_batch_stops_with_a_clear_error(tmp_path):
    sim = cluster(6)
    sim.fail_on[TopicPartition("a", 4)] = "INVALID_REPLICA_ASSIGNMENT: no"
    run = make_run(sim, shift_plan(sim), tmp_path, batch_size=3)
    with pytest.raises(RunError, match="a-4"):
        run.run()
    res = run.wait(0)
    assert res.state == "failed" and TopicPartition("a", 4) in res.failed
    assert [tp.partition for tp in res.submitted] == [0, 1, 2, 3, 5]
    assert exact_throttles(sim)
    assert any(e["event"] == "error" for e in events(tmp_path))


def test_stuck_move_cancelled_by_policy(tmp_path):
    sim = cluster(4)
    sim.stall(TopicPartition("a", 2))
    res = make_run(
        sim, shift_plan(sim), tmp_path, stuck_after=5, on_deadline="cancel", wait=True
    ).run()
    assert res.state == "deadline" and res.cancelled == [TopicPartition("a", 2)]
    assert len(res.completed) == 3
    stuck = events(tmp_path, "stuck")
    assert [e["partition"] for e in stuck] == [2]
    assert exact_throttles(sim) and sim.current_throttles().is_empty()


def test_stuck_move_with_wait_policy_is_reported_and_waited_for(tmp_path):
    sim = cluster(2)
    sim.stall(TopicPartition("a", 1))
    run = make_run(sim, shift_plan(sim), tmp_path, stuck_after=3, wait=True)
    run.subscribe(lambda e: e["event"] == "stuck" and sim.stall(TopicPartition("a", 1), False))
    res = run.run()
    assert res.state == "done" and len(events(tmp_path, "stuck")) == 1


def test_move_deadline_stop_and_run_deadline_cancel(tmp_path):
    sim = cluster(4, size=20 * MB)
    res = make_run(
        sim,
        shift_plan(sim),
        tmp_path,
        batch_size=1,
        incremental=True,
        move_deadline=2,
        on_deadline="stop",
    ).run()
    assert res.state == "deadline" and len(res.still_moving) == 1 and exact_throttles(sim)
    sim2 = cluster(4, size=20 * MB)
    (tmp_path / "b").mkdir()
    res = make_run(
        sim2, shift_plan(sim2), tmp_path / "b", run_deadline=3, on_deadline="cancel", wait=True
    ).run()
    assert res.state == "deadline" and len(res.cancelled) == 4
    assert not sim2.list_reassignments() and sim2.current_throttles().is_empty()


def test_killed_run_resumes_without_resubmitting_and_caps_hold(tmp_path):
    """The CLI SIGKILLed (a real signal, its exit path never runs, its journal as far as it
    got) at its 15th poll, the cluster going on meanwhile, then ``--resume``d."""
    sim = cluster(10, size=6 * MB)
    plan = shift_plan(sim)
    plan.write(str(tmp_path / "plan.json"))
    bootstrap = sim_file(sim, tmp_path)
    journal = str(tmp_path / "run.jsonl")
    run = ["--execute", "--reassignment-json-file", str(tmp_path / "plan.json")]
    run += ["--journal", journal]
    p = cli(bootstrap, [*run, "--throttle", str(RATE), "--reassignment-batch-size", "3",
                        "--incremental", "--wait"], tmp_path, kill_at="sleep:15", fork=True)  # fmt: skip
    assert killed(p), p.stdout + p.stderr
    before = events(tmp_path)
    assert before[-1]["event"] != "run_finished"
    done_before = {e["partition"] for e in before if e["event"] == "completed"}
    sim = load(path_of(bootstrap))
    assert done_before and len(done_before) < 10 and sim.list_reassignments()
    sim.sleep(0.5)  # the cluster goes on while nobody watches
    save(sim, path_of(bootstrap))
    p = cli(bootstrap, [*run, "--resume"], tmp_path, fork=True)
    assert p.returncode == 0, p.stdout + p.stderr
    sim = load(path_of(bootstrap))
    assert sim.assignment() == {m.tp: m.replicas for m in plan}
    ev = events(tmp_path)
    assert ev[-1]["event"] == "run_finished" and ev[-1]["state"] == "done"
    subs = [e["partition"] for e in ev if e["event"] == "submitted"]
    assert sorted(subs) == list(range(10)), "nothing submitted twice"
    assert {e["partition"] for e in ev if e["event"] == "adopted"}
    assert peak_concurrency(ev) <= 3
    assert len({e["run_id"] for e in ev}) == 1
    assert sim.current_throttles().is_empty()


def test_resume_checks_the_plan(tmp_path):
    sim = cluster(4)
    make_run(sim, shift_plan(sim), tmp_path).run()
    with pytest.raises(UsageError, match="plan differs"):
        Run(
            sim,
            shift_plan(sim, 1),
            ExecuteOptions(),
            journal_path=tmp_path / "run.jsonl",
            resume=True,
            clock=sim.now,
            sleep=sim.sleep,
        ).run()


def test_bad_input_sends_nothing(tmp_path):
    sim = cluster(2)
    plan = Plan.of([Move(TopicPartition("nope", 0), (1, 2))])
    with pytest.raises(UsageError, match="nope-0"):
        make_run(sim, plan, tmp_path).run()
    assert sim.calls["alter_reassignments"] == 0
    for bad, opt in [
        (dict(batch_size=-1), "--reassignment-batch-size"),
        (dict(incremental=True), "--incremental"),
        (dict(poll_interval_ms=0), "--reassignment-poll-interval-ms"),
        (dict(on_deadline="panic"), "--on-deadline"),
        (dict(stuck_after=0), "--stuck-after"),
        (dict(order="random"), "--order"),
    ]:
        with pytest.raises(UsageError, match=opt):
            ExecuteOptions(**bad).validate()


def test_foreign_reassignment_needs_additional_and_cluster_cap_counts_it(tmp_path):
    sim = cluster(8, size=4 * MB)
    sim.add_topic("other", [[0, 1]], 50 * MB)
    sim.alter_reassignments({TopicPartition("other", 0): (2, 3)})
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas))
        for tp, sp in sim.partitions.items()
        if tp.topic == "a"
    )
    # the preflight's refusal, message and exit code (6), also for a Run started directly
    with pytest.raises(ReassignmentInProgressError, match="cannot execute: 1 partition") as e:
        make_run(sim, plan, tmp_path).run()
    assert e.value.exit_code == 6
    assert sim.calls["alter_reassignments"] == 1
    peak = {"n": 0}
    real = sim.alter_reassignments

    def counting(targets, allow_replication_factor_change=True):
        r = real(targets, allow_replication_factor_change)
        peak["n"] = max(peak["n"], len(sim.list_reassignments()))
        return r

    sim.alter_reassignments = counting
    res = make_run(
        sim, plan, tmp_path, additional=True, cluster_max_reassignments=3, wait=True
    ).run()
    assert res.state == "done" and peak["n"] <= 3
    # ours are gone; the other move, still in flight, stays throttled (as the official tool
    # throttles every reassignment in flight when it submits)
    assert sim.list_reassignments() and exact_throttles(sim)
    assert not sim.current_throttles().follower_replicas.get("a")


def test_one_poll_costs_a_few_admin_calls_whatever_the_plan_size(tmp_path):
    per_poll = []
    for n in (10, 400):
        sim = cluster(n, size=50 * MB)
        run = make_run(sim, shift_plan(sim), tmp_path, batch_size=5, incremental=True)
        run.parts.begin.begin()
        run.parts.loop.step_once()
        before = sum(sim.calls.values())
        for _ in range(3):
            sim.sleep(0.5)
            run.parts.loop.step_once()
        per_poll.append((sum(sim.calls.values()) - before) / 3)
        run.shared.journal.close()
    assert per_poll[1] == per_poll[0] and per_poll[0] <= 4


def test_steps_hook_journals_each_step(tmp_path):
    sim = SimCluster(6, bandwidth=50 * MB)
    sim.add_topic("s", [[0, 1, 2]], 1 * MB)
    plan = Plan.of([Move(TopicPartition("s", 0), (3, 4, 5))])

    def two_steps(move, state, original):
        return [(3, 0, 1, 2), (3, 4, 5)] if tuple(state.replicas) == (0, 1, 2) else [(3, 4, 5)]

    run = Run(
        sim,
        plan,
        ExecuteOptions(throttle=RATE, wait=True),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
        steps_for=two_steps,
    )
    assert run.run().state == "done"
    steps = events(tmp_path, "step_submitted")
    assert [(e["step"], e["steps"], e["target"]) for e in steps] == [
        (1, 2, [3, 0, 1, 2]),
        (2, 2, [3, 4, 5]),
    ]
    assert len(events(tmp_path, "submitted")) == 1
    assert sim.assignment()[TopicPartition("s", 0)] == (3, 4, 5)


def test_parallel_replica_count_uses_the_kip435_planner(tmp_path):
    from reassign_kit.moves.steps import plan_steps

    sim = SimCluster(10, bandwidth=50 * MB)
    sim.add_topic("k", [[0, 1, 2, 3, 4]], 1 * MB)
    plan = Plan.of([Move(TopicPartition("k", 0), (5, 6, 7, 8, 9))])
    res = make_run(sim, plan, tmp_path, parallel_replica_count=2, wait=True).run()
    assert res.state == "done"
    got = [tuple(e["target"]) for e in events(tmp_path, "step_submitted")]
    assert got == plan_steps((0, 1, 2, 3, 4), (5, 6, 7, 8, 9), 2)
    assert got[-1] == (5, 6, 7, 8, 9) and len(got) > 1


def test_journal_redacts_secrets_and_reads_back(tmp_path):
    with Journal(tmp_path / "j.jsonl", "r1") as j:
        j.write(
            "warning",
            options={"sasl.password": "p4ss", "sasl.jaas.config": "user=x password=hunter2xyz"},
            msg="user=x password=k3ypass",
        )
    text = (tmp_path / "j.jsonl").read_text()
    for s in ("p4ss", "hunter2xyz", "k3ypass"):
        assert s not in text
    assert redact({"a": ["user=x password=hunter2xyz"]}) != {"a": ["user=x password=hunter2xyz"]}
    with open(tmp_path / "j.jsonl", "a") as f:
        f.write('{"ts": 1, "event": "torn')  # a SIGKILL mid-write
    df = to_pandas(tmp_path / "j.jsonl")
    assert list(df["event"]) == ["warning"] and "time" in df


def test_run_started_records_versions_and_plan_digest(tmp_path):
    sim = cluster(2)
    plan = shift_plan(sim)
    make_run(sim, plan, tmp_path).run()
    started = events(tmp_path, "run_started")[0]
    assert started["kafka_version"] == "simulated" and started["cluster"]["brokers"] == 4
    assert started["reassign_kit_version"] and started["plan_digest"] == plan.digest()


def test_log_dirs_paced_moves_complete_only_in_their_dirs_with_the_log_dir_throttle(tmp_path):
    from reassign_kit.cluster.config import LOG_DIR_RATE

    sim = cluster(4, size=2 * MB)
    d1 = lambda b: sim.log_dirs_of(b)[1]  # noqa: E731
    moves = []
    for tp, sp in sim.partitions.items():
        tgt = tuple((b + 2) % 4 for b in sp.replicas) if tp.partition < 3 else tuple(sp.replicas)
        moves.append(Move(tp, tgt, (d1(tgt[0]), "any")))  # a-3: only between log dirs
    plan = Plan.of(moves)
    real = sim.alter_replica_log_dirs

    def guarded(assignments):  # a move between log dirs never starts unthrottled
        for _tp, b in assignments:
            assert sim.broker_cfg.get(b, {}).get(LOG_DIR_RATE) == str(MB // 2)
        return real(assignments)

    sim.alter_replica_log_dirs = guarded
    res = make_run(sim, plan, tmp_path, batch_size=2, wait=True, log_dir_throttle=MB // 2).run()
    assert res.state == "done" and sim.assignment() == {m.tp: m.replicas for m in plan}
    for m in plan:
        sp = sim.partitions[m.tp]
        assert sp.dirs[m.replicas[0]] == m.log_dirs[0] and not sp.future
    ev = events(tmp_path)
    started = {(e["partition"], e["broker"]) for e in ev if e["event"] == "log_dir_started"}
    assert started == {(m.partition, m.replicas[0]) for m in plan}
    # batch 2 starts only once batch 1 is complete, log dirs included
    first = [e for e in ev if e["event"] == "submitted" and e["batch"] == 1][0]["ts"]
    assert all(
        e["ts"] <= first for e in ev if e["event"] == "completed" and e["partition"] in (0, 1)
    )
    assert not sim.broker_cfg and exact_throttles(sim)


def test_a_log_dir_move_that_cannot_begin_fails_the_run_after_the_timeout(tmp_path):
    sim = cluster(2)
    plan = Plan.of(
        Move(tp, tgt, ("any", sim.log_dirs_of(tgt[1])[1]))
        for tp, sp in sim.partitions.items()
        if (tgt := tuple((b + 2) % 4 for b in sp.replicas))
    )
    sim.alter_replica_log_dirs = lambda a: dict.fromkeys(a, "ReplicaNotAvailable")
    with pytest.raises(RunError, match="--timeout"):
        make_run(sim, plan, tmp_path, timeout_s=2, wait=True).run()
    assert exact_throttles(sim)


def test_kip1335_return_point_waits_for_log_dir_moves_to_begin(tmp_path):
    from reassign_kit.cluster.config import LOG_DIR_RATE

    sim = cluster(2, size=8 * MB)
    plan = Plan.of(
        Move(tp, tgt, (sim.log_dirs_of(tgt[0])[1], "any"))
        for tp, sp in sim.partitions.items()
        if (tgt := tuple((b + 2) % 4 for b in sp.replicas))
    )
    res = make_run(sim, plan, tmp_path, batch_size=1, log_dir_throttle=MB).run()
    assert res.state == "submitted" and res.still_moving
    assert len(events(tmp_path, "log_dir_started")) == 2  # begun before the run returned
    # exactly the log-dir throttle the move still copying needs: a-1 into broker 3, not a-0's 2
    assert res.still_moving == [TopicPartition("a", 1)] and res.completed == [
        TopicPartition("a", 0)
    ]
    assert sim.broker_cfg[3].get(LOG_DIR_RATE) and LOG_DIR_RATE not in sim.broker_cfg.get(2, {})
    sim.sleep(60)
    assert verify_mod.verify(sim, plan).exit_code == 0 and not sim.broker_cfg


def test_another_runs_throttles_are_left_as_they_were(tmp_path):
    from reassign_kit.cluster.config import (
        FOLLOWER_RATE,
        FOLLOWER_REPLICAS,
        LEADER_RATE,
        LEADER_REPLICAS,
    )

    sim = SimCluster(6, bandwidth=50 * MB)
    sim.add_topic("other", [[4, 5]], 500 * MB)
    sim.add_topic("a", [[1, 2], [2, 1]], 2 * MB)
    sim.alter_reassignments({TopicPartition("other", 0): (0, 5)})  # another run, 50 B/s
    theirs_topic = {LEADER_REPLICAS: "0:4,0:5", FOLLOWER_REPLICAS: "0:0"}
    theirs_rate = {LEADER_RATE: "50", FOLLOWER_RATE: "50"}
    sim.alter_topic_configs({"other": theirs_topic})
    sim.alter_broker_configs(dict.fromkeys((0, 4, 5), theirs_rate))
    touched: set = set()
    real = sim.alter_broker_configs
    sim.alter_broker_configs = lambda ch: (touched.update(ch), real(ch))[1]
    plan = Plan.of(Move(TopicPartition("a", p), (3, 2)) for p in (0, 1))
    res = make_run(sim, plan, tmp_path, additional=True, wait=True).run()
    assert res.state == "done" and touched and not touched & {0, 4, 5}
    assert sim.topic_cfg == {"other": theirs_topic}
    assert sim.broker_cfg == dict.fromkeys((0, 4, 5), theirs_rate)


def _stepped_run(tmp_path, r_after, **opts):
    """Two RF-3 moves (0,1,2) -> (3,4,5), one at a time, R=2; R becomes ``r_after`` once the
    first step of the first move is complete (from a callback, as the panel does)."""
    sim = SimCluster(6, bandwidth=50 * MB)
    sim.add_topic("s", [[0, 1, 2], [0, 1, 2]], 1 * MB)
    plan = Plan.of(Move(TopicPartition("s", p), (3, 4, 5)) for p in (0, 1))
    run = make_run(
        sim, plan, tmp_path, batch_size=1, incremental=True, parallel_replica_count=2, wait=True
    )

    def on(e):
        if e["event"] == "step_completed" and run.parallel_replica_count == 2:
            run.set_caps(parallel_replica_count=r_after)

    run.subscribe(on)
    assert run.run().state == "done"
    assert sim.assignment()[TopicPartition("s", 0)] == (3, 4, 5)
    return {
        p: [
            (e["step"], e["steps"], tuple(e["target"]))
            for e in events(tmp_path, "step_submitted")
            if e["partition"] == p
        ]
        for p in (0, 1)
    }


def test_parallel_replica_count_changed_mid_run_replans_the_steps_left(tmp_path):
    from reassign_kit.moves.steps import plan_steps

    got = _stepped_run(tmp_path, 1)
    # the move part-way keeps its completed step and numbering; the steps left use R=1
    assert [t for _, _, t in got[0]] == [(3, 0, 1, 2), *plan_steps((3, 0, 1, 2), (3, 4, 5), 1)]
    assert [(i, n) for i, n, _ in got[0]] == [(1, 3), (2, 4), (3, 4), (4, 4)]
    # a move not started yet goes one replica at a time from its first step
    assert [t for _, _, t in got[1]] == plan_steps((0, 1, 2), (3, 4, 5), 1)
    (changed,) = events(tmp_path, "caps_changed")
    assert changed["caps"]["parallel_replica_count"] == 1
    assert changed["caps"]["prefer_leader_moves"] is True


def test_parallel_replica_count_none_mid_run_moves_the_rest_at_once(tmp_path):
    got = _stepped_run(tmp_path, None)
    assert [t for _, _, t in got[0]] == [(3, 0, 1, 2), (3, 4, 5)]
    assert [t for _, _, t in got[1]] == [(3, 4, 5)]
    (changed,) = events(tmp_path, "caps_changed")
    assert changed["caps"]["parallel_replica_count"] is None
    assert changed["caps"]["prefer_leader_moves"] is False


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_parallel_replica_count_change_refused(tmp_path, bad):
    sim = cluster(2)
    run = make_run(sim, shift_plan(sim), tmp_path, parallel_replica_count=2)
    with pytest.raises(UsageError, match="--parallel-replica-count"):
        run.set_caps(parallel_replica_count=bad)
    assert run.parallel_replica_count == 2 and run.caps.prefer_leader_moves


@pytest.mark.parametrize("r", [1, None])
def test_completed_duration_counts_from_the_first_submission(tmp_path, r):
    """Model time starts at 0.0: a move submitted then (stepped or not) still reports how long
    it took, from its first step's submission to its completion."""
    sim = SimCluster(6, bandwidth=1 * MB)
    sim.add_topic("d", [[0, 1, 2], [1, 2, 0]], 1 * MB)
    plan = Plan.of(Move(TopicPartition("d", p), (3, 4, 5)) for p in (0, 1))
    run = make_run(sim, plan, tmp_path, parallel_replica_count=r, wait=True, throttle=None)
    assert run.run().state == "done"
    first = {}
    for e in events(tmp_path, "submitted"):
        first.setdefault(e["partition"], e["ts"])
    done = events(tmp_path, "completed")
    assert sorted(e["partition"] for e in done) == [0, 1]
    for e in done:
        assert e["duration_s"] == round(e["ts"] - first[e["partition"]], 3)
        assert e["duration_s"] > 0
    if r == 1:
        assert min(first.values()) == 0.0 and min(e["duration_s"] for e in done) >= 3
