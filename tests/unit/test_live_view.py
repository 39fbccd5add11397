"""The paced run's live view: on a terminal, per-broker progress bars, bytes left,
rate, ETA and stuck moves redrawn in place; piped or in CI, the plain lines. Runs on the
simulator through the real CLI (``ops.connect`` handed the model)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from reassign_kit.cli import live as live_mod
from reassign_kit.cli import paced as paced_cli
from reassign_kit.cli.reassign import main as cli_main
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.model import Move, Plan
from reassign_kit.operations import execute as ops


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    "stream, env, live",
    [
        (Tty(), {"TERM": "xterm"}, True),
        (Tty(), {"TERM": "xterm", "CI": "false"}, True),
        (io.StringIO(), {"TERM": "xterm"}, False),  # piped
        (Tty(), {"TERM": "xterm", "CI": "true"}, False),
        (Tty(), {"TERM": "xterm", "CI": "1"}, False),
        (Tty(), {"TERM": "dumb"}, False),
        (Tty(), {"TERM": "xterm", "RK_PLAIN": "1"}, False),
    ],
)
def test_live_only_for_a_person_at_a_terminal(stream, env, live):
    assert live_mod.wants_live(stream, env) is live


def text_of(renderable, width: int = 120) -> str:
    c = Console(file=io.StringIO(), width=width, color_system=None)
    c.print(renderable)
    return c.file.getvalue()


def test_the_view_shows_brokers_rates_eta_and_stuck_moves():
    st = live_mod.LiveState(moves=3, sample_interval=5)
    st.on_event({"event": "run_started", "ts": 1000.0, "run_id": "r"})
    assert "waiting for the first progress sample (every 5 s)" in text_of(st.render(now=1001))
    base = {"event": "sample", "done": 1, "moving": 2, "pending": 0, "bytes_total": 300 * MB}
    st.on_event(
        base
        | {"ts": 1010.0, "received": {"3": 0, "4": 50 * MB}, "left": {"3": 100 * MB, "4": 150 * MB}}
        | {"inflight": {"3": 1, "4": 1}, "bytes_left": 250 * MB, "rate_bps": 5 * MB}
        | {"eta_s": 50.0, "eta_reason": None}
    )
    st.on_event(
        base
        | {"ts": 1020.0, "received": {"3": 50 * MB, "4": 100 * MB}, "left": {"3": 50 * MB}}
        | {"inflight": {"3": 1}, "bytes_left": 50 * MB, "rate_bps": 10 * MB, "eta_s": 5.0}
    )
    st.on_event({"event": "stuck", "ts": 1021.0, "topic": "t", "partition": 2} | {
        "no_progress_s": 61.0, "bytes_copied": 0, "policy": "wait"})  # fmt: skip
    out = text_of(st.render(now=1030))
    assert "paced run running: 1/3 moves done, 2 moving, 0 pending  (0m30s)" in out, out
    assert "progress: 83.3%  50.0 MiB of 300.0 MiB to copy  10.0 MiB/s\n" in out, out
    assert "\nETA 0m05s" in out, out  # on a line of its own
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()[:1].isdigit()}
    # broker 3: 50 of 100 MiB in, 5 MiB/s over the window; broker 4: all in, nothing left
    assert "50.0%" in rows["3"] and "5.0 MiB/s" in rows["3"] and rows["3"].rstrip().endswith("1")
    assert "100.0%" in rows["4"] and "0 B" in rows["4"], rows
    assert "stuck moves (1):" in out and "t-2: no progress for 61 s" in out, out
    st.on_event({"event": "completed", "ts": 1031.0, "topic": "t", "partition": 2, "step": 1,
                 "steps": 2})  # fmt: skip
    assert "t-2" in text_of(st.render(now=1031)), "an intermediate step does not clear it"
    st.on_event({"event": "completed", "ts": 1032.0, "topic": "t", "partition": 2})
    st.on_event({"event": "run_finished", "ts": 1033.0, "state": "done", "completed": 3} | {
        "still_moving": 0, "pending": 0, "failed": 0, "cancelled": 0})  # fmt: skip
    out = text_of(st.render(now=1033))
    assert "stuck" not in out and "paced run done: 3/3 moves done, 0 moving" in out, out
    # done: the last sample came before the last bytes; the view says all is in, no ETA
    assert "progress: 100.0%  300.0 MiB copied in 0m33s" in out and "ETA" not in out, out
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()[:1].isdigit()}
    assert "100.0%" in rows["3"] and "100.0 MiB" in rows["3"], rows
    assert rows["3"].rstrip().endswith(" 0"), rows  # no move coming in once all are done


@pytest.fixture
def sim(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REASSIGN_KIT_STATE_DIR", str(tmp_path / "state"))
    s = SimCluster(4, bandwidth=50 * MB)
    s.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(4)], 20 * MB)
    monkeypatch.setattr(ops, "connect", lambda *a, **k: s)
    monkeypatch.setattr(s, "close", lambda: None)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in s.partitions.items()
    )
    plan.write(str(tmp_path / "plan.json"))
    return s


ARGV = ["--bootstrap-server", "sim:1", "--execute", "--reassignment-json-file", "plan.json"] + [
    "--reassignment-batch-size", "2", "--throttle", "10000000", "--wait"]  # fmt: skip


def test_a_terminal_gets_the_live_view_and_no_progress_lines(sim, monkeypatch, capsys):
    monkeypatch.setattr(paced_cli, "wants_live", lambda stream: True)
    assert cli_main(ARGV) == 0
    out = capsys.readouterr().out
    assert "paced run done: 4/4 moves done, 0 moving, 0 pending" in out, out
    assert "broker" in out and "rate" in out and "moves in" in out, out
    assert "submitted a-0" in out and "completed a-0" in out, out  # state changes still there
    assert "progress: " not in out.split("paced run done")[0], out  # in the view only


def test_piped_gets_plain_lines_only(sim, capsys):
    assert cli_main(ARGV) == 0  # capsys is not a terminal
    out = capsys.readouterr().out
    assert "paced run" not in out and "moves in" not in out, out
    assert "submitted a-0" in out and "progress: " in out, out
