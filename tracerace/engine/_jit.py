"""Every Numba setting lives here.

``cache=True``: compiled kernels are written next to the module (or to
``NUMBA_CACHE_DIR``) so a second run starts in well under a second.
``boundscheck`` stays off in production; set ``TRACERACE_BOUNDSCHECK=1`` to
debug a kernel (the cache key includes the flag).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

BOUNDSCHECK = os.environ.get("TRACERACE_BOUNDSCHECK", "") == "1"

OPTIONS = dict(cache=True, nogil=True, boundscheck=BOUNDSCHECK, error_model="numpy")


# Index wraparound. NumPy makes ``a[-1]`` the last element, so Numba lowers
# every signed index into a compare and an add of the array's length, and
# keeps that length live across the giant replay loop (register pressure,
# spills). No index in tracerace's kernels is negative (-1 is a sentinel that
# is tested, never used as an index; ``TRACERACE_BOUNDSCHECK=1`` turns a
# negative index into an IndexError, since the bounds check then sees the raw
# value), so their code is lowered without it. Measured with bench.icount,
# 10^6 events: tiled 658 -> 553 instructions per event, pipeline 1,875 ->
# 1,560. Numba offers no option for this; its lowering asks
# ``fix_integer_index`` for every integer index, so that is wrapped, and the
# wrapper changes only code compiled from this package's modules: functions
# whose mangled name starts with ``_ZN9tracerace`` (a helper inlined at IR
# level lowers into its caller's function; NumPy routines such as
# ``np.searchsorted`` get their own functions and keep wraparound). User code
# in the same process is untouched. Should a Numba release rename the hook,
# kernels compile as before, only slower.
_OWN_PREFIX = "_ZN9tracerace"


def _install_no_wraparound() -> None:
    from numba.np import arrayobj

    original = getattr(arrayobj, "fix_integer_index", None)
    if original is None or getattr(original, "_tracerace", False):
        return

    def fix_integer_index(context, builder, idxty, idx, size):
        if idxty.signed and builder.function.name.startswith(_OWN_PREFIX):
            return context.cast(builder, idx, idxty, types.intp)
        return original(context, builder, idxty, idx, size)

    fix_integer_index._tracerace = True
    arrayobj.fix_integer_index = fix_integer_index


_install_no_wraparound()


def jit(fn):
    return numba.njit(**OPTIONS)(fn)


def jit_inline(fn):
    """For small helpers on the hot path: inlined at Numba IR level, which also
    saves the reference-count traffic of passing arrays across a call
    (measured: ~4x fewer ns per access on the tiled benchmark)."""
    return numba.njit(inline="always", **OPTIONS)(fn)


def jit_leaf(fn):
    """Kernels that allocate nothing: compiled without NRT, so a call does not
    increment and decrement the reference count of every array argument.
    Measured: calling the shadow-access kernel with ten array arguments cost
    ~390 ns with reference counting and a few ns without. Numba compiles a
    callee with its caller's flags, so nothing a leaf calls may allocate."""
    return numba.njit(_nrt=False, **OPTIONS)(fn)


@intrinsic
def prefetch_row(typingctx, arr, row):
    """Ask the CPU to start loading the cache line of ``arr[row, 0]`` (LLVM's
    ``llvm.prefetch``: read, keep in all cache levels). A hint only: it never
    faults, whatever the index, and changes no result."""
    if not isinstance(arr, types.Array) or not isinstance(row, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        zero = context.get_constant(types.intp, 0)
        index = [context.cast(builder, args[1], sig.args[1], types.intp)] + [zero] * (aryty.ndim - 1)
        ptr = cgutils.get_item_pointer2(context, builder, ary.data,
                                        cgutils.unpack_tuple(builder, ary.shape),
                                        cgutils.unpack_tuple(builder, ary.strides), aryty.layout,
                                        index, wraparound=False, boundscheck=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, row), codegen


# The modules outside this package whose constants end up in compiled kernels;
# every module of the package counts too.
KERNEL_MODULES = ("findings", "ops", "reasons", "schema")


def _probe():
    return 0


def drop_stale_kernels() -> None:
    """Delete cached kernels compiled from other sources than these.

    Numba keys a cached function on its own file's time stamp only, yet the
    kernels inline helpers from other modules (``shadow``, ``clocks``): after
    an edit to a helper, a kernel from an unchanged file would load stale
    machine code. So the cache directory carries a digest of every module of
    the package; when it differs, the cached kernels there are dropped.
    """
    try:
        cache_dir = Path(numba.njit(cache=True)(_probe)._cache._cache_path)
    except AttributeError:  # another Numba: nothing to guard
        return
    here = Path(__file__).resolve().parent
    sources = sorted(here.glob("*.py")) + [here.parent / f"{name}.py" for name in KERNEL_MODULES]
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    stamp = cache_dir / "tracerace-sources.sha256"
    try:
        if stamp.is_file() and stamp.read_text() == digest.hexdigest():
            return
        for path in list(cache_dir.glob("*.nbi")) + list(cache_dir.glob("*.nbc")):
            path.unlink(missing_ok=True)
        cache_dir.mkdir(parents=True, exist_ok=True)
        stamp.write_text(digest.hexdigest())
    except OSError:  # a read-only cache: Numba will not write there either
        pass


drop_stale_kernels()


@intrinsic
def store_row_nt(typingctx, arr, row, v0, v1, v2, v3, v4, v5, v6, v7):
    """``arr[row, :8] = v0..v7`` with non-temporal stores (LLVM's
    ``!nontemporal``: ``movnti`` on x86-64): the whole row, a cache line,
    goes to memory without first being read into the caches, and evicts
    nothing there. For records written now and rarely read again (a shadow
    node's report fields); a later read of the row is still correct, only
    not cached. ``arr``: a C-contiguous 2-D int64 array of 8 columns."""
    if not isinstance(arr, types.Array) or arr.ndim != 2 or arr.dtype != types.int64 or \
            not isinstance(row, types.Integer):
        return None
    values = (v0, v1, v2, v3, v4, v5, v6, v7)
    if not all(isinstance(v, types.Integer) for v in values):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        start = builder.mul(context.cast(builder, args[1], sig.args[1], types.intp),
                            context.get_constant(types.intp, 8))
        base = builder.gep(ary.data, [start])
        hint = builder.module.add_metadata([ir.IntType(32)(1)])
        for k in range(8):
            value = context.cast(builder, args[2 + k], sig.args[2 + k], types.int64)
            ptr = builder.gep(base, [context.get_constant(types.intp, k)])
            store = builder.store(value, ptr, align=8)
            store.set_metadata("nontemporal", hint)
        return context.get_dummy_value()

    return types.void(arr, row, *values), codegen
