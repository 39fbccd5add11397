"""Paced execution on the real sandbox, with data and a throttle low enough that waves show:
batch boundaries and the incremental cap in the journal, a run SIGKILLed and resumed, and the
throttles after Ctrl-C, SIGTERM and a deadline being exactly what the moves still running need.

Every test uses its own topics and cleans up what it moved (cancel) and throttled."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waits import wait_until

from reassign_kit.cluster import views
from reassign_kit.model import Move, Plan, TopicPartition, is_complete
from reassign_kit.moves.journal import concurrency, peak_concurrency, read_events
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run
from reassign_kit.throttles import configs as thr

pytestmark = pytest.mark.integration
KB = 1024


def topic_on(sandbox, name: str, assignment, mb: float) -> list[TopicPartition]:
    sandbox.create_topic(name, assignment=assignment)
    if mb:
        sandbox.load(name, mb)  # waits out a broker's metadata lag itself
    return [TopicPartition(name, p) for p in range(len(assignment))]


def broker_ids(sandbox) -> list[int]:
    return sorted(b["id"] for b in sandbox.brokers)


def throttles_exact(gw, topics: list[str], rate: int) -> bool:
    """The throttles on ``topics`` and the brokers their in-flight moves touch are exactly what
    those moves need (throttle.py's own diff finds nothing to change); brokers with no
    reassignment in flight carry no rate."""
    cluster = gw.list_reassignments()
    need = thr.required_throttles(
        {}, {}, {tp: st for tp, st in cluster.items() if tp.topic in topics}
    )
    busy = {b for st in cluster.values() for b in st.replicas}
    brokers = [b.id for b in gw.brokers()]
    have = thr.current_throttles(gw, topics, brokers)
    stray = {int(b) for b in thr.summary(have)["broker_rates"] if int(b) not in busy}
    # a broker that another run's move (a shared sandbox) also uses may carry that run's rate
    shared = {b for tp, st in cluster.items() if tp.topic not in topics for b in st.replicas}
    changes = thr.sync_changes(need, rate, have, topics, need.brokers, need.brokers & shared)
    if changes != ({}, {}) or stray:
        print(f"throttles not exact: would change {changes}, stray rates on {stray}")
        return False
    return True


def run_cli(bootstrap: str, *argv: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", bootstrap, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def paced_argv(plan_path: str, journal: str, tmp_path, *extra: str) -> list[str]:
    """--execute of a plan on a possibly shared cluster (--additional), waiting to the end,
    journal and rollback file in the test's folder."""
    return [
        *("--execute", "--reassignment-json-file", plan_path, "--additional", "--wait"),
        *("--journal", journal, "--reassignment-poll-interval-ms", "300"),
        *("--rollback-file", str(tmp_path / "rollback.json")),
        *extra,
    ]


def cleanup(bootstrap: str, plan_path: str) -> None:
    """Cancel whatever of the plan still moves (Core's cancel also clears its throttles)."""
    p = run_cli(bootstrap, "--cancel", "--reassignment-json-file", plan_path)
    p.communicate(timeout=120)


def test_batch_waves_and_incremental_refill(sandbox, gw, topic_name, tmp_path):
    b = broker_ids(sandbox)
    # "a" partitions are big, "b" ones small: incremental refills around the big one
    big = topic_name("a-paced")
    small = topic_name("b-paced")
    tps = topic_on(sandbox, big, [[b[0]]], 0.6)
    tps += topic_on(sandbox, small, [[b[p % 2]] for p in range(4)], 0.1)
    cur = gw.describe_partitions(tps)
    fwd = Plan.of(Move(tp, (b[2 + b.index(cur[tp].replicas[0])],)) for tp in tps)
    rate = 150 * KB

    # batch mode, N=2: batch k+1 only after every move of batch k is complete
    run = Run(
        gw,
        fwd,
        ExecuteOptions(
            batch_size=2, throttle=rate, wait=True, additional=True, poll_interval_ms=300
        ),
        journal_path=tmp_path / "batch.jsonl",
    )
    res = run.run()
    assert res.state == "done", res
    ev = read_events(tmp_path / "batch.jsonl")
    # the release the brokers' ApiVersions say (4.x on the default sandbox; make compat's own)
    assert ev[0]["kafka_version"].split(".")[0] == sandbox.version.split(".")[0]
    assert peak_concurrency(ev) <= 2
    sub = {(e["topic"], e["partition"]): e for e in ev if e["event"] == "submitted"}
    done = {(e["topic"], e["partition"]): e["ts"] for e in ev if e["event"] == "completed"}
    waves: dict[int, list] = {}
    for k, e in sub.items():
        waves.setdefault(e["batch"], []).append(k)
    assert sorted(waves) == [0, 1, 2] and sorted(map(len, waves.values())) == [1, 2, 2]
    for k in (1, 2):
        assert min(sub[x]["ts"] for x in waves[k]) >= max(done[x] for x in waves[k - 1])
    states = gw.describe_partitions(tps)
    assert all(is_complete(m.replicas, states[m.tp]) for m in fwd)
    wait_until(lambda: throttles_exact(gw, [big, small], rate), 20, "throttles cleared")

    # incremental, N=2, back again: a slot freed by a small move is refilled while the big
    # one still copies, and never more than 2 in flight. The big one must really be slow: a
    # replication quota measures its rate over >= 10 one-second windows, so at 150 KB/s the
    # first ~1.5 MB pass at once (0.6 MB copied in < 1 s; then two moves could complete in
    # the same poll and no refill show: make compat, 3.7.2 KRaft). 3 MB hold it ~10 s.
    sandbox.load(big, 2.5)
    back = Plan.of(Move(tp, (b[b.index(states[tp].replicas[0]) - 2],)) for tp in tps)
    run = Run(
        gw,
        back,
        ExecuteOptions(
            batch_size=2,
            incremental=True,
            throttle=rate,
            wait=True,
            additional=True,
            poll_interval_ms=300,
        ),
        journal_path=tmp_path / "incr.jsonl",
    )
    assert run.run().state == "done"
    ev = read_events(tmp_path / "incr.jsonl")
    assert max(n for _, n in concurrency(ev)) == 2
    # refill: a move submitted while another of the run was still in flight, right after a
    # completion freed its slot (not a new wave after everything drained)
    seq, inflight = [], set()
    for e in ev:
        if e["event"] in ("submitted", "completed"):
            key = (e["topic"], e["partition"])
            (inflight.add if e["event"] == "submitted" else inflight.discard)(key)
            seq.append((e["event"], len(inflight)))
    pairs = zip(seq, seq[1:], strict=False)
    assert any(a == ("completed", 1) and b[0] == "submitted" for a, b in pairs), seq
    wait_until(lambda: throttles_exact(gw, [big, small], rate), 20, "throttles cleared")


def _slow_setup(sandbox, gw, topic_name, tmp_path, parts=4, mb=0.5):
    b = broker_ids(sandbox)
    t = topic_name("paced-slow")
    tps = topic_on(sandbox, t, [[b[p % 2]] for p in range(parts)], mb)
    cur = gw.describe_partitions(tps)
    plan = Plan.of(Move(tp, (b[2 + b.index(cur[tp].replicas[0])],)) for tp in tps)
    path = str(tmp_path / "plan.json")
    plan.write(path)
    return t, tps, plan, path


def test_sigkill_mid_run_then_resume_completes_without_throttles(
    sandbox, gw, topic_name, tmp_path, bootstrap
):
    # 2 MiB a partition: past the first unthrottled fetch (up to 1 MiB), so moves stay in flight
    rate = 200 * KB
    t, tps, plan, path = _slow_setup(sandbox, gw, topic_name, tmp_path, parts=5, mb=2)
    journal = str(tmp_path / "run.jsonl")
    argv = paced_argv(path, journal, tmp_path, "--throttle", str(rate))
    argv += ["--reassignment-batch-size", "2", "--incremental"]
    p = run_cli(bootstrap, *argv)
    try:

        def mid_run() -> bool:  # one move complete, its slot refilled, moves in flight
            if not os.path.exists(journal):
                return False
            ev = read_events(journal)
            subs = sum(e["event"] == "submitted" for e in ev)
            done = sum(e["event"] == "completed" for e in ev)
            return subs >= 3 and done >= 1 and subs > done

        wait_until(mid_run, 120, "a refilled slot")
        resume = ["--execute", "--reassignment-json-file", path, "--journal", journal, "--resume"]
        # the same command twice: a --resume while the run is alive is refused before it
        # reads or sends anything (before: its events went into the live run's journal,
        # after it cut the live run's line being written as a torn tail)
        twice = run_cli(bootstrap, *resume)
        out2, _ = twice.communicate(timeout=120)
        assert twice.returncode == 12 and "is in use: another run is writing" in out2, out2
        assert "Traceback" not in out2
        assert [e["event"] for e in read_events(journal)].count("run_started") == 1
        os.kill(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
        before = read_events(journal)
        assert not any(e["event"] == "run_finished" for e in before)
        p2 = run_cli(bootstrap, *resume)
        out, _ = p2.communicate(timeout=300)
        assert p2.returncode == 0, out
        assert "Resuming run" in out and "Traceback" not in out
        ev = read_events(journal)
        subs = [(e["topic"], e["partition"]) for e in ev if e["event"] == "submitted"]
        assert sorted(subs) == sorted(set(subs)), "none resubmitted"
        # a move killed between its Alter and its 'submitted' line (its write-ahead intent
        # journaled) is in flight at the resume: adopted, not submitted again
        intents = {(e["topic"], e["partition"]) for e in before if e["event"] == "intent"}
        adopted = {(e["topic"], e["partition"]) for e in ev if e["event"] == "adopted"}
        assert adopted - set(subs) <= intents
        assert set(subs) | adopted == {(tp.topic, tp.partition) for tp in tps}, "every move once"
        assert peak_concurrency(ev) <= 2
        assert len({e["run_id"] for e in ev}) == 1
        # what was in flight at the kill was adopted (or found complete), not resubmitted
        killed_inflight = {
            (e["topic"], e["partition"]) for e in before if e["event"] == "submitted"
        }
        killed_inflight -= {
            (e["topic"], e["partition"]) for e in before if e["event"] == "completed"
        }
        after = ev[len(before) :]
        taken_over = {
            (e["topic"], e["partition"])
            for e in after
            if e["event"] == "adopted" or (e["event"] == "completed" and e.get("adopted"))
        }
        assert killed_inflight and killed_inflight <= taken_over
        states = wait_until(
            lambda: (
                (s := gw.describe_partitions(tps))
                and all(is_complete(m.replicas, s[m.tp]) for m in plan)
                and s
            ),
            30,
            "plan complete",
        )
        assert states
        wait_until(lambda: throttles_exact(gw, [t], rate), 20, "no throttle left")
    finally:
        if p.poll() is None:
            p.kill()
        cleanup(bootstrap, path)


@pytest.mark.parametrize("how", ["sigint", "sigterm", "deadline"])
def test_every_exit_leaves_exactly_the_throttles_still_needed(
    sandbox, gw, topic_name, tmp_path, bootstrap, how
):
    # 3 MiB per partition at 20 KiB/s: past the first fetch (up to 1 MiB a partition) and
    # the quota's ~10 s burst, each move needs minutes, so they stay in flight
    rate = 20 * KB
    t, tps, plan, path = _slow_setup(sandbox, gw, topic_name, tmp_path, parts=4, mb=3)
    journal = str(tmp_path / "run.jsonl")
    argv = paced_argv(path, journal, tmp_path, "--throttle", str(rate))
    argv += ["--reassignment-batch-size", "2", "--incremental"]
    if how == "deadline":
        argv += ["--run-deadline", "4s", "--on-deadline", "stop"]
    p = run_cli(bootstrap, *argv)
    try:
        if how != "deadline":
            wait_until(
                lambda: (
                    sum(e["event"] == "submitted" for e in read_events(journal)) >= 2
                    if os.path.exists(journal)
                    else False
                ),
                60,
                "two submissions",
            )
            p.send_signal(signal.SIGINT if how == "sigint" else signal.SIGTERM)
        out, _ = p.communicate(timeout=120)
        assert p.returncode == (7 if how == "deadline" else 130), out
        assert "To resume:" in out and "--resume" in out and "To cancel:" in out, out
        assert "Traceback" not in out
        ev = read_events(journal)
        assert ev[-1]["event"] == "run_finished"
        moving = {tp for tp in gw.list_reassignments() if tp.topic == t}
        assert len(moving) == 2 and ev[-1]["still_moving"] == 2
        assert throttles_exact(gw, [t], rate)
        # nothing was submitted after the stop (with a deadline, a move that finished early
        # may have been refilled before it: broker rates reach brokers a moment after they are set)
        if how == "deadline":
            stop = next(i for i, e in enumerate(ev) if e["event"] == "deadline")
            assert not any(e["event"] == "submitted" for e in ev[stop:])
        else:
            assert sum(e["event"] == "submitted" for e in ev) == 2
    finally:
        if p.poll() is None:
            p.kill()
        cleanup(bootstrap, path)
    wait_until(lambda: throttles_exact(gw, [t], rate), 30, "throttles gone after cancel")


def test_paced_moves_with_log_dirs(sandbox, gw, topic_name, tmp_path, bootstrap):

    b = broker_ids(sandbox)
    t = topic_name("paced-dirs")
    tps = topic_on(sandbox, t, [[b[0]], [b[1]], [b[0]]], 0.3)
    cur, _ = views.replica_log_dirs(gw, tps, b)
    dirs = gw.broker_log_dirs()
    other = next(d for d in dirs[b[0]] if d != cur[(tps[0], b[0])])
    # a-0: between the log dirs of its broker; a-1, a-2: to another broker, its second dir
    plan = Plan.of(
        [
            Move(tps[0], (b[0],), (other,)),
            Move(tps[1], (b[2],), (dirs[b[2]][1],)),
            Move(tps[2], (b[3],), (dirs[b[3]][1],)),
        ]
    )
    path = str(tmp_path / "plan.json")
    plan.write(path)
    journal = str(tmp_path / "run.jsonl")
    p = run_cli(
        bootstrap,
        *paced_argv(path, journal, tmp_path, "--throttle", "50000000"),
        *("--replica-alter-log-dirs-throttle", "50000000", "--timeout", "30000"),
        *("--reassignment-batch-size", "1"),
    )
    try:
        out, _ = p.communicate(timeout=180)
        assert p.returncode == 0, out
        ev = read_events(journal)
        started = {
            (e["partition"], e["broker"], e["log_dir"])
            for e in ev
            if e["event"] == "log_dir_started"
        }
        assert started == {(m.partition, m.replicas[0], m.log_dirs[0]) for m in plan}
        sub = {e["partition"]: e["ts"] for e in ev if e["event"] == "submitted"}
        done = {e["partition"]: e["ts"] for e in ev if e["event"] == "completed"}
        assert done[0] <= sub[1] and done[1] <= sub[2]  # one batch at a time, log dirs included
        now, fut = views.replica_log_dirs(gw, tps, b)
        assert all(now[(m.tp, m.replicas[0])] == m.log_dirs[0] for m in plan) and not fut
        assert any(e["event"] == "throttle_set" and e.get("log_dir_rates") for e in ev)
        left = thr.current_throttles(gw, [t], b)
        assert not left["topics"] and not any(
            k == "replica.alter.log.dirs.io.max.bytes.per.second"
            for kv in left["brokers"].values()
            for k in kv
        )
    finally:
        if p.poll() is None:
            p.kill()
        cleanup(bootstrap, path)


def test_steps_alone_are_a_paced_run_sigterm_leaves_exact_throttles_and_a_resume_hint(
    sandbox, gw, topic_name, tmp_path, bootstrap
):
    """Regression: ``--execute --parallel-replica-count R`` with no pacing flag ran
    its own path: no SIGTERM handling (throttles left, no run_finished), a journal named from
    an environment variable, --replica-alter-log-dirs-throttle and --timeout dropped, no
    resume hint, exit 0/1. Now: a paced run with R."""
    rate = 20 * KB
    t, tps, plan, path = _slow_setup(sandbox, gw, topic_name, tmp_path, parts=2, mb=3)
    argv = [
        *("--execute", "--reassignment-json-file", path, "--additional"),
        *("--parallel-replica-count", "1", "--throttle", str(rate)),
        *("--replica-alter-log-dirs-throttle", "7000", "--timeout", "25000"),
        *("--rollback-file", str(tmp_path / "rollback.json")),
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("RK_JOURNAL", None)
    p = subprocess.Popen(
        [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", bootstrap, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=tmp_path,  # the default journal lands here, not in the repo
    )

    def journal() -> str | None:
        # a paced run's journal lives in its run's home (reassign_kit.run.home), not the cwd
        root = Path(env.get("REASSIGN_KIT_STATE_DIR") or tmp_path / ".reassign-kit" / "runs")
        found = sorted(root.rglob("journal.jsonl"))
        return str(found[0]) if found else None

    try:
        wait_until(
            lambda: (
                journal() is not None
                and sum(e["event"] == "step_submitted" for e in read_events(journal())) >= 2
            ),
            60,
            "both moves' first steps submitted",
        )
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 130, out
        assert "Replica-level steps (--parallel-replica-count 1)" in out, out
        assert "To resume:" in out and "--resume" in out and "To cancel:" in out, out
        ev = read_events(journal())
        started = next(e for e in ev if e["event"] == "run_started")
        assert started["options"]["log_dir_throttle"] == 7000, started
        assert started["options"]["timeout_s"] == 25.0, started
        assert started["options"]["parallel_replica_count"] == 1, started
        assert ev[-1]["event"] == "run_finished"
        assert throttles_exact(gw, [t], rate)
    finally:
        if p.poll() is None:
            p.kill()
        cleanup(bootstrap, path)
    wait_until(lambda: throttles_exact(gw, [t], rate), 30, "throttles gone after cancel")


def test_a_paced_run_whose_reader_left_completes(sandbox, gw, bootstrap, topic_name, tmp_path):
    """`reassign-kit --execute ... | head -3` (cli/pipes.py): a paced run whose output pipe
    has no reader. Before, it stopped at its first print, before anything was sent
    ("unexpected BrokenPipeError", exit 1); now it runs to its end, exit 0, its journal
    whole, its output dropped (said once on stderr)."""
    b = broker_ids(sandbox)
    tps = topic_on(sandbox, topic_name("piped"), [[b[0]], [b[1]]], 0.2)
    plan = Plan.of(Move(tp, (b[2 + i],)) for i, tp in enumerate(tps))
    plan_path = str(tmp_path / "plan.json")
    Path(plan_path).write_text(plan.to_json())
    journal = str(tmp_path / "j.jsonl")
    argv = paced_argv(plan_path, journal, tmp_path, "--reassignment-batch-size", "1")
    r, w = os.pipe()
    os.close(r)  # the reader left before the first line (whatever the timing)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", bootstrap,
             *argv, "--throttle", str(500 * KB)],
            stdout=w, stderr=subprocess.PIPE, text=True, timeout=300, check=False,
        )  # fmt: skip
    finally:
        os.close(w)
        cleanup(bootstrap, plan_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("the output pipe closed") == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    fin = [e for e in read_events(journal) if e["event"] == "run_finished"]
    assert [e["state"] for e in fin] == ["done"]
    cur = gw.describe_partitions(tps)
    assert all(cur[m.tp].replicas == m.replicas for m in plan)
