"""``tracerace validate`` and ``tracerace info``: output, formats, exit codes.

``info`` is checked against a naive whole-trace computation written here in
plain Python, on batch sizes that split the trace awkwardly.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from builders import follow_extension_rules
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tracerace.cli import app
from tracerace.trace.info import trace_info
from tracerace.trace.meta import Buffer
from tracerace.trace.ops import OP_CODES, Op
from tracerace.trace.writer import make_table, write_table

runner = CliRunner()

SMALL = {
    "ts": [0, 1, 2, 3, 4, 5, 6],
    "op": ["init", "write", "bar_sync", "read", "cp_async", "tma_store", "atomic"],
    "launch": [0, 0, 0, 0, 1, 1, 1],
    "block": [0, 0, 1, 1, 0, 0, 0],
    "thread": [0, 1, 0, 1, 0, 0, 3],
    "space": [0, 1, 0, 1, 0, 0, 0],
    "addr": [0x1000, 0x10, 0, 0x14, 0x40, 0x2000, 0x1008],
    "size": [64, 4, 0, 4, 16, 32, 8],
    "addr2": [0, 0, 0, 0, 0x1010, 0x80, 0],
    "space2": [0, 0, 0, 0, 0, 1, 0],
    "arg": [0, 0, 2, 0, 0, 0, 0],
}


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.arrow"
    write_table(
        path, SMALL, sites=["a", "b"], buffers=[Buffer("x", 0, 0x1000, (16,), 4)], producer="unit"
    )
    return path


def test_info_json(small):
    result = runner.invoke(app, ["info", str(small), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["events"] == 7 and doc["launches"] == 2 and doc["blocks"] == 3
    assert doc["agents"] == 6
    assert doc["ops"] == {
        "init": 1,
        "write": 1,
        "bar_sync": 1,
        "read": 1,
        "cp_async": 1,
        "tma_store": 1,
        "atomic": 1,
    }
    # global: init, atomic, cp_async source, tma_store destination
    assert doc["spaces"]["global"] == {"accesses": 4, "lo": 0x1000, "hi": 0x2020}
    # shared: write, read, cp_async destination, tma_store source (space2 is implied)
    assert doc["spaces"]["shared"] == {"accesses": 4, "lo": 0x10, "hi": 0xA0}
    assert doc["ts"] == {"first": 0, "last": 6}
    assert doc["sites"] == 2 and doc["producer"] == "unit" and doc["container"] == "file"
    assert doc["buffers"] == [
        {"name": "x", "space": 0, "base": 0x1000, "shape": [16], "itemsize": 4}
    ]


def test_info_text(small):
    result = runner.invoke(app, ["info", str(small)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"trace     {small} (Arrow IPC file, trace format v1, producer: unit)"
    assert "events    7" in lines and "agents    6 (distinct launch, block, thread)" in lines
    assert "memory    global: 4 accesses, bytes [0x1000, 0x2020) (4,128 B span)" in lines
    assert "buffers   x: global at 0x1000, shape 16, itemsize 4" in lines


def test_validate_ok_line(small):
    result = runner.invoke(app, ["validate", str(small)])
    assert result.exit_code == 0
    assert result.stdout == f"{small}: OK: trace format v1, 7 events, 2 sites, 1 buffers\n"


def test_bad_format_and_usage_exit_2(small):
    result = runner.invoke(app, ["info", str(small), "--format", "xml"])
    assert result.exit_code == 2
    assert result.stderr == "tracerace: error: unknown --format 'xml' (choose text or json)\n"
    assert runner.invoke(app, ["validate"]).exit_code == 2
    assert runner.invoke(app, ["info", str(small), "--bogus"]).exit_code == 2


def test_info_of_an_empty_trace(tmp_path):
    path = tmp_path / "e.arrows"
    write_table(path, {"ts": [], "op": [], "launch": [], "block": [], "thread": []})
    result = runner.invoke(app, ["info", str(path), "--format", "json"])
    doc = json.loads(result.stdout)
    assert doc["events"] == 0 and doc["agents"] == 0 and doc["ts"] == {"first": None, "last": None}
    assert runner.invoke(app, ["info", str(path)]).exit_code == 0


def naive_info(cols: dict) -> dict:
    """The summary computed row by row, the obvious way."""
    rows = list(
        zip(
            *(
                cols[k].tolist()
                for k in (
                    "op",
                    "launch",
                    "block",
                    "thread",
                    "space",
                    "addr",
                    "size",
                    "addr2",
                    "space2",
                )
            )
        )
    )
    spaces: dict = {}

    def touch(space, addr, size):
        name = ("global", "shared", "local")[space]
        use = spaces.setdefault(name, {"accesses": 0, "lo": None, "hi": None})
        use["accesses"] += 1
        if size:
            use["lo"] = addr if use["lo"] is None else min(use["lo"], addr)
            use["hi"] = addr + size if use["hi"] is None else max(use["hi"], addr + size)

    for op, _launch, _block, _thread, space, addr, size, addr2, space2 in rows:
        if op in (Op.READ, Op.WRITE, Op.ATOMIC, Op.INIT, Op.ST_ASYNC, Op.RED_ASYNC):
            touch(space, addr, size)
        elif op == Op.CP_ASYNC:
            touch(1, addr, size), touch(space2, addr2, size)
        elif op == Op.TMA_LOAD:
            touch(1, addr, size), touch(0, addr2, size)
        elif op in (Op.TMA_STORE, Op.BULK_REDUCE):
            touch(0, addr, size), touch(1, addr2, size)
        elif op in (Op.BULK_COPY_PEER, Op.BULK_REDUCE_PEER):
            touch(1, addr, size), touch(1, addr2, size)
    return {
        "events": len(rows),
        "launches": len({r[1] for r in rows}),
        "blocks": len({r[1:3] for r in rows}),
        "agents": len({r[1:4] for r in rows}),
        "ops": dict(Counter(Op(r[0]).label for r in rows)),
        "spaces": spaces,
    }


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 300), batch_size=st.integers(1, 64), seed=st.integers(0, 2**16))
def test_info_streams_to_the_naive_answer(n, batch_size, seed):
    rng = np.random.default_rng(seed)
    codes = np.array(sorted(OP_CODES), np.uint8)
    cols = {
        "ts": np.arange(n),
        "op": rng.choice(codes, n),
        "launch": rng.integers(0, 3, n),
        "block": rng.integers(0, 4, n),
        "thread": rng.integers(0, 2**32, n, dtype=np.uint64) % 4 * 2**30,
        "space": rng.integers(0, 3, n),
        "space2": rng.integers(0, 3, n),
        "addr": rng.integers(0, 2**64, n, dtype=np.uint64),
        "addr2": rng.integers(0, 2**20, n),
        "size": rng.integers(0, 5, n) * 4,
    }
    follow_extension_rules(cols)
    info = trace_info(make_table(cols), batch_size=batch_size).to_json()
    table = make_table(cols)
    expect = naive_info({k: table.column(k).to_numpy() for k in table.column_names})
    for key, value in expect.items():
        assert info[key] == value, key
