"""The ``triton`` backend of ``tracerace record``: Triton kernels run on the CPU
under Triton's interpreter.

``record(["python", "script.py", ...], "out.arrow")`` runs the script,
unmodified, in a child interpreter (:mod:`tracerace.record.triton._boot`)
with ``TRITON_INTERPRET=1``, so every ``@triton.jit`` kernel runs its programs
one after another with NumPy; the child hooks the interpreter and writes one
v1 trace of all launches when the program ends.

What a trace holds: each program instance (``pid`` over every grid axis,
block ``x + nx * (y + ny * z)``) is a block of one agent (thread 0); its loads
and stores as reads and writes of the active elements (runs of adjacent
elements as one event), its atomics (``tl.atomic_*``: one event per active
lane, with Triton's ``sem`` and ``scope``), ``tl.debug_barrier`` as a
barrier of the program, each with the kernel's ``file:line`` as its site;
``init`` for the bytes the host wrote (:mod:`._host`), and a buffer
declaration per tensor argument. Programs run as cooperative tasks
(:mod:`._sched`), so one may wait for a later one; ``schedule`` is
``serial`` (grid order, switching where a program polls) or ``random``.
"""

from __future__ import annotations

import importlib.util

from ...errors import TraceError
from ..result import RecordResult
from .._program import record_program
from ._sched import SCHEDULES

NEEDS = {"triton": "triton", "torch": "torch"}
"""Modules the recorded process imports -> the packages that provide them."""

INSTALL_HINT = "pip install 'tracerace[triton]' (a CPU build of torch is enough)"


DEFAULT_SCHEDULE = "serial"
"""Programs in grid order, each until it ends or polls (see :mod:`._sched`)."""


def record(command: list[str], out: str, *, schedule: str = DEFAULT_SCHEDULE,
           seed: int = 0) -> RecordResult:
    """Run the Python program ``command`` under Triton's interpreter and write its
    trace to ``out``; ``schedule`` is ``serial`` or ``random`` (drawn with ``seed``)."""
    if schedule not in SCHEDULES:
        raise TraceError(f"the triton backend has the schedules {' and '.join(SCHEDULES)}; "
                         f"--schedule {schedule} is not one of them", path="options",
                         rule="usage")
    return record_program("tracerace.record.triton._boot", command, out, backend="triton",
                          options=[schedule, str(seed)], env={"TRITON_INTERPRET": "1"},
                          check_installed=_check_installed)


def _check_installed() -> None:
    missing = [package for module, package in NEEDS.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        raise TraceError(f"the triton backend needs {' and '.join(missing)}: {INSTALL_HINT}",
                         path="options", rule="setup")
