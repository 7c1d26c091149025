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
