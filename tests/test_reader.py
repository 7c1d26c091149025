"""open_trace: every container in, the same checked batches out."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from peak import PEAK_KIB

from tracerace.trace.reader import Batch, TraceReader, glue_limit, open_trace
from tracerace.trace.schema import COLUMN_NAMES, COLUMNS, SITE_NONE
from tracerace.trace.writer import make_table

META = {"tracerace.version": "1"}


def required(n: int, **extra) -> dict:
    cols = {
        "ts": np.arange(n, dtype=np.uint64),
        "op": np.zeros(n, np.uint8),
        "launch": np.zeros(n, np.uint32),
        "block": (np.arange(n) % 3).astype(np.uint32),
        "thread": (np.arange(n) % 5).astype(np.uint32),
    }
    cols.update(extra)
    return cols


def raw_table(cols: dict, metadata=META) -> pa.Table:
    """A table exactly as given: the types and columns a foreign producer chose."""
    return pa.table(cols).replace_schema_metadata(metadata)


def write_ipc(path, table: pa.Table, *, stream=False, chunk=None, compression=None):
    options = ipc.IpcWriteOptions(compression=compression)
    new = ipc.new_stream if stream else ipc.new_file
    with new(str(path), table.schema, options=options) as w:
        w.write_table(table, max_chunksize=chunk)


def read_all(reader) -> dict[str, np.ndarray]:
    batches = list(reader)
    return {
        name: np.concatenate([b.cols[name] for b in batches]) if batches else np.zeros(0)
        for name in COLUMN_NAMES
    }


# --- containers ------------------------------------------------------------------


@pytest.fixture
def table():
    return make_table(
        required(10, addr=np.arange(10) * 8, size=8), sites=["a.cu:1"], producer="unit test"
    )


@pytest.mark.parametrize(
    "kind", ["file", "stream", "file-lz4", "stream-zstd", "parquet", "table", "batch", "reader"]
)
def test_every_container_reads_the_same(tmp_path, table, kind):
    if kind == "table":
        source = table
    elif kind == "batch":
        source = table.to_batches()[0]
    elif kind == "reader":
        source = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    elif kind == "parquet":
        source = tmp_path / "t.parquet"
        pq.write_table(table, source)
    else:
        source = tmp_path / "t.arrow"
        compression = kind.partition("-")[2] or None
        write_ipc(source, table, stream=kind.startswith("stream"), chunk=3, compression=compression)
    with open_trace(source, batch_size=4) as reader:
        assert isinstance(reader, TraceReader)
        assert reader.meta.sites == ("a.cu:1",)
        assert reader.meta.producer == "unit test"
        assert reader.meta.version == 1
        cols = read_all(reader)
    np.testing.assert_array_equal(cols["addr"], np.arange(10) * 8)
    np.testing.assert_array_equal(cols["peer"], np.arange(10) % 3)


@pytest.mark.parametrize(
    "name, writer",
    [
        ("stream.arrow", lambda p, t: write_ipc(p, t, stream=True)),
        ("file.arrows", lambda p, t: write_ipc(p, t)),
        ("parquet.bin", lambda p, t: pq.write_table(t, p)),
    ],
)
def test_container_is_sniffed_not_guessed_from_the_name(tmp_path, table, name, writer):
    path = tmp_path / name
    writer(path, table)
    with open_trace(path) as reader:
        assert reader.container == name.partition(".")[0]
        assert sum(b.n for b in reader) == 10


@pytest.mark.parametrize("kind", ["file", "stream", "file-lz4", "parquet"])
def test_a_trace_on_a_filesystem_is_read_a_batch_at_a_time(tmp_path, kind):
    """``open_filesystem_trace`` (an object store's trace, for a Dask
    worker) gives the batches ``open_trace`` gives for the same file, and
    never holds the whole trace: while its batches go by, pyarrow's pool
    holds a few of them, not the 2^16 rows (a reader that read the whole
    file first, as one did, holds them all)."""
    import pyarrow.fs as pafs

    from tracerace.trace.reader import open_filesystem_trace

    n = 1 << 16
    table = make_table(required(n, addr=np.arange(n) * 8, size=8), sites=["a.cu:1"])
    path = tmp_path / "t.trace"
    if kind == "parquet":
        pq.write_table(table, path, row_group_size=1024)
    else:
        compression = kind.partition("-")[2] or None
        write_ipc(path, table, stream=kind == "stream", chunk=1024, compression=compression)
    with open_trace(path, batch_size=1024) as reader:
        expected = read_all(reader)
        num_rows = reader.meta.num_rows
    base = pa.total_allocated_bytes()
    most = 0
    with open_filesystem_trace(
        pafs.LocalFileSystem(), str(path), batch_size=1024, name="s3://b/t.trace"
    ) as reader:
        assert reader.meta.path == "s3://b/t.trace" and reader.meta.num_rows == num_rows
        got = {name: [] for name in COLUMN_NAMES}
        for batch in reader:
            most = max(most, pa.total_allocated_bytes() - base)
            for name in COLUMN_NAMES:
                got[name].append(batch.cols[name].copy())
    for name in COLUMN_NAMES:
        np.testing.assert_array_equal(np.concatenate(got[name]), expected[name])
    assert most < table.nbytes // 8


@pytest.mark.parametrize(
    "content, rule",
    [
        (None, "no-such-file"),
        (b"", "not-arrow"),
        (b"ARROW1\0\0 and then nothing", "not-arrow"),
        (b"PAR1 and then nothing", "not-arrow"),
        (b"no trace at all", "not-arrow"),
    ],
)
def test_a_bad_trace_on_a_filesystem_is_one_error_naming_it(tmp_path, content, rule):
    import pyarrow.fs as pafs

    from tracerace.errors import TraceError
    from tracerace.trace.reader import open_filesystem_trace

    path = tmp_path / "t.arrow"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(TraceError) as err:
        open_filesystem_trace(pafs.LocalFileSystem(), str(path), name="gs://b/t.arrow")
    assert (err.value.path, err.value.rule) == ("gs://b/t.arrow", rule)
    assert "\n" not in str(err.value)


def test_num_rows_when_known(tmp_path, table):
    write_ipc(tmp_path / "f.arrow", table)
    write_ipc(tmp_path / "s.arrows", table, stream=True)
    pq.write_table(table, tmp_path / "p.parquet")
    assert open_trace(tmp_path / "f.arrow").meta.num_rows == 10
    assert open_trace(tmp_path / "s.arrows").meta.num_rows is None
    assert open_trace(tmp_path / "p.parquet").meta.num_rows == 10
    assert open_trace(table).meta.num_rows == 10
    assert open_trace(str(tmp_path / "f.arrow")).meta.path == str(tmp_path / "f.arrow")


def test_file_sources_can_be_read_twice_readers_once(tmp_path, table):
    write_ipc(tmp_path / "f.arrow", table)
    with open_trace(tmp_path / "f.arrow") as reader:
        assert [b.n for b in reader] == [b.n for b in reader] == [10]
    once = open_trace(pa.RecordBatchReader.from_batches(table.schema, table.to_batches()))
    assert sum(b.n for b in once) == 10
    with pytest.raises(RuntimeError):
        list(once)


def test_closed_reader_refuses(tmp_path, table):
    write_ipc(tmp_path / "f.arrow", table)
    reader = open_trace(tmp_path / "f.arrow")
    reader.close()
    with pytest.raises(ValueError):
        iter(reader)


def test_other_source_types_are_a_type_error():
    with pytest.raises(TypeError):
        open_trace(b"not a path")


# --- the batch contract ---------------------------------------------------------------


def test_batch_has_every_column_contiguous_readonly_schema_dtype(table):
    (batch,) = list(open_trace(table))
    assert isinstance(batch, Batch) and (batch.row0, batch.n, len(batch)) == (0, 10, 10)
    assert list(batch.cols) == list(COLUMN_NAMES)
    for col in COLUMNS:
        values = batch[col.name]
        assert values.dtype == col.dtype and values.shape == (10,)
        assert values.flags.c_contiguous and not values.flags.writeable


def test_absent_optional_columns_take_defaults():
    (batch,) = list(open_trace(raw_table(required(6))))
    c = batch.cols
    np.testing.assert_array_equal(c["peer"], c["block"])
    np.testing.assert_array_equal(c["cluster"], c["block"])
    assert (c["scope"] == 4).all() and (c["site"] == SITE_NONE).all()
    for name in ("space", "addr", "size", "addr2", "space2", "obj", "arg", "sem", "proxy"):
        assert (c[name] == 0).all(), name


def test_nulls_read_as_defaults():
    cols = required(4)
    cols["peer"] = pa.array([7, None, 9, None], pa.uint32())
    cols["scope"] = pa.array([None, 1, None, 2], pa.uint8())
    cols["site"] = pa.array([None, 0, None, 0], pa.uint32())
    cols["addr"] = pa.nulls(4, pa.uint64())
    cols["obj"] = pa.nulls(4)  # an all-null column of Arrow's null type
    (batch,) = list(open_trace(raw_table(cols, {**META, "tracerace.sites": '["s"]'})))
    block = batch["block"]
    assert batch["peer"].tolist() == [7, block[1], 9, block[3]]
    assert batch["scope"].tolist() == [4, 1, 4, 2]
    assert batch["site"].tolist() == [SITE_NONE, 0, SITE_NONE, 0]
    assert batch["addr"].tolist() == [0] * 4 and batch["obj"].tolist() == [0] * 4


def test_other_integer_types_are_converted():
    cols = {
        "ts": pa.array([1, 2, 3], pa.int64()),
        "op": pa.array([0, 1, 2], pa.int32()),
        "launch": pa.array([0, 0, 1], pa.int8()),
        "block": pa.array([0, 1, 2], pa.uint16()),
        "thread": pa.array([5, 6, 7], pa.uint64()),
        "addr": pa.array([0, 2**40, 2**62], pa.int64()),
        "arg": pa.array([-1, 0, 2**63 - 1], pa.int64()),
        "size": pa.array([4, 8, 16], pa.int16()),
    }
    (batch,) = list(open_trace(raw_table(cols)))
    assert batch["op"].tolist() == [0, 1, 2] and batch["op"].dtype == np.uint8
    assert batch["addr"].tolist() == [0, 2**40, 2**62]
    assert batch["arg"].tolist() == [-1, 0, 2**63 - 1]
    assert batch["thread"].dtype == np.uint32


def test_unknown_columns_are_ignored():
    cols = required(3, comment=pa.array(["x", "y", "z"]), weight=[0.5, 1.5, 2.5])
    (batch,) = list(open_trace(raw_table(cols)))
    assert "comment" not in batch.cols and batch.n == 3


def test_unknown_metadata_is_kept_as_extra():
    meta = {**META, "pandas": "{}", "tracerace.future": "x"}
    reader = open_trace(raw_table(required(1), meta))
    assert reader.meta.extra == {"pandas": "{}", "tracerace.future": "x"}


def test_empty_trace_yields_nothing(tmp_path):
    table = make_table({name: [] for name in ("ts", "op", "launch", "block", "thread")})
    write_ipc(tmp_path / "e.arrow", table)
    assert list(open_trace(tmp_path / "e.arrow")) == []
    assert open_trace(tmp_path / "e.arrow").meta.num_rows == 0


# --- re-chunking ---------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(chunks=st.lists(st.integers(0, 40), min_size=0, max_size=12), batch_size=st.integers(1, 50))
def test_rechunking_keeps_rows_and_bounds_batches(chunks, batch_size):
    n = sum(chunks)
    table = make_table(required(n, addr=np.arange(n) * 3))
    bounds = np.cumsum([0] + chunks)
    pieces = [table.slice(lo, hi - lo).to_batches() for lo, hi in zip(bounds, bounds[1:])]
    records = [r for piece in pieces for r in piece]
    reader = pa.RecordBatchReader.from_batches(table.schema, records)
    batches = list(open_trace(reader, batch_size=batch_size))
    assert [b.row0 for b in batches] == list(np.cumsum([0] + [b.n for b in batches])[:-1])
    assert all(0 < b.n <= batch_size for b in batches)
    # Small inputs are glued: a batch falls short only where a large record
    # starts or ends.
    large = [(lo, hi) for lo, hi in zip(bounds, bounds[1:]) if hi - lo >= glue_limit(batch_size)]
    large_starts = {lo for lo, _ in large}
    edges = large_starts | {hi for _, hi in large}
    assert all(b.n == batch_size or b.row0 + b.n in edges for b in batches[:-1])
    # ... and large ones are not copied into glued batches.
    assert all(lo in {b.row0 for b in batches} for lo in large_starts if lo < n)
    got = np.concatenate([b["addr"] for b in batches]) if batches else np.zeros(0)
    np.testing.assert_array_equal(got, np.arange(n) * 3)


@pytest.mark.parametrize("batch_size", [1, 7, 64, 1000])
def test_rechunking_a_file(tmp_path, batch_size):
    n = 300
    table = make_table(required(n, obj=np.arange(n) ** 2))
    write_ipc(tmp_path / "t.arrows", table, stream=True, chunk=41, compression="lz4")
    batches = list(open_trace(tmp_path / "t.arrows", batch_size=batch_size))
    # Records of 41 rows are glued up to batch_size, or (when that large) cut.
    biggest = min(batch_size, 41) if 41 >= glue_limit(batch_size) else min(batch_size, n)
    assert max(b.n for b in batches) == biggest
    np.testing.assert_array_equal(np.concatenate([b["obj"] for b in batches]), np.arange(n) ** 2)


def test_a_mapped_file_is_released_once_per_release_rows(tmp_path, monkeypatch):
    """The mapping's pages are handed back before the first batch and then
    before each batch that starts ``RELEASE_ROWS`` or more rows after the last
    hand-back: not before every small batch (which made the batches in flight
    fault their pages in again), and not never (a whole file resident)."""
    import tracerace.trace.reader as reader

    n = 10_000
    path = tmp_path / "t.arrow"
    write_ipc(path, make_table(required(n)), stream=False, chunk=n, compression=None)
    released: list[int] = []
    rows_read = [0]
    monkeypatch.setattr(reader, "RELEASE_ROWS", 3000)
    monkeypatch.setattr(reader._MappedFile, "release", lambda self: released.append(rows_read[0]))
    with open_trace(path, batch_size=1000) as r:
        for batch in r:
            rows_read[0] += batch.n
    assert rows_read[0] == n
    assert released == [0, 3000, 6000, 9000]


# --- memory ---------------------------------------------------------------------------

SCALE = float(os.environ.get("TRACERACE_SCALE", "1"))

_RSS_PROBE = textwrap.dedent(f"""
    import sys
    from tracerace.trace.reader import open_trace
    def peak():
        return {PEAK_KIB} * 1024
    reader = open_trace(sys.argv[1], batch_size=1 << 16)
    before = peak()
    rows = 0
    for batch in reader:
        rows += batch.n
        for values in batch.cols.values():
            values.sum()  # touch every column
    print(rows, before, peak())
""")


@pytest.mark.scale
def test_reading_memory_is_bounded_by_batch_not_file(tmp_path):
    """Reading a memory-mapped file must not leave the whole file resident."""
    n = int(4_000_000 * SCALE)
    path = tmp_path / "big.arrow"
    schema = pa.schema([(c.name, c.arrow_type) for c in COLUMNS[:8]], metadata=META)
    with ipc.new_file(str(path), schema) as w:
        for lo in range(0, n, 1 << 20):
            m = min(1 << 20, n - lo)
            ts = np.arange(lo, lo + m, dtype=np.uint64)
            w.write_batch(
                pa.record_batch(
                    [
                        ts,
                        np.zeros(m, np.uint8),
                        np.zeros(m, np.uint32),
                        (ts % 64).astype(np.uint32),
                        (ts % 128).astype(np.uint32),
                        np.zeros(m, np.uint8),
                        ts * 4,
                        np.full(m, 4, np.uint32),
                    ],
                    schema=schema,
                )
            )
    size = path.stat().st_size
    out = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, str(path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    rows, before, peak = map(int, out.stdout.split())
    assert rows == n
    # 18 columns x 64 Ki rows is ~5 MB a batch; the file is ~34 B a row.
    assert peak - before < max(size // 4, 64 << 20), (size, before, peak)
