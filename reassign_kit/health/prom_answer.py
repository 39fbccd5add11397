"""The envelope of a Prometheus HTTP API answer (``status``, ``data.resultType``,
``data.result``), read the same way by the health source's instant queries and the load
history's range queries: anything but a successful answer of the expected type is one
``AnswerError`` saying what is wrong."""

from __future__ import annotations

import json
from typing import Any

KINDS = {"vector": "not an instant vector", "matrix": "not a range matrix"}


class AnswerError(ValueError):
    """A Prometheus answer that is not JSON, failed, or is not of the kind asked for."""


def result_rows(body: bytes, kind: str) -> list[Any]:
    """The ``data.result`` rows of a successful answer of ``kind`` ("vector" or "matrix")."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise AnswerError(f"not JSON ({e})") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        err = doc.get("error") if isinstance(doc, dict) else None
        raise AnswerError(f"the query failed: {err or 'no success status'}")
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") != kind:
        raise AnswerError(f"the answer is {KINDS[kind]}")
    rows = data.get("result") or []
    if not isinstance(rows, list):
        raise AnswerError("the answer's result is not a list")
    return rows
