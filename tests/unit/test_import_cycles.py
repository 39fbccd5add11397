"""The package's modules import one another without cycles: a walk over every
``import`` of reassign_kit (inside functions too) finds none."""

from __future__ import annotations

import ast
from pathlib import Path

import reassign_kit

ROOT = Path(reassign_kit.__file__).parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, known: set[str]) -> set[str]:
    """Internal modules ``path`` imports (``from . import x`` resolves to module x if it is one)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "reassign_kit"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] != "reassign_kit":
                continue
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.add(sub if sub in known else mod)
    return {m for m in out if m in known and m != name}


def graph() -> dict[str, set[str]]:
    files = sorted(ROOT.rglob("*.py"))
    known = {module_name(f) for f in files}
    return {module_name(f): imports_of(f, known) for f in files}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in g:
        if v not in index:
            visit(v)
    return out


def test_the_walk_sees_the_package():
    g = graph()
    assert "reassign_kit.run.run" in g and "reassign_kit.cli.reassign" in g
    assert "reassign_kit.model" in g["reassign_kit.run.run"]


def test_no_import_cycles():
    found = cycles(graph())
    assert found == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def test_test_files_have_unique_names():
    """pytest imports test modules by their file name (no packages here): two test files
    with one name in different folders stop the whole collection (CI failed on it once)."""
    tests = Path(__file__).resolve().parents[1]
    names: dict[str, list[str]] = {}
    for f in tests.rglob("test_*.py"):
        names.setdefault(f.name, []).append(str(f.relative_to(tests)))
    assert {n: p for n, p in names.items() if len(p) > 1} == {}
