"""Cost that follows the work, checked by counting work, never by timing it:
the rollback plan is one pass over the plan (it re-scanned the plan per partition) and gives
the same plan as the quadratic version did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reassign_kit.cluster.views import rollback_plan
from reassign_kit.model import ANY_LOG_DIR, Move, PartitionState, Plan, TopicPartition
from reassign_kit.moves.journal_rules import seal

TP = TopicPartition


def reference_rollback_plan(plan, states, replica_dirs=None):
    """The rollback plan as it was first written (quadratic: the log-dir check re-scanned
    the plan for every partition): the specification the linear version must keep."""
    moves = []
    for m in plan:
        st_ = states.get(m.tp)
        if st_ is None:
            continue
        reps = (
            tuple(r for r in st_.replicas if r not in st_.adding)
            if st_.reassigning
            else st_.replicas
        )
        dirs = None
        if any(x.log_dirs is not None for x in plan) and replica_dirs is not None:
            dirs = tuple(replica_dirs.get((m.tp, r), ANY_LOG_DIR) for r in reps)
        moves.append(Move(m.tp, reps, dirs))
    return Plan.of(moves)


class CountingPlan(Plan):
    """A plan that counts how many times it is walked."""

    def __init__(self, moves):
        super().__init__(moves)
        object.__setattr__(self, "walks", 0)

    def __iter__(self):
        object.__setattr__(self, "walks", self.walks + 1)
        return super().__iter__()


replica_lists = st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)


@st.composite
def cases(draw):
    n = draw(st.integers(0, 12))
    tps = [TP(draw(st.sampled_from("ab")), p) for p in range(n)]
    tps = sorted(set(tps))
    with_dirs = draw(st.booleans())
    moves, states, dirs = [], {}, {}
    for tp in tps:
        target = draw(replica_lists)
        log_dirs = None
        if with_dirs and draw(st.booleans()):
            log_dirs = tuple(draw(st.sampled_from(["/d1", "/d2", ANY_LOG_DIR])) for _ in target)
        moves.append(Move(tp, tuple(target), log_dirs))
        if draw(st.integers(0, 4)) == 0:
            continue  # unknown to the cluster: left out of the rollback
        replicas = tuple(draw(replica_lists))
        adding = tuple(r for r in replicas if draw(st.booleans()))
        removing = tuple(r for r in replicas if r not in adding and draw(st.booleans()))
        states[tp] = PartitionState(tp, replicas, replicas, replicas[0], adding, removing)
        for r in replicas:
            if draw(st.booleans()):
                dirs[(tp, r)] = draw(st.sampled_from(["/d1", "/d2"]))
    return Plan.of(moves), states, (dirs if draw(st.booleans()) else None)


@settings(max_examples=150, deadline=None)
@given(cases())
def test_rollback_plan_is_the_same_plan_as_before(case):
    plan, states, dirs = case
    assert rollback_plan(plan, states, dirs) == reference_rollback_plan(plan, states, dirs)


def test_rollback_plan_walks_the_plan_a_constant_number_of_times():
    # without log dirs in the plan the quadratic version walked the plan once per partition
    # (n + 1 walks); the linear one walks it at most twice whatever its size
    for n in (10, 1000):
        moves = [Move(TP("t", p), (1, 2)) for p in range(n)]
        states = {m.tp: PartitionState(m.tp, (0, 1), (0, 1), 0) for m in moves}
        dirs = {(m.tp, b): "/d" for m in moves for b in (0, 1)}
        plan = CountingPlan(tuple(moves))
        out = rollback_plan(plan, states, dirs)
        assert len(out) == n
        assert plan.walks <= 2, (n, plan.walks)


# ---- Run.status(): counts kept by the transitions, rows only when asked ---------------------


class CountingList(list):
    """A list that counts how many times it is walked."""

    walks = 0

    def __iter__(self):
        self.walks += 1
        return super().__iter__()


def test_run_status_counts_follow_the_moves_without_walking_them(tmp_path):
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.moves.results import RunStatus
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(12)], 2 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    run = Run(
        sim,
        plan,
        ExecuteOptions(
            batch_size=3,
            incremental=True,
            parallel_replica_count=1,  # steps: moves between steps (ready) count as moving
            wait=True,
            throttle=1 * MB,
        ),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    seen: list[tuple] = []
    real_poll = run.parts.loop.poll

    def poll():
        out = real_poll()
        order = CountingList(run.shared.order)
        run.shared.order = order
        st = run.status()
        assert order.walks == 0  # the counts cost nothing per move
        walked = RunStatus.of(st.state, st.run_id, [run.shared.moves[tp] for tp in order], None)
        got = (st.done, st.moving, st.pending, st.failed, st.cancelled, st.total)
        want = (
            walked.done,
            walked.moving,
            walked.pending,
            walked.failed,
            walked.cancelled,
            walked.total,
        )
        assert got == want
        walks = order.walks
        assert st.rows == [run.shared.moves[tp].row() for tp in plan_order]
        assert order.walks == walks + 1  # rows: built when asked for, one walk
        seen.append(got)
        return out

    plan_order: list = []
    run.parts.loop.poll = poll
    real_begin = run.parts.begin.begin

    def begin():
        real_begin()
        plan_order.extend(run.shared.order)

    run.parts.begin.begin = begin
    res = run.run()
    assert res.state == "done"
    assert len(seen) > 3
    assert any(0 < s[0] < 12 and s[1] > 0 and s[2] > 0 for s in seen), seen  # mid-run seen
    assert seen[-1] == (12, 0, 0, 0, 0, 12)


# ---- a poll reads the pending moves only as far as it submits ------------------------------


class Counted:
    """An iterable that counts the items taken from it."""

    def __init__(self, items):
        self.items, self.taken = list(items), 0

    def __iter__(self):
        for it in self.items:
            self.taken += 1
            yield it


def test_decide_reads_pending_only_as_far_as_it_submits():
    from reassign_kit.moves.schedule import Caps, Item, assign_batches, decide

    items = [Item(TP("t", p), frozenset({p % 7, (p + 1) % 7})) for p in range(10_000)]
    # incremental, 5 in flight, room for 2 more
    pending = Counted(items[5:])
    d = decide(pending, items[: 5 - 2], Caps(5, incremental=True))
    assert len(d.submit) == 2 and pending.taken <= 3
    # incremental, full: nothing read beyond the first
    pending = Counted(items[5:])
    assert decide(pending, items[:5], Caps(5, incremental=True)).submit == ()
    assert pending.taken <= 1
    # batch mode: the current batch only
    numbered = assign_batches(items, Caps(4))
    pending = Counted(numbered)
    d = decide(pending, [], Caps(4))
    assert d.submit == tuple(i.tp for i in numbered[:4]) and pending.taken <= 5
    # a batch still in flight: waiting, nothing beyond the first read
    pending = Counted(numbered[4:])
    d = decide(pending, numbered[2:4], Caps(4))
    assert d.submit == () and d.waiting_reason == "waiting for batch 0 to complete"
    assert pending.taken == 1


def test_a_paced_run_reads_pending_moves_only_as_far_as_it_submits(tmp_path, monkeypatch):
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.run import submit as submit_mod
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    n, cap = 400, 8
    sim = SimCluster(8, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 8, (p + 1) % 8] for p in range(n)], 1 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 8 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    reads: list[int] = []
    real_decide = submit_mod.decide

    def decide(pending, *a, **k):
        counted = Counted(pending)
        d = real_decide(counted, *a, **k)
        reads.append(counted.taken)
        return d

    monkeypatch.setattr(submit_mod, "decide", decide)
    run = Run(
        sim,
        plan,
        ExecuteOptions(batch_size=cap, incremental=True, wait=True, throttle=1 * MB),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    assert run.run().state == "done"
    assert len(reads) >= n // cap
    # every poll read at most the moves it could submit and the one after (was: every
    # pending move of the plan, at every poll)
    assert max(reads) <= cap + 1, reads


# ---- throttles computed again only when what is in flight changed ---------------------------


def test_throttles_are_computed_again_only_when_the_moves_in_flight_change(tmp_path, monkeypatch):
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run
    from reassign_kit.throttles import configs as thr

    sim = SimCluster(4, bandwidth=1 * MB, tick=1.0)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], 10 * MB)  # ~10 polls a move
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    computed = {"n": 0}
    real = thr.throttles_for

    def throttles_for(moves):
        computed["n"] += 1
        return real(moves)

    monkeypatch.setattr(thr, "throttles_for", throttles_for)
    run = Run(
        sim,
        plan,
        ExecuteOptions(
            batch_size=2, incremental=True, wait=True, throttle=1 * MB, poll_interval_ms=1000
        ),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    views: list = []
    real_list = sim.list_reassignments

    def list_reassignments():
        out = real_list()
        views.append(out)
        return out

    monkeypatch.setattr(sim, "list_reassignments", list_reassignments)
    res = run.run()
    assert res.state == "done"
    changes = sum(1 for a, b in zip(views, views[1:], strict=False) if a != b)
    polls = len(views)
    assert polls >= 20, polls
    # a sync per poll computed the throttles at every poll; now only when the reassignments
    # in flight changed (or a submission / the end needs them), plus the next poll after a write
    assert computed["n"] <= 2 * changes + 6, (computed, changes, polls)
    assert computed["n"] < polls / 2, (computed, polls)


# ---- the journal: the redaction regex only for lines whose shape could need it -------------


def test_journal_lines_are_what_redaction_gives_and_plain_events_skip_the_regex(
    tmp_path, monkeypatch
):
    import json

    from reassign_kit.moves import journal as jr

    searched = {"n": 0}
    real = jr.might_hold_secrets

    def might_hold_secrets(text, secret_keys=()):
        searched["n"] += 1
        return real(text, secret_keys)

    monkeypatch.setattr(jr, "might_hold_secrets", might_hold_secrets)
    events = [
        ("submitted", {"topic": "a", "partition": 1, "target": [1, 2], "batch": None}),
        ("completed", {"topic": "tokens", "partition": 0, "replicas": (2, 3), "duration_s": 1.5}),
        ("warning", {"message": "broker 3 (timed out); their moves count as waiting"}),
        ("step_submitted", {"topic": "a", "partition": 1, "step": 1, "target": [3]}),
        ("run_started", {"options": {"password": "hunter2", "x": 1}}),
        ("error", {"message": "login failed: password=hunter2; retry"}),
        ("custom", {"sasl.jaas.config": "x", "brokers": [1]}),
        ("custom", {"mine": "s3cr3t"}),
        ("custom", {"values": ["a=b", "c"]}),
    ]
    path = tmp_path / "j.jsonl"
    with jr.Journal(path, "r1", clock=lambda: 1.0, secrets=("mine",)) as j:
        for ev, fields in events:
            j.write(ev, **fields)
    lines = path.read_text().splitlines()
    for line, (ev, fields) in zip(lines, events, strict=True):
        rec = {"ts": 1.0, "event": ev, "run_id": "r1", **fields}
        assert line == seal(json.dumps(jr.redact(rec, ("mine",)), separators=(",", ":")))
    assert "hunter2" not in path.read_text() and "s3cr3t" not in path.read_text()
    # only the events with nested objects, '=' in a string or a secret key took the regex
    assert searched["n"] == 5, searched


# ---- the simulator hands out the same state while nothing changed --------------------------


def test_simulated_states_are_always_what_the_partition_is_now(tmp_path, monkeypatch):
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    sim = SimCluster(5, bandwidth=2 * MB, tick=0.5)
    sim.add_topic("a", [[p % 5, (p + 1) % 5, (p + 2) % 5] for p in range(10)], 3 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 5 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    checked = {"n": 0, "hits": 0}
    real_sleep = sim.sleep

    def sleep(seconds):
        real_sleep(seconds)
        for sp in sim.partitions.values():
            before = sp._cached[7] if sp._cached is not None else None
            got = sp.state()
            assert got == sp._state()  # never stale
            checked["n"] += 1
            checked["hits"] += got is before

    monkeypatch.setattr(sim, "sleep", sleep)
    run = Run(
        sim,
        plan,
        ExecuteOptions(
            batch_size=4, incremental=True, parallel_replica_count=1, wait=True, throttle=1 * MB
        ),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    assert run.run().state == "done"
    assert checked["n"] > 100 and checked["hits"] > checked["n"] // 2, checked
    # a test (or a fault) that replaces a list is seen at once
    sp = sim.partitions[TP("a", 0)]
    sp.state()
    sp.isr = sp.isr[:1]
    assert sp.state().isr == tuple(sp.isr)


def test_journal_looks_at_an_event_kinds_keys_once_not_at_every_event(tmp_path, monkeypatch):
    """A poll that turns 2,000 moves over writes ~6,000 events: the secret-key test of every
    key of every event (then json.dumps building an encoder per line) was most of it. Now an
    event's keys are looked at once per kind of event; the lines are unchanged."""
    import json

    from reassign_kit.moves import journal as jr

    looked = {"keys": 0, "shapes": 0}
    real_key, real_plain = jr.is_secret_key, jr._may_redact

    def is_secret_key(key, extra=frozenset()):
        looked["keys"] += 1
        return real_key(key, extra)

    def plain(rec, extra):
        looked["shapes"] += 1
        return real_plain(rec, extra)

    monkeypatch.setattr(jr, "is_secret_key", is_secret_key)
    monkeypatch.setattr(jr, "_may_redact", plain)
    path = tmp_path / "j.jsonl"
    n = 500
    with jr.Journal(path, "r1", clock=lambda: 2.5) as j:
        for p in range(n):
            j.write("completed", topic="a", partition=p, replicas=[3, 4], duration_s=20.0)
            j.write(
                "submitted",
                topic="a",
                partition=p,
                target=[3, 4],
                current=(1, 2),
                batch=None,
                size_bytes=1 << 20,
                moves_leader=True,
                brokers=[1, 2, 3, 4],
            )
    lines = path.read_text().splitlines()
    assert len(lines) == 2 * n
    assert lines[1] == seal(
        json.dumps(
            {
                "ts": 2.5,
                "event": "submitted",
                "run_id": "r1",
                "topic": "a",
                "partition": 0,
                "target": [3, 4],
                "current": [1, 2],
                "batch": None,
                "size_bytes": 1 << 20,
                "moves_leader": True,
                "brokers": [1, 2, 3, 4],
            },
            separators=(",", ":"),
        )
    )

    # two kinds of events: their keys (8 + 11) looked at once each, their shape once each
    # (was: every key of every event, 19 * n, and the shape of every event)
    assert looked["keys"] <= 19 and looked["shapes"] <= 2, looked


def test_a_nested_event_without_secrets_skips_the_regex(tmp_path, monkeypatch):
    """``throttle_set`` carries every throttled-replica list (tens of kilobytes with 2,000
    moves in flight): the regex over its line, at every change, is skipped when no key at
    any depth is secret-looking and no string holds '='; a nested secret is still found."""
    import json

    from reassign_kit.moves import journal as jr

    searched = {"n": 0}
    real = jr.might_hold_secrets

    def might_hold_secrets(text, secret_keys=()):
        searched["n"] += 1
        return real(text, secret_keys)

    monkeypatch.setattr(jr, "might_hold_secrets", might_hold_secrets)
    lists = {f"t{t}": ",".join(f"{p}:{p % 7}" for p in range(300)) for t in range(5)}
    path = tmp_path / "j.jsonl"
    with jr.Journal(path, "r1", clock=lambda: 1.0) as j:
        for _ in range(10):
            j.write("throttle_set", rate=1, leader_replicas=lists, broker_rates={"1": 5})
        j.write("throttle_set", rate=1, leader_replicas={"t": "0:1"}, extra={"password": "x"})
    assert searched["n"] == 1  # the one with a nested secret key
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["leader_replicas"] == lists
    assert json.loads(lines[-1])["extra"] == {"password": "***"}


def test_the_listing_after_a_submission_does_not_build_the_same_throttles_again(
    tmp_path, monkeypatch
):
    """A poll that submits N moves throttles them first, then reads the cluster again and
    syncs: the reassignments it lists are the moves just throttled, so their lists are not
    built and sorted a second time (2,000 moves: a tenth of that poll)."""
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run
    from reassign_kit.throttles import configs as thr

    sim = SimCluster(6, bandwidth=1 * MB, tick=1.0)
    sim.add_topic("a", [[p % 6, (p + 1) % 6] for p in range(12)], 5 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 6 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    calls: list[int] = []
    real = thr.throttles_for

    def throttles_for(moves):
        calls.append(len(moves))
        return real(moves)

    monkeypatch.setattr(thr, "throttles_for", throttles_for)
    run = Run(
        sim,
        plan,
        ExecuteOptions(batch_size=6, incremental=True, wait=True, throttle=1 * MB),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    per_poll: list[tuple[int, int]] = []  # (moves submitted, throttles computed) per poll
    real_poll = run.parts.loop.poll

    def poll():
        before_calls, before_sub = len(calls), run.shared.index.submitted
        try:
            return real_poll()
        finally:
            per_poll.append((run.shared.index.submitted - before_sub, len(calls) - before_calls))

    run.parts.loop.poll = poll
    assert run.run().state == "done"
    submitting = [c for n, c in per_poll if n]
    assert len(submitting) >= 2
    # the moves to submit (with those in flight), and what the operator's values are taken
    # for at the change; not a third time for the same moves listed after the submission
    assert max(submitting) <= 2, per_poll


# ---- the simulator's config calls follow the topics asked, not the partitions ---------------


def test_simulated_config_calls_do_not_walk_every_partition():
    from reassign_kit.cluster.config import FOLLOWER_REPLICAS, LEADER_REPLICAS
    from reassign_kit.cluster.simulate import SimCluster

    class CountingDict(dict):
        walks = 0

        def __iter__(self):
            CountingDict.walks += 1
            return super().__iter__()

    sim = SimCluster(4)
    for t in "abc":
        sim.add_topic(t, [[p % 4, (p + 1) % 4] for p in range(50)])
    sim.partitions = CountingDict(sim.partitions)
    for _ in range(20):
        sim.throttle_configs(["a", "b", "zz"], [0, 1])
        sim.topic_configs(["a", "c"])
    assert CountingDict.walks <= 1  # was one walk per call
    sim.alter_topic_configs({"a": {LEADER_REPLICAS: "0:0,1:1"}, "b": {FOLLOWER_REPLICAS: "2:3"}})
    kept = sim.throttles.follower_replicas["b"]
    sim.alter_topic_configs({"a": {LEADER_REPLICAS: "0:0,1:1,2:2"}})
    # the list that did not change is not read again; the one that did is
    assert sim.throttles.follower_replicas["b"] is kept
    assert sim.throttles.leader_replicas["a"] == {(0, 0), (1, 1), (2, 2)}
    assert set(sim.topic_configs(["a", "zz"])) == {"a"}
    sim.add_topic("zz", [[0, 1]])
    assert set(sim.topic_configs(["a", "zz"])) == {"a", "zz"}  # a new topic is seen at once


# ---- a full garbage collection never runs in the middle of a poll ---------------------------


def test_full_garbage_collections_run_between_polls_not_in_them(tmp_path):
    """A full collection walks every object of the process (a plan's moves: a tenth of a
    second per 100,000 partitions); it used to fall in whichever poll allocated past the
    threshold. Now it waits for the poll's end and runs before the loop sleeps, as often as
    CPython's own rule says. Thresholds made small so that the rule fires often here."""
    import gc

    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    sim = SimCluster(4, bandwidth=4 * MB, tick=1.0)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(16)], 2 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    run = Run(
        sim,
        plan,
        ExecuteOptions(batch_size=4, incremental=True, wait=True, throttle=1 * MB),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    where = {"poll": False}
    full: list[bool] = []  # for each full collection: did it run inside a poll?
    keep: list = []
    real_poll = run.parts.loop.poll

    def poll():
        where["poll"] = True
        try:
            keep.extend([i] for i in range(3000))  # long-lived objects: a full one comes due
            return real_poll()
        finally:
            where["poll"] = False

    def seen(phase, info):
        if phase == "start" and info["generation"] == 2:
            full.append(where["poll"])

    run.parts.loop.poll = poll
    before = gc.get_threshold()
    # the rest of the test session out of the count (the rule weighs growth against every
    # long-lived object of the process): only this run's objects count
    gc.freeze()
    gc.collect()
    gc.set_threshold(50, 2, 2)
    gc.callbacks.append(seen)
    try:
        assert run.run().state == "done"
        assert gc.get_threshold() == (50, 2, 2)  # put back as they were
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*before)
        gc.unfreeze()
    assert len(full) >= 2, full  # collected as often as the rule says, between polls
    assert not any(full), full


# ---- a poll's journal lines go to the OS together ---------------------------------------------


def test_a_polls_journal_lines_go_to_the_os_together_and_before_any_change(tmp_path, monkeypatch):
    """One write per event was a system call per event (~8,000 in a poll turning 2,000 moves
    over); now the poll's lines go together at its end, and before anything is sent (the
    commit before a change hands them over first); an exception in the poll loses nothing."""
    import os

    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.moves import journal as jr
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    class CountingFile:
        def __init__(self, f):
            self.f, self.flushes = f, 0

        def __getattr__(self, name):
            return getattr(self.f, name)

        def flush(self):
            self.flushes += 1
            return self.f.flush()

    files: list[CountingFile] = []
    real_fdopen = os.fdopen

    def fdopen(fd, *a, **k):
        files.append(CountingFile(real_fdopen(fd, *a, **k)))
        return files[-1]

    monkeypatch.setattr(jr.os, "fdopen", fdopen)
    sim = SimCluster(4, bandwidth=4 * MB, tick=1.0)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(16)], 2 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    run = Run(
        sim,
        plan,
        ExecuteOptions(batch_size=8, incremental=True, wait=True, throttle=1 * MB),
        journal_path=tmp_path / "run.jsonl",
        clock=sim.now,
        sleep=sim.sleep,
    )
    on_disk_at_change: list[bool] = []
    originals = sim.assignment()
    intents_read: list[TopicPartition] = []
    real_alter = sim.alter_reassignments

    def alter_reassignments(targets, **k):  # what the journal says so far is on disk
        on_disk = jr.read_events(tmp_path / "run.jsonl")  # the FILE, not the run's memory
        on_disk_at_change.append(len(on_disk) == run.shared.journal.written)
        # write-ahead: each move's intent — its target and its original,
        # in order — is read back from the file before its Alter is sent
        intents = {
            (e["topic"], e["partition"], tuple(e["target"])): e
            for e in on_disk
            if e["event"] == "intent" and e.get("action") == "alter"
        }
        for tp, tgt in targets.items():
            if tgt is not None:
                e = intents.get((tp.topic, tp.partition, tuple(tgt)))
                assert e is not None, f"{tp}: its Alter to {tgt} sent with no intent on disk"
                assert tuple(e["original"]) == originals[tp], (tp, e)
                intents_read.append(tp)
        return real_alter(targets, **k)

    monkeypatch.setattr(sim, "alter_reassignments", alter_reassignments)
    written = {"n": 0}
    real_record = jr.Journal.record  # every line goes through it (``write`` included)

    def record(self, event, fields):
        written["n"] += 1
        self.written = written["n"]
        return real_record(self, event, fields)

    monkeypatch.setattr(jr.Journal, "record", record)
    assert run.run().state == "done"
    events = jr.read_events(tmp_path / "run.jsonl")
    assert len(events) == written["n"] > 60
    assert on_disk_at_change and all(on_disk_at_change)
    assert set(intents_read) == {m.tp for m in plan}  # every move's, read from the file
    # was one per event
    assert files[0].flushes < written["n"] / 2, (files[0].flushes, written["n"])


# ---- the moves in flight are made schedule items only where a cap weighs them ------------------


def test_moves_in_flight_are_read_by_the_scheduler_only_under_a_cap_that_needs_them(tmp_path):
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.moves.schedule import Caps, Item, decide
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    class Sized(Counted):
        def __len__(self):
            return len(self.items)

    items = [Item(TP("t", p), frozenset({p % 7, (p + 1) % 7}), p % 2 == 0) for p in range(50)]
    for caps, reads in (
        (Caps(60, incremental=True), False),  # the count is all it needs
        (Caps(60, incremental=True, max_moves_per_broker=20), True),
        (Caps(60, incremental=True, max_leader_moves=30), True),
    ):
        inflight = Sized(items[:40])
        d = decide(Counted(items[40:]), inflight, caps)
        assert (inflight.taken > 0) == reads, caps
        assert d == decide(items[40:], items[:40], caps)  # the same decision

    def built(**caps) -> int:
        sim = SimCluster(6, bandwidth=1 * MB, tick=1.0)
        sim.add_topic("a", [[p % 6, (p + 1) % 6] for p in range(12)], 4 * MB)
        plan = Plan.of(
            Move(tp, tuple((b + 2) % 6 for b in sp.replicas)) for tp, sp in sim.partitions.items()
        )
        run = Run(
            sim,
            plan,
            ExecuteOptions(batch_size=6, incremental=True, wait=True, throttle=1 * MB, **caps),
            journal_path=tmp_path / f"run{len(caps)}.jsonl",
            clock=sim.now,
            sleep=sim.sleep,
        )
        n = {"n": 0}
        real = run.parts.submit.inflight_item

        def inflight_item(ms):
            n["n"] += 1
            return real(ms)

        run.parts.submit.inflight_item = inflight_item
        assert run.run().state == "done"
        return n["n"]

    assert built() == 0  # was: every move in flight, at every poll
    assert built(max_moves_per_broker=3) > 12


def test_the_legacy_request_runs_at_most_one_full_collection(tmp_path):
    """The legacy request (and the preflight) build objects for the whole plan: each quarter
    of growth started a full collection walking everything built so far (two fifths of a
    100,000-partition request); now at most one runs, at the end of the call."""
    import gc

    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.operations import execute as ops

    sim = SimCluster(6, bandwidth=50 * MB)
    for t in range(4):
        sim.add_topic(f"t{t}", [[p % 6, (p + 1) % 6] for p in range(500)], 1 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 6 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    full = {"n": 0}

    def seen(phase, info):
        full["n"] += phase == "start" and info["generation"] == 2

    before = gc.get_threshold()
    gc.freeze()  # the test session out of the count: only this call's objects weigh
    gc.collect()
    gc.set_threshold(50, 2, 2)
    gc.callbacks.append(seen)
    try:
        res = ops.execute(sim, plan, throttle=50 * MB, rollback_path=str(tmp_path / "rb.json"))
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*before)
        gc.unfreeze()
    assert not res.failed and len(sim.list_reassignments()) == 2000
    assert full["n"] <= 1, full  # was 19 here


def test_a_runs_loop_leaves_what_it_started_with_out_of_full_collections(tmp_path):
    """The plan, the run's moves and the cluster's model live for the whole run: walking them
    at every full collection found nothing (gc.freeze while the loop runs, unfreeze at its
    end; left alone when something else froze objects). The moves share one bound emit (was
    one method object per move)."""
    import gc

    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    def run_of(d):
        sim = SimCluster(4, bandwidth=4 * MB, tick=1.0)
        sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(8)], 2 * MB)
        plan = Plan.of(
            Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
        )
        opts = ExecuteOptions(batch_size=4, incremental=True, wait=True, throttle=1 * MB)
        return Run(sim, plan, opts, journal_path=d / "run.jsonl", clock=sim.now, sleep=sim.sleep)

    assert gc.get_freeze_count() == 0
    run = run_of(tmp_path)
    frozen: list[int] = []
    real_poll = run.parts.loop.poll

    def poll():
        frozen.append(gc.get_freeze_count())
        return real_poll()

    run.parts.loop.poll = poll
    assert run.run().state == "done"
    assert frozen and min(frozen) > 1000, frozen[:3]  # the heap as the loop started
    assert gc.get_freeze_count() == 0  # put back at the end
    assert len({id(ms.emit) for ms in run.shared.moves.values()}) == 1

    (tmp_path / "b").mkdir()
    run = run_of(tmp_path / "b")
    gc.freeze()  # someone else's frozen objects (a pre-fork server)
    try:
        mine = gc.get_freeze_count()
        assert run.run().state == "done"
        # neither added to nor thawed (a few of those objects were freed, as always)
        assert mine - 100 <= gc.get_freeze_count() <= mine
    finally:
        gc.unfreeze()


# ---- plan and rollback files: json's text, without its pure-Python path ---------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(json_values, st.sampled_from([0, 2, 4]))
def test_indented_json_is_json_dumps_text(value, indent):
    import json

    from reassign_kit.model import indented_json

    assert indented_json(value, indent) == json.dumps(value, indent=indent)


def test_a_written_plan_is_json_dumps_text_without_jsons_slow_path(tmp_path, monkeypatch):
    """With an indent json's C encoder is not used: its pure-Python generators wrote the
    rollback file (two fifths of a 200,000-partition legacy request under a profiler)."""
    import json
    import json.encoder

    made = {"n": 0}
    real = json.encoder._make_iterencode

    def make_iterencode(*a, **k):
        made["n"] += 1
        return real(*a, **k)

    monkeypatch.setattr(json.encoder, "_make_iterencode", make_iterencode)
    plan = Plan.of(
        Move(TP(t, p), (p % 5, (p + 1) % 5), ("any", "/d") if p % 3 == 0 else None)
        for t in ("a", "b-é")
        for p in range(300)
    )
    path = tmp_path / "plan.json"
    plan.write(str(path))
    assert made["n"] == 0  # was 1: the whole file through the Python encoder
    monkeypatch.setattr(json.encoder, "_make_iterencode", real)
    assert path.read_text() == json.dumps(plan.to_json_obj(), indent=2) + "\n"
    assert Plan.read(str(path)) == plan
