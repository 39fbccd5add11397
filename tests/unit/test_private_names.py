"""No module imports another module's private name: what another module needs is public in its
home. Checked on the package's own source (imports and ``module._name`` through an imported
module), so a split that keeps callers working by reaching into a neighbour fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import reassign_kit

PACKAGE = Path(reassign_kit.__file__).parent


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(importer: str, is_init: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    pkg = importer.split(".") if is_init else importer.split(".")[:-1]
    base = pkg[: len(pkg) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _modules() -> set[str]:
    return {_module_of(p) for p in PACKAGE.rglob("*.py")}


def private_crossings(source: str, importer: str, is_init: bool, modules: set[str]) -> list[str]:
    """Each private name ``source`` (the text of module ``importer``) takes from another module."""
    found = []
    module_aliases: dict[str, str] = {}
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        target = _absolute(importer, is_init, node)
        if not target.startswith("reassign_kit"):
            continue
        for a in node.names:
            if f"{target}.{a.name}" in modules:
                module_aliases[a.asname or a.name] = f"{target}.{a.name}"
            elif a.name.startswith("_") and not a.name.startswith("__") and target != importer:
                found.append(f"{importer}: from {target} import {a.name}")
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in module_aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{importer}: {module_aliases[node.value.id]}.{node.attr}")
    return found


def test_no_module_imports_another_modules_private_name():
    modules = _modules()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        found += private_crossings(
            path.read_text(encoding="utf-8"), _module_of(path), path.name == "__init__.py", modules
        )
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_the_check_sees_a_private_import_and_a_private_attribute():
    modules = _modules()
    text = "from ..moves.journal import _hidden\nfrom ..throttles import configs as thr\nthr._x\n"
    found = private_crossings(text, "reassign_kit.run.loop", False, modules)
    assert found == [
        "reassign_kit.run.loop: from reassign_kit.moves.journal import _hidden",
        "reassign_kit.run.loop: reassign_kit.throttles.configs._x",
    ]
    assert private_crossings("from ._own import x\n", "reassign_kit.run.loop", False, modules) == []
