"""The kill-fuzz harness: the real CLI, run as a subprocess
(``python -m reassign_kit.cli``), SIGKILLed at random points, then resumed or cancelled;
afterwards the cluster is checked against what was true before the first command.

On the simulator the cluster is a state file (``--bootstrap-server sim:PATH``,
``reassign_kit/cluster/simfile.py``) that survives the kill exactly as far as the process got;
the kill point is a gateway call (``RK_SIM_KILL_AT=<call>:<n>``: right after the n-th such
call returned, e.g. between an Alter and the journal line that records it, inside a cancel,
inside the final throttle cleanup). Model time passes between two commands, as wall time would
while nobody restarts the tool. On the sandbox the kill is a signal sent at a random moment
(and ``RK_KILL_AT`` for a named point, see ``run/retry.py``).

Counted per trial (each must be 0): wrong originals (a journaled write-ahead original or a
rollback file's list that is not the partition's list before the run), replication factor
above max(original, target) after the run (between two KIP-435 steps a partition holds more
on purpose), partitions neither at their
target nor at their original (order included) after the follow-up, throttles left that no
move needs, operator throttle values not back."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reassign_kit.cluster.simfile import load, save
from reassign_kit.cluster.simulate import SimCluster
from reassign_kit.model import Plan, TopicPartition
from reassign_kit.moves.journal import read_events

OPERATOR_RATE = "7777777"
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
RATE_KEYS = (LEADER_RATE, FOLLOWER_RATE)
TOPIC_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
MB = 1024 * 1024
CLI_TIMEOUT_S = 120

# where a kill lands: (gateway call, how many of them at most) — every call, the Alters (the
# gap between an Alter and its journal line), config changes (throttles, the final cleanup
# included), the passing of time (a poll), elections
KILL_CALLS = (
    ("any", 40),
    ("any", 12),
    ("alter_reassignments", 3),
    ("alter_broker_configs", 2),
    ("alter_topic_configs", 2),
    ("sleep", 6),
    ("elect_preferred_leaders", 1),
    ("describe_partitions", 6),
)


@dataclass
class Counts:
    trials: int = 0
    kill_points: int = 0  # processes that died by SIGKILL
    wrong_originals: int = 0
    rf_above: int = 0
    misplaced: int = 0
    stray_throttles: int = 0
    operator_not_back: int = 0
    failures: list[str] = field(default_factory=list)

    def add(self, other: Counts) -> None:
        for k in (
            "trials",
            "kill_points",
            "wrong_originals",
            "rf_above",
            "misplaced",
            "stray_throttles",
            "operator_not_back",
        ):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.failures += other.failures

    @property
    def bad(self) -> int:
        return (
            self.wrong_originals
            + self.rf_above
            + self.misplaced
            + self.stray_throttles
            + self.operator_not_back
        )

    HEAD = (
        "cluster    trials  kill points  wrong originals  RF above max  neither target nor "
        "original  throttles left  operator not back"
    )

    def row(self, name: str) -> str:
        return (
            f"{name:<10} {self.trials:>6}  {self.kill_points:>11}  {self.wrong_originals:>15}  "
            f"{self.rf_above:>12}  {self.misplaced:>27}  {self.stray_throttles:>14}  "
            f"{self.operator_not_back:>17}"
        )


def cli(
    bootstrap: str,
    args: Sequence[str],
    cwd: Path,
    kill_at: str | None = None,
    env_key: str = "",
    fork: bool = False,
) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess; ``kill_at``: its SIGKILL point (``RK_SIM_KILL_AT``).
    ``fork``: the child is forked from this (already imported) process and runs the CLI's
    ``main`` — still a process of its own that dies by a real SIGKILL, without paying the
    interpreter's start and imports (~1.5 s here) a thousand times."""
    env = {k: v for k, v in os.environ.items() if k not in ("RK_SIM_KILL_AT", "RK_KILL_AT")}
    if kill_at:
        env[env_key or "RK_SIM_KILL_AT"] = kill_at
    argv = ["--bootstrap-server", bootstrap, *args]
    if fork:
        return _forked(argv, cwd, env)
    return subprocess.run(
        [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", bootstrap, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def _forked(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    import tempfile

    from reassign_kit.cli import main

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        pid = os.fork()
        if pid == 0:  # the child: the CLI, then exit without running the parent's cleanup
            rc = 1
            try:
                os.chdir(cwd)
                os.environ.clear()
                os.environ.update(env)
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
                sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
                rc = main(argv)
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else 1
            except BaseException:  # noqa: BLE001 - reported as the CLI would
                import traceback

                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(rc if isinstance(rc, int) else 1)
        _, status = os.waitpid(pid, 0)
        rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, rc, out.read(), err.read())


def killed(p: subprocess.CompletedProcess) -> bool:
    return p.returncode == -9


def sim_file(sim: SimCluster, d: Path, name: str = "cluster.sim") -> str:
    """``sim`` saved in ``d`` for the CLI; returns its ``--bootstrap-server`` (``sim:PATH``).
    ``load(path_of(bootstrap))`` reads back what the process left."""
    path = d / name
    save(sim, str(path))
    return f"sim:{path}"


def path_of(bootstrap: str) -> str:
    return bootstrap.removeprefix("sim:")


# ------------------------------------------------------------------------ the simulated cluster


@dataclass
class SimCase:
    dir: Path
    state: Path
    plan_path: Path
    plan: Plan
    originals: dict[TopicPartition, tuple[int, ...]]
    operator: dict[int, dict[str, str]]  # broker -> the operator's throttle configs

    @property
    def bootstrap(self) -> str:
        return f"sim:{self.state}"


def sim_case(rng: random.Random, d: Path) -> SimCase:
    """A 6-broker cluster, one topic of 4-6 partitions (RF 3, a few MB each), a plan moving
    some of them (a replica or two replaced, a reorder); an operator's rates on broker 1 (in
    the plan's way) and broker 6 (not)."""
    d.mkdir(parents=True, exist_ok=True)
    brokers = [1, 2, 3, 4, 5, 6]
    sim = SimCluster(brokers=brokers, bandwidth=2 * MB)
    n = rng.randint(4, 6)
    assignment = [rng.sample(brokers, 3) for _ in range(n)]
    sim.add_topic("t", assignment, size_bytes=[rng.randint(1, 6) * MB for _ in range(n)])
    operator = {1: dict.fromkeys(RATE_KEYS, OPERATOR_RATE), 6: {LEADER_RATE: OPERATOR_RATE}}
    for b, kv in operator.items():
        sim.broker_cfg[b] = dict(kv)
    sim._throttles_changed()
    moves = []
    for p, reps in enumerate(assignment):
        kind = rng.random()
        if kind < 0.15:
            continue  # not in the plan
        if kind < 0.3:
            tgt = reps[1:] + reps[:1]  # a reorder (an election)
        else:
            out = rng.sample(reps, rng.randint(1, 2))
            spare = [b for b in brokers if b not in reps]
            tgt = [b for b in reps if b not in out] + rng.sample(spare, len(out))
            rng.shuffle(tgt)
        moves.append({"topic": "t", "partition": p, "replicas": tgt})
    if not moves:
        moves.append({"topic": "t", "partition": 0, "replicas": assignment[0][::-1]})
    plan_path = d / "plan.json"
    plan_path.write_text(json.dumps({"version": 1, "partitions": moves}))
    state = d / "cluster.sim"
    save(sim, str(state))
    originals = {TopicPartition("t", p): tuple(r) for p, r in enumerate(assignment)}
    return SimCase(d, state, plan_path, Plan.read(str(plan_path)), originals, operator)


def advance(case: SimCase, seconds: float) -> None:
    """Model time passes while no tool runs (the moves in flight go on copying)."""
    sim = load(str(case.state))
    sim.sleep(seconds)
    save(sim, str(case.state))


def settle(case: SimCase, limit_s: float = 600) -> None:
    """Let every reassignment in flight finish (model time), as --verify's caller would wait."""
    sim = load(str(case.state))
    t = 0.0
    while sim.active and t < limit_s:
        sim.sleep(1.0)
        t += 1.0
    save(sim, str(case.state))


def execute_args(case: SimCase, rng: random.Random, journal: Path) -> list[str]:
    args = [
        "--execute",
        "--reassignment-json-file",
        str(case.plan_path),
        "--journal",
        str(journal),
        "--throttle",
        str(rng.choice([1, 2, 4]) * MB),
        "--rollback-file",
        str(case.dir / "rollback.json"),
    ]
    if rng.random() < 0.5:
        args += ["--reassignment-batch-size", str(rng.randint(1, 3)), "--incremental"]
    if rng.random() < 0.3:
        args += ["--parallel-replica-count", "1"]
    if rng.random() < 0.6:
        args += ["--wait"]
    if rng.random() < 0.3:
        args += ["--on-interrupt", "cancel"]
    return args


def kill_spec(rng: random.Random) -> str:
    call, most = rng.choice(KILL_CALLS)
    return f"{call}:{rng.randint(1, most)}"


def sim_trial(seed: int, d: Path, fork: bool = False) -> tuple[Counts, list[str]]:
    """One trial: execute killed at a random point, up to two more killed follow-ups (resume
    or cancel), then a follow-up let run to its end (resume, or cancel), then the checks."""
    rng = random.Random(seed)
    case = sim_case(rng, d)
    journal = case.dir / "run.jsonl"
    c = Counts(trials=1)
    log: list[str] = []
    resume = ["--execute", "--reassignment-json-file", str(case.plan_path)]
    resume += ["--journal", str(journal), "--resume"]
    cancel = ["--cancel", "--journal", str(journal)]
    if rng.random() < 0.5:
        cancel += ["--rollback-file", str(case.dir / "rollback.json")]
    steps: list[tuple[list[str], str | None]] = [(execute_args(case, rng, journal), kill_spec(rng))]
    for _ in range(rng.randint(1, 4)):
        steps.append((rng.choice([resume, cancel]), kill_spec(rng)))
    final = rng.choice(["resume", "cancel"])
    steps.append((resume if final == "resume" else cancel, None))
    for args, kill in steps:
        if args is not steps[0][0] and not journal.exists():
            # killed before its journal existed: nothing was sent; start it again (a final
            # cancel becomes a final execute: it is let run, then resumed once settled)
            args = steps[0][0]
            if kill is None:
                final = "resume"
        t0 = time.monotonic()
        p = cli(case.bootstrap, args, case.dir, kill, fork=fork)
        log.append(f"{time.monotonic() - t0:.1f}s")
        log.append(
            f"{args[0]} {args[-1] if args[0] != '--execute' else ''} kill={kill} rc={p.returncode}"
        )
        if killed(p):
            c.kill_points += 1
        elif p.returncode not in (0, 10, 11) and "Traceback" in p.stdout + p.stderr:
            c.failures.append(f"seed {seed}: traceback in {args[:2]}: {p.stderr[-500:]}")
        advance(case, rng.choice([0.0, 0.5, 2.0, 5.0]))
    # the follow-up ran to its end; what --verify's caller does next: wait, verify
    settle(case)
    if final == "resume" and journal.exists():
        # a run without --wait returned at KIP-1335's point: resumed once its moves are
        # complete, it finds them so and takes its throttles away
        v = cli(case.bootstrap, resume, case.dir, fork=fork)
        log.append(f"resume after settle rc={v.returncode}")
    check_sim(case, journal, c, log)
    if c.bad:
        c.failures.append(f"seed {seed}: " + " | ".join(log))
    return c, log


def rf_above(case: SimCase, settled_only: bool = False) -> int:
    """Partitions holding more replicas than max(original, target); with ``settled_only``
    those not reassigning (during a reassignment Kafka lists target + original)."""
    sim = load(str(case.state))
    targets = {m.tp: tuple(m.replicas) for m in case.plan}
    bad = 0
    for tp, sp in sim.partitions.items():
        if settled_only and sp.target is not None:
            continue
        limit = max(len(case.originals[tp]), len(targets.get(tp, ())))
        bad += len(set(sp.replicas)) > limit
    return bad


def check_sim(case: SimCase, journal: Path, c: Counts, log: list[str]) -> None:
    sim = load(str(case.state))
    targets = {m.tp: tuple(m.replicas) for m in case.plan}
    # originals recorded: the write-ahead intents, what a rollback read back, the rollback file
    if journal.exists():
        for e in read_events(str(journal)):
            key = {"intent": "original", "rolling_back": "original", "submitted": "current"}
            f = key.get(e.get("event", ""))
            if f and e.get(f) is not None:
                tp = TopicPartition(e["topic"], e["partition"])
                if tuple(e[f]) != case.originals[tp]:
                    c.wrong_originals += 1
                    log.append(f"wrong original {tp} in {e['event']}: {e[f]}")
    rb = case.dir / "rollback.json"
    if rb.exists():
        for m in Plan.read(str(rb)):
            if tuple(m.replicas) != case.originals[m.tp]:
                c.wrong_originals += 1
                log.append(f"wrong original {m.tp} in the rollback file: {list(m.replicas)}")
    for tp, sp in sim.partitions.items():
        now = tuple(sp.replicas)
        if sp.target is not None or now not in (case.originals[tp], targets.get(tp)):
            c.misplaced += 1
            log.append(f"{tp} at {list(now)} (original {list(case.originals[tp])}, target "
                       f"{list(targets.get(tp, ()))}, reassigning {sp.target is not None})")  # fmt: skip
    c.rf_above += rf_above(case)
    for t, kv in sim.topic_cfg.items():
        for k in TOPIC_KEYS:
            if kv.get(k):
                c.stray_throttles += 1
                log.append(f"topic {t} {k}={kv[k]} left")
    for b in sim.broker_ids:
        have = {k: v for k, v in sim.broker_cfg.get(b, {}).items() if k in RATE_KEYS and v}
        want = case.operator.get(b, {})
        for k in RATE_KEYS:
            if have.get(k) != want.get(k):
                if want.get(k):
                    c.operator_not_back += 1
                else:
                    c.stray_throttles += 1
                log.append(f"broker {b} {k}={have.get(k)} (operator's: {want.get(k)})")


def run_sim(seeds: Sequence[int], root: Path, fork: bool = False) -> Counts:
    total = Counts()
    for s in seeds:
        c, _ = sim_trial(s, root / f"trial-{s}", fork=fork)
        total.add(c)
    return total


def as_json(c: Counts) -> dict[str, Any]:
    return {k: getattr(c, k) for k in ("trials", "kill_points", "wrong_originals", "rf_above",
                                       "misplaced", "stray_throttles", "operator_not_back")}  # fmt: skip


# ------------------------------------------------------------------------------- the sandbox

SANDBOX_KILLS = (
    "alter_reassignments:1",
    "alter_reassignments:2",
    "alter_broker_configs:1",
    "alter_topic_configs:1",
    "elect_preferred_leaders:1",
    "any:3",
)


def _popen_killed(
    bootstrap: str, args: Sequence[str], cwd: Path, rng: random.Random, kill: str | None
) -> int:
    """The CLI on a real cluster, SIGKILLed at a named change call (``RK_KILL_AT``) or after
    a random moment (``kill`` = ``time``); returns its exit code (-9: killed)."""
    env = {k: v for k, v in os.environ.items() if k not in ("RK_SIM_KILL_AT", "RK_KILL_AT")}
    if kill and kill != "time":
        env["RK_KILL_AT"] = kill
    p = subprocess.Popen(
        [sys.executable, "-m", "reassign_kit.cli", "--bootstrap-server", bootstrap, *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if kill == "time":
            try:
                return p.wait(timeout=rng.uniform(0.5, 6.0))
            except subprocess.TimeoutExpired:
                p.send_signal(9)
        return p.wait(timeout=CLI_TIMEOUT_S * 2)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def sandbox_trial(sandbox: Any, gw: Any, seed: int, d: Path) -> tuple[Counts, list[str]]:
    """One trial on the sandbox: a 3-partition RF-2 topic (1 MiB each, moved at 256 KiB/s),
    an operator's rates on one broker; execute killed, up to two killed follow-ups, a last
    resume or cancel let run; then the same checks as on the simulator."""
    from reassign_kit.throttles import configs as thr

    rng = random.Random(seed)
    d.mkdir(parents=True, exist_ok=True)
    b = sorted(x["id"] for x in sandbox.brokers)
    topic = f"kf-{seed}-{os.getpid()}"
    assignment = [[b[0], b[1]], [b[1], b[2]], [b[2], b[3]]]
    sandbox.create_topic(topic, assignment=assignment)
    sandbox.load(topic, 1)
    tps = [TopicPartition(topic, p) for p in range(3)]
    originals = {tp: tuple(gw.describe_partitions(tps)[tp].replicas) for tp in tps}
    moves = []
    for tp, orig in originals.items():
        spare = [x for x in b if x not in orig]
        tgt = [rng.choice(spare), orig[0]] if rng.random() < 0.5 else [orig[1], rng.choice(spare)]
        moves.append({"topic": topic, "partition": tp.partition, "replicas": tgt})
    plan_path = d / "plan.json"
    plan_path.write_text(json.dumps({"version": 1, "partitions": moves}))
    plan = Plan.read(str(plan_path))
    targets = {m.tp: tuple(m.replicas) for m in plan}
    op_broker = b[1]
    operator = {op_broker: dict.fromkeys(RATE_KEYS, OPERATOR_RATE)}
    gw.alter_broker_configs(operator)
    journal = d / "run.jsonl"
    c = Counts(trials=1)
    log: list[str] = []
    execute = ["--execute", "--reassignment-json-file", str(plan_path), "--additional", "--wait"]
    execute += ["--journal", str(journal), "--throttle", str(256 * 1024)]
    execute += ["--rollback-file", str(d / "rollback.json")]
    execute += ["--reassignment-poll-interval-ms", "300"]
    resume = ["--execute", "--reassignment-json-file", str(plan_path)]
    resume += ["--journal", str(journal), "--resume"]
    cancel = ["--cancel", "--journal", str(journal)]
    try:
        steps: list[tuple[list[str], str | None]] = [
            (execute, rng.choice([*SANDBOX_KILLS, "time", "time"]))
        ]
        for _ in range(rng.randint(1, 2)):
            steps.append((rng.choice([resume, cancel]), rng.choice(["time", *SANDBOX_KILLS])))
        final = rng.choice([resume, cancel])
        steps.append((final, None))
        for args, kill in steps:
            if args is not execute and not journal.exists():
                args = execute
            rc = _popen_killed(sandbox.bootstrap_servers, args, d, rng, kill)
            log.append(f"{args[0]} kill={kill} rc={rc}")
            c.kill_points += rc == -9
        # the last command ran to its end; the moves it left in flight (a cancel waits for
        # its rollbacks, a resume with --wait for the moves) are over within a bound
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
            tp.topic == topic for tp in gw.list_reassignments()
        ):
            time.sleep(1)
        states = gw.describe_partitions(tps)
        if journal.exists():
            for e in read_events(str(journal)):
                f = {"intent": "original", "rolling_back": "original"}.get(e.get("event", ""))
                if f and e.get(f) is not None:
                    tp = TopicPartition(e["topic"], e["partition"])
                    if tuple(e[f]) != originals[tp]:
                        c.wrong_originals += 1
                        log.append(f"wrong original {tp} in {e['event']}: {e[f]}")
        for tp in tps:
            st = states[tp]
            now = tuple(st.replicas)
            if st.reassigning or now not in (originals[tp], targets[tp]):
                c.misplaced += 1
                log.append(f"{tp} at {list(now)} ({originals[tp]} -> {targets[tp]})")
            if len(set(now)) > max(len(originals[tp]), len(targets[tp])):
                c.rf_above += 1

        def throttles() -> tuple[int, int, list[str]]:
            stray = not_back = 0
            notes: list[str] = []
            have = thr.current_throttles(gw, [topic], b)
            for k, v in have.get("topics", {}).get(topic, {}).items():
                if v:
                    stray += 1
                    notes.append(f"topic {k}={v} left")
            brokers = have.get("brokers", {})
            for x in b:
                kv = {k: v for k, v in brokers.get(x, brokers.get(str(x), {})).items() if v}
                want = operator.get(x, {})
                for k in RATE_KEYS:
                    if kv.get(k) != want.get(k):
                        if want.get(k):
                            not_back += 1
                        else:
                            stray += 1
                        notes.append(f"broker {x} {k}={kv.get(k)} (operator's {want.get(k)})")
            return stray, not_back, notes

        # a broker applies a config change after the controller commits it: read back until
        # right, bounded (what is still wrong then is counted)
        deadline = time.monotonic() + 30
        while True:
            stray, not_back, notes = throttles()
            if not (stray or not_back) or time.monotonic() > deadline:
                break
            time.sleep(1)
        c.stray_throttles += stray
        c.operator_not_back += not_back
        log += notes
    finally:
        # leave the shared sandbox as found: no move of this topic, no rate, no topic
        left = [tp for tp in gw.list_reassignments() if tp.topic == topic]
        if left:
            gw.alter_reassignments(dict.fromkeys(left))
        gw.alter_broker_configs({x: dict.fromkeys(RATE_KEYS) for x in b})
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": sandbox.bootstrap_servers})
        for f in admin.delete_topics([topic]).values():
            f.result(timeout=60)
    if c.bad:
        c.failures.append(f"sandbox seed {seed}: " + " | ".join(log))
    return c, log


def run_sandbox(sandbox: Any, gw: Any, seeds: Sequence[int], root: Path, kills: int) -> Counts:
    """Trials until ``kills`` kill points (at most ``len(seeds)`` trials)."""
    total = Counts()
    for s in seeds:
        c, _ = sandbox_trial(sandbox, gw, s, root / f"sandbox-{s}")
        total.add(c)
        if total.kill_points >= kills:
            break
    return total
