"""The modules of ``tracerace/`` import each other without a circle, and
each stage imports only the stages before it.

The graph is read from the source with ``ast``: every ``import`` statement
counts, wherever it is written (module level, inside a function, under
``if TYPE_CHECKING:``), so a deferred import cannot hide a circle. Importing
``a.b.c`` runs the package ``a.b`` first, so it counts as importing that
package too (not the root ``tracerace``: its ``__init__`` is the public facade
and loads nothing of the package until a name of it is used; nothing inside
imports it). Every module is a node of its own, the engine's included.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "tracerace"

STAGES = {
    "tracerace.errors": "leaf",
    "tracerace.version": "leaf",
    "tracerace.stopping": "leaf",
    "tracerace.allocator": "leaf",
    "tracerace.shown": "leaf",
    "tracerace.trace": "trace",
    "tracerace.checker": "checker",
    "tracerace.group": "group",
    "tracerace.report": "report",
    "tracerace.api": "api",
    "tracerace.cli": "cli",
    "tracerace.__main__": "cli",
    "tracerace.record": "record",
    "tracerace.convert": "convert",
    "tracerace.scenarios": "scenarios",
    "tracerace.examples": "examples",
    "tracerace.pytest_plugin": "plugin",
}
"""The stage of every module, by the longest prefix of its name."""

MAY_IMPORT = {
    "leaf": set(),
    "trace": {"leaf"},
    "checker": {"leaf", "trace"},
    "group": {"leaf", "trace", "checker"},
    "report": {"leaf", "trace", "checker", "group"},
    "api": {"leaf", "trace", "checker", "group", "report"},
    "cli": {"leaf", "trace", "checker", "group", "report", "api", "record", "convert", "scenarios"},
    "record": {"leaf", "trace"},
    "convert": {"leaf", "trace"},
    "scenarios": {"leaf", "trace"},
    "examples": {"leaf", "scenarios"},
    "plugin": {"leaf", "trace", "report", "record", "api"},
}
"""The stages each stage may import besides its own: the pipeline's order
(trace < checker < group < report < api < cli), and the recorders, the
importers and the incidents above the trace format only."""

IMPORT_BY_NAME = {"tracerace/record/program.py": "imports the recorded program's own module"}
"""Files that may call ``importlib.import_module`` on a name that is not a literal."""


def module_names(root: Path) -> dict[str, list[Path]]:
    """Node name -> the files of that node."""
    nodes: dict[str, list[Path]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        nodes.setdefault(".".join(parts), []).append(path)
    return nodes


def _resolve(name: str, nodes: dict[str, list[Path]]) -> str | None:
    """The node ``name`` (a module, or a name inside one) belongs to."""
    while name and name not in nodes:
        name = name.rpartition(".")[0]
    return name or None


def _ancestors(node: str) -> list[str]:
    """The packages ``node`` is in, root excluded."""
    parts = node.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def import_graph(root: Path) -> dict[str, dict[str, str]]:
    """Node -> {node it imports: where (``file:line``) the first such import is}."""
    nodes = module_names(root)
    graph: dict[str, dict[str, str]] = {node: {} for node in nodes}
    for node, paths in nodes.items():
        for path in paths:
            package = ".".join(path.relative_to(root.parent).with_suffix("").parts[:-1])
            where_base = path.relative_to(root.parent).as_posix()
            for stmt in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(stmt, ast.Import):
                    targets = [alias.name for alias in stmt.names]
                elif isinstance(stmt, ast.ImportFrom):
                    if stmt.level:
                        base = package.split(".")[: len(package.split(".")) - stmt.level + 1]
                        module = ".".join(base + ([stmt.module] if stmt.module else []))
                    else:
                        module = stmt.module or ""
                    targets = [f"{module}.{alias.name}" for alias in stmt.names]
                else:
                    continue
                for target in targets:
                    if target.split(".")[0] != root.name:
                        continue
                    found = _resolve(target, nodes)
                    if found is None:
                        continue
                    implied = [
                        a for a in _ancestors(found) if a not in _ancestors(node) and a != node
                    ]
                    for imported in [found, *implied]:
                        if imported != node:
                            graph[node].setdefault(imported, f"{where_base}:{stmt.lineno}")
    return graph


def find_cycle(graph: dict[str, dict[str, str]]) -> list[str] | None:
    """A circle of nodes (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def describe(graph: dict[str, dict[str, str]], cycle: list[str]) -> str:
    return "\n".join(f"{a} -> {b} ({graph[a][b]})" for a, b in zip(cycle, cycle[1:]))


def test_no_import_circle_among_the_modules():
    graph = import_graph(PACKAGE)
    assert graph["tracerace.api"].keys() >= {"tracerace.report", "tracerace.checker.engine"}
    cycle = find_cycle(graph)
    assert cycle is None, "import circle:\n" + describe(graph, cycle)


def stage(node: str) -> str | None:
    """The stage of module ``node`` (None: the root package)."""
    name = node
    while name and name not in STAGES:
        name = name.rpartition(".")[0]
    return STAGES.get(name)


def layer_breaches(graph: dict[str, dict[str, str]]) -> list[str]:
    """Every import of a stage that its stage may not import."""
    found = []
    for node, targets in sorted(graph.items()):
        own = stage(node)
        for target, where in sorted(targets.items()):
            theirs = stage(target)
            if (
                own is not None
                and theirs is not None
                and theirs != own
                and theirs not in MAY_IMPORT[own]
            ):
                found.append(f"{node} ({own}) -> {target} ({theirs}) at {where}")
    return found


def test_every_module_has_a_stage():
    assert [
        node for node in module_names(PACKAGE) if node != "tracerace" and stage(node) is None
    ] == []


def test_each_stage_imports_only_the_stages_before_it():
    assert layer_breaches(import_graph(PACKAGE)) == []


def test_the_engine_modules_are_nodes_of_their_own():
    graph = import_graph(PACKAGE)
    assert "tracerace.checker.engine.state" in graph
    assert "tracerace.checker.engine.layout" in graph["tracerace.checker.engine.pools"]


def test_a_stage_importing_a_later_one_is_a_breach(tmp_path):
    pkg = tmp_path / "tracerace"
    for folder in ("trace", "report"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "report" / "model.py").write_text("from ..trace import reader\n")
    (pkg / "trace" / "reader.py").write_text("def f():\n    from ..report.model import x\n")
    breaches = layer_breaches(import_graph(pkg))
    assert breaches == [
        "tracerace.trace.reader (trace) -> tracerace.report (report) at "
        "tracerace/trace/reader.py:2",
        "tracerace.trace.reader (trace) -> tracerace.report.model (report) at "
        "tracerace/trace/reader.py:2",
    ]


def test_nothing_inside_imports_the_root_package():
    graph = import_graph(PACKAGE)
    users = {
        node: where["tracerace"]
        for node, where in graph.items()
        if "tracerace" in where and node != "tracerace.pytest_plugin"
    }
    assert users == {}  # the plugin is loaded by pytest, from outside


def test_the_api_does_not_load_the_progress_bar():
    """Progress is drawn by the CLI (rich); the API takes a plain callback."""
    graph = import_graph(PACKAGE)
    seen, todo = set(), ["tracerace.api"]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += graph[node]
    nodes = module_names(PACKAGE)
    rich = [
        str(path.relative_to(PACKAGE.parent))
        for node in seen
        for path in nodes[node]
        if any(
            isinstance(s, (ast.Import, ast.ImportFrom)) and _imports_rich(s)
            for s in ast.walk(ast.parse(path.read_text()))
        )
    ]
    assert "tracerace.cli" not in seen and rich == []


def _imports_rich(stmt: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(stmt, ast.Import):
        return any(a.name.split(".")[0] == "rich" for a in stmt.names)
    return stmt.level == 0 and (stmt.module or "").split(".")[0] == "rich"


def test_no_module_is_imported_by_a_name_string():
    """``importlib.import_module("tracerace....")`` (or a name looked up in a
    table) would be an edge the graph above cannot see."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        for call in ast.walk(ast.parse(path.read_text())):
            if not isinstance(call, ast.Call) or not call.args:
                continue
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name not in ("import_module", "__import__"):
                continue
            arg = call.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                if arg.value.startswith(("tracerace", ".")):
                    found.append(f"{rel}:{call.lineno}")
            elif rel not in IMPORT_BY_NAME:
                found.append(f"{rel}:{call.lineno}")
    assert found == []


@pytest.mark.parametrize("deferred", [False, True])
def test_the_graph_sees_a_circle_hidden_in_a_function(tmp_path, deferred):
    pkg = tmp_path / "tracerace"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("from . import c\n")
    (pkg / "sub" / "b.py").write_text("")
    back = (
        "def f():\n    from .. import a\n"
        if deferred
        else "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\n"
    )
    (pkg / "sub" / "c.py").write_text(back)
    graph = import_graph(pkg)
    # a -> sub.b runs the package sub, whose __init__ imports c, which imports a
    assert graph["tracerace.a"].keys() == {"tracerace.sub.b", "tracerace.sub"}
    cycle = find_cycle(graph)
    assert cycle is not None and set(cycle) == {"tracerace.a", "tracerace.sub", "tracerace.sub.c"}
    (pkg / "sub" / "c.py").write_text("")
    assert find_cycle(import_graph(pkg)) is None
