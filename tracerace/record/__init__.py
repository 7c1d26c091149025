"""Recorders: run a real program under a simulator and write a v1 trace of it.

Each backend is a module of this package with one entry point and its default
schedule::

    record(command: list[str], out: str, *, schedule: str, seed: int) -> RecordResult
    DEFAULT_SCHEDULE: str

``numba``     Numba's CUDA simulator (package numba-cuda), deterministic scheduler
              (default schedule round-robin).
``oclgrind``  The Oclgrind OpenCL simulator with tracerace's plugin (serial, its only one).
``triton``    Triton's interpreter (``TRITON_INTERPRET=1``), torch tensors on the CPU,
              programs as cooperative tasks (default schedule serial; also random).
``cuda``      An NVIDIA GPU, through the Compute Sanitizer API and tracerace's tool
              library (the GPU's own schedule, called serial).

Backends import their simulator lazily, so ``import tracerace`` never needs them.
"""

from __future__ import annotations

import os
from types import ModuleType

from ..errors import TraceError
from ..trace.outfile import destination, refuse_inputs, refuse_non_trace
from .result import RecordResult

BACKENDS = ("numba", "oclgrind", "triton", "cuda")
SCHEDULES = ("serial", "round-robin", "random")

__all__ = ["BACKENDS", "SCHEDULES", "RecordResult", "record"]


def record(command: list[str], out: str, *, backend: str = "numba",
           schedule: str | None = None, seed: int = 0) -> RecordResult:
    """Run ``command`` under ``backend`` and write its trace to ``out``
    (``schedule`` None: the backend's default)."""
    if backend not in BACKENDS:
        raise TraceError(f"unknown backend {backend!r} (one of {', '.join(BACKENDS)})",
                         path="options", rule="usage")
    if schedule is not None and schedule not in SCHEDULES:
        raise TraceError(f"unknown schedule {schedule!r} (one of {', '.join(SCHEDULES)})",
                         path="options", rule="usage")
    if not command:
        raise TraceError("name the program to record after --", path="options", rule="usage")
    refuse_output(out, command)
    module = _backend(backend)
    return module.record(command, out, schedule=schedule or module.DEFAULT_SCHEDULE, seed=seed)


def refuse_output(out: str, command: list[str]) -> None:
    """Raise a ``usage`` error, before the program runs, when ``out`` is the
    program or another file its command line names, or an existing file that
    is not a trace (:func:`tracerace.trace.outfile.refuse_non_trace`)."""
    refuse_inputs(out, [word for word in command if os.path.exists(word)])
    refuse_non_trace(destination(out))


def _backend(name: str) -> ModuleType:
    """The module of backend ``name``, imported on use: the recorded program's own
    process imports this package (its boot module lives here) and must not load
    the other backends into the program it runs."""
    if name == "numba":
        from . import numba as module
    elif name == "oclgrind":
        from . import oclgrind as module
    elif name == "triton":
        from . import triton as module
    else:
        from . import cuda as module
    return module
