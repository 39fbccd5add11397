"""Debian's ``prometheus`` for sandbox tests: started on a free loopback port with its own
config and data dir under a tmp dir, scraping the given targets, stopped by its pid. Without
the binary a test fails under CI (``make setup`` installs it: ``make prometheus``) and is
skipped, with that reason, elsewhere."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Prometheus:
    """One server (``query``: an instant vector as (labels, value) rows)."""

    def __init__(self, tmp: Path, targets: dict[str, list[str]], interval: float = 2):
        exe = shutil.which("prometheus")
        if exe is None:
            msg = "Debian's prometheus is not installed (make setup: make prometheus)"
            if os.environ.get("CI"):
                pytest.fail(msg)
            pytest.skip(msg)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        jobs = "".join(
            f"  - job_name: {job}\n    static_configs:\n      - targets: {json.dumps(t)}\n"
            for job, t in targets.items()
        )
        cfg = tmp / "prometheus.yml"
        every = f"{interval:g}s"
        cfg.write_text(
            f"global:\n  scrape_interval: {every}\n  scrape_timeout: {every}\n"
            f"  evaluation_interval: {every}\nscrape_configs:\n{jobs}"
        )
        self.log = open(tmp / "prometheus.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [
                exe,
                f"--config.file={cfg}",
                f"--storage.tsdb.path={tmp / 'prometheus-data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--storage.tsdb.retention.time=1h",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )

    def ready(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"prometheus exited {self.proc.returncode}; see {self.log.name}")
        try:
            with urllib.request.urlopen(self.url + "/-/ready", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, promql: str) -> list[tuple[dict[str, str], float]]:
        q = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{q}", timeout=20) as r:
            doc = json.loads(r.read())
        assert doc["status"] == "success", doc
        return [(row["metric"], float(row["value"][1])) for row in doc["data"]["result"]]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.log.close()
