"""The execute options are declared once (run/options.py): the CLI's flags and the panel's
controls are read from that declaration, and both give the same ExecuteOptions."""

from __future__ import annotations

import argparse
import inspect

import pytest

from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.errors import UsageError
from reassign_kit.run import options as eo
from reassign_kit.run.options import ExecuteOptions
from reassign_kit.run.run import Run


def test_every_field_is_declared_and_every_flag_is_unique():
    names = [d.name for d in eo.declared()]
    assert names == list(ExecuteOptions.__dataclass_fields__)
    flags = [d.option.flag for d in eo.cli_options()]
    assert len(flags) == len(set(flags))
    assert all(d.option.help for d in eo.declared())


def test_the_declared_flags_parse_into_the_same_options_as_the_cli():
    """A parser built from the declaration alone gives the options the CLI's own path gives
    (same flags, converters, defaults and CLI → field translations)."""
    argv = [
        "--reassignment-batch-size", "4", "--incremental", "--max-moves-per-broker", "2",
        "--move-deadline", "15m", "--on-deadline", "cancel", "--throttle", "1000",
        "--replica-alter-log-dirs-throttle", "2000", "--timeout", "2500",
        "--disallow-replication-factor-change", "--on-interrupt", "cancel",
        "--parallel-replica-count", "1", "--order", "largest-first", "--wait", "--additional",
    ]  # fmt: skip
    p = argparse.ArgumentParser()
    for d in eo.cli_options():
        p.add_argument(d.option.flag, **d.option.argparse_kwargs())
    ours = eo.options_from_cli(p.parse_args(argv))

    from reassign_kit.cli import paced as paced_cli

    cli_args = reassign_cli.build_parser().parse_args(
        ["--execute", "--bootstrap-server", "x:1", "--reassignment-json-file", "p.json", *argv]
    )
    assert ours == paced_cli.options_from_args(cli_args)
    assert (
        ours.timeout_s == 2.5 and ours.cancel_on_stop and not ours.allow_replication_factor_change
    )
    assert ours.move_deadline == 900 and ours.throttle == 1000


def test_defaults_from_an_empty_command_line_are_the_dataclass_defaults():
    p = argparse.ArgumentParser()
    for d in eo.cli_options():
        p.add_argument(d.option.flag, **d.option.argparse_kwargs())
    assert eo.options_from_cli(p.parse_args([])) == ExecuteOptions()


def test_converters_name_the_option():
    p = argparse.ArgumentParser(exit_on_error=False)
    for d in eo.cli_options():
        p.add_argument(d.option.flag, **d.option.argparse_kwargs())
    with pytest.raises(argparse.ArgumentError, match="--max-leader-moves must be > 0"):
        p.parse_args(["--max-leader-moves", "0"])
    with pytest.raises(UsageError, match="--incremental requires"):
        eo.options_from_cli(p.parse_args(["--incremental"]))


def test_panel_controls_and_live_options_come_from_the_declaration():
    from reassign_kit.ui import controls
    from reassign_kit.ui.panel import PACING

    assert PACING == eo.panel_options()
    assert set(controls.LIVE_CONTROLS) == {d.name for d in eo.declared() if d.option.live}
    # every live option is one Run.set_caps can change while a run goes on
    doc = inspect.getdoc(Run.set_caps) or ""
    assert all(name in doc for name in controls.LIVE_CONTROLS)
    for d in eo.panel_options():
        assert d.from_widget(d.to_widget(d.default)) == d.default
