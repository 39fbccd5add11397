"""Size limits as a guard, not a place to split: a module of at most 800 lines, a class of at
most 400, a function of at most 80, for every module of the package, with no exceptions. Past
them a reader can no longer hold the thing in mind; split where the concept parts, not where
the count is reached."""

from __future__ import annotations

import ast
from pathlib import Path

import reassign_kit

PACKAGE = Path(reassign_kit.__file__).parent
MODULE_MAX = 800
CLASS_MAX = 400
FUNCTION_MAX = 80


def sizes() -> dict[str, tuple[str, int]]:
    """Every module, class and function of the package: key -> (kind, lines)."""
    found: dict[str, tuple[str, int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        found[rel] = ("module", len(text.splitlines()))
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                n = node.end_lineno - node.lineno + 1
                key = f"{rel}::{node.name}"
                if n > found.get(key, (kind, 0))[1]:
                    found[key] = (kind, n)
    return found


LIMIT = {"module": MODULE_MAX, "class": CLASS_MAX, "function": FUNCTION_MAX}


def test_the_walk_sees_the_package():
    found = sizes()
    assert sum(1 for kind, _ in found.values() if kind == "module") > 100
    assert "run/run.py::Run" in found


def test_nothing_new_is_over_its_limit():
    over = {k: n for k, (kind, n) in sizes().items() if n > LIMIT[kind]}
    assert not over, f"over the size limits (split where the concept parts): {over}"
