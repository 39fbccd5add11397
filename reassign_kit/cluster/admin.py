"""The ONE module that talks to Kafka.

confluent-kafka (librdkafka) serves metadata, configs and offsets; kafka-python 3.x serves what
confluent-kafka's Python API lacks: Alter/ListPartitionReassignments, DescribeLogDirs and
AlterReplicaLogDirs. AlterPartitionReassignments is built here as a request (v1 when
``allow_replication_factor_change`` is False and the controller lists v1, KIP-860) and sent
to the controller through kafka-python's admin client, because its public method does not
expose that field. What the brokers support is read from them (``capabilities``: ApiVersions,
features, config names), never assumed from a release.

Security settings come as one dict of Java-style client properties (what ``--command-config``
holds: ``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``, ``ssl.*``), mapped to
each client's own option names by ``config.client_configs`` (the config keys and the mapping
live in ``cluster/config.py``, re-exported here). No setting ever reaches a log line or ``repr``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import KafkaOperationError, UsageError
from ..model import TopicPartition
from .admin_configs import ConfigsPart
from .admin_errors import err_text, kp_text
from .admin_moves import MovesPart
from .admin_offsets import OffsetsPart
from .capabilities import Capabilities, intersect
from .config import (
    CONFIG_REDACTOR,
    FILE_SETTINGS,
    client_configs,
)
from .gateway import (
    BrokerInfo,
)


def _quiet_logger() -> Any:
    import logging

    log = logging.getLogger("reassign_kit.librdkafka")
    log.propagate = False
    log.addHandler(logging.NullHandler())
    return log


QUIET = _quiet_logger()


class AdminGateway(MovesPart, ConfigsPart, OffsetsPart):
    """Real-Kafka implementation of ``gateway.Gateway`` plus the config calls throttles need.

    Both clients are created lazily, so a command that needs only one pays for one."""

    def __init__(
        self,
        bootstrap_servers: str,
        config: Mapping[str, str] | None = None,
        timeout_s: float = 30.0,
    ):
        if not bootstrap_servers or not bootstrap_servers.strip():
            raise UsageError("--bootstrap-server is required")
        self.bootstrap_servers = bootstrap_servers.strip()
        self.timeout_s = float(timeout_s)
        self._ck_conf, self._kp_conf = client_configs(config)
        for key in FILE_SETTINGS:  # a missing file is the setting's fault, said before connecting
            path = self._ck_conf.get(key)
            if path and not os.path.isfile(path):
                what = "no such file" if not os.path.exists(path) else "not a file"
                raise UsageError(f"command config: {key} {path}: {what}")
        self._ck: Any = None
        self._kp: Any = None
        self._caps: Capabilities | None = None

    def twin(self, timeout_s: float | None = None) -> AdminGateway:
        """A gateway with this one's settings and capabilities and its own clients (not
        connected yet): for another thread (the health probe's ISR view)."""
        import copy

        g = copy.copy(self)
        g._ck = g._kp = None
        if timeout_s is not None:
            g.timeout_s = float(timeout_s)
        return g

    def __repr__(self) -> str:  # never show the config: it may hold secrets
        return f"AdminGateway({self.bootstrap_servers!r})"

    # -- clients ----------------------------------------------------------------------------

    @property
    def ck(self) -> Any:
        if self._ck is None:
            from confluent_kafka import KafkaException
            from confluent_kafka.admin import AdminClient

            # librdkafka logs every refused connection to stderr; the error that matters reaches
            # the user as a KafkaOperationError instead.
            conf = {
                "bootstrap.servers": self.bootstrap_servers,
                "logger": QUIET,
                **self._ck_conf,
            }
            try:
                self._ck = AdminClient(conf)
            except (KafkaException, ValueError, TypeError) as e:  # librdkafka refused a setting
                raise UsageError(
                    f"command config: the Kafka client (librdkafka) refused the settings: "
                    f"{err_text(e)}"
                ) from None
        return self._ck

    @property
    def kp(self) -> Any:
        if self._kp is None:
            import logging

            from kafka import KafkaAdminClient
            from kafka.errors import KafkaError

            kafka_log = logging.getLogger("kafka")
            if kafka_log.level == logging.NOTSET:  # no noise, unless someone asked for it
                kafka_log.setLevel(logging.CRITICAL)
            admin_log = logging.getLogger("kafka.admin.client")  # logs its config at DEBUG
            if CONFIG_REDACTOR not in admin_log.filters:
                admin_log.addFilter(CONFIG_REDACTOR)
            try:
                conf = {
                    "request_timeout_ms": int(self.timeout_s * 1000),
                    "bootstrap_timeout_ms": int(self.timeout_s * 1000),
                    "client_id": "reassign-kit",
                    **self._kp_conf,  # the user's settings win
                }
                self._kp = KafkaAdminClient(
                    bootstrap_servers=self.bootstrap_servers.split(","), **conf
                )
            except KafkaError as e:
                raise KafkaOperationError(
                    f"cannot connect to {self.bootstrap_servers}: {kp_text(e)}"
                ) from None
            except (OSError, ValueError, TypeError) as e:  # ssl files, option values
                raise UsageError(
                    f"command config: the Kafka client (kafka-python) refused the settings: "
                    f"{type(e).__name__}: {e}"
                ) from None
        return self._kp

    def cluster_permissions(self) -> frozenset[str] | None:
        """The operations this client's principal may perform on the cluster resource
        (DescribeCluster's authorized operations, KIP-430): empty when it may not even
        DESCRIBE the cluster, None when the cluster does not say (a broker before 2.8)."""
        ck = self.ck  # a config the client refuses is the config's error (UsageError)
        try:
            desc = ck.describe_cluster(
                include_authorized_operations=True, request_timeout=self.timeout_s
            ).result(timeout=self.timeout_s)
        except Exception as e:  # noqa: BLE001 - sorted out below
            text = err_text(e)
            if "UNSUPPORTED_VERSION" in text.upper().replace(" ", "_"):
                return None
            if isinstance(e, TimeoutError):
                text = f"no answer from {self.bootstrap_servers} within {self.timeout_s:g}s"
            raise KafkaOperationError(f"describe cluster: {text}") from None
        ops = desc.authorized_operations
        return frozenset() if ops is None else frozenset(op.name for op in ops)

    def topic_permissions(self, topics: Iterable[str]) -> dict[str, frozenset[str]] | None:
        """Per topic, the operations this client's principal may perform on it (DescribeTopics'
        authorized operations, KIP-430); empty for a topic it may not see."""
        from confluent_kafka import TopicCollection

        names = sorted(set(topics))
        if not names:
            return {}
        futures = self.ck.describe_topics(
            TopicCollection(names),
            include_authorized_operations=True,
            request_timeout=self.timeout_s,
        )
        out: dict[str, frozenset[str]] = {}
        for name, fut in futures.items():
            try:
                desc = fut.result(timeout=self.timeout_s)
            except Exception as e:  # noqa: BLE001 - sorted out below
                text = err_text(e)
                if "AUTHORIZATION" in text.upper() or "UNKNOWN_TOPIC" in text.upper():
                    out[name] = frozenset()
                    continue
                raise KafkaOperationError(f"describe topic {name}: {text}") from None
            ops = desc.authorized_operations
            out[name] = frozenset() if ops is None else frozenset(op.name for op in ops)
        return out

    def now(self) -> float:
        """Wall-clock time (the simulator's twin is model time)."""
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def close(self) -> None:
        if self._kp is not None:
            try:
                self._kp.close()
            finally:
                self._kp = None
        self._ck = None

    def __enter__(self) -> AdminGateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait(self, future: Any, what: str) -> Any:
        try:
            return future.result(timeout=self.timeout_s)
        except TimeoutError:
            raise KafkaOperationError(
                f"{what}: no answer from {self.bootstrap_servers} within {self.timeout_s:g}s"
            ) from None
        except Exception as e:  # confluent KafkaException carries a KafkaError
            raise KafkaOperationError(f"{what}: {err_text(e)}") from None

    def _kp_call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from kafka.errors import KafkaError

        try:
            return fn(*args, **kwargs)
        except KafkaError as e:
            self._drop_kp()
            raise KafkaOperationError(f"{what}: {kp_text(e)}") from None

    def _drop_kp(self) -> None:
        """Forget the kafka-python client after a failed call: it caches the broker it sends
        controller requests to and never looks again, so once that broker died every later
        request failed (``UnknownBrokerIdError``) even after it came back — a paced run
        could not poll for minutes (found by the chaos suite). The next call connects anew
        and asks the cluster where to send them."""
        kp, self._kp = self._kp, None
        if kp is not None:
            try:
                kp.close()
            except Exception:  # noqa: BLE001 - closing a broken client: nothing to report
                pass

    # -- metadata ---------------------------------------------------------------------------

    def brokers(self) -> list[BrokerInfo]:
        desc = self._wait(
            self.ck.describe_cluster(request_timeout=self.timeout_s), "describe cluster"
        )
        return sorted(
            (BrokerInfo(n.id, n.host, n.port, n.rack) for n in desc.nodes), key=lambda b: b.id
        )

    def cluster_id(self) -> str:
        """The cluster id DescribeCluster answers (one call; ``cluster_info`` asks far more)."""
        desc = self._wait(
            self.ck.describe_cluster(request_timeout=self.timeout_s), "describe cluster"
        )
        return str(desc.cluster_id)

    def cluster_info(self) -> dict[str, Any]:
        """Which cluster and which Kafka a run talked to, for journals and reports.

        Kafka has no API that names a broker's release: ``kafka_version`` is kafka-python's
        inference from each broker's ApiVersions (the newest release whose request versions
        the broker speaks), exact for releases the client knows and shown as the newest one
        it knows for a newer broker (``kafka_version_basis`` says so).
        ``metadata_version_level`` is the finalized ``metadata.version`` feature (KIP-584)."""
        import kafka
        from kafka.protocol.broker_version_data import BROKER_API_VERSIONS

        desc = self._wait(
            self.ck.describe_cluster(request_timeout=self.timeout_s), "describe cluster"
        )
        versions = {}
        for n in desc.nodes:
            data = self._kp_call("api versions", self.kp.get_broker_version_data, n.id)
            versions[n.id] = ".".join(map(str, data.broker_version))
        seen = sorted(set(versions.values()))
        features = self._kp_call("describe features", self.kp.describe_features)
        level = (features.get("metadata.version") or {}).get("finalized")
        newest = ".".join(map(str, max(BROKER_API_VERSIONS)))
        return {
            "cluster_id": desc.cluster_id,
            "brokers": len(desc.nodes),
            "kafka_version": seen[0] if len(seen) == 1 else "mixed: " + ", ".join(seen),
            "kafka_version_basis": f"ApiVersions, inferred by kafka-python {kafka.__version__} "
            f"(a broker newer than {newest} shows as {newest})",
            "broker_versions": {str(b): v for b, v in sorted(versions.items())},
            "metadata_version_level": level[1] if level else None,
            # KRaft finalizes metadata.version; a ZooKeeper-mode cluster has no such feature
            "metadata_mode": "kraft" if level else "zookeeper",
            "capabilities": self.capabilities().summary(),
        }

    def capabilities(self) -> Capabilities:
        """What the cluster can do, as its brokers say (read once per gateway): the API
        versions every live broker lists in ApiVersions (the controller is one of them in
        ZooKeeper mode; KRaft brokers list forwarded requests as the controller takes them),
        the finalized features and the broker config names of one broker."""
        if self._caps is not None:
            return self._caps
        from confluent_kafka.admin import ConfigResource, ResourceType

        desc = self._wait(
            self.ck.describe_cluster(request_timeout=self.timeout_s), "describe cluster"
        )
        # a broker that does not answer (just killed, still registered) is left out: the
        # others' lists decide; one that answers later is asked on the next gateway
        lists: dict[int, dict[int, tuple[int, int]]] = {}
        silent: list[int] = []
        for n in desc.nodes:
            try:
                data = self._kp_call("api versions", self.kp.get_broker_version_data, n.id)
            except KafkaOperationError:
                silent.append(n.id)
                continue
            lists[n.id] = dict(data.api_versions or {})
        if not lists:
            raise KafkaOperationError(
                f"api versions: no broker of {self.bootstrap_servers} answered "
                f"(brokers {', '.join(map(str, silent))})"
            )
        try:
            raw = self._kp_call("describe features", self.kp.describe_features)
        except KafkaOperationError:  # a broker before KIP-584: no features finalized
            raw = {}
        features = {}
        for name, f in (raw or {}).items():
            level = (f or {}).get("finalized")
            if level:
                features[name] = int(level[1])
        first = min(lists)
        res = ConfigResource(ResourceType.BROKER, str(first))
        futures = self.ck.describe_configs([res], request_timeout=self.timeout_s)
        configs = frozenset(self._wait(futures[res], f"describe configs of broker {first}"))
        controller = desc.controller.id if desc.controller is not None else None
        caps = Capabilities(
            api=intersect(lists),
            configs=configs,
            features=features,
            basis=f"ApiVersions of brokers {', '.join(map(str, sorted(lists)))} "
            f"(controller {controller}), features, broker {first}'s config names"
            + (f"; brokers {', '.join(map(str, silent))} did not answer" if silent else ""),
        )
        if not silent:  # complete: kept for the gateway's life
            self._caps = caps
        return caps

    def _metadata(self, topics: Iterable[str] | None) -> dict[str, Any]:
        """Topic metadata, always from one request for ALL topics: a Metadata request that
        names a topic lets a broker with ``auto.create.topics.enable=true`` (Kafka's default)
        create it, so a read-only command given a misspelt topic would create it."""
        wanted = None if topics is None else sorted(set(topics))
        try:
            md = self.ck.list_topics(timeout=self.timeout_s)
        except Exception as e:
            raise KafkaOperationError(
                f"cannot read metadata from {self.bootstrap_servers}: {err_text(e)}"
            ) from None
        out = {}
        for name, t in md.topics.items():
            if wanted is not None and name not in wanted:
                continue
            if t.error is not None:  # unknown topic (auto-create is off) or not ready
                continue
            out[name] = t
        return out

    def topic_partition_counts(self, topics: Iterable[str] | None = None) -> dict[str, int]:
        return {name: len(t.partitions) for name, t in self._metadata(topics).items()}

    # -- reassignments ----------------------------------------------------------------------

    # -- log dirs ---------------------------------------------------------------------------

    # -- configs ----------------------------------------------------------------------------

    # -- offsets ----------------------------------------------------------------------------

    def end_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Log end offsets (latest) of the given partitions, one ListOffsets round."""
        from confluent_kafka import TopicPartition as CTP
        from confluent_kafka.admin import OffsetSpec

        tps = list(tps)
        if not tps:
            return {}
        futures = self.ck.list_offsets(
            {CTP(tp.topic, tp.partition): OffsetSpec.latest() for tp in tps},
            request_timeout=self.timeout_s,
        )
        out = {}
        for ctp, fut in futures.items():
            out[TopicPartition(ctp.topic, ctp.partition)] = self._wait(
                fut, f"list offsets of {ctp.topic}-{ctp.partition}"
            ).offset
        return out

    def tier_offsets(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, dict[str, int]]:
        """Per partition its leader's log start (earliest), local log start (earliest-local,
        KIP-405) and last tiered offset (latest-tiered, KIP-1005) and log end, by name; a spec
        the brokers do not list (an older release) is absent, the others kept."""
        from kafka import TopicPartition as KTP
        from kafka.admin import OffsetSpec
        from kafka.errors import KafkaError

        ktps = [KTP(tp.topic, tp.partition) for tp in tps]
        out: dict[TopicPartition, dict[str, int]] = {}
        if not ktps:
            return out
        specs = {
            "log_start": OffsetSpec.EARLIEST,
            "local_log_start": OffsetSpec.EARLIEST_LOCAL,
            "tiered": OffsetSpec.LATEST_TIERED,
            "log_end": OffsetSpec.LATEST,
        }
        for name, spec in specs.items():
            try:
                got = self.kp.list_partition_offsets({k: spec for k in ktps})
            except KafkaError:  # not listed by this release (UnsupportedVersion): not recorded
                self._drop_kp()
                continue
            for k, v in got.items():
                out.setdefault(TopicPartition(k.topic, k.partition), {})[name] = int(v.offset)
        return out
