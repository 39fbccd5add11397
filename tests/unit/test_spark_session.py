"""Where the Spark driver listens, and refusing a session on another master.
Pure: nothing here starts Spark (tests/spark/test_standalone.py does, on 127.0.0.2)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from reassign_kit.errors import EXIT_CODES, SparkSessionError
from reassign_kit.spark.session import (
    BIND_ADDRESS,
    DRIVER_HOST,
    _check_master,
    driver_conf,
    user_spark_conf,
)


def test_loopback_only_as_the_local_mode_default():
    assert driver_conf("local[2]", environ={}) == {
        DRIVER_HOST: "127.0.0.1",
        BIND_ADDRESS: "127.0.0.1",
    }
    # another master: Spark's own choice (SPARK_LOCAL_IP, else the host's address)
    assert driver_conf("spark://10.0.0.5:7077", environ={}) == {}
    assert driver_conf("yarn", environ={}) == {}


def test_a_parameter_or_the_environment_names_the_driver_address():
    assert driver_conf("spark://m:7077", driver_host="10.1.2.3", environ={}) == {
        DRIVER_HOST: "10.1.2.3"
    }  # the bind address follows the host (Spark's default)
    assert driver_conf("local[2]", "10.1.2.3", "0.0.0.0", environ={}) == {
        DRIVER_HOST: "10.1.2.3",
        BIND_ADDRESS: "0.0.0.0",
    }
    env = {"RK_SPARK_DRIVER_HOST": "127.0.0.2", "RK_SPARK_DRIVER_BIND_ADDRESS": "127.0.0.2"}
    assert driver_conf("spark://m:7077", environ=env) == {
        DRIVER_HOST: "127.0.0.2",
        BIND_ADDRESS: "127.0.0.2",
    }


def test_the_users_spark_configuration_is_left_to_spark(tmp_path):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        "# comment\n\nspark.driver.host   10.9.8.7\nspark.driver.bindAddress=0.0.0.0\n"
        "spark.executor.memory: 2g\n"
    )
    env = {"SPARK_CONF_DIR": str(conf)}
    assert user_spark_conf(env) == {
        DRIVER_HOST: "10.9.8.7",
        BIND_ADDRESS: "0.0.0.0",
        "spark.executor.memory": "2g",
    }
    assert driver_conf("local[2]", environ=env) == {}  # not overridden with loopback
    assert driver_conf("spark://m:7077", environ=env) == {}
    # SPARK_HOME/conf when SPARK_CONF_DIR is unset; --conf in PYSPARK_SUBMIT_ARGS
    home = {"SPARK_HOME": str(tmp_path)}
    assert user_spark_conf(home)[DRIVER_HOST] == "10.9.8.7"
    args = {"PYSPARK_SUBMIT_ARGS": "--conf spark.driver.host=h1 --conf=spark.x=1 pyspark-shell"}
    assert user_spark_conf(args) == {DRIVER_HOST: "h1", "spark.x": "1"}
    assert driver_conf("local[1]", environ=args) == {BIND_ADDRESS: "127.0.0.1"}


def test_another_master_than_the_running_sessions_is_refused():
    running = SimpleNamespace(sparkContext=SimpleNamespace(master="local[2]"))
    _check_master(running, None)  # no master asked: the running session
    _check_master(running, "local[2]")
    with pytest.raises(SparkSessionError) as e:
        _check_master(running, "spark://10.0.0.5:7077")
    assert "'local[2]'" in str(e.value) and "'spark://10.0.0.5:7077'" in str(e.value)
    assert "stop_spark" in str(e.value)
    assert e.value.exit_code == 2 and 2 in EXIT_CODES


def test_local_mode_runs_the_driver_on_the_c1_compiler_unless_the_user_says(tmp_path):
    from reassign_kit.spark.session import JAVA_OPTIONS, LOCAL_JIT, jvm_conf

    assert jvm_conf("local[2]", {}) == {JAVA_OPTIONS: LOCAL_JIT}
    assert jvm_conf("spark://10.0.0.1:7077", {}) == {}
    (tmp_path / "spark-defaults.conf").write_text(f"{JAVA_OPTIONS} -Xss4m\n")
    assert jvm_conf("local[2]", {"SPARK_CONF_DIR": str(tmp_path)}) == {}
    args = '--driver-java-options "-Xss4m" pyspark-shell'
    assert jvm_conf("local[2]", {"PYSPARK_SUBMIT_ARGS": args}) == {}
