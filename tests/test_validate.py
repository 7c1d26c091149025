"""Every kind of bad input, through the API and the command line.

Each case builds a file, then checks that reading it raises a TraceError with
the right rule and row, and that ``tracerace validate`` / ``info`` exit 2 with
one line naming file, row and rule, and no traceback.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tracerace.cli import app
from tracerace.errors import TraceError
from tracerace.trace.reader import open_trace, validate_trace

META = {"tracerace.version": "1"}
ROOT = Path(__file__).resolve().parent.parent


def cols(n: int = 10, **changes) -> dict:
    """Required columns of a valid trace; ``changes`` replace or add columns."""
    out = {
        "ts": np.arange(n, dtype=np.uint64),
        "op": np.zeros(n, np.uint8),
        "launch": np.zeros(n, np.uint32),
        "block": np.zeros(n, np.uint32),
        "thread": np.arange(n, dtype=np.uint32),
    }
    out.update(changes)
    return out


def with_value(column: str, row: int, value, n: int = 10, dtype=np.uint8):
    values = np.zeros(n, dtype=dtype)
    values[row] = value
    return {column: values}


def ipc_file(columns: dict, metadata=META, *, stream=False, chunk=None):
    def build(tmp: Path) -> Path:
        table = pa.table(columns)
        if metadata is not None:
            table = table.replace_schema_metadata(metadata)
        path = tmp / ("t.arrows" if stream else "t.arrow")
        new = ipc.new_stream if stream else ipc.new_file
        with new(str(path), table.schema) as w:
            w.write_table(table, max_chunksize=chunk)
        return path

    return build


def truncated(build, keep: float):
    def cut(tmp: Path) -> Path:
        path = build(tmp)
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * keep)])
        return path

    return cut


def parquet_file(tmp: Path) -> Path:
    path = tmp / "t.parquet"
    pq.write_table(pa.table(cols(100)).replace_schema_metadata(META), path)
    return path


def text_file(content: bytes):
    def build(tmp: Path) -> Path:
        path = tmp / "t.arrow"
        path.write_bytes(content)
        return path

    return build


def swapped_ts(row: int, n: int = 10):
    ts = np.arange(n, dtype=np.uint64) * 10
    ts[row] = ts[row - 1] - 5
    return {"ts": ts}


# (id, builder, rule, row or None, fragment of the message, batch_size for the API)
CASES = [
    ("no-file", lambda tmp: tmp / "absent.arrow", "no-such-file", None, "no such file", None),
    ("directory", lambda tmp: tmp, "not-arrow", None, "directory", None),
    ("empty", text_file(b""), "not-arrow", None, "empty", None),
    ("text", text_file(b"ts,op\n0,1\n"), "not-arrow", None, "not an Arrow", None),
    ("truncated-file", truncated(ipc_file(cols(100)), 0.5), "not-arrow", None, "truncated", None),
    (
        "truncated-stream",
        truncated(ipc_file(cols(1000), stream=True, chunk=100), 0.6),
        "not-arrow",
        500,
        "truncated",
        None,
    ),
    ("truncated-parquet", truncated(parquet_file, 0.5), "not-arrow", None, "Parquet", None),
    *[
        (
            f"missing-{c}",
            ipc_file({k: v for k, v in cols().items() if k != c}),
            "missing-column",
            None,
            f"'{c}'",
            None,
        )
        for c in ("ts", "op", "launch", "block", "thread")
    ],
    ("float-addr", ipc_file(cols(addr=np.zeros(10))), "wrong-type", None, "'addr'", None),
    ("string-op", ipc_file(cols(op=["read"] * 10)), "wrong-type", None, "'op'", None),
    ("bool-thread", ipc_file(cols(thread=np.ones(10, bool))), "wrong-type", None, "'thread'", None),
    ("duplicate", lambda tmp: _duplicate(tmp), "duplicate-column", None, "'addr'", None),
    (
        "negative-addr",
        ipc_file(cols(**with_value("addr", 3, -1, dtype=np.int64))),
        "bad-value",
        3,
        "addr value -1",
        None,
    ),
    (
        "huge-arg",
        ipc_file(cols(**with_value("arg", 2, 2**63, dtype=np.uint64))),
        "bad-value",
        2,
        "arg value",
        None,
    ),
    (
        "null-ts",
        ipc_file(cols(ts=pa.array([0, None, 2] + list(range(3, 10)), pa.uint64()))),
        "bad-value",
        1,
        "ts is null",
        None,
    ),
    (
        "wide-op",
        ipc_file(cols(op=np.array([0] * 4 + [300] + [0] * 5, np.int32))),
        "unknown-op",
        4,
        "op value 300",
        None,
    ),
    (
        "unknown-op",
        ipc_file(cols(**with_value("op", 5, 99))),
        "unknown-op",
        5,
        "op code 99 is not in trace format v1",
        None,
    ),
    (
        "extension-op",
        ipc_file(cols(**with_value("op", 6, 120))),
        "unknown-op",
        6,
        "extension range",
        None,
    ),
    ("ts-decreasing", ipc_file(cols(**swapped_ts(6))), "ts-decreasing", 6, "ts 45 is less", None),
    (
        "ts-across-batches",
        ipc_file(cols(**swapped_ts(4))),
        "ts-decreasing",
        4,
        "previous row's ts 30",
        4,
    ),
    (
        "ts-across-chunks",
        ipc_file(cols(**swapped_ts(5)), stream=True, chunk=5),
        "ts-decreasing",
        5,
        "non-decreasing",
        None,
    ),
    ("no-version", ipc_file(cols(), metadata=None), "version", None, "tracerace.version", None),
    (
        "version-2",
        ipc_file(cols(), metadata={"tracerace.version": "2"}),
        "version",
        None,
        "trace format version 2 is newer than the newest this tracerace reads (1)",
        None,
    ),
    (
        "version-text",
        ipc_file(cols(), metadata={"tracerace.version": "one"}),
        "version",
        None,
        "'one'",
        None,
    ),
    (
        "version-0",
        ipc_file(cols(), metadata={"tracerace.version": "0"}),
        "version",
        None,
        "older",
        None,
    ),
    (
        "sites-not-json",
        ipc_file(cols(), {**META, "tracerace.sites": "[a"}),
        "metadata",
        None,
        "tracerace.sites",
        None,
    ),
    (
        "sites-not-strings",
        ipc_file(cols(), {**META, "tracerace.sites": "[1, 2]"}),
        "metadata",
        None,
        "list of strings",
        None,
    ),
    (
        "buffers-not-list",
        ipc_file(cols(), {**META, "tracerace.buffers": "{}"}),
        "metadata",
        None,
        "tracerace.buffers",
        None,
    ),
    (
        "warnings-not-strings",
        ipc_file(cols(), {**META, "tracerace.warnings": '["a", 2]'}),
        "metadata",
        None,
        "tracerace.warnings",
        None,
    ),
    (
        "buffer-no-shape",
        ipc_file(
            cols(),
            {**META, "tracerace.buffers": '[{"name": "x", "space": 0, "base": 0, "itemsize": 4}]'},
        ),
        "metadata",
        None,
        "'shape'",
        None,
    ),
    (
        "buffer-strides",
        ipc_file(
            cols(),
            {
                **META,
                "tracerace.buffers": '[{"name": "x", "space": 0, "base": 0, "shape": [2, 2],'
                ' "itemsize": 4, "strides": [1]}]',
            },
        ),
        "metadata",
        None,
        "strides",
        None,
    ),
    (
        "site-range",
        ipc_file(
            cols(site=pa.array([None, 0, 1, 2] + [None] * 6, pa.uint32())),
            {**META, "tracerace.sites": '["a", "b"]'},
        ),
        "site-range",
        3,
        "site 2 is out of range",
        None,
    ),
    (
        "site-without-sites",
        ipc_file(cols(**with_value("site", 0, 0, dtype=np.uint32))),
        "site-range",
        0,
        "no tracerace.sites",
        None,
    ),
    ("space", ipc_file(cols(**with_value("space", 2, 3))), "bad-value", 2, "space 3", None),
    ("space2", ipc_file(cols(**with_value("space2", 8, 3))), "bad-value", 8, "space2 3", None),
    ("scope", ipc_file(cols(**with_value("scope", 1, 6))), "bad-value", 1, "scope 6", None),
    ("sem", ipc_file(cols(**with_value("sem", 9, 4))), "bad-value", 9, "sem 4", None),
    ("proxy", ipc_file(cols(**with_value("proxy", 7, 2))), "bad-value", 7, "proxy 2", None),
    (
        "first-row-wins",
        ipc_file(cols(**with_value("op", 7, 99), **with_value("space", 3, 5))),
        "bad-value",
        3,
        "space 5",
        None,
    ),
    (
        "late-batch",
        ipc_file(cols(3000, **with_value("op", 2500, 77, n=3000)), chunk=700),
        "unknown-op",
        2500,
        "op code 77",
        1000,
    ),
    (
        "address-overflow",
        ipc_file(
            cols(
                **with_value("addr", 4, 2**64 - 4, dtype=np.uint64),
                **with_value("size", 4, 4, dtype=np.uint32),
            )
        ),
        "address-overflow",
        4,
        "addr 0xfffffffffffffffc + size 4 passes the end",
        None,
    ),
    (
        "copy-source-overflow",
        ipc_file(
            cols(
                op=np.full(10, 30, np.uint8),  # cp_async
                **with_value("addr2", 6, 2**64 - 2, dtype=np.uint64),
                size=np.full(10, 16, np.uint32),
            )
        ),
        "address-overflow",
        6,
        "addr2 0xfffffffffffffffe",
        None,
    ),
]


def _duplicate(tmp: Path) -> Path:
    c = cols()
    names = list(c) + ["addr", "addr"]
    arrays = list(c.values()) + [np.zeros(10, np.uint64)] * 2
    table = pa.Table.from_arrays(arrays, names=names).replace_schema_metadata(META)
    path = tmp / "dup.arrow"
    with ipc.new_file(str(path), table.schema) as w:
        w.write_table(table)
    return path


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_api_reports_rule_and_row(tmp_path, case):
    _, build, rule, row, fragment, batch_size = case
    path = build(tmp_path)
    with pytest.raises(TraceError) as info:
        validate_trace(path, batch_size=batch_size or 1 << 20)
    err = info.value
    assert (err.rule, err.row, err.path) == (rule, row, str(path)), str(err)
    assert fragment in err.message
    assert "\n" not in str(err)


@pytest.mark.parametrize("command", ["validate", "info"])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_cli_exits_2_with_one_line(tmp_path, case, command):
    _, build, rule, row, fragment, _ = case
    path = build(tmp_path)
    result = CliRunner().invoke(app, [command, str(path)])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    line = result.stderr
    assert line.endswith("\n") and line.count("\n") == 1, line
    where = f"row {row}: " if row is not None else ""
    assert line.startswith(f"tracerace: error: {path}: {where}{rule}: "), line
    assert fragment in line and "Traceback" not in line


@pytest.mark.parametrize("command", ["validate", "info"])
def test_real_process_never_prints_a_traceback(tmp_path, command):
    path = truncated(ipc_file(cols(1000), stream=True, chunk=100), 0.6)(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "tracerace", command, str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2
    assert out.stdout == "" and "Traceback" not in out.stderr
    assert out.stderr.startswith(f"tracerace: error: {path}: row 500: not-arrow: ")


def test_valid_trace_passes(tmp_path):
    path = ipc_file(cols(50), {**META, "tracerace.sites": '["a"]'})(tmp_path)
    meta = validate_trace(path, batch_size=7)
    assert meta.num_rows == 50 and meta.sites == ("a",)
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 0
    assert result.stdout == f"{path}: OK: trace format v1, 50 events, 1 sites, 0 buffers\n"


def test_validate_is_the_package_api(tmp_path):
    import tracerace

    assert "validate" in tracerace.__all__ and "validate" in dir(tracerace)
    path = ipc_file(cols(50), {**META, "tracerace.sites": '["a"]'})(tmp_path)
    assert tracerace.validate(path).num_rows == 50
    bad = ipc_file(cols(3, op=np.array([1, 99, 1], np.uint8)), META)(tmp_path)
    with pytest.raises(TraceError, match="row 1"):
        tracerace.validate(bad)


def test_boundary_values_are_valid():
    n = 6
    table = pa.table(
        cols(
            n,
            space=np.array([0, 1, 2, 0, 1, 2], np.uint8),
            scope=np.array([0, 5, 4, 3, 2, 1], np.uint8),
            sem=np.array([0, 1, 2, 3, 0, 0], np.uint8),
            proxy=np.array([0, 1, 0, 1, 0, 1], np.uint8),
            site=np.array([0, 4294967295, 0, 0, 0, 0], np.uint32),
            ts=np.array([5, 5, 5, 6, 6, 7], np.uint64),
        )
    )
    table = table.replace_schema_metadata({**META, "tracerace.sites": '["only"]'})
    assert sum(b.n for b in open_trace(table)) == n


def test_error_in_table_names_no_file():
    table = pa.table(cols(**with_value("op", 1, 99))).replace_schema_metadata(META)
    with pytest.raises(TraceError, match=r"^<trace>: row 1: unknown-op: "):
        list(open_trace(table))
