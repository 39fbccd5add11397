"""KIP-1335's argument rules for the pacing flags (checked before anything is read or sent)."""

from __future__ import annotations

import pytest

from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cli import reassign_args

BASE = ["--bootstrap-server", "127.0.0.1:1", "--reassignment-json-file", "/nonexistent.json"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["--execute", "--reassignment-batch-size", "-1"],
            "--reassignment-batch-size must be >= 0",
        ),
        (["--execute", "--incremental"], "--incremental requires --reassignment-batch-size > 0"),
        (
            ["--execute", "--incremental", "--reassignment-batch-size", "0"],
            "--incremental requires",
        ),
        (["--execute", "--reassignment-poll-interval-ms", "0"], "must be > 0"),
        (["--execute", "--reassignment-poll-interval-ms", "-5"], "must be > 0"),
        (["--verify", "--reassignment-batch-size", "3"], "can't be used with action --verify"),
        (["--cancel", "--incremental"], "can't be used with action --cancel"),
        (["--list", "--reassignment-poll-interval-ms", "50"], "can't be used with action --list"),
        (["--execute", "--max-moves-per-broker", "0"], "--max-moves-per-broker must be > 0"),
        (["--execute", "--stuck-after", "soon"], "--stuck-after must be a duration"),
        (["--execute", "--on-deadline", "panic"], "--on-deadline"),
        (["--execute", "--resume"], "--resume needs --journal"),
        # --pace adaptive and its companions, refused by name before connecting
        (["--execute", "--pace", "fast"], "--pace"),
        (["--execute", "--pace", "adaptive", "--slo-produce-p99", "50ms"], "needs --throttle"),
        (["--execute", "--pace", "adaptive", "--throttle", "1000"], "needs --slo-produce-p99"),
        (["--execute", "--slo-produce-p99", "soon"], "--slo-produce-p99 must be a latency"),
        (["--execute", "--slo-produce-p99", "50ms"], "only meaningful with --pace adaptive"),
        (["--execute", "--throttle-floor", "0"], "--throttle-floor must be > 0"),
        (
            [
                "--execute",
                *("--pace", "adaptive", "--throttle", "1000", "--slo-produce-p99", "+20ms"),
                *("--throttle-floor", "5000"),
            ],
            "--throttle-floor (5000) must be <= --throttle (1000)",
        ),
    ],
)
def test_bad_pacing_arguments_are_usage_errors(argv, message, capsys):
    code = reassign_cli.main(BASE + argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_pacing_flags_route_to_the_paced_runner():
    from reassign_kit.cli import paced as paced_cli

    p = reassign_cli.build_parser()
    assert paced_cli.is_paced(p.parse_args(BASE + ["--execute", "--reassignment-batch-size", "2"]))
    assert paced_cli.is_paced(p.parse_args(BASE + ["--execute", "--wait"]))
    assert not paced_cli.is_paced(p.parse_args(BASE + ["--execute", "--throttle", "100"]))
    args = p.parse_args(BASE + ["--execute", "--run-deadline", "2h", "--stuck-after", "90s"])
    opts = paced_cli.options_from_args(args)
    assert opts.run_deadline == 7200 and opts.stuck_after == 90


def test_parallel_replica_count_alone_is_a_paced_run_with_every_option():
    """Regression: ``--execute --parallel-replica-count R`` went through its own
    path that dropped --replica-alter-log-dirs-throttle and --timeout (and signal handling,
    the journal option, the resume hint). Now it is a paced run: the options reach the Run."""
    from reassign_kit.cli import paced as paced_cli

    p = reassign_cli.build_parser()
    argv = ["--execute", "--parallel-replica-count", "1", "--replica-alter-log-dirs-throttle",
            "3000", "--timeout", "2500", "--throttle", "1000", "--on-interrupt", "cancel"]  # fmt: skip
    args = p.parse_args(BASE + argv)
    assert paced_cli.is_paced(args)
    assert reassign_cli.HANDLERS["execute"] is reassign_cli._execute
    opts = paced_cli.options_from_args(args)
    assert opts.parallel_replica_count == 1 and opts.log_dir_throttle == 3000
    assert opts.timeout_s == 2.5 and opts.throttle == 1000 and opts.cancel_on_stop


def test_the_paced_header_names_the_pace_and_every_cap():
    """The run's first line says what bounds it: a run with caps under the adaptive pace
    printed only 'legacy, order topic-partition'."""
    from reassign_kit.cli import paced as paced_cli

    p = reassign_cli.build_parser()
    argv = ["--execute", "--throttle", "8000000", "--pace", "adaptive", "--slo-produce-p99",
            "200ms", "--max-moves-per-broker", "3", "--max-leader-moves", "2",
            "--cluster-max-reassignments", "5"]  # fmt: skip
    header = paced_cli.paced_header(paced_cli.options_from_args(p.parse_args(BASE + argv)))
    assert header == (
        "Paced execution: legacy, order topic-partition, pace adaptive (produce p99 objective "
        "200ms), at most 3 moves per broker, each from 1 as its moves copy at their rate, "
        "at most 2 leader moves, at most 5 reassignments in the cluster"
    )
    plain = ["--execute", "--reassignment-batch-size", "2", "--incremental"]
    header = paced_cli.paced_header(paced_cli.options_from_args(p.parse_args(BASE + plain)))
    assert header == "Paced execution: incremental, N=2, order topic-partition"
    relative = argv[:6] + ["+20ms"]
    header = paced_cli.paced_header(paced_cli.options_from_args(p.parse_args(BASE + relative)))
    assert header.endswith("pace adaptive (produce p99 objective the baseline +20ms)")


def test_the_cli_is_static_no_module_registers_itself():
    """Which handler runs does not depend on import order: the tables are literal."""
    import importlib

    from reassign_kit.cli import paced, plan, progress

    before = dict(reassign_cli.HANDLERS)
    for m in (paced, progress, plan):
        importlib.reload(m)
    assert reassign_cli.HANDLERS == before
    assert set(reassign_cli.HANDLERS) == set(reassign_args.ACTIONS)


def test_a_signal_during_a_journal_write_stops_the_run_without_a_deadlock(tmp_path):
    """A signal handler runs in the main thread between two bytecodes, perhaps inside the
    journal's write with its (non-reentrant) lock held. The paced CLI's handler asked the run
    to stop right there, the stop journaled its lifecycle event under that same lock, and the
    run hung for good (a fresh-clone CI run: the SIGINT case of test_paced's every-exit test
    got no exit in 120 s, its journal ending at the two submissions).
    The handler now records the signal and stops the run from a thread of its own."""
    import signal
    import threading

    from reassign_kit.cli.paced import signal_handler
    from reassign_kit.cluster.simulate import MB, SimCluster
    from reassign_kit.model import Move, Plan, TopicPartition
    from reassign_kit.run.options import ExecuteOptions
    from reassign_kit.run.run import Run

    sim = SimCluster(4, bandwidth=50 * MB)
    tp = TopicPartition("a", 0)
    sim.add_topic("a", [[0, 1]], 2 * MB)
    sim.stall(tp)  # in flight until the run is stopped
    opts = ExecuteOptions(wait=True, poll_interval_ms=100)
    run = Run(sim, Plan.of([Move(tp, (2, 3))]), opts, str(tmp_path / "j.jsonl"))
    submitted = threading.Event()
    run.subscribe(lambda e: e.get("event") == "submitted" and submitted.set())
    run.start()
    assert submitted.wait(30), "the move was never submitted"
    interrupted: list[int] = []
    handler = signal_handler(run, False, interrupted)
    returned = threading.Event()

    def main_thread_inside_a_write() -> None:
        with run.shared.journal._lock:  # the write the signal interrupts
            handler(signal.SIGINT, None)
            returned.set()

    threading.Thread(target=main_thread_inside_a_write, daemon=True).start()
    assert returned.wait(10), "the signal handler blocked on the journal's lock"
    result = run.wait(30)
    assert result is not None and result.state == "stopped", result
    assert interrupted == [signal.SIGINT]
