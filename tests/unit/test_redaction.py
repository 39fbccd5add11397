"""Secret hygiene: redaction is by key, whole values, and scoped to the caller.

Before: every value of a ``--command-config`` was registered process-wide and replaced as a
substring of every string of every later journal, so a SASL password ``events`` turned the
topic ``events`` into ``***`` (and ``user-events`` into ``user-***``) in this run's journal and
in every journal the process wrote afterwards. Rollback and journal files are 0600."""

from __future__ import annotations

import json
import os
import stat

import pytest

import reassign_kit
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan
from reassign_kit.moves.journal import REDACTED, Journal, read_events, redact
from reassign_kit.operations.execute import write_json
from reassign_kit.run.preflight import write_rollback

PASSWORD = "events"
CONFIG = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-512",
    "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
    f'username="admin" password="{PASSWORD}";',
}


@pytest.fixture(autouse=True)
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def sim_and_plan() -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("events", [[0, 1], [1, 2]], 1 * MB)
    sim.add_topic("user-events", [[2, 3]], 1 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    return sim, plan


def topics_in(path) -> set[str]:
    return {e["topic"] for e in read_events(path) if "topic" in e}


def test_a_topic_named_like_the_password_survives_in_the_journal(tmp_path):
    """The run given a config whose password is ``events`` journals topic ``events`` as is
    (before: ``***`` and ``user-***``, and resume could not match the partitions)."""
    sim, plan = sim_and_plan()
    journal = tmp_path / "run.jsonl"
    res = reassign_kit.execute(
        sim,
        plan,
        command_config=CONFIG,
        journal=journal,
        rollback_path=tmp_path / "rb.json",
        batch_size=1,
        wait=True,
    )
    assert res.state == "done"
    assert topics_in(journal) == {"events", "user-events"}
    assert REDACTED not in journal.read_text()


def test_redaction_is_not_process_wide(tmp_path):
    """A config given to one run changes nothing in a later run without one (before: the
    secret stayed registered for the life of the process)."""
    sim, plan = sim_and_plan()
    reassign_kit.execute(
        sim,
        plan,
        command_config=CONFIG,
        journal=tmp_path / "first.jsonl",
        rollback_path=tmp_path / "rb1.json",
        batch_size=1,
        wait=True,
    )
    sim2, plan2 = sim_and_plan()
    reassign_kit.execute(
        sim2,
        plan2,
        journal=tmp_path / "second.jsonl",
        rollback_path=tmp_path / "rb2.json",
        batch_size=1,
        wait=True,
    )
    assert topics_in(tmp_path / "second.jsonl") == {"events", "user-events"}


def test_secret_keys_and_jaas_passwords_are_masked_whole(tmp_path):
    with Journal(tmp_path / "j.jsonl", "r1") as j:
        j.write(
            "warning",
            options={
                "sasl.password": "p4ss",
                "ssl.key.password": "k3ypass",
                "sasl.jaas.config": CONFIG["sasl.jaas.config"],
                "sasl.oauthbearer.client.secret": "cl1ent",
                "token": "t0ken",
            },
            note='login failed for ScramLoginModule required username="a" password="hunter2";',
            topic=PASSWORD,
            partition=0,  # a partition's events name both (read_events refuses a lone topic)
        )
    rec = read_events(tmp_path / "j.jsonl")[0]
    text = (tmp_path / "j.jsonl").read_text()
    for s in ("p4ss", "k3ypass", "cl1ent", "t0ken", "hunter2", f'"{PASSWORD}";'):
        assert s not in text
    assert rec["options"]["sasl.jaas.config"] == REDACTED  # whole value, not a patched line
    assert rec["note"].endswith(f"password={REDACTED};")
    assert rec["topic"] == PASSWORD  # data equal to a secret is data


def test_redact_masks_only_what_its_caller_names():
    """Extra secret keys are an argument, not state: nothing carries over between calls."""
    assert redact({"motd": "x"}, secret_keys={"motd"}) == {"motd": REDACTED}
    assert redact({"motd": "x"}) == {"motd": "x"}
    assert redact({"a": ["user=x password=hunter2xyz"]}) == {"a": [f"user=x password={REDACTED}"]}
    assert redact({"topic": "events", "replicas": [1, 2]}) == {
        "topic": "events",
        "replicas": [1, 2],
    }


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_rollback_files_are_created_0600(tmp_path):
    """The rollback plan and other JSON artefacts are private to their owner (before: 0644)."""
    old = os.umask(0o022)
    try:
        sim, plan = sim_and_plan()
        first = write_rollback(plan, str(tmp_path / "rb.json"))
        second = write_rollback(plan, str(tmp_path / "rb.json"))  # the next free name
        write_json(str(tmp_path / "out.json"), {"a": 1})
    finally:
        os.umask(old)
    assert second != first
    for p in (first, second, tmp_path / "out.json"):
        assert _mode(p) == 0o600, p
    assert json.loads((tmp_path / "out.json").read_text()) == {"a": 1}
