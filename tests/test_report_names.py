"""The reporting stage, the API and the CLI use each other's public names only:
no module there imports a private (``_name``) name of another module."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tracerace"
CHECKED = ("report", "api", "cli.py")


def private_imports(path: Path) -> list[str]:
    """``module._name`` for each private name ``path`` imports from a tracerace module."""
    found = []
    for stmt in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(stmt, ast.ImportFrom):
            continue
        if not stmt.level and not (stmt.module or "").startswith("tracerace"):
            continue
        found += [
            f"{'.' * stmt.level}{stmt.module or ''}.{alias.name}"
            for alias in stmt.names
            if alias.name.startswith("_") and not alias.name.startswith("__")
        ]
    return found


def test_no_private_name_is_imported_across_modules():
    paths = [
        p for name in CHECKED for p in sorted((PACKAGE / name).rglob("*.py")) or [PACKAGE / name]
    ]
    assert len(paths) > 10
    found = {str(p.relative_to(PACKAGE)): names for p in paths if (names := private_imports(p))}
    assert found == {}


def test_the_check_sees_a_private_import(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("from .explain import NO_GENERATION, _View\nfrom os import _exit\n")
    assert private_imports(path) == [".explain._View"]
