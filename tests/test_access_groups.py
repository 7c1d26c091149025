"""The engine's access path takes a few grouped arguments (``docs/engine.md``):
the ``Shadow`` arrays, one ``Access`` or ``CopyOp``, and the bytes covered."""

from __future__ import annotations

import inspect

import pytest

from tracerace.checker.engine import granules, memory, pages, signals
from tracerace.checker.engine.state import Tables

ACCESS_PATH = [
    granules.granule_range,
    granules.granules,
    memory.access,
    memory.access_range,
    memory.copy,
    pages.access_pages,
]


@pytest.mark.parametrize("fn", ACCESS_PATH, ids=lambda f: f.py_func.__name__)
def test_each_function_of_the_access_path_takes_a_shadow_and_at_most_five_arguments(fn):
    params = list(inspect.signature(fn.py_func).parameters)
    assert params[0] == "sh"
    assert len(params) <= 5


def test_the_shadow_arrays_are_fields_of_the_tables():
    assert set(granules.Shadow._fields) <= set(Tables._fields)


def test_an_access_spans_addr_to_end_and_a_copy_names_both_ends():
    assert {"addr", "end", "size"} <= set(granules.Access._fields)
    assert {"space", "addr", "space2", "addr2", "size"} <= set(memory.CopyOp._fields)


def test_a_wait_takes_its_signals_given_the_tables_and_the_event():
    params = list(inspect.signature(signals.consume_signals.py_func).parameters)
    assert params == ["t", "ev", "a", "epoch", "q", "need", "obj"]
