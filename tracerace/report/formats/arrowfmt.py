"""Arrow: the Arrow report (:mod:`tracerace.report.arrow_report`: one row per finding,
flat columns) to a path or a stream.

To a path: an Arrow IPC file (Feather v2, ``pyarrow.feather.read_table``);
to a stream (stdout): an IPC stream (``pyarrow.ipc.open_stream``). The check
writes the findings as the checker hands them over (:class:`FindingsWriter`),
a record batch at a time, so every finding is written without holding them
all; they come in the order found (by row within a batch of the replay; a
barrier generation left incomplete comes when its launch ends).

A group's link to a crossed wait (the ``linked_*`` columns) may only be known
after its findings were written: the crossing shows once the wait has been fed
by both protocols, which can be after the race. So the batches are written
with those columns null, and when the finished report has links they are read
back and written again with them; so are the hints of the groups whose fix
is an atomic update, known only when every group is
(:attr:`~tracerace.report.model.ReportModel.updates`). A path's file is read back in place; a
stream that cannot be read back (stdout) gets the batches through a temporary
file, copied to it when the check ends.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from typing import IO, Any

import numpy as np
import pyarrow as pa

from ...trace.meta import TraceMeta
from ..arrow_report import WRITE_OPTIONS, Columns, link_columns, report_table, schema_for
from ..hazards import Link
from ..hints import Hint
from ..model import ReportModel

NAME = "arrow"
BINARY = True

COPY_CHUNK = 1 << 20


def write(report: ReportModel, stream: IO[bytes]) -> None:
    """``report`` as an IPC stream."""
    table = to_arrow(report)
    with pa.ipc.new_stream(stream, table.schema, options=WRITE_OPTIONS) as writer:
        writer.write_table(table)


def to_arrow(report: ReportModel) -> pa.Table:
    """One row per finding the report keeps (not grouped), flat columns
    (:mod:`tracerace.report.arrow_report`)."""
    return report_table(
        report.meta,
        report.findings,
        report.group_of(),
        report.events,
        report.links,
        report.update_hints,
    )


class FindingsWriter:
    """Writes findings as a check hands them over (``api.check(..., sink=...)``).

    ``out``: a binary stream; ``file`` chooses the IPC file format (a path's
    output) over the IPC stream format. The schema is written when the trace
    is opened (:meth:`open`), each batch of findings as it comes
    (:meth:`write`), and :meth:`close` with the finished report ends the file
    or stream, with the groups' links (see the module doc).
    """

    takes_report = True

    def __init__(self, out: Any, *, file: bool) -> None:
        self._out = out
        self._file = file
        self._target = out if _rereadable(out) else tempfile.TemporaryFile()
        """Where the batches go first: ``out``, or a temporary file when ``out``
        cannot be read back."""
        self._writer: Any = None
        self._columns: Columns | None = None

    @property
    def opened(self) -> bool:
        return self._columns is not None

    def open(self, meta: TraceMeta, events: int | None = None) -> None:
        """Start the output; ``events`` (default: the trace's rows, when known)
        goes into the schema metadata."""
        self._columns = Columns(meta)
        schema = schema_for(meta, meta.num_rows if events is None else events)
        new = pa.ipc.new_file if self._file else pa.ipc.new_stream
        self._writer = new(self._target, schema, options=WRITE_OPTIONS)

    def write(self, findings: np.ndarray, groups: np.ndarray) -> None:
        if len(findings):
            self._writer.write_batch(self._columns.batch(findings, groups))

    def close(self, report: ReportModel | None = None, exact: bool = True) -> None:
        """End the output: with ``report``'s links (None: the check failed, and
        ``out`` is left as it is)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if report is None:
            return
        links, updates = report.links, report.update_hints
        again = bool(links or updates)
        if self._target is self._out:
            if again:
                with tempfile.TemporaryFile() as scratch:
                    self._relink(self._out, scratch, links, updates)
                    self._out.seek(0)
                    self._out.truncate()
                    scratch.seek(0)
                    shutil.copyfileobj(scratch, self._out, COPY_CHUNK)
            return
        with self._target:
            if again:
                self._relink(self._target, self._out, links, updates)
            else:
                self._target.seek(0)
                shutil.copyfileobj(self._target, self._out, COPY_CHUNK)

    def _relink(
        self, src: Any, dst: Any, links: Mapping[int, Link], updates: Mapping[int, Hint]
    ) -> None:
        """The IPC file or stream written to ``src``, with the ``linked_*`` columns
        of ``links`` and the hints of the ``updates`` groups, to ``dst``, a batch
        at a time."""
        src.seek(0)
        if self._file:
            reader = pa.ipc.open_file(src)
            batches = (reader.get_batch(i) for i in range(reader.num_record_batches))
            new = pa.ipc.new_file
        else:
            reader = pa.ipc.open_stream(src)
            batches = iter(reader)
            new = pa.ipc.new_stream
        schema = reader.schema
        names = [f.name for f in schema]
        start, hint_at = names.index("linked_row"), names.index("hint")
        columns_of = Columns(self._columns.meta)  # fresh dictionaries for the hints
        with new(dst, schema, options=WRITE_OPTIONS) as writer:
            for batch in batches:
                groups = batch.column(names.index("group")).to_numpy(zero_copy_only=False)
                columns = batch.columns[:start] + link_columns(groups, links)
                if updates:
                    columns[hint_at : hint_at + 2] = columns_of.rehint(batch, updates)
                writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=schema))


def _rereadable(out: Any) -> bool:
    """Whether what is written to ``out`` can be read back from its start."""
    try:
        return bool(out.readable() and out.seekable())
    except (AttributeError, ValueError, OSError):
        return False
