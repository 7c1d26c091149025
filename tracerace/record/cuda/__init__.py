"""The ``cuda`` backend: CUDA programs recorded on an NVIDIA GPU through the Compute Sanitizer API.

``record(["./app", "args"], "run.arrow")`` (or ``["python", "script.py"]``
for PyTorch, Triton or CuPy programs) runs the program, unmodified, with
tracerace's tool library as its CUDA injection library
(``CUDA_INJECTION64_PATH``). The library (built on first use, see
:mod:`.build`) patches every module the program loads, records each
launch's accesses and synchronisation into a device buffer, and appends them
to a record stream (:mod:`.stream`) after the launch finished;
:mod:`.convert` writes the v1 trace.

The GPU runs its own schedule; the recording is of that one run
(``schedule`` is ``serial``, the only value accepted, and ``seed`` unused).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence

from ...errors import TraceError
from ..result import RecordResult
from .build import check_gpu, find_toolkit, tool_library
from .convert import convert

DEFAULT_SCHEDULE = "serial"
"""The GPU's own schedule, the only one."""

OUTPUT_ENV = "TRACERACE_CUDA_OUT"
PATCHES_ENV = "TRACERACE_CUDA_PATCHES"
INJECTION_ENV = "CUDA_INJECTION64_PATH"
KEEP_ENV = "TRACERACE_CUDA_KEEP"
"""A folder to keep the raw record stream and the module cubins in (for a bug
report, or a test fixture); by default they are deleted once converted."""


def record(command: list[str], out: str, *, schedule: str = "serial",
           seed: int = 0) -> RecordResult:
    """Run ``command`` on the GPU under the tool library and write its trace to ``out``."""
    if schedule != "serial":
        raise TraceError(f"the cuda backend records the GPU's own schedule; --schedule "
                         f"{schedule} is not available (use serial)", path="options",
                         rule="usage")
    return run(command, out)


def run(command: Sequence[str], out: str, *, preload: bool = False) -> RecordResult:
    """:func:`record`; ``preload`` loads the tool with ``LD_PRELOAD`` instead of as
    the CUDA injection library."""
    if not command:
        raise TraceError("name the program to record", path="options", rule="usage")
    out = os.path.abspath(out)
    if not os.path.isdir(os.path.dirname(out)):
        raise TraceError(f"the folder of {out} does not exist", path=out, rule="io")
    tool = tool_library(find_toolkit())
    check_gpu()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tracerace-cuda-") as temp:
        prefix = os.path.join(temp, "run")
        env = {**os.environ, OUTPUT_ENV: prefix, PATCHES_ENV: tool.patches}
        if preload:
            env["LD_PRELOAD"] = " ".join(filter(None, [tool.library,
                                                       os.environ.get("LD_PRELOAD")]))
            env["TRACERACE_CUDA_PRELOAD"] = "1"
        else:
            env[INJECTION_ENV] = tool.library
        try:
            done = subprocess.run(list(command), env=env)
        except OSError as err:
            raise TraceError(f"cannot run {shlex.join(command)}: {err.strerror}",
                             path=command[0], rule="record") from None
        if done.returncode != 0:
            raise TraceError(f"{shlex.join(command)} exited with status {done.returncode} "
                             "under the CUDA tool; nothing was written", path=command[0],
                             rule="program-failed")
        keep = os.environ.get(KEEP_ENV)
        if keep:
            os.makedirs(keep, exist_ok=True)
            for name in os.listdir(temp):
                shutil.copy(os.path.join(temp, name), keep)
        try:
            events, launches, warnings = convert(prefix, out)
        except TraceError as err:
            raise _about_program(err, command, temp) from None
    return RecordResult(out=out, events=events, launches=launches,
                        seconds=time.perf_counter() - start, exit_code=0, warnings=warnings)


def _about_program(err: TraceError, command: Sequence[str], temp: str) -> TraceError:
    """``err`` naming the recorded program where it named the tool's temporary
    stream (deleted by the time the user reads it): the stream's record number
    goes into the message, with how to keep the stream."""
    if not (err.path or "").startswith(temp):
        return err
    where = (f" (record {err.row} of the CUDA tool's stream; {KEEP_ENV}=DIR keeps the "
             "stream)") if err.row is not None else ""
    return TraceError(err.message + where, path=command[0], rule=err.rule)
