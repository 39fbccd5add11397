"""What a cluster can do, from what its brokers say: never from a version string.

Each live broker's ApiVersions (kafka-python negotiates every request from them; librdkafka does
the same for confluent-kafka's calls), the finalized features (KIP-584) and the broker config
names that exist decide which newer features reassign-kit may use. A feature the cluster lacks
either degrades, said once by name (``say_once``), or is refused with a message naming the
release that has it. The releases named here were checked by asking real brokers of each
release (`make compat`, docs/compatibility.md), not taken from the clients jars.

Pure: ``Capabilities`` is a value built by the gateway (``AdminGateway.capabilities``) or the
simulator (``ALL`` unless a test models an older cluster).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TextIO

# Kafka API keys (the protocol's, stable across releases)
ALTER_PARTITION_REASSIGNMENTS = 45
ALTER_REPLICA_LOG_DIRS = 34
DESCRIBE_TOPIC_PARTITIONS = 75


@dataclass(frozen=True)
class Feature:
    """A broker feature reassign-kit uses when the cluster has it."""

    name: str
    kip: str
    since: str  # the first Apache Kafka release whose brokers have it (checked on real brokers)
    needs: str  # what the brokers must report
    without: str  # what reassign-kit does on a cluster without it

    def missing(self) -> str:
        return f"the brokers do not report {self.needs} ({self.kip}, Kafka {self.since}+)"


RF_GUARD = Feature(
    "broker-side replication-factor guard",
    "KIP-860",
    "4.1",
    "AlterPartitionReassignments v1 (AllowReplicationFactorChange)",
    "--disallow-replication-factor-change is enforced client-side only (every move is checked "
    "before anything is sent); --require-broker-rf-guard refuses instead",
)
LOG_DIR_MOVES = Feature(
    "moves between log dirs",
    "KIP-113/KIP-858",
    "3.7 (KRaft), any 3.x (ZooKeeper)",
    "AlterReplicaLogDirs",
    "a plan with log_dirs is refused (nothing sent)",
)
ELR = Feature(
    "eligible leader replicas",
    "KIP-966",
    "4.1 (on by default)",
    "the feature eligible.leader.replicas.version >= 1",
    "leadership and safety are judged on the ISR alone",
)
CORDONS = Feature(
    "log-dir cordons",
    "KIP-1066",
    "4.3",
    "the broker config cordoned.log.dirs",
    "no log dir is cordoned: every broker may take replicas",
)
TIERED = Feature(
    "tiered storage",
    "KIP-405",
    "3.6",
    "the broker config remote.log.storage.system.enable",
    "every topic's whole log is local (sizes from DescribeLogDirs as they are)",
)
FEATURES = (RF_GUARD, LOG_DIR_MOVES, ELR, CORDONS, TIERED)


@dataclass(frozen=True)
class Capabilities:
    """``api``: per API key the version range EVERY live broker lists (their intersection;
    in KRaft a broker lists a forwarded request's versions as the controller accepts them,
    KIP-590), with the controller's own list for the requests sent to it (ZooKeeper mode);
    None = not known (the simulator: everything). ``configs``: broker config names that
    exist. ``features``: finalized feature levels. ``basis``: who was asked."""

    api: Mapping[int, tuple[int, int]] | None = None
    configs: frozenset[str] | None = None
    features: Mapping[str, int] = field(default_factory=dict)
    basis: str = "assumed (no broker asked)"

    def max_version(self, api_key: int) -> int | None:
        """The newest version of ``api_key`` every broker lists; None when one does not
        list it at all (and -1 never: an unknown map means 'anything')."""
        if self.api is None:
            return 1 << 15
        rng = self.api.get(api_key)
        return rng[1] if rng else None

    def lists(self, api_key: int, version: int) -> bool:
        if self.api is None:
            return True
        rng = self.api.get(api_key)
        return rng is not None and rng[0] <= version <= rng[1]

    def has_config(self, name: str) -> bool:
        return self.configs is None or name in self.configs

    def has(self, feature: Feature) -> bool:
        if feature is RF_GUARD:
            return self.lists(ALTER_PARTITION_REASSIGNMENTS, 1)
        if feature is LOG_DIR_MOVES:
            return self.max_version(ALTER_REPLICA_LOG_DIRS) is not None
        if feature is ELR:
            if self.api is None:
                return True
            return self.features.get("eligible.leader.replicas.version", 0) >= 1
        if feature is CORDONS:
            return self.has_config("cordoned.log.dirs")
        if feature is TIERED:
            return self.has_config("remote.log.storage.system.enable")
        raise KeyError(feature.name)

    def summary(self) -> dict[str, bool]:
        """Feature name -> whether the cluster has it (for the journal and reports)."""
        return {f.name: self.has(f) for f in FEATURES}


ALL = Capabilities()


def intersect(lists: Mapping[int, Mapping[int, tuple[int, int]]]) -> dict[int, tuple[int, int]]:
    """Per API key the range every node lists (a key one node lacks is dropped)."""
    out: dict[int, tuple[int, int]] | None = None
    for versions in lists.values():
        if out is None:
            out = {k: (int(lo), int(hi)) for k, (lo, hi) in versions.items()}
            continue
        merged = {}
        for k, (lo, hi) in out.items():
            if k in versions:
                lo2, hi2 = max(lo, versions[k][0]), min(hi, versions[k][1])
                if lo2 <= hi2:
                    merged[k] = (lo2, hi2)
        out = merged
    return out or {}


def degraded(feature: Feature) -> str:
    """The one warning a run prints when it goes on without ``feature``."""
    return f"{feature.missing()}: {feature.without}"


def refused(feature: Feature, option: str) -> str:
    """The refusal when the user asked for ``feature`` explicitly (``option``)."""
    return (
        f"{option} needs the {feature.name}, and {feature.missing()}. Nothing was sent; upgrade "
        f"the cluster to Kafka {feature.since} or later, or run without {option}"
    )


_SAID: set[str] = set()


def say_once(text: str, stream: TextIO | None = None) -> bool:
    """Print ``warning: text`` to stderr the first time this process says it; True if said."""
    if text in _SAID:
        return False
    _SAID.add(text)
    print(f"reassign-kit: warning: {text}", file=stream or sys.stderr, flush=True)
    return True
