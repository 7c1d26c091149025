"""Every op's handler has one name in the reference and in the engine, and the
two live in modules of the same name (``reference/barriers.py`` and
``engine/barriers.py`` both hold ``on_barrier``), so one name finds both.

The engine is read from the source with ``ast`` (importing it compiles kernels).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tracerace.checker import reference

ENGINE = Path(__file__).resolve().parent.parent / "tracerace" / "checker" / "engine"


def engine_handlers() -> dict[str, list[str]]:
    """``on_*`` function name -> the engine modules that define one at top level."""
    found: dict[str, list[str]] = {}
    for path in sorted(ENGINE.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("on_"):
                found.setdefault(node.name, []).append(path.stem)
    return found


def test_each_handler_lives_in_the_module_named_as_the_engines():
    engine = engine_handlers()
    for handler in set(reference.HANDLERS.values()):
        assert handler.__name__.startswith("on_")
        assert getattr(reference.ReferenceChecker, handler.__name__) is handler
        module = handler.__module__.rpartition(".")[2]
        assert engine.get(handler.__name__) == [module], handler.__qualname__


def _answers(fn: ast.FunctionDef) -> list[str]:
    """The names ``fn`` returns, in the order its returns come in the source
    (both branches of a conditional expression, the first first)."""
    out: list[str] = []

    def name(node: ast.expr) -> None:
        if isinstance(node, ast.IfExp):
            name(node.body)
            name(node.orelse)
        elif isinstance(node, ast.Name):
            out.append(node.id)
        elif isinstance(node, ast.Attribute):
            out.append(node.attr)
        else:
            raise AssertionError(f"race_kind returns {ast.dump(node)}, not a named answer")

    returns = [n for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    for node in sorted(returns, key=lambda n: (n.lineno, n.col_offset)):
        name(node.value)
    return out


def _function(tree: ast.Module, name: str) -> ast.FunctionDef:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise AssertionError(f"no {name}")


def _constants(tree: ast.Module, names: set[str]) -> dict[str, int]:
    found = {}
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in names
        ):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


def test_race_kind_asks_the_same_questions_in_the_same_order_in_both():
    """The race decision has one shape in the twins: ``race_kind`` in both
    ``races.py``, giving the same answers in the same order (ordered first,
    then an atomic pair, then a copy in flight, then the kind by who wrote),
    with the same values for the two answers that are not races."""
    from tracerace.checker.reference import races as ref_races

    engine_tree = ast.parse((ENGINE / "races.py").read_text())
    ref_tree = ast.parse(Path(ref_races.__file__).read_text())
    engine = _answers(_function(engine_tree, "race_kind"))
    ref = _answers(_function(ref_tree, "race_kind"))
    assert (
        engine == ref == ["ORDERED", "ATOMIC_PAIR", "K_ASYNC_INFLIGHT", "K_WAR", "K_WAW", "K_RAW"]
    )
    wanted = {"ORDERED", "ATOMIC_PAIR"}
    assert (
        _constants(engine_tree, wanted)
        == _constants(ref_tree, wanted)
        == {"ORDERED": ref_races.ORDERED, "ATOMIC_PAIR": ref_races.ATOMIC_PAIR}
    )
    # The reference's access asks race_kind rather than deciding inline.
    ref_memory = ast.parse((Path(ref_races.__file__).parent / "memory.py").read_text())
    calls = [
        n.func.attr
        for n in ast.walk(_function(ref_memory, "access"))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
    ]
    assert "race_kind" in calls
