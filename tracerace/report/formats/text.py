"""Text for people: the report's text (:meth:`~tracerace.report.model.Report.text_blocks`:
one block per group, errors first, then a summary line), written as it is
worded, so a long report starts at once.

Colour (rich) only when the stream is a terminal; plain text otherwise, so a
file or a pipe gets exactly the same words without escape codes.
"""

from __future__ import annotations

from typing import IO

from rich.text import Text

from ..model import Line, Report

NAME = "text"
BINARY = False

STYLES = {"error": "bold red", "warning": "bold yellow", "clean": "bold green",
          "kind": "bold", "site": "cyan", "label": "dim", "note": "dim"}
"""The rich style of each role a span of the report's text has (:data:`~tracerace.report.model.Line`)."""


def write(report: Report, stream: IO[str]) -> None:
    """Group by group, as each is worded."""
    if is_terminal(stream):
        from rich.console import Console

        console = Console(file=stream, highlight=False, soft_wrap=True)
        for lines in report.text_blocks():
            for line in lines:
                console.print(styled(line))
    else:  # no rich objects: a hundred groups of six lines cost ~7 ms through them
        for lines in report.text_blocks():
            stream.write("".join("".join(text for text, _ in line) + "\n" for line in lines))


def styled(line: Line) -> Text:
    """A line of the report's text, coloured."""
    return Text.assemble(*((text, STYLES.get(role, "") if role else None)
                           for text, role in line))


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (False for files, pipes, closed or fake streams)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
