"""KIP-1335's argument rules for the pacing flags (checked before anything is read or sent)."""

from __future__ import annotations

import pytest

from reassign_kit import reassign_cli

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
    ],
)
def test_bad_pacing_arguments_are_usage_errors(argv, message, capsys):
    code = reassign_cli.main(BASE + argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err


def test_pacing_flags_route_to_the_paced_runner():
    from reassign_kit import paced_cli

    p = reassign_cli.build_parser()
    assert paced_cli.claims(p.parse_args(BASE + ["--execute", "--reassignment-batch-size", "2"]))
    assert paced_cli.claims(p.parse_args(BASE + ["--execute", "--wait"]))
    assert not paced_cli.claims(p.parse_args(BASE + ["--execute", "--throttle", "100"]))
    args = p.parse_args(BASE + ["--execute", "--run-deadline", "2h", "--stuck-after", "90s"])
    opts = paced_cli.options_from_args(args)
    assert opts.run_deadline == 7200 and opts.stuck_after == 90
