"""Recording a Python program in a child interpreter: what every Python backend shares.

A Python backend (``numba``, ``triton``) records ``python script.py [args]`` or
``python -m module [args]`` by starting a child interpreter on a *boot module*
of its own (``python -m tracerace.record.numba._boot OUT STATUS [OPTIONS...]
script|module TARGET [ARGS...]``). The boot module hooks its simulator, runs
the program unmodified with :func:`run_program`, writes the trace and leaves a
JSON status for the parent (:func:`write_status`): events, launches, seconds,
the program's exit code, whether the trace was written, the trace's warnings,
and ``error`` (why nothing useful was recorded) or null. The parent side is
:func:`record_program`, and :class:`PythonBackend` the backend interface it
gives such a backend; the child's session extends :class:`Session`.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from time import perf_counter

from ..errors import TraceError
from ..trace.limits import JSONLimitError, load_json
from ..trace.ops import INIT, Space
from ..trace.writer import TraceWriter
from ..version import __version__
from .events import NO_SITE_WORD, SIZE_LIMIT, EventLog, pack
from .interface import Backend, output_path, require_modules
from .result import RecordResult
from .sites import library_roots, shown_path

GLOBAL = int(Space.GLOBAL)

_PYTHON = re.compile(r"python(\d+(\.\d+)*)?(\.exe)?$")


# --- the parent ------------------------------------------------------------------------


class PythonBackend(Backend):
    """A backend that records a Python program in a child interpreter started
    on its boot module (:attr:`boot`), with :attr:`env` set; :attr:`needs`
    (module -> package) must be installed, as :attr:`install_hint` says."""

    boot: str
    env: dict[str, str]
    needs: dict[str, str]
    install_hint: str

    def check_installed(self) -> None:
        require_modules(self.name, self.needs, self.install_hint)

    def record(
        self, command: list[str], out: str, *, schedule: str | None = None, seed: int = 0
    ) -> RecordResult:
        """Run the Python program ``command`` under this backend and write its trace
        to ``out``; ``schedule`` (None: the default) is drawn with ``seed``."""
        schedule = schedule or self.default_schedule
        self.check_schedule(schedule)
        return record_program(
            self.boot,
            command,
            out,
            backend=self.name,
            options=[schedule, str(seed)],
            env=self.env,
            check_installed=self.check_installed,
        )


def record_program(
    boot: str,
    command: list[str],
    out: str,
    *,
    backend: str,
    options: list[str],
    env: dict[str, str],
    check_installed: Callable[[], None],
) -> RecordResult:
    """Run the Python program ``command`` in a child on module ``boot`` and return
    what it recorded into ``out``; a failed recording raises :class:`TraceError`.
    ``check_installed`` raises when the backend's packages are missing (it runs
    once the command is known to be a Python program)."""
    kind, target, args = parse_command(command, backend)
    check_installed()
    out = output_path(out)
    with tempfile.TemporaryDirectory(prefix="tracerace-record-") as tmp:
        status_path = os.path.join(tmp, "status.json")
        child = [sys.executable, "-m", boot, out, status_path, *options, kind, target, *args]
        returncode = run_child(child, child_env(env))
        status = _read_status(status_path, returncode, target)
    if status["error"] is None and not (status["written"] and os.path.isfile(out)):
        raise TraceError(
            f"the recording's status file says the recording succeeded, and "
            f"{out} was not written: the recorded program wrote the status file "
            f"(exit status {returncode})",
            path=target,
            rule="record",
        )
    if status["error"] is not None:
        raise TraceError(_failure(status, out), path=target, rule="record")
    return RecordResult(
        out=out,
        events=status["events"],
        launches=status["launches"],
        seconds=status["seconds"],
        exit_code=status["exit_code"],
        warnings=tuple(status["warnings"]),
    )


CHILD_STOP_SECONDS = 30
"""How long a stopped recording's process may take to discard its trace."""


def run_child(argv: list[str], env: dict[str, str]) -> int:
    """Run the recording process to its end; its exit status. When this process
    is stopped (Ctrl-C, SIGTERM, SIGHUP), the child is stopped too and waited
    for, so that it discards its trace rather than outlive tracerace and write
    it later, or leave its temporary files."""
    child = subprocess.Popen(argv, env=env)
    try:
        return child.wait()
    except BaseException:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(CHILD_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        raise


def parse_command(command: list[str], backend: str) -> tuple[str, str, list[str]]:
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
        raise _usage(
            f"the {backend} backend records a Python program: give "
            "'python script.py [args]' or 'python -m module [args]' after --"
        )
    if not os.path.isfile(words[0]):
        raise TraceError("no such file", path=words[0], rule="record")
    return "script", words[0], words[1:]


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of the recorded process: ``extra`` set, and this tracerace
    importable even when it is not installed."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, **extra, PYTHONPATH=root if not path else root + os.pathsep + path)


def _is_python(word: str) -> bool:
    return bool(_PYTHON.match(os.path.basename(word))) or word == sys.executable


def _usage(message: str) -> TraceError:
    return TraceError(message, path="options", rule="usage")


STATUS_FIELDS: dict[str, type | tuple[type, ...]] = {
    "events": int,
    "launches": int,
    "seconds": (int, float),
    "exit_code": int,
    "written": bool,
    "warnings": list,
    "error": (str, type(None)),
}
"""The status file's keys and their JSON types (see :func:`write_status`)."""
MAX_STATUS_BYTES = 16 << 20
"""The largest status file read: the recorded program can write the file too."""


def _read_status(path: str, returncode: int, target: str) -> dict:
    """The child's status, validated: the recorded program runs in the child and
    can find and write the file, so it is read as untrusted input."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_STATUS_BYTES + 1)
    except OSError:
        raise TraceError(
            f"the program ended before its recording finished (exit status {returncode})",
            path=target,
            rule="record",
        ) from None
    problem = _status_problem(data)
    if problem is not None:
        raise TraceError(
            f"the recording's status file is not the one tracerace writes "
            f"({problem}); the recorded program wrote it, or ended while it was "
            f"written (exit status {returncode})",
            path=target,
            rule="record",
        )
    return json.loads(data)


def _status_problem(data: bytes) -> str | None:
    """Why ``data`` is not a status :func:`write_status` wrote, or None."""
    if len(data) > MAX_STATUS_BYTES:
        return f"larger than {MAX_STATUS_BYTES >> 20} MiB"
    # write_status nests two levels (the object, its warnings list): anything deeper is
    # not its output, and json would recurse once per bracket.
    try:
        status = load_json(data, max_depth=2)
    except JSONLimitError:
        return "nested JSON"
    except ValueError:
        return "not JSON"
    if not isinstance(status, dict):
        return "not a JSON object"
    if set(status) != set(STATUS_FIELDS):
        return "other keys than " + ", ".join(STATUS_FIELDS)
    for key, kind in STATUS_FIELDS.items():
        value = status[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return f"{key} is {type(value).__name__}"
        low = 0 if key != "exit_code" else -(1 << 31)
        if kind is int and isinstance(value, int) and not low <= value < 1 << 63:
            return f"{key} {value} is out of range"
    if not all(isinstance(w, str) for w in status["warnings"]):
        return "a warning is not text"
    return None


def _failure(status: dict, out: str) -> str:
    """The error message of a recording that failed; it says whether ``out`` was written."""
    message = status["error"]
    if status["written"]:
        launches = status["launches"]
        message += (
            f"; the trace of its {launches} completed launch"
            f"{'es' if launches != 1 else ''} was written to {out}"
        )
    return message


# --- the child -------------------------------------------------------------------------


class Session:
    """What a recording child holds for :func:`finish_recording`: the writer, the
    event log, the launches run and the seconds they took. Each Python backend's
    session extends it with its simulator's state."""

    def __init__(self, out: str, producer: str) -> None:
        self.writer = TraceWriter(out, producer=f"tracerace {__version__} record: {producer}")
        self.log = EventLog(self.writer)
        self.launches = 0
        self.seconds = 0.0
        """Time spent in launches and writing the trace (the host code excluded)."""
        self.incomplete = False
        """A launch ended in an exception: its events are partial, no trace is written."""

    @property
    def warnings(self) -> list[str]:
        """The trace's ``tracerace.warnings`` so far."""
        return self.writer.warnings

    def warn(self, text: str) -> None:
        self.writer.warn(text)

    @contextmanager
    def launch_timer(self) -> Iterator[None]:
        """Around one launch: count it and its time, and mark the recording
        incomplete when it raises."""
        start = perf_counter()
        try:
            yield
        except BaseException:
            self.incomplete = True
            raise
        finally:
            self.launches += 1
            self.seconds += perf_counter() - start

    def log_init(self, start: int, end: int) -> None:
        """Log ``init`` over the global bytes ``[start, end)`` (as many rows as one
        event's size field needs)."""
        for offset in range(start, end, SIZE_LIMIT):
            self.log.log(
                offset, pack(INIT, space=GLOBAL, size=min(SIZE_LIMIT, end - offset)) | NO_SITE_WORD
            )


def run_program(kind: str, target: str, args: list[str]) -> tuple[int, str | None]:
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
        return " ".join(
            [str(exc)] + [f"({n})" for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
        )
    notes = [n for n in getattr(exc, "__notes__", ()) if isinstance(n, str)]
    where = _user_line(exc.__traceback__)
    return " ".join([first] + ([f"at {where}"] if where else []) + [f"({n})" for n in notes])


def _user_line(tb) -> str | None:
    """``file:line`` of the innermost traceback entry in the user's code."""
    library, cwd = library_roots(), os.getcwd()
    found = None
    for frame, line in traceback.walk_tb(tb):
        path = shown_path(frame.f_code.co_filename, library, cwd)
        if path is not None:
            found = f"{path}:{line}"
    return found


def finish_recording(
    session: Session, out: str, status_path: str, exit_code: int, failure: str | None, kernels: str
) -> int:
    """Write the trace of a program that ran (or discard it) and the status:
    a launch that raised, a trace that cannot be written and a program that
    launched no ``kernels`` are failures. Returns the program's exit code."""
    if failure is None and session.incomplete:
        failure = "a kernel launch raised an exception (the program caught it)"
    keep = session.launches > 0 and not session.incomplete
    try:
        written = _finish_trace(session, keep)
    except OSError as exc:
        written, failure = False, failure or f"cannot write {out}: {exc.strerror or exc}"
    if failure is None and session.launches == 0:
        failure = f"the program launched no {kernels} kernel"
    write_status(
        status_path,
        events=session.log.rows if written else 0,
        launches=session.launches,
        seconds=session.seconds,
        exit_code=exit_code,
        written=written,
        warnings=list(session.warnings) if written else [],
        error=failure,
    )
    return exit_code


def _finish_trace(session: Session, keep: bool) -> bool:
    """Write the session's trace when ``keep`` (else discard it); True when
    written. The time it takes counts as recording time."""
    if not keep:
        session.writer.abort()
        return False
    start = perf_counter()
    session.log.flush()
    session.writer.close()
    session.seconds += perf_counter() - start
    return True


def missing_names(hooks: dict[str, tuple[str, ...]]) -> list[str]:
    """Of ``hooks`` (module -> dotted names in it a backend hooks), the
    modules that do not import and the names they lack."""
    missing = []
    for module_name, names in hooks.items():
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            missing.append(module_name)
            continue
        missing += [f"{module_name}.{name}" for name in names if not _has(module, name)]
    return missing


def _has(obj, dotted: str) -> bool:
    for part in dotted.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def write_status(path: str, **fields) -> None:
    status = {
        "events": 0,
        "launches": 0,
        "seconds": 0.0,
        "exit_code": 0,
        "written": False,
        "warnings": [],
        "error": None,
    }
    status.update(fields)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(status, f)
