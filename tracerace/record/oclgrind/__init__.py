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
import shlex
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from ...errors import TraceError
from ..result import RecordResult
from .build import find_oclgrind, plugin_library
from .convert import convert

PLACEHOLDER_SOURCE = "input.cl"
"""The file name Oclgrind gives a program built from a source string."""

OUTPUT_ENV = "TRACERACE_OCLGRIND_OUT"

DEFAULT_SCHEDULE = "serial"
"""Oclgrind's own schedule, the only one."""
"""Tells the plugin where to write (a path prefix)."""


def record(command: list[str], out: str, *, schedule: str = "serial",
           seed: int = 0) -> RecordResult:
    """Run ``command`` under Oclgrind and write its trace to ``out``.

    Only the ``serial`` schedule exists (Oclgrind's own); ``seed`` is unused.
    """
    if schedule != "serial":
        raise TraceError(f"the oclgrind backend runs Oclgrind's own schedule; --schedule "
                         f"{schedule} is not available (use serial)", path="options",
                         rule="usage")
    return run(command, out)


def run(command: Sequence[str], out: str, *, oclgrind_args: Sequence[str] = ()
        ) -> RecordResult:
    """:func:`record` with extra Oclgrind options (``--data-races``, ``--log FILE``, ...)."""
    if not command:
        raise TraceError("name the program to record", path="options", rule="usage")
    ocl = find_oclgrind()
    plugin = plugin_library(ocl)
    argv, cwd, names = invocation(list(command), ocl.oclgrind, ocl.kernel_runner,
                                  ["--plugins", plugin, *oclgrind_args])
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tracerace-oclgrind-") as temp:
        prefix = os.path.join(temp, "run")
        env = {**os.environ, OUTPUT_ENV: prefix}
        try:
            done = subprocess.run(argv, cwd=cwd, env=env)
        except OSError as err:
            raise TraceError(f"cannot run {shlex.join(argv)}: {err.strerror}",
                             path=command[0], rule="record") from None
        if done.returncode != 0:
            raise TraceError(f"{shlex.join(command)} exited with status {done.returncode} "
                             f"under Oclgrind; nothing was written", path=command[0],
                             rule="program-failed")
        events, launches = convert(prefix, out, source_names=names)
    return RecordResult(out=out, events=events, launches=launches,
                        seconds=time.perf_counter() - start, exit_code=done.returncode)


def invocation(command: list[str], launcher: str, runner: str, options: list[str]
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
