"""The ``numba`` backend of ``tracerace record``: CUDA kernels written with
Numba, run on the CPU under numba-cuda's simulator.

``record(["python", "script.py", ...], "out.arrow", schedule=..., seed=...)``
runs the script, unmodified, in a child interpreter
(:mod:`tracerace.record._numba_boot`) with ``NUMBA_ENABLE_CUDASIM=1``; the
child hooks the simulator so every kernel launch is recorded under a
deterministic schedule, and writes one v1 trace of all launches when the
program ends. The same schedule and seed give a bit-identical trace.

What a trace holds: each element read and write of every array the kernel
reaches (arguments, globals, closures, attributes of named objects, shared
and local arrays, views of them; size = element or field size, the user's
``file:line`` as site), barriers (``syncthreads`` and its count/and/or forms:
``bar_sync``, barrier 0), the grid barrier (``grid.sync()``: signals and waits
at device scope among all threads, see ``_numba_sched``), atomics
(``cuda.atomic.*``: device scope, relaxed), fences (``threadfence``: device,
``_block``: block, ``_system``: system; acq_rel), ``init`` for global arrays
the host filled, a buffer declaration per array, and ``tracerace.warnings``
(launches without accesses, ``forall`` block sizes the recorder chose). What
it cannot show fails the recording (``_numba_limits``). ``RecordResult.seconds``
counts the launches and the writing of the trace, not the interpreter's
start-up nor the program's host code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

from ..errors import TraceError
from . import RecordResult

NEEDS = {"numba_cuda": "numba-cuda", "greenlet": "greenlet"}
"""Modules the recorded process imports -> the packages that provide them."""

INSTALL_HINT = "pip install 'tracerace[cuda-sim]'"

DEFAULT_SCHEDULE = "round-robin"
"""Lockstep at every access, as a warp runs: a missing barrier shows as the race it is."""

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?(\.exe)?$")


def record(command: list[str], out: str, *, schedule: str, seed: int) -> RecordResult:
    """Run the Python program ``command`` under the simulator and write its trace to ``out``."""
    kind, target, args = parse_command(command)
    _check_installed()
    out = os.path.abspath(out)
    if not os.path.isdir(os.path.dirname(out)):
        raise TraceError(f"the folder of {out} does not exist", path=out, rule="io")
    with tempfile.TemporaryDirectory(prefix="tracerace-record-") as tmp:
        status_path = os.path.join(tmp, "status.json")
        child = [sys.executable, "-m", "tracerace.record._numba_boot", out, status_path,
                 schedule, str(seed), kind, target, *args]
        returncode = subprocess.run(child, env=_child_env()).returncode
        status = _read_status(status_path, returncode, target)
    if status["error"] is not None:
        raise TraceError(_failure(status, out), path=target, rule="record")
    return RecordResult(out=out, events=status["events"], launches=status["launches"],
                        seconds=status["seconds"], exit_code=status["exit_code"],
                        warnings=tuple(status["warnings"]))


def parse_command(command: list[str]) -> tuple[str, str, list[str]]:
    """("script", path, args) or ("module", name, args) from ``python script.py args``,
    ``python -m module args`` or ``script.py args``. The program runs under this
    interpreter, whichever ``python`` the command names."""
    words = list(command)
    python = bool(words) and _is_python(words[0])
    if python:
        words = words[1:]
    if python and words[:1] == ["-m"]:
        if len(words) < 2:
            raise _usage("python -m needs a module name")
        return "module", words[1], words[2:]
    if not words or words[0].startswith("-") or not (python or words[0].endswith(".py")):
        raise _usage("the numba backend records a Python program: give "
                     "'python script.py [args]' or 'python -m module [args]' after --")
    if not os.path.isfile(words[0]):
        raise TraceError("no such file", path=words[0], rule="record")
    return "script", words[0], words[1:]


def _is_python(word: str) -> bool:
    return bool(_PYTHON.match(os.path.basename(word))) or word == sys.executable


def _usage(message: str) -> TraceError:
    return TraceError(message, path="options", rule="usage")


def _check_installed() -> None:
    missing = [package for module, package in NEEDS.items()
               if importlib.util.find_spec(module) is None]
    if missing:
        raise TraceError(f"the numba backend needs {' and '.join(missing)}: {INSTALL_HINT}",
                         path="options", rule="setup")


def _child_env() -> dict[str, str]:
    """The environment of the recorded process: the simulator on, and this
    tracerace importable even when it is not installed."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, NUMBA_ENABLE_CUDASIM="1",
                PYTHONPATH=root if not path else root + os.pathsep + path)


def _read_status(path: str, returncode: int, target: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        raise TraceError(f"the program ended before its recording finished "
                         f"(exit status {returncode})", path=target, rule="record") from None


def _failure(status: dict, out: str) -> str:
    """The error message of a recording that failed; it says whether ``out`` was written."""
    message = status["error"]
    if status["written"]:
        launches = status["launches"]
        message += (f"; the trace of its {launches} completed launch"
                    f"{'es' if launches != 1 else ''} was written to {out}")
    return message
