"""Output formats: each a module behind one interface, laying out the report's
model (:class:`~tracerace.report.model.ReportModel`) itself.

A format module has ``NAME``, ``BINARY`` (writes bytes, not text) and
``write(report, stream)``; one that names source files (HTML, SARIF) has
``TAKES_SOURCE_ROOTS`` and takes ``source_roots=`` (:mod:`tracerace.report.sources`)
in ``write`` and its writer; a format that takes every finding as the check
finds them has a ``FindingsWriter`` too (Arrow writes them; HTML counts them
for its heatmaps and writes the page when the report is done); one whose
lines carry roles to colour on a terminal has ``STYLED`` and ``blocks(report)``
(text). Where a report goes (files, streams, colour on a terminal) is
:mod:`tracerace.report.output`'s.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import IO, Any

from ...errors import TraceError
from . import arrowfmt, html, jsonfmt, sarif, text

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (text, jsonfmt, sarif, arrowfmt, html)}


def get(name: str) -> ModuleType:
    """The format module called ``name``; an unknown name is a usage error."""
    try:
        return FORMATS[name]
    except KeyError:
        raise TraceError(
            f"unknown format {name!r} (known: {', '.join(FORMATS)})", path="options", rule="usage"
        ) from None


def resolve(fmt: str, out: str | os.PathLike[str] | IO[Any] | None = None) -> ModuleType:
    """The format module for writing ``fmt`` to ``out``, checked before any work:
    an unknown name, or binary output to a terminal, is a usage error."""
    module = get(fmt)
    stream = sys.stdout if out is None else out
    if module.BINARY and not isinstance(stream, (str, os.PathLike)) and text.is_terminal(stream):
        raise TraceError(
            f"the {fmt} format is binary: give an output file or redirect stdout",
            path="options",
            rule="usage",
        )
    return module
