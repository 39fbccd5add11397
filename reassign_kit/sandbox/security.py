"""A secured sandbox's parts (re-exported by sandbox): SASL/SCRAM users and their JAAS
files, TLS certificates made with openssl, the StandardAuthorizer's ACLs for the client
users (admin, reader, denied)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SandboxError
from .kafka import require

SECURITY_MODES = ("plain", "sasl_scram", "ssl", "sasl_ssl")


# --------------------------------------------------------------------------- security
#
# ``--security sasl_scram|ssl|sasl_ssl`` (plain stays the default and unchanged): every broker
# listener authenticates, the StandardAuthorizer runs on every node with the inter-broker
# principal ``User:broker`` as the only super user, and three client users get ready client
# .properties files: admin (every right), reader (DESCRIBE cluster and topics, DESCRIBE_CONFIGS,
# READ topics) and denied (no ACL). SASL modes use SCRAM-SHA-512 on the broker listener (users
# added at format time, KIP-900) and PLAIN on the controller listener (the controller cannot
# read SCRAM credentials before its own metadata log is up); ``ssl`` is mutual TLS, the
# principal being the certificate's CN. Certificates (a CA, one broker certificate with
# IP:127.0.0.1, one client certificate per user in ``ssl``) are made by openssl at create time.
# Passwords and keys live under ``<dir>/security`` (0700, files 0600), never in sandbox.json
# or the status JSON.

CLIENT_USERS = ("admin", "reader", "denied")


SUPER_USER = "broker"


SCRAM = "SCRAM-SHA-512"


PROTOCOL = {"sasl_scram": "SASL_PLAINTEXT", "ssl": "SSL", "sasl_ssl": "SASL_SSL"}


AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"


def private_write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def run_openssl(args: list[str], cwd: Path) -> None:
    exe = require("openssl", "--security ssl|sasl_ssl makes its certificates with openssl")
    proc = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SandboxError(f"openssl {args[0]} failed: {proc.stderr.strip()[-800:]}")


def make_certificates(sec: Path, names: Sequence[str]) -> None:
    """A CA (ca.pem) and, per name, ``<name>.pem``: its PKCS#8 key and its certificate
    (CN=name, SAN IP:127.0.0.1 and localhost, server and client use), signed by the CA."""
    run_openssl(
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem"]
        + ["-days", "30", "-subj", "/CN=reassign-kit sandbox CA"],
        sec,
    )
    (sec / "leaf.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
        "extendedKeyUsage=serverAuth,clientAuth\n"
        "keyUsage=critical,digitalSignature,keyEncipherment\n"
    )
    for name in names:
        run_openssl(
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key"]
            + ["-out", f"{name}.csr", "-subj", f"/CN={name}"],
            sec,
        )
        run_openssl(
            ["x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key"]
            + ["-CAcreateserial", "-out", f"{name}.crt", "-days", "30", "-extfile", "leaf.ext"],
            sec,
        )
        key = (sec / f"{name}.key").read_text()
        crt = (sec / f"{name}.crt").read_text()
        private_write(sec / f"{name}.pem", key + crt)
        for ext in (".key", ".csr", ".crt"):
            (sec / f"{name}{ext}").unlink()
    (sec / "ca.key").unlink()  # nothing is signed later: the CA's key is not kept
    for p in sec.iterdir():
        if p.is_file():
            os.chmod(p, 0o600)


def jaas(module: str, user: str, password: str, **extra: str) -> str:
    more = "".join(f' {k}="{v}"' for k, v in extra.items())
    return f'{module} required username="{user}" password="{password}"{more};'


@dataclass
class Security:
    """What one security mode adds to the node configs and the format command."""

    mode: str
    dir: Path
    passwords: dict[str, str]

    @property
    def protocol(self) -> str:
        return PROTOCOL[self.mode]

    @property
    def sasl(self) -> bool:
        return self.mode in ("sasl_scram", "sasl_ssl")

    @property
    def tls(self) -> bool:
        return self.mode in ("ssl", "sasl_ssl")

    @classmethod
    def make(cls, d: Path, mode: str) -> Security:
        import secrets as _secrets

        sec = d / "security"
        sec.mkdir(mode=0o700, exist_ok=True)
        os.chmod(sec, 0o700)
        users = (SUPER_USER, *CLIENT_USERS)
        passwords = {u: _secrets.token_hex(12) for u in users} if mode != "ssl" else {}
        if passwords:
            private_write(sec / "passwords.json", json.dumps(passwords, indent=2) + "\n")
        s = cls(mode, sec, passwords)
        if s.tls:
            make_certificates(sec, users if mode == "ssl" else (SUPER_USER,))
        for user in users:
            private_write(
                sec / f"{user}.properties",
                "".join(f"{k}={v}\n" for k, v in s.client_properties(user).items()),
            )
        return s

    @classmethod
    def load(cls, d: Path, mode: str) -> Security:
        sec = d / "security"
        pw = sec / "passwords.json"
        passwords = json.loads(pw.read_text()) if pw.exists() else {}
        return cls(mode, sec, passwords)

    # -- node configs ---------------------------------------------------------------------

    def _tls_props(self) -> dict[str, str]:
        return {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self.dir / f"{SUPER_USER}.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.dir / "ca.pem"),
        }

    def common_props(self) -> dict[str, str]:
        """For the controller and every broker: the controller listener and the authorizer."""
        cproto = "SSL" if self.mode == "ssl" else self.protocol
        props = {
            "listener.security.protocol.map": f"CONTROLLER:{cproto},{self.protocol}:{self.protocol}",
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{SUPER_USER}",
            "allow.everyone.if.no.acl.found": "false",
        }
        if self.tls:
            props.update(self._tls_props())
        if self.mode == "ssl":
            props["ssl.client.auth"] = "required"
            props["ssl.principal.mapping.rules"] = "RULE:^CN=([^,]+).*$/$1/,DEFAULT"
        if self.sasl:
            pw = self.passwords[SUPER_USER]
            props["sasl.mechanism.controller.protocol"] = "PLAIN"
            props["listener.name.controller.sasl.enabled.mechanisms"] = "PLAIN"
            props["listener.name.controller.plain.sasl.jaas.config"] = jaas(
                PLAIN_MODULE, SUPER_USER, pw, **{f"user_{SUPER_USER}": pw}
            )
        return props

    def broker_props(self) -> dict[str, str]:
        props = {"inter.broker.listener.name": self.protocol}
        if self.sasl:
            lname = self.protocol.lower()
            props["sasl.enabled.mechanisms"] = SCRAM
            props["sasl.mechanism.inter.broker.protocol"] = SCRAM
            props[f"listener.name.{lname}.{SCRAM.lower()}.sasl.jaas.config"] = jaas(
                SCRAM_MODULE, SUPER_USER, self.passwords[SUPER_USER]
            )
        return props

    def format_args(self) -> list[str]:
        """``kafka-storage format --add-scram`` for every user (SASL modes)."""
        out: list[str] = []
        for user, pw in self.passwords.items():
            out += ["--add-scram", f"{SCRAM}=[name={user},password={pw}]"]
        return out

    # -- clients --------------------------------------------------------------------------

    def client_properties(self, user: str) -> dict[str, str]:
        """A Java-style client config for ``user`` (the file ``--command-config`` reads; the
        official Java tools read it too)."""
        props = {"security.protocol": self.protocol}
        if self.sasl:
            props["sasl.mechanism"] = SCRAM
            props["sasl.jaas.config"] = jaas(SCRAM_MODULE, user, self.passwords[user])
        if self.tls:
            props["ssl.truststore.type"] = "PEM"
            props["ssl.truststore.location"] = str(self.dir / "ca.pem")
        if self.mode == "ssl":
            props["ssl.keystore.type"] = "PEM"
            props["ssl.keystore.location"] = str(self.dir / f"{user}.pem")
        return props

    def librdkafka(self, user: str = SUPER_USER) -> dict[str, str]:
        """The same, in librdkafka's names (the sandbox's own clients)."""
        conf = {"security.protocol": self.protocol}
        if self.sasl:
            conf["sasl.mechanism"] = SCRAM
            conf["sasl.username"] = user
            conf["sasl.password"] = self.passwords[user]
        if self.tls:
            conf["ssl.ca.location"] = str(self.dir / "ca.pem")
        if self.mode == "ssl":
            conf["ssl.certificate.location"] = str(self.dir / f"{user}.pem")
            conf["ssl.key.location"] = str(self.dir / f"{user}.pem")
        return conf

    def client_config_paths(self) -> dict[str, str]:
        return {u: str(self.dir / f"{u}.properties") for u in CLIENT_USERS}


def acl_bindings() -> list[Any]:
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    def allow(rtype: Any, name: str, user: str, op: Any) -> Any:
        return AclBinding(
            rtype,
            name,
            ResourcePatternType.LITERAL,
            f"User:{user}",
            "*",
            op,
            AclPermissionType.ALLOW,
        )

    C, T = ResourceType.BROKER, ResourceType.TOPIC  # BROKER: the cluster resource
    return [
        allow(C, "kafka-cluster", "admin", AclOperation.ALL),
        allow(T, "*", "admin", AclOperation.ALL),
        allow(ResourceType.GROUP, "*", "admin", AclOperation.ALL),
        allow(ResourceType.TRANSACTIONAL_ID, "*", "admin", AclOperation.ALL),
        allow(C, "kafka-cluster", "reader", AclOperation.DESCRIBE),
        allow(C, "kafka-cluster", "reader", AclOperation.DESCRIBE_CONFIGS),
        allow(T, "*", "reader", AclOperation.DESCRIBE),
        allow(T, "*", "reader", AclOperation.DESCRIBE_CONFIGS),
        allow(T, "*", "reader", AclOperation.READ),
    ]
