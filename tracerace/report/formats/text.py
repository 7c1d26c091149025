"""Text for people: one block per shown group, errors first, then the closing
lines (the agents' legend, what ``max_reports`` left out, the summary line),
written as each group is worded, so a long report starts at once.

The layout is lines of (text, role) spans (:data:`Line`), the trace's text in
them shown escaped (:func:`~tracerace.shown.shown`). :func:`write` writes them
plain; on a terminal the output (:mod:`tracerace.report.output`) colours them
by their roles (the format is :data:`STYLED`), so a file or a pipe gets
exactly the same words without escape codes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

from ...shown import shown
from ..model import HazardGroup, ReportModel

NAME = "text"
BINARY = False
STYLED = True
"""Its lines carry roles (:data:`Line`), which a terminal shows in colour."""

Line = list[tuple[str, "str | None"]]
"""A line of the text report as (text, role) spans; plain text joins the texts. A
role says what a span is (``error``, ``warning``, ``clean``, ``kind``, ``site``,
``label``, ``note``) for an output that colours it; None: plain."""

WIDTH = 100
"""Long field values (why, hint, bytes) are wrapped to this many columns."""

_INDENT = 11
"""Columns before a field's value (two spaces and the label)."""

NO_SITE = "<no site>"


def write(report: ReportModel, stream: IO[str]) -> None:
    """Group by group, as each is worded (plain strings: rich objects would cost
    time per line and style nothing in a file or a pipe)."""
    for lines in blocks(report):
        stream.write("".join("".join(text for text, _ in line) + "\n" for line in lines))


def to_text(report: ReportModel) -> str:
    """The text report, as ``tracerace check`` writes it to a file."""
    return "".join(
        "".join(text for text, _ in line) + "\n" for lines in blocks(report) for line in lines
    )


def blocks(report: ReportModel) -> Iterator[list[Line]]:
    """The text report: the lines of each shown group (:func:`group_lines`) and a
    blank line, then the closing lines (legend, what ``max_reports`` left out,
    the summary)."""
    for group in report.shown_groups:
        yield _shown_lines(group_lines(group)) + [[]]
    end = []
    if report.legend is not None:
        end += field_lines("agents", report.legend[len("agents are ") :], "note")
    omitted = report.omitted_line()
    if omitted:
        end.append([(omitted, "note")])
    role = "error" if report.errors else ("warning" if report.warnings else "clean")
    end.append([(report.summary_line(), role)])
    yield _shown_lines(end)


def group_lines(group: HazardGroup) -> list[Line]:
    """A group in the text report: the headline, the accesses, the bytes, why,
    the fix, and the link to a crossed wait with its fix."""
    ex = group.example
    head: Line = [
        (group.severity, group.severity),
        (" ", None),
        (group.kind, "kind"),
        (f": {group.count:,} hazard{'' if group.count == 1 else 's'}", None),
    ]
    if ex.first is not None and (group.first_site or group.second_site):
        head += [
            (" between ", None),
            (group.first_site or NO_SITE, "site"),
            (" and ", None),
            (group.second_site or NO_SITE, "site"),
        ]
    elif group.second_site:
        head += [(" at ", None), (group.second_site, "site")]
    lines = [head]
    if ex.first is not None:
        lines += field_lines("earlier", ex.first.text)
        lines += field_lines("later", ex.second.text)
    else:
        lines += field_lines("access", ex.second.text)
    if ex.location is not None:
        lines += field_lines("bytes", group.bytes_text())
    lines += field_lines("why", ex.explanation)
    if group.hint is not None:
        lines += field_lines("fix", group.hint.text)
    if group.linked is not None:
        lines += field_lines("linked", group.linked.text)
        lines += field_lines("fix", group.linked.hint.text)
    return lines


def field_lines(label: str, value: str, role: str | None = None) -> list[Line]:
    """``  label:   value``, the value wrapped to :data:`WIDTH` columns under itself."""
    pieces = _wrap(value, WIDTH - _INDENT)
    lines: list[Line] = [[("  ", None), (f"{label + ':':9}", "label"), (pieces[0], role)]]
    lines += [[(" " * _INDENT, None), (piece, role)] for piece in pieces[1:]]
    return lines


def is_terminal(stream: object) -> bool:
    """Whether ``stream`` is a terminal (False for files, pipes, closed or fake streams)."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


def _shown_lines(lines: list[Line]) -> list[Line]:
    """``lines`` with the trace's text in them (sites, names) shown escaped: a site
    holding a terminal escape or a newline cannot act on the terminal or forge a
    line of the report (:func:`~tracerace.shown.shown`)."""
    return [[(shown(text), role) for text, role in line] for line in lines]


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
