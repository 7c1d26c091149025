"""Reading traces: any v1 container in, fixed-size batches of NumPy columns out.

Everything downstream (checkers, ``info``) sees one shape of data: a
:class:`Batch` holding every v1 column as a contiguous, read-only NumPy array
of the schema dtype, defaults already filled in. The differences between
containers (IPC file, IPC stream, Parquet, in-memory Arrow), between the
integer types producers chose, and between their record-batch sizes end here.

The reader is also the format's gatekeeper. Each batch is checked with NumPy
before it is handed out, so a trace that breaks the format raises
:class:`~tracerace.errors.TraceError` naming the first offending row instead
of reaching a checker. Checks are of the format only (types, codes, ranges,
ordering of ``ts``); whether the events make sense together is the checkers'
business. The rules live in :mod:`tracerace.trace.header` (schema and metadata,
checked on opening) and :mod:`tracerace.trace.columns` (values, checked per batch).

Memory is bounded by ``batch_size``, not by the file: batches are produced one
at a time, and pages of a memory-mapped file are handed back to the kernel
before a new batch once ``RELEASE_ROWS`` rows have been read since the last
time (see :class:`_MappedFile`).
"""

from __future__ import annotations

import contextlib
import io
import mmap
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from ..errors import TraceError
from .columns import (
    ADDRESS_END,
    ENUM_LIMITS,
    EXTENSION_OP_MIN,
    RowChecks,
    convert_record,
    out_of_range,
)
from .header import OLDEST_VERSION, check_schema, one_line, parse_buffer, parse_metadata
from .meta import TraceMeta
from .rows import FIELDS as ROW_FIELDS
from .rows import RowFields
from .schema import COLUMN_BY_NAME

__all__ = [
    "ADDRESS_END",
    "DEFAULT_BATCH_SIZE",
    "ENUM_LIMITS",
    "EXTENSION_OP_MIN",
    "OLDEST_VERSION",
    "STDIN",
    "Batch",
    "TraceReader",
    "check_schema",
    "decode_pool",
    "glue_limit",
    "open_trace",
    "out_of_range",
    "parse_buffer",
    "parse_metadata",
    "reads_once",
    "validate_trace",
]

# Rows per batch. Everything a check holds per batch scales with it: the
# batch's columns, the one read ahead, and the findings of a batch, which
# are handed on only at its end (a trace of uninitialized reads makes one
# ~135-byte record per row, three batches' worth in flight). 2^17 rows
# checked as fast as 2^20 on every benchmark workload, with 70-300 MiB less
# peak memory (bench/README.md, "Batch size").
DEFAULT_BATCH_SIZE = 1 << 17
# Rows between two calls of a reader's ``before_batch`` (a mapped file's
# ``release``): dropping a mapping's pages makes the batches in flight fault
# theirs in again, which at every batch of 2^17 rows cost the tiled 10^8
# check a third of its speed.
RELEASE_ROWS = 1 << 20

IPC_FILE_MAGIC = b"ARROW1"
PARQUET_MAGIC = b"PAR1"

# pyarrow signals damaged input with these; they become ``not-arrow`` (but
# not its MemoryError, which is also an ArrowException: the check is out of memory).
_ARROW_FAILURES = (pa.ArrowException, OSError, ValueError, EOFError)


@dataclass
class Batch:
    """Rows ``row0 .. row0 + n - 1`` of a trace, one NumPy array per v1 column.

    Arrays are contiguous, have the schema dtype, and are read-only (they may
    be views into a memory-mapped file); copy one before changing it.
    """

    row0: int
    n: int
    cols: dict[str, np.ndarray]
    derived: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """Values computed from the columns, kept by name (:meth:`once`)."""
    source: pa.RecordBatch | None = field(default=None, repr=False, compare=False)
    """The input record batch these rows are a slice of (None: glued from
    several), from row ``source_row0``: its other rows are looked up there
    while the batch lives (:mod:`.rows`). Where the columns are views of the
    record's buffers (the schema's types) it costs no memory of its own;
    where they were converted, it keeps the record alive as long as the
    batch."""
    source_row0: int = 0

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name]

    def once(self, name: str, compute: Callable[[dict[str, np.ndarray]], Any]) -> Any:
        """``compute(cols)``, computed once per batch: the shards of a check
        share one batch (``checker.parallel.SharedReader``), and what each
        would compute from its columns alike is computed by the first. The
        value is shared: a caller copies it before changing it."""
        value = self.derived.get(name)
        if value is None:
            value = self.derived[name] = compute(self.cols)
        return value

    def __len__(self) -> int:
        return self.n


def open_trace(source, *, batch_size: int = DEFAULT_BATCH_SIZE) -> TraceReader:
    """Open a trace for streaming.

    ``source`` is a path (Arrow IPC file or stream, or Parquet; the container
    is recognised from its first bytes, not its name; ``-`` is standard input,
    and it, a FIFO or a device is read once, as an IPC stream or the bytes of
    an IPC file), a ``pyarrow.Table``, a
    ``pyarrow.RecordBatchReader`` or a ``pyarrow.RecordBatch``. The schema and
    metadata are checked now; rows are checked as the reader is iterated.
    """
    return _open(source, batch_size=batch_size, check_values=True)


def validate_trace(source, *, batch_size: int = DEFAULT_BATCH_SIZE) -> TraceMeta:
    """Read a whole trace, checking every row against the reader's rules; return
    its metadata with ``num_rows``. The rules only a replay can check are not
    among them: ``tracerace.api.validate`` checks those too."""
    with open_trace(source, batch_size=batch_size) as reader:
        rows = sum(batch.n for batch in reader)
        return replace(reader.meta, num_rows=rows)


class TraceReader:
    """A checked, re-chunked view of one trace; iterate it for :class:`Batch` es.

    Sources that can be read again (files, tables) can be iterated more than
    once; a ``RecordBatchReader`` only once.
    """

    def __init__(
        self,
        *,
        meta: TraceMeta,
        container: str,
        schema: pa.Schema,
        batches: Callable[[], Iterator[pa.RecordBatch]],
        batch_size: int,
        check_values: bool = True,
        on_close: Callable[[], None] | None = None,
        before_batch: Callable[[], None] | None = None,
        diagnose: Callable[[int], tuple[str, BaseException] | None] | None = None,
        source_bytes: int | None = None,
        read_raw: Callable[[int], pa.RecordBatch] | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, not {batch_size}")
        self.meta = meta
        self.container = container
        """``file``, ``stream``, ``parquet``, ``table``, ``batch`` or ``reader``."""
        self.schema = schema
        self.batch_size = batch_size
        self._batches = batches
        self._check_values = check_values
        self._on_close = on_close
        self._before_batch = before_batch
        self._diagnose = diagnose
        """``diagnose(k)``: record batch ``k`` read one column at a time; the first
        column that fails and its error, or None (files only)."""
        self._source_bytes = source_bytes
        self._closed = False
        self.rows = RowFields(read_raw)
        """The rows handed out, looked up by number (:mod:`.rows`; ``read_raw(k)``:
        the source's record batch ``k``, where it can be read again there)."""

    def __iter__(self) -> Iterator[Batch]:
        if self._closed:
            raise ValueError("the TraceReader is closed")
        return self._iterate()

    def __enter__(self) -> TraceReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.rows.close()
            if self._on_close is not None:
                self._on_close()

    def _error(self, message: str, rule: str, row: int | None = None) -> TraceError:
        return TraceError(message, path=self.meta.path, row=row, rule=rule)

    def _iterate(self) -> Iterator[Batch]:
        checks = RowChecks(self.meta) if self._check_values else None
        row0 = 0
        released = -RELEASE_ROWS  # the row the last ``before_batch`` came before
        for record, source, offset in self._rechunked():
            if self._before_batch is not None and row0 - released >= RELEASE_ROWS:
                self._before_batch()
                released = row0
            cols, problems = convert_record(record)
            if checks is not None:
                problems += checks.problems(cols, record.num_rows)
            if problems:
                row, _, rule, message = min(problems)
                raise self._error(message, rule, row0 + row)
            if checks is not None:
                checks.advance(cols)
            batch = Batch(row0, record.num_rows, cols, source=source, source_row0=row0 - offset)
            self.rows.note(batch)
            yield batch
            row0 += record.num_rows

    def _rechunked(self) -> Iterator[tuple[pa.RecordBatch, pa.RecordBatch | None, int]]:
        """Input record batches cut and glued into batches of at most
        ``batch_size`` rows: (batch, the input record it is a slice of, or
        None when glued, and the slice's first row in it).

        Gluing matters for small inputs: a stream of tiny batches would
        otherwise cost a NumPy round trip per handful of rows. A record of at
        least ``glue_limit(batch_size)`` rows is passed on as it is (in
        slices of ``batch_size``), after whatever was glued before it: gluing
        copies every column, and a writer's usual output is records of 2^20
        rows with short ones between them.
        """
        size = self.batch_size
        small = glue_limit(size)
        pieces = _Pieces()
        for record in self._raw():
            if record.num_rows >= small:
                if pieces.rows:
                    yield pieces.take(), None, 0
                for offset in range(0, record.num_rows, size):
                    yield record.slice(offset, size), record, offset
                continue
            offset = 0
            while offset < record.num_rows:
                take = min(size - pieces.rows, record.num_rows - offset)
                whole = offset == 0 and take == record.num_rows
                pieces.add(record if whole else record.slice(offset, take))
                offset += take
                if pieces.rows == size:
                    yield pieces.take(), None, 0
        if pieces.rows:
            yield pieces.take(), None, 0

    def _raw(self) -> Iterator[pa.RecordBatch]:
        """The source's own record batches; pyarrow failures become ``not-arrow``,
        naming the column that cannot be read where that can be found, and a
        compressed buffer that claims more memory than its file could hold
        becomes ``damaged-buffer`` instead of an out-of-memory."""
        rows = 0
        index = 0
        try:
            it = self._batches()
            while True:
                try:
                    record = next(it)
                except StopIteration:
                    return
                self.rows.raw_batch(index, rows)
                rows += record.num_rows
                index += 1
                if record.num_rows:
                    yield record
        except MemoryError as exc:
            claim = _claimed_bytes(exc)
            if (
                claim is None
                or self._source_bytes is None
                or claim <= MAX_EXPANSION * self._source_bytes
            ):
                raise  # the machine's, not the trace's: not a damaged file
            found = self._diagnose(index) if self._diagnose is not None else None
            where = f"record batch {index}" + (f", column '{found[0]}'" if found else "")
            raise self._error(
                f"{where}: a compressed buffer claims {claim:,} bytes, more than "
                f"any LZ4 or ZSTD data in this {self._source_bytes:,}-byte file "
                f"expands to (damaged?)",
                "damaged-buffer",
                rows,
            ) from None
        except _ARROW_FAILURES as failure:
            found = self._diagnose(index) if self._diagnose is not None else None
            cause = failure if found is None else found[1]
            if found is not None:
                message = (
                    f"cannot read column '{found[0]}' of record batch {index} "
                    f"(truncated or damaged?): {one_line(cause)}"
                )
            else:
                message = (
                    f"cannot read the trace past this row (truncated or damaged?): "
                    f"{one_line(cause)}"
                )
            raise self._error(message, "not-arrow", rows) from cause


MAX_EXPANSION = 1 << 16
"""No LZ4 or ZSTD data expands more than this many times (LZ4 at most ~255,
ZSTD ~2^15: a 4-byte RLE block for 128 KiB): a buffer that claims more than
this times its file's size is damaged, not large."""

_MALLOC_SIZE = re.compile(r"\bsize (\d+)\b")


def _claimed_bytes(exc: BaseException) -> int | None:
    """The allocation an Arrow out-of-memory error names (``malloc of size N
    failed``), or None."""
    match = _MALLOC_SIZE.search(str(exc))
    return int(match.group(1)) if match and isinstance(exc, pa.ArrowException) else None


def glue_limit(batch_size: int) -> int:
    """Records with fewer rows than this are glued into bigger batches."""
    return max(1, batch_size // 8)


GLUE_PIECES = 1024
"""Small records are glued this many at a time. Gluing all the records of a
batch at once held an object per record and column, and Arrow's concatenation
of a million one-row records ran out of memory; glued in groups, each row is
copied twice and at most 2 * GLUE_PIECES pieces are held."""


class _Pieces:
    """Small records waiting to be glued into a batch, in bounded memory."""

    def __init__(self) -> None:
        self.rows = 0
        self._glued: list[pa.RecordBatch] = []
        self._small: list[pa.RecordBatch] = []

    def add(self, record: pa.RecordBatch) -> None:
        self._small.append(record)
        self.rows += record.num_rows
        if len(self._small) == GLUE_PIECES:
            self._glued.append(_glue(self._small))
            self._small = []

    def take(self) -> pa.RecordBatch:
        """Everything added, as one record; empties the pieces."""
        out = _glue(self._glued + self._small)
        self.rows, self._glued, self._small = 0, [], []
        return out


def _glue(pieces: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(pieces) == 1:
        return pieces[0]
    concat = getattr(pa, "concat_batches", None)  # pyarrow >= 19: half the time a piece
    if concat is not None:
        return concat(pieces)
    return pa.Table.from_batches(pieces).combine_chunks().to_batches()[0]


# --- containers ----------------------------------------------------------------


@contextlib.contextmanager
def decode_pool() -> Iterator[None]:
    """Make jemalloc (where pyarrow has it, else the system allocator)
    pyarrow's default memory pool while a trace is read.

    pyarrow's usual default, mimalloc, hands the pages of each freed batch
    back to the kernel, so every batch of a long trace faulted in fresh
    zeroed pages; jemalloc keeps them (bench/README.md has what the kernel's
    page clearing costs with each allocator). Buffers remember their pool, so
    restoring the old default afterwards is safe.
    """
    old = pa.default_memory_pool()
    try:
        pool = pa.jemalloc_memory_pool()
    except (NotImplementedError, AttributeError):
        pool = pa.system_memory_pool()
    pa.set_memory_pool(pool)
    try:
        yield
    finally:
        pa.set_memory_pool(old)


def _open(source, *, batch_size: int, check_values: bool) -> TraceReader:
    """Shared by :func:`open_trace` and the writer (which converts types but
    leaves the format's value rules to whoever reads the result)."""
    if isinstance(source, (str, os.PathLike)):
        return _open_path(os.fspath(source), batch_size, check_values)
    if isinstance(source, pa.Table):
        return _open_arrow(
            source.schema,
            "table",
            source.num_rows,
            lambda: iter(source.to_batches()),
            batch_size,
            check_values,
            read_raw=lambda k: source.to_batches()[k],
        )
    if isinstance(source, pa.RecordBatch):
        return _open_arrow(
            source.schema,
            "batch",
            source.num_rows,
            lambda: iter([source]),
            batch_size,
            check_values,
            read_raw=lambda k: source,
        )
    if isinstance(source, pa.RecordBatchReader):
        used: list[bool] = []

        def once() -> Iterator[pa.RecordBatch]:
            if used:
                raise RuntimeError("a TraceReader over a RecordBatchReader can be read once")
            used.append(True)
            return iter(source)

        return _open_arrow(source.schema, "reader", None, once, batch_size, check_values)
    raise TypeError(
        f"cannot read a trace from {type(source).__name__}: give a path, "
        f"a pyarrow Table, RecordBatch or RecordBatchReader"
    )


def _open_arrow(
    schema,
    container,
    num_rows,
    batches,
    batch_size,
    check_values,
    path=None,
    on_close=None,
    before_batch=None,
    diagnose=None,
    source_bytes=None,
    read_raw=None,
) -> TraceReader:
    meta = replace(parse_metadata(schema, path), num_rows=num_rows)
    check_schema(schema, path)
    return TraceReader(
        meta=meta,
        container=container,
        schema=schema,
        batches=batches,
        batch_size=batch_size,
        check_values=check_values,
        on_close=on_close,
        before_batch=before_batch,
        diagnose=diagnose,
        source_bytes=source_bytes,
        read_raw=read_raw,
    )


STDIN = "-"
"""The trace path that means standard input."""

STDIN_NAME = "<stdin>"
"""How messages name standard input."""


def reads_once(path: str) -> bool:
    """Whether trace ``path`` can be read only once, front to back: ``-``
    (standard input), a FIFO, a device, a socket."""
    if path == STDIN:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _open_path(path: str, batch_size: int, check_values: bool) -> TraceReader:
    def fail(message: str, rule: str = "not-arrow") -> TraceError:
        return TraceError(message, path=path, rule=rule)

    if path == STDIN:
        if os.isatty(0):  # an Arrow trace is never typed: do not wait for one
            raise TraceError(
                "standard input is a terminal: pipe a trace in (tracerace check - < trace.arrows)",
                path=STDIN_NAME,
                rule="usage",
            )
        return _open_once(
            os.fdopen(os.dup(0), "rb", buffering=0), STDIN_NAME, batch_size, check_values
        )
    if reads_once(path):
        try:  # a FIFO, device or socket
            raw = open(path, "rb", buffering=0)
        except OSError as exc:
            raise fail(f"cannot read: {exc.strerror or one_line(exc)}", "unreadable") from None
        return _open_once(raw, path, batch_size, check_values)
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        raise fail("no such file", "no-such-file") from None
    except IsADirectoryError:
        raise fail("is a directory, not a trace file") from None
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or one_line(exc)}", "unreadable") from None
    if not head:
        raise fail("empty file: not an Arrow IPC file, IPC stream or Parquet file")

    if head.startswith(PARQUET_MAGIC):
        return _open_parquet(path, batch_size, check_values, fail, path)

    mapped = _MappedFile(path)
    return _open_ipc(
        mapped.reader,
        head,
        fail,
        mapped.close,
        batch_size=batch_size,
        check_values=check_values,
        path=path,
        before_batch=mapped.release,
        source_bytes=mapped.size,
    )


def _open_ipc(source, head: bytes, fail, close, reopen=None, **options) -> TraceReader:
    """An Arrow IPC file (``head``, its first bytes, says which) or stream,
    each of whose readings starts from ``source()``: a reader that ``close``
    closes. ``reopen()``: the file again, read apart from ``source()``'s
    (default: ``source``), to look rows up in (:mod:`.rows`). ``options``:
    ``_open_arrow``'s (batch size, path, ...)."""
    read_raw = None
    try:
        if head.startswith(IPC_FILE_MAGIC):
            container = "file"
            reader = ipc.open_file(source())
            count = getattr(reader, "count_rows", None)  # pyarrow >= 26
            schema, num_rows = reader.schema, count() if count else None

            def batches() -> Iterator[pa.RecordBatch]:
                r = ipc.open_file(source())
                return (r.get_batch(i) for i in range(r.num_record_batches))

            read_raw = _batch_reader(reopen or source, schema)
        else:
            container = "stream"
            schema, num_rows = ipc.open_stream(source()).schema, None

            def batches() -> Iterator[pa.RecordBatch]:
                return iter(ipc.open_stream(source()))
    except MemoryError:
        close()
        raise
    except _ARROW_FAILURES as exc:
        close()
        if head.startswith(IPC_FILE_MAGIC):
            raise fail(f"truncated or damaged Arrow IPC file: {one_line(exc)}") from None
        raise fail("not an Arrow IPC file, IPC stream or Parquet file") from None
    try:
        return _open_arrow(
            schema,
            container,
            num_rows,
            batches,
            on_close=close,
            diagnose=_column_diagnosis(source, container, schema),
            read_raw=read_raw,
            **options,
        )
    except TraceError:
        close()
        raise


def _batch_reader(
    source: Callable[[], pa.NativeFile], schema: pa.Schema
) -> Callable[[int], pa.RecordBatch]:
    """``read_raw(k)``: record batch ``k`` of the IPC file ``source()``
    gives, only the columns a report reads of a row (:data:`.rows.FIELDS`)."""
    options = ipc.IpcReadOptions(
        included_fields=[i for i, name in enumerate(schema.names) if name in ROW_FIELDS]
    )
    opened: list[ipc.RecordBatchFileReader] = []

    def read_raw(k: int) -> pa.RecordBatch:
        if not opened:
            opened.append(ipc.open_file(source(), options=options))
        return opened[0].get_batch(k)

    return read_raw


def _column_diagnosis(
    source: Callable[[], pa.NativeFile], container: str, schema: pa.Schema
) -> Callable[[int], tuple[str, BaseException] | None]:
    """For an IPC ``container`` ("file" or "stream") that ``source()`` gives
    from its start: record batch ``index`` (from 0) read one column at a
    time, the first column that fails, and how."""

    def diagnose(index: int) -> tuple[str, BaseException] | None:
        for j, name in enumerate(schema.names):
            options = ipc.IpcReadOptions(included_fields=[j])
            try:
                if container == "file":
                    ipc.open_file(source(), options=options).get_batch(index)
                else:
                    for k, _ in enumerate(ipc.open_stream(source(), options=options)):
                        if k == index:
                            break
            except (MemoryError, *_ARROW_FAILURES) as exc:
                return name, exc
        return None

    return diagnose


def _open_parquet(
    source, batch_size: int, check_values: bool, fail, path: str, also_close=None
) -> TraceReader:
    """A Parquet trace read a row group at a time from ``source`` (a path, or
    a file that ``also_close`` closes with the reader), named ``path``."""
    import pyarrow.parquet as pq  # only Parquet users pay for the import

    def close() -> None:
        parquet.close()
        if also_close is not None:
            also_close()

    try:
        parquet = pq.ParquetFile(source)
        schema = parquet.schema_arrow
        num_rows = parquet.metadata.num_rows
    except MemoryError:
        raise
    except _ARROW_FAILURES as exc:
        raise fail(f"truncated or damaged Parquet file: {one_line(exc)}") from None
    wanted = [name for name in schema.names if name in COLUMN_BY_NAME]

    def batches() -> Iterator[pa.RecordBatch]:
        return parquet.iter_batches(batch_size=batch_size, columns=wanted)

    try:
        return _open_arrow(
            schema,
            "parquet",
            num_rows,
            batches,
            batch_size,
            check_values,
            path=path,
            on_close=close,
        )
    except TraceError:
        close()
        raise


def open_filesystem_trace(
    filesystem, path: str, *, batch_size: int = DEFAULT_BATCH_SIZE, name: str | None = None
) -> TraceReader:
    """A trace at ``path`` on a pyarrow filesystem (an object store's, from
    ``pyarrow.fs.FileSystem.from_uri``), read through it a record batch or a
    Parquet row group at a time, never whole: an Arrow IPC file, IPC stream
    or Parquet file, recognised from its first bytes. ``name`` (default
    ``path``) is how messages name it."""
    name = path if name is None else name

    def fail(message: str, rule: str = "not-arrow") -> TraceError:
        return TraceError(message, path=name, rule=rule)

    try:
        f = filesystem.open_input_file(path)
    except FileNotFoundError:
        raise fail("no such file", "no-such-file") from None
    except _ARROW_FAILURES as exc:
        raise fail(f"cannot read: {one_line(exc)}", "unreadable") from None
    try:
        head = f.read(8)
        if not head:
            raise fail("empty file: not an Arrow IPC file, IPC stream or Parquet file")
        if head.startswith(PARQUET_MAGIC):
            return _open_parquet(f, batch_size, True, fail, name, also_close=f.close)
        size = f.size()
    except BaseException:
        f.close()
        raise

    def from_start() -> pa.NativeFile:
        f.seek(0)
        return f

    return _open_ipc(
        from_start,
        head,
        fail,
        f.close,
        reopen=lambda: filesystem.open_input_file(path),
        batch_size=batch_size,
        check_values=True,
        path=name,
        source_bytes=size,
    )


def _open_once(raw, name: str, batch_size: int, check_values: bool) -> TraceReader:
    """A trace read once from ``raw`` (standard input, a FIFO, a device), which
    this reader owns: an Arrow IPC stream, or the bytes of an IPC file (its
    stream part: an IPC file is its magic, a stream and a footer). Parquet needs
    to seek to its footer, so it is refused."""

    def fail(message: str, rule: str = "not-arrow") -> TraceError:
        raw.close()
        return TraceError(message, path=name, rule=rule)

    try:
        head = _read_up_to(raw, len(IPC_FILE_MAGIC) + 2)
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or one_line(exc)}", "unreadable") from None
    if not head:
        raise fail("empty input: not an Arrow IPC stream")
    if head.startswith(PARQUET_MAGIC):
        raise fail(
            "a Parquet trace cannot be read from a pipe or device (Parquet is read "
            "from its end): give the file, or an Arrow IPC stream"
        )
    if head.startswith(IPC_FILE_MAGIC):
        head = b""  # the stream starts after the magic and its padding
    source = pa.PythonFile(io.BufferedReader(_Prefixed(head, raw), STREAM_READ_SIZE), mode="r")
    try:
        reader = ipc.open_stream(source)
    except MemoryError:
        source.close()
        raise
    except _ARROW_FAILURES:
        source.close()
        raise fail("not an Arrow IPC stream or IPC file") from None
    used: list[bool] = []

    def once() -> Iterator[pa.RecordBatch]:
        if used:
            raise RuntimeError(f"{name} can be read once")
        used.append(True)
        return iter(reader)

    try:
        return _open_arrow(
            reader.schema,
            "stream",
            None,
            once,
            batch_size,
            check_values,
            path=name,
            on_close=source.close,
        )
    except TraceError:
        source.close()
        raise


STREAM_READ_SIZE = 1 << 20
"""Bytes read at a time from a pipe or device."""


def _read_up_to(raw, n: int) -> bytes:
    """The first ``n`` bytes of ``raw`` (fewer at its end): a pipe may give less
    at a time."""
    head = b""
    while len(head) < n:
        more = raw.read(n - len(head))
        if not more:
            break
        head += more
    return head


class _Prefixed(io.RawIOBase):
    """``head`` (bytes already read from ``raw``), then the rest of ``raw``."""

    def __init__(self, head: bytes, raw) -> None:
        self._head = head
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _MappedFile:
    """A read-only memory map of a trace file whose pages can be handed back.

    Pages of a file mapping that have been touched count towards the
    process's resident memory until the mapping goes away, so reading a
    mapped 10 GB trace front to back would end with 10 GB resident. Before a
    batch, once ``RELEASE_ROWS`` rows have been read since the last call, the
    reader calls :meth:`release`, which tells the kernel it may drop every
    page of the mapping (``MADV_DONTNEED``). The mapping is
    read-only and shared, so a page still in use (a view the caller kept) is
    simply read again from the page cache: correctness never depends on it.

    Python's ``mmap`` is used rather than ``pyarrow.memory_map`` because it
    exposes ``madvise``; pyarrow reads it zero-copy through ``py_buffer``.
    """

    def __init__(self, path: str) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._buffer: pa.Buffer | None = pa.py_buffer(self._map)
        self.size = len(self._map)

    def reader(self) -> pa.BufferReader:
        if self._buffer is None:
            raise ValueError("the trace file is closed")
        return pa.BufferReader(self._buffer)

    def release(self) -> None:
        if self._buffer is not None and hasattr(self._map, "madvise"):
            self._map.madvise(mmap.MADV_DONTNEED)

    def close(self) -> None:
        self._buffer = None
        try:
            self._map.close()
        except BufferError:
            pass  # arrays still view the map; it is unmapped when they are freed
