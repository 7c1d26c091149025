"""The kernels are lowered without NumPy's index wraparound; code outside
the package keeps it (tracerace/checker/jit.py, "Index wraparound")."""

from pathlib import Path

import numba
import numpy as np
import pytest

import tracerace
from tracerace.checker import jit as _jit
from tracerace.checker.engine.replay import replay
from tracerace.trace.writer import make_table


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
    tracerace.check(
        make_table(
            {
                "ts": [0, 1],
                "op": ["write", "read"],
                "launch": 0,
                "block": 0,
                "thread": [0, 1],
                "addr": 0,
                "size": 4,
            }
        )
    )
    names = [cres.fndesc.mangled_name for cres in replay.overloads.values()]
    assert names and all(name.startswith(_jit._OWN_PREFIX) for name in names)


def _row_writer():
    @numba.njit
    def write(a, r, x):
        _jit.store_row_nt(a, r, (x, x + 1, x + 2, x + 3, np.int64(-7)))

    return write


def test_store_row_nt_writes_one_whole_row_and_nothing_else():
    a = np.full((4, 5), 99, np.int64)
    _row_writer()(a, 2, np.int64(10))
    assert a[2].tolist() == [10, 11, 12, 13, -7]
    assert (a[[0, 1, 3]] == 99).all()


def test_store_row_nt_stores_are_marked_nontemporal():
    write = _row_writer()
    write(np.zeros((1, 5), np.int64), 0, np.int64(1))
    (ir,) = write.inspect_llvm().values()
    stores = [line for line in ir.splitlines() if line.lstrip().startswith("store i64")]
    assert len([s for s in stores if "!nontemporal" in s]) == 5


# -- the decorators (tracerace/checker/jit.py, "the decorators") ---------------------------------


@_jit.jit_leaf
def _times(x, k):
    return x * k


def test_constant_arguments_share_one_compilation():
    from numba.core import types

    for k in (2, 3):  # as a kernel's call _times(x, 2) types them: literals
        _times.get_call_template((types.int64, types.literal(k)), {})
    (sig,) = _times.overloads
    assert not any(isinstance(a, types.Literal) for a in sig)


def test_a_leaf_refuses_a_call_from_python_and_its_twin_takes_it():
    with pytest.raises(TypeError, match="no Python entry"):
        _times(np.int64(3), np.int64(2))
    twin = _jit.from_python(_times)
    assert twin(np.int64(3), np.int64(2)) == 6
    assert _jit.from_python(_times) is twin


def test_stale_kernels_are_dropped_when_a_source_or_the_boundscheck_flag_changes(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    dirs = _jit.kernel_cache_dirs()
    assert len(dirs) == 2 and all(tmp_path in d.parents for d in dirs)
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
        (d / "old.nbi").write_bytes(b"")
    _jit.drop_stale_kernels()  # no stamp yet: every kernel there is dropped
    assert not any((d / "old.nbi").exists() for d in dirs)
    for d in dirs:
        (d / "new.nbi").write_bytes(b"")
    _jit.drop_stale_kernels()  # the same sources and flag: kept
    assert all((d / "new.nbi").exists() for d in dirs)
    monkeypatch.setattr(_jit, "BOUNDSCHECK", not _jit.BOUNDSCHECK)
    _jit.drop_stale_kernels()
    assert not any((d / "new.nbi").exists() for d in dirs)


def test_the_kernel_cache_folders_are_those_numba_uses():
    from tracerace.group import fold as group_fold

    engine_dir, package_dir = _jit.kernel_cache_dirs()
    assert Path(group_fold.fold._cache._cache_path) == package_dir
    assert Path(replay._cache._cache_path) == engine_dir
