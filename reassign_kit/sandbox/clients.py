"""The sandbox's own Kafka clients (the super user's when secured): who is registered, whether
a restarted broker serves, which broker is the ZooKeeper-mode controller, the ACLs a secured
cluster starts with. The Kafka client is imported where it is used: the sandbox's files and
processes need none."""

from __future__ import annotations

import time
from typing import Any

from ..errors import SandboxError
from .processes import Node, pid_alive
from .security import acl_bindings


class QuietLogger:
    """librdkafka logs connection refusals while brokers start; they are expected here."""

    def log(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return self.log


class Clients:
    """Clients of one cluster: ``nodes`` is the sandbox's own broker map (its pids change as
    brokers restart), ``conf`` the librdkafka settings every client of it needs."""

    def __init__(self, nodes: dict[int, Node], conf: dict[str, str]):
        self.nodes = nodes
        self.conf = conf

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes.values())

    def admin(self) -> Any:  # confluent_kafka.admin.AdminClient
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap_servers, **self.conf})

    def one_broker(self, node: Node, **settings: Any) -> Any:
        """An admin client of ``node`` alone (sparse connections: it asks its one bootstrap
        broker first)."""
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": f"127.0.0.1:{node.port}", **settings, **self.conf})

    def _alive_admin(self) -> Any | None:
        """A quiet admin client of the live brokers, None when none is alive."""
        from confluent_kafka.admin import AdminClient

        alive = [n for n in self.nodes.values() if pid_alive(n.pid)]
        if not alive:
            return None
        return AdminClient(
            {
                "bootstrap.servers": ",".join(f"127.0.0.1:{n.port}" for n in alive),
                "socket.connection.setup.timeout.ms": 2000,
                "log_level": 0,
                "logger": QuietLogger(),
                **self.conf,
            }
        )

    def registered_brokers(self, timeout: float = 5.0) -> set[int]:
        admin = self._alive_admin()
        if admin is None:
            return set()
        try:
            md = admin.list_topics(timeout=timeout)
            return set(md.brokers)
        except Exception:
            return set()

    def controller_broker(self) -> int | None:
        """The broker DescribeCluster names controller (ZooKeeper mode), when it is alive."""
        admin = self._alive_admin()
        if admin is None:
            return None
        try:
            desc = admin.describe_cluster(request_timeout=5).result(10)
        except Exception:  # noqa: BLE001 - no broker answers: no controller known
            return None
        cid = desc.controller.id if desc.controller is not None else -1
        node = self.nodes.get(cid)
        return cid if node is not None and pid_alive(node.pid) else None

    def serves_itself(self, node: Node) -> bool:
        """``node`` answers a Metadata request itself, listing itself."""
        admin = self.one_broker(
            node,
            **{
                "socket.connection.setup.timeout.ms": 2000,
                "log_level": 0,
                "logger": QuietLogger(),
            },
        )
        try:
            md = admin.list_topics(timeout=3)
        except Exception:
            return False
        return md.orig_broker_id == node.id and node.id in md.brokers

    def grant_acls(self, timeout: float = 60) -> None:
        """The ACLs of admin and reader (denied gets none), as the super user; returns once
        every broker's authorizer has them."""
        from confluent_kafka.admin import (
            AclBindingFilter,
            AclOperation,
            AclPermissionType,
            ResourcePatternType,
            ResourceType,
        )

        bindings = acl_bindings()
        admin = self.admin()
        for binding, fut in admin.create_acls(bindings, request_timeout=timeout).items():
            try:
                fut.result(timeout)
            except Exception as e:
                raise SandboxError(f"creating ACL {binding} failed: {e}") from None
        any_acl = AclBindingFilter(
            ResourceType.ANY,
            None,
            ResourcePatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        deadline = time.monotonic() + timeout
        for node in self.nodes.values():
            one = self.one_broker(node, logger=QuietLogger())
            while True:
                try:
                    got = one.describe_acls(any_acl, request_timeout=10).result(10)
                    if len(got) >= len(bindings):
                        break
                except Exception:  # noqa: BLE001 - retried until the deadline
                    pass
                if time.monotonic() > deadline:
                    raise SandboxError(f"broker {node.id} did not see the ACLs in {timeout:.0f}s")
                time.sleep(0.2)

    def cordon(self, broker_id: int, dirs: str | None, timeout: float) -> None:
        """KIP-1066: set (``None``: delete) broker ``broker_id``'s ``cordoned.log.dirs``."""
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        op = AlterConfigOpType.SET if dirs is not None else AlterConfigOpType.DELETE
        res = ConfigResource(
            ResourceType.BROKER,
            str(broker_id),
            incremental_configs=[
                ConfigEntry("cordoned.log.dirs", dirs or "", incremental_operation=op)
            ],
        )
        admin = self.admin()
        try:
            admin.incremental_alter_configs([res])[res].result(timeout)
        except Exception as e:
            raise SandboxError(f"cordoning broker {broker_id} failed: {e}") from e
