"""`make compat`: the integration core and the ported Kafka reassignment scenarios against
several Apache Kafka releases and metadata modes, one sandbox at a time.

Every test fixture starts its sandbox through ``Sandbox.start``, whose release and mode
default to $RK_SANDBOX_KAFKA_VERSION / $RK_SANDBOX_METADATA: this script sets them per
column and runs the same pytest node ids. A test a release cannot run skips with a reason
naming the capability the brokers lack (tests/integration/capability.py); that is "n/a" here.
Prints the version x scenario table and writes it to docs/compat.md.

    .venv/bin/python tests/compat/matrix.py [--only 3.9.1/zookeeper,...] [--out docs/compat.md]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "out" / "compat"
WALLS = OUT / "walls.json"

# (release, metadata mode): 3.6.x ZK and KRaft, 3.7.x KRaft, 3.9.x ZK and KRaft, 4.0.x, 4.3.x, 4.4.x
COLUMNS = [
    ("3.9.1", "zookeeper"),
    ("3.9.1", "kraft"),
    ("3.6.2", "zookeeper"),
    ("3.6.2", "kraft"),
    ("3.7.2", "kraft"),
    ("4.0.0", "kraft"),
    ("4.3.1", "kraft"),
    ("4.4.0", "kraft"),
]

IT = "tests/integration/"
# scenario -> pytest node id (the integration core, then Kafka's reassignment scenarios)
SCENARIOS: list[tuple[str, str]] = [
    (
        "legacy execute + throttle, verify",
        IT + "test_core.py::test_plan_with_data_completes_verifies_and_clears_throttles",
    ),
    (
        "list, legacy cancel",
        IT + "test_core.py::test_slow_move_is_listed_then_cancelled_and_throttles_cleared",
    ),
    (
        "RF guard (KIP-860) client/broker side",
        IT + "test_core.py::test_rf_guard_client_side_and_broker_side",
    ),
    (
        "RF guard: what is sent per release",
        IT + "test_compat_capabilities.py::test_rf_guard_sends_what_the_controller_lists",
    ),
    (
        "no request above the listed versions",
        IT + "test_compat_capabilities.py::test_no_request_above_a_listed_version",
    ),
    (
        "paced batches + cap, throttle",
        IT + "test_paced.py::test_batch_waves_and_incremental_refill",
    ),
    (
        "paced: tool SIGKILLed, resumed",
        IT + "test_paced.py::test_sigkill_mid_run_then_resume_completes_without_throttles",
    ),
    (
        "KIP-435 steps (min ISR, no loss)",
        IT + "test_steps_progress.py::test_steps_keep_min_isr_and_lose_no_acked_message",
    ),
    (
        "progress (behind / in sync / ETA)",
        IT + "test_steps_progress.py::test_progress_behind_in_sync_done_with_eta",
    ),
    (
        "cancel with rollback (stepped)",
        IT
        + "test_cancel_rollback_sandbox.py::test_a_stepped_run_cancelled_between_steps_is_rolled_back_on_the_sandbox",
    ),
    (
        "preferred leader election",
        IT + "test_cancel_rollback_sandbox.py::test_preferred_leader_election_on_the_sandbox",
    ),
    (
        "demotion (--demote-brokers)",
        IT
        + "test_leader_elections_sandbox.py::test_demote_brokers_executed_moves_leadership_and_copies_nothing",
    ),
    ("log-dir moves", IT + "test_core.py::test_log_dir_moves_within_and_across_brokers"),
    (
        "chaos: broker SIGKILLed mid-move",
        "tests/chaos/test_chaos.py::test_target_broker_sigkilled_mid_move_and_restarted",
    ),
    (
        "chaos: tool SIGKILLed, resumed",
        "tests/chaos/test_chaos.py::test_tool_sigkilled_and_resumed",
    ),
    (
        "chaos: broker + tool SIGKILLed, resumed",
        "tests/chaos/test_chaos.py::test_broker_and_tool_sigkilled_then_resumed",
    ),
    (
        "chaos: controller SIGKILLed",
        "tests/chaos/test_chaos.py::test_active_controller_sigkilled_and_restarted",
    ),
    (
        "SASL/SCRAM: execute, watch, verify, list",
        IT + "test_security.py::test_admin_executes_legacy_and_paced_watches_verifies_lists",
    ),
    (
        "Kafka: same result as the official tool",
        IT + "test_official_parity.py::test_same_plan_same_result_as_the_official_tool",
    ),
    (
        "Kafka: --list as the official tool",
        IT + "test_official_parity.py::test_list_output_matches_the_official_tool",
    ),
    (
        "Kafka: --additional on a run in flight",
        IT + "test_core.py::test_additional_on_top_of_an_in_flight_run",
    ),
    (
        "Kafka: unknown topic/partition/broker",
        IT + "test_core.py::test_unknown_topic_partition_broker_rejected_before_sending",
    ),
    (
        "Kafka: slow log-dir move, cancelled",
        IT + "test_core.py::test_slow_log_dir_move_in_progress_then_cancelled",
    ),
]


def column_name(version: str, mode: str) -> str:
    return f"{version} {'ZK' if mode == 'zookeeper' else 'KRaft'}"


def run_column(
    version: str, mode: str, ids: list[str], log: Path, tag: str = ""
) -> tuple[dict[str, tuple[str, str]], float]:
    """Run the scenarios on one release and mode; node id -> (outcome, detail), wall seconds."""
    env = {**os.environ, "RK_SANDBOX_KAFKA_VERSION": version, "RK_SANDBOX_METADATA": mode}
    env.pop("RK_SANDBOX_DIR", None)
    env.pop("RK_SASL_SANDBOX_DIR", None)
    py = sys.executable
    fetch = subprocess.run(
        [py, "-m", "reassign_kit.cli", "sandbox", "fetch", "--kafka-version", version],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if fetch.returncode != 0:
        return {i: ("fail", "jars not fetched: " + fetch.stderr.strip()[-200:]) for i in ids}, 0.0
    # one pytest session per sandbox the tests use (the session one, the chaos quorum, the
    # SASL one): never two sandboxes of this run at once on a shared machine
    groups: dict[str, list[str]] = {}
    for i in ids:
        key = "chaos" if "tests/chaos/" in i else "sasl" if "test_security" in i else "main"
        groups.setdefault(key, []).append(i)
    xmls = []
    t0 = time.monotonic()
    with open(log, "a" if tag else "w") as f:
        for key, group in groups.items():
            xml = OUT / f"{version}-{mode}-{key}{tag}.xml"
            xml.unlink(missing_ok=True)
            xmls.append(xml)
            f.write(f"== {key}\n")
            f.flush()
            subprocess.run(
                [py, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", f"--junitxml={xml}"]
                + group,
                cwd=ROOT,
                env=env,
                stdout=f,
                stderr=subprocess.STDOUT,
            )
    wall = time.monotonic() - t0
    walls = json.loads(WALLS.read_text()) if WALLS.exists() else {}
    walls[f"{version}/{mode}{tag}"] = wall
    WALLS.write_text(json.dumps(walls, indent=1))
    return read_column(version, mode, ids), wall


def read_column(version: str, mode: str, ids: list[str]) -> dict[str, tuple[str, str]]:
    """The column's outcomes from its JUnit files (the last run of that column)."""
    got: dict[str, tuple[str, str]] = {}
    # the newest file wins for a test in several (a --failed-only re-run after the full run)
    for xml in sorted(OUT.glob(f"{version}-{mode}-*.xml"), key=lambda x: x.stat().st_mtime):
        for case in ET.parse(xml).getroot().iter("testcase"):
            module = (case.get("classname") or "").split(".")[-1]
            nid = f"{module}::{case.get('name')}"
            outcome, detail = "pass", ""
            for child in case:
                if child.tag == "skipped":
                    outcome, detail = "n/a", (child.get("message") or "").removeprefix("Skipped: ")
                elif child.tag in ("failure", "error"):
                    outcome, detail = "fail", " ".join((child.get("message") or "").split())[:200]
            got[nid] = (outcome, detail)
    out = {}
    for i in ids:
        path, name = i.split("::")
        base = f"{Path(path).stem}::{name}"
        cases = [v for k, v in got.items() if k == base or k.startswith(base + "[")]
        log = f"tests/out/compat/{version}-{mode}.log"
        fails = [v for v in cases if v[0] == "fail"]
        if not cases:
            out[i] = ("not run", f"no result in {log}")
        elif fails:  # a parametrised test: any variant failing fails the scenario
            out[i] = fails[0]
        elif all(v[0] == "n/a" for v in cases):
            out[i] = cases[0]
        else:
            out[i] = ("pass", "")
    return out


def column_wall(version: str, mode: str) -> float:
    """Seconds the column's last run took (its pytest sessions' times when not recorded)."""
    walls = json.loads(WALLS.read_text()) if WALLS.exists() else {}
    if f"{version}/{mode}" in walls:
        return float(walls[f"{version}/{mode}"])
    return sum(
        float(ET.parse(x).getroot().find("testsuite").get("time", 0))  # type: ignore[union-attr]
        for x in OUT.glob(f"{version}-{mode}-*.xml")
    )


def table(cols: list[tuple[str, str]], results: dict, walls: dict) -> str:
    head = "| scenario | " + " | ".join(column_name(*c) for c in cols) + " |"
    rule = "|---|" + "---|" * len(cols)
    lines = [head, rule]
    reasons: list[str] = []
    for name, nid in SCENARIOS:
        cells = []
        for c in cols:
            outcome, detail = results.get(c, {}).get(nid, ("not run", ""))
            if outcome == "n/a":
                reasons.append(f"- {name}, {column_name(*c)}: {detail}")
                cells.append(f"n/a [{len(reasons)}]")
            elif outcome == "fail":
                reasons.append(f"- {name}, {column_name(*c)}: FAIL: {detail}")
                cells.append(f"**fail** [{len(reasons)}]")
            else:
                cells.append(outcome)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append(
        "| wall time | " + " | ".join(f"{walls.get(c, 0) / 60:.1f} min" for c in cols) + " |"
    )
    notes = [f"[{i}] {r[2:]}" for i, r in enumerate(reasons, 1)]
    return "\n".join(lines) + ("\n\n" + "\n".join(notes) if notes else "") + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma list of VERSION/MODE columns")
    ap.add_argument("--out", default=str(ROOT / "docs" / "compat.md"))
    ap.add_argument(
        "--failed-only",
        action="store_true",
        help="run again only the scenarios that failed (or did not run) in each column's last "
        "run; the table shows the newest result of each",
    )
    ap.add_argument(
        "--scenarios",
        default="",
        help="comma list of words: run again only the scenarios whose name contains one (in "
        "each column given; e.g. after a fix to them); the table shows the newest result",
    )
    args = ap.parse_args(argv)
    cols = COLUMNS
    if args.only:
        want = [tuple(c.split("/")) for c in args.only.split(",")]
        cols = [c for c in want]  # type: ignore[misc]
    OUT.mkdir(parents=True, exist_ok=True)
    ids = [nid for _, nid in SCENARIOS]
    t0 = time.monotonic()
    for c in cols:
        print(f"== {column_name(*c)}", flush=True)
        if args.scenarios:
            words = [w.strip() for w in args.scenarios.split(",") if w.strip()]
            todo = [nid for name, nid in SCENARIOS if any(w in name for w in words)]
            if not todo:
                ap.error(f"--scenarios {args.scenarios!r} names no scenario")
            run_column(*c, todo, OUT / f"{c[0]}-{c[1]}.log", tag=f"-rerun{int(time.time())}")
        elif args.failed_only:
            last = read_column(*c, ids)
            todo = [i for i in ids if last[i][0] in ("fail", "not run")]
            if len(todo) == len(ids):  # never run: a full run of the column
                run_column(*c, ids, OUT / f"{c[0]}-{c[1]}.log")
            elif todo:
                run_column(*c, todo, OUT / f"{c[0]}-{c[1]}.log", tag=f"-rerun{int(time.time())}")
        else:
            run_column(*c, ids, OUT / f"{c[0]}-{c[1]}.log")
        write_all(Path(args.out), cols, time.monotonic() - t0)
    results = {c: read_column(*c, ids) for c in cols}
    bad = any(o == "fail" for r in results.values() for o, _ in r.values())
    return 1 if bad else 0


def write_all(out: Path, ran: list, wall: float) -> None:
    """The table of every column (those not run now: their last run's results), printed and
    written to ``out``."""
    ids = [nid for _, nid in SCENARIOS]
    results = {c: read_column(*c, ids) for c in COLUMNS}
    walls = {c: column_wall(*c) for c in COLUMNS}
    text = table(COLUMNS, results, walls)
    reruns = json.loads(WALLS.read_text()) if WALLS.exists() else {}
    again = [
        f"{k.split('-rerun')[0]}: {v / 60:.1f} min" for k, v in reruns.items() if "-rerun" in k
    ]
    if again:
        text += (
            "\nRe-runs of some scenarios only (--failed-only / --scenarios): "
            + "; ".join(again)
            + "\n"
        )
    print(text, flush=True)
    write_doc(out, text, wall, ran)


HEADER = """# Compatibility: Kafka 3.x and 4.x, KRaft and ZooKeeper

Written by `make compat` (tests/compat/matrix.py): the integration core and the ported Kafka
reassignment scenarios, each on a real sandbox of that release and metadata mode (jars from
Maven Central, one sandbox at a time). **n/a** = the release lacks a capability the scenario
needs (the reason names it, as the brokers report it); **fail** = a defect.
What differs per release, and how reassign-kit adapts, is in docs/compatibility.md.

"""


def write_doc(path: Path, text: str, wall: float, cols: list) -> None:
    cmd = (
        "make compat"
        if len(cols) == len(COLUMNS)
        else f"tests/compat/matrix.py --only {','.join('/'.join(c) for c in cols)}"
    )
    path.write_text(
        HEADER
        + f"Command: `{cmd}`; its wall time {wall / 60:.1f} min (a 2-core machine shared with "
        "other jobs; per column below).\n\n" + text
    )


if __name__ == "__main__":
    sys.exit(main())
