"""``--balance disks`` on the sandbox (two log dirs per broker): two topics skewed across
brokers (none on the last) and inside each broker (every replica in its first dir, put there
by a plan run first) -> one ``plan --balance replicas,disks`` -> one ``--execute`` ->
``--verify``: every broker's dirs within the tolerance as DescribeLogDirs measures them, the
brokers at most one replica apart. Then a second run, moving replicas between dirs under a
replica-alter-log-dirs throttle too low to finish, is cancelled mid-way: every replica is back
in its original dir, no move between dirs left. The topics are deleted at the end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from waits import wait_until

from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.model import Move, Plan, TopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.long]
CLI = str(Path(sys.executable).parent / "reassign-kit")
TOLERANCE = 0.10


def cli(
    *args: str, ok: tuple[int, ...] = (0,), timeout: float = 300
) -> subprocess.CompletedProcess:
    proc = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode in ok, (args, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def dirs_now(gw: AdminGateway, topics: set[str]):
    """(partition, broker) -> current dir and -> future dir; broker -> dir -> bytes."""
    cur, fut, used = {}, {}, {}
    brokers = sorted(gw.broker_log_dirs())
    for r in gw.describe_log_dirs(brokers):
        if r.tp.topic not in topics:
            continue
        (fut if r.is_future else cur)[(r.tp, r.broker)] = r.log_dir
        if not r.is_future:
            used.setdefault(r.broker, {}).setdefault(r.log_dir, 0)
            used[r.broker][r.log_dir] += r.size_bytes
    return cur, fut, used


def verify_until_done(bootstrap: str, plan: Path) -> str:
    def done():
        p = cli("--verify", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan),
                ok=(0, 10))  # fmt: skip
        return p.stdout if p.returncode == 0 else None

    return wait_until(done, 240, "--verify to say every move (replicas and dirs) is complete", 2)


def test_one_plan_and_one_run_balance_brokers_and_their_log_dirs(sandbox, bootstrap, topic_name, tmp_path, out_dir):  # fmt: skip
    gw = AdminGateway(bootstrap)
    brokers = sorted(b["id"] for b in sandbox.brokers)
    dirs = gw.broker_log_dirs(brokers)
    assert all(len(dirs[b]) >= 2 for b in brokers), dirs
    big, small = topic_name("dirs-big"), topic_name("dirs-small")
    used_brokers = brokers[:-1]  # the last broker empty: skewed across brokers
    try:
        initial = []
        for topic, n in ((big, 12), (small, 12)):
            assignment = [[used_brokers[p % 3], used_brokers[(p + 1) % 3]] for p in range(n)]
            sandbox.create_topic(topic, assignment=assignment)
            initial += [
                Move(TopicPartition(topic, p), tuple(a), tuple(dirs[b][0] for b in a))
                for p, a in enumerate(assignment)
            ]
        # skewed inside each broker: every replica into its broker's first dir
        first = tmp_path / "first.json"
        Plan.of(initial).write(str(first))
        wait_until(lambda: len(dirs_now(gw, {big, small})[0]) == 48, 60, "every replica listed")
        cli("--execute", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(first),
            "--rollback-file", str(tmp_path / "first-rollback.json"))  # fmt: skip
        verify_until_done(bootstrap, first)
        sandbox.load(big, 1.0)
        sandbox.load(small, 0.3)
        cur, _, used = dirs_now(gw, {big, small})
        assert all(d == dirs[b][0] for (_, b), d in cur.items()), "not all in the first dir"
        measured = {"before": used}

        snap, plan, report = tmp_path / "s.json", tmp_path / "plan.json", tmp_path / "r.json"
        cli("snapshot", "--bootstrap-server", bootstrap, "--topics", f"{big},{small}",
            "--output", str(snap))  # fmt: skip
        out = cli("plan", "--snapshot", str(snap), "--engine", "local", "--balance",
                  "replicas,disks", "--disk-tolerance", str(TOLERANCE), "--output", str(plan),
                  "--report", str(report))  # fmt: skip
        assert "log dirs: within 10%" in out.stdout, out.stdout
        planned = Plan.read(str(plan))
        assert all(m.log_dirs and "any" not in m.log_dirs for m in planned)
        intra = [m for m in planned if set(m.replicas) == set(cur_set(cur, m.tp))]
        assert intra, "the plan moves no replica between the dirs of a broker"

        journal = tmp_path / "run.jsonl"
        cli("--execute", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan),
            "--wait", "--throttle", "50000000", "--journal", str(journal),
            "--rollback-file", str(tmp_path / "rollback.json"), timeout=600)  # fmt: skip
        said = verify_until_done(bootstrap, plan)
        assert "log dir" in said or "Reassignment of replica" in said, said

        cur, fut, used = dirs_now(gw, {big, small})
        measured["after"] = used
        (out_dir / "dir_bytes.json").write_text(json.dumps(measured, indent=1, default=str))
        assert not fut, f"moves between dirs left: {fut}"
        for b in brokers:
            total = sum(used.get(b, {}).values())
            share = total / len(dirs[b])
            for d in dirs[b]:
                got = used.get(b, {}).get(d, 0)
                assert abs(got - share) <= TOLERANCE * share, (b, d, got, share, used)
        counts = {b: sum(1 for (_, bb) in cur if bb == b) for b in brokers}
        assert max(counts.values()) - min(counts.values()) <= 1, counts

        # a second run, cancelled mid-way: every replica of a few partitions to its other dir
        originals = dict(cur)
        second = []
        for p in range(4):
            tp = TopicPartition(big, p)
            reps = cur_set(cur, tp)
            second.append(Move(tp, reps, tuple(
                next(d for d in dirs[b] if d != originals[(tp, b)]) for b in reps
            )))  # fmt: skip
        plan2 = tmp_path / "plan2.json"
        Plan.of(second).write(str(plan2))
        rollback2 = tmp_path / "rollback2.json"
        cli("--execute", "--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan2),
            "--replica-alter-log-dirs-throttle", "1", "--rollback-file", str(rollback2))  # fmt: skip
        _, fut, _ = wait_until(
            lambda: (got := dirs_now(gw, {big}))[1] and got, 60, "moves between dirs under way"
        )
        assert fut, "no move between dirs under way before the cancel"
        mid = cli("--verify", "--bootstrap-server", bootstrap, "--reassignment-json-file",
                  str(plan2), "--preserve-throttles", ok=(0, 1, 4, 5, 6, 10))  # fmt: skip
        assert "still in progress" in mid.stdout, mid.stdout
        rb = Plan.read(str(rollback2))
        assert all(m.log_dirs and "any" not in m.log_dirs for m in rb), "originals without dirs"
        out = cli("--cancel", "--bootstrap-server", bootstrap, "--reassignment-json-file",
                  str(plan2), "--rollback-file", str(rollback2), ok=(0, 1))  # fmt: skip
        said = out.stdout + out.stderr
        assert "log dirs" in said, said

        # every replica back in its original dir or on its way there (the way back runs at
        # the run's log-dir rate), no move towards the plan's dirs left; a partition whose
        # dirs were all at the plan's when the cancel came is left there (completed)
        wanted = {(m.tp, b): d for m in second for b, d in zip(m.replicas, m.log_dirs, strict=True)}

        def back():
            c, f, _ = dirs_now(gw, {big})
            mine = {k: v for k, v in c.items() if k[0].partition < 4}
            kept = {tp for tp, _ in mine if all(mine[k] == wanted[k] for k in mine if k[0] == tp)}
            return all(
                (k[0] in kept and k not in f)
                or f.get(k, v) == originals[k]
                or (v == originals[k] and k not in f)
                for k, v in mine.items()
            ) and (len(kept) < 4)

        try:
            wait_until(back, 60, "every replica back in (or moving to) its original dir")
        except AssertionError:
            c, f, _ = dirs_now(gw, {big})
            raise AssertionError(f"not back: cancel said {said!r}; now {c}, futures {f}") from None
        sent = [line for line in said.splitlines() if "original log dirs" in line]
        assert sent or "cancelled movement of replicas between log dirs" in said, said
    finally:
        cli("--cancel", "--bootstrap-server", bootstrap, "--topics", f"{big},{small}",
            ok=tuple(range(0, 256)))  # fmt: skip
        admin = sandbox.admin()
        for f in admin.delete_topics([big, small]).values():
            f.result(30)
        gw.close()


def cur_set(cur, tp: TopicPartition) -> tuple[int, ...]:
    return tuple(sorted(b for (t, b) in cur if t == tp))
