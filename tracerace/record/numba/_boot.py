"""The recorded process: ``python -m tracerace.record.numba._boot OUT STATUS SCHEDULE SEED
script|module TARGET [ARGS...]``.

Started by :func:`tracerace.record.numba.record` with
``NUMBA_ENABLE_CUDASIM=1``. It hooks the simulator, runs the user's program
unmodified (as ``python TARGET ARGS`` or ``python -m TARGET ARGS`` would),
writes the trace, and leaves a JSON status in STATUS for the parent: events,
launches, seconds, the program's exit code, whether the trace was written,
and the trace's warnings and ``error`` (why nothing useful was recorded) or
null (see :mod:`._program`).
"""

from __future__ import annotations

import os
import sys

from ...stopping import discard_on_stop
from .._program import describe_failure, finish_recording, run_program, write_status

SIMULATOR = "numba-cuda"


def main(argv: list[str]) -> int:
    out, status_path, schedule, seed, kind, target, *args = argv
    try:
        session = _start(out, schedule, int(seed))
    except (ImportError, RuntimeError) as exc:
        write_status(status_path, error=f"cannot start the CUDA simulator: {exc}")
        return 2
    discard_on_stop(session.writer.abort)
    exit_code, failure = run_program(kind, target, args)
    if session.unrecordable is not None:
        failure = f"cannot record: {describe_failure(session.unrecordable, name=False)}"
    return finish_recording(session, out, status_path, exit_code, failure, "CUDA")


def _start(out: str, schedule: str, seed: int):
    """Import the simulator, hook it and return the recording session."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        raise RuntimeError("NUMBA_ENABLE_CUDASIM=1 is not set")
    import importlib
    from importlib.metadata import version

    importlib.import_module("numba.cuda")  # the simulator, by the variable above
    from ._hooks import install
    from ._session import Session

    session = Session(out, schedule, seed, f"{SIMULATOR} {version(SIMULATOR)}")
    install(session)
    return session


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
