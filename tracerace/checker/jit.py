"""Every Numba setting lives here.

``cache=True``: compiled kernels are written next to the module (or to
``NUMBA_CACHE_DIR``) so a second run starts in well under a second.
``boundscheck`` stays off in production; set ``TRACERACE_BOUNDSCHECK=1`` to
debug a kernel (the cached kernels are dropped when the flag changes:
``drop_stale_kernels``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.registry import CPUDispatcher
from numba.extending import intrinsic

BOUNDSCHECK = os.environ.get("TRACERACE_BOUNDSCHECK", "") == "1"

OPTIONS = dict(cache=True, nogil=True, boundscheck=BOUNDSCHECK, error_model="numpy")


# Index wraparound. NumPy makes ``a[-1]`` the last element, so Numba lowers
# every signed index into a compare and an add of the array's length, and
# keeps that length live across the giant replay loop (register pressure,
# spills). No index in tracerace's kernels is negative (-1 is a sentinel that
# is tested, never used as an index; ``TRACERACE_BOUNDSCHECK=1`` turns a
# negative index into an IndexError, since the bounds check then sees the raw
# value), so their code is lowered without it (what that saves: bench/README.md,
# "Figures behind the code's choices"). Numba offers no option for this; its
# lowering asks ``fix_integer_index`` for every integer index, so that is wrapped, and the
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


# -- the decorators ---------------------------------------------------------
# The first run compiles every kernel (a user's first impression), so the
# shapes below are chosen by compile time as well as by instructions per
# event; bench/README.md ("The first compile") has the figures. What costs
# compile time in Numba:
#
# - Inlining at Numba IR level (``inline="always"``) copies the callee's IR,
#   nested inlines included, at every call site (``copy.deepcopy`` of every
#   block) and types the grown function again.
#   Helpers are inlined by LLVM instead (``forceinline``: ``alwaysinline``),
#   each compiled and typed once; only the access path's two functions are
#   inlined at IR level (``jit_inline_ir``).
# - A constant argument is typed as a literal (``Literal[int](0)``), and each
#   literal value compiled a new specialization of the callee. ``_Kernel``
#   types arguments by their plain types.
# - Every compiled function gets a Python entry (the "cpython wrapper", which
#   unboxes each array argument) and a C entry ("cfunc wrapper"), each an
#   LLVM module optimized and compiled to machine code. Only the kernels
#   the driver calls need the first; nothing needs the second.


class _Kernel(CPUDispatcher):
    """A dispatcher that compiles once per argument types: a constant
    argument is typed as its plain type, not as a literal of its value."""

    def get_call_template(self, args, kws):
        return super().get_call_template(
            tuple(types.unliteral(a) for a in args), {k: types.unliteral(v) for k, v in kws.items()}
        )


class _Inner(_Kernel):
    """A function compiled without a Python entry, for compiled callers only:
    a call from Python is refused (see ``from_python``)."""

    def __call__(self, *args, **kws):
        raise TypeError(
            f"{self.py_func.__module__}.{self.py_func.__name__} has no Python "
            "entry: call it from compiled code, make it a jit_kernel, or (tests) "
            "call it through jit.from_python"
        )


def from_python(fn):
    """A twin of ``jit_leaf``/``jit_inline`` function ``fn`` with a Python entry,
    for tests that call one directly. Compiled on first use and not cached:
    Numba's cache key leaves out the flags, so the twin would share the
    cache entries of the function without an entry."""
    twin = fn.__dict__.get("_python_twin")
    if twin is None:
        options = {k: v for k, v in fn.targetoptions.items() if k != "nopython"}
        options["no_cpython_wrapper"] = False
        twin = fn.__dict__["_python_twin"] = numba.njit(**options)(fn.py_func)
    return twin


def _make(fn, cls, forceinline=False, **options):
    # ``forceinline`` is always set: Numba lets a callee inherit unset flags
    # from the caller that compiles it first, and a leaf compiled first from
    # an ``alwaysinline`` helper was inlined everywhere (the first compile
    # doubled).
    disp = numba.njit(no_cfunc_wrapper=True, forceinline=forceinline, **OPTIONS, **options)(fn)
    if isinstance(disp, CPUDispatcher):  # not under NUMBA_DISABLE_JIT
        disp.__class__ = cls
    return disp


def jit(fn):
    """Kernels the driver calls that allocate (reference counted)."""
    return _make(fn, _Kernel)


def jit_kernel(fn):
    """Kernels the driver calls that allocate nothing: compiled without NRT,
    like ``jit_leaf``, with a Python entry."""
    return _make(fn, _Kernel, _nrt=False)


def jit_inline(fn):
    """For small helpers on the hot path: inlined into every caller by LLVM
    (``alwaysinline``), which also saves the reference-count traffic of
    passing arrays across a call (measured: ~4x fewer ns per access on the
    tiled benchmark). Compiled without NRT: nothing here allocates."""
    return _make(fn, _Inner, _nrt=False, forceinline=True, no_cpython_wrapper=True)


def jit_inline_ir(fn):
    """Inlined at Numba IR level, into each caller's IR before typing: for
    the access path in ``replay`` (``on_access``, ``granule_range``) only.
    Inlined by LLVM instead, their returned tuples stayed in stack slots that
    every access zeroed and reloaded: tiled 597 -> 628 instructions per event
    (``bench.icount``), pipeline 683 -> 711, cpu 720 -> 742. Their helpers
    are ``jit_inline``, so the copying is of these two bodies only (~1 s of
    the first compile)."""
    return _make(fn, _Inner, inline="always", no_cpython_wrapper=True)


def jit_leaf(fn):
    """Functions called from compiled code that allocate nothing: compiled
    without NRT, so a call does not increment and decrement the reference
    count of every array argument. Measured: calling the shadow-access kernel
    with ten array arguments cost ~390 ns with reference counting and a few
    ns without."""
    return _make(fn, _Inner, _nrt=False, no_cpython_wrapper=True)


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
        index = [context.cast(builder, args[1], sig.args[1], types.intp)] + [zero] * (
            aryty.ndim - 1
        )
        ptr = cgutils.get_item_pointer2(
            context,
            builder,
            ary.data,
            cgutils.unpack_tuple(builder, ary.shape),
            cgutils.unpack_tuple(builder, ary.strides),
            aryty.layout,
            index,
            wraparound=False,
            boundscheck=False,
        )
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0"
        )
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return types.void(arr, row), codegen


# The modules outside ``engine/`` whose constants end up in compiled kernels,
# and ``group/fold.py``, whose kernels call the engine's helpers (paths from
# the package's root); every module of ``engine/`` and this one count too.
KERNEL_MODULES = (
    "checker/findings.py",
    "group/fold.py",
    "trace/ops.py",
    "checker/reasons.py",
    "trace/schema.py",
)


def kernel_cache_dirs() -> list[Path]:
    """Where Numba caches the kernels of ``engine/``'s modules and of
    ``group/fold.py``: asked of Numba with a probe function compiled as if written
    in each (Numba names the folder after the source's)."""
    package = Path(__file__).resolve().parent.parent
    dirs = []
    for source in (package / "checker" / "engine" / "replay.py", package / "group" / "fold.py"):
        namespace: dict = {}
        exec(compile("def probe():\n    return 0\n", str(source), "exec"), namespace)
        try:
            dirs.append(Path(numba.njit(cache=True)(namespace["probe"])._cache._cache_path))
        except AttributeError:  # another Numba: nothing to guard
            return []
    return dirs


def drop_stale_kernels() -> None:
    """Delete cached kernels compiled from other sources than these.

    Numba keys a cached function on its own file's time stamp only, yet the
    kernels inline helpers from other modules (``shadow``, ``clocks``): after
    an edit to a helper, a kernel from an unchanged file would load stale
    machine code. So each cache folder carries a digest of every module of
    ``engine/``, of this one and of ``KERNEL_MODULES``, and the boundscheck flag (Numba's
    key leaves out the flags); when it differs, the cached kernels there are
    dropped.
    """
    here = Path(__file__).resolve()
    package = here.parent.parent
    sources = (
        sorted((package / "checker" / "engine").glob("*.py"))
        + [here]
        + [package / name for name in KERNEL_MODULES]
    )
    digest = hashlib.sha256(b"boundscheck=%d\0" % BOUNDSCHECK)
    for path in sources:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for cache_dir in kernel_cache_dirs():
        stamp = cache_dir / "tracerace-sources.sha256"
        try:
            if stamp.is_file() and stamp.read_text() == digest.hexdigest():
                continue
            for path in list(cache_dir.glob("*.nbi")) + list(cache_dir.glob("*.nbc")):
                path.unlink(missing_ok=True)
            cache_dir.mkdir(parents=True, exist_ok=True)
            stamp.write_text(digest.hexdigest())
        except OSError:  # a read-only cache: Numba will not write there either
            pass


drop_stale_kernels()


@intrinsic
def store_row_nt(typingctx, arr, row, values):
    """``arr[row, :] = values`` with non-temporal stores (LLVM's
    ``!nontemporal``: ``movnti`` on x86-64): the whole row goes to memory
    without first being read into the caches, and evicts nothing there (rows
    written one after another fill whole cache lines). For records written
    now and rarely read again (a shadow node's report fields); a later read
    of the row is still correct, only not cached. ``arr``: a C-contiguous
    2-D int64 array with as many columns as the tuple ``values`` has
    integers."""
    if (
        not isinstance(arr, types.Array)
        or arr.ndim != 2
        or arr.dtype != types.int64
        or not isinstance(row, types.Integer)
        or not isinstance(values, types.BaseTuple)
        or not all(isinstance(v, types.Integer) for v in values)
    ):
        return None
    n = len(values)

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        start = builder.mul(
            context.cast(builder, args[1], sig.args[1], types.intp),
            context.get_constant(types.intp, n),
        )
        base = builder.gep(ary.data, [start])
        hint = builder.module.add_metadata([ir.IntType(32)(1)])
        for k in range(n):
            element = builder.extract_value(args[2], k)
            value = context.cast(builder, element, sig.args[2][k], types.int64)
            ptr = builder.gep(base, [context.get_constant(types.intp, k)])
            store = builder.store(value, ptr, align=8)
            store.set_metadata("nontemporal", hint)
        return context.get_dummy_value()

    return types.void(arr, row, values), codegen
