"""CUDA coordinates: ``tracerace.launches`` read, written and used by every report."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from builders import Trace
from typer.testing import CliRunner

import tracerace
from tracerace.cli import app
from tracerace.errors import TraceError
from tracerace.trace.coords import META_KERNELS, META_LAUNCHES, Coords, LaunchDims, parse_launches
from tracerace.trace.reader import open_trace
from tracerace.trace.writer import TraceWriter, make_table


def fail(message: str) -> TraceError:
    return TraceError(message, rule="metadata")


def test_agents_are_named_by_block_and_thread_coordinates():
    c = Coords((LaunchDims(0, (4, 2, 1), (64, 2, 1)),))
    # block 5 of a 4x2 grid is (1,1,0); thread 97 of a 64x2 block is (33,1,0), warp 3 lane 1
    assert c.agent(0, 5, 97) == "block (1,1,0) thread (33,1,0) (warp 3, lane 1)"
    assert c.agent(0, 5, 97, warp=False) == "block (1,1,0) thread (33,1,0)"
    assert c.coords(0, 5, 97) == {"block": [1, 1, 0], "thread": [33, 1, 0], "warp": 3, "lane": 1}
    assert c.agent(1, 5, 97) == "(5,97)"  # no dims for launch 1: flat numbers
    assert c.agent(0, 8, 0) == "(8,0)"  # outside the grid: flat numbers
    one_warp = Coords((LaunchDims(0, (2, 1, 1), (32, 1, 1)),))
    assert one_warp.agent(0, 1, 5) == "block (1,0,0) thread (5,0,0)"  # no warp for one warp
    programs = Coords((LaunchDims(0, (8, 4, 1), (1, 1, 1)),))
    assert programs.agent(0, 13, 0) == "block (5,1,0)"  # a Triton program


def test_launches_metadata_is_checked():
    good = json.dumps([{"launch": 1, "grid": [4], "block": [128, 2], "kernel": "k"}])
    (dims,) = parse_launches({META_LAUNCHES: good}, fail)
    assert dims == LaunchDims(1, (4, 1, 1), (128, 2, 1), "k")
    for bad, words in [
        ("{", "not valid JSON"),
        ("{}", "JSON list"),
        ('[{"launch": -1, "grid": [1], "block": [1]}]', "launch must be"),
        ('[{"launch": 0, "grid": [0], "block": [1]}]', "grid must be"),
        ('[{"launch": 0, "grid": [1], "block": [1, 1, 1, 1]}]', "block must be"),
        (
            '[{"launch": 0, "grid": [1], "block": [1]}, {"launch": 0, "grid": [1], "block": [1]}]',
            "described twice",
        ),
    ]:
        with pytest.raises(TraceError, match=words):
            parse_launches({META_LAUNCHES: bad}, fail)


def test_gpu_import_kernels_give_the_dims_when_launches_is_absent():
    kernels = json.dumps(
        [
            {"launch": 0, "name": "k", "grid": [2, 1, 1], "block": [64, 1, 1], "source": "f"},
            {"launch": 1, "grid": "bad"},
        ]
    )
    assert parse_launches({META_KERNELS: kernels}, fail) == (
        LaunchDims(0, (2, 1, 1), (64, 1, 1), "k"),
    )


def test_writer_declares_launch_dims_and_the_reader_reads_them(tmp_path):
    path = tmp_path / "t.arrow"
    with TraceWriter(path) as w:
        w.launch_dims(0, (2, 1, 1), (64, 1, 1), kernel="k")
        w.event("write", ts=0, launch=0, block=1, thread=33, addr=0, size=4)
    with open_trace(path) as trace:
        assert trace.meta.launches == (LaunchDims(0, (2, 1, 1), (64, 1, 1), "k"),)
    with pytest.raises(ValueError, match="grid must be"):
        TraceWriter(tmp_path / "u.arrow").launch_dims(0, (0,), (1,))


def test_a_malformed_launches_key_is_bad_input_in_one_line(tmp_path):
    table = make_table(Trace().init(0, 0, addr=0, size=4).columns())
    meta = dict(table.schema.metadata)
    meta[META_LAUNCHES.encode()] = b'[{"launch": 0, "grid": [1]}]'
    path = tmp_path / "bad.arrow"
    with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(f, table.schema.with_metadata(meta)) as w:
        w.write_table(table.replace_schema_metadata(meta))
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert "metadata" in result.stderr and "tracerace.launches[0].block" in result.stderr


def racy_with_dims(dims: bool):
    t = Trace().init(0, 0, addr=0, size=4).write(1, 33, addr=0, size=4).read(0, 2, addr=0, size=4)
    extra = {}
    if dims:
        extra[META_LAUNCHES] = json.dumps([{"launch": 0, "grid": [2], "block": [64]}])
    table = make_table(t.columns(), sites=["k.cu:1 init", "k.cu:2 st", "k.cu:3 ld"])
    return table.replace_schema_metadata({**table.schema.metadata, **extra})


def test_reports_use_coordinates_when_the_trace_has_dims():
    report = tracerace.check(racy_with_dims(True))
    text = report.to_text()
    assert "write by block (1,0,0) thread (33,0,0) (warp 1, lane 1) in launch 0" in text
    assert (
        "the write by block (1,0,0) thread (33,0,0) before the read by block (0,0,0) "
        "thread (2,0,0)" in text.replace("\n" + " " * 11, " ")
    )
    assert "agents:" not in text
    doc = report.to_json()
    assert doc["legend"] is None and doc["launches"] == [
        {"launch": 0, "grid": [2, 1, 1], "block": [64, 1, 1]}
    ]
    first = doc["hazards"][0]["first"]
    assert first["coords"] == {"block": [1, 0, 0], "thread": [33, 0, 0], "warp": 1, "lane": 1}
    assert first["agent"] == "block (1,0,0) thread (33,0,0) (warp 1, lane 1)"
    assert report.to_arrow().schema.metadata[META_LAUNCHES.encode()]


def test_reports_without_dims_say_how_agents_are_numbered():
    text = tracerace.check(racy_with_dims(False)).to_text()
    assert "write by (1,33) in launch 0" in text
    assert "  agents:  (block,thread): the flattened block and thread numbers" in text
    assert (
        "agents:"
        not in tracerace.check(make_table(Trace().init(0, 0, addr=0, size=4).columns())).to_text()
    )


def test_scenarios_declare_their_cuda_launches(tmp_path):
    from tracerace.scenarios import SCENARIOS

    for name, block in [
        ("incident3", (64, 1, 1)),
        ("incident4", (128, 1, 1)),
        ("incident5", (384, 1, 1)),
    ]:
        path = SCENARIOS[name].write(tmp_path / f"{name}.arrow")
        with open_trace(path) as trace:
            launches = trace.meta.launches
            assert launches and {d.block for d in launches} == {block}
            assert [d.launch for d in launches] == list(range(len(launches)))
