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


def main() -> None:
    try:
        app(standalone_mode=True)
    except TraceError as err:  # a command that forgot to catch it
        typer.echo(f"tracerace: error: {err}", err=True)
        sys.exit(2)
