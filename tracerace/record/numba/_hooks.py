"""Where the recorder attaches to numba-cuda's simulator, and a check that it still can.

The recorder patches ``FakeCUDAKernel.__call__`` (a kernel launch goes to
:meth:`Session.launch`; device-function calls and launches from inside a
kernel keep the stock path), ``FakeCUDAKernel.forall`` (the launch
configuration CUDA's ForAll would use, see :meth:`Session.forall`) and the
element access of ``FakeCUDAArray`` (kernel code that reaches a device array
the recorder did not wrap fails instead of going unrecorded), and relies on
the names in :data:`HOOKS`: it subclasses ``FakeCUDAModule`` and
``FakeCUDAAtomic`` and calls the argument and context helpers. :func:`missing_hooks` lists what a
numba-cuda version lacks, so an upgrade that moves them fails loudly
(``tests/test_record_numba.py`` runs it) instead of recording nothing.
"""

from __future__ import annotations

import sys

from ..program import missing_names

SIM = "numba.cuda.simulator"

HOOKS = {
    f"{SIM}.kernel": (
        "FakeCUDAKernel.__call__",
        "FakeCUDAKernel.forall",
        "FakeCUDAKernel.__getitem__",
        "_push_kernel_context",
        "_kernel_context",
        "normalize_kernel_dimensions",
    ),
    f"{SIM}.kernelapi": (
        "FakeCUDAModule.threadIdx",
        "FakeCUDAModule.blockIdx",
        "FakeCUDAModule.laneid",
        "FakeCUDAModule.shared",
        "FakeCUDAModule.local",
        "FakeCUDAModule.atomic",
        "FakeCUDAModule.cg",
        "FakeCUDAModule.syncthreads",
        "FakeCUDAModule.syncthreads_count",
        "FakeCUDAModule.syncthreads_and",
        "FakeCUDAModule.syncthreads_or",
        "FakeCUDAModule.threadfence",
        "FakeCUDAModule.threadfence_block",
        "FakeCUDAModule.threadfence_system",
        "FakeCUDAModule.grid",
        "FakeCUDAAtomic.add",
        "FakeCUDAAtomic.sub",
        "FakeCUDAAtomic.and_",
        "FakeCUDAAtomic.or_",
        "FakeCUDAAtomic.xor",
        "FakeCUDAAtomic.inc",
        "FakeCUDAAtomic.dec",
        "FakeCUDAAtomic.exch",
        "FakeCUDAAtomic.max",
        "FakeCUDAAtomic.min",
        "FakeCUDAAtomic.nanmax",
        "FakeCUDAAtomic.nanmin",
        "FakeCUDAAtomic.cas",
        "FakeCUDAAtomic.compare_and_swap",
        "swapped_cuda_module",
    ),
    f"{SIM}.cudadrv.devicearray": (
        "FakeCUDAArray.__getitem__",
        "FakeCUDAArray.__setitem__",
        "FakeWithinKernelCUDAArray",
    ),
    f"{SIM}.args": ("ArgHint", "InOut"),
}
"""Module -> the (dotted) names in it the recorder uses."""

KERNEL_ATTRIBUTES = ("fn", "_device", "grid_dim", "block_dim", "dynshared_size", "extensions")
"""Attributes of a ``FakeCUDAKernel`` instance that :meth:`Session.launch` reads."""


def missing_hooks() -> list[str]:
    """The hooked simulator names this numba-cuda lacks (empty when all is well)."""
    missing = missing_names(HOOKS)
    if not missing:
        missing += _missing_instance_parts()
    return missing


def _missing_instance_parts() -> list[str]:
    """What the recorder reads from instances: a kernel's launch settings, a
    device array's NumPy array, and the module's constructor signature."""
    from numba.cuda.simulator import kernel, kernelapi
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    missing = []
    fake_kernel = kernel.FakeCUDAKernel(lambda: None, device=False)
    missing += [f"FakeCUDAKernel().{a}" for a in KERNEL_ATTRIBUTES if not hasattr(fake_kernel, a)]
    if not hasattr(FakeCUDAArray(None), "_ary"):
        missing.append("FakeCUDAArray()._ary")
    try:
        kernelapi.FakeCUDAModule((1, 1, 1), (1, 1, 1), 0)
    except TypeError:
        missing.append("FakeCUDAModule(grid_dim, block_dim, dynshared_size)")
    return missing


def install(session) -> None:
    """Route every kernel launch to ``session``; raise if the simulator moved."""
    missing = missing_hooks()
    if missing:
        raise RuntimeError("this numba-cuda lacks what the recorder hooks: " + ", ".join(missing))
    from numba.cuda.simulator import kernel
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    from ._limits import Unrecordable

    stock_call = kernel.FakeCUDAKernel.__call__

    def call(fake_kernel, *args):
        if fake_kernel._device or kernel._kernel_context:
            return stock_call(fake_kernel, *args)
        return session.launch(fake_kernel, args)

    def forall(fake_kernel, ntasks, tpb=0, stream=0, sharedmem=0):
        return session.forall(fake_kernel, ntasks, tpb, stream, sharedmem)

    def guarded(stock, verb: str):
        def access(array, *args):
            if session.running:
                where = session.sites.text(sys._getframe(1))
                raise Unrecordable(
                    f"kernel code {verb} a device array the recorder does not "
                    f"follow{f' at {where}' if where else ''} (reached through "
                    f"a container such as a list or a dict); pass it as an "
                    f"argument, or name it as a global or closure variable"
                )
            return stock(array, *args)

        return access

    kernel.FakeCUDAKernel.__call__ = call
    kernel.FakeCUDAKernel.forall = forall
    FakeCUDAArray.__getitem__ = guarded(FakeCUDAArray.__getitem__, "reads")
    FakeCUDAArray.__setitem__ = guarded(FakeCUDAArray.__setitem__, "writes")
