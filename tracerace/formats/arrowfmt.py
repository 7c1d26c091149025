"""Arrow: the Arrow report (:mod:`tracerace.arrow_report`: one row per finding,
flat columns) to a path or a stream.

To a path: an Arrow IPC file (Feather v2, ``pyarrow.feather.read_table``);
to a stream (stdout): an IPC stream (``pyarrow.ipc.open_stream``). The check
writes the findings as the checker hands them over (:class:`FindingsWriter`),
a record batch at a time, so every finding is written without holding them
all; they come in the order found (by row within a batch of the replay; a
barrier generation left incomplete comes when its launch ends).
"""

from __future__ import annotations

from typing import IO, Any

import numpy as np
import pyarrow as pa

from ..arrow_report import Columns, schema_for
from ..meta import TraceMeta
from ..report import Report

NAME = "arrow"
BINARY = True


def write(report: Report, stream: IO[bytes]) -> None:
    """``report`` as an IPC stream."""
    table = report.to_arrow()
    with pa.ipc.new_stream(stream, table.schema) as writer:
        writer.write_table(table)


class FindingsWriter:
    """Writes findings as a check hands them over (``api.check(..., sink=...)``).

    ``out``: a binary stream; ``file`` chooses the IPC file format (a path's
    output) over the IPC stream format. The schema is written when the trace
    is opened (:meth:`open`), each batch of findings as it comes
    (:meth:`write`), and :meth:`close` ends the file or stream.
    """

    def __init__(self, out: Any, *, file: bool) -> None:
        self._out = out
        self._file = file
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
        self._writer = new(self._out, schema)

    def write(self, findings: np.ndarray, groups: np.ndarray) -> None:
        if len(findings):
            self._writer.write_batch(self._columns.batch(findings, groups))

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
