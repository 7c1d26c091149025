"""Where a report goes: :class:`Output` opens an output by
:func:`tracerace.trace.outfile.destination`'s rules (files atomically, never
over an input; devices, FIFOs and descriptors as streams), hands a check's
findings to the formats that write every one, picks text or byte streams,
colours a styled format's lines on a terminal (rich) and turns I/O failures
into :class:`~tracerace.errors.TraceError` (a closed pipe into
:attr:`Output.reader_gone`); :func:`render` writes a finished report through it.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol

import numpy as np

from ..trace.meta import TraceMeta
from ..trace.outfile import OutputFile, io_error, refuse_inputs
from .formats import resolve
from .formats.text import Line, is_terminal
from .model import ReportModel
from .sources import SourceRoots

if TYPE_CHECKING:
    from rich.text import Text

STYLES = {
    "error": "bold red",
    "warning": "bold yellow",
    "clean": "bold green",
    "kind": "bold",
    "site": "cyan",
    "label": "dim",
    "note": "dim",
}
"""The rich style of each role a span of a styled format's lines has
(:data:`~tracerace.report.formats.text.Line`)."""


class FindingBatch(Protocol):
    """Findings of a trace as a check hands them over (a
    :class:`~tracerace.api.Batch`): in canonical order, with their group ids."""

    meta: TraceMeta
    findings: np.ndarray
    groups: np.ndarray


def render(
    report: ReportModel,
    fmt: str,
    out: str | os.PathLike[str] | IO[Any] | None = None,
    *,
    source_roots: SourceRoots | Iterable[str | os.PathLike[str]] = (),
) -> None:
    """Write ``report`` as ``fmt`` to a path, an open stream, or stdout (None).
    ``source_roots``: the directories the formats that name source files
    (HTML, SARIF) may resolve sites in (:mod:`tracerace.report.sources`); none: no
    source file is read and no site becomes a file location."""
    with Output(fmt, out, source_roots=source_roots) as output:
        output.write(report)


class Output:
    """Where a check's report goes, opened before the check runs.

    ``out``: a path, an open stream, or None (stdout). A path follows the
    rules of :func:`tracerace.trace.outfile.destination`: a file is written to a new
    file beside it (the user's umask sets its mode), renamed over it when the
    ``with`` block ends without an error and removed otherwise, so a failed
    check leaves nothing behind and an existing file is replaced only by a
    complete report; a device, FIFO or descriptor (``-``, ``/dev/stdout``) is
    written as a stream. ``inputs``: paths the output must not be (a usage
    error). ``source_roots``: where the formats that name source files (HTML,
    SARIF, those with ``TAKES_SOURCE_ROOTS``) may resolve sites; a root that
    is not a directory is a usage error, raised here. Formats that write
    every finding (Arrow) take them as the check finds them, through
    :attr:`sink`; the others write :meth:`write`'s report.

    A stream whose reader has gone (a closed pipe: ``| head``) ends the
    writing, not the check: later writes are dropped and :attr:`reader_gone`
    is True, so the caller can finish and report the check's own result.
    """

    def __init__(
        self,
        fmt: str,
        out: str | os.PathLike[str] | IO[Any] | None = None,
        *,
        inputs: tuple[str | os.PathLike[str], ...] | list = (),
        source_roots: SourceRoots | Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        self.module = resolve(fmt, out)
        roots = SourceRoots.of(source_roots)
        self._options = (
            {"source_roots": roots} if getattr(self.module, "TAKES_SOURCE_ROOTS", False) else {}
        )
        self.path = os.fspath(out) if isinstance(out, (str, os.PathLike)) else None
        self._stream = sys.stdout if out is None else out
        self._file: OutputFile | None = None
        if self.path is not None:
            refuse_inputs(self.path, [os.fspath(p) for p in inputs])
            self._file = OutputFile(self.path)
            if self._file.is_stream and self.module.BINARY and self._file.dest.fd is not None:
                resolve(fmt, _Descriptor(self._file.dest.fd))
        self.reader_gone = False
        """True once a write found the stream's reader gone (a closed pipe)."""
        self.sink = None
        """The format's findings sink (``api.check(..., sink=...)``), or None."""

    def __enter__(self) -> Output:
        if self._file is not None:
            try:
                stream: IO[Any] = self._file.open()
            except OSError as err:
                raise io_error(err, self.path) from None
        else:
            stream = self._binary_stream() if self.module.BINARY else self._stream
        self._target = stream
        writer = getattr(self.module, "FindingsWriter", None)
        if writer is not None:
            seekable = self._file is not None and not self._file.is_stream
            self.sink = _Sink(
                writer(stream, file=seekable, **self._options), self.path or "<stdout>", self
            )
        return self

    def take(self, batch: FindingBatch) -> None:
        """A batch of a check's findings (:class:`~tracerace.api.Check`) for a
        format that writes every finding (:attr:`sink`; the others keep none):
        the first batch opens its output."""
        if self.sink is None:
            return
        if not self.sink.opened:
            self.sink.open(batch.meta)
        self.sink.write(batch.findings, batch.groups)

    def _binary_stream(self) -> IO[bytes]:
        out = self._stream
        if isinstance(out, io.TextIOBase) or hasattr(out, "buffer"):
            out.flush()
            return out.buffer
        return out

    def write(self, report: ReportModel) -> None:
        """Finish the output with ``report`` (the streamed formats: end the stream)."""
        if self.reader_gone:
            return
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
            if not self.reader_gone:
                self._target.flush()
        except OSError as err:
            self.failed(err)

    def failed(self, err: OSError) -> None:
        """An I/O error while writing: a gone reader ends the writing quietly
        (:attr:`reader_gone`); anything else is a one-line ``io`` error."""
        if isinstance(err, BrokenPipeError) and (self._file is None or self._file.is_stream):
            self.reader_gone = True
            return
        raise io_error(err, self.path) from None

    def _write_text(self, report: ReportModel) -> None:
        out = self._target
        if self._file is not None or isinstance(out, (io.RawIOBase, io.BufferedIOBase)):
            wrapper = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
            try:
                self._write_to(report, wrapper)
                wrapper.flush()
            finally:
                wrapper.detach()
        else:
            self._write_to(report, out)

    def _write_to(self, report: ReportModel, stream: IO[str]) -> None:
        """A text format's layout, coloured when it is styled and ``stream`` a terminal."""
        if getattr(self.module, "STYLED", False) and is_terminal(stream):
            paint(self.module.blocks(report), stream)
        else:
            self.module.write(report, stream, **self._options)

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._file is None:
            return
        if exc_type is not None:
            self._file.discard()
            return
        try:
            self._file.commit()
        except BrokenPipeError as err:  # the last bytes met a closed pipe
            self._file.discard()
            self.failed(err)
        except OSError as err:
            self._file.discard()
            raise io_error(err, self.path) from None


class _Descriptor:
    """An open descriptor seen as a stream, to ask whether it is a terminal."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)


class _Sink:
    """A format's findings writer whose I/O failures name the output, not the trace."""

    def __init__(self, writer: Any, where: str, output: Output) -> None:
        self._writer = writer
        self._where = where
        self._output = output

    @property
    def opened(self) -> bool:
        return self._writer.opened

    def _guard(self, method: str, *args: Any) -> None:
        if self._output.reader_gone:
            return
        try:
            getattr(self._writer, method)(*args)
        except OSError as err:
            self._output.failed(err)

    def open(self, *args: Any) -> None:
        self._guard("open", *args)

    def write(self, findings: Any, groups: Any) -> None:
        self._guard("write", findings, groups)

    def close(self, report: ReportModel | None = None, exact: bool = True) -> None:
        """End the output; a writer that ``takes_report`` (HTML) writes the page
        of ``report`` now (``exact``: it saw every finding)."""
        if getattr(self._writer, "takes_report", False):
            self._guard("close", report, exact)
        else:
            self._guard("close")


def paint(blocks: Iterator[list[Line]], stream: IO[str]) -> None:
    """Lines of (text, role) spans on a terminal, each role in its colour (:data:`STYLES`)."""
    from rich.console import Console

    console = Console(file=stream, highlight=False, soft_wrap=True)
    for lines in blocks:
        for line in lines:
            console.print(styled(line))


def styled(line: Line) -> Text:
    """A line of (text, role) spans, coloured."""
    from rich.text import Text

    return Text.assemble(*((text, STYLES.get(role, "") if role else None) for text, role in line))
