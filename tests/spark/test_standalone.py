"""The planner against a real Spark standalone cluster: a master and two workers started from
the pyspark package's ``bin/spark-class`` on loopback, stopped by pid at the end. The plan it
computes is the one the in-process planner computes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from spark_snapshots import random_snapshot

from reassign_kit.model import Plan
from reassign_kit.planner.in_process import plan_in_process
from reassign_kit.planner.params import PlanParams
from reassign_kit.sandbox.ports import LoopbackPorts

pytestmark = pytest.mark.spark


def _wait_for(path: Path, text: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise AssertionError(
                f"{path.name}: exited {proc.returncode}:\n{path.read_text(errors='replace')[-2000:]}"
            )
        time.sleep(0.5)
    raise AssertionError(
        f"{path.name}: no {text!r} within {timeout}s:\n{path.read_text(errors='replace')[-2000:]}"
    )


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    work = tmp_path_factory.mktemp("spark-standalone")
    env = dict(
        os.environ,
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOG_DIR=str(work),
        SPARK_WORKER_DIR=str(work / "work"),
    )
    with LoopbackPorts() as free:  # all distinct: none is bound until its process starts
        port, master_ui, *worker_ui = (free.take() for _ in range(4))
    url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen] = []
    try:
        mlog = work / "master.log"
        master = subprocess.Popen(
            [
                str(spark_class),
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(master_ui),
            ],
            stdout=mlog.open("w"),
            stderr=subprocess.STDOUT,
            env=env,
        )
        procs.append(master)
        _wait_for(mlog, "I have been elected leader", master)
        for i in range(2):
            wlog = work / f"worker{i}.log"
            w = subprocess.Popen(
                [
                    str(spark_class),
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    "1",
                    "--memory",
                    "1g",
                    "--webui-port",
                    str(worker_ui[i]),
                    "--work-dir",
                    str(work / f"w{i}"),
                    url,
                ],
                stdout=wlog.open("w"),
                stderr=subprocess.STDOUT,
                env=env,
            )
            procs.append(w)
            _wait_for(wlog, "Successfully registered with master", w)
        yield url, work
    finally:
        for p in reversed(procs):  # by pid, ours only
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.mark.timeout(2700)  # two Spark applications (plan, then validate) on the cluster
def test_driver_on_another_address_plans_and_validates(standalone, tmp_path):
    """The planner on a standalone cluster gives the in-process plan, with the driver on
    127.0.0.2, not 127.0.0.1: `plan` takes the address from the user's Spark
    configuration (spark-defaults.conf in SPARK_CONF_DIR), `validate` from RK_SPARK_DRIVER_HOST;
    the executors on the workers reach the driver there. (One test for both: each Spark
    application on the cluster costs ~20 s of make test.)"""
    url, work = standalone
    host = "127.0.0.2"
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        f"spark.driver.host {host}\nspark.driver.bindAddress={host}\n"
    )
    snap = random_snapshot(23, brokers=9, partitions=300)
    s = tmp_path / "s.json"
    snap.write(str(s))
    out = tmp_path / "plan.json"
    report = tmp_path / "report.json"
    cli = str(Path(sys.executable).parent / "reassign-kit")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", "SPARK_CONF_DIR")}
    env["PYSPARK_PYTHON"] = sys.executable
    plan = subprocess.run(
        [cli, "plan", "--snapshot", str(s), "--remove-brokers", "3", "--spark-master", url]
        + ["--output", str(out), "--report", str(report), "--quiet"],
        capture_output=True,
        text=True,
        timeout=1200,
        env=dict(env, SPARK_CONF_DIR=str(conf)),
    )
    assert plan.returncode == 0, plan.stderr[-3000:]
    assert Plan.read(str(out)) == plan_in_process(snap, PlanParams(remove_brokers=(3,))).plan
    assert '"moved_replicas"' in report.read_text()
    validate = subprocess.run(
        [cli, "validate", "--snapshot", str(s), "--reassignment-json-file", str(out)]
        + ["--remove-brokers", "3", "--engine", "spark", "--spark-master", url],
        capture_output=True,
        text=True,
        timeout=1200,
        env=dict(env, RK_SPARK_DRIVER_HOST=host),
    )
    assert validate.returncode == 0, validate.stderr[-3000:]
    assert "valid" in validate.stdout and "checked on spark" in validate.stdout
    # both applications' executors were told to reach the driver on 127.0.0.2
    launched = "\n".join(
        p.read_text(errors="replace")
        for p in [*work.glob("worker*.log"), *work.glob("w*/app-*/*/stderr")]
        if p.is_file()
    )
    assert launched.count(f"spark://CoarseGrainedScheduler@{host}:") >= 2, launched[-3000:]
