"""Shared fixtures: one real Kafka sandbox per test session (or the one in $RK_SANDBOX_DIR)."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

OUT = Path(__file__).parent / "out"


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    from reassign_kit.sandbox.sandbox import Sandbox

    reuse = os.environ.get("RK_SANDBOX_DIR")
    if reuse:
        sb = Sandbox(reuse)
        if sb.running():
            yield sb
            return
    with Sandbox.start(brokers=4, racks=2, dir=tmp_path_factory.mktemp("sandbox")) as sb:
        yield sb


@pytest.fixture(scope="session")
def sasl_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    """A 3-broker SASL/SCRAM-SHA-512 sandbox with the StandardAuthorizer: started
    only when a test asks for it (or the one in $RK_SASL_SANDBOX_DIR). Its ``client_configs``
    map admin / reader / denied to ready .properties files."""
    from reassign_kit.sandbox.sandbox import Sandbox

    reuse = os.environ.get("RK_SASL_SANDBOX_DIR")
    if reuse:
        sb = Sandbox(reuse)
        if sb.running() and sb.security == "sasl_scram":
            yield sb
            return
    d = tmp_path_factory.mktemp("sasl-sandbox")
    with Sandbox.start(brokers=3, dir=d, security="sasl_scram") as sb:
        yield sb


@pytest.fixture(scope="session")
def bootstrap(sandbox) -> str:
    return sandbox.bootstrap_servers


@pytest.fixture
def topic_name() -> Callable[[str], str]:
    """Unique topic names, so tests sharing one cluster never collide."""

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:8]}"

    return make


@pytest.fixture
def out_dir(request: pytest.FixtureRequest) -> Path:
    """A per-test folder under tests/out/ for artefacts a person may want to look at."""
    d = OUT / request.node.name.replace("/", "_").replace("[", "_").replace("]", "")
    d.mkdir(parents=True, exist_ok=True)
    return d


DEFAULT_ARTEFACTS = ("reassign-rollback-*.json", "reassign-run-*.jsonl")
STATE_DIR_ENV = "REASSIGN_KIT_STATE_DIR"  # reassign_kit.run.home.STATE_DIR_ENV


@pytest.fixture(autouse=True)
def no_default_artefacts_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """--execute writes its rollback file (and a paced run its journal) to the working dir
    unless told otherwise: a test must pass tmp paths (--rollback-file, --journal), or it
    litters the repo. The test that leaves one there fails, naming the files."""
    cwd = Path.cwd()
    before = {p for g in DEFAULT_ARTEFACTS for p in cwd.glob(g)}
    before |= {cwd / ".reassign-kit"} if (cwd / ".reassign-kit").exists() else set()
    # every test gets its own run-state dir (each execute records its run there),
    # so runs of one test are never found by another's --verify / --cancel / throttles
    saved = os.environ.get(STATE_DIR_ENV)
    state_dir = tempfile.mkdtemp(prefix="rk-state-")
    os.environ[STATE_DIR_ENV] = state_dir
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(STATE_DIR_ENV, None)
        else:
            os.environ[STATE_DIR_ENV] = saved
        shutil.rmtree(state_dir, ignore_errors=True)
    left = sorted({p for g in DEFAULT_ARTEFACTS for p in cwd.glob(g)} - before)
    if (cwd / ".reassign-kit").exists() and cwd / ".reassign-kit" not in before:
        left.append(cwd / ".reassign-kit")
    if left:
        pytest.fail(
            f"{request.node.nodeid} left {', '.join(p.name for p in left)} in {cwd}: "
            "give it a tmp --rollback-file / --journal (rollback_path= / journal=)"
        )


@pytest.fixture
def gw(bootstrap):
    """An AdminGateway on the session's sandbox (the one module that talks to Kafka)."""
    from reassign_kit.cluster.admin import AdminGateway

    g = AdminGateway(bootstrap)
    yield g
    g.close()


KAFKA_DIRS = ("integration", "browser", "notebooks", "chaos", "compat")
KAFKA_FIXTURES = {"sandbox", "sasl_sandbox", "bootstrap", "gw"}
# the session sandbox's fixtures: the tests using them run one at a time on one worker
SHARED_FIXTURES = {"sandbox", "bootstrap", "gw"}
# modules whose tests start a cluster of their own and never touch the session sandbox: each
# is a worker group of its own, so `make test` runs them beside the session sandbox's tests
# on the worker that runs Spark and the unit tests (a fresh-clone run's Kafka worker took
# 1,021 s of its 1,038 s, the other 512: these four were 297 s of the former). Checked at
# collection (a test here asking for the session sandbox is refused by name).
OWN_CLUSTER_MODULES = (
    "tests/chaos/test_chaos.py",  # a 3-controller quorum
    "tests/integration/test_compat_39zk.py",  # Kafka 3.9.1 in ZooKeeper mode
    "tests/integration/test_security.py",  # the SASL/SCRAM sandbox (session, only here)
    "tests/integration/test_security_tls.py",  # ssl and sasl_ssl sandboxes
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test on a Kafka sandbox lives under one of KAFKA_DIRS: `make test`'s scheduler (below)
    runs those in one worker by their path, so a sandbox test elsewhere would share the machine
    with a second sandbox. Refused here, by name."""
    stray = [
        item.nodeid
        for item in items
        if KAFKA_FIXTURES & set(item.fixturenames)
        and not any(d in Path(str(item.fspath)).parts for d in KAFKA_DIRS)
    ]
    if stray:
        raise pytest.UsageError(
            f"tests on the Kafka sandbox outside tests/{{{','.join(KAFKA_DIRS)}}}: "
            + ", ".join(stray[:5])
        )
    shared = [
        item.nodeid
        for item in items
        if SHARED_FIXTURES & set(item.fixturenames)
        and item.nodeid.split("::", 1)[0] in OWN_CLUSTER_MODULES
    ]
    if shared:
        raise pytest.UsageError(
            "tests in a module of OWN_CLUSTER_MODULES (tests/conftest.py) use the session "
            "sandbox, which would run them beside its other tests: " + ", ".join(shared[:5])
        )


def _cluster_group(nodeid: str) -> str:
    """The worker group of a test by its path: every test on the session sandbox one group
    (in collection order), each module of ``OWN_CLUSTER_MODULES`` one (its own cluster), every
    Spark test one group (one Spark session), each other test its own."""
    path = nodeid.split("::", 1)[0]
    if path in OWN_CLUSTER_MODULES:
        return path
    parts = path.split("/")
    if any(d in parts for d in KAFKA_DIRS):
        return "kafka"
    if "spark" in parts:
        return "spark"
    return nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):  # noqa: ANN201 - xdist's type
    """`make test` runs ``-n 2``: the session sandbox's tests on one worker; Spark, the unit
    tests and the modules with a cluster of their own on the other (``_cluster_group``;
    xdist's own loadgroup marks do not reach node ids under pytest 9, hence a scheduler that
    groups by path)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByCluster(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _cluster_group(nodeid)

    return ByCluster(config, log)


def pytest_terminal_summary(terminalreporter) -> None:
    """The fuzz suite's case counts per input kind (tests/unit/test_fuzz_*.py), when it ran."""
    import json
    import sys

    fuzz = sys.modules.get("fuzz_strategies")
    if fuzz is None or not fuzz.WRITTEN:
        return
    counts = json.loads(fuzz.COUNTS_FILE.read_text())
    terminalreporter.write_sep("-", f"fuzz cases per input kind ({fuzz.COUNTS_FILE})")
    for kind in fuzz.WRITTEN:
        c = counts[kind]
        terminalreporter.write_line(
            f"{kind:<22} {c['cases']:>5} cases: {c['valid']} valid, {c['refused']} refused, "
            f"{c['tracebacks']} tracebacks; exit codes {c['exit_codes']}"
        )
