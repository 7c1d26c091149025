"""The ``oclgrind`` backend: OpenCL programs run on the Oclgrind simulator.

``record(["python", "host.py"], "run.arrow")`` runs any OpenCL host program (C,
C++, Python with pyopencl, ...) as ``oclgrind --plugins PLUGIN COMMAND``; a
command whose first word is an Oclgrind simulation file (``.sim``, the input
of ``oclgrind-kernel``) runs that kernel instead. tracerace's plugin (built
on first use, see :mod:`.build`) records the run and
:mod:`.convert` writes the v1 trace.

Oclgrind has one schedule: work-groups one after another, and inside a group
each work-item runs until it reaches a barrier or finishes, in local-id order.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ...errors import TraceError
from ..interface import Backend
from ..result import RecordResult
from ..tool import require_command, run_tool
from .build import find_oclgrind, plugin_library
from .convert import convert as write_trace

PLACEHOLDER_SOURCE = "input.cl"
"""The file name Oclgrind gives a program built from a source string."""

OUTPUT_ENV = "TRACERACE_OCLGRIND_OUT"
"""Tells the plugin where to write (a path prefix)."""

DEFAULT_SCHEDULE = "serial"
"""Oclgrind's own schedule, the only one."""


class Oclgrind(Backend):
    """OpenCL host programs and ``.sim`` kernels under Oclgrind and tracerace's plugin."""

    name = "oclgrind"
    schedules = (DEFAULT_SCHEDULE,)
    default_schedule = DEFAULT_SCHEDULE
    own_schedule = "runs Oclgrind's own schedule"

    def check_installed(self) -> None:
        find_oclgrind()

    def record(
        self, command: list[str], out: str, *, schedule: str = DEFAULT_SCHEDULE, seed: int = 0
    ) -> RecordResult:
        """Run ``command`` under Oclgrind and write its trace to ``out`` (``seed`` is unused)."""
        self.check_schedule(schedule)
        return run(command, out)


BACKEND = Oclgrind()
record = BACKEND.record


def run(command: Sequence[str], out: str, *, oclgrind_args: Sequence[str] = ()) -> RecordResult:
    """:func:`record` with extra Oclgrind options (``--data-races``, ``--log FILE``, ...)."""
    require_command(command)
    ocl = find_oclgrind()
    plugin = plugin_library(ocl)
    argv, cwd, names = invocation(
        list(command), ocl.oclgrind, ocl.kernel_runner, ["--plugins", plugin, *oclgrind_args]
    )

    def converted(temp: str, prefix: str) -> tuple[int, int, tuple[str, ...]]:
        return (*write_trace(prefix, out, source_names=names), ())

    return run_tool(
        command,
        out,
        argv,
        cwd=cwd,
        output_env=OUTPUT_ENV,
        under="under Oclgrind",
        convert=converted,
        temp_prefix="tracerace-oclgrind-",
    )


def invocation(
    command: list[str], launcher: str, runner: str, options: list[str]
) -> tuple[list[str], str | None, dict[str, str]]:
    """(argv, working directory, source renames) to run ``command`` under Oclgrind."""
    if not command[0].endswith(".sim"):
        return [launcher, *options, *command], None, {}
    sim = Path(command[0])
    if not sim.is_file():
        raise TraceError("no such simulation file", path=command[0], rule="no-such-file")
    program = sim_program(sim)
    # oclgrind-kernel opens the program file relative to its working directory;
    # simulation files usually sit next to their program, so run there when the
    # program is not found from here.
    cwd = None if Path(program).is_file() else str(sim.parent.resolve())
    argv = [runner, *options, str(sim.resolve()), *command[1:]]
    return argv, cwd, {PLACEHOLDER_SOURCE: os.path.basename(program)}


def sim_program(sim: Path) -> str:
    """The program file a simulation file names (its first word, comments removed)."""
    for line in sim.read_text(errors="replace").splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            return words[0]
    raise TraceError("the simulation file names no program", path=str(sim), rule="format")
