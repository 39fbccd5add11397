"""Every option of every command has help text: the test walks each argparse
parser of `reassign-kit` (the drop-in and every sub-command, sub-parsers included) and names
each option without help."""

from __future__ import annotations

import argparse

from reassign_kit.cli import calibrate, plan, reassign, report, runbook, sandbox, throttles


def parsers() -> dict[str, argparse.ArgumentParser]:
    return {
        "reassign-kit": reassign.build_parser(),
        "reassign-kit snapshot|plan|validate": plan.build_parser(),
        "reassign-kit sandbox": sandbox._parser(),
        "reassign-kit throttles": throttles._parser(),
        "reassign-kit calibrate": calibrate._parser(),
        "reassign-kit runbook": runbook.build_parser(),
        "reassign-kit report": report.build_parser(),
    }


def walk(name: str, p: argparse.ArgumentParser):
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for sub, sp in action.choices.items():
                yield f"{name} {sub}", None, helps.get(sub)
                yield from walk(f"{name} {sub}", sp)
        elif isinstance(action, argparse._HelpAction):
            continue
        else:
            yield name, action, action.help


def test_every_option_and_command_has_help():
    missing = []
    for name, p in parsers().items():
        for where, action, text in walk(name, p):
            if text and text != argparse.SUPPRESS and text.strip():
                continue
            what = (
                "sub-command"
                if action is None
                else "/".join(action.option_strings) or f"positional {action.dest}"
            )
            missing.append(f"{where}: {what}")
    assert not missing, "options without help text:\n" + "\n".join(missing)
