"""Command line: parses, calls the API, formats. No logic lives here.

Each command catches :class:`~tracerace.errors.TraceError` through
:func:`_fail`, prints one line to stderr and exits 2.
"""

from __future__ import annotations

import sys

import typer

from .errors import TraceError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="tracerace: race detection on recorded GPU/accelerator traces.")


def _fail(err: Exception) -> "typer.Exit":
    """Print a user error on one line and return the exit-2 signal to raise."""
    typer.echo(f"tracerace: error: {err}", err=True)
    return typer.Exit(2)


@app.command()
def check(
    trace: str = typer.Argument(..., help="Trace file: .arrow, .arrows or .parquet."),
    fmt: str = typer.Option("text", "--format", "-f", help="text, json, sarif or arrow."),
    output: str | None = typer.Option(None, "--output", "-o",
                                      help="Write the report here instead of stdout."),
    engine: str = typer.Option("numba", "--engine", help="numba (fast) or reference."),
    max_reports: int | None = typer.Option(None, "--max-reports",
                                           help="Show at most N groups (counts stay whole)."),
    select: list[str] | None = typer.Option(None, "--select",
                                            help="Only these hazard kinds (comma-separated)."),
    ignore: list[str] | None = typer.Option(None, "--ignore",
                                            help="Drop these hazard kinds (comma-separated)."),
    progress: bool | None = typer.Option(None, "--progress/--no-progress",
                                         help="Progress bar on stderr (default: large traces "
                                              "on a terminal)."),
) -> None:
    """Check a trace for races and synchronization hazards.

    Exit 1 when a hazard is an error, 0 otherwise, 2 on bad input.
    """
    from . import api, formats

    try:
        formats.resolve(fmt, output)
        report = api.check(trace, engine=engine, max_reports=max_reports, select=select,
                           ignore=ignore, progress=progress)
        formats.render(report, fmt, output)
    except TraceError as err:
        raise _fail(err) from None
    if output is not None:
        typer.echo(report.summary_line(), err=True)
    raise typer.Exit(report.exit_code)


@app.command("validate")
def validate_command(
    trace: str = typer.Argument(..., help="Trace file: .arrow, .arrows or .parquet."),
) -> None:
    """Check that TRACE follows the trace format (exit 0: it does, 2: it does not)."""
    from .reader import validate_trace

    try:
        meta = validate_trace(trace)
    except TraceError as err:
        raise _fail(err) from None
    typer.echo(f"{trace}: OK: trace format v{meta.version}, {meta.num_rows:,} events, "
               f"{len(meta.sites)} sites, {len(meta.buffers)} buffers")


@app.command("info")
def info_command(
    trace: str = typer.Argument(..., help="Trace file: .arrow, .arrows or .parquet."),
    fmt: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> None:
    """Summarise TRACE: events, launches, agents, ops, memory touched, metadata."""
    from .info import format_json, format_text, trace_info

    formats = {"text": format_text, "json": format_json}
    if fmt not in formats:
        raise _fail(ValueError(f"unknown --format {fmt!r} (choose text or json)"))
    try:
        summary = trace_info(trace)
    except TraceError as err:
        raise _fail(err) from None
    typer.echo(formats[fmt](summary))


def main() -> None:
    try:
        app(standalone_mode=True)
    except TraceError as err:  # a command that forgot to catch it
        typer.echo(f"tracerace: error: {err}", err=True)
        sys.exit(2)
