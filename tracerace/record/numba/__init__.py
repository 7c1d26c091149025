"""The ``numba`` backend of ``tracerace record``: CUDA kernels written with
Numba, run on the CPU under numba-cuda's simulator.

``record(["python", "script.py", ...], "out.arrow", schedule=..., seed=...)``
runs the script, unmodified, in a child interpreter
(:mod:`tracerace.record.numba._boot`) with ``NUMBA_ENABLE_CUDASIM=1``; the
child hooks the simulator so every kernel launch is recorded under a
deterministic schedule, and writes one v1 trace of all launches when the
program ends. The same schedule and seed give a bit-identical trace.

What a trace holds: each element read and write of every array the kernel
reaches (arguments, globals, closures, attributes of named objects, shared
and local arrays, views of them; size = element or field size, the user's
``file:line`` as site), barriers (``syncthreads`` and its count/and/or forms:
``bar_sync``, barrier 0), the grid barrier (``grid.sync()``: signals and waits
at device scope among all threads, see ``_sched``), warp operations
(shuffles, votes, matches, ``syncwarp``: a ``warp_sync`` over the mask for
each lane of the meeting, see ``_warp``), atomics
(``cuda.atomic.*``: device scope, relaxed), fences (``threadfence``: device,
``_block``: block, ``_system``: system; acq_rel), ``init`` for global arrays
the host filled, a buffer declaration per array, and ``tracerace.warnings``
(launches without accesses, ``forall`` block sizes the recorder chose). What
it cannot show fails the recording (``_limits``). ``RecordResult.seconds``
counts the launches and the writing of the trace, not the interpreter's
start-up nor the program's host code.
"""

from __future__ import annotations

import importlib.util

from ...errors import TraceError
from ..result import RecordResult
from .._program import record_program

NEEDS = {"numba_cuda": "numba-cuda", "greenlet": "greenlet"}
"""Modules the recorded process imports -> the packages that provide them."""

INSTALL_HINT = "pip install 'tracerace[cuda-sim]'"

DEFAULT_SCHEDULE = "round-robin"
"""Lockstep at every access, as a warp runs: a missing barrier shows as the race it is."""

def record(command: list[str], out: str, *, schedule: str, seed: int) -> RecordResult:
    """Run the Python program ``command`` under the simulator and write its trace to ``out``."""
    return record_program("tracerace.record.numba._boot", command, out, backend="numba",
                          options=[schedule, str(seed)], env={"NUMBA_ENABLE_CUDASIM": "1"},
                          check_installed=_check_installed)


def _check_installed() -> None:
    missing = [package for module, package in NEEDS.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        raise TraceError(f"the numba backend needs {' and '.join(missing)}: {INSTALL_HINT}",
                         path="options", rule="setup")
