"""Hostile inputs for the fuzz suite (tests/unit/test_fuzz_*.py) and its sandbox run
(tests/integration/test_fuzz_sandbox.py): hypothesis strategies of plan JSON, topics-to-move
JSON, snapshot JSON, command-config files and argument lists, and the in-process CLI driver
with the checks every case must pass, and the per-kind case counter written to
tests/out/fuzz/counts.json."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

COUNTS_FILE = Path(__file__).parent / "out" / "fuzz" / "counts.json"

# exit codes that mean "refused / reported", never "a bug"
REFUSED = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
UNEXPECTED = 1

# --------------------------------------------------------------------------- JSON values

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)

weird_names = st.one_of(
    st.sampled_from(["a", "b", "", " ", "a" * 300, "__consumer_offsets", "../../etc", "t\u0000x"]),
    st.text(min_size=1, max_size=20),
)
broker_ids = st.one_of(
    st.integers(min_value=0, max_value=5),
    st.sampled_from([-1, 99, 2**31, 2**63, -(2**63)]),
    st.sampled_from(["1", None, 1.5, True, [], {}]),
)
partition_ids = st.one_of(
    st.integers(min_value=0, max_value=4),
    st.sampled_from([-1, 2**31, 2**64, "0", None, 0.0, False, [0]]),
)


@st.composite
def plan_entries(draw) -> Any:
    entry: dict[str, Any] = {}
    if draw(st.integers(0, 9)):  # mostly there
        entry["topic"] = draw(st.one_of(st.just("a"), weird_names, json_scalars))
    if draw(st.integers(0, 9)):
        entry["partition"] = draw(partition_ids)
    if draw(st.integers(0, 9)):
        entry["replicas"] = draw(
            st.one_of(st.lists(broker_ids, max_size=5), json_scalars, st.just([]))
        )
    if draw(st.integers(0, 4)) == 0:
        entry["log_dirs"] = draw(
            st.one_of(
                st.lists(st.sampled_from(["any", "/sim/0/d0", "rel/dir", "", None, 3]), max_size=5),
                json_scalars,
            )
        )
    if draw(st.integers(0, 6)) == 0:
        entry[draw(st.text(max_size=6))] = draw(json_scalars)
    return entry if draw(st.integers(0, 12)) else draw(json_values)


@st.composite
def plan_docs(draw) -> Any:
    doc: dict[str, Any] = {}
    if draw(st.integers(0, 8)):
        doc["version"] = draw(st.one_of(st.just(1), json_scalars))
    if draw(st.integers(0, 8)):
        doc["partitions"] = draw(
            st.one_of(st.lists(plan_entries(), max_size=6), json_values, st.just([]))
        )
    if draw(st.integers(0, 8)) == 0:
        doc[draw(st.text(max_size=6))] = draw(json_values)
    return doc if draw(st.integers(0, 10)) else draw(json_values)


def valid_plan_text(sim_partitions: int = 4) -> str:
    return json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": "a", "partition": p, "replicas": [(p + 2) % 4, (p + 3) % 4]}
                for p in range(sim_partitions)
            ],
        }
    )


@st.composite
def damaged_text(draw, valid: str) -> bytes:
    """A valid document cut, spliced or sprinkled with bytes (invalid UTF-8 included)."""
    raw = valid.encode()
    how = draw(st.sampled_from(["cut", "insert", "replace", "bytes", "dup-key", "nan"]))
    if how == "cut":
        return raw[: draw(st.integers(0, len(raw)))]
    if how == "insert":
        i = draw(st.integers(0, len(raw)))
        return raw[:i] + draw(st.binary(min_size=1, max_size=6)) + raw[i:]
    if how == "replace":
        i = draw(st.integers(0, len(raw) - 1))
        return raw[:i] + draw(st.binary(min_size=1, max_size=1)) + raw[i + 1 :]
    if how == "dup-key":
        return raw.replace(b'"version": 1', b'"version": 1, "version": 1', 1)
    if how == "nan":
        return raw.replace(b'"partition": 0', b'"partition": NaN', 1)
    return draw(st.binary(max_size=64))


def json_file_contents(docs, valid: str):
    """bytes: a hostile document dumped, or a valid one damaged."""
    return st.one_of(
        docs.map(lambda d: json.dumps(d).encode()),
        damaged_text(valid),
        st.text(max_size=40).map(str.encode),
    )


@st.composite
def near_valid_plans(draw) -> Any:
    """Well-formed plans, some of which the cluster (topics a: 4 partitions, b: 1; brokers
    0-3) refuses: a missing topic, a partition out of range, an unknown broker, an RF change."""
    entries, seen = [], set()
    for _ in range(draw(st.integers(1, 4))):
        topic = draw(st.sampled_from(["a", "a", "a", "b", "c"]))
        partition = draw(st.integers(0, 4))
        if (topic, partition) in seen:
            continue
        seen.add((topic, partition))
        replicas = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3, unique=True))
        entry: dict[str, Any] = {"topic": topic, "partition": partition, "replicas": replicas}
        if draw(st.integers(0, 5)) == 0:
            entry["log_dirs"] = ["any"] * len(replicas)
        entries.append(entry)
    return {"version": 1, "partitions": entries}


plan_files = st.one_of(
    json_file_contents(plan_docs(), valid_plan_text()),
    near_valid_plans().map(lambda d: json.dumps(d).encode()),
)

# --------------------------------------------------------------------------- topics-to-move


@st.composite
def topics_docs(draw) -> Any:
    doc: dict[str, Any] = {}
    if draw(st.integers(0, 6)):
        doc["version"] = draw(st.one_of(st.just(1), json_scalars))
    if draw(st.integers(0, 8)):
        doc["topics"] = draw(
            st.one_of(
                st.lists(
                    st.one_of(
                        st.fixed_dictionaries(
                            {"topic": st.one_of(st.just("a"), weird_names, json_scalars)}
                        ),
                        json_values,
                    ),
                    max_size=4,
                ),
                json_values,
            )
        )
    return doc if draw(st.integers(0, 10)) else draw(json_values)


topics_files = json_file_contents(
    topics_docs(), json.dumps({"version": 1, "topics": [{"topic": "a"}]})
)

# --------------------------------------------------------------------------- capacity files


@st.composite
def capacity_docs(draw) -> Any:
    """Capacity files (plan --capacity): near-valid broker entries and junk."""
    entry = st.fixed_dictionaries(
        {"id": st.one_of(broker_ids, json_scalars)},
        optional={
            "disk_bytes": st.one_of(st.integers(-1, 1 << 62), json_scalars),
            "max_replicas": st.one_of(st.integers(-1, 50), json_scalars),
            "disk": json_scalars,
        },
    )
    doc: dict[str, Any] = {}
    if draw(st.integers(0, 6)):
        doc["version"] = draw(st.one_of(st.just(1), json_scalars))
    if draw(st.integers(0, 3)):
        doc["default"] = draw(st.one_of(entry.map(lambda e: {**e, "id": None}), json_values))
    if draw(st.integers(0, 8)):
        doc["brokers"] = draw(st.one_of(st.lists(st.one_of(entry, json_values), max_size=5)))
    return doc if draw(st.integers(0, 10)) else draw(json_values)


capacity_files = json_file_contents(
    capacity_docs(), json.dumps({"version": 1, "default": {"disk_bytes": 1 << 40}})
)

# --------------------------------------------------------------------------- snapshots


def valid_snapshot_obj() -> dict[str, Any]:
    return {
        "version": 1,
        "brokers": [{"id": b, "rack": None} for b in range(4)],
        "topics": [{"name": "a", "min_insync_replicas": 1}],
        "partitions": [
            {"topic": "a", "partition": p, "replicas": [p % 4, (p + 1) % 4], "size_bytes": 1 << 20}
            for p in range(4)
        ],
    }


@st.composite
def snapshot_docs(draw) -> Any:
    doc = valid_snapshot_obj()
    for _ in range(draw(st.integers(1, 4))):
        where = draw(st.sampled_from(["top", "brokers", "topics", "partitions", "drop"]))
        if where == "top":
            doc[draw(st.sampled_from(["version", "brokers", "topics", "partitions", "x"]))] = draw(
                json_values
            )
        elif where == "drop":
            doc.pop(draw(st.sampled_from(["version", "brokers", "topics", "partitions"])), None)
        else:
            items = doc.get(where)
            if isinstance(items, list) and items:
                i = draw(st.integers(0, len(items) - 1))
                if isinstance(items[i], dict):
                    key = draw(
                        st.sampled_from(
                            [
                                "id",
                                "rack",
                                "name",
                                "min_insync_replicas",
                                "topic",
                                "partition",
                                "replicas",
                                "size_bytes",
                                "extra",
                            ]  # fmt: skip
                        )
                    )
                    items[i][key] = draw(st.one_of(json_values, broker_ids, partition_ids))
                else:
                    items[i] = draw(json_values)
            else:
                doc[where] = draw(st.lists(json_values, max_size=3))
    return doc


snapshot_files = json_file_contents(snapshot_docs(), json.dumps(valid_snapshot_obj()))

# --------------------------------------------------------------------------- command configs

CONFIG_KEYS = [
    "security.protocol", "sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password",
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.location",
    "ssl.endpoint.identification.algorithm", "request.timeout.ms", "client.id",
    "bootstrap.servers", "retries", "sasl.kerberos.service.name", "unknown.key",
    "sasl.oauthbearer.token.endpoint.url",
]  # fmt: skip
CONFIG_VALUES = [
    "PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT", "sasl_ssl", "TLS", "", "SCRAM-SHA-512",
    "PLAIN", "GSSAPI", "OAUTHBEARER", "abc", "-5", "0", "30000", "99999999999999999999",
    "/etc/passwd", "/nonexistent/ca.pem", "/dev/null", "/tmp", "store.jks", "https", "none",
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";',
    "x required;", "\\", "=", ":",
]  # fmt: skip


@st.composite
def config_lines(draw) -> str:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.text(max_size=30)).replace("\n", " ")
    key = draw(st.one_of(st.sampled_from(CONFIG_KEYS), st.text(max_size=8)))
    value = draw(st.one_of(st.sampled_from(CONFIG_VALUES), st.text(max_size=16)))
    sep = draw(st.sampled_from(["=", ":", " = ", "=\\"]))
    return f"{key}{sep}{value}".replace("\n", " ")


config_files = st.one_of(
    st.lists(config_lines(), max_size=6).map(lambda ls: "\n".join(ls).encode()),
    st.binary(max_size=40),
)

# --------------------------------------------------------------------------- the CLI driver


class Hung(BaseException):
    """A case ran past its time limit (BaseException: no catch-all of the CLI takes it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    def on_alarm(signum, frame):
        raise Hung(f"a case ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_main(main, argv: list[str], limit_s: float = 20.0) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with time_limit(limit_s), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:  # argparse of a tool without its own handler
            code = e.code if isinstance(e.code, int) else 2
    return int(code or 0), out.getvalue(), err.getvalue()


NAMES_SOMETHING = re.compile(
    r"--[a-z]|argument|parameter|partition|topic|broker|snapshot|journal|plan|notebook"
    r"|command config|\.json|\.properties"
)


def check_outcome(
    code: int, out: str, err: str, argv: list[str], names: list[str] | None = None
) -> str:
    """Every case: no traceback, no 'unexpected' exit; a refusal says what is at fault (one of
    ``names`` — the file's path — when given, else an option / argument / partition)."""
    context = f"argv={argv!r}\nexit={code}\nstderr={err[-2000:]}"
    assert "Traceback" not in err and "Traceback" not in out, context
    assert code != UNEXPECTED and "unexpected" not in err, context
    if code == 0:
        return "valid"
    assert code in REFUSED, context
    if code in (10, 11):  # --verify outcomes: reported on stdout
        return "valid"
    if code == 15:  # plan written, a stated goal not met: an outcome, not a refusal
        assert "goal" in err and "not met" in err, context
        return "valid"
    msg = err.strip() or out.strip()
    assert msg, context
    named = any(n in msg for n in names or ())
    if names and code == 3:  # an input file failed validation: the message names that file
        assert named, f"the message names none of {names}\n{context}"
    else:
        assert named or NAMES_SOMETHING.search(msg), f"the message names nothing\n{context}"
    return "refused"


WRITTEN: list[str] = []  # kinds written this session (tests/conftest.py prints them at the end)


class Tally:
    """Cases per input kind, written to tests/out/fuzz/counts.json (each kind replaced by its
    latest run) and printed."""

    def __init__(self, kind: str):
        self.kind = kind
        self.outcomes: Counter[str] = Counter()
        self.codes: Counter[int] = Counter()

    def add(self, outcome: str, code: int) -> None:
        self.outcomes[outcome] += 1
        self.codes[code] += 1

    def write(self) -> dict[str, Any]:
        entry = {
            "cases": sum(self.outcomes.values()),
            "valid": self.outcomes["valid"],
            "refused": self.outcomes["refused"],
            "tracebacks": 0,  # a traceback fails the case: a written entry means none
            "exit_codes": {str(k): v for k, v in sorted(self.codes.items())},
        }
        COUNTS_FILE.parent.mkdir(parents=True, exist_ok=True)
        try:
            counts = json.loads(COUNTS_FILE.read_text())
        except (OSError, ValueError):
            counts = {}
        counts[self.kind] = entry
        tmp = COUNTS_FILE.with_suffix(".tmp")
        tmp.write_text(json.dumps(counts, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, COUNTS_FILE)
        print(f"fuzz {self.kind}: {json.dumps(entry)}")
        WRITTEN.append(self.kind)
        return entry
