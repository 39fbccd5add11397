"""Client configuration: the Kafka config keys the tool reads and writes, and the mapping of
Java-style client properties (what ``--command-config`` holds) to each Python client's options.

Pure (no Kafka import): the engine imports the throttle config keys from here, and the gateway
(``admin``) builds its clients from ``client_configs``. Secrets never reach a log line: the
kafka-python admin client logs its whole configuration at DEBUG, so ``CONFIG_REDACTOR`` masks
the values of secret-looking options (``SECRET_OPTION``) there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..errors import UsageError

# Per-broker throttle rates (bytes/s) and per-topic throttled-replica lists, as the official tool.
LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
LOG_DIR_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
BROKER_THROTTLE_KEYS = (LEADER_RATE, FOLLOWER_RATE, LOG_DIR_RATE)
TOPIC_THROTTLE_KEYS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)

# ----------------------------------------------------------------------------- client config

# Java property -> (librdkafka property, kafka-python option). None = not applicable to one side.
_PASSTHROUGH: dict[str, tuple[str | None, str | None]] = {
    "security.protocol": ("security.protocol", "security_protocol"),
    "sasl.mechanism": ("sasl.mechanism", "sasl_mechanism"),
    "sasl.kerberos.service.name": ("sasl.kerberos.service.name", "sasl_kerberos_service_name"),
    "client.id": ("client.id", "client_id"),
    "request.timeout.ms": ("socket.timeout.ms", "request_timeout_ms"),
    # librdkafka / kafka-python native names, for users who give PEM files directly.
    "ssl.ca.location": ("ssl.ca.location", "ssl_cafile"),
    "ssl.certificate.location": ("ssl.certificate.location", "ssl_certfile"),
    "ssl.key.location": ("ssl.key.location", "ssl_keyfile"),
    "ssl.key.password": ("ssl.key.password", "ssl_password"),
    "sasl.username": ("sasl.username", "sasl_plain_username"),
    "sasl.password": ("sasl.password", "sasl_plain_password"),
}
# Java settings that carry no meaning for the Python clients: accepted and ignored.
_IGNORED = {
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.truststore.type",
    "ssl.keystore.type",
    "sasl.login.callback.handler.class",
    "default.api.timeout.ms",
    "retries",
    "retry.backoff.ms",
}
_JAAS_KV = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_INT_OPTIONS = {"request_timeout_ms"}  # kafka-python options that take a number
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# What a mechanism reassign-kit cannot configure would need: refused up front, by name.
_UNSUPPORTED_MECHANISMS = {
    "GSSAPI": "Kerberos needs a keytab and a krb5 setup that kafka-python (which sends the "
    "reassignment requests) cannot take from a properties file; use SCRAM-SHA-512/256 or "
    "PLAIN, or TLS client certificates",
    "OAUTHBEARER": "an OAuth token needs a token provider object in kafka-python (which sends "
    "the reassignment requests) that a properties file cannot give (no "
    "sasl.oauthbearer.token.endpoint.url / client credentials support here); use "
    "SCRAM-SHA-512/256 or PLAIN, or TLS client certificates",
}
# settings that name files the clients read: checked before a client is built
FILE_SETTINGS = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")


def client_configs(config: Mapping[str, str] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Map Java-style client properties to (librdkafka config, kafka-python config).

    Raises UsageError naming the property when it cannot be honoured (e.g. a JKS truststore,
    which neither Python client reads: give ``ssl.ca.location`` with a PEM file instead)."""
    ck: dict[str, Any] = {}
    kp: dict[str, Any] = {}
    wanted = str((config or {}).get("sasl.mechanism", "")).strip().upper()
    if wanted in _UNSUPPORTED_MECHANISMS:  # before its own properties are called unsupported
        raise UsageError(
            f"command config: sasl.mechanism={wanted} is not supported: "
            + _UNSUPPORTED_MECHANISMS[wanted]
        )
    for key, value in (config or {}).items():
        _map_property(key, str(value).strip(), ck, kp)
    _check_security(kp)
    return ck, kp


def _map_property(key: str, value: str, ck: dict[str, Any], kp: dict[str, Any]) -> None:
    """One Java client property into ``ck`` (librdkafka) and ``kp`` (kafka-python), or a
    UsageError naming it."""
    if key in _PASSTHROUGH:
        c, k = _PASSTHROUGH[key]
        if k in _INT_OPTIONS:
            try:
                number = int(value)
            except ValueError:
                raise UsageError(
                    f"command config: {key} must be a whole number of milliseconds, got {value!r}"
                ) from None
            if number <= 0:
                raise UsageError(f"command config: {key} must be > 0, got {value!r}")
        if key in ("security.protocol", "sasl.mechanism"):
            value = value.upper()
        if c:
            ck[c] = value
        if k:
            kp[k] = int(value) if k in _INT_OPTIONS else value
    elif key == "sasl.jaas.config":
        kv = dict(_JAAS_KV.findall(value))
        if "username" in kv:
            ck["sasl.username"] = kp["sasl_plain_username"] = kv["username"]
        if "password" in kv:
            ck["sasl.password"] = kp["sasl_plain_password"] = kv["password"]
        if not kv:
            raise UsageError(
                'command config: sasl.jaas.config has no username="…" password="…"; only '
                "PLAIN and SCRAM login modules are supported"
            )
    elif key == "ssl.endpoint.identification.algorithm":
        on = value.lower() == "https"
        ck["ssl.endpoint.identification.algorithm"] = "https" if on else "none"
        kp["ssl_check_hostname"] = on
    elif key in ("ssl.truststore.location", "ssl.keystore.location"):
        if value.lower().endswith((".pem", ".crt")):
            if key == "ssl.truststore.location":
                ck["ssl.ca.location"] = kp["ssl_cafile"] = value
            else:  # a PEM keystore (ssl.keystore.type=PEM): key and certificate chain
                ck["ssl.certificate.location"] = kp["ssl_certfile"] = value
                ck.setdefault("ssl.key.location", value)
                kp.setdefault("ssl_keyfile", value)
        else:
            raise UsageError(
                f"command config: {key} points at a Java keystore, which the Python Kafka "
                "clients cannot read; export it to PEM and give ssl.ca.location / "
                "ssl.certificate.location / ssl.key.location instead"
            )
    elif key in ("ssl.truststore.password", "ssl.keystore.password"):
        return  # only meaningful for JKS, refused above
    elif key in _IGNORED or key == "bootstrap.servers":
        return
    else:
        raise UsageError(
            f"command config: unsupported property {key!r} (supported: "
            f"{', '.join(sorted([*_PASSTHROUGH, 'sasl.jaas.config', 'ssl.truststore.location']))})"
        )


def _check_security(kp: dict[str, Any]) -> None:
    """The protocol and SASL mechanism supported, and credentials given exactly when SASL is."""
    protocol = kp.get("security_protocol", "PLAINTEXT")
    if protocol not in _PROTOCOLS:
        raise UsageError(
            f"command config: security.protocol {protocol!r} is not one of {', '.join(_PROTOCOLS)}"
        )
    mechanism = kp.get("sasl_mechanism")
    if mechanism in _UNSUPPORTED_MECHANISMS:
        raise UsageError(
            f"command config: sasl.mechanism={mechanism} is not supported: "
            + _UNSUPPORTED_MECHANISMS[mechanism]
        )
    if mechanism is not None and mechanism not in _MECHANISMS:
        raise UsageError(
            f"command config: sasl.mechanism {mechanism!r} is not supported (supported: "
            f"{', '.join(_MECHANISMS)})"
        )
    sasl = protocol.startswith("SASL_")
    if sasl and "sasl_plain_password" not in kp:
        raise UsageError(
            f"command config: security.protocol={protocol} needs credentials: sasl.jaas.config "
            'with username="…" password="…" (or sasl.username and sasl.password)'
        )
    if not sasl and ("sasl_plain_password" in kp or mechanism is not None):
        raise UsageError(
            f"command config: SASL settings are given but security.protocol is {protocol}: set "
            "security.protocol=SASL_PLAINTEXT or SASL_SSL (else the credentials are never used)"
        )
    if sasl and mechanism is None:
        raise UsageError(
            f"command config: security.protocol={protocol} needs sasl.mechanism (one of "
            f"{', '.join(_MECHANISMS)}); the Java clients' default, GSSAPI, is not supported"
        )


SECRET_OPTION = re.compile(r"passw|secret|token|credential", re.I)


class ConfigRedactor:
    """A logging filter for kafka-python's admin client, which logs its whole configuration
    (``sasl_plain_password`` included) at DEBUG: values of secret-looking options become
    ``***`` (by key, as the journal's redaction). Stateless: it holds no secret."""

    @staticmethod
    def _masked(a: Any) -> Any:
        if not isinstance(a, Mapping):
            return a
        return {
            k: ("***" if SECRET_OPTION.search(str(k)) and v not in (None, "") else v)
            for k, v in a.items()
        }

    def filter(self, record: Any) -> bool:
        # logging keeps a lone mapping argument as ``args`` itself, else a tuple
        if isinstance(record.args, Mapping):
            record.args = self._masked(record.args)
        elif isinstance(record.args, tuple):
            record.args = tuple(self._masked(a) for a in record.args)
        return True


CONFIG_REDACTOR = ConfigRedactor()
