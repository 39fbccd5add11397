"""Quiet output: what child processes (a JVM, a kernel) write goes to the log
file, the command's own lines stay on the terminal; the demo's closing line and
`sandbox load`'s line are short human summaries."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from reassign_kit.cli.sandbox import _parser as sandbox_parser
from reassign_kit.cli.sandbox import load_line, up_lines
from reassign_kit.logfile import to_log_file
from reassign_kit.runbook import demo_summary, log_path


def test_a_child_process_writes_to_the_log_and_our_prints_stay(tmp_path, capfd):
    log = tmp_path / "x.log"
    with to_log_file(str(log), stdout_too=True):
        print("our own line")
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; print('child out'); print('log4j WARN', file=sys.stderr)",
            ],
            check=True,
        )
    out, err = capfd.readouterr()
    assert "our own line" in out
    assert "child out" not in out and "log4j WARN" not in err
    assert "child out" in log.read_text() and "log4j WARN" in log.read_text()


def test_verbose_keeps_everything_on_the_terminal(tmp_path, capfd):
    log = tmp_path / "x.log"
    with to_log_file(str(log), verbose=True):
        subprocess.run([sys.executable, "-c", "import sys; print('kernel line', file=sys.stderr)"])
    assert "kernel line" in capfd.readouterr().err and not log.exists()


def test_demo_summary_line(tmp_path):
    ex, ver = tmp_path / "e.json", tmp_path / "v.json"
    ex.write_text(
        json.dumps(
            {"plan": {"moves": 5, "bytes_to_move": 21_000_000}, "progress": {"seconds": 7.2}}
        )
    )
    ver.write_text(json.dumps({"complete": True}))
    assert demo_summary({"execute_report": str(ex), "verify_report": str(ver)}) == (
        "5 moves, 21 MB copied in 7 s, verify OK"  # the copy's time, not the demo's
    )
    ver.write_text(json.dumps({"complete": False}))
    assert demo_summary({"execute_report": str(ex), "verify_report": str(ver)}).endswith(
        "verify FAILED"
    )
    assert log_path("/o/03_verify.out.ipynb") == "/o/03_verify.out.log"


def test_sandbox_load_prints_one_line():
    args = argparse.Namespace(partitions=6, replication_factor=3, mb_per_partition=8.0)
    out = {
        "bootstrap_servers": "127.0.0.1:1",
        "brokers": [1, 2],
        "loaded_messages": {"load-0": 4800, "load-1": 4800},
    }
    line = load_line(args, out)
    assert "\n" not in line
    assert line.startswith(
        "loaded 2 topic(s) (load-0, load-1): 6 partitions x RF 3, 96 MB, 9600 messages"
    )


def test_sandbox_up_says_what_started_in_two_lines_json_on_request():
    """`sandbox up` printed its 80-line status document; now what runs where and the
    bootstrap address (the JSON with --output json), and `sandbox bootstrap` for a shell."""
    out = {
        "dir": "/tmp/sb",
        "kafka_version": "4.3.1",
        "metadata": "kraft",
        "bootstrap_servers": "127.0.0.1:1,127.0.0.1:2",
        "brokers": [{"id": 1, "rack": "rack-0"}, {"id": 2, "rack": "rack-1"}],
        "security": "sasl_scram",
        "client_configs": {"admin": "/tmp/sb/admin.properties"},
    }
    assert up_lines(out).splitlines() == [
        "sandbox up in /tmp/sb: Kafka 4.3.1 (kraft), 2 brokers in 2 racks, security sasl_scram",
        "bootstrap: 127.0.0.1:1,127.0.0.1:2",
        "--command-config for admin: /tmp/sb/admin.properties",
    ]
    p = sandbox_parser()
    assert p.parse_args(["up"]).output == "text"
    assert p.parse_args(["up", "--output", "json"]).output == "json"
    assert p.parse_args(["bootstrap", "--dir", "/tmp/sb"]).command == "bootstrap"


def test_the_demo_ends_with_what_it_did_and_where_to_look(tmp_path):
    from pathlib import Path

    from reassign_kit.demo import closing_lines

    ex, ver = tmp_path / "e.json", tmp_path / "v.json"
    ex.write_text(
        json.dumps({"plan": {"moves": 6, "bytes_to_move": 21e6}, "progress": {"seconds": 9}})
    )
    ver.write_text(json.dumps({"complete": True}))
    arts = {"execute_report": str(ex), "verify_report": str(ver), "charts": "/o/a.html, /o/b.html"}
    assert closing_lines(arts, Path("/o")) == [
        "demo: 6 moves, 21 MB copied in 9 s, verify OK",
        "demo: charts to open: /o/a.html, /o/b.html",
        "demo: every file: /o/artefacts.json; Spark's, Jupyter's and the kernels' lines: /o/*/*.out.log",
    ]


def test_sandbox_down_says_it_in_one_line():
    from reassign_kit.cli.sandbox import down_line

    out = {
        "dir": "/tmp/sb",
        "controllers": [{"id": 1000, "alive": False}],
        "brokers": [{"id": 1, "alive": False}, {"id": 2, "alive": True}],
    }
    assert down_line(out) == "sandbox down in /tmp/sb: 3 process(es) stopped; STILL ALIVE: 2"
    out["brokers"][1]["alive"] = False
    assert down_line(out).endswith("3 process(es) stopped, none left")
    assert sandbox_parser().parse_args(["down"]).output == "text"
