"""`reassign-kit sandbox ...`: start and control the local Kafka cluster; every command prints JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..errors import SandboxError
from ..sandbox import kafka as kafka_mod
from ..sandbox import sandbox as sbx
from ..sandbox import tiered
from ..sandbox.security import SECURITY_MODES


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="reassign-kit sandbox",
        description="A real Apache Kafka cluster (KRaft, or ZooKeeper for 3.x) on 127.0.0.1 for "
        "demos, rehearsal and tests.",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_up(sub)
    _add_lifecycle(sub)
    _add_node_control(sub)
    _add_data(sub)
    return p


def _with_dir(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sp.add_argument(
        "--dir",
        default=str(sbx.default_dir()),
        help="the cluster's directory (default: %(default)s, or $RK_SANDBOX_DIR)",
    )
    return sp


def _add_up(sub: Any) -> None:
    """`up`: the cluster's shape, release, metadata mode and security."""
    up = _with_dir(
        sub.add_parser("up", help="start a cluster and wait until every broker is registered")
    )
    up.add_argument("--brokers", type=int, default=4, help="how many brokers (default 4)")
    up.add_argument(
        "--racks", type=int, default=0, help="spread brokers over R racks (broker.rack)"
    )
    up.add_argument(
        "--controllers",
        type=int,
        default=1,
        choices=(1, 3, 5),
        help="KRaft controller processes (3 = a quorum that survives losing its leader)",
    )
    up.add_argument(
        "--timeout",
        type=float,
        default=120,
        help="seconds to wait for every broker to register (default 120)",
    )
    up.add_argument(
        "--kafka-version",
        default=None,
        metavar="V",
        help=f"the Apache Kafka release (default {kafka_mod.KAFKA_VERSION}, or "
        f"${kafka_mod.VERSION_ENV}); its jars are fetched from Maven Central into their own folder",
    )
    up.add_argument(
        "--metadata",
        choices=kafka_mod.METADATA_MODES,
        default=None,
        help="kraft (default, or $RK_SANDBOX_METADATA) or zookeeper (Kafka 3.x: one ZooKeeper "
        "on loopback; a broker is the controller)",
    )
    up.add_argument(
        "--security",
        choices=SECURITY_MODES,
        default="plain",
        help="plain (default), sasl_scram (SCRAM-SHA-512), ssl (mutual TLS) or sasl_ssl; the "
        "secured modes run the StandardAuthorizer and write client configs for the users admin, "
        "reader and denied (their paths: client_configs in the JSON)",
    )
    up.add_argument(
        "--tiered-storage",
        action="store_true",
        help="remote log storage (KIP-405) on <dir>/remote-storage with Kafka's LocalTieredStorage "
        "(its kafka-storage test jar, fetched from Maven Central) and the topic-based metadata "
        "manager; `load --tiered` makes topics whose data is mostly remote",
    )
    up.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="text: what started and the bootstrap address (default); json: the full status",
    )


def _add_lifecycle(sub: Any) -> None:
    """`down`, `bootstrap`, `status`, and the jars' `info` / `fetch`."""
    down = _with_dir(sub.add_parser("down", help="stop every process of the cluster"))
    down.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="text: one line (default); json: the status after, every process not alive",
    )
    _with_dir(
        sub.add_parser(
            "bootstrap", help="print the bootstrap address only (BS=$(... sandbox bootstrap))"
        )
    )
    _with_dir(sub.add_parser("status", help="brokers, pids and whether they are alive"))
    for name, text in [
        ("info", "Kafka version and where its jars are"),
        ("fetch", "fetch the Kafka jars from Maven Central (once per version)"),
    ]:
        sub.add_parser(name, help=text).add_argument(
            "--kafka-version", default=None, metavar="V", help=f"default {kafka_mod.KAFKA_VERSION}"
        )


def _add_node_control(sub: Any) -> None:
    """Stopping, killing and starting one broker or controller by its node id."""
    for name, text in [
        ("stop-broker", "graceful stop (SIGTERM)"),
        ("kill-broker", "SIGKILL"),
        ("start-broker", "start a stopped broker and wait until it serves requests"),
        (
            "stop-controller",
            "graceful stop of a controller (ID as in status; `active` = the quorum's leader; "
            "in ZooKeeper mode the controller broker)",
        ),
        (
            "kill-controller",
            "SIGKILL a controller (`active` = the quorum's leader; in ZooKeeper mode the "
            "broker that is controller)",
        ),
        (
            "start-controller",
            "start a stopped controller and wait until the quorum has a leader (ZooKeeper "
            "mode: a broker id)",
        ),
    ]:
        sp = _with_dir(sub.add_parser(name, help=text))
        sp.add_argument("broker_id", metavar="ID", help="the node id (as `status` lists it)")


def _add_data(sub: Any) -> None:
    """`cordon` a broker's log dirs and `load` topics with data."""
    cordon = _with_dir(
        sub.add_parser(
            "cordon",
            help="cordon a broker's log dirs (KIP-1066 cordoned.log.dirs, Kafka 4.3+; dynamic)",
        )
    )
    cordon.add_argument(
        "--broker", type=int, required=True, help="the broker whose log dirs to cordon"
    )
    cordon.add_argument("--dirs", default="*", help='log dirs to cordon (default "*": all)')
    cordon.add_argument("--uncordon", action="store_true", help="lift the broker's cordon")
    load = _with_dir(
        sub.add_parser("load", help="create topics and fill them with data (acks=all)")
    )
    load.add_argument(
        "--topics", default="load", help="a count (topics named load-0..) or a comma list of names"
    )
    load.add_argument("--partitions", type=int, default=4, help="partitions per topic (4)")
    load.add_argument(
        "--replication-factor", type=int, default=3, help="replicas per partition (3)"
    )
    load.add_argument(
        "--mb-per-partition", type=float, default=1.0, help="MB of data written to each (1.0)"
    )
    load.add_argument(
        "--tiered",
        action="store_true",
        help="remote.storage.enable=true, 1 MiB segments (needs `up --tiered-storage`)",
    )
    load.add_argument(
        "--local-retention-bytes",
        type=int,
        default=1024 * 1024,
        help="with --tiered: local.retention.bytes per partition (default 1 MiB)",
    )
    load.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="text: one line per topic (default); json: the full status document",
    )


def _topic_names(spec: str) -> list[str]:
    if spec.isdigit():
        return [f"load-{i}" for i in range(int(spec))]
    names = [t.strip() for t in spec.split(",") if t.strip()]
    if not names:
        raise SandboxError("--topics needs a count or a comma-separated list of topic names")
    return names


NODE_ACTIONS = {
    f"{act}-{role}": (role, act)
    for role in ("broker", "controller")
    for act in ("stop", "kill", "start")
}


def _node_id(sb: sbx.Sandbox, role: str, text: str, act: str = "") -> int:
    """The node id a command names: a number of that role, or `active` for the controller.
    ZooKeeper mode has no controller process: the controller is a broker, the one the cluster
    names (stop / kill accept `active` or its id; start takes the broker to start)."""
    if role == "controller" and sb.metadata == "zookeeper":
        if act == "start":
            return _node_id(sb, "broker", text)
        active = sb.active_controller()
        if active is None:
            raise SandboxError("no live broker is the controller (ZooKeeper mode)")
        if text not in ("active", str(active)):
            raise SandboxError(
                f"broker {text} is not the controller: in ZooKeeper mode the controller is "
                f"broker {active} (use `active` or {active})"
            )
        return active
    ids = sb.nodes if role == "broker" else sb.controllers
    if role == "controller" and text == "active":
        active = sb.active_controller()
        if active is None:
            raise SandboxError("no live controller names a quorum leader")
        return active
    try:
        nid = int(text)
    except ValueError:
        nid = -1
    if nid not in ids:
        known = ", ".join(map(str, sorted(ids)))
        raise SandboxError(f"{role} {text} does not exist in {sb.dir} ({role}s: {known})")
    return nid


def run(args: argparse.Namespace) -> dict[str, Any]:
    c = args.command
    if c == "info":
        return kafka_mod.info(args.kafka_version)
    if c == "fetch":
        from ..sandbox import metrics as sandbox_metrics

        version = kafka_mod.check_version(args.kafka_version or kafka_mod.default_version())
        return {
            "libs": str(kafka_mod.fetch_kafka(version)),
            "kafka_version": version,
            "jmx_exporter": str(sandbox_metrics.fetch_agent()),
        }
    if c == "up":
        sb = sbx.Sandbox.up(
            args.dir,
            brokers=args.brokers,
            racks=args.racks,
            timeout=args.timeout,
            controllers=args.controllers,
            security=args.security,
            kafka_version=args.kafka_version,
            metadata=args.metadata,
            tiered_storage=args.tiered_storage,
        )
        return sb.status()
    sb = sbx.Sandbox(args.dir)
    if c == "down":
        sb.down()
    elif c in NODE_ACTIONS:
        role, act = NODE_ACTIONS[c]
        node = _node_id(sb, role, args.broker_id, act)
        {"stop": sb.stop_node, "kill": sb.kill_node, "start": sb.start_node}[act](node)
        acted = sb.node(node)
        note = (
            f"ZooKeeper mode: the controller is broker {node}; this {act} is a broker failover"
            if role == "controller" and sb.metadata == "zookeeper"
            else None
        )
        return {
            **sb.status(),
            "acted_on": {"command": c, "role": acted.role, "id": node, "note": note},
        }
    elif c == "cordon":
        sb.cordon(args.broker, None if args.uncordon else args.dirs)
    elif c == "load":
        if args.partitions < 1 or args.replication_factor < 1 or args.mb_per_partition < 0:
            raise SandboxError(
                "--partitions and --replication-factor must be >= 1, --mb-per-partition >= 0"
            )
        if args.replication_factor > len(sb.nodes):
            raise SandboxError(
                f"--replication-factor {args.replication_factor} exceeds the {len(sb.nodes)} brokers of {sb.dir}"
            )
        configs = None
        if args.tiered:
            if not (sb.dir / tiered.STORAGE_DIR).is_dir():
                raise SandboxError(
                    f"--tiered: the sandbox in {sb.dir} has no remote storage; start it with "
                    "`sandbox up --tiered-storage`"
                )
            configs = tiered.topic_configs(args.local_retention_bytes)
        loaded = {}
        for t in _topic_names(args.topics):
            sb.create_topic(t, args.partitions, args.replication_factor, configs=configs)
            loaded[t] = sb.load(t, args.mb_per_partition)
        return {**sb.status(), "loaded_messages": loaded}
    return sb.status()


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        out = run(args)
    except SandboxError as e:
        print(f"reassign-kit sandbox {args.command}: {e}", file=sys.stderr)
        return e.exit_code
    if args.command == "load" and args.output == "text":
        print(load_line(args, out))
        return 0
    if args.command == "up" and args.output == "text":
        print(up_lines(out))
        return 0
    if args.command == "down" and args.output == "text":
        print(down_line(out))
        return 0
    if args.command == "bootstrap":
        print(out["bootstrap_servers"])
        return 0
    print(json.dumps(out, indent=2))
    return 0


def down_line(out: dict[str, Any]) -> str:
    """`sandbox down`'s human summary: what was stopped, and whether anything is left."""
    nodes = [*(out.get("controllers") or []), *(out.get("brokers") or [])]
    if out.get("zookeeper"):
        nodes.append(out["zookeeper"])
    alive = [str(n.get("id")) for n in nodes if n.get("alive")]
    return f"sandbox down in {out.get('dir')}: {len(nodes)} process(es) stopped" + (
        f"; STILL ALIVE: {', '.join(alive)}" if alive else ", none left"
    )


def up_lines(out: dict[str, Any]) -> str:
    """`sandbox up`'s human summary: what runs where, not the status document."""
    brokers = out.get("brokers") or []
    racks = sorted({b["rack"] for b in brokers if b.get("rack")})
    where = f" in {len(racks)} racks" if racks else ""
    return (
        f"sandbox up in {out.get('dir')}: Kafka {out.get('kafka_version', '?')} "
        f"({out.get('metadata', '?')}), {len(brokers)} brokers{where}"
        + ("" if out.get("security", "plain") == "plain" else f", security {out['security']}")
        + "\n"
        f"bootstrap: {out.get('bootstrap_servers', '?')}"
        + "".join(
            f"\n--command-config for {user}: {path}"
            for user, path in (out.get("client_configs") or {}).items()
        )
    )


def load_line(args: argparse.Namespace, out: dict[str, Any]) -> str:
    """`sandbox load`'s human summary: one line, not the status document."""
    loaded = out.get("loaded_messages") or {}
    topics = list(loaded)
    msgs = sum(int(v or 0) for v in loaded.values())
    mb = args.mb_per_partition * args.partitions * len(topics)
    names = ", ".join(topics[:5]) + (f" and {len(topics) - 5} more" if len(topics) > 5 else "")
    return (
        f"loaded {len(topics)} topic(s) ({names}): {args.partitions} partitions x RF "
        f"{args.replication_factor}, {mb:g} MB, {msgs} messages"
    )
