"""Free loopback ports for one sandbox's nodes, every one distinct."""

from __future__ import annotations

import socket


class LoopbackPorts:
    """The ports picked for one cluster. Each stays bound until ``close``: a port closed at
    once can come back from the next ``bind(("127.0.0.1", 0))``, and two brokers given the
    same port leave one unable to start."""

    def __init__(self) -> None:
        self._held: list[socket.socket] = []

    def take(self) -> int:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(("127.0.0.1", 0))
        except OSError:
            s.close()
            raise
        self._held.append(s)
        return s.getsockname()[1]

    def close(self) -> None:
        """Let the ports go, for the nodes about to bind them."""
        for s in self._held:
            s.close()
        self._held.clear()

    def __enter__(self) -> LoopbackPorts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
