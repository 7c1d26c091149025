"""Writers: lossless round trips, bounded spilling, and the conveniences tests rely on."""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from builders import follow_extension_rules

from tracerace.errors import TraceError
from tracerace.trace.meta import Buffer
from tracerace.trace.ops import OP_CODES, Op, Proxy, Scope, Sem, Space
from tracerace.trace.reader import open_trace
from tracerace.trace.schema import COLUMN_NAMES, COLUMNS, SITE_NONE, arrow_schema
from tracerace.trace.writer import TraceWriter, make_table, write_table

COPIES = (
    Op.CP_ASYNC,
    Op.TMA_LOAD,
    Op.TMA_STORE,
    Op.BULK_COPY_PEER,
    Op.BULK_REDUCE,
    Op.BULK_REDUCE_PEER,
)
ADDRESSED = (Op.READ, Op.WRITE, Op.ATOMIC, Op.INIT, *COPIES, Op.ST_ASYNC, Op.RED_ASYNC)
SITES = ["k.cu:10 LDG", "k.cu:11 STS", "kernel.py:88 tl.store"]
BUFFERS = [Buffer("a", 0, 4096, (4, 8), 4), Buffer("tile", 1, 0, (16, 16), 2, (1, 16), 3)]


def every_column(n: int = 500, seed: int = 0) -> dict[str, np.ndarray]:
    """Valid rows using every op code and the full range of every column."""
    rng = np.random.default_rng(seed)
    codes = np.array(sorted(OP_CODES), dtype=np.uint8)  # the codes this reader takes

    def ints(dtype, low=None, high=None):
        info = np.iinfo(dtype)
        values = rng.integers(
            info.min if low is None else low,
            info.max if high is None else high,
            n,
            dtype=dtype,
            endpoint=True,
        )
        values[:2] = [info.min if low is None else low, info.max if high is None else high]
        return values

    cols = {
        "ts": np.sort(ints(np.uint64)),
        "op": np.resize(codes, n),
        "launch": ints(np.uint32),
        "block": ints(np.uint32),
        "thread": ints(np.uint32),
        "space": ints(np.uint8, 0, max(Space)),
        "addr": ints(np.uint64),
        "size": ints(np.uint32),
        "addr2": ints(np.uint64),
        "space2": ints(np.uint8, 0, max(Space)),
        "peer": ints(np.uint32),
        "cluster": ints(np.uint32),
        "obj": ints(np.uint64),
        "arg": ints(np.int64),
        "scope": ints(np.uint8, 0, max(Scope)),
        "sem": ints(np.uint8, 0, max(Sem)),
        "proxy": ints(np.uint8, 0, max(Proxy)),
        "site": np.where(rng.random(n) < 0.3, SITE_NONE, rng.integers(0, len(SITES), n)).astype(
            np.uint32
        ),
        "fence_spaces": ints(np.uint8, 0, 7),
    }
    assert list(cols) == list(COLUMN_NAMES)
    follow_extension_rules(cols)
    # A byte range must end within the 64-bit address space (address-overflow).
    room = np.iinfo(np.uint64).max - cols["size"].astype(np.uint64)
    for name, ops in (("addr", ADDRESSED), ("addr2", COPIES)):
        uses = np.isin(cols["op"], [int(op) for op in ops])
        cols[name] = np.where(uses, np.minimum(cols[name], room), cols[name])
    return cols


def read_back(path, batch_size=1 << 20):
    with open_trace(path, batch_size=batch_size) as reader:
        batches = list(reader)
        cols = {name: np.concatenate([b.cols[name] for b in batches]) for name in COLUMN_NAMES}
        return reader.meta, cols


def assert_same(got: dict, want: dict) -> None:
    for name in COLUMN_NAMES:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


CONTAINERS = [
    ("t.arrow", None, None),
    ("t.arrow", None, "lz4"),
    ("t.arrow", None, "zstd"),
    ("t.arrows", None, None),
    ("t.arrows", None, "lz4"),
    ("t.arrows", None, "zstd"),
    ("t.parquet", None, None),
    ("t.parquet", None, "zstd"),
    ("t.bin", "stream", "lz4"),
    ("t.bin", "parquet", None),
]


@pytest.mark.parametrize("name, fmt, compression", CONTAINERS)
def test_write_table_round_trip_is_lossless(tmp_path, name, fmt, compression):
    cols = every_column()
    path = tmp_path / name
    write_table(
        path,
        cols,
        sites=SITES,
        buffers=BUFFERS,
        producer="p 1.0",
        warnings=["launch 0: no access"],
        compression=compression,
        format=fmt,
    )
    meta, got = read_back(path, batch_size=77)
    assert_same(got, cols)
    assert (meta.sites, meta.buffers, meta.producer) == (tuple(SITES), tuple(BUFFERS), "p 1.0")
    assert meta.warnings == ("launch 0: no access",)


@pytest.mark.parametrize("name, fmt, compression", CONTAINERS)
def test_trace_writer_round_trip_is_lossless(tmp_path, name, fmt, compression):
    cols = every_column(300, seed=1)
    path = tmp_path / name
    with TraceWriter(path, format=fmt, compression=compression, producer="w", batch_size=64) as w:
        for text in SITES:
            w.site(text)
        for i in range(100):  # one row at a time ...
            row = {k: int(v[i]) for k, v in cols.items()}
            op = row.pop("op")
            w.event(Op(op) if i % 2 else op, **row)
        w.extend(**{k: v[100:250] for k, v in cols.items()})  # ... then in bulk
        for i in range(250, 300):
            w.event(int(cols["op"][i]), **{k: int(v[i]) for k, v in cols.items() if k != "op"})
        for buf in BUFFERS:  # registered last: the metadata is only final at close
            w.buffer(
                buf.name, buf.space, buf.base, buf.shape, buf.itemsize, buf.strides, buf.launch
            )
        w.warn("first")
        w.warn("second")
        w.warn("first")
    meta, got = read_back(path)
    assert_same(got, cols)
    assert (meta.sites, meta.buffers, meta.producer) == (tuple(SITES), tuple(BUFFERS), "w")
    assert meta.warnings == ("first", "second")
    assert sorted(os.listdir(tmp_path)) == [name]  # spill and temporary files are gone


def test_files_carry_the_full_schema_for_other_readers(tmp_path):
    write_table(
        tmp_path / "t.arrow",
        {"ts": [0], "op": [0], "launch": 0, "block": 0, "thread": 0},
        sites=["s"],
    )
    with ipc.open_file(str(tmp_path / "t.arrow")) as r:
        schema = r.schema
    assert schema.equals(arrow_schema())  # every column, exact types (metadata aside)
    assert schema.metadata[b"tracerace.version"] == b"1"
    assert json.loads(schema.metadata[b"tracerace.sites"]) == ["s"]
    write_table(
        tmp_path / "t.parquet", {"ts": [0], "op": [0], "launch": 0, "block": 0, "thread": 0}
    )
    assert pq.read_schema(tmp_path / "t.parquet").equals(arrow_schema())


def test_defaults_are_values_and_no_site_is_null(tmp_path):
    table = make_table(
        {"ts": [0, 1], "op": ["write", Op.READ], "launch": 0, "block": [3, 4], "thread": 0}
    )
    assert table.column("peer").to_pylist() == [3, 4]
    assert table.column("scope").to_pylist() == [4, 4]
    assert table.column("site").to_pylist() == [None, None]
    assert table.column("op").to_pylist() == [1, 0]
    assert table.schema.metadata[b"tracerace.version"] == b"1"


def test_make_table_accepts_lists_scalars_and_op_names():
    table = make_table(
        {
            "ts": range(3),
            "op": ["read", "bar_sync", 61],
            "launch": 1,
            "block": np.uint32(2),
            "thread": [0, 1, 2],
            "addr": [2**64 - 1, 0, 5],
            "arg": [-1, 0, 2**63 - 1],
        },
        sites=["x"],
        buffers=[{"name": "b", "space": 0, "base": 0, "shape": [4], "itemsize": 4}],
    )
    (batch,) = list(open_trace(table))
    assert batch["op"].tolist() == [0, 10, 61]
    assert batch["launch"].tolist() == [1, 1, 1] and batch["block"].tolist() == [2, 2, 2]
    assert batch["addr"].tolist() == [2**64 - 1, 0, 5]
    assert batch["arg"].tolist() == [-1, 0, 2**63 - 1]


def test_make_table_builds_bad_traces_on_purpose():
    """Value rules are the reader's job, so tests can build traces that break them."""
    table = make_table(
        {
            "ts": [5, 1],
            "op": [99, 0],
            "launch": 0,
            "block": 0,
            "thread": 0,
            "space": [7, 0],
            "site": [3, 3],
        }
    )
    assert table.column("op").to_pylist() == [99, 0]
    with pytest.raises(TraceError):
        list(open_trace(table))


@pytest.mark.parametrize(
    "columns, error, match",
    [
        ({"ts": [0], "op": [0], "launch": 0, "block": 0}, TypeError, "thread"),
        (
            {"ts": [0], "op": [0], "launch": 0, "block": 0, "thread": 0, "colour": [1]},
            TypeError,
            "colour",
        ),
        ({"ts": [0, 1], "op": [0], "launch": 0, "block": 0, "thread": 0}, ValueError, "length"),
        ({"ts": 0, "op": 0, "launch": 0, "block": 0, "thread": 0}, ValueError, "sequence"),
        ({"ts": [0], "op": ["jump"], "launch": 0, "block": 0, "thread": 0}, ValueError, "jump"),
        ({"ts": [-1], "op": [0], "launch": 0, "block": 0, "thread": 0}, TraceError, "ts value -1"),
        (
            {"ts": [0], "op": [256], "launch": 0, "block": 0, "thread": 0},
            TraceError,
            "op value 256",
        ),
        (
            {"ts": [0], "op": [0], "launch": 0, "block": 0, "thread": np.array([-2])},
            TraceError,
            "thread value -2",
        ),
        ({"ts": [0.5], "op": [0], "launch": 0, "block": 0, "thread": 0}, TraceError, "integer"),
        ({"ts": np.zeros(1), "op": [0], "launch": 0, "block": 0, "thread": 0}, TraceError, "float"),
    ],
)
def test_make_table_rejects_what_cannot_be_stored(columns, error, match):
    with pytest.raises(error, match=match):
        make_table(columns)


def test_write_table_converts_a_foreign_table(tmp_path):
    foreign = pa.table(
        {
            "ts": pa.array([0, 1, 2], pa.int64()),
            "op": pa.array([0, 1, 0], pa.int32()),
            "launch": [0, 0, 0],
            "block": [0, 0, 1],
            "thread": [1, 2, 3],
            "addr": pa.array([8, None, 16], pa.int64()),
            "note": ["a", "b", "c"],
        }
    )
    write_table(tmp_path / "t.arrows", foreign, sites=["s"], producer="conv")
    meta, got = read_back(tmp_path / "t.arrows")
    assert got["addr"].tolist() == [8, 0, 16] and got["op"].dtype == np.uint8
    assert meta.sites == ("s",) and meta.producer == "conv"
    # its own metadata is kept when none is given
    write_table(
        tmp_path / "again.arrow",
        make_table({"ts": [0], "op": [0], "launch": 0, "block": 0, "thread": 0}, sites=["x"]),
    )
    assert read_back(tmp_path / "again.arrow")[0].sites == ("x",)


def test_writer_dedups_sites_and_checks_buffers(tmp_path):
    w = TraceWriter(tmp_path / "t.arrow")
    assert [w.site("a"), w.site("b"), w.site("a")] == [0, 1, 0]
    assert w.buffer("x", Space.SHARED, np.int64(0), (2, 2), 4) == Buffer("x", 1, 0, (2, 2), 4)
    with pytest.raises(ValueError, match="itemsize"):
        w.buffer("y", 0, 0, (2,), 0)
    with pytest.raises(ValueError, match="strides"):
        w.buffer("y", 0, 0, (2, 2), 4, strides=(1,))
    w.close()
    assert open_trace(tmp_path / "t.arrow").meta.sites == ("a", "b")


def test_writer_event_errors(tmp_path):
    w = TraceWriter(tmp_path / "t.arrow")
    with pytest.raises(TypeError, match="colour"):
        w.event(Op.READ, ts=0, launch=0, block=0, thread=0, colour=1)
    w.event(Op.READ, ts=0, launch=0, block=0, thread=0)
    with pytest.raises(TraceError, match=r"row 1: bad-value: addr value -4"):
        w.event(Op.READ, ts=1, launch=0, block=0, thread=0, addr=-4)
    with pytest.raises(TypeError, match="ts"):
        w.extend(op=[0], launch=[0], block=[0], thread=[0])
    w.close()
    meta, got = read_back(tmp_path / "t.arrow")
    assert meta.num_rows == 1
    with pytest.raises(ValueError, match="closed"):
        w.event(Op.READ, ts=2, launch=0, block=0, thread=0)


def test_exception_in_with_block_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError):
        with TraceWriter(tmp_path / "t.arrow", batch_size=4) as w:
            for i in range(10):  # enough rows to have spilled
                w.event(Op.WRITE, ts=i, launch=0, block=0, thread=0)
            raise RuntimeError("producer crashed")
    assert os.listdir(tmp_path) == []


def test_empty_writer_writes_a_valid_empty_trace(tmp_path):
    with TraceWriter(tmp_path / "t.parquet", producer="nothing"):
        pass
    reader = open_trace(tmp_path / "t.parquet")
    assert list(reader) == [] and reader.meta.producer == "nothing"


def test_format_and_compression_are_checked(tmp_path):
    with pytest.raises(ValueError, match="format"):
        TraceWriter(tmp_path / "t", format="csv")
    with pytest.raises(ValueError, match="compression"):
        TraceWriter(tmp_path / "t", compression="gzip")
    assert TraceWriter(tmp_path / "t.arrows").format == "stream"
    assert TraceWriter(tmp_path / "t.parquet").format == "parquet"
    assert TraceWriter(tmp_path / "t.feather").format == "file"


def test_spilled_writer_reads_back_in_bounded_batches(tmp_path):
    n = 10_000
    with TraceWriter(tmp_path / "t.arrow", compression="lz4", batch_size=1000) as w:
        w.extend(
            ts=np.arange(n),
            op=np.full(n, int(Op.READ)),
            launch=0,
            block=0,
            thread=np.arange(n) % 32,
            addr=np.arange(n) * 4,
            size=4,
        )
    with ipc.open_file(str(tmp_path / "t.arrow")) as r:
        assert r.num_record_batches == n // 1000
    meta, got = read_back(tmp_path / "t.arrow", batch_size=3000)
    assert meta.num_rows == n and got["addr"].tolist() == list(range(0, 4 * n, 4))
    for col in COLUMNS:
        assert got[col.name].dtype == col.dtype


@pytest.mark.parametrize("name", ["t.arrow", "t.arrows", "t.parquet"])
def test_set_value_reaches_rows_already_spilled_and_pending(tmp_path, name):
    """A count known late (a barrier's arrivals) is set on rows written long before:
    the writer does not keep them in memory for it."""
    out = tmp_path / name
    with TraceWriter(out, batch_size=4) as w:
        zeros = np.zeros(10, dtype=np.uint32)
        w.extend(
            ts=np.arange(10, dtype=np.uint64),
            op=np.full(10, Op.BAR_SYNC, np.uint8),
            launch=zeros,
            block=zeros,
            thread=np.arange(10, dtype=np.uint32),
        )
        w.event("bar_sync", ts=10, launch=0, block=0, thread=10)
        for row in (0, 3, 4, 9, 10):  # spilled (first and later batches), pending
            w.set_value(row, "arg", 11)
        with pytest.raises(ValueError, match="row 11 has not been written"):
            w.set_value(11, "arg", 1)
        with pytest.raises(TraceError, match="does not fit"):
            w.set_value(0, "arg", 1 << 63)
    with open_trace(str(out)) as t:
        arg = np.concatenate([b.cols["arg"] for b in t])
    assert arg.tolist() == [11, 0, 0, 11, 11, 0, 0, 0, 0, 11, 11]


@pytest.mark.parametrize(
    "ops",
    [
        np.array(["write", "bar_sync"]),
        np.array([Op.WRITE, "BAR_SYNC"], dtype=object),
        ["write", Op.BAR_SYNC],
    ],
)
def test_extend_takes_the_op_names_event_takes(tmp_path, ops):
    with TraceWriter(tmp_path / "t.arrow") as w:
        w.event("write", ts=0, launch=0, block=0, thread=0)
        w.extend(op=ops, ts=[1, 2], launch=0, block=0, thread=[0, 1])
    meta, got = read_back(tmp_path / "t.arrow")
    assert got["op"].tolist() == [int(Op.WRITE), int(Op.WRITE), int(Op.BAR_SYNC)]
