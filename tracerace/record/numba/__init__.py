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

from ..program import PythonBackend

DEFAULT_SCHEDULE = "round-robin"
"""Lockstep at every access, as a warp runs: a missing barrier shows as the race it is."""


class Numba(PythonBackend):
    """Numba CUDA kernels under numba-cuda's simulator and a deterministic scheduler."""

    name = "numba"
    schedules = ("serial", "round-robin", "random")
    default_schedule = DEFAULT_SCHEDULE
    boot = "tracerace.record.numba._boot"
    env = {"NUMBA_ENABLE_CUDASIM": "1"}
    needs = {"numba_cuda": "numba-cuda", "greenlet": "greenlet"}
    install_hint = "pip install 'tracerace[cuda-sim]'"


BACKEND = Numba()
record = BACKEND.record
