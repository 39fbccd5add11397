"""A new sandbox's ports are all distinct: every node's listener, the controllers' and the
brokers' metrics endpoints, even where the kernel hands a just-closed port out again."""

from __future__ import annotations

import errno
import json
import socket

import pytest

from reassign_kit.sandbox import create, metrics
from reassign_kit.sandbox.ports import LoopbackPorts


class _Kernel:
    """A kernel that answers ``bind(port 0)`` with the lowest port no socket holds: a port
    closed at once is the next one given (Linux may do so too, by chance)."""

    def __init__(self) -> None:
        self.bound: set[int] = set()

    def socket(self, *args: object, **kwargs: object) -> _Socket:
        return _Socket(self)


class _Socket:
    def __init__(self, kernel: _Kernel) -> None:
        self.kernel, self.port = kernel, None

    def bind(self, addr: tuple[str, int]) -> None:
        port = addr[1] or min(set(range(40000, 40100)) - self.kernel.bound)
        if port in self.kernel.bound:
            raise OSError(errno.EADDRINUSE, "Address already in use")
        self.kernel.bound.add(port)
        self.port = port

    def getsockname(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def close(self) -> None:
        self.kernel.bound.discard(self.port)

    def __enter__(self) -> _Socket:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ports(value: object) -> list[int]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in ([v] if k == "port" else _ports(v))]
    if isinstance(value, list):
        return [p for v in value for p in _ports(v)]
    return []


def test_a_new_clusters_ports_are_distinct_when_the_kernel_reuses_a_closed_port(
    tmp_path, monkeypatch
):
    monkeypatch.delenv(metrics.ENV_SWITCH, raising=False)
    kernel = _Kernel()
    monkeypatch.setattr(socket, "socket", kernel.socket)
    d = tmp_path / "sb"
    create.write_cluster(d, 4, 2, None, 0, "plain", "3.6.2", "zookeeper")
    listeners = _ports(json.loads((d / "sandbox.json").read_text()))
    exporters = list(metrics.ports(d).values())
    assert len(listeners) == 5 and len(exporters) == 4  # ZooKeeper and four brokers
    every = listeners + exporters
    assert len(set(every)) == len(every), every
    assert kernel.bound == set()  # all let go before the nodes start


def test_a_port_taken_stays_held_until_closed():
    with LoopbackPorts() as free:
        taken = [free.take() for _ in range(20)]
        assert len(set(taken)) == 20
        probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        with probe, pytest.raises(OSError):
            probe.bind(("127.0.0.1", taken[0]))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as again:
        again.bind(("127.0.0.1", taken[0]))  # let go at the block's end
