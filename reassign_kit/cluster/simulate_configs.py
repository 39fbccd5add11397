"""``SimCluster``'s configs (a part of it, cluster/simulate.py, as ``admin_configs`` is of
``AdminGateway``): topic and broker configs read with their sources and changed in place, a
down broker's refused as on a real cluster, and the throttles they amount to
(``ThrottleState``), which the replication model applies."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import KafkaOperationError
from .config import (
    BROKER_THROTTLE_KEYS,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    TOPIC_THROTTLE_KEYS,
)
from .gateway import (
    BROKER_SOURCE,
    DEFAULT_BROKER,
    DEFAULT_SOURCE,
    STATIC_SOURCE,
    TOPIC_SOURCE,
    ConfigValue,
    ThrottleConfigs,
    alter_in_place,
)


@dataclass(frozen=True)
class ThrottleState:
    """Throttles as Kafka stores them: per-topic throttled replica lists, per-broker rates."""

    leader_replicas: Mapping[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    follower_replicas: Mapping[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    broker_rates: Mapping[int, int] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (
            any(self.leader_replicas.values())
            or any(self.follower_replicas.values())
            or self.broker_rates
        )


class ConfigsPart:
    """A part of ``SimCluster`` (see the module docstring): its configs, brokers, partitions
    and call counts are the cluster's."""

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        """Each topic's min.insync.replicas from its configs (1, the broker default, else)."""
        cfgs = self.topic_configs(topics)
        return {t: int(cfgs.get(t, {}).get("min.insync.replicas", 1)) for t in topics}

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        self.calls["describe_configs"] += 1
        known = self._known_topics()
        return {t: dict(self.topic_cfg.get(t, {})) for t in topics if t in known}

    def _reachable(self, broker: Any, what: str) -> None:
        """A broker's configs are asked of and changed on that broker: a down one times out
        (as librdkafka's request to it does, KAFKA-13392)."""
        if broker in self.down:
            raise KafkaOperationError(f"{what} of {broker}: broker {broker} is down (timed out)")

    def effective_broker_configs(self, broker: int) -> dict[str, str]:
        """What a broker applies: its own dynamic value, else the cluster default, else its
        static one (Kafka's precedence)."""
        return {
            **self.static_broker_cfg.get(broker, {}),
            **self.default_broker_cfg,
            **self.broker_cfg.get(broker, {}),
        }

    def broker_configs(self, brokers: Iterable[int]) -> dict[int, dict[str, str]]:
        self.calls["describe_configs"] += 1
        brokers = [b for b in brokers if b in self.broker_ids]
        for b in brokers:
            self._reachable(b, "describe configs")
        return {b: self.effective_broker_configs(b) for b in brokers}

    def throttle_configs(self, topics: Iterable[str], brokers: Iterable[int]) -> ThrottleConfigs:
        """As ``AdminGateway.throttle_configs``: values with their sources; a down broker is
        named in ``unreachable``."""
        self.calls["describe_configs"] += 1
        out = ThrottleConfigs()
        known = self._known_topics()
        for t in sorted(set(topics)):
            kv = {
                k: ConfigValue(v, TOPIC_SOURCE)
                for k in TOPIC_THROTTLE_KEYS
                if t in known and (v := self.topic_cfg.get(t, {}).get(k))
            }
            if kv:
                out.topics[t] = kv
        for b in sorted(set(brokers)):
            if b not in self.broker_ids:
                continue
            if b in self.down:
                out.unreachable[b] = f"describe configs of {b}: broker {b} is down (timed out)"
                continue
            kv = {}
            for k in BROKER_THROTTLE_KEYS:
                if v := self.broker_cfg.get(b, {}).get(k):
                    kv[k] = ConfigValue(v, BROKER_SOURCE)
                elif v := self.static_broker_cfg.get(b, {}).get(k):
                    kv[k] = ConfigValue(v, STATIC_SOURCE)
            if kv:
                out.brokers[b] = kv
        out.default = {
            k: ConfigValue(v, DEFAULT_SOURCE)
            for k in BROKER_THROTTLE_KEYS
            if (v := self.default_broker_cfg.get(k))
        }
        return out

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, str | None]]) -> None:
        self.calls["alter_configs"] += 1
        alter_in_place(self.topic_cfg, changes)
        self._throttles_changed()

    def alter_broker_configs(self, changes: Mapping[int, Mapping[str, str | None]]) -> None:
        self.calls["alter_configs"] += 1
        # librdkafka sends one request per broker, each to that broker: the live ones apply
        dead = [b for b in changes if b != DEFAULT_BROKER and b in self.down]
        changes = {b: kv for b, kv in changes.items() if b not in dead}
        if DEFAULT_BROKER in changes:
            d = {DEFAULT_BROKER: dict(self.default_broker_cfg)}
            alter_in_place(d, {DEFAULT_BROKER: changes[DEFAULT_BROKER]})
            self.default_broker_cfg = d.get(DEFAULT_BROKER, {})
        alter_in_place(self.broker_cfg, {b: kv for b, kv in changes.items() if b != DEFAULT_BROKER})
        self._throttles_changed()
        for b in dead:
            self._reachable(b, "alter configs")

    def _known_topics(self) -> set[str]:
        """The topics that have partitions (was a walk over every partition at each
        config call); found again whenever the number of partitions changed."""
        n = len(self.partitions)
        if self._topics_for != n:
            self._topics = {tp.topic for tp in self.partitions}
            self._topics_for = n
        return self._topics

    def _throttles_changed(self) -> None:
        self.throttles = ThrottleState(
            _lists(self.topic_cfg, LEADER_REPLICAS, self._parsed),
            _lists(self.topic_cfg, FOLLOWER_REPLICAS, self._parsed),
            {
                b: int(float(r))
                for b, c in self.broker_cfg.items()
                if (r := c.get(FOLLOWER_RATE) or c.get(LEADER_RATE))
            },
        )
        self.throttle_history.append((self.t, self.throttles))

    def current_throttles(self) -> ThrottleState:
        """The throttles the configs amount to, as the replication model applies them."""
        return self.throttles


def _lists(
    topic_cfg: Mapping[str, Mapping[str, str]],
    key: str,
    parsed: dict[tuple[str, str], tuple[str, frozenset]] | None = None,
) -> dict[str, frozenset]:
    """Each topic's throttled-replica list ``key`` as (partition, broker) entries; a list
    unchanged since the last call is taken from ``parsed`` (topic, key -> (value, entries))
    instead of being read again (every list was, at every config change)."""
    out: dict[str, frozenset] = {}
    for t, c in topic_cfg.items():
        value = c.get(key) or ""
        hit = parsed.get((t, key)) if parsed is not None else None
        if hit is not None and hit[0] == value:
            entries = hit[1]
        else:
            found = set()
            for e in value.split(","):
                if ":" in e:
                    p, b = e.split(":", 1)
                    found.add((int(p), int(b)))
            entries = frozenset(found)
            if parsed is not None:
                parsed[(t, key)] = (value, entries)
        if entries:
            out[t] = entries
    return out
