"""The kernels are lowered without NumPy's index wraparound; code outside
the package keeps it (tracerace/_jit.py, "Index wraparound")."""

import numba
import numpy as np
import pytest

import tracerace
from tracerace import _jit, engine
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
    names = [cres.fndesc.mangled_name for cres in engine.replay.overloads.values()]
    assert names and all(name.startswith(_jit._OWN_PREFIX) for name in names)
