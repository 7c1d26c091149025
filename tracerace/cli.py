"""Command line: parses, calls the API, formats. No logic lives here.

Each command catches :class:`~tracerace.errors.TraceError` through
:func:`_fail`, prints one line to stderr and exits 2. ``check`` runs an
:class:`~tracerace.api.Check` and hands each batch it gives to the output
(the formats that write every finding) and to the progress bar, drawn here
(rich).
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import IO, Any

import typer

from .errors import TraceError

PROGRESS_MIN_ROWS = 2_000_000
"""Below this many rows a check takes a second or two: no bar unless asked for."""

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="tracerace: race detection on recorded GPU/accelerator traces.",
)


def _version(value: bool) -> None:
    if value:
        from .version import tool_version

        _echo(f"tracerace {tool_version()}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print tracerace's version and exit.",
    ),
) -> None:
    """tracerace: race detection on recorded GPU/accelerator traces."""


def _echo(text: str) -> None:
    """Print ``text`` on stdout; a reader that has gone (``| head``) is its
    choice: the rest is dropped quietly and the command ends as it would have."""
    try:
        typer.echo(text)
    except BrokenPipeError:
        _quiet_stdout()


def _quiet_stdout() -> None:
    """Point stdout at the null device: its reader has gone, and what is still
    buffered (flushed when Python exits) must not raise again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):
        return  # not a real stream (a test's): nothing is flushed to a descriptor
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def _fail(err: Exception) -> typer.Exit:
    """Print a user error on one line and return the exit-2 signal to raise."""
    _say(f"tracerace: error: {err}")
    return typer.Exit(2)


def _say(line: str) -> None:
    """A line on stderr, trace text in it shown escaped (:func:`~tracerace.shown.shown`)."""
    from .shown import shown

    typer.echo(shown(line), err=True)


@app.command()
def check(
    traces: list[str] = typer.Argument(
        ...,
        metavar="TRACE...",
        help="Trace files (.arrow, .arrows, .parquet) or "
        "directories of them; - reads an Arrow IPC stream "
        "from stdin.",
    ),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json, sarif, arrow or html."),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Write the report here instead of stdout (see docs/security.md).",
    ),
    engine: str = typer.Option("numba", "--engine", help="numba (fast) or reference."),
    max_reports: str | None = typer.Option(
        None,
        "--max-reports",
        help="Show at most N groups (default 100; 0 or 'all': every group). Counts stay whole.",
    ),
    select: list[str] | None = typer.Option(
        None, "--select", help="Only these hazard kinds (comma-separated)."
    ),
    ignore: list[str] | None = typer.Option(
        None, "--ignore", help="Drop these hazard kinds (comma-separated)."
    ),
    progress: bool | None = typer.Option(
        None,
        "--progress/--no-progress",
        help="Progress bar on stderr (default: large traces on a terminal).",
    ),
    source_root: list[str] | None = typer.Option(
        None,
        "--source-root",
        help="Directory whose files the HTML report may show source "
        "lines from and SARIF may name (repeatable; default: "
        "none, no source file is read).",
    ),
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        min=1,
        help="Threads to check on (default: the cores this "
        "process may use; one for a small trace).",
    ),
    dask: str | None = typer.Option(
        None,
        "--dask",
        metavar="SCHEDULER_ADDRESS",
        help="Check on this Dask cluster (pip install "
        "'tracerace[dask]'); every worker reads the traces.",
    ),
    dask_timeout: float | None = typer.Option(
        None,
        "--dask-timeout",
        metavar="SECONDS",
        help="How long --dask waits for its scheduler to answer (default: 20).",
    ),
) -> None:
    """Check traces for races and synchronization hazards.

    Several traces (or a directory of them) are checked at once: one report
    per trace, then a summary table. Exit 1 when a hazard is an error, 0
    otherwise, 2 on bad input (the worst over the traces).
    """
    from . import api
    from .checker.options import DEFAULT_MAX_REPORTS
    from .report import output as outputs

    if max_reports is None:
        max_reports = DEFAULT_MAX_REPORTS
    try:
        paths = trace_files(traces)
    except TraceError as err:
        raise _fail(err) from None
    if len(paths) != 1 or dask is not None or os.path.isdir(traces[0]):
        from .api.many import check_several

        code = check_several(
            paths,
            fmt=fmt,
            output=output,
            engine=engine,
            max_reports=max_reports,
            select=select,
            ignore=ignore,
            progress=progress,
            source_root=source_root or (),
            jobs=jobs,
            dask=dask,
            dask_timeout=dask_timeout,
            bar=ProgressBar,
            say=_say,
            echo=_echo,
        )
        raise typer.Exit(code)
    trace = paths[0]
    try:
        with outputs.Output(fmt, output, inputs=[trace], source_roots=source_root or ()) as out:
            options = api.make_options(
                engine=engine, max_reports=max_reports, select=select, ignore=ignore
            )
            with api.Check(trace, options, jobs=jobs) as run, ProgressBar(progress) as bar:
                for batch in run:
                    bar.update(batch.rows_done, batch.total_rows)
                    out.take(batch)
                report = run.report()
            for warning in report.meta.warnings:
                _say(f"tracerace: warning: {report.meta.path or trace}: {warning}")
            out.write(report)
    except TraceError as err:
        raise _fail(err) from None
    if out.reader_gone:
        _quiet_stdout()
    if output is not None:
        typer.echo(report.summary_line(), err=True)
    raise typer.Exit(report.exit_code)


TRACE_SUFFIXES = (".arrow", ".arrows", ".parquet")
"""The files ``check`` takes from a directory it is given."""


def trace_files(args: list[str]) -> list[str]:
    """The traces ``check`` was given: each file as named, each directory's
    trace files (by suffix, at any depth, in name order)."""
    out: list[str] = []
    for arg in args:
        if arg != "-" and os.path.isdir(arg):
            found = sorted(
                os.path.join(root, name)
                for root, _, names in os.walk(arg)
                for name in names
                if name.endswith(TRACE_SUFFIXES)
            )
            if not found:
                raise TraceError(
                    f"no trace files ({', '.join(TRACE_SUFFIXES)}) in this directory",
                    path=arg,
                    rule="usage",
                )
            out.extend(found)
        else:
            out.append(arg)
    return out


@app.command("validate")
def validate_command(
    trace: str = typer.Argument(
        ..., help="Trace file: .arrow, .arrows or .parquet; - reads an Arrow IPC stream from stdin."
    ),
) -> None:
    """Check that TRACE follows the trace format (exit 0: it does, 2: it does not):
    every rule `check` enforces, including those the replay finds."""
    from .api import validate
    from .shown import shown

    try:
        meta = validate(trace)
    except TraceError as err:
        raise _fail(err) from None
    _echo(
        f"{shown(meta.path or trace)}: OK: trace format v{meta.version}, "
        f"{meta.num_rows:,} events, {len(meta.sites)} sites, {len(meta.buffers)} buffers"
    )


@app.command("info")
def info_command(
    trace: str = typer.Argument(
        ..., help="Trace file: .arrow, .arrows or .parquet; - reads an Arrow IPC stream from stdin."
    ),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> None:
    """Summarise TRACE: events, launches, agents, ops, memory touched, metadata."""
    from .trace.info import format_json, format_text, trace_info

    formats = {"text": format_text, "json": format_json}
    if fmt not in formats:
        raise _fail(ValueError(f"unknown --format {fmt!r} (choose text or json)"))
    try:
        summary = trace_info(trace)
    except TraceError as err:
        raise _fail(err) from None
    _echo(formats[fmt](summary))


@app.command("demo")
def demo_command(
    name: str | None = typer.Argument(None, help="Scenario name (see --list)."),
    list_: bool = typer.Option(False, "--list", help="List the scenarios and exit."),
    fixed: bool = typer.Option(False, "--fixed", help="Trace the fixed program, not the bug."),
    scale: int = typer.Option(
        1, "--scale", min=1, help="Size: a few thousand events at 1, linear in N."
    ),
    seed: int = typer.Option(0, "--seed", help="Picks the details of the schedule."),
    out: str | None = typer.Option(
        None, "--out", "-o", help="Trace path (default NAME.arrow or NAME-fixed.arrow)."
    ),
    engine: str = typer.Option("numba", "--engine", help="numba (fast) or reference."),
) -> None:
    """Write the trace of one of the incidents tracerace exists for, then check it.

    Exit 1 when a hazard is an error, 0 otherwise, 2 on bad input.
    """
    from . import api, scenarios
    from .report.output import Output

    if list_:
        _echo("\n".join(f"{s.name:<10} {s.title}" for s in scenarios.SCENARIOS.values()))
        return
    try:
        if name is None:
            raise TraceError(
                "name a scenario (tracerace demo --list shows them)", path="options", rule="usage"
            )
        scenario = scenarios.get(name)
        path = scenario.write(out, fixed=fixed, scale=scale, seed=seed)
        typer.echo(
            f"wrote {path}: {scenario.name}, "
            f"{'the fixed program' if fixed else 'the buggy schedule'}",
            err=True,
        )
        report = api.check(path, engine=engine)
        with Output("text") as out:
            out.write(report)
    except TraceError as err:
        raise _fail(err) from None
    if out.reader_gone:
        _quiet_stdout()
    raise typer.Exit(report.exit_code)


@app.command("convert")
def convert_command(
    src: str = typer.Argument(
        ...,
        help="Input: .std, .arrow, .arrows, .parquet, or a trace "
        "recorded on a GPU (see --from); - reads an Arrow "
        "IPC stream from stdin.",
    ),
    dst: str = typer.Argument(..., help="Output: .std, .arrow, .arrows or .parquet."),
    compression: str | None = typer.Option(
        None,
        "--compression",
        help="lz4, zstd or none (Arrow and Parquet outputs; "
        "default: the input's LZ4 or ZSTD, else lz4).",
    ),
    fmt: str | None = typer.Option(
        None,
        "--from",
        help="GPU trace format of SRC: accelsim (.trace, .traceg, "
        "kernelslist[.g], plain or .xz), tracez (Accel-Sim "
        "2.0 .tracez), cutracer (.ndjson, "
        ".ndjson.zst) or memtrace (NVBit mem_trace output); "
        "detected when not given.",
    ),
    shared_window: str | None = typer.Option(
        None,
        "--shared-window",
        help="BASE[:SIZE] of the generic shared-memory window (GPU traces that do not record it).",
    ),
    local_window: str | None = typer.Option(
        None, "--local-window", help="BASE[:SIZE] of the generic local-memory window."
    ),
    generic_global: bool = typer.Option(
        False,
        "--generic-global",
        help="Read generic addresses as global when the trace gives no windows.",
    ),
) -> None:
    """Convert a trace; formats by extension. STD text (T0|w(V12)|34 lines) imports
    to and exports from trace format v1 (see tracerace.convert for the mapping);
    traces recorded on a GPU by Accel-Sim's tracer, CUTracer or NVBit's mem_trace
    import to v1 (see tracerace.convert.gpu).

    Exit 0 when converted, 2 on bad input, an instruction the import cannot
    follow, or a trace with no STD equivalent.
    """
    from .convert import convert

    try:
        result = convert(
            src,
            dst,
            compression=compression,
            fmt=fmt,
            shared_window=shared_window,
            local_window=local_window,
            generic_global=generic_global,
        )
    except TraceError as err:
        raise _fail(err) from None
    _say(result.summary_line())
    for note in result.notes:
        _say(f"note: {note}")


@app.command("record", context_settings={"ignore_unknown_options": True})
def record_command(
    command: list[str] = typer.Argument(..., help="The program to run, after --."),
    out: str = typer.Option(..., "--output", "-o", help="Trace path to write."),
    backend: str = typer.Option(
        "numba",
        "--backend",
        help="numba (CUDA simulator), oclgrind (OpenCL), triton "
        "(Triton's interpreter) or cuda (an NVIDIA GPU).",
    ),
    schedule: str | None = typer.Option(
        None,
        "--schedule",
        help="round-robin (numba's default), serial or "
        "random; triton has serial and random, oclgrind and "
        "cuda serial only.",
    ),
    seed: int = typer.Option(0, "--seed", help="Seed of the random schedule."),
) -> None:
    """Run a program under a simulator (or on a GPU) and write a v1 trace of its kernels.

    Exit 0 when recorded, 2 on bad usage or when the program cannot be recorded.
    """
    from .record import record

    try:
        result = record(list(command), out, backend=backend, schedule=schedule, seed=seed)
    except TraceError as err:
        raise _fail(err) from None
    _say(result.summary_line())
    for warning in result.warnings:
        _say(f"tracerace: warning: {warning}")
    if result.exit_code:
        typer.echo(
            f"note: the recorded program exited with status {result.exit_code}; "
            "its trace is complete up to then",
            err=True,
        )


def show_progress(asked: bool | None, terminal: bool, total_rows: int | None) -> bool:
    """Whether ``check`` draws a bar: as asked (``--progress/--no-progress``), else
    when stderr is a terminal and the trace is large or of unknown length."""
    if asked is not None:
        return asked
    return terminal and (total_rows is None or total_rows > PROGRESS_MIN_ROWS)


def _count(n: float) -> str:
    """``12.3M``: a count in three digits, so the progress line keeps its width."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= 0.9995 * scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:.0f}"


class ProgressBar:
    """Progress of a check on stderr (rich): rows done / total and events per second.

    ``with ProgressBar(asked) as bar:``, then ``bar.update(rows_done,
    total_rows)`` for each batch of an :class:`~tracerace.api.Check` (or
    ``api.check(..., progress=bar.update)``): the first update (rows done 0,
    the trace's rows) decides, by :func:`show_progress`, whether progress is
    shown. On a terminal it is a bar
    on one line that fits the terminal's width (the counts in three digits, the
    bar taking what is left; a total of None, a stream of unknown length,
    draws a pulsing bar). Elsewhere (a CI log, a file) it is a plain line every
    ``interval`` seconds and one when the check ends.
    """

    def __init__(
        self,
        asked: bool | None,
        stream: IO[str] | None = None,
        interval: float = 5.0,
        width: int | None = None,
    ) -> None:
        self.asked = asked
        self.stream = sys.stderr if stream is None else stream
        self.interval = interval
        self.width = width
        """Columns of the terminal (None: rich asks the terminal)."""
        self.shown: bool | None = None
        """None until the first update, then whether progress is shown."""
        self._progress: Any = None
        self._task: Any = None
        self._console: Any = None
        self._total: int | None = None
        self._rows = 0
        self._started = self._said = 0.0

    def __enter__(self) -> ProgressBar:
        return self

    def update(self, rows_done: int, total_rows: int | None) -> None:
        if self.shown is None:
            from .report.formats.text import is_terminal

            terminal = is_terminal(self.stream)
            self.shown = show_progress(self.asked, terminal, total_rows)
            if self.shown:
                self._start(total_rows, terminal)
        if not self.shown:
            return
        self._rows = rows_done
        if self._progress is not None:
            self._progress.update(self._task, completed=rows_done, refresh=True)
            return
        now = time.monotonic()
        if rows_done and now - self._said >= self.interval:
            self._said = now
            self._say("checking")

    def _start(self, total_rows: int | None, terminal: bool) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
        from rich.table import Column
        from rich.text import Text

        self._total = total_rows
        self._started = self._said = time.monotonic()
        self._console = Console(file=self.stream, highlight=False, width=self.width)
        if not terminal:
            return

        class Rows(ProgressColumn):
            def render(self, task: Any) -> Text:
                of = f"/{_count(task.total)}" if task.total is not None else ""
                return Text(f"{_count(task.completed)}{of} rows")

        class Speed(ProgressColumn):
            def render(self, task: Any) -> Text:
                speed = task.finished_speed or task.speed
                return Text("" if speed is None else f"{_count(speed)} events/s")

        # Every column but the bar keeps its words on one line; the bar takes the
        # width that is left, so the whole fits the terminal and never wraps.
        fixed = Column(no_wrap=True)
        self._progress = Progress(
            TextColumn("checking", table_column=fixed),
            BarColumn(bar_width=None),
            Rows(table_column=fixed),
            Speed(table_column=fixed),
            TimeElapsedColumn(),
            console=self._console,
            transient=True,
            expand=True,
        )
        self._task = self._progress.add_task("check", total=total_rows)
        self._progress.start()

    def _say(self, what: str) -> None:
        """A plain progress line: ``checking: 1.2M/2M rows (60%), 1.1M events/s, 1.1 s``."""
        seconds = time.monotonic() - self._started
        rows = f"{_count(self._rows)} rows"
        if self._total is not None:
            rows = f"{_count(self._rows)}/{_count(self._total)} rows"
            if self._total:
                rows += f" ({self._rows / self._total:.0%})"
        speed = f", {_count(self._rows / seconds)} events/s" if seconds > 0 else ""
        self._console.print(f"{what}: {rows}{speed}, {seconds:.1f} s", soft_wrap=True)

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
        elif self.shown and exc_type is None:
            self._say("checked")


def _flush_stdout() -> None:
    """Flush what is still buffered while a closed pipe can be caught (quietly)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()


def main() -> None:
    from .allocator import one_malloc_arena
    from .stopping import Stopped, end_by, raise_on_stop

    one_malloc_arena()
    raise_on_stop()
    try:
        _run_app()
    except Stopped as stop:
        end_by(stop.signum)


INTERNAL_TRACEBACK_ENV = "TRACERACE_TRACEBACK"
"""Set (to anything) to see the traceback of an internal error."""


def _run_app(command: Any = None, args: list[str] | None = None) -> None:
    """Run ``command`` (the ``tracerace`` app unless given) on ``args`` (the
    process's unless given) and turn what it
    raises into an exit status: 2 for bad input, a closed pipe or memory, and
    for an internal error too, so that a crash is never read as a verdict
    (0: clean, 1: errors found)."""
    try:
        (app if command is None else command)(args=args, standalone_mode=True)
    except SystemExit:
        _flush_stdout()
        raise
    except TraceError as err:  # a command that forgot to catch it
        _say(f"tracerace: error: {err}")
        sys.exit(2)
    except MemoryError:  # outside a check (the API turns its own into a TraceError)
        typer.echo("tracerace: error: out-of-memory: not enough memory to finish", err=True)
        sys.exit(2)
    except BrokenPipeError:
        # The reader of stdout went away (``| head``): stop quietly, as
        # command-line tools do. Point stdout at devnull so the interpreter's
        # final flush does not raise again.
        _quiet_stdout()
        sys.exit(1)
    except Exception as err:  # a bug in tracerace, not in the trace
        if os.environ.get(INTERNAL_TRACEBACK_ENV):
            traceback.print_exc()
        _say(
            f"tracerace: internal error: {type(err).__name__}: {err} (a bug in tracerace, "
            f"not a verdict about the trace; {INTERNAL_TRACEBACK_ENV}=1 shows the traceback)"
        )
        sys.exit(2)
