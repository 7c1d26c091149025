"""The recorded process: ``python -m tracerace.record.triton._boot OUT STATUS
SCHEDULE SEED script|module TARGET [ARGS...]``.

Started by :func:`tracerace.record.triton.record` with
``TRITON_INTERPRET=1``. It hooks the interpreter, follows the program's torch
operations (:class:`~._host.HostMemory`), runs the program unmodified
(as ``python TARGET ARGS`` or ``python -m TARGET ARGS`` would), writes the
trace, and leaves a JSON status in STATUS for the parent (see :mod:`._program`).
"""

from __future__ import annotations

import os
import sys

from ...stopping import discard_on_stop
from .._program import finish_recording, run_program, write_status

INTERPRETER = "triton"


def main(argv: list[str]) -> int:
    out, status_path, schedule, seed, kind, target, *args = argv
    try:
        session = _start(out, schedule, int(seed))
    except Exception as exc:  # noqa: BLE001 (any reason the interpreter cannot start)
        write_status(status_path, error=f"cannot start the Triton interpreter: {exc}")
        return 2
    discard_on_stop(session.writer.abort)
    with session.host:
        exit_code, failure = run_program(kind, target, args)
    if session.failure is not None:  # the recorder's reason, not the program's symptom
        failure = f"cannot record the program: {session.failure}"
    elif session.launch_error is not None:  # named at the kernel's line, not the host's
        caught = " (the program caught it)" if failure is None else ""
        failure = f"{session.launch_error}{caught}"
    return finish_recording(session, out, status_path, exit_code, failure, "Triton")


def _start(out: str, schedule: str, seed: int):
    """Import the interpreter, hook it and return the recording session."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("TRITON_INTERPRET=1 is not set")
    from importlib.metadata import version

    from ._hooks import install
    from ._host import follow_exports
    from ._sched import Schedule
    from ._session import Session

    session = Session(out, f"{INTERPRETER} {version(INTERPRETER)}", Schedule(schedule, seed))
    install(session)
    follow_exports(session.host)
    return session


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
