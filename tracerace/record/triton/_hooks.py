"""Where the recorder attaches to Triton's interpreter, and a check that it still can.

Under ``TRITON_INTERPRET=1`` ``@triton.jit`` gives an ``InterpretedFunction``:
its ``run`` is the launch (the autotuner and ``kernel[grid](...)`` both go
through it), and a ``GridExecutor`` calls the kernel function once per program
on the module's ``interpreter_builder``, calling ``set_grid_dim`` once and
``set_grid_idx`` before each program. The recorder gives each executor its
own kernel function (:mod:`._sched`), which makes the programs
cooperative tasks. ``_implicit_cvt`` converts a launch's arguments (the
recorder adds floats, :func:`_scalar_arguments`), and
``create_extern_elementwise`` computes libdevice calls
(:mod:`._libdevice`). Every memory operation of a kernel
reaches that builder: ``create_load``/``create_store`` and the tensor
descriptor ops call ``create_masked_load``/``create_masked_store`` with the
absolute addresses and the mask; atomics are ``create_atomic_rmw`` (masked)
and ``create_atomic_cas``; ``tl.debug_barrier`` is ``create_barrier``. The
recorder wraps those methods on the builder instance, and ``run`` and
``GridExecutor.__init__`` on the classes.

Autotuning asks the active driver for a benchmarker, and the interpreter has
no driver: :class:`InterpreterDriver` stands in for it, so each config runs
once, as a benchmark would on a GPU (on the same buffers, with the
autotuner's hooks), all of them time equal, and the first config serves the
call. It also answers ``get_active_torch_device()`` with the CPU, so programs
that create their tensors on Triton's device create CPU tensors.

:func:`missing_hooks` lists what a Triton version lacks, so an upgrade that
moves these fails loudly (``tests/test_record_triton.py`` runs it) instead of
recording less than the kernel did.
"""

from __future__ import annotations

import importlib
import inspect

from ...trace.ops import READ, WRITE
from ..program import missing_names
from ._libdevice import Libdevice

INTERPRETER = "triton.runtime.interpreter"

HOOKS = {
    INTERPRETER: (
        "InterpretedFunction.run",
        "InterpretedFunction.rewritten_fn",
        "interpreter_builder",
        "interpreter_semantic",
        "GridExecutor.__init__",
        "GridExecutor.__call__",
        "_implicit_cvt",
        "_get_np_dtype",
        "TensorHandle",
    ),
    "triton.language.extra.libdevice": ("rsqrt",),
    "triton.language.extra.cuda.libdevice": ("rsqrt",),
    "triton.runtime.driver": ("driver.set_active",),
    "triton.runtime.autotuner": ("Autotuner.do_bench",),
    "triton.runtime.jit": ("TensorWrapper",),
    "triton.tools.tensor_descriptor": ("TensorDescriptor",),
    "triton._C.libtriton.ir": ("MEM_SEMANTIC", "MEM_SYNC_SCOPE"),
}
"""Module -> the (dotted) names in it the recorder uses."""

BUILDER_METHODS = {
    "set_grid_dim": ("nx", "ny", "nz"),
    "set_grid_idx": ("x", "y", "z"),
    "create_masked_load": (
        "ptrs",
        "mask",
        "other",
        "cache_modifier",
        "eviction_policy",
        "is_volatile",
    ),
    "create_masked_store": ("ptrs", "value", "mask", "cache_modifier", "eviction_policy"),
    "create_atomic_rmw": ("rmwOp", "ptr", "val", "mask", "sem", "scope"),
    "create_atomic_cas": ("ptr", "cmp", "val", "sem", "scope"),
    "create_barrier": (),
    "create_extern_elementwise": ("libName", "libPath", "symbol", "argList", "retType", "isPure"),
}
"""The builder methods the recorder wraps -> the parameters it relies on, in order."""

ROUTED = {
    "create_load": "create_masked_load",
    "create_store": "create_masked_store",
    "create_descriptor_load": "create_masked_load",
    "create_descriptor_store": "create_masked_store",
}
"""Builder methods whose accesses the recorder sees through another method."""

MEMORY_PRIMITIVES = ("load", "store", "atomic_cas", "atomic_rmw")
"""The interpreter's native memory functions; only the wrapped methods may call them."""


class InterpreterDriver:
    """``triton.runtime.driver.active`` in the recorded program (see the module)."""

    def get_active_torch_device(self):
        import torch

        return torch.device("cpu")

    def get_benchmarker(self):
        return run_once

    def __getattr__(self, name: str):
        raise AttributeError(
            f"triton.runtime.driver.active.{name} needs a GPU driver; "
            f"the recorded program runs under the interpreter, which has none"
        )


def run_once(kernel_call, quantiles=None, **_options):
    """A benchmark that runs the kernel once and times every config the same."""
    kernel_call()
    return [0.0] * len(quantiles) if quantiles else 0.0


def missing_hooks() -> list[str]:
    """The hooked interpreter names this Triton lacks (empty when all is well)."""
    missing = missing_names(HOOKS)
    if missing:
        return missing
    from triton.runtime import interpreter

    builder = type(interpreter.interpreter_builder)
    for method, params in BUILDER_METHODS.items():
        fn = getattr(builder, method, None)
        if fn is None or tuple(inspect.signature(fn).parameters)[1:] != params:
            missing.append(f"InterpreterBuilder.{method}{params}")
    for method, target in ROUTED.items():
        fn = getattr(builder, method, None)
        if fn is None or f"self.{target}(" not in inspect.getsource(fn):
            missing.append(f"InterpreterBuilder.{method} calling {target}")
    for primitive in MEMORY_PRIMITIVES:
        callers = [
            name
            for name, fn in vars(builder).items()
            if callable(fn) and f"_interpreter.{primitive}(" in inspect.getsource(fn)
        ]
        if not set(callers) <= set(BUILDER_METHODS):
            missing.append(
                f"only the wrapped methods call _interpreter.{primitive} "
                f"(also: {', '.join(sorted(set(callers) - set(BUILDER_METHODS)))})"
            )
    return missing


def install(session) -> None:
    """Route every launch and memory operation of the interpreter to ``session``;
    raise if the interpreter moved."""
    missing = missing_hooks()
    if missing:
        raise RuntimeError("this Triton lacks what the recorder hooks: " + ", ".join(missing))
    from triton.runtime import interpreter

    importlib.import_module("triton.runtime.driver").driver.set_active(InterpreterDriver())
    stock_run = interpreter.InterpretedFunction.run

    def run(kernel, *args, grid, warmup, **kwargs):
        if warmup:
            return stock_run(kernel, *args, grid=grid, warmup=warmup, **kwargs)
        return session.launch(
            lambda: stock_run(kernel, *args, grid=grid, warmup=warmup, **kwargs),
            kernel,
            args,
            kwargs,
        )

    interpreter.InterpretedFunction.run = run
    _wrap_builder(interpreter.interpreter_builder, session)
    stock_init = interpreter.GridExecutor.__init__

    def init(executor, fn, *args, **kwargs):
        stock_init(executor, fn, *args, **kwargs)
        executor.fn = session.programs.function(executor.fn)

    interpreter.GridExecutor.__init__ = init
    interpreter._implicit_cvt = _scalar_arguments(interpreter._implicit_cvt)
    Libdevice(session.refuse).install(
        interpreter.interpreter_builder, interpreter.interpreter_semantic, interpreter._get_np_dtype
    )


def _scalar_arguments(stock):
    """The interpreter's conversion of a launch's arguments, with a Python float made
    an fp32 scalar as compiled Triton passes it (the interpreter converts ints and
    bools, to i32/i64 and i1, but leaves floats Python floats, without ``.to``)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    def implicit_cvt(arg):
        if isinstance(arg, float):
            return tl.tensor(
                TensorHandle(np.array([arg], dtype=np.float32), tl.float32), tl.float32
            )
        return stock(arg)

    return implicit_cvt


def _wrap_builder(builder, session) -> None:
    """Log each memory operation before the interpreter performs it (an address
    outside the launch's tensors then fails the recording instead of the process)."""
    stock = {name: getattr(builder, name) for name in BUILDER_METHODS}

    def set_grid_dim(nx, ny, nz):
        stock["set_grid_dim"](nx, ny, nz)
        session.grid((nx, ny, nz))
        session.programs.grid((nx, ny, nz))

    def enter(x, y, z):
        stock["set_grid_idx"](x, y, z)
        session.program(x, y, z)

    def set_grid_idx(x, y, z):
        enter(x, y, z)
        session.programs.entered((x, y, z))

    def create_masked_load(ptrs, mask, other, cache_modifier, eviction_policy, is_volatile):
        session.access(READ, ptrs, mask)
        value = stock["create_masked_load"](
            ptrs, mask, other, cache_modifier, eviction_policy, is_volatile
        )
        if is_volatile:
            session.volatile_load_done(ptrs, mask, value)
        return value

    def create_masked_store(ptrs, value, mask, cache_modifier, eviction_policy):
        session.access(WRITE, ptrs, mask)
        return stock["create_masked_store"](ptrs, value, mask, cache_modifier, eviction_policy)

    def create_atomic_rmw(rmwOp, ptr, val, mask, sem, scope):
        session.atomic(ptr, mask, sem, scope)
        old = stock["create_atomic_rmw"](rmwOp, ptr, val, mask, sem, scope)
        session.atomic_done(ptr, mask, old)
        return old

    def create_atomic_cas(ptr, cmp, val, sem, scope):
        session.atomic(ptr, None, sem, scope)
        old = stock["create_atomic_cas"](ptr, cmp, val, sem, scope)
        session.atomic_done(ptr, None, old)
        return old

    def create_barrier():
        session.barrier()
        return stock["create_barrier"]()

    session.programs.set_enter(enter)
    for fn in (
        set_grid_dim,
        set_grid_idx,
        create_masked_load,
        create_masked_store,
        create_atomic_rmw,
        create_atomic_cas,
        create_barrier,
    ):
        setattr(builder, fn.__name__, fn)
