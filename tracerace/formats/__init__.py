"""Output formats: each a module behind one interface.

A format module has ``NAME``, ``BINARY`` (writes bytes, not text) and
``write(report, stream)``; one that names source files (HTML, SARIF) has
``TAKES_SOURCE_ROOTS`` and takes ``source_roots=`` (:mod:`tracerace.sources`)
in ``write`` and its writer; a format that takes every finding as the check
finds them has a ``FindingsWriter`` too (Arrow writes them; HTML counts them
for its heatmaps and writes the page when the report is done). :class:`Output` opens files
(atomically, never over an input), picks text or byte streams and turns I/O
failures into :class:`~tracerace.errors.TraceError`; :func:`render` writes a
finished report through it.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable
from types import ModuleType
from typing import IO, Any

from ..errors import TraceError
from ..outfile import create_beside, io_error, refuse_inputs
from ..report import Report
from ..sources import SourceRoots
from . import arrowfmt, html, jsonfmt, sarif, text

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (text, jsonfmt, sarif, arrowfmt, html)}


def get(name: str) -> ModuleType:
    """The format module called ``name``; an unknown name is a usage error."""
    try:
        return FORMATS[name]
    except KeyError:
        raise TraceError(f"unknown format {name!r} (known: {', '.join(FORMATS)})",
                         path="options", rule="usage") from None


def resolve(fmt: str, out: str | os.PathLike[str] | IO[Any] | None = None) -> ModuleType:
    """The format module for writing ``fmt`` to ``out``, checked before any work:
    an unknown name, or binary output to a terminal, is a usage error."""
    module = get(fmt)
    stream = sys.stdout if out is None else out
    if module.BINARY and not isinstance(stream, (str, os.PathLike)) and text.is_terminal(stream):
        raise TraceError(f"the {fmt} format is binary: give an output file or redirect stdout",
                         path="options", rule="usage")
    return module


def render(report: Report, fmt: str, out: str | os.PathLike[str] | IO[Any] | None = None, *,
           source_roots: SourceRoots | Iterable[str | os.PathLike[str]] = ()) -> None:
    """Write ``report`` as ``fmt`` to a path, an open stream, or stdout (None).
    ``source_roots``: the directories the formats that name source files
    (HTML, SARIF) may resolve sites in (:mod:`tracerace.sources`); none: no
    source file is read and no site becomes a file location."""
    with Output(fmt, out, source_roots=source_roots) as output:
        output.write(report)


class Output:
    """Where a check's report goes, opened before the check runs.

    ``out``: a path, an open stream, or None (stdout). A path is written to a
    new file beside it (the user's umask sets its mode), renamed over it when
    the ``with`` block ends without an error and removed otherwise, so a
    failed check leaves nothing behind and an existing file is replaced only
    by a complete report. ``inputs``: paths the output must not be (a usage
    error). ``source_roots``: where the formats that name source files (HTML,
    SARIF, those with ``TAKES_SOURCE_ROOTS``) may resolve sites; a root that
    is not a directory is a usage error, raised here. Formats that write
    every finding (Arrow) take them as the check finds them, through
    :attr:`sink`; the others write :meth:`write`'s report.
    """

    def __init__(self, fmt: str, out: str | os.PathLike[str] | IO[Any] | None = None, *,
                 inputs: tuple[str | os.PathLike[str], ...] | list = (),
                 source_roots: SourceRoots | Iterable[str | os.PathLike[str]] = ()) -> None:
        self.module = resolve(fmt, out)
        roots = SourceRoots.of(source_roots)
        self._options = {"source_roots": roots} if getattr(
            self.module, "TAKES_SOURCE_ROOTS", False) else {}
        self.path = os.fspath(out) if isinstance(out, (str, os.PathLike)) else None
        self._stream = sys.stdout if out is None else out
        if self.path is not None:
            refuse_inputs(self.path, [os.fspath(p) for p in inputs])
        self._temp: str | None = None
        self._file: IO[Any] | None = None
        self.sink = None
        """A findings sink for ``api.check(..., sink=...)``, or None."""

    def __enter__(self) -> "Output":
        if self.path is not None:
            try:
                fd, self._temp = create_beside(self.path)
            except OSError as err:
                raise io_error(err, self.path) from None
            self._file = os.fdopen(fd, "w+b")  # readable: a format may finish in place
            stream: IO[Any] = self._file
        else:
            stream = self._binary_stream() if self.module.BINARY else self._stream
        self._target = stream
        writer = getattr(self.module, "FindingsWriter", None)
        if writer is not None:
            self.sink = _Sink(writer(stream, file=self.path is not None, **self._options),
                              self.path or "<stdout>")
        return self

    def _binary_stream(self) -> IO[bytes]:
        out = self._stream
        if isinstance(out, io.TextIOBase) or hasattr(out, "buffer"):
            out.flush()
            return out.buffer
        return out

    def write(self, report: Report) -> None:
        """Finish the output with ``report`` (the streamed formats: end the stream)."""
        try:
            if self.sink is not None and self.sink.opened:
                self.sink.close(report)
            elif self.sink is not None:  # the check did not stream: write what the report kept
                self.sink.open(report.meta, report.events)
                self.sink.write(report.findings, report.group_of())
                self.sink.close(report, exact=report.keeps_every_finding)
            elif self.module.BINARY:
                self.module.write(report, self._target, **self._options)
            else:
                self._write_text(report)
            self._target.flush()
        except OSError as err:
            raise io_error(err, self.path) from None

    def _write_text(self, report: Report) -> None:
        out = self._target
        if self._file is not None or isinstance(out, (io.RawIOBase, io.BufferedIOBase)):
            wrapper = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
            self.module.write(report, wrapper, **self._options)
            wrapper.flush()
            wrapper.detach()
        else:
            self.module.write(report, out, **self._options)

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._file is None:
            return
        done = False
        try:
            self._file.close()
            if exc_type is None:
                os.replace(self._temp, self.path)
                done = True
        except OSError as err:
            if exc_type is None:
                raise io_error(err, self.path) from None
        finally:
            if not done and os.path.exists(self._temp):
                os.unlink(self._temp)


class _Sink:
    """A format's findings writer whose I/O failures name the output, not the trace."""

    def __init__(self, writer: Any, where: str) -> None:
        self._writer = writer
        self._where = where

    @property
    def opened(self) -> bool:
        return self._writer.opened

    def _guard(self, method: str, *args: Any) -> None:
        try:
            getattr(self._writer, method)(*args)
        except OSError as err:
            raise io_error(err, self._where) from None

    def open(self, *args: Any) -> None:
        self._guard("open", *args)

    def write(self, findings: Any, groups: Any) -> None:
        self._guard("write", findings, groups)

    def close(self, report: Report | None = None, exact: bool = True) -> None:
        """End the output; a writer that ``takes_report`` (HTML) writes the page
        of ``report`` now (``exact``: it saw every finding)."""
        if getattr(self._writer, "takes_report", False):
            self._guard("close", report, exact)
        else:
            self._guard("close")
