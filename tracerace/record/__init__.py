"""Recorders: run a real program under a simulator and write a v1 trace of it.

Each backend is a module of this package with one entry point and its default
schedule::

    record(command: list[str], out: str, *, schedule: str, seed: int) -> RecordResult
    DEFAULT_SCHEDULE: str

``numba``     Numba's CUDA simulator (package numba-cuda), deterministic scheduler
              (default schedule round-robin).
``oclgrind``  The Oclgrind OpenCL simulator with tracerace's plugin (serial, its only one).
``triton``    Triton's interpreter (``TRITON_INTERPRET=1``), torch tensors on the CPU
              (serial, its only one).
``cuda``      An NVIDIA GPU, through the Compute Sanitizer API and tracerace's tool
              library (the GPU's own schedule, called serial).

Backends import their simulator lazily, so ``import tracerace`` never needs them.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ..errors import TraceError

BACKENDS = {
    "numba": "tracerace.record.numba_sim",
    "oclgrind": "tracerace.record.oclgrind",
    "triton": "tracerace.record.triton_interp",
    "cuda": "tracerace.record.cuda",
}
SCHEDULES = ("serial", "round-robin", "random")


@dataclass(frozen=True)
class RecordResult:
    """What a recording wrote."""

    out: str
    events: int
    launches: int
    seconds: float
    exit_code: int  # the recorded program's own exit status
    warnings: tuple[str, ...] = ()
    """What the recorder had to decide or could not see in a launch (also the
    trace's ``tracerace.warnings``)."""

    def summary_line(self) -> str:
        rate = self.events / self.seconds if self.seconds > 0 else 0.0
        return (f"wrote {self.out}: {self.events:,} events, {self.launches} launch"
                f"{'es' if self.launches != 1 else ''} in {self.seconds:.1f} s "
                f"({rate:,.0f} events/s)")


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
    module = importlib.import_module(BACKENDS[backend])
    return module.record(command, out, schedule=schedule or module.DEFAULT_SCHEDULE, seed=seed)
