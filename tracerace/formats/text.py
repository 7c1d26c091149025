"""Text for people: one block per group, errors first, then a summary line.

Colour (rich) only when the stream is a terminal; plain text otherwise, so a
file or a pipe gets exactly the same words without escape codes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from rich.text import Text

from ..report import Access, HazardGroup, Report

NAME = "text"
BINARY = False

MAX_LOCATIONS = 6
"""Distinct elements / byte ranges listed per group before the count of all of them."""

WIDTH = 100
"""Long field values (why, hint, bytes) are wrapped to this many columns."""

_INDENT = 11
"""Columns before a field's value (two spaces and the label)."""

_SEVERITY_STYLE = {"error": "bold red", "warning": "bold yellow"}
NO_SITE = "<no site>"


Line = list[tuple[str, "str | None"]]
"""A line as (text, rich style) spans: plain output joins the texts."""


def write(report: Report, stream: IO[str]) -> None:
    """Group by group, as each is worded (a long report starts at once)."""
    if is_terminal(stream):
        from rich.console import Console

        console = Console(file=stream, highlight=False, soft_wrap=True)
        for lines in blocks(report):
            for line in lines:
                console.print(Text.assemble(*line))
    else:  # no rich objects: a hundred groups of six lines cost ~7 ms through them
        for lines in blocks(report):
            stream.write("".join("".join(text for text, _ in line) + "\n" for line in lines))


def render_lines(report: Report) -> list[Text]:
    return [Text.assemble(*line) for lines in blocks(report) for line in lines]


def blocks(report: Report) -> Iterator[list[Line]]:
    """The lines of each shown group, then the closing lines."""
    for group in report.shown_groups:
        lines = group_lines(group)
        linked = group.linked
        if linked is not None:
            lines += _field("linked", linked["text"])
            lines += _field("fix", linked["hint"]["text"])
        lines.append([])
        yield lines
    end = []
    if report.legend is not None:
        end += _field("agents", report.legend[len("agents are "):], "dim")
    omitted = report.omitted_line()
    if omitted:
        end.append([(omitted, "dim")])
    style = "bold red" if report.errors else ("bold yellow" if report.warnings else "bold green")
    end.append([(report.summary_line(), style)])
    yield end


def group_lines(group: HazardGroup) -> list[Line]:
    ex = group.example
    head: Line = [(group.severity, _SEVERITY_STYLE[group.severity]), (" ", None),
                  (group.kind, "bold"),
                  (f": {group.count:,} hazard{'' if group.count == 1 else 's'}", None)]
    if ex.first is not None and (group.first_site or group.second_site):
        head += [(" between ", None), (group.first_site or NO_SITE, "cyan"), (" and ", None),
                 (group.second_site or NO_SITE, "cyan")]
    elif group.second_site:
        head += [(" at ", None), (group.second_site, "cyan")]
    lines = [head]
    if ex.first is not None:
        lines += _field("earlier", access_text(ex.first))
        lines += _field("later", access_text(ex.second))
    else:
        lines += _field("access", access_text(ex.second))
    if ex.location is not None:
        lines += _field("bytes", locations_text(group))
    lines += _field("why", ex.explanation)
    fix = group.hint
    if fix is not None:
        lines += _field("fix", fix.text)
    return lines


def access_text(a: Access) -> str:
    """``write by (0,5) in launch 0, row 17, ts 120, at kernel.cu:10 st.shared``
    (``block (0,0,0) thread (5,0,0)`` when the trace gives the launch's dimensions)."""
    op = f"{a.op} (async copy)" if a.is_async else a.op
    site = f", at {a.site}" if a.site else ""
    return f"{op} by {a.name or a.agent} in launch {a.launch}, row {a.row:,}, ts {a.ts}{site}"


def locations_text(group: HazardGroup) -> str:
    """``out[0, 1:3], out[2, 0]`` (adjacent byte ranges merged); past ``MAX_LOCATIONS``: ``..., ... (4,096 byte ranges in
    all)``; when the report kept only the group's first members and they do not
    cover its bytes: ``..., ... (all within out[0, 0]..out[63, 63])``."""
    head = group.locations_head(MAX_LOCATIONS)
    shown = ", ".join(head)
    ranges = group.byte_ranges
    if ranges is not None:
        if len(group.locations) > len(head):
            return f"{shown}, ... ({ranges:,} byte ranges in all)"
        return shown
    span = group.span
    if span is None or head == (span,):
        return shown
    return f"{shown}, ... (all within {span})"


def _field(label: str, value: str, style: str | None = None) -> list[Line]:
    """``  label:   value``, the value wrapped to :data:`WIDTH` columns under itself."""
    pieces = _wrap(value, WIDTH - _INDENT)
    lines: list[Line] = [[("  ", None), (f"{label + ':':9}", "dim"), (pieces[0], style)]]
    lines += [[(" " * _INDENT, None), (piece, style)] for piece in pieces[1:]]
    return lines


def _wrap(value: str, width: int) -> list[str]:
    """``value`` in lines of at most ``width`` characters, broken at spaces (a word
    longer than a line gets a line of its own). What ``textwrap.wrap`` does for
    this text, at a fraction of its cost: most values fit on one line."""
    if len(value) <= width:
        return [value]
    lines: list[str] = []
    line = ""
    for word in value.split(" "):
        if not word:
            continue
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return lines


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (False for files, pipes, closed or fake streams)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
