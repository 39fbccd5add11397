# reassign_kit: `make demo` and `make test` are the two commands; both start with `make setup`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SANDBOX_DIR ?= $(CURDIR)/.cache/sandbox
DEMO_OUT ?= $(CURDIR)/demo-out
PYTEST_ARGS ?=
# two workers: the session sandbox's tests in order on one, Spark, unit tests and the modules with a
# cluster of their own on the other (tests/conftest.py's scheduler groups them); TEST_WORKERS= runs
# the suite in one process
TEST_WORKERS ?= -n 2
# the older release `make test` also runs (tests/integration/test_compat_39zk.py, ZooKeeper mode)
COMPAT_CI_VERSION := 3.9.1
# the versions `make setup` installs (pip-style lock, made by uv from pyproject.toml: `make lock`)
LOCK := requirements.lock
UV_VERSION := $(shell sed -n 's/^uv==\([^ ;]*\).*/\1/p' $(LOCK))

.PHONY: setup venv lock kafka chromium prometheus test long chaos compat demo bench bench-pacing lint sandbox-up sandbox-down clean

setup: venv kafka chromium prometheus

venv: $(VENV)/.installed

# uv (from PyPI, the lock's version) installs .[dev] with every version pinned by the lock:
# no resolution from scratch, the same versions on every machine. pyspark is an
# sdist the index here sends without cache headers: uv builds it again at every fresh clone's
# setup and kept each build (~1.9 GiB each, enough to fill a disk over many clones), so
# the setup prunes uv's cache of what nothing references
$(VENV)/.installed: pyproject.toml $(LOCK)
	@command -v $(PY) >/dev/null || { echo "setup: $(PY) not found (Python 3.11+ is needed)" >&2; exit 1; }
	@echo "setup: $(VENV) with .[dev] at the versions of $(LOCK) (uv $(UV_VERSION))"
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@$(BIN)/uv --version 2>/dev/null | grep -q '^uv $(UV_VERSION)[ ]' || $(BIN)/python -m pip install -q --disable-pip-version-check 'uv==$(UV_VERSION)'
	@$(BIN)/uv pip install -q --python $(BIN)/python -c $(LOCK) -e '.[dev]'
	@$(BIN)/uv cache prune -q 2>/dev/null || true
	@touch $@

# regenerate the lock after a change of pyproject.toml's dependencies (tests/unit/test_lock.py
# fails while the lock does not satisfy them); --upgrade takes the newest allowed versions
lock: venv
	$(BIN)/uv pip compile pyproject.toml --extra dev --universal --python-version 3.11 \
	  --no-header --annotation-style line -o $(LOCK) $(LOCK_ARGS)

kafka: venv
	@command -v java >/dev/null || { echo "setup: java not found: install OpenJDK 17+ (apt-get install openjdk-17-jre-headless)" >&2; exit 1; }
	@command -v mvn >/dev/null || { echo "setup: mvn not found: install Maven (apt-get install maven)" >&2; exit 1; }
	@$(BIN)/reassign-kit sandbox fetch >/dev/null
	@$(BIN)/reassign-kit sandbox fetch --kafka-version $(COMPAT_CI_VERSION) >/dev/null

# Debian's Chromium for the browser test (Playwright cannot download its own browser here).
chromium:
	@if ! command -v chromium >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null || { echo "setup: apt-get install chromium failed" >&2; exit 1; }; \
	  else echo "setup: chromium not found and cannot apt-get it (not root); browser tests will be skipped" >&2; fi; \
	fi

# Debian's Prometheus for the test that scrapes a run; installed, never started as a
# service (a policy-rc.d refuses service starts during the install when the machine has none;
# the test runs the binary itself on 127.0.0.1 with its own config and kills it).
prometheus:
	@if ! command -v prometheus >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    rc=/usr/sbin/policy-rc.d; made=; [ -e $$rc ] || { printf '#!/bin/sh\nexit 101\n' > $$rc; chmod +x $$rc; made=1; }; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus) >/dev/null; ok=$$?; \
	    [ -z "$$made" ] || rm -f $$rc; \
	    [ $$ok = 0 ] || { echo "setup: apt-get install prometheus failed" >&2; exit 1; }; \
	  else echo "setup: prometheus not found and cannot apt-get it (not root); its test fails under CI" >&2; fi; \
	fi

test: setup lint
	$(BIN)/pytest -q -ra --strict-markers --durations=15 -m "not chaos and not compat and not long" $(TEST_WORKERS) $(PYTEST_ARGS)

# the sandbox demonstrations too long for make test (each names what it shows)
long: setup
	$(BIN)/pytest -q -ra --strict-markers --durations=15 -m long $(PYTEST_ARGS)

# every fault scenario on a KRaft quorum; prints the table (also in tests/out/chaos/table.txt)
chaos: setup
	rm -f tests/out/chaos/table.txt
	$(BIN)/pytest -q -ra --strict-markers -p no:cacheprovider tests/chaos $(PYTEST_ARGS); rc=$$?; \
	  echo; cat tests/out/chaos/table.txt 2>/dev/null; exit $$rc

# the integration core and Kafka's reassignment scenarios on 3.6 ZK/KRaft, 3.7, 3.9 ZK/KRaft,
# 4.0, 4.3 and 4.4 (one sandbox at a time; long): the table goes to docs/compat.md.
# COMPAT_ONLY=3.9.1/zookeeper,4.0.0/kraft runs some columns only; COMPAT_ARGS=--failed-only
# runs again what failed, COMPAT_ARGS="--scenarios 'paced batches,chaos:'" the scenarios named
# (the table keeps each test's newest result).
compat: setup
	$(BIN)/python tests/compat/matrix.py $(if $(COMPAT_ONLY),--only $(COMPAT_ONLY)) $(COMPAT_ARGS)

# ruff lint + ruff format (one regime), and the import contracts of pyproject.toml
# (layers point one way; only cluster access and the sandbox import the Kafka clients).
lint: venv
	$(BIN)/ruff check reassign_kit tests bench
	$(BIN)/ruff format --check reassign_kit tests bench
	$(BIN)/lint-imports

bench: setup
	@set -e; for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f; done

# static throttle rates against --pace adaptive under a produce load (a sandbox is started
# and stopped unless RK_SANDBOX_DIR names a running one); every row three times, ABBA, judged
# on medians: on a shared machine a single row is decided by its loud minutes
bench-pacing: setup
	$(BIN)/python bench/bench_pace_adaptive.py --repeat 3

sandbox-up: setup
	@if $(BIN)/reassign-kit sandbox status --dir $(SANDBOX_DIR) 2>/dev/null | grep -q '"running": true'; then \
	  echo "sandbox already running in $(SANDBOX_DIR)"; \
	else $(BIN)/reassign-kit sandbox up --brokers 4 --racks 2 --dir $(SANDBOX_DIR) >/dev/null && echo "sandbox up in $(SANDBOX_DIR)"; fi

sandbox-down: venv
	-$(BIN)/reassign-kit sandbox down --dir $(SANDBOX_DIR) >/dev/null

demo: setup sandbox-up
	@$(BIN)/python -m reassign_kit.demo --sandbox-dir $(SANDBOX_DIR) --output-dir $(DEMO_OUT)

clean: sandbox-down
	rm -rf $(DEMO_OUT) tests/out bench/out
