"""The journal fuzz harness: a paced run stopped with its four moves in flight on the
simulator (an operator's rate on broker 1), its journal damaged — a byte flipped, a cut inside
a line or at a line's end, a field edited and sealed again, another run's journal planted, a
partial or empty file — and each damaged journal read by the four commands that act on one:
``--cancel --journal``, ``--execute --resume``, plan-only ``--cancel`` (with the journal as
its record) and ``--verify --throttle-priors``. The CLI runs in-process against a fresh copy of
the simulated cluster per case; what is counted (all must be 0):

- tracebacks: a traceback, exit 1 or "unexpected";
- changed: a damaged input that must be refused (a flip, an edit, a cut first line, a planted
  journal) after which a reassignment or a config was sent;
- wrong originals: a partition left at rest on a replica list that is neither its original
  nor its target;
- throttles: a command that exited 0 with nothing in flight and the throttles not back as the
  operator had them (broker 1's rate, nothing else);
- false claims: "order and preferred leader included" said of a partition not back in its
  original order, or "No throttle left" while a throttle of the run is set.

``make chaos``: >= 1,000 mutations x 4 commands (tests/chaos/test_journal_fuzz.py); ``make
test``: a seeded sample (tests/unit/test_journal_fuzz_sample.py)."""

from __future__ import annotations

import json
import os
import pickle
import random
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fuzz_strategies import run_main

from reassign_kit.cli import reassign as cli
from reassign_kit.cluster.config import FOLLOWER_RATE, LEADER_RATE
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan, TopicPartition
from reassign_kit.moves.journal_rules import seal, unseal
from reassign_kit.operations import execute as ops
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run

TP = TopicPartition
OPERATOR = {LEADER_RATE: "7777777", FOLLOWER_RATE: "7777777"}
ORIGINAL = {TP("a", 0): (0, 1), TP("a", 1): (1, 0), TP("a", 2): (2, 3), TP("a", 3): (3, 2)}
TARGET = {TP("a", 0): (2, 3), TP("a", 1): (3, 2), TP("a", 2): (0, 1), TP("a", 3): (1, 0)}
PLAN = Plan.of(Move(tp, t) for tp, t in TARGET.items())
OTHER_PLAN = Plan.of([Move(TP("a", 0), (1, 2))])
MUST_REFUSE = {"flip", "edit", "cut-first-line", "planted", "empty", "directory"}
# a state directory others can write or own: refused by the commands that read one
SHARED = {"shared-dir-mode", "shared-dir-owner"}
READS_STATE = {"cancel-plan"}
COUNTED = ("tracebacks", "changed", "wrong_originals", "throttles", "false_claims")


def new_cluster() -> SimCluster:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [list(ORIGINAL[tp]) for tp in sorted(ORIGINAL)], 8 * MB)
    sim.alter_broker_configs({1: dict(OPERATOR)})
    return sim


def stopped_run(sim: SimCluster, plan: Plan, journal: Path) -> None:
    """A paced run of ``plan`` stopped right after its submissions, every move in flight."""
    run = Run(sim, plan, ExecuteOptions(throttle=MB, wait=True), journal, clock=sim.now,
              sleep=sim.sleep)  # fmt: skip
    n = {"submitted": 0}

    def on(e: dict) -> None:
        if e["event"] == "submitted":
            n["submitted"] += 1
            if n["submitted"] == len(plan.moves):
                run.stop()

    run.subscribe(on)
    run.run()


@dataclass
class Template:
    root: Path
    sim: bytes  # the cluster, pickled, with the run stopped
    journal: bytes
    other_journal: bytes  # another plan's run on another cluster

    @classmethod
    def make(cls, root: Path) -> Template:
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        sim = new_cluster()
        stopped_run(sim, PLAN, root / "template.jsonl")
        other = new_cluster()
        stopped_run(other, OTHER_PLAN, root / "other.jsonl")
        (root / "plan.json").write_text(PLAN.to_json())
        return cls(root, pickle.dumps(sim), (root / "template.jsonl").read_bytes(),
                   (root / "other.jsonl").read_bytes())  # fmt: skip


# ---- mutations: (kind, bytes of the journal, or None for a directory) ---------------------


def _events(data: bytes) -> list[dict]:
    return [json.loads(unseal(x)[0]) for x in data.decode().splitlines()]


def _sealed(events: list[dict]) -> bytes:
    return "".join(seal(json.dumps(e, separators=(",", ":"))) + "\n" for e in events).encode()


def _edits(rng: random.Random, events: list[dict]) -> None:
    """One field edited to a value its writer never gives (sealed again afterwards)."""
    kinds = {e["event"] for e in events}
    choices: list[Callable[[], None]] = []

    def at(kind: str) -> dict:
        return rng.choice([e for e in events if e["event"] == kind])

    def digest() -> None:
        d = events[0]["plan_digest"]
        events[0]["plan_digest"] = d[:-1] + ("0" if d[-1] != "0" else "1")

    def option() -> None:
        opts = events[0]["options"]
        key = rng.choice(sorted(opts))
        how = rng.randrange(3)
        if how == 0:
            opts[key + "_"] = opts.pop(key)
        elif how == 1:
            opts[key] = rng.choice([-1, 2**63, "x", [1], {"a": 1}, -5.5])
        else:
            opts.pop(key)

    def prior() -> None:
        e = at("throttle_prior")
        b = rng.choice(sorted(e["brokers"]))
        k = rng.choice(sorted(e["brokers"][b]))
        e["brokers"][b][k] = rng.choice(["77777?7", "-1", "1e9", "", "99999999999999999999"])

    def rate() -> None:
        e = at("throttle_set")
        e["rate"] = rng.choice([0, -1, 2**63, "1048576", 1.5, True])

    def broker_list() -> None:
        e = rng.choice([e for e in events if "topic" in e and ("target" in e or "original" in e)])
        key = "original" if "original" in e else "target"
        e[key] = rng.choice([[0, 0], [2**31], [-1, 1], [], "0,1", [True, 1]])

    def original() -> None:  # a valid-looking list the cluster contradicts
        e = rng.choice([e for e in events if e["event"] == "intent" and "original" in e])
        tp = TP(e["topic"], e["partition"])
        e["original"] = [ORIGINAL[tp][0], TARGET[tp][0]]  # drops a broker it is on
        for s in events:  # its submitted's 'current' alike: only the cluster says otherwise
            if s["event"] == "submitted" and (s["topic"], s["partition"]) == tp:
                s["current"] = e["original"]

    def state() -> None:
        e = at("lifecycle")
        e[rng.choice(["from", "to"])] = rng.choice(["runing", "", "DONE", 1])

    def kind() -> None:
        e = rng.choice(events[1:])
        e["event"] = rng.choice(["submited", "throttle_sets", "", "run_started_"])

    def partition() -> None:
        e = rng.choice([e for e in events if "topic" in e])
        if rng.randrange(2):
            e["partition"] = rng.choice([-1, 2**31, "0", 1.0])
        else:
            e["topic"] = rng.choice(["a\u0000", "a b", "", "x" * 300, "é"])

    def run_id() -> None:
        rng.choice(events[1:])["run_id"] = "another-run"

    choices += [digest, option, rate, broker_list, original, kind, partition, run_id]
    if "throttle_prior" in kinds:
        choices.append(prior)
    if "lifecycle" in kinds:
        choices.append(state)
    rng.choice(choices)()


def mutate(rng: random.Random, t: Template) -> tuple[str, bytes | None]:
    data = t.journal
    first_nl = data.index(b"\n")
    kind = rng.choice(
        ["flip"] * 6 + ["edit"] * 6 + ["cut-inside"] * 2 + ["cut-at-line"] * 2
        + ["cut-first-line", "planted", "empty", "directory", "partial", "shared-dir-mode",
           "shared-dir-owner"]
    )  # fmt: skip
    if kind.startswith("shared-dir"):  # the journal whole, the state directory not the user's
        return kind, data
    if kind == "flip":  # any byte but the last newline (without it the last line is torn)
        i = rng.randrange(len(data) - 1)
        flipped = data[i] ^ (1 << rng.randrange(7))
        return kind, data[:i] + bytes([flipped]) + data[i + 1 :]
    if kind == "edit":
        events = _events(data)
        _edits(rng, events)
        return kind, _sealed(events)
    if kind == "cut-inside":  # a restored disk: the journal behind the cluster, mid-line
        return kind, data[: rng.randrange(first_nl + 1, len(data) - 1)]
    if kind == "cut-at-line":
        lines = data.splitlines(keepends=True)
        return kind, b"".join(lines[: rng.randrange(1, len(lines))])
    if kind == "cut-first-line":
        return kind, data[: rng.randrange(1, first_nl)]
    if kind == "planted":
        return kind, t.other_journal
    if kind == "partial":  # the first line alone: a run that wrote nothing else
        return kind, data[: first_nl + 1]
    if kind == "empty":
        return kind, b""
    return kind, None


# ---- a case ------------------------------------------------------------------------------

ACTIONS = {
    "cancel-journal": lambda j, p: ["--cancel", "--journal", j],
    "resume": lambda j, p: ["--execute", "--resume", "--journal", j,
                            "--reassignment-json-file", p],
    "cancel-plan": lambda j, p: ["--cancel", "--reassignment-json-file", p, "--journal", j],
    "verify": lambda j, p: ["--verify", "--reassignment-json-file", p, "--throttle-priors", j],
}  # fmt: skip


@dataclass
class Counts:
    cases: int = 0
    mutations: int = 0
    by_kind: Counter = field(default_factory=Counter)
    exits: Counter = field(default_factory=Counter)
    bad: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)

    HEAD = ("mutations  cases  tracebacks  changed  wrong_originals  throttles  false_claims  "
            "exits")  # fmt: skip

    def row(self) -> str:
        exits = ",".join(f"{k}:{v}" for k, v in sorted(self.exits.items()))
        return (f"{self.mutations:9d}  {self.cases:5d}  {self.bad['tracebacks']:10d}  "
                f"{self.bad['changed']:7d}  {self.bad['wrong_originals']:15d}  "
                f"{self.bad['throttles']:9d}  {self.bad['false_claims']:12d}  {exits}")  # fmt: skip

    def as_json(self) -> dict:
        return {"mutations": self.mutations, "cases": self.cases, "by_kind": dict(self.by_kind),
                "exits": {str(k): v for k, v in self.exits.items()},
                **{k: self.bad[k] for k in COUNTED}}  # fmt: skip


def _throttles_as_the_operator_had_them(sim: SimCluster) -> bool:
    brokers = sim.broker_configs([0, 1, 2, 3])
    topics = sim.topic_configs(["a"])
    lists = {k: v for k, v in topics.get("a", {}).items() if "throttled" in k and v}
    return brokers == {0: {}, 1: OPERATOR, 2: {}, 3: {}} and not lists


def judge(kind: str, action: str, sim: SimCluster, before: dict, code: int, out: str,
          err: str) -> list[str]:  # fmt: skip
    """What went wrong in one case (names from COUNTED)."""
    bad = []
    if "Traceback" in out + err or code == 1 or "unexpected" in err:
        bad.append("tracebacks")
    sent = {k: v for k, v in sim.calls.items() if k.startswith(("alter", "elect"))}
    if (kind in MUST_REFUSE or (kind in SHARED and action in READS_STATE)) and sent != before:
        bad.append("changed")
    assignment, moving = sim.assignment(), sim.list_reassignments()
    for tp in ORIGINAL:
        if tp not in moving and assignment[tp] not in (ORIGINAL[tp], TARGET[tp]):
            if set(assignment[tp]) not in (set(ORIGINAL[tp]), set(TARGET[tp])):
                bad.append("wrong_originals")
                break
    clean = _throttles_as_the_operator_had_them(sim)
    if code == 0 and not moving and action != "verify" and not clean:
        bad.append("throttles")
    claims_order = "order and preferred leader included" in out
    if claims_order and any(
        tp not in moving and assignment[tp] != ORIGINAL[tp] and assignment[tp] != TARGET[tp]
        for tp in ORIGINAL
    ):
        bad.append("false_claims")
    elif "No throttle left" in out and not clean:
        bad.append("false_claims")
    return bad


def run_case(t: Template, rng: random.Random, case_dir: Path, counts: Counts,
             actions: list[str] | None = None) -> None:  # fmt: skip
    kind, data = mutate(rng, t)
    counts.mutations += 1
    counts.by_kind[kind] += 1
    for action in actions or sorted(ACTIONS):
        shutil.rmtree(case_dir, ignore_errors=True)
        case_dir.mkdir(parents=True)
        journal = case_dir / "run.jsonl"
        if data is None:
            journal.mkdir()
        else:
            journal.write_bytes(data)
        if kind in SHARED:
            state = case_dir / "state"
            state.mkdir()
            os.chmod(state, 0o1777 if kind == "shared-dir-mode" else 0o700)
            if kind == "shared-dir-owner" and os.getuid() == 0:
                os.chown(state, 4242, 4242)  # another user's
            elif kind == "shared-dir-owner":  # only root gives a directory away: group-writable
                os.chmod(state, 0o770)
        sim: SimCluster = pickle.loads(t.sim)
        ops.connect = lambda *a, _sim=sim, **k: _sim  # the case's own cluster
        before = {k: v for k, v in sim.calls.items() if k.startswith(("alter", "elect"))}
        argv = ["--bootstrap-server", "sim:9092", *ACTIONS[action](str(journal),
                str(t.root / "plan.json")), "--state-dir", str(case_dir / "state")]  # fmt: skip
        cwd = os.getcwd()
        os.chdir(case_dir)
        try:
            code, out, err = run_main(cli.main, argv, limit_s=60)
        finally:
            os.chdir(cwd)
        counts.cases += 1
        counts.exits[code] += 1
        for what in judge(kind, action, sim, before, code, out, err):
            counts.bad[what] += 1
            if len(counts.failures) < 50:
                counts.failures.append(f"{what}: {kind} x {action}: exit {code}\n"
                                       f"{out[-600:]}\n{err[-600:]}")  # fmt: skip


def run(root: Path, seeds: range, actions: list[str] | None = None) -> Counts:
    """One mutation per seed, each through every action (or ``actions``)."""
    t = Template.make(root / "template")
    counts = Counts()
    saved = ops.connect
    try:
        for seed in seeds:
            run_case(t, random.Random(seed), root / "case", counts, actions)
    finally:
        ops.connect = saved
    return counts
