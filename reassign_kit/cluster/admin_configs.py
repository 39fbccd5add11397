"""``AdminGateway``'s configs (a part of it, cluster/admin.py): topic and broker configs
read (DescribeConfigs, with their sources) and changed in place (IncrementalAlterConfigs), the
throttle configs, each topic's min.insync.replicas, the cluster default broker's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import KafkaOperationError
from .config import BROKER_THROTTLE_KEYS, TOPIC_THROTTLE_KEYS
from .gateway import (
    BROKER_SOURCE,
    DEFAULT_BROKER,
    DEFAULT_SOURCE,
    STATIC_SOURCE,
    TOPIC_SOURCE,
    ConfigValue,
    ThrottleConfigs,
)


class ConfigsPart:
    """A part of ``AdminGateway`` (see the module docstring): its clients (``ck``, ``kp``),
    ``timeout_s`` and helpers are the gateway's."""

    def _per_resource(self, call: Any, resources: list[Any]) -> dict[Any, Any]:
        """librdkafka takes one BROKER resource per call: send those one by one (all in flight
        at once), and every topic in a single call."""
        from confluent_kafka.admin import ResourceType

        futures: dict[Any, Any] = {}
        topics = [r for r in resources if r.restype != ResourceType.BROKER]
        if topics:
            futures.update(call(topics, request_timeout=self.timeout_s))
        for r in resources:
            if r.restype == ResourceType.BROKER:
                futures.update(call([r], request_timeout=self.timeout_s))
        return futures

    def _describe_configs(self, rtype: Any, names: Iterable[str]) -> dict[str, dict[str, str]]:
        from confluent_kafka.admin import ConfigResource

        names = sorted(set(names))
        if not names:
            return {}
        futures = self._per_resource(
            self.ck.describe_configs, [ConfigResource(rtype, n) for n in names]
        )
        out: dict[str, dict[str, str]] = {}
        for res, fut in futures.items():
            entries = self._wait(fut, f"describe configs of {res.name}")
            out[res.name] = {k: e.value for k, e in entries.items() if e.value is not None}
        return out

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """Effective topic configs (topic overrides, else broker defaults)."""
        from confluent_kafka.admin import ResourceType

        return self._describe_configs(ResourceType.TOPIC, topics)

    def broker_configs(self, brokers: Iterable[int]) -> dict[int, dict[str, str]]:
        from confluent_kafka.admin import ResourceType

        raw = self._describe_configs(ResourceType.BROKER, [str(b) for b in brokers])
        return {int(k): v for k, v in raw.items()}

    def throttle_configs(self, topics: Iterable[str], brokers: Iterable[int]) -> ThrottleConfigs:
        """Throttle configs with their sources (``gateway.ThrottleConfigs``): one DescribeConfigs
        for the topics, one per broker (librdkafka sends a broker's to that broker: a broker
        that is down is named in ``unreachable``, the others answer), and the cluster default
        from the synonyms a broker reports (DYNAMIC_DEFAULT_BROKER_CONFIG)."""
        from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

        out = ThrottleConfigs()
        topics = sorted(set(topics))
        brokers = sorted(set(brokers))
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        resources += [ConfigResource(ResourceType.BROKER, str(b)) for b in brokers]
        if not resources:
            return out
        layer = {
            ConfigSource.DYNAMIC_BROKER_CONFIG.value: BROKER_SOURCE,
            ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value: DEFAULT_SOURCE,
            ConfigSource.STATIC_BROKER_CONFIG.value: STATIC_SOURCE,
        }

        def source_of(e: Any) -> int:
            return int(getattr(e.source, "value", e.source))

        for res, fut in self._per_resource(self.ck.describe_configs, resources).items():
            try:
                entries = self._wait(fut, f"describe configs of {res.name}")
            except KafkaOperationError as e:
                if res.restype == ResourceType.BROKER:
                    out.unreachable[int(res.name)] = str(e)
                    continue
                raise
            if res.restype == ResourceType.TOPIC:
                kv = {
                    k: ConfigValue(e.value, TOPIC_SOURCE)
                    for k in TOPIC_THROTTLE_KEYS
                    if (e := entries.get(k)) is not None
                    and e.value
                    and source_of(e) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
                }
                if kv:
                    out.topics[res.name] = kv
                continue
            mine: dict[str, ConfigValue] = {}
            for k in BROKER_THROTTLE_KEYS:
                e = entries.get(k)
                if e is None:
                    continue
                layers = [e, *(getattr(e, "synonyms", None) or {}).values()]
                for syn in layers:
                    src = layer.get(source_of(syn))
                    if src is None or syn.value is None:
                        continue
                    if src == DEFAULT_SOURCE:
                        out.default.setdefault(k, ConfigValue(syn.value, DEFAULT_SOURCE))
                    elif k not in mine:
                        mine[k] = ConfigValue(syn.value, src)
            if mine:
                out.brokers[int(res.name)] = mine
        return out

    def min_insync_replicas(self, topics: Iterable[str]) -> dict[str, int]:
        """The effective min.insync.replicas of each topic (its override, else the broker's)."""
        return {
            t: int(c.get("min.insync.replicas", "1")) for t, c in self.topic_configs(topics).items()
        }

    def _alter_configs(self, rtype: Any, changes: Mapping[str, Mapping[str, str | None]]) -> None:
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

        resources = []
        for name, kv in sorted(changes.items()):
            entries = [
                ConfigEntry(
                    k,
                    v,
                    incremental_operation=(
                        AlterConfigOpType.DELETE if v is None else AlterConfigOpType.SET
                    ),
                )
                for k, v in sorted(kv.items())
            ]
            if entries:
                resources.append(ConfigResource(rtype, name, incremental_configs=entries))
        if not resources:
            return
        futures = self._per_resource(self.ck.incremental_alter_configs, resources)
        for res, fut in futures.items():
            self._wait(fut, f"alter configs of {res.name}")

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, str | None]]) -> None:
        """Incrementally SET (value) or DELETE (None) topic configs."""
        from confluent_kafka.admin import ResourceType

        self._alter_configs(ResourceType.TOPIC, changes)

    def alter_broker_configs(self, changes: Mapping[int, Mapping[str, str | None]]) -> None:
        """Incrementally SET (value) or DELETE (None) dynamic per-broker configs."""
        from confluent_kafka.admin import ResourceType

        if changes.get(DEFAULT_BROKER):  # type: ignore[call-overload]
            self._alter_default_broker(changes[DEFAULT_BROKER])  # type: ignore[index]
        self._alter_configs(
            ResourceType.BROKER,
            {str(b): kv for b, kv in changes.items() if b != DEFAULT_BROKER},
        )

    def _alter_default_broker(self, kv: Mapping[str, str | None]) -> None:
        """Incremental alter of the cluster-default broker entity (``<default>``, the empty
        resource name): neither librdkafka nor kafka-python's public method takes an empty
        broker name, so the request is built here (any broker forwards it)."""
        import kafka.errors as Errors
        from kafka import KafkaAdminClient
        from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

        configs = {
            k: (AlterConfigOp.DELETE, None) if v is None else (AlterConfigOp.SET, v)
            for k, v in sorted(kv.items())
        }
        req = KafkaAdminClient._alter_configs_request(
            [ConfigResource(ConfigResourceType.BROKER, "", configs)], incremental=True
        )
        admin = self.kp
        response = self._kp_call(
            "alter configs of <default>", admin._manager.run, admin._manager.send, req
        )
        for r in response.responses:
            code = r[0] if isinstance(r, tuple) else r.error_code
            if code:
                raise KafkaOperationError(
                    f"alter configs of <default>: {Errors.for_code(code).__name__}"
                )

    def set_throttles(
        self,
        topic_replicas: Mapping[str, Mapping[str, str]],
        broker_rates: Mapping[int, Mapping[str, str]],
    ) -> None:
        """Set throttled-replica lists per topic and rates per broker (incremental: other
        configs are left alone)."""
        self.alter_topic_configs(topic_replicas)
        self.alter_broker_configs(broker_rates)

    def clear_throttles(self, topics: Iterable[str], brokers: Iterable[int]) -> None:
        """Delete the throttle configs of the given topics and brokers."""
        self.alter_topic_configs({t: dict.fromkeys(TOPIC_THROTTLE_KEYS) for t in topics})
        self.alter_broker_configs({b: dict.fromkeys(BROKER_THROTTLE_KEYS) for b in brokers})
