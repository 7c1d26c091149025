"""Writing traces: the v1 format from Python, for producers and for tests.

Three ways in, from small to large:

- :func:`make_table` builds an in-memory ``pyarrow.Table`` from a dict of
  columns (only the required ones are needed; ints, lists and NumPy arrays
  are accepted);
- :func:`write_table` writes such a dict, or an Arrow table, to a file;
- :class:`TraceWriter` appends events one at a time or as column arrays and
  streams them to disk in bounded memory.

Writers enforce the *types* of the format (a value must fit its column) but
not its value rules (known op codes, non-decreasing ``ts``, site indexes):
those are checked when a trace is read, and tests need to build bad traces
on purpose. Every v1 column is written with its schema type; defaults are
written as plain values, except ``site``, which is null where a row names no
site (``SITE_NONE`` in memory).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ..errors import TraceError
from .columns import out_of_range
from .coords import META_LAUNCHES, LaunchDims, launches_json, parse_launches
from .header import parse_buffer
from .meta import Buffer
from .ops import Op, Space
from .outfile import OutputFile, scratch_for
from .reader import DEFAULT_BATCH_SIZE, _open
from .schema import (
    COLUMN_BY_NAME,
    COLUMNS,
    DEFAULT_BLOCK,
    FORMAT_VERSION,
    META_BUFFERS,
    META_PRODUCER,
    META_SITES,
    META_VERSION,
    META_WARNINGS,
    REQUIRED,
    SITE_NONE,
    arrow_schema,
)

FORMATS = ("file", "stream", "parquet")
COMPRESSIONS = (None, "lz4", "zstd")


def trace_metadata(
    sites: Sequence[str] = (),
    buffers: Iterable[Buffer | Mapping] = (),
    producer: str | None = None,
    extra: Mapping[str, str] | None = None,
    warnings: Sequence[str] = (),
) -> dict[str, str]:
    """The v1 schema metadata for these sites, buffers, producer and warnings
    (``tracerace.warnings`` is written only when there are warnings), plus
    ``extra`` keys (extensions the format lets readers ignore)."""
    meta = {
        **(extra or {}),
        META_VERSION: str(FORMAT_VERSION),
        META_SITES: json.dumps(list(sites)),
        META_BUFFERS: json.dumps([b.to_json() for b in _buffers(buffers)]),
    }
    if producer is not None:
        meta[META_PRODUCER] = producer
    if warnings:
        meta[META_WARNINGS] = json.dumps(list(warnings))
    return meta


def make_table(
    columns: Mapping[str, object],
    *,
    sites: Sequence[str] = (),
    buffers: Iterable[Buffer | Mapping] = (),
    producer: str | None = None,
    warnings: Sequence[str] = (),
) -> pa.Table:
    """A v1 trace as a ``pyarrow.Table`` (every column, schema types, metadata).

    ``columns`` maps column names to sequences or scalars (scalars repeat);
    ``op`` also accepts :class:`~tracerace.trace.ops.Op` members and op names.
    Absent optional columns get their defaults. Values are not checked
    against the format's rules, so a test can build a bad trace.
    """
    cols = _columns(columns, path=None)
    return pa.Table.from_batches(
        [_record_batch(cols, arrow_schema())],
        schema=arrow_schema(trace_metadata(sites, buffers, producer, warnings=warnings)),
    )


def write_table(
    path,
    table_or_columns,
    *,
    sites: Sequence[str] = (),
    buffers: Iterable[Buffer | Mapping] = (),
    producer: str | None = None,
    warnings: Sequence[str] = (),
    compression: str | None = None,
    format: str | None = None,
    launches: Sequence[LaunchDims] = (),
) -> None:
    """Write a trace given as a dict of columns (see :func:`make_table`) or a
    ``pyarrow.Table``; ``launches`` gives launches' grid and block dimensions
    (``tracerace.launches``).

    A table's own integer types are converted to the schema's; its
    ``tracerace.*`` metadata is kept unless ``sites``/``buffers``/``producer``/
    ``warnings`` are given. A table without ``tracerace.version`` is taken to be v1.
    """
    path = os.fspath(path)
    if not isinstance(table_or_columns, pa.Table):
        table_or_columns = make_table(table_or_columns)
    table = table_or_columns
    meta = dict(table.schema.metadata or {})
    if META_VERSION.encode() not in meta:
        meta[META_VERSION.encode()] = str(FORMAT_VERSION).encode()
        table = table.replace_schema_metadata(meta)
    reader = _open(table, batch_size=DEFAULT_BATCH_SIZE, check_values=False)
    sites = tuple(sites) or reader.meta.sites
    buffers = tuple(_buffers(buffers)) or reader.meta.buffers
    producer = producer if producer is not None else reader.meta.producer
    warnings = tuple(warnings) or reader.meta.warnings
    extra = {META_LAUNCHES: launches_json(launches)} if launches else None
    write_batches(
        path,
        (batch.cols for batch in reader),
        sites=sites,
        buffers=buffers,
        producer=producer,
        extra=extra,
        warnings=warnings,
        compression=compression,
        format=format,
    )


def write_batches(
    path,
    batches: Iterable[Mapping[str, np.ndarray]],
    *,
    sites: Sequence[str] = (),
    buffers: Iterable[Buffer | Mapping] = (),
    producer: str | None = None,
    extra: Mapping[str, str] | None = None,
    warnings: Sequence[str] = (),
    compression: str | None = None,
    format: str | None = None,
) -> int:
    """Write ``batches`` (dicts of every v1 column as NumPy arrays, as a reader's
    batches hold them) to ``path`` under the metadata :func:`trace_metadata`
    makes of the rest; the rows written. ``format`` (``file``, ``stream``,
    ``parquet``) defaults to the one ``path``'s extension names. The output
    appears only once every batch is written."""
    path = os.fspath(path)
    sink = _Sink(
        path,
        _format(path, format),
        _compression(compression),
        arrow_schema(trace_metadata(sites, buffers, producer, extra=extra, warnings=warnings)),
    )
    rows = 0
    try:
        for cols in batches:
            sink.write(_record_batch(cols, sink.schema))
            rows += len(cols["op"])
    except BaseException:
        sink.abort()
        raise
    sink.close()
    return rows


class TraceWriter:
    """Append events, then :meth:`close` to write the trace.

    Sites and buffers may be registered at any time before ``close``. Arrow
    wants the schema (and so the metadata) before the first batch, so full
    batches are spilled to a temporary IPC stream next to the output; ``close``
    copies them, batch by batch, into the final file under the final metadata.
    The output appears (atomically, by rename) only when ``close`` succeeds; an
    exception inside a ``with`` block discards everything.
    """

    def __init__(
        self,
        path,
        *,
        format: str | None = None,
        compression: str | None = None,
        producer: str | None = None,
        batch_size: int = 1 << 16,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self.path = os.fspath(path)
        self.format = _format(self.path, format)
        self.compression = _compression(compression)
        self.producer = producer
        self.batch_size = batch_size
        self.sites: list[str] = []
        self.buffers: list[Buffer] = []
        self.metadata: dict[str, str] = {}
        """Further schema metadata keys (extensions); set any time before ``close``."""
        self.warnings: list[str] = []
        self.launches: list[LaunchDims] = []
        """Grid and block dimensions declared with :meth:`launch_dims`."""
        self.rows = 0
        self._site_index: dict[str, int] = {}
        self._patches: dict = {}
        """Values of rows already written, by column and row (see :meth:`set_value`)."""
        self._pending = {c.name: np.empty(batch_size, dtype=c.dtype) for c in COLUMNS}
        self._fill = 0
        self._spill: _Sink | None = None
        self._final: _Sink | None = None
        """The output's sink while :meth:`close` writes it."""
        self._closed = False

    # -- metadata --

    def site(self, text: str) -> int:
        """The index of a source site, registering it the first time it is seen."""
        if not isinstance(text, str):
            raise TypeError(f"a site is a string, not {type(text).__name__}")
        index = self._site_index.get(text)
        if index is None:
            index = self._site_index[text] = len(self.sites)
            self.sites.append(text)
        return index

    def buffer(
        self,
        name: str,
        space: int,
        base: int,
        shape: Sequence[int],
        itemsize: int,
        strides: Sequence[int] | None = None,
        launch: int | None = None,
    ) -> Buffer:
        """Declare a named tensor so reports can name its elements."""
        entry = {
            "name": name,
            "space": int(space),
            "base": base,
            "shape": list(shape),
            "itemsize": itemsize,
            "strides": None if strides is None else list(strides),
            "launch": launch,
        }
        buf = _buffer(entry, f"buffer {name!r}")
        self.buffers.append(buf)
        return buf

    def launch_dims(
        self, launch: int, grid: Sequence[int], block: Sequence[int], kernel: str | None = None
    ) -> LaunchDims:
        """Declare the grid and block dimensions (``[x, y, z]``, missing dims 1) of
        a launch, so reports name agents by CUDA coordinates (``tracerace.launches``)."""
        entry = {"launch": launch, "grid": [int(v) for v in grid], "block": [int(v) for v in block]}
        if kernel is not None:
            entry["kernel"] = kernel

        def fail(message: str, rule: str = "metadata") -> ValueError:
            return ValueError(message)

        (dims,) = parse_launches({META_LAUNCHES: json.dumps([entry])}, fail)
        self.launches = [d for d in self.launches if d.launch != launch] + [dims]
        return dims

    def warn(self, text: str) -> None:
        """Add a warning to ``tracerace.warnings`` (once per distinct text)."""
        if text not in self.warnings:
            self.warnings.append(text)

    # -- rows --

    def event(
        self, op: Op | int | str, *, ts: int, launch: int, block: int, thread: int, **columns: int
    ) -> None:
        """Append one row; optional columns not given take their defaults."""
        self._check_open()
        unknown = set(columns) - _OPTIONAL
        if unknown:
            raise TypeError(f"event() got unknown column(s): {', '.join(sorted(unknown))}")
        row = self.rows + self._fill
        values = {
            "op": _op_code(op),
            "ts": ts,
            "launch": launch,
            "block": block,
            "thread": thread,
            **columns,
        }
        i = self._fill
        for col in COLUMNS:
            if col.name in values:
                value = _scalar(col.name, values[col.name], self.path, row)
            elif col.default == DEFAULT_BLOCK:
                value = block
            else:
                value = col.default
            self._pending[col.name][i] = value
        self._fill += 1
        if self._fill == self.batch_size:
            self._flush()

    def extend(self, **arrays) -> None:
        """Append many rows given as column arrays (required columns must be given)."""
        self._check_open()
        cols = _columns(arrays, path=self.path, row0=self.rows + self._fill)
        self._flush()
        n = len(cols["ts"])
        for start in range(0, n, self.batch_size):
            part = {name: values[start : start + self.batch_size] for name, values in cols.items()}
            self._spill_batch(part)

    def set_value(self, row: int, column: str, value: int) -> None:
        """Set ``column`` of a row appended earlier (a count known only later, such
        as a barrier's arrivals). The rows need not stay in memory for it: the
        value is applied when ``close`` copies them into the output."""
        self._check_open()
        if not 0 <= row < self.rows + self._fill:
            raise ValueError(f"row {row} has not been written (rows: {self.rows + self._fill})")
        value = _scalar(column, value, self.path, row)
        if row >= self.rows:
            self._pending[column][row - self.rows] = value
        else:
            self._patches.setdefault(column, {})[row] = value

    # -- finishing --

    def close(self) -> None:
        """Write the output file; the writer cannot be used afterwards."""
        if self._closed:
            return
        self._flush()
        self._closed = True
        metadata = dict(self.metadata)
        if self.launches:
            metadata[META_LAUNCHES] = launches_json(sorted(self.launches, key=lambda d: d.launch))
        schema = arrow_schema(
            trace_metadata(self.sites, self.buffers, self.producer, metadata, self.warnings)
        )
        sink = self._final = _Sink(self.path, self.format, self.compression, schema)
        try:
            if self._spill is not None:
                spill_path = self._spill.close_temporary()
                self._spill = None
                try:
                    with pa.OSFile(spill_path, "rb") as f:
                        row0 = 0
                        for record in ipc.open_stream(f):
                            sink.write(self._patched(record, row0))
                            row0 += record.num_rows
                finally:
                    os.unlink(spill_path)
        except BaseException:
            sink.abort()
            raise
        sink.close()
        self._final = None

    def _patched(self, record: pa.RecordBatch, row0: int) -> pa.RecordBatch:
        """``record`` (rows ``row0`` on) with the values :meth:`set_value` set."""
        end = row0 + record.num_rows
        for column, values in self._patches.items():
            if not isinstance(values, tuple):  # sorted once: (rows, values) arrays
                rows = np.fromiter(sorted(values), dtype=np.int64, count=len(values))
                values = self._patches[column] = (rows, [values[r] for r in rows.tolist()])
            rows, new = values
            lo, hi = np.searchsorted(rows, [row0, end])
            if lo == hi:
                continue
            i = record.schema.get_field_index(column)
            array = record.column(i).to_numpy(zero_copy_only=False).copy()
            array[rows[lo:hi] - row0] = new[lo:hi]
            record = record.set_column(
                i, record.schema.field(i), pa.array(array, type=record.schema.field(i).type)
            )
        return record

    def abort(self) -> None:
        """Discard everything written so far; no output file is created. Also
        while :meth:`close` runs (from a signal handler): a trace not yet renamed
        into place is discarded too."""
        self._closed = True
        for sink in (self._spill, self._final):
            if sink is not None:
                sink.abort()
        self._spill = self._final = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"the TraceWriter for {self.path} is closed")

    def _flush(self) -> None:
        if self._fill:
            part = {name: values[: self._fill] for name, values in self._pending.items()}
            self._fill = 0
            self._spill_batch(part)

    def _spill_batch(self, cols: dict[str, np.ndarray]) -> None:
        if self._spill is None:
            self._spill = _Sink(
                self.path, "stream", self.compression, arrow_schema(), suffix=".spill", scratch=True
            )
        self._spill.write(_record_batch(cols, arrow_schema()))
        self.rows += len(cols["ts"])


# --- sinks -----------------------------------------------------------------------


class _Sink:
    """An Arrow IPC file/stream or Parquet writer to output ``path``, by the
    rules of :func:`tracerace.trace.outfile.destination`: a file is written beside
    ``path`` and renamed over it on :meth:`close`; a device or FIFO is written
    in place. ``scratch``: a temporary file of its own instead (beside ``path``,
    or in the temporary folder when ``path`` is a stream), for
    :meth:`close_temporary`."""

    def __init__(
        self,
        path: str,
        format: str,
        compression: str | None,
        schema: pa.Schema,
        suffix: str = ".tmp",
        scratch: bool = False,
    ) -> None:
        self.path = path
        self.schema = schema
        self._out: OutputFile | None = None
        if scratch:
            fd, self.temp = scratch_for(path, suffix)
            os.close(fd)
            where: Any = self.temp
        else:
            self._out = OutputFile(path, suffix)
            file = self._out.open()
            self.temp = self._out.temp
            if self._out.is_stream:
                where = file
            else:
                file.close()  # pyarrow writes the temporary by its name
                where = self.temp
        try:
            if format == "parquet":
                import pyarrow.parquet as pq

                self._writer = pq.ParquetWriter(where, schema, compression=compression or "none")
            else:
                options = ipc.IpcWriteOptions(compression=compression)
                new = ipc.new_file if format == "file" else ipc.new_stream
                self._writer = new(where, schema, options=options)
        except BaseException:
            self._remove()
            raise

    def write(self, record: pa.RecordBatch) -> None:
        if record.schema != self.schema:  # same columns; metadata differs
            record = pa.RecordBatch.from_arrays(record.columns, schema=self.schema)
        self._writer.write_batch(record)

    def close_temporary(self) -> str:
        self._writer.close()
        return self.temp

    def close(self) -> None:
        self._writer.close()
        if self._out is not None:
            self._out.commit()
        else:
            os.replace(self.temp, self.path)

    def abort(self) -> None:
        try:
            self._writer.close()
        except OSError:
            pass  # a stream whose reader went away; nothing more to end
        finally:
            self._remove()

    def _remove(self) -> None:
        if self._out is not None:
            self._out.discard()
        elif os.path.lexists(self.temp):
            os.unlink(self.temp)


def _format(path: str, format: str | None) -> str:
    if format is None:
        if path.endswith(".arrows"):
            return "stream"
        if path.endswith(".parquet"):
            return "parquet"
        return "file"
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    return format


def _compression(compression: str | None) -> str | None:
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression must be None, 'lz4' or 'zstd', not {compression!r}")
    return compression


# --- values ----------------------------------------------------------------------

_OPTIONAL = frozenset(c.name for c in COLUMNS if not c.required)


def _record_batch(cols: Mapping[str, np.ndarray], schema: pa.Schema) -> pa.RecordBatch:
    """Schema-typed arrays; ``SITE_NONE`` becomes null."""
    arrays = []
    for field in schema:
        values = cols[field.name]
        mask = values == SITE_NONE if field.name == "site" else None
        if mask is not None and not mask.any():
            mask = None
        arrays.append(pa.array(values, type=field.type, mask=mask))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _columns(
    columns: Mapping[str, object], *, path: str | None, row0: int = 0
) -> dict[str, np.ndarray]:
    """Full set of schema-typed column arrays from user input."""
    unknown = set(columns) - set(COLUMN_BY_NAME)
    if unknown:
        raise TypeError(f"unknown trace column(s): {', '.join(sorted(unknown))}")
    missing = [name for name in REQUIRED if name not in columns]
    if missing:
        raise TypeError(f"required trace column(s) not given: {', '.join(missing)}")
    lengths = {name: len(v) for name, v in columns.items() if np.ndim(v) > 0}
    if not lengths:
        raise ValueError("give at least one column as a sequence (all were scalars)")
    n = next(iter(lengths.values()))
    if any(length != n for length in lengths.values()):
        raise ValueError(f"columns have different lengths: {lengths}")
    cols: dict[str, np.ndarray] = {}
    for col in COLUMNS:
        if col.name in columns:
            cols[col.name] = _array(col.name, columns[col.name], n, path, row0)
    for col in COLUMNS:
        if col.name not in cols:
            cols[col.name] = (
                cols["block"].copy()
                if col.default == DEFAULT_BLOCK
                else np.full(n, col.default, dtype=col.dtype)
            )
    return cols


def _array(name: str, values, n: int, path: str | None, row0: int) -> np.ndarray:
    """One column as its schema dtype; a value that does not fit is an error."""
    col = COLUMN_BY_NAME[name]
    if np.ndim(values) == 0:
        value = _op_code(values) if name == "op" else values
        return np.full(n, _scalar(name, value, path, row0), dtype=col.dtype)
    if name == "op" and (not isinstance(values, np.ndarray) or values.dtype.kind in "UO"):
        # Names and Op members, as event() takes them, also in a NumPy array.
        values = [
            _op_code(v) for v in (values.tolist() if isinstance(values, np.ndarray) else values)
        ]
    if isinstance(values, np.ndarray) and values.dtype.kind in "iu":
        bad = out_of_range(values, col.dtype)
        if bad is not None and bad.any():
            row = int(np.argmax(bad))
            raise TraceError(
                f"{name} value {values[row]} does not fit {col.arrow_type}",
                path=path,
                row=row0 + row,
                rule="bad-value",
            )
        return np.ascontiguousarray(values, dtype=col.dtype)
    if isinstance(values, np.ndarray) and values.dtype.kind != "O":
        raise TraceError(
            f"column {name} has dtype {values.dtype}; it needs integers that fit {col.arrow_type}",
            path=path,
            rule="wrong-type",
        )
    # A Python sequence: NumPy would guess float64 for big mixed ints, so check each.
    return np.array(
        [_scalar(name, v, path, row0 + i) for i, v in enumerate(values)], dtype=col.dtype
    )


def _scalar(name: str, value, path: str | None, row: int) -> int:
    col = COLUMN_BY_NAME[name]
    if isinstance(value, np.integer):
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise TraceError(
            f"{name} value {value!r} is not an integer", path=path, row=row, rule="wrong-type"
        )
    info = np.iinfo(col.dtype)
    if not info.min <= value <= info.max:
        raise TraceError(
            f"{name} value {value} does not fit {col.arrow_type}",
            path=path,
            row=row,
            rule="bad-value",
        )
    return value


def _op_code(op) -> int:
    """An op given as an :class:`Op`, an int, or a name such as ``"bar_sync"``."""
    if isinstance(op, str):
        try:
            return int(Op[op.upper()])
        except KeyError:
            raise ValueError(f"unknown op name {op!r}") from None
    return op


def _buffer(entry: Mapping, where: str) -> Buffer:
    """A checked :class:`Buffer`; NumPy and enum integers are taken as ints."""

    def fail(message: str, rule: str = "metadata") -> ValueError:
        return ValueError(message)

    def plain(value):
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (np.integer, Space)):
            return int(value)
        return value

    clean = {
        k: plain(v) for k, v in entry.items() if v is not None or k not in ("strides", "launch")
    }
    return parse_buffer(clean, where, fail)


def _buffers(buffers: Iterable[Buffer | Mapping]) -> list[Buffer]:
    out = []
    for i, buf in enumerate(buffers):
        if isinstance(buf, Buffer):
            buf = buf.to_json()
        out.append(_buffer(dict(buf), f"buffers[{i}]"))
    return out
