"""A trace's rows looked up by number: what a report says of an earlier access.

The engine keeps of each access it remembers what replay alone knows (its
agent, epoch, bytes, row and the thread's barrier position); the rest of
what a finding says of the earlier access (its address, size, ts and site)
is in the trace, at the row the finding names. :class:`RowFields` gives
those columns for any rows already read, as the reader converted them
(defaults filled in), so a report is the same as if the engine had kept
them:

- the batches the reader handed out last are looked at first, and the
  source's record batches they are slices of, while the check still holds
  them (a race's two accesses are usually close): they are held by weak
  references, so that no batch lives longer for it;
- a source that can be read at any record batch (an Arrow IPC file, a
  table) is read again there, only the columns needed;
- any other source (an IPC stream, a pipe, Parquet, a ``RecordBatchReader``)
  is read once, so the reader spools these columns of every row to a
  temporary file as it goes (:meth:`RowFields.keep`, 32 bytes a row, on disk,
  deleted when the reader closes).

A trace is read again only at rows it had already given, and every value
looked up was checked then, so nothing here can fail on the trace's
content.
"""

from __future__ import annotations

import collections
import tempfile
import threading
import weakref
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from .columns import convert_columns

FIELDS = ("addr", "addr2", "size", "ts", "site")
"""The columns a report of an earlier access reads."""

SPOOL_DTYPE = np.dtype(
    [("addr", "<u8"), ("addr2", "<u8"), ("ts", "<u8"), ("size", "<u4"), ("site", "<u4")]
)
"""A spooled row (32 bytes)."""

RECENT_BATCHES = 6
"""Batches handed out last that are looked at before the source, while they
live: the reader runs a few batches ahead of the replay (read-ahead, shards'
queues)."""


class RowFields:
    """The :data:`FIELDS` of a trace's rows, by row number (see the module).

    ``read_raw(k)``: the source's record batch ``k`` (from 0, as the reader
    met them), for a source that can be read at any record batch; None for
    one read once. ``in_memory``: keep every batch noted instead, for batches
    replayed without a reader (tests). Thread-safe: a sharded check's shards
    look up rows while the reader's thread reads on."""

    def __init__(
        self, read_raw: Callable[[int], pa.RecordBatch] | None, *, in_memory: bool = False
    ) -> None:
        self._read_raw = read_raw
        self._starts = array("q")  # first row of each record batch of the source
        self._in_memory = in_memory
        self._recent: collections.deque = collections.deque(
            maxlen=None if in_memory else RECENT_BATCHES
        )
        self._spool: Any = None
        self._spooled = 0
        self._keep = in_memory
        self._lock = threading.Lock()

    # -- the reader's side

    def keep(self) -> None:
        """Look-ups will come: a source read once is spooled from now on.
        Called before the reader is iterated."""
        self._keep = True

    def raw_batch(self, index: int, row0: int) -> None:
        """The source's record batch ``index`` starts at row ``row0``."""
        with self._lock:
            if index == 0:  # the source is read again from its start
                del self._starts[:]
            if index == len(self._starts):
                self._starts.append(row0)

    def note(self, batch: Any) -> None:
        """The reader hands out ``batch`` (a ``reader.Batch``; one noted
        again, as the two views of a state replay it, is noted once)."""
        if not self._keep:
            return
        row0 = batch.row0
        with self._lock:
            if self._recent and self._recent[-1][0] == row0:
                return
            if row0 == 0:  # read again from the start
                self._recent.clear()
            self._recent.append((row0, batch if self._in_memory else weakref.ref(batch)))
            if self._read_raw is None and not self._in_memory:
                self._append_spool(row0, batch.cols)

    def close(self) -> None:
        with self._lock:
            self._recent.clear()
            if self._spool is not None:
                self._spool.close()
                self._spool = None

    # -- the checker's side

    def take(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The :data:`FIELDS` of ``rows`` (int64, each already handed out),
        as int64 arrays in the order of ``rows``."""
        out = {name: np.zeros(rows.shape[0], dtype=np.int64) for name in FIELDS}
        if rows.shape[0] == 0:
            return out
        with self._lock:
            missing = np.ones(rows.shape[0], dtype=bool)
            sources = {}
            for row0, held in self._recent:
                batch = held if self._in_memory else held()
                if batch is None:  # freed
                    continue
                here = missing & (rows >= row0) & (rows < row0 + batch.n)
                if here.any():
                    _fill(out, here, batch.cols, rows[here] - row0)
                    missing &= ~here
                if batch.source is not None:
                    sources[batch.source_row0] = batch.source
            for row0, record in sources.items():  # the input records cut into them
                here = missing & (rows >= row0) & (rows < row0 + record.num_rows)
                if here.any():
                    _fill_from(out, here, record, rows[here] - row0)
                    missing &= ~here
            if missing.any():
                if self._read_raw is not None:
                    self._from_source(out, missing, rows)
                else:
                    self._from_spool(out, missing, rows)
        return out

    # -- sources read again

    def _from_source(self, out: dict, missing: np.ndarray, rows: np.ndarray) -> None:
        starts = np.frombuffer(self._starts, dtype=np.int64)
        # The record batch of each row (rows were handed out: each is in one).
        which = np.searchsorted(starts, rows, side="right") - 1
        assert self._read_raw is not None
        for k in np.unique(which[missing]):
            here = missing & (which == k)
            _fill_from(out, here, self._read_raw(int(k)), rows[here] - starts[k])

    # -- sources read once

    def _append_spool(self, row0: int, cols: dict[str, np.ndarray]) -> None:
        if row0 == 0 and self._spool is not None:
            self._spool.close()
            self._spool, self._spooled = None, 0
        if self._spool is None:
            self._spool = tempfile.TemporaryFile(prefix="tracerace-rows-")
        n = cols["addr"].shape[0]
        rec = np.empty(n, dtype=SPOOL_DTYPE)
        for name in FIELDS:
            rec[name] = cols[name]
        self._spool.seek(self._spooled * SPOOL_DTYPE.itemsize)
        rec.tofile(self._spool)
        self._spooled += n

    def _from_spool(self, out: dict, missing: np.ndarray, rows: np.ndarray) -> None:
        self._spool.flush()
        spooled = np.memmap(self._spool, dtype=SPOOL_DTYPE, mode="r", shape=(self._spooled,))
        try:
            got = spooled[rows[missing]]
        finally:
            del spooled  # unmapped: its pages count no longer
        for name in FIELDS:
            out[name][missing] = got[name]


def _fill(out: dict, mask: np.ndarray, cols: dict[str, np.ndarray], at: np.ndarray) -> None:
    for name in FIELDS:
        out[name][mask] = cols[name][at]


def _fill_from(out: dict, mask: np.ndarray, record: pa.RecordBatch, at: np.ndarray) -> None:
    """``_fill`` from rows ``at`` of an input record batch, only those rows
    converted."""
    _fill(out, mask, convert_columns(record.take(pa.array(at)), FIELDS), np.arange(at.shape[0]))
