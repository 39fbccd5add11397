"""The README's and docs/' examples are checked, so they cannot drift from the code
(the README is the first five minutes, the rest moved to docs/ pages, each checked).

Shell: every ``reassign-kit`` / ``$RK`` / ``python -m reassign_kit.runbook`` command of a bash
block goes through the real argument parser (and, for the drop-in, its action checks), in
each of its written variants: ``[opt]`` optional, ``a|b`` a choice of values, ``(x | y)`` a
choice of flags. Python: every call the README shows is bound against the function's
signature, and the runnable ones run on the simulator."""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import re
import shlex
from pathlib import Path

import pytest

import reassign_kit
from reassign_kit.cli import calibrate as calibrate_cli
from reassign_kit.cli import plan as plan_cli
from reassign_kit.cli import reassign as reassign_cli
from reassign_kit.cli import report as report_cli
from reassign_kit.cli import runbook as runbook_cli
from reassign_kit.cli import sandbox as sandbox_cli
from reassign_kit.cli import throttles as throttles_cli
from reassign_kit.cluster.simulate import MB, SimCluster
from reassign_kit.errors import UsageError
from reassign_kit.model import Move, Plan
from reassign_kit.run.options import ExecuteOptions

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
README_TEXT = README.read_text()
# docs/compat.md is a generated table (make compat), not prose with commands
DOCS = [README] + sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "compat.md")
TEXT = "\n".join(p.read_text() for p in DOCS)
BASH_BLOCKS = re.findall(r"```bash\n(.*?)```", TEXT, re.S)
PY_BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
# what the placeholders stand for
PLACEHOLDERS = {"N": "1000", "$BS": "127.0.0.1:9092", "ID": "1", "SHA256": "0" * 64}
HEADS = ("$RK", ".venv/bin/reassign-kit", "reassign-kit ")


def shell_commands() -> list[str]:
    """The commands of ours in the README and docs/, continuation lines joined, comments
    dropped, those inside ``$(...)`` too."""
    out = []
    for block in BASH_BLOCKS:
        for cmd in block.replace("\\\n", " ").splitlines():
            cmd = re.sub(r"\s#\s.*$", "", cmd).strip()
            out += [c for c in re.findall(r"\$\(([^()]*)\)", cmd) if c.startswith(HEADS)]
            if cmd.startswith(HEADS):
                out.append(cmd)
    # commands written inline in the prose
    out += re.findall(r"`(python -m reassign_kit\.runbook [^`]*)`", TEXT)
    return out


def _choice(parts: list[str]) -> list[list[str]]:
    return [p.split() for p in parts]


def variants(cmd: str) -> list[list[str]]:
    """The argument lists a command line stands for: no optional part, then every optional
    part, then each alternative of every choice once (the others at their first)."""
    # tokens of the grammar: [ ... ] optional, ( a | b ) choice, a|b|c value choice
    pieces: list[tuple[str, list[list[str]]]] = []  # (kind, alternatives)
    pos = 0
    for m in re.finditer(r"\[([^\]]*)\]|\(([^)]*\|[^)]*)\)", cmd):
        pieces += [("fixed", [cmd[pos : m.start()].split()])]
        if m.group(1) is not None:
            pieces += [("optional", [m.group(1).split()])]
        else:
            pieces += [("choice", _choice(m.group(2).split(" | ")))]
        pos = m.end()
    pieces += [("fixed", [cmd[pos:].split()])]
    # value choices inside any piece: a token like a|b|c
    expanded: list[tuple[str, list[list[str]]]] = []
    for kind, alts in pieces:
        new_alts = []
        for alt in alts:
            options = [t.split("|") if "|" in t else [t] for t in alt]
            width = max((len(o) for o in options), default=1)
            new_alts += [[o[min(i, len(o) - 1)] for o in options] for i in range(width)]
        expanded.append((kind, new_alts))

    def build(include_optional: bool, pick: dict[int, int]) -> list[str]:
        args: list[str] = []
        for i, (kind, alts) in enumerate(expanded):
            if kind == "optional" and not include_optional:
                continue
            args += alts[pick.get(i, 0)]
        return args

    out = [build(False, {}), build(True, {})]
    for i, (_kind, alts) in enumerate(expanded):
        out += [build(True, {i: j}) for j in range(1, len(alts))]
    return [[PLACEHOLDERS.get(t, t) for t in v] for v in out]


def parse(argv: list[str]) -> str:
    """Parse one command with the parser that would run it; return the tool's name."""
    head = argv[0]
    if head in ("$RK_BIN", ".venv/bin/reassign-kit", "reassign-kit"):
        rest = argv[1:]
        if rest and rest[0].startswith("--"):  # the drop-in, its connection written out
            p = reassign_cli.build_parser()
            reassign_cli.check_args(p, p.parse_args(rest))
            return "drop-in"
        if rest and rest[0] == "report":
            report_cli.build_parser().parse_args(rest[1:])
            return "report"
        if rest and rest[0] == "sandbox":
            sandbox_cli._parser().parse_args(rest[1:])
            return "sandbox"
        if rest and rest[0] == "calibrate":
            calibrate_cli._parser().parse_args(rest[1:])
            return "calibrate"
        if rest and rest[0] == "throttles":
            throttles_cli._parser().parse_args(rest[1:])
            return "throttles"
        if rest and rest[0] == "runbook":
            runbook_cli.build_parser().parse_args(rest[1:])
            return "runbook"
        plan_cli.build_parser().parse_args(rest)
        return "plan"
    if head == "$RK":
        p = reassign_cli.build_parser()
        args = p.parse_args(["--bootstrap-server", PLACEHOLDERS["$BS"], *argv[1:]])
        reassign_cli.check_args(p, args)
        return "drop-in"
    if "python" in head:
        from reassign_kit import runbook

        _runbook_parser(runbook).parse_args(argv[argv.index("reassign_kit.runbook") + 1 :])
        return "runbook"
    raise AssertionError(f"README command of unknown tool: {argv}")


def _runbook_parser(runbook):
    """The runbook's parser, taken from its main without running it."""
    seen = {}

    class Stop(Exception):
        pass

    def fake_parse(self, args=None, namespace=None):
        seen["parser"] = self
        raise Stop

    import argparse

    orig = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = fake_parse
    try:
        runbook.main([])
    except Stop:
        pass
    finally:
        argparse.ArgumentParser.parse_args = orig
    return seen["parser"]


COMMANDS = shell_commands()


@pytest.fixture(autouse=True)
def readme_files(tmp_path, monkeypatch):
    """The files the README's commands name, in a scratch working directory."""
    monkeypatch.chdir(tmp_path)
    plan = {"version": 1, "partitions": [{"topic": "t1", "partition": 0, "replicas": [1, 2]}]}
    Path("plan.json").write_text(json.dumps(plan))
    Path("topics.json").write_text(json.dumps({"version": 1, "topics": [{"topic": "t1"}]}))


def test_the_readme_has_the_commands_this_test_checks():
    tools = [parse_first(c) for c in COMMANDS]
    assert {"sandbox", "plan", "drop-in", "runbook"} <= set(tools), tools
    assert len(COMMANDS) >= 15


def parse_first(cmd: str) -> str:
    return parse(variants(cmd)[0])


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_readme_command_parses_in_every_variant(cmd):
    for argv in variants(cmd):
        try:
            parse(argv)
        except (SystemExit, UsageError) as e:  # argparse's exit, the drop-in's usage error
            raise AssertionError(f"README command does not parse: {shlex.join(argv)}") from e


def test_the_variant_grammar():
    v = variants("$RK --cancel (--a x | --b | --c) [--d N] [--order p|q]")
    assert ["$RK", "--cancel", "--a", "x"] in v
    assert ["$RK", "--cancel", "--b", "--d", "1000", "--order", "p"] in v
    assert ["$RK", "--cancel", "--c", "--d", "1000", "--order", "p"] in v
    assert ["$RK", "--cancel", "--a", "x", "--d", "1000", "--order", "q"] in v


def test_a_wrong_readme_command_would_fail():
    """The check can fail: a misspelt flag or a missing action is caught."""
    with pytest.raises(UsageError):
        parse(["$RK", "--execute", "--reassignment-json-file", "p.json", "--throttel", "1"])
    with pytest.raises(UsageError):
        parse(["$RK", "--reassignment-json-file", "p.json"])


# ---- Python -------------------------------------------------------------------------------

INLINE_CALLS = re.findall(r"`(reassign_kit\.[\w.]+\([^`]*\))`", TEXT)


def _resolve(dotted: str):
    obj = reassign_kit
    for part in dotted.split(".")[1:]:
        obj = getattr(obj, part) if hasattr(obj, part) else _import(obj, part)
    return obj


def _import(obj, part):
    import importlib

    return importlib.import_module(f"{obj.__name__}.{part}")


def _bind(fn, call: ast.Call) -> None:
    """Bind the README's keywords (and positional count) against ``fn``'s signature; options
    passed through ``**`` must be ExecuteOptions fields."""
    sig = inspect.signature(fn)
    kw = {k.arg: None for k in call.keywords if k.arg}
    params = sig.parameters
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    named = {k: v for k, v in kw.items() if k in params}
    extra = set(kw) - set(named)
    sig.bind_partial(*[None] * len(call.args), **named)
    if extra:
        assert var_kw, f"{fn.__qualname__} takes no {sorted(extra)}"
        unknown = (
            extra
            - set(ExecuteOptions.__dataclass_fields__)
            - {"disallow_replication_factor_change"}
        )
        assert not unknown, f"{fn.__qualname__}: README passes unknown options {sorted(unknown)}"


def test_readme_inline_python_calls_bind_to_the_real_signatures():
    assert len(INLINE_CALLS) >= 4, INLINE_CALLS
    for text in INLINE_CALLS:
        call = ast.parse(text.replace("...", "None"), mode="eval").body
        assert isinstance(call, ast.Call), text
        _bind(_resolve(ast.unparse(call.func)), call)


def test_readme_python_blocks_bind_to_the_real_signatures():
    assert PY_BLOCKS
    for block in PY_BLOCKS:
        tree = ast.parse(block)
        names: dict[str, object] = {}
        import importlib

        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                mod = importlib.import_module(node.module)
                for a in node.names:
                    names[a.asname or a.name] = getattr(mod, a.name)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    names[a.asname or a.name] = importlib.import_module(a.name)
        calls = []
        for n in ast.walk(tree):
            if not isinstance(n, ast.Call):
                continue
            if isinstance(n.func, ast.Name) and n.func.id in names:
                calls.append((names[n.func.id], n))
            elif (  # module.function(...) of an imported module (rk.execute, ops.connect)
                isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and inspect.ismodule(names.get(n.func.value.id))
            ):
                calls.append((getattr(names[n.func.value.id], n.func.attr), n))
        assert calls, block
        for fn, c in calls:
            _bind(fn, c)


def sim_and_plan() -> tuple[SimCluster, Plan]:
    sim = SimCluster(4, bandwidth=50 * MB)
    sim.add_topic("a", [[p % 4, (p + 1) % 4] for p in range(6)], 2 * MB)
    plan = Plan.of(
        Move(tp, tuple((b + 2) % 4 for b in sp.replicas)) for tp, sp in sim.partitions.items()
    )
    return sim, plan


def test_readme_python_examples_run_on_the_simulator(tmp_path, monkeypatch):
    """The README's execute (paced), progress, steps and panel calls, as written, with the
    simulator in place of the bootstrap string."""
    monkeypatch.chdir(tmp_path)
    sim, plan = sim_and_plan()
    res = reassign_kit.execute(
        sim,
        plan,
        batch_size=10,
        incremental=True,
        throttle=MB,
        wait=True,
        journal="run.jsonl",
    )
    assert res.state == "done" and len(res.to_pandas()) == len(plan.moves)
    assert Path("run.jsonl").exists()
    rep = reassign_kit.progress(sim, plan, "run.jsonl")
    assert rep is not None
    from reassign_kit.moves.steps import plan_steps

    assert plan_steps((1, 2), (3, 4), 1, 1)[-1] == (3, 4)
    from reassign_kit.ui import panel

    plan_path = tmp_path / "plan.json"
    plan.write(str(plan_path))
    p = panel(
        str(plan_path),
        gateway=sim,
        output_dir=str(tmp_path / "out"),
        batch_size=2,
        incremental=True,
        throttle=4_000_000,
    )
    assert p is not None


def test_every_variant_is_distinct_enough():
    """Guard against a grammar bug that would make every variant the same list."""
    v = variants(COMMANDS[0])
    assert v and all(isinstance(a, list) for a in v)
    assert len({tuple(a) for a in itertools.chain(*[variants(c) for c in COMMANDS])}) > len(
        COMMANDS
    )


# ---- the README as a first contact --------------------------------------------------------


def test_the_readme_is_short_and_its_two_commands_are_make_demo_and_make_test():
    lines = README_TEXT.splitlines()
    assert len(lines) <= 120, f"the README is {len(lines)} lines; the details go to docs/"
    first = BASH_BLOCKS[0]
    assert [ln.split("#")[0].strip() for ln in first.strip().splitlines()] == [
        "make demo",
        "make test",
    ]


def test_the_readme_names_every_exit_code_and_docs_cli_has_the_table():
    from reassign_kit.errors import EXIT_CODES

    section = README_TEXT.split("Exit codes", 1)[1].split("\n## ", 1)[0]
    said = {int(n) for n in re.findall(r"(?<![\w-])(\d{1,3})\s+(?=[a-z`])", section)}
    assert said == set(EXIT_CODES), (sorted(said), sorted(EXIT_CODES))
    table = (ROOT / "docs" / "cli.md").read_text()
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning.replace('|', '/')} |" in table, code


def test_every_link_of_the_readme_and_docs_resolves_and_every_page_is_linked():
    linked: set[Path] = set()
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text()):
            if "://" in target:
                continue
            path = (doc.parent / target).resolve()
            assert path.exists(), f"{doc.name} links to {target}, which does not exist"
            linked.add(path)
    pages = {p.resolve() for p in (ROOT / "docs").glob("*.md")}
    assert not pages - linked, f"pages nobody links to: {sorted(p.name for p in pages - linked)}"


def test_the_readme_installs_from_the_checkout_it_is_in():
    """reassign-kit is not on PyPI: `pip install reassign-kit` would fetch nothing, or
    someone else's package."""
    pips = re.findall(r"^pip install (\S+)", README_TEXT, re.M)
    assert pips and all(p.strip("'").startswith(".") for p in pips), pips
