"""The recorded process: ``python -m tracerace.record._numba_boot OUT STATUS SCHEDULE SEED
script|module TARGET [ARGS...]``.

Started by :func:`tracerace.record.numba_sim.record` with
``NUMBA_ENABLE_CUDASIM=1``. It hooks the simulator, runs the user's program
unmodified (as ``python TARGET ARGS`` or ``python -m TARGET ARGS`` would),
writes the trace, and leaves a JSON status in STATUS for the parent: events,
launches, seconds, the program's exit code, whether the trace was written,
the trace's warnings, and ``error`` (why nothing useful was recorded) or null.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import traceback

from ._numba_events import library_roots, shown_path

SIMULATOR = "numba-cuda"


def main(argv: list[str]) -> int:
    out, status_path, schedule, seed, kind, target, *args = argv
    try:
        session = _start(out, schedule, int(seed))
    except (ImportError, RuntimeError) as exc:
        _write_status(status_path, error=f"cannot start the CUDA simulator: {exc}")
        return 2
    exit_code, failure = _run_program(kind, target, args)
    if session.unrecordable is not None:
        failure = f"cannot record: {describe_failure(session.unrecordable, name=False)}"
    elif failure is None and session.incomplete:
        failure = "a kernel launch raised an exception (the program caught it)"
    keep = session.launches > 0 and not session.incomplete
    try:
        written = session.finish(keep)
    except OSError as exc:
        written, failure = False, failure or f"cannot write {out}: {exc.strerror or exc}"
    if failure is None and session.launches == 0:
        failure = "the program launched no CUDA kernel"
    _write_status(status_path, events=session.log.rows if written else 0,
                  launches=session.launches, seconds=session.seconds, exit_code=exit_code,
                  written=written, warnings=session.warnings if written else [],
                  error=failure)
    return exit_code


def _start(out: str, schedule: str, seed: int):
    """Import the simulator, hook it and return the recording session."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        raise RuntimeError("NUMBA_ENABLE_CUDASIM=1 is not set")
    import importlib
    from importlib.metadata import version

    importlib.import_module("numba.cuda")  # the simulator, by the variable above
    from ._numba_hooks import install
    from ._numba_session import Session

    session = Session(out, schedule, seed, f"{SIMULATOR} {version(SIMULATOR)}")
    install(session)
    return session


def _run_program(kind: str, target: str, args: list[str]) -> tuple[int, str | None]:
    """Run the program as ``python`` would; (exit code, failure or None)."""
    sys.argv = [target, *args]
    try:
        if kind == "module":
            sys.path[0] = os.getcwd()
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.abspath(target))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as exc:
        return _exit_code(exc.code), None
    except BaseException as exc:  # the program failed: say why, without a traceback
        return 1, f"the program failed: {describe_failure(exc)}"
    return 0, None


def _exit_code(code) -> int:
    """The status ``sys.exit(code)`` gives, as the interpreter computes it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def describe_failure(exc: BaseException, *, name: bool = True) -> str:
    """``ZeroDivisionError: division by zero at kernel.py:12 (in simulated ...)``;
    without ``name``, the message alone (it names its own line)."""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    first = text[0] if text else type(exc).__name__
    if not name:
        return " ".join([str(exc)] + [f"({n})" for n in getattr(exc, "__notes__", ())
                                      if isinstance(n, str)])
    notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
    where = _user_line(exc.__traceback__)
    return " ".join([first] + ([f"at {where}"] if where else []) +
                    [f"({n})" for n in notes])


def _user_line(tb) -> str | None:
    """``file:line`` of the innermost traceback entry in the user's code."""
    library, cwd = library_roots(), os.getcwd()
    found = None
    for frame, line in traceback.walk_tb(tb):
        path = shown_path(frame.f_code.co_filename, library, cwd)
        if path is not None:
            found = f"{path}:{line}"
    return found


def _write_status(path: str, **fields) -> None:
    status = {"events": 0, "launches": 0, "seconds": 0.0, "exit_code": 0, "written": False,
              "warnings": [], "error": None}
    status.update(fields)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(status, f)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
