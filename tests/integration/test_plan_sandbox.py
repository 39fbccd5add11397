"""On the sandbox: the official `--generate` and `reassign-kit plan` for the same decommission of
one broker, moved replicas side by side. Nothing is executed: both only propose."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reassign_kit.model import Plan
from reassign_kit.sandbox.kafka import run_kafka_class

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).parent / "reassign-kit")


def _moved(current: dict, proposed: Plan) -> int:
    return sum(len(set(m.replicas) - set(current[m.tp])) for m in proposed)


def _official_generate(bootstrap: str, topics_file: Path, brokers: str) -> tuple[Plan, Plan]:
    proc = run_kafka_class(
        "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        [
            "--bootstrap-server",
            bootstrap,
            "--generate",
            "--topics-to-move-json-file",
            str(topics_file),
            "--broker-list",
            brokers,
        ],
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return _parse_generate(proc.stdout)


def _parse_generate(text: str) -> tuple[Plan, Plan]:
    lines = [ln for ln in text.splitlines() if ln.startswith("{")]
    assert len(lines) == 2, text
    current, proposed = (json.loads(ln) for ln in lines)
    for doc in (current, proposed):  # the official tool adds log_dirs ["any", ...]
        for p in doc["partitions"]:
            p.pop("log_dirs", None)
    return Plan.from_json(json.dumps(current)), Plan.from_json(json.dumps(proposed))


def test_decommission_official_generate_vs_planner(
    sandbox, bootstrap, topic_name, out_dir, tmp_path
):
    brokers = sorted(b["id"] for b in sandbox.brokers)
    racks = {b["id"]: b["rack"] for b in sandbox.brokers}
    gone = brokers[-1]
    keep = [b for b in brokers if b != gone]
    topic = topic_name("plan")
    # a rack-aware, round-robin placement of 24 partitions, RF 2
    by_rack: dict = {}
    for b in brokers:
        by_rack.setdefault(racks[b], []).append(b)
    rack_list = sorted(by_rack, key=str)
    assignment = []
    for p in range(24):
        r0, r1 = rack_list[p % len(rack_list)], rack_list[(p + 1) % len(rack_list)]
        a = by_rack[r0][(p // len(rack_list)) % len(by_rack[r0])]
        b = by_rack[r1][(p // len(rack_list) + 1) % len(by_rack[r1])]
        assignment.append([a, b] if a != b else [a, next(x for x in brokers if x != a)])
    sandbox.create_topic(topic, assignment=assignment)
    sandbox.load(topic, 0.02)

    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"topics": [{"topic": topic}], "version": 1}))
    broker_list = ",".join(map(str, keep))
    official_cur, official = _official_generate(bootstrap, topics_file, broker_list)
    current = {m.tp: m.replicas for m in official_cur}

    snap = tmp_path / "s.json"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    subprocess.run(
        [
            CLI,
            "snapshot",
            "--bootstrap-server",
            bootstrap,
            "--topics",
            topic,
            "--output",
            str(snap),
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    plan_file, report_file = tmp_path / "plan.json", tmp_path / "report.json"
    proc = subprocess.run(
        [
            CLI,
            "plan",
            "--snapshot",
            str(snap),
            "--remove-brokers",
            str(gone),
            "--output",
            str(plan_file),
            "--report",
            str(report_file),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    ours = Plan.read(str(plan_file))
    report = json.loads(report_file.read_text())

    # the drop-in CLI's --generate uses the same planner
    gen = subprocess.run(
        [
            CLI,
            "--bootstrap-server",
            bootstrap,
            "--generate",
            "--topics-to-move-json-file",
            str(topics_file),
            "--broker-list",
            broker_list,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert gen.returncode == 0, gen.stderr[-2000:]
    gen_cur, gen_prop = _parse_generate(gen.stdout)
    assert {m.tp: m.replicas for m in gen_cur} == current

    on_gone = sum(gone in reps for reps in current.values())
    rows = {
        "official --generate": _moved(current, official),
        "reassign-kit plan": _moved(current, ours),
        "reassign-kit --generate": _moved(current, gen_prop),
    }
    table = [
        f"decommission of broker {gone} ({len(current)} partitions, {on_gone} replicas on it)",
        f"{'':<26}{'moved replicas':>15}{'partitions touched':>20}",
    ]
    for name, plan in (
        ("official --generate", official),
        ("reassign-kit plan", ours),
        ("reassign-kit --generate", gen_prop),
    ):
        touched = sum(1 for m in plan if m.replicas != current[m.tp])
        table.append(f"{name:<26}{rows[name]:>15}{touched:>20}")
    table.append(f"{'lower bound':<26}{report['summary']['lower_bound_moved_replicas']:>15}")
    (out_dir / "side_by_side.txt").write_text("\n".join(table) + "\n")
    print("\n".join(table))

    assert report["summary"]["lower_bound_moved_replicas"] == on_gone
    assert rows["reassign-kit plan"] == on_gone  # only what must leave moves
    assert rows["reassign-kit --generate"] == on_gone
    assert rows["official --generate"] >= rows["reassign-kit plan"]
    for plan in (ours, gen_prop):
        for m in plan:
            assert gone not in m.replicas and len(m.replicas) == 2
            assert len({racks[b] for b in m.replicas}) == 2  # rack-aware
    val = subprocess.run(
        [
            CLI,
            "validate",
            "--snapshot",
            str(snap),
            "--reassignment-json-file",
            str(plan_file),
            "--remove-brokers",
            str(gone),
            "--disallow-replication-factor-change",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert val.returncode == 0, val.stderr


@pytest.mark.spark
def test_01_plan_notebook_writes_its_artefacts(sandbox, tmp_path):
    from reassign_kit import runbook

    out = tmp_path / "01"
    nb = runbook.run_notebook(
        "01_plan",
        str(out),
        {
            "sandbox_dir": str(sandbox.dir),
            "remove_brokers": [sorted(b["id"] for b in sandbox.brokers)[-1]],
            "spark_master": "local[1]",
        },
        execution_timeout=600,
    )
    for name in (
        "snapshot.json",
        "plan.json",
        "rollback.json",
        "plan_report.json",
        "plan_charts.html",
    ):
        assert (out / name).exists(), name
    report = json.loads((out / "plan_report.json").read_text())
    assert report["summary"]["lower_bound_moved_replicas"] > 0
    assert os.path.getsize(nb) < runbook.MAX_OUTPUT_BYTES
    Plan.read(str(out / "plan.json"))


def test_01_plan_notebook_fails_loudly_on_a_bad_parameter(sandbox, tmp_path):
    from reassign_kit import runbook
    from reassign_kit.errors import ReassignKitError

    with pytest.raises(ReassignKitError, match="--remove-brokers"):
        runbook.run_notebook(
            "01_plan",
            str(tmp_path / "bad"),
            {"sandbox_dir": str(sandbox.dir), "remove_brokers": [4242], "engine": "local"},
            execution_timeout=300,
        )
