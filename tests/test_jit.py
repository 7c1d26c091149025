"""The kernels are lowered without NumPy's index wraparound; code outside
the package keeps it (tracerace/engine/_jit.py, "Index wraparound")."""

import numba
import numpy as np
import pytest

import tracerace
from tracerace import engine
from tracerace.engine.replay import replay
from tracerace.engine import _jit
from tracerace.writer import make_table


def _element_in(module: str):
    """``a[i]`` compiled as if written in ``module`` (bounds checked)."""
    namespace = {"__name__": module}
    exec("def element(a, i):\n    return a[i]\n", namespace)
    return numba.njit(boundscheck=True)(namespace["element"])


def test_code_outside_the_package_keeps_wraparound():
    assert _element_in("userpkg.kernels")(np.arange(5), -1) == 4


def test_package_code_sees_a_negative_index_as_out_of_bounds():
    element = _element_in("tracerace._probe")
    assert element(np.arange(5), 3) == 3
    with pytest.raises(IndexError):
        element(np.arange(5), -1)


def test_the_replay_kernel_is_compiled_as_package_code():
    tracerace.check(make_table({"ts": [0, 1], "op": ["write", "read"], "launch": 0, "block": 0,
                                "thread": [0, 1], "addr": 0, "size": 4}))
    names = [cres.fndesc.mangled_name for cres in replay.overloads.values()]
    assert names and all(name.startswith(_jit._OWN_PREFIX) for name in names)


def _row_writer():
    @numba.njit
    def write(a, r, x):
        _jit.store_row_nt(a, r, x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, np.int64(-7))
    return write


def test_store_row_nt_writes_one_whole_row_and_nothing_else():
    a = np.full((4, 8), 99, np.int64)
    _row_writer()(a, 2, np.int64(10))
    assert a[2].tolist() == [10, 11, 12, 13, 14, 15, 16, -7]
    assert (a[[0, 1, 3]] == 99).all()


def test_store_row_nt_stores_are_marked_nontemporal():
    write = _row_writer()
    write(np.zeros((1, 8), np.int64), 0, np.int64(1))
    (ir,) = write.inspect_llvm().values()
    stores = [line for line in ir.splitlines() if line.lstrip().startswith("store i64")]
    assert len([s for s in stores if "!nontemporal" in s]) == 8
