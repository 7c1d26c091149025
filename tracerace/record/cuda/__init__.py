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
import shutil
from collections.abc import Sequence

from ...errors import TraceError
from ..interface import Backend, output_path
from ..result import RecordResult
from ..tool import require_command, run_tool
from .build import check_gpu, find_toolkit, tool_library
from .convert import convert as write_trace

DEFAULT_SCHEDULE = "serial"
"""The GPU's own schedule, the only one."""

OUTPUT_ENV = "TRACERACE_CUDA_OUT"
PATCHES_ENV = "TRACERACE_CUDA_PATCHES"
INJECTION_ENV = "CUDA_INJECTION64_PATH"
KEEP_ENV = "TRACERACE_CUDA_KEEP"
"""A folder to keep the raw record stream and the module cubins in (for a bug
report, or a test fixture); by default they are deleted once converted."""


class Cuda(Backend):
    """CUDA programs on this machine's GPU, under tracerace's Compute Sanitizer tool."""

    name = "cuda"
    schedules = (DEFAULT_SCHEDULE,)
    default_schedule = DEFAULT_SCHEDULE
    own_schedule = "records the GPU's own schedule"

    def check_installed(self) -> None:
        find_toolkit()
        check_gpu()

    def record(
        self, command: list[str], out: str, *, schedule: str = DEFAULT_SCHEDULE, seed: int = 0
    ) -> RecordResult:
        """Run ``command`` on the GPU under the tool library and write its trace to ``out``."""
        self.check_schedule(schedule)
        return run(command, out)


BACKEND = Cuda()
record = BACKEND.record


def run(command: Sequence[str], out: str, *, preload: bool = False) -> RecordResult:
    """:func:`record`; ``preload`` loads the tool with ``LD_PRELOAD`` instead of as
    the CUDA injection library."""
    require_command(command)
    out = output_path(out)
    tool = tool_library(find_toolkit())
    check_gpu()
    env = {PATCHES_ENV: tool.patches}
    if preload:
        env["LD_PRELOAD"] = " ".join(filter(None, [tool.library, os.environ.get("LD_PRELOAD")]))
        env["TRACERACE_CUDA_PRELOAD"] = "1"
    else:
        env[INJECTION_ENV] = tool.library

    def converted(temp: str, prefix: str) -> tuple[int, int, tuple[str, ...]]:
        keep = os.environ.get(KEEP_ENV)
        if keep:
            os.makedirs(keep, exist_ok=True)
            for name in os.listdir(temp):
                shutil.copy(os.path.join(temp, name), keep)
        try:
            return write_trace(prefix, out)
        except TraceError as err:
            raise _about_program(err, command, temp) from None

    return run_tool(
        command,
        out,
        command,
        env=env,
        output_env=OUTPUT_ENV,
        under="under the CUDA tool",
        convert=converted,
        temp_prefix="tracerace-cuda-",
    )


def _about_program(err: TraceError, command: Sequence[str], temp: str) -> TraceError:
    """``err`` naming the recorded program where it named the tool's temporary
    stream (deleted by the time the user reads it): the stream's record number
    goes into the message, with how to keep the stream."""
    if not (err.path or "").startswith(temp):
        return err
    where = (
        (f" (record {err.row} of the CUDA tool's stream; {KEEP_ENV}=DIR keeps the stream)")
        if err.row is not None
        else ""
    )
    return TraceError(err.message + where, path=command[0], rule=err.rule)
