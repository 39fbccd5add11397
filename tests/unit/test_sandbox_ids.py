"""The sandbox's KRaft cluster id never starts with '-' (kafka-storage format would read it as
an option: about one `sandbox up` in 64 failed that way)."""

from __future__ import annotations

import uuid

from reassign_kit.sandbox import config_files


def test_cluster_id_never_starts_with_a_dash(monkeypatch):
    dash_first = uuid.UUID(bytes=bytes([0xF8]) + bytes(15))  # urlsafe base64 '-' is 62: 111110..
    plain = uuid.UUID(bytes=bytes([0x10]) + bytes(15))
    given = iter([dash_first, dash_first, plain])
    monkeypatch.setattr(config_files.uuid, "uuid4", lambda: next(given))
    cid = config_files.random_cluster_id()
    assert not cid.startswith("-") and len(cid) == 22
    assert cid == "EAAAAAAAAAAAAAAAAAAAAA"
