"""Recording a native program under a tool: what the ``oclgrind`` and ``cuda`` backends share.

The backend builds its tool (a plugin, an injection library: :mod:`.build`)
and its command line; :func:`run_tool` runs the program with an environment
variable telling the tool where to write (a path prefix in a temporary
folder), refuses a program that did not exit 0, and hands the folder and
prefix to the backend's converter, which writes the trace. The folder is
deleted afterwards, whatever happened.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence

from ..errors import TraceError
from .result import RecordResult

Converter = Callable[[str, str], tuple[int, int, tuple[str, ...]]]
"""``(folder, prefix)`` -> (events, launches, warnings) of the trace it wrote."""


def run_tool(
    command: Sequence[str],
    out: str,
    argv: Sequence[str],
    *,
    output_env: str,
    under: str,
    convert: Converter,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    shown: Sequence[str] | None = None,
    temp_prefix: str = "tracerace-",
) -> RecordResult:
    """Run ``argv`` (the program ``command`` under the tool) with ``output_env``
    set to the tool's output prefix and ``env`` added to this process's
    environment, then ``convert`` what the tool wrote into ``out``.

    ``under`` names the tool in the error of a program that failed ("under
    Oclgrind"); ``shown`` is the command line the error of a program that could
    not start shows (``argv`` by default). The seconds counted are the run's and
    the conversion's."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=temp_prefix) as temp:
        prefix = os.path.join(temp, "run")
        full_env = {**os.environ, **(env or {}), output_env: prefix}
        try:
            done = subprocess.run(list(argv), cwd=cwd, env=full_env)
        except OSError as err:
            raise TraceError(
                f"cannot run {shlex.join(shown or argv)}: {err.strerror}",
                path=command[0],
                rule="record",
            ) from None
        if done.returncode != 0:
            raise TraceError(
                f"{shlex.join(command)} exited with status {done.returncode} "
                f"{under}; nothing was written",
                path=command[0],
                rule="program-failed",
            )
        events, launches, warnings = convert(temp, prefix)
    return RecordResult(
        out=out,
        events=events,
        launches=launches,
        seconds=time.perf_counter() - start,
        exit_code=0,
        warnings=warnings,
    )


def require_command(command: Sequence[str]) -> None:
    """A ``usage`` error for an empty command."""
    if not command:
        raise TraceError("name the program to record", path="options", rule="usage")
