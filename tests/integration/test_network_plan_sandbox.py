"""On the sandbox, the network goals end to end: replica counts balanced, one hot topic on two
brokers under a produce and consume load this test drives → ``snapshot --sample-load`` →
``plan --balance network`` → ``--execute --wait`` → ``--verify``. From the measured rates and
the replica lists read back from the cluster, each broker's network in is within 1.2x of the
mean and its network out within 1.3x, racks are kept and counts are within 2. The count-only
plan of the same snapshot is made beside it: it has nothing to move. The figures are written
to tests/out/network_plan/figures.json."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from traffic import Traffic

from reassign_kit.cli import main as cli_main
from reassign_kit.cluster.admin import AdminGateway
from reassign_kit.planner.network import broker_loads
from reassign_kit.snapshot.snapshot import Snapshot

pytestmark = [pytest.mark.integration, pytest.mark.long]

OUT = Path(__file__).parent.parent / "out" / "network_plan"


def _racks(sandbox) -> tuple[list[int], list[int]]:
    by: dict[str, list[int]] = {}
    for b in sorted(sandbox.brokers, key=lambda b: b["id"]):
        by.setdefault(str(b["rack"]), []).append(b["id"])
    (a, c), (b, d) = list(by.values())[:2]
    return [a, c], [b, d]


def _committed(gw: AdminGateway, group: str, topic: str, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if any(tp.topic == topic for tp in gw.group_offsets(group)):
            return
        time.sleep(0.5)
    raise AssertionError(f"group {group} committed nothing on {topic} within {timeout}s")


def _spread_figures(snap: Snapshot, final: dict, brokers: list[int]) -> dict:
    got = broker_loads(
        ((final[p.tp], (p.load.produce_bytes_s, p.load.fetch_bytes_s)) for p in snap.partitions),
        brokers,
    )
    out = {}
    for res in ("network_in", "network_out"):
        vals = got[res]
        mean = sum(vals.values()) / len(vals)
        out[res] = {"per_broker": vals, "max_over_mean": max(vals.values()) / mean}
    counts = {b: sum(b in r for r in final.values()) for b in brokers}
    out["counts"] = counts
    return out


def test_hot_topic_spread_by_network_plan(sandbox, bootstrap, topic_name, tmp_path):
    (a, c), (b, d) = _racks(sandbox)
    hot, cold = topic_name("hot"), topic_name("cold")
    # hot: 4 partitions all on a and b (one per rack); cold: 12 partitions putting 4 more
    # replicas on a and b and 8 on c and d, so every broker holds 8
    sandbox.create_topic(hot, assignment=[[a, b], [b, a], [a, b], [b, a]])
    cold_sets = [[a, d], [d, a]] * 2 + [[c, b], [b, c]] * 2 + [[c, d], [d, c]] * 2
    sandbox.create_topic(cold, assignment=cold_sets)
    group = hot + "-readers"
    rates = dict.fromkeys(range(4), 40.0)  # messages/s of 4 KB into each hot partition
    snap_file, plan_file = tmp_path / "snap.json", tmp_path / "plan.json"
    with Traffic(bootstrap, hot, rates, 4000, {group: None}, max_seconds=120) as load:
        with AdminGateway(bootstrap) as gw:
            _committed(gw, group, hot)
        rc = cli_main(
            ["snapshot", "--bootstrap-server", bootstrap, "--topics", f"{hot},{cold}"]
            + ["--sample-load", "12s", "--output", str(snap_file)]
        )
    assert rc == 0 and load.errors == []
    snap = Snapshot.read(str(snap_file))
    assert snap.load is not None and snap.load.unread == ()
    brokers = sorted(snap.broker_ids())
    current = {p.tp: list(p.replicas) for p in snap.partitions}
    before = _spread_figures(snap, current, brokers)
    assert set(before["counts"].values()) == {8}
    assert before["network_in"]["max_over_mean"] > 1.9  # two brokers carry it all

    counts_only = tmp_path / "counts.json"
    rc = cli_main(
        ["plan", "--snapshot", str(snap_file), "--engine", "local"]
        + ["--balance", "replicas,leaders", "--output", str(counts_only)]
    )
    assert rc == 0
    counts_plan = json.loads(counts_only.read_text())["partitions"]
    rc = cli_main(
        ["plan", "--snapshot", str(snap_file), "--engine", "local", "--balance", "network"]
        + ["--output", str(plan_file), "--report", str(tmp_path / "report.json")]
    )
    assert rc == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["network_goal"]["met"] is True

    rc = cli_main(
        [
            "--execute", "--bootstrap-server", bootstrap,
            "--reassignment-json-file", str(plan_file),
            "--rollback-file", str(tmp_path / "rollback.json"),
            "--journal", str(tmp_path / "run.jsonl"),
            "--additional", "--reassignment-poll-interval-ms", "300", "--wait",
        ]
    )  # fmt: skip
    assert rc == 0
    rc = cli_main(
        ["--verify", "--bootstrap-server", bootstrap]
        + ["--reassignment-json-file", str(plan_file), "--preserve-throttles"]
    )
    assert rc == 0
    with AdminGateway(bootstrap) as gw:
        states = gw.describe_partitions(list(current))
    final = {tp: list(states[tp].replicas) for tp in current}
    after = _spread_figures(snap, final, brokers)
    racks = snap.racks()
    for tp, reps in final.items():
        assert len({racks[x] for x in reps}) == 2, (tp, reps)
    assert after["network_in"]["max_over_mean"] <= 1.2, after
    assert after["network_out"]["max_over_mean"] <= 1.3, after
    assert max(after["counts"].values()) - min(after["counts"].values()) <= 2, after
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "figures.json").write_text(
        json.dumps(
            {
                "before": before,
                "network_plan": {
                    "moves": len(json.loads(plan_file.read_text())["partitions"]),
                    **after,
                },
                "count_only_plan": {"moves": len(counts_plan)},
            },
            indent=1,
            default=str,
        )
    )
