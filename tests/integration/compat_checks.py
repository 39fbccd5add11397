"""What reassign-kit sends to a real broker of any release, shared by
test_compat_capabilities.py (the session sandbox: 4.4.0 in CI, each release in `make compat`)
and test_compat_39zk.py (a Kafka 3.9 ZooKeeper sandbox of its own, in `make test`).

``SentRequests`` wraps kafka-python's one send path (``KafkaConnection._send_request``, every
request the admin client sends, after version negotiation) and records each request's API key,
version and the range the broker it went to listed in ApiVersions."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cluster import capabilities as caps
from reassign_kit.model import Move, Plan, TopicPartition

ALTER = caps.ALTER_PARTITION_REASSIGNMENTS
API_VERSIONS = 18


@dataclass
class Sent:
    node: Any
    api_key: int
    version: int
    listed: tuple[int, int] | None
    fields: dict[str, Any]


class SentRequests:
    def __init__(self) -> None:
        self.sent: list[Sent] = []

    def of(self, api_key: int) -> list[Sent]:
        return [s for s in self.sent if s.api_key == api_key]

    def above_listed(self) -> list[Sent]:
        return [
            s
            for s in self.sent
            if s.listed is None or not (s.listed[0] <= s.version <= s.listed[1])
        ]


@contextmanager
def recording(monkeypatch: Any):
    from kafka.net.connection import KafkaConnection

    rec = SentRequests()
    real = KafkaConnection._send_request

    def send(self, request, future=None, timeout_at=None):
        out = real(self, request, future=future, timeout_at=timeout_at)
        # ApiVersions itself is the negotiation (sent before the broker's list is known)
        if request.API_VERSION is not None and request.API_KEY != API_VERSIONS:
            bvd = self.broker_version_data
            listed = (bvd.api_versions or {}).get(request.API_KEY) if bvd is not None else None
            fields = {}
            if request.API_KEY == ALTER and request.API_VERSION >= 1:  # v0 has no such field
                fields["allow_replication_factor_change"] = getattr(
                    request, "allow_replication_factor_change", None
                )
            rec.sent.append(
                Sent(self.node_id, request.API_KEY, request.API_VERSION, listed, fields)
            )
        return out

    monkeypatch.setattr(KafkaConnection, "_send_request", send)
    yield rec


def cli(bootstrap: str, capsys: Any, *argv: str) -> tuple[int, str, str]:
    code = reassign_cli.main(["--bootstrap-server", bootstrap, *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def assert_rf_guard_behaviour(
    sb: Any, gw: Any, monkeypatch: Any, capsys: Any, tmp: Path, topic: str
) -> None:
    """--disallow-replication-factor-change on this release: what is sent, said and done.

    The brokers list AlterPartitionReassignments v1 (Kafka 4.1+): the request goes at v1 with
    AllowReplicationFactorChange=false, no warning. They list v0 only (3.x, 4.0): the request
    goes at v0 (the field absent), the client-side check having passed, and one warning names
    what is missing and the release that has it. On both, a plan changing a replication
    factor is refused before anything is sent (exit 3), and --require-broker-rf-guard runs
    (v1) or is refused naming Kafka 4.1 with nothing sent (exit 4)."""
    from waits import wait_until

    caps._SAID.clear()
    has_v1 = gw.capabilities().has(caps.RF_GUARD)
    sb.create_topic(topic, assignment=[(1, 2), (2, 3)])
    tps = [TopicPartition(topic, p) for p in range(2)]
    target = {tps[0]: (2, 1), tps[1]: (3, 4)}  # a reorder and a move: RF 2 kept
    plan = tmp / "plan.json"
    Plan.of([Move(tp, r) for tp, r in target.items()]).write(str(plan))
    warning = "AlterPartitionReassignments v1 (AllowReplicationFactorChange) (KIP-860, Kafka 4.1+)"

    # 1. the flag on a valid plan: sent at the version the controller lists, said once or not
    with recording(monkeypatch) as rec:
        code, out, err = cli(
            sb.bootstrap_servers, capsys, "--execute", "--reassignment-json-file", str(plan),
            "--disallow-replication-factor-change", "--additional", "--rollback-file", str(tmp / "rb1.json"),
        )  # fmt: skip
    assert code == 0, out + err
    sent = rec.of(ALTER)
    assert [s.version for s in sent] == [1 if has_v1 else 0], sent
    assert [s.fields.get("allow_replication_factor_change") for s in sent] == [
        False if has_v1 else None
    ]
    assert err.count(warning) == (0 if has_v1 else 1), err
    assert err.count("enforced client-side only") == (0 if has_v1 else 1), err
    wait_until(
        lambda: (
            {tp: st.replicas for tp, st in gw.describe_partitions(tps).items()} == target
            and not gw.list_reassignments(tps)
        ),
        60,
        "the plan's target",
    )

    # 2. a plan that changes a replication factor: refused client-side, nothing sent
    grow = tmp / "grow.json"
    Plan.of([Move(tps[1], (3, 4, 1))]).write(str(grow))
    with recording(monkeypatch) as rec:
        code, out, err = cli(
            sb.bootstrap_servers, capsys, "--execute", "--reassignment-json-file", str(grow),
            "--disallow-replication-factor-change", "--rollback-file", str(tmp / "rb2.json"),
        )  # fmt: skip
    assert code == 3 and f"{topic}-1" in err and "replication-factor-change" in err, err
    assert rec.of(ALTER) == []
    assert gw.describe_partitions([tps[1]])[tps[1]].replicas == (3, 4)

    # 3. the broker-side guard required: runs at v1, or refused naming the release, nothing sent
    back = tmp / "back.json"
    Plan.of([Move(tps[0], (1, 2))]).write(str(back))
    with recording(monkeypatch) as rec:
        code, out, err = cli(
            sb.bootstrap_servers, capsys, "--execute", "--reassignment-json-file", str(back),
            "--require-broker-rf-guard", "--additional", "--rollback-file", str(tmp / "rb3.json"),
        )  # fmt: skip
    assert code == (0 if has_v1 else 4), out + err
    assert [s.version for s in rec.of(ALTER)] == ([1] if has_v1 else [])
    assert ("Kafka 4.1 or later" in err) == (not has_v1), err
    assert (tmp / "rb3.json").exists() == has_v1  # refused before the rollback file too
    wait_until(
        lambda: gw.describe_partitions([tps[0]])[tps[0]].replicas == ((1, 2) if has_v1 else (2, 1)),
        60,
        "the reorder (or nothing)",
    )
    gw.ck.delete_topics([topic])


def assert_no_request_above_listed(
    sb: Any, gw: Any, monkeypatch: Any, capsys: Any, tmp: Path, topic: str
) -> None:
    """A paced throttled run, --list, --progress, --verify (clearing the throttle), a move
    between log dirs and a preferred leader election against this release: every request
    kafka-python sent is at a version the broker it went to listed in ApiVersions (the
    requests librdkafka sends are negotiated the same way by librdkafka itself)."""
    from waits import wait_until

    sb.create_topic(topic, assignment=[(1, 2), (2, 3)])
    sb.load(topic, mb_per_partition=0.2)
    tps = [TopicPartition(topic, p) for p in range(2)]
    plan = tmp / "plan.json"
    target = {tps[0]: (3, 4), tps[1]: (4, 1)}
    Plan.of([Move(tp, r) for tp, r in target.items()]).write(str(plan))
    bs = sb.bootstrap_servers
    with recording(monkeypatch) as rec:
        code, out, err = cli(
            bs, capsys, "--execute", "--reassignment-json-file", str(plan),
            "--throttle", "50000000", "--reassignment-batch-size", "1", "--additional",
            "--journal", str(tmp / "run.jsonl"), "--rollback-file", str(tmp / "rb.json"),
        )  # fmt: skip
        assert code == 0, out + err
        assert cli(bs, capsys, "--list")[0] == 0
        cli(bs, capsys, "--progress", "--reassignment-json-file", str(plan))
        wait_until(
            lambda: cli(bs, capsys, "--verify", "--reassignment-json-file", str(plan))[0] == 0,
            90,
            "verify: complete, throttles cleared",
        )
        dirs = gw.broker_log_dirs([3])[3]
        here = {r.log_dir for r in gw.describe_log_dirs([3], [tps[0]]) if r.tp == tps[0]}
        there = next(d for d in dirs if d not in here)
        assert gw.alter_replica_log_dirs({(tps[0], 3): there}) == {(tps[0], 3): None}
        assert gw.elect_preferred_leaders([tps[1]])[tps[1]] is None
        gw.list_reassignments()
    assert rec.sent, "nothing was recorded: the send path was not wrapped"
    keys = {s.api_key for s in rec.sent}
    assert {ALTER, 46, 34, 35} <= keys, keys  # Alter/List reassignments, log dirs (kafka-python)
    assert rec.above_listed() == [], rec.above_listed()
    gw.ck.delete_topics([topic])


def needs(gw: Any, feature: caps.Feature) -> None:
    """Skip the rest of a test on a release without ``feature``, naming what its brokers lack
    (`make compat` shows it as n/a with this reason; on the default 4.4.0 nothing skips)."""
    import pytest

    if not gw.capabilities().has(feature):
        pytest.skip(f"{feature.missing()}")
