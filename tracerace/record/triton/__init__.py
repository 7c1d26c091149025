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

from ..program import PythonBackend
from ._sched import SCHEDULES

DEFAULT_SCHEDULE = "serial"
"""Programs in grid order, each until it ends or polls (see :mod:`._sched`)."""


class Triton(PythonBackend):
    """Triton kernels under Triton's interpreter, programs as cooperative tasks."""

    name = "triton"
    schedules = SCHEDULES
    default_schedule = DEFAULT_SCHEDULE
    boot = "tracerace.record.triton._boot"
    env = {"TRITON_INTERPRET": "1"}
    needs = {"triton": "triton", "torch": "torch"}
    install_hint = "pip install 'tracerace[triton]' (a CPU build of torch is enough)"


BACKEND = Triton()
record = BACKEND.record
