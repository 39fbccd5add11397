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
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import KafkaOperationError, UsageError
from ..model import PartitionState, TopicPartition
from .capabilities import RF_GUARD, Capabilities, degraded, intersect, say_once
from .config import (  # noqa: F401 (re-exported: client configuration lives in config.py)
    BROKER_THROTTLE_KEYS,
    CONFIG_REDACTOR,
    FILE_SETTINGS,
    FOLLOWER_RATE,
    FOLLOWER_REPLICAS,
    LEADER_RATE,
    LEADER_REPLICAS,
    LOG_DIR_RATE,
    TOPIC_THROTTLE_KEYS,
    client_configs,
)
from .gateway import (
    BROKER_SOURCE,
    DEFAULT_BROKER,
    DEFAULT_SOURCE,
    STATIC_SOURCE,
    TOPIC_SOURCE,
    BrokerInfo,
    ConfigValue,
    ErrorCode,
    PartitionError,
    ReplicaLogInfo,
    ThrottleConfigs,
)


def _err_text(err: Any) -> str:
    """Readable text of a confluent KafkaError / exception, without a stack trace."""
    inner = err.args[0] if getattr(err, "args", None) else err
    if hasattr(inner, "str") and callable(inner.str):
        return inner.str()
    return str(inner)


def _kp_text(e: Any) -> str:
    """kafka-python error text, its class name once."""
    name, text = type(e).__name__, str(e)
    return text if text.startswith(name) else f"{name}: {text}" if text else name


def _quiet_logger() -> Any:
    import logging

    log = logging.getLogger("reassign_kit.librdkafka")
    log.propagate = False
    log.addHandler(logging.NullHandler())
    return log


_QUIET = _quiet_logger()


class AdminGateway:
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
                "logger": _QUIET,
                **self._ck_conf,
            }
            try:
                self._ck = AdminClient(conf)
            except (KafkaException, ValueError, TypeError) as e:  # librdkafka refused a setting
                raise UsageError(
                    f"command config: the Kafka client (librdkafka) refused the settings: "
                    f"{_err_text(e)}"
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
                    f"cannot connect to {self.bootstrap_servers}: {_kp_text(e)}"
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
            text = _err_text(e)
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
                text = _err_text(e)
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
            raise KafkaOperationError(f"{what}: {_err_text(e)}") from None

    def _kp_call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from kafka.errors import KafkaError

        try:
            return fn(*args, **kwargs)
        except KafkaError as e:
            self._drop_kp()
            raise KafkaOperationError(f"{what}: {_kp_text(e)}") from None

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
        create it, so a read-only command given a misspelt topic would create it (issue 14 #9)."""
        wanted = None if topics is None else sorted(set(topics))
        try:
            md = self.ck.list_topics(timeout=self.timeout_s)
        except Exception as e:
            raise KafkaOperationError(
                f"cannot read metadata from {self.bootstrap_servers}: {_err_text(e)}"
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

    def describe_partitions(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, PartitionState]:
        """Replicas / ISR / leader from metadata; adding / removing (and the replica list of a
        reassigning partition) from the controller, which is authoritative (KIP-860's race)."""
        tps = set(tps)
        if not tps:
            return {}
        md = self._metadata({tp.topic for tp in tps})
        moving = self.list_reassignments(tps)
        out: dict[TopicPartition, PartitionState] = {}
        for tp in tps:
            t = md.get(tp.topic)
            p = t.partitions.get(tp.partition) if t is not None else None
            if p is None:
                continue
            leader = p.leader if p.leader is not None and p.leader >= 0 else None
            m = moving.get(tp)
            out[tp] = PartitionState(
                tp,
                tuple(m.replicas if m else p.replicas),
                tuple(p.isrs),
                leader,
                m.adding if m else (),
                m.removing if m else (),
            )
        return out

    def list_reassignments(
        self, tps: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionState]:
        from kafka.structs import TopicPartition as KTP

        arg = None if tps is None else [KTP(tp.topic, tp.partition) for tp in tps]
        if arg is not None and not arg:
            return {}
        raw = self._kp_call(
            "list partition reassignments",
            self.kp.list_partition_reassignments,
            arg,
            timeout_ms=int(self.timeout_s * 1000),
        )
        out = {}
        for ktp, r in raw.items():
            tp = TopicPartition(ktp.topic, ktp.partition)
            out[tp] = PartitionState(
                tp,
                tuple(r["replicas"]),
                adding=tuple(r["adding_replicas"]),
                removing=tuple(r["removing_replicas"]),
            )
        return out

    # -- reassignments ----------------------------------------------------------------------

    def alter_reassignments(
        self,
        targets: Mapping[TopicPartition, Sequence[int] | None],
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, str | None]:
        """One AlterPartitionReassignments request to the controller. Per partition: None when
        accepted, else the broker's error name and message. ``allow_replication_factor_change``
        False is sent as request v1 (KIP-860) when the brokers list it; when they list only v0
        (every release before 4.1) the request goes out at v0 and the guard is the client-side
        check the preflight ran (``validate_plan``), said once by name; the preflight refuses
        instead when the user required the broker-side guard."""
        if not targets:
            return {}
        broker_guard = not allow_replication_factor_change
        if broker_guard and not self.capabilities().has(RF_GUARD):
            say_once(degraded(RF_GUARD))
            broker_guard = False
        import kafka.errors as Errors
        from kafka.protocol.admin import AlterPartitionReassignmentsRequest as Req

        by_topic: dict[str, list[Any]] = defaultdict(list)
        for tp, replicas in sorted(targets.items()):
            by_topic[tp.topic].append(
                Req.ReassignableTopic.ReassignablePartition(
                    partition_index=tp.partition,
                    replicas=None if replicas is None else [int(r) for r in replicas],
                )
            )
        kwargs: dict[str, Any] = {
            "timeout_ms": int(self.timeout_s * 1000),
            "topics": [Req.ReassignableTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        }
        if broker_guard:
            kwargs["allow_replication_factor_change"] = False
            kwargs["min_version"] = 1
        request = Req(**kwargs)
        admin = self.kp

        def top_level(r: Any) -> Any:
            yield Errors.for_code(r.error_code)

        try:
            response = admin._manager.run(
                admin._send_request_to_controller, request, top_level, False
            )
        except Errors.IncompatibleBrokerVersion:
            # the brokers listed v1 when asked, the controller answering now does not (a
            # rolling downgrade, a failover to an older controller): nothing was sent
            self._caps = None
            raise KafkaOperationError(
                "the controller does not list AlterPartitionReassignments v1 "
                f"(AllowReplicationFactorChange, {RF_GUARD.kip}, Kafka {RF_GUARD.since}+) although "
                "the brokers did when asked: it cannot honour the broker-side replication-factor "
                "guard. Nothing was submitted; run again (the client-side check applies) or "
                "upgrade the cluster"
            ) from None
        except Errors.KafkaError as e:
            self._drop_kp()
            raise KafkaOperationError(f"alter partition reassignments: {_kp_text(e)}") from None
        if response.error_code:
            err = Errors.for_code(response.error_code)
            raise KafkaOperationError(
                f"the controller refused the reassignment request: {err.__name__}"
                f"{': ' + response.error_message if response.error_message else ''}"
            )
        out: dict[TopicPartition, str | None] = {}
        for t in response.responses:
            for p in t.partitions:
                tp = TopicPartition(t.name, p.partition_index)
                if p.error_code:
                    name = Errors.for_code(p.error_code).__name__.removesuffix("Error")
                    text = f"{name}: {p.error_message}" if p.error_message else name
                    out[tp] = PartitionError(ErrorCode.of(p.error_code), text)
                else:
                    out[tp] = None
        return out

    # -- log dirs ---------------------------------------------------------------------------

    def _describe_log_dirs_raw(
        self, brokers: Iterable[int] | None, tps: Iterable[TopicPartition] | None
    ) -> list[dict[str, Any]]:
        topic_parts: dict[str, list[int]] | None = None
        if tps is not None:
            topic_parts = defaultdict(list)
            for tp in tps:
                topic_parts[tp.topic].append(tp.partition)
            topic_parts = dict(topic_parts)
        return self._kp_call(
            "describe log dirs",
            self.kp.describe_log_dirs,
            topic_partitions=topic_parts,
            brokers=None if brokers is None else list(brokers),
        )

    def describe_log_dirs(
        self, brokers: Iterable[int], tps: Iterable[TopicPartition] | None = None
    ) -> list[ReplicaLogInfo]:
        """Every replica log (current and future) on the given brokers, optionally only for
        the given partitions (one request per broker)."""
        out = []
        for b in self._describe_log_dirs_raw(brokers, tps):
            for d in b["log_dirs"]:
                if d.get("error_code"):
                    continue  # an offline log dir holds nothing we can move
                for t in d.get("topics", ()):
                    for p in t.get("partitions", ()):
                        out.append(
                            ReplicaLogInfo(
                                broker=b["broker"],
                                tp=TopicPartition(t["name"], p["partition_index"]),
                                log_dir=d["log_dir"],
                                size_bytes=p["partition_size"],
                                offset_lag=p["offset_lag"],
                                is_future=p["is_future_key"],
                            )
                        )
        return out

    def broker_log_dirs(self, brokers: Iterable[int] | None = None) -> dict[int, list[str]]:
        """Broker -> its online log dirs (for ``validate.ClusterView.log_dirs``)."""
        out: dict[int, list[str]] = {}
        raw = self._describe_log_dirs_raw(brokers, [])
        for b in raw:
            out[b["broker"]] = sorted(
                d["log_dir"] for d in b["log_dirs"] if not d.get("error_code")
            )
        return out

    def elect_preferred_leaders(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, str | None]:
        """One ElectLeaders request (KIP-460, preferred). ELECTION_NOT_NEEDED (the first
        replica leads already) is success."""
        tps = list(tps)
        if not tps:
            return {}
        from confluent_kafka import ElectionType
        from confluent_kafka import TopicPartition as CkTopicPartition

        # no request_timeout / operation_timeout: confluent-kafka 2.16.1's binding raises
        # SystemError on either keyword; _wait bounds the wait instead
        fut = self.ck.elect_leaders(
            ElectionType.PREFERRED, [CkTopicPartition(tp.topic, tp.partition) for tp in tps]
        )
        res = self._wait(fut, "elect preferred leaders")
        out: dict[TopicPartition, str | None] = dict.fromkeys(tps, "no answer from the cluster")
        for ck_tp, err in res.items():
            tp = TopicPartition(ck_tp.topic, ck_tp.partition)
            text = None if err is None else _err_text(err)
            if text is not None and "ELECTION_NOT_NEEDED" in text.upper().replace(" ", "_"):
                text = None
            out[tp] = text
        return out

    def alter_replica_log_dirs(
        self, assignments: Mapping[tuple[TopicPartition, int], str]
    ) -> dict[tuple[TopicPartition, int], str | None]:
        """(partition, broker) -> absolute log dir; per replica None or the broker's error."""
        if not assignments:
            return {}
        import kafka.errors as Errors
        from kafka.structs import TopicPartitionReplica

        raw = self._kp_call(
            "alter replica log dirs",
            self.kp.alter_replica_log_dirs,
            {
                TopicPartitionReplica(tp.topic, tp.partition, broker): d
                for (tp, broker), d in assignments.items()
            },
        )
        out: dict[tuple[TopicPartition, int], str | None] = {}
        for tpr, err in raw.items():
            key = (TopicPartition(tpr.topic, tpr.partition), tpr.broker_id)
            out[key] = None if err is Errors.NoError else err.__name__.removesuffix("Error")
        return out

    # -- configs ----------------------------------------------------------------------------

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
