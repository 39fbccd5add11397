"""What a Kafka client's error says, as one line for a message (cluster/admin.py and its
parts): confluent-kafka's KafkaError and kafka-python's exceptions."""

from __future__ import annotations

from typing import Any


def err_text(err: Any) -> str:
    """Readable text of a confluent KafkaError / exception, without a stack trace."""
    inner = err.args[0] if getattr(err, "args", None) else err
    if hasattr(inner, "str") and callable(inner.str):
        return inner.str()
    return str(inner)


def kp_text(e: Any) -> str:
    """kafka-python error text, its class name once."""
    name, text = type(e).__name__, str(e)
    return text if text.startswith(name) else f"{name}: {text}" if text else name
