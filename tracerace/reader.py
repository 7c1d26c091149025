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
business.

Memory is bounded by ``batch_size``, not by the file: batches are produced one
at a time, and pages of a memory-mapped file are handed back to the kernel
before each new batch (see :class:`_MappedFile`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import mmap
import os
from dataclasses import dataclass, replace
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from .errors import TraceError
from .coords import parse_launches
from .meta import Buffer, TraceMeta
from .ops import OP_CODES, Op, Proxy, Scope, Sem, Space
from .schema import (COLUMN_BY_NAME, COLUMN_NAMES, COLUMNS, DEFAULT_BLOCK, FORMAT_VERSION,
                     META_BUFFERS, META_PRODUCER, META_SITES, META_VERSION, META_WARNINGS, REQUIRED, FENCE_ALL,
                     SITE_NONE, Column)

DEFAULT_BATCH_SIZE = 1 << 20

OLDEST_VERSION = 1
"""The oldest trace-format version this package reads."""

EXTENSION_OP_MIN = 100
"""Op codes from here up are reserved for extensions of the format."""

IPC_FILE_MAGIC = b"ARROW1"
PARQUET_MAGIC = b"PAR1"

# Columns whose values are small enumerations: column -> largest valid value.
ENUM_LIMITS: dict[str, tuple[int, type]] = {
    "space": (int(max(Space)), Space),
    "space2": (int(max(Space)), Space),
    "scope": (int(max(Scope)), Scope),
    "sem": (int(max(Sem)), Sem),
    "proxy": (int(max(Proxy)), Proxy),
    "fence_spaces": (FENCE_ALL, None),
}

_KNOWN_OP = np.zeros(256, dtype=bool)
_KNOWN_OP[sorted(OP_CODES)] = True

# Ops whose ``addr``/``size`` name bytes, and those (copies) whose ``addr2`` does too.
_ADDRESSED = np.zeros(256, dtype=bool)
_ADDRESSED[[Op.READ, Op.WRITE, Op.ATOMIC, Op.INIT, Op.CP_ASYNC, Op.TMA_LOAD, Op.TMA_STORE]] = True
_COPIES = np.zeros(256, dtype=bool)
_COPIES[[Op.CP_ASYNC, Op.TMA_LOAD, Op.TMA_STORE]] = True
ADDRESS_END = (1 << 64) - 1
"""The largest end (``addr + size``) of a byte range: it must fit a uint64."""

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

    def __getitem__(self, name: str) -> np.ndarray:
        return self.cols[name]

    def __len__(self) -> int:
        return self.n


def open_trace(source, *, batch_size: int = DEFAULT_BATCH_SIZE) -> "TraceReader":
    """Open a trace for streaming.

    ``source`` is a path (Arrow IPC file or stream, or Parquet; the container
    is recognised from its first bytes, not its name), a ``pyarrow.Table``, a
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

    def __init__(self, *, meta: TraceMeta, container: str, schema: pa.Schema,
                 batches: Callable[[], Iterator[pa.RecordBatch]], batch_size: int,
                 check_values: bool = True, on_close: Callable[[], None] | None = None,
                 before_batch: Callable[[], None] | None = None) -> None:
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
        self._closed = False

    def __iter__(self) -> Iterator[Batch]:
        if self._closed:
            raise ValueError("the TraceReader is closed")
        return self._iterate()

    def __enter__(self) -> "TraceReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._on_close is not None:
                self._on_close()

    def _error(self, message: str, rule: str, row: int | None = None) -> TraceError:
        return TraceError(message, path=self.meta.path, row=row, rule=rule)

    def _iterate(self) -> Iterator[Batch]:
        checks = _RowChecks(self.meta) if self._check_values else None
        row0 = 0
        for record in self._rechunked():
            if self._before_batch is not None:
                self._before_batch()
            cols, problems = _convert(record)
            if checks is not None:
                problems += checks.problems(cols, record.num_rows)
            if problems:
                row, _, rule, message = min(problems)
                raise self._error(message, rule, row0 + row)
            if checks is not None:
                checks.advance(cols)
            yield Batch(row0, record.num_rows, cols)
            row0 += record.num_rows

    def _rechunked(self) -> Iterator[pa.RecordBatch]:
        """Input record batches cut and glued into batches of at most
        ``batch_size`` rows.

        Gluing matters for small inputs: a stream of tiny batches would
        otherwise cost a NumPy round trip per handful of rows. A record of at
        least ``glue_limit(batch_size)`` rows is passed on as it is (in
        slices of ``batch_size``), after whatever was glued before it: gluing
        copies every column, and a writer's usual output (records of 2^20
        rows with short ones between them) made ~30% of the reading time
        that copy.
        """
        size = self.batch_size
        small = glue_limit(size)
        pieces: list[pa.RecordBatch] = []
        have = 0
        for record in self._raw():
            if record.num_rows >= small:
                if pieces:
                    yield _glue(pieces)
                    pieces, have = [], 0
                for offset in range(0, record.num_rows, size):
                    yield record.slice(offset, size)
                continue
            offset = 0
            while offset < record.num_rows:
                take = min(size - have, record.num_rows - offset)
                pieces.append(record.slice(offset, take))
                have += take
                offset += take
                if have == size:
                    yield _glue(pieces)
                    pieces, have = [], 0
        if have:
            yield _glue(pieces)

    def _raw(self) -> Iterator[pa.RecordBatch]:
        """The source's own record batches; pyarrow failures become ``not-arrow``."""
        rows = 0
        try:
            it = self._batches()
            while True:
                try:
                    record = next(it)
                except StopIteration:
                    return
                rows += record.num_rows
                if record.num_rows:
                    yield record
        except MemoryError:  # the machine's, not the trace's: not a damaged file
            raise
        except _ARROW_FAILURES as exc:
            raise self._error(f"cannot read the trace past this row (truncated or damaged?): "
                              f"{_one_line(exc)}", "not-arrow", rows) from exc


def glue_limit(batch_size: int) -> int:
    """Records with fewer rows than this are glued into bigger batches."""
    return max(1, batch_size // 8)


def _glue(pieces: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(pieces) == 1:
        return pieces[0]
    return pa.Table.from_batches(pieces).combine_chunks().to_batches()[0]


# --- columns -----------------------------------------------------------------

def _convert(record: pa.RecordBatch) -> tuple[dict[str, np.ndarray], list]:
    """Every v1 column of ``record`` as a NumPy array of its schema dtype.

    Returns the columns and a list of ``(row, order, rule, message)`` problems
    (the first per column), rows relative to ``record``. Types were checked
    against the schema when the trace was opened; here only values can fail.
    """
    index = {name: i for i, name in enumerate(record.schema.names)}
    n = record.num_rows
    cols: dict[str, np.ndarray] = {}
    problems: list = []
    # block first: peer and cluster default to it.
    for col in sorted(COLUMNS, key=lambda c: c.default == DEFAULT_BLOCK):
        i = index.get(col.name)
        if i is None:
            values = _default_column(col, n, cols)
        else:
            values, problem = _column_values(col, record.column(i), cols)
            if problem is not None:
                problems.append(problem)
        values.flags.writeable = False
        cols[col.name] = values
    return {name: cols[name] for name in COLUMN_NAMES}, problems


def _default_column(col: Column, n: int, cols: dict[str, np.ndarray]) -> np.ndarray:
    """A column the trace leaves out. Batch columns are read-only, so a
    default shares memory: ``peer`` and ``cluster`` are ``block`` itself, and
    constants come from a cache. Fresh arrays cost their page faults at every
    batch: 8 MB of new pages per left-out 64-bit column of a 1M-row batch."""
    if col.default == DEFAULT_BLOCK:
        return cols["block"]
    return _constant(np.dtype(col.dtype).str, col.default, n)


@functools.lru_cache(maxsize=64)
def _constant(dtype: str, value: int, n: int) -> np.ndarray:
    values = np.full(n, value, dtype=dtype)
    values.flags.writeable = False
    return values


def _column_values(col: Column, array: pa.Array, cols: dict[str, np.ndarray]):
    """(values, problem-or-None) for one present column."""
    n = len(array)
    if pa.types.is_null(array.type):
        mask = np.ones(n, dtype=bool)
        raw = np.zeros(n, dtype=col.dtype)
    elif array.null_count:
        mask = array.is_null().to_numpy(zero_copy_only=False)
        raw = array.fill_null(0).to_numpy()
    else:
        mask = None
        raw = array.to_numpy()

    problem = None
    if mask is not None and col.required:
        row = int(np.argmax(mask))
        problem = (row, 0, "bad-value", f"{col.name} is null; a required column has no default")
    bad = out_of_range(raw, col.dtype)
    if bad is not None and bad.any():
        row = int(np.argmax(bad))
        rule = "unknown-op" if col.name == "op" else "bad-value"
        message = (f"{col.name} value {raw[row]} does not fit the column type "
                   f"{col.arrow_type} (given as {array.type})")
        if problem is None or row < problem[0]:
            problem = (row, 0, rule, message)

    if mask is None:
        values = raw if raw.dtype == col.dtype else raw.astype(col.dtype)
    else:
        values = np.array(raw, dtype=col.dtype)  # a private, writable copy
        values[mask] = cols["block"][mask] if col.default == DEFAULT_BLOCK else (col.default or 0)
    return np.ascontiguousarray(values), problem


def out_of_range(values: np.ndarray, dtype: np.dtype) -> np.ndarray | None:
    """Mask of integer ``values`` that ``dtype`` cannot hold; None when all can.

    Comparisons are made in the source dtype, where the target's bounds are
    representable whenever they are tighter, so no value wraps while checked.
    """
    have, want = np.iinfo(values.dtype), np.iinfo(dtype)
    bad = None
    if have.min < want.min:
        bad = values < 0  # want is unsigned: int64 is the widest signed type
    if have.max > want.max:
        high = values > np.asarray(want.max, dtype=values.dtype)
        bad = high if bad is None else bad | high
    return bad


class _RowChecks:
    """The format's per-row rules, vectorised; ``ts`` order spans batches."""

    def __init__(self, meta: TraceMeta) -> None:
        self.nsites = len(meta.sites)
        self.last_ts: int | None = None

    def problems(self, cols: dict[str, np.ndarray], n: int) -> list:
        found = []

        def first(mask: np.ndarray, order: int, rule: str, describe) -> None:
            if mask.any():
                row = int(np.argmax(mask))
                found.append((row, order, rule, describe(row)))

        op = cols["op"]
        first(~_KNOWN_OP[op], 1, "unknown-op", lambda r: _unknown_op_message(int(op[r])))

        ts = cols["ts"]
        if self.last_ts is not None and ts[0] < self.last_ts:
            found.append((0, 2, "ts-decreasing",
                          f"ts {ts[0]} is less than the previous row's ts {self.last_ts} "
                          f"(ts must be non-decreasing)"))
        elif n > 1:
            first(np.concatenate(([False], ts[1:] < ts[:-1])), 2, "ts-decreasing",
                  lambda r: f"ts {ts[r]} is less than the previous row's ts {ts[r - 1]} "
                            f"(ts must be non-decreasing)")

        for order, (name, (limit, enum)) in enumerate(ENUM_LIMITS.items(), start=3):
            values = cols[name]
            first(values > limit, order, "bad-value",
                  lambda r, v=values, nm=name, e=enum: _enum_message(nm, int(v[r]), e))

        site = cols["site"]
        first((site != SITE_NONE) & (site >= self.nsites), 10, "site-range",
              lambda r: _site_message(int(site[r]), self.nsites))

        room = np.uint64(ADDRESS_END) - cols["size"].astype(np.uint64)
        for order, (name, uses) in enumerate((("addr", _ADDRESSED), ("addr2", _COPIES)), 11):
            addr = cols[name]
            first(uses[op] & (addr > room), order, "address-overflow",
                  lambda r, a=addr, nm=name: f"{nm} {int(a[r]):#x} + size {int(cols['size'][r])} "
                                             f"passes the end of the 64-bit address space")
        return found

    def advance(self, cols: dict[str, np.ndarray]) -> None:
        self.last_ts = int(cols["ts"][-1])


def _unknown_op_message(code: int) -> str:
    if code >= EXTENSION_OP_MIN:
        return (f"op code {code} is in the extension range (>= {EXTENSION_OP_MIN}) "
                f"but not known to trace format v{FORMAT_VERSION}")
    return f"op code {code} is not in trace format v{FORMAT_VERSION}"


def _enum_message(name: str, value: int, enum: type | None) -> str:
    if enum is None:
        return f"{name} {value} is not a bit mask of 1 global, 2 shared, 4 local"
    choices = ", ".join(f"{int(m)} {m.name.lower()}" for m in enum)
    return f"{name} {value} is not one of {choices}"


def _site_message(site: int, nsites: int) -> str:
    if nsites == 0:
        return f"site {site} is given but the trace has no {META_SITES} list"
    return f"site {site} is out of range: {META_SITES} has {nsites} entries"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


# --- schema and metadata ----------------------------------------------------------

def check_schema(schema: pa.Schema, path: str | None) -> None:
    """Required columns present, each v1 column at most once and integer-typed.

    Unknown columns are ignored: the format may grow optional columns.
    """
    names = schema.names
    for col in COLUMNS:
        count = names.count(col.name)
        if count == 0:
            if col.required:
                raise TraceError(f"required column '{col.name}' is absent "
                                 f"(required: {', '.join(REQUIRED)})",
                                 path=path, rule="missing-column")
            continue
        if count > 1:
            raise TraceError(f"column '{col.name}' appears {count} times",
                             path=path, rule="duplicate-column")
        kind = schema.field(col.name).type
        if not (pa.types.is_integer(kind) or (pa.types.is_null(kind) and not col.required)):
            raise TraceError(f"column '{col.name}' has type {kind}; it must be an integer "
                             f"type whose values fit {col.arrow_type}",
                             path=path, rule="wrong-type")


def parse_metadata(schema: pa.Schema, path: str | None) -> TraceMeta:
    """The trace's version, sites, buffers and producer from the schema metadata."""

    def fail(message: str, rule: str = "metadata") -> TraceError:
        return TraceError(message, path=path, rule=rule)

    raw = schema.metadata or {}
    meta: dict[str, str] = {}
    for key, value in raw.items():
        try:
            meta[key.decode()] = value.decode()
        except UnicodeDecodeError:
            raise fail(f"metadata key or value is not utf-8: {key[:40]!r}") from None

    version = _parse_version(meta.get(META_VERSION), fail)
    sites = _parse_json(meta, META_SITES, fail)
    if sites is None:
        sites = []
    if not isinstance(sites, list) or not all(isinstance(s, str) for s in sites):
        raise fail(f"{META_SITES} must be a JSON list of strings")
    entries = _parse_json(meta, META_BUFFERS, fail)
    if entries is None:
        entries = []
    if not isinstance(entries, list):
        raise fail(f"{META_BUFFERS} must be a JSON list of objects")
    buffers = tuple(parse_buffer(entry, f"{META_BUFFERS}[{i}]", fail)
                    for i, entry in enumerate(entries))
    warnings = _parse_json(meta, META_WARNINGS, fail)
    if warnings is None:
        warnings = []
    if not isinstance(warnings, list) or not all(isinstance(w, str) for w in warnings):
        raise fail(f"{META_WARNINGS} must be a JSON list of strings")
    known = {META_VERSION, META_SITES, META_BUFFERS, META_PRODUCER, META_WARNINGS}
    return TraceMeta(path=path, version=version, sites=tuple(sites), buffers=buffers,
                     producer=meta.get(META_PRODUCER), warnings=tuple(warnings),
                     extra={k: v for k, v in meta.items() if k not in known},
                     launches=parse_launches(meta, fail))


def _parse_version(text: str | None, fail) -> int:
    if text is None:
        raise fail(f"the schema metadata has no {META_VERSION}; this is not a tracerace "
                   f"trace (this tracerace reads version {FORMAT_VERSION})", "version")
    if not text.strip().isdigit():
        raise fail(f"trace format version {text!r} is not a version number "
                   f"(this tracerace reads version {FORMAT_VERSION})", "version")
    version = int(text)
    if version > FORMAT_VERSION:
        raise fail(f"trace format version {version} is newer than the newest this "
                   f"tracerace reads ({FORMAT_VERSION})", "version")
    if version < OLDEST_VERSION:
        raise fail(f"trace format version {version} is older than the oldest this "
                   f"tracerace reads ({OLDEST_VERSION})", "version")
    return version


def _parse_json(meta: dict[str, str], key: str, fail):
    if key not in meta:
        return None
    try:
        return json.loads(meta[key])
    except ValueError as exc:
        raise fail(f"{key} is not valid JSON: {_one_line(exc)}") from None


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_list(value) -> bool:
    return isinstance(value, list) and all(_is_int(v) and v >= 0 for v in value)


def parse_buffer(entry, where: str, fail=None) -> Buffer:
    """A :class:`Buffer` from its JSON object; ``fail(message)`` makes the error."""
    if fail is None:
        def fail(message: str) -> TraceError:
            return TraceError(message, rule="metadata")
    if not isinstance(entry, dict):
        raise fail(f"{where} must be a JSON object")
    for key in ("name", "space", "base", "shape", "itemsize"):
        if key not in entry:
            raise fail(f"{where} has no '{key}'")
    name, space, base = entry["name"], entry["space"], entry["base"]
    shape, itemsize = entry["shape"], entry["itemsize"]
    strides, launch = entry.get("strides"), entry.get("launch")
    if not isinstance(name, str) or not name:
        raise fail(f"{where}: 'name' must be a non-empty string")
    if not _is_int(space) or not 0 <= space <= max(Space):
        raise fail(f"{where}: 'space' must be 0 (global), 1 (shared) or 2 (local)")
    if not _is_int(base) or base < 0:
        raise fail(f"{where}: 'base' must be a non-negative integer")
    if not _int_list(shape):
        raise fail(f"{where}: 'shape' must be a list of non-negative integers")
    if not _is_int(itemsize) or itemsize < 1:
        raise fail(f"{where}: 'itemsize' must be a positive integer")
    if strides is not None and (not _int_list(strides) or len(strides) != len(shape)):
        raise fail(f"{where}: 'strides' must be a list of non-negative integers, "
                   f"one per dimension of 'shape'")
    if launch is not None and (not _is_int(launch) or launch < 0):
        raise fail(f"{where}: 'launch' must be a non-negative integer or null")
    return Buffer(name=name, space=space, base=base, shape=tuple(shape), itemsize=itemsize,
                  strides=None if strides is None else tuple(strides), launch=launch)


# --- containers ----------------------------------------------------------------

@contextlib.contextmanager
def decode_pool() -> Iterator[None]:
    """Make jemalloc (where pyarrow has it, else the system allocator)
    pyarrow's default memory pool while a trace is read.

    pyarrow's usual default, mimalloc, hands the pages of each freed batch
    back to the kernel, so every batch of a long trace faulted in fresh
    zeroed pages. Measured on the tiled benchmark at 10^7 events: the
    kernel's page clearing fell from 30% of the check to 6% with jemalloc
    (11% with the system allocator). Buffers remember their pool, so
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
        return _open_arrow(source.schema, "table", source.num_rows,
                           lambda: iter(source.to_batches()), batch_size, check_values)
    if isinstance(source, pa.RecordBatch):
        return _open_arrow(source.schema, "batch", source.num_rows,
                           lambda: iter([source]), batch_size, check_values)
    if isinstance(source, pa.RecordBatchReader):
        used = []

        def once() -> Iterator[pa.RecordBatch]:
            if used:
                raise RuntimeError("a TraceReader over a RecordBatchReader can be read once")
            used.append(True)
            return iter(source)
        return _open_arrow(source.schema, "reader", None, once, batch_size, check_values)
    raise TypeError(f"cannot read a trace from {type(source).__name__}: give a path, "
                    f"a pyarrow Table, RecordBatch or RecordBatchReader")


def _open_arrow(schema, container, num_rows, batches, batch_size, check_values,
                path=None, on_close=None, before_batch=None) -> TraceReader:
    meta = replace(parse_metadata(schema, path), num_rows=num_rows)
    check_schema(schema, path)
    return TraceReader(meta=meta, container=container, schema=schema, batches=batches,
                       batch_size=batch_size, check_values=check_values,
                       on_close=on_close, before_batch=before_batch)


def _open_path(path: str, batch_size: int, check_values: bool) -> TraceReader:
    def fail(message: str, rule: str = "not-arrow") -> TraceError:
        return TraceError(message, path=path, rule=rule)

    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except FileNotFoundError:
        raise fail("no such file", "no-such-file") from None
    except IsADirectoryError:
        raise fail("is a directory, not a trace file") from None
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or _one_line(exc)}", "unreadable") from None
    if not head:
        raise fail("empty file: not an Arrow IPC file, IPC stream or Parquet file")

    if head.startswith(PARQUET_MAGIC):
        return _open_parquet(path, batch_size, check_values, fail)

    mapped = _MappedFile(path)
    try:
        if head.startswith(IPC_FILE_MAGIC):
            container = "file"
            reader = ipc.open_file(mapped.reader())
            count = getattr(reader, "count_rows", None)  # pyarrow >= 26
            schema, num_rows = reader.schema, count() if count else None

            def batches() -> Iterator[pa.RecordBatch]:
                r = ipc.open_file(mapped.reader())
                return (r.get_batch(i) for i in range(r.num_record_batches))
        else:
            container = "stream"
            schema, num_rows = ipc.open_stream(mapped.reader()).schema, None

            def batches() -> Iterator[pa.RecordBatch]:
                return iter(ipc.open_stream(mapped.reader()))
    except MemoryError:
        mapped.close()
        raise
    except _ARROW_FAILURES as exc:
        mapped.close()
        if head.startswith(IPC_FILE_MAGIC):
            raise fail(f"truncated or damaged Arrow IPC file: {_one_line(exc)}") from None
        raise fail("not an Arrow IPC file, IPC stream or Parquet file") from None
    try:
        return _open_arrow(schema, container, num_rows, batches, batch_size, check_values,
                           path=path, on_close=mapped.close, before_batch=mapped.release)
    except TraceError:
        mapped.close()
        raise


def _open_parquet(path: str, batch_size: int, check_values: bool, fail) -> TraceReader:
    import pyarrow.parquet as pq  # only Parquet users pay for the import

    try:
        parquet = pq.ParquetFile(path)
        schema = parquet.schema_arrow
        num_rows = parquet.metadata.num_rows
    except MemoryError:
        raise
    except _ARROW_FAILURES as exc:
        raise fail(f"truncated or damaged Parquet file: {_one_line(exc)}") from None
    wanted = [name for name in schema.names if name in COLUMN_BY_NAME]

    def batches() -> Iterator[pa.RecordBatch]:
        return parquet.iter_batches(batch_size=batch_size, columns=wanted)
    try:
        return _open_arrow(schema, "parquet", num_rows, batches, batch_size, check_values,
                           path=path, on_close=parquet.close)
    except TraceError:
        parquet.close()
        raise


class _MappedFile:
    """A read-only memory map of a trace file whose pages can be handed back.

    Pages of a file mapping that have been touched count towards the
    process's resident memory until the mapping goes away, so reading a
    mapped 10 GB trace front to back would end with 10 GB resident. Before
    each batch the reader calls :meth:`release`, which tells the kernel it may
    drop every page of the mapping (``MADV_DONTNEED``). The mapping is
    read-only and shared, so a page still in use (a view the caller kept) is
    simply read again from the page cache: correctness never depends on it.

    Python's ``mmap`` is used rather than ``pyarrow.memory_map`` because it
    exposes ``madvise``; pyarrow reads it zero-copy through ``py_buffer``.
    """

    def __init__(self, path: str) -> None:
        with open(path, "rb") as f:
            self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        self._buffer: pa.Buffer | None = pa.py_buffer(self._map)

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
