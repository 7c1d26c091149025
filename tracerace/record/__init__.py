"""Recorders: run a real program under a simulator and write a v1 trace of it.

Each backend is a subpackage of this package whose ``BACKEND`` is a
:class:`~.interface.Backend` (its schedules, its install check, its
``record(command, out, *, schedule, seed) -> RecordResult``); the subpackage
keeps only what is its own. What the backends share: :mod:`.program` (a
Python program in a child interpreter, for ``numba`` and ``triton``),
:mod:`.tool` (a native program under a tool, for ``oclgrind`` and ``cuda``),
:mod:`.events` (the event log and the rows a converter adds), :mod:`.sites`
(site interning, the user's source paths) and :mod:`.build` (native parts built
into the cache).

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

from ..errors import TraceError
from ..trace.outfile import destination, refuse_inputs, refuse_non_trace
from .interface import Backend
from .result import RecordResult

BACKENDS = ("numba", "oclgrind", "triton", "cuda")
"""The backends, each the subpackage of its name."""
SCHEDULES = ("serial", "round-robin", "random")

__all__ = ["BACKENDS", "SCHEDULES", "Backend", "RecordResult", "load_backend", "record"]


def record(
    command: list[str],
    out: str,
    *,
    backend: str = "numba",
    schedule: str | None = None,
    seed: int = 0,
) -> RecordResult:
    """Run ``command`` under ``backend`` and write its trace to ``out``
    (``schedule`` None: the backend's default)."""
    if backend not in BACKENDS:
        raise TraceError(
            f"unknown backend {backend!r} (one of {', '.join(BACKENDS)})",
            path="options",
            rule="usage",
        )
    if schedule is not None and schedule not in SCHEDULES:
        raise TraceError(
            f"unknown schedule {schedule!r} (one of {', '.join(SCHEDULES)})",
            path="options",
            rule="usage",
        )
    if not command:
        raise TraceError("name the program to record after --", path="options", rule="usage")
    refuse_output(out, command)
    chosen = load_backend(backend)
    return chosen.record(command, out, schedule=schedule or chosen.default_schedule, seed=seed)


def refuse_output(out: str, command: list[str]) -> None:
    """Raise a ``usage`` error, before the program runs, when ``out`` is the
    program or another file its command line names, or an existing file that
    is not a trace (:func:`tracerace.trace.outfile.refuse_non_trace`)."""
    refuse_inputs(out, [word for word in command if os.path.exists(word)])
    refuse_non_trace(destination(out))


def load_backend(name: str) -> Backend:
    """The backend ``name``, its package imported now (on use: the recorded
    program's own process imports this package and must not load the other
    backends into the program it runs)."""
    if name == "numba":
        from . import numba as package
    elif name == "oclgrind":
        from . import oclgrind as package
    elif name == "triton":
        from . import triton as package
    elif name == "cuda":
        from . import cuda as package
    else:
        raise TraceError(
            f"unknown backend {name!r} (one of {', '.join(BACKENDS)})", path="options", rule="usage"
        )
    return package.BACKEND
