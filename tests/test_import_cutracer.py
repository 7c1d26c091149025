"""Importing CUTracer NDJSON traces, plain and zstd."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter

import pyarrow.ipc as ipc
import pytest
from typer.testing import CliRunner

import tracerace
from tracerace.cli import app
from tracerace.convert import convert
from tracerace.convert.gpu.source import lines
from tracerace.errors import TraceError

sys.path.insert(0, os.path.dirname(__file__))
import gputrace as g  # noqa: E402

SAMPLE = os.path.join(
    os.path.dirname(__file__), "gpu_fixtures", "cutracer_sample", "reg_trace_sample.ndjson"
)


def kinds(path, engine="numba") -> Counter:
    by_kind = tracerace.check(str(path), engine=engine).summary["by_kind"]
    return Counter({kind: n for kind, n in by_kind.items() if n})


def notes(path) -> list[str]:
    meta = ipc.open_file(str(path)).schema.metadata
    return json.loads(meta[b"tracerace.import"])["notes"]


def write(tmp_path, kernel, name, zst=False, **kw) -> str:
    text = g.cutracer_ndjson(kernel, **kw)
    if zst:
        return g.write_zstd(tmp_path / f"{name}.ndjson.zst", text, frames=3)
    return g.write(tmp_path / f"{name}.ndjson", text)


@pytest.mark.parametrize("zst", [False, True])
@pytest.mark.parametrize(
    "scenario, fixed, broken, found",
    [
        ("tile", g.tile(True), g.tile(False), {"raw": 64}),
        ("flag", g.flag("GPU"), g.flag("SM"), {"raw": 32, "waw": 1}),
    ],
)
def test_accesses_and_hazards(tmp_path, scenario, fixed, broken, found, zst):
    for kernel, name in ((fixed, "fixed"), (broken, "broken")):
        src = write(tmp_path, kernel, name, zst)
        out = tmp_path / f"{name}.arrow"
        convert(src, out)
        # s[threadIdx.x] at shared offset 0: lane 0's address 0 continues the others'.
        assert g.imported_accesses(out) == g.expected_accesses(kernel)
        assert notes(out) == []
        assert kinds(out) == ({} if name == "fixed" else found)
        if name == "broken":
            assert kinds(out, engine="reference") == found


def test_cp_async_pipeline(tmp_path):
    for kernel, name in ((g.pipeline(True), "fixed"), (g.pipeline(False), "broken")):
        src = write(tmp_path, kernel, name)
        out = tmp_path / f"{name}.arrow"
        convert(src, out)
        got, want = g.imported_accesses(out), g.expected_accesses(kernel)
        # Lane 31 reads its neighbour's chunk at shared offset 0, which does not fit the
        # other lanes' addresses: without an active mask it is taken as inactive, and
        # the notes say so.
        missing = want - got
        assert got <= want and {(m[1], m[3], m[5]) for m in missing} == {("read", 31, 0)}
        assert any("taken as inactive" in n for n in notes(out))
        assert kinds(out) == ({} if name == "fixed" else {"async_inflight": 32})


def test_barriers_come_from_instruction_records(tmp_path):
    src = write(tmp_path, g.tile(True), "t")
    convert(src, tmp_path / "t.arrow")
    bars = [r for r in g.ops_of(tmp_path / "t.arrow") if r[0] == "bar_sync"]
    assert sorted(r[2] for r in bars) == list(range(64)) and {r[4] for r in bars} == {64}


def test_memory_records_only_miss_the_barrier_and_say_so(tmp_path):
    src = write(tmp_path, g.tile(True), "t", opcode_only=False)
    result = convert(src, tmp_path / "t.arrow")
    assert any("memory records only" in n for n in result.notes)
    assert notes(tmp_path / "t.arrow") == list(result.notes)
    assert kinds(tmp_path / "t.arrow") == {"raw": 64}  # the barrier is not in the trace


def test_instruction_records_without_addresses_fail(tmp_path):
    src = write(tmp_path, g.tile(True), "t", mem=False)
    with pytest.raises(TraceError, match="without its address record") as info:
        convert(src, tmp_path / "t.arrow")
    assert info.value.rule == "cutracer-missing" and info.value.path.endswith(".ndjson:2")
    assert not (tmp_path / "t.arrow").exists()


def test_the_repository_sample(tmp_path):
    """CUTracer's own example traces (python/tests/example_inputs, two runs of one
    kernel, plain and zstd as CUTracer wrote it): the zstd file reads as 100 records;
    with a kernel_metadata line (the samples predate it) each imports, and the global
    warp ids (block 1 has warps 4-7) map to warps of their block."""
    plain = [t for _, t in lines(SAMPLE) if t]
    packed = [t for _, t in lines(SAMPLE + ".zst") if t]
    assert [json.loads(t)["trace_index"] for t in packed] == list(range(100))
    with pytest.raises(TraceError, match="first record must be kernel_metadata"):
        convert(SAMPLE, tmp_path / "x.arrow")
    meta = {
        "type": "kernel_metadata",
        "mangled_name": "_Z6vecAddPfS_S_i",
        "unmangled_name": "vecAdd(float*, float*, float*, int)",
        "grid": [8, 1, 1],
        "block": [128, 1, 1],
        "kernel_checksum": "0",
        "func_addr": "0x0",
        "nregs": 16,
        "shmem_static": 0,
        "shmem_dynamic": 0,
        "instructions": {},
    }
    src = tmp_path / "sample.ndjson"
    for records in (plain, packed):
        src.write_text(json.dumps(meta) + "\n" + "\n".join(records) + "\n")
        result = convert(src, tmp_path / "sample.arrow")
        assert (result.rows_in, result.rows_out) == (100, 0)  # LDC, S2R, S2UR: no events
    bad = dict(meta, block=[32, 1, 1])  # then warp 4 is block 4's, not block 1's
    src.write_text(json.dumps(bad) + "\n" + "\n".join(plain) + "\n")
    with pytest.raises(TraceError, match="warp 4 is not a warp of cta"):
        convert(src, tmp_path / "sample.arrow")


def test_directory_of_kernels_in_launch_order(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    g.write(folder / "kernel_aaaa_iter0_tile.ndjson", g.cutracer_ndjson(g.tile(True), launch_id=7))
    g.write_zstd(
        folder / "kernel_0000_iter0_flag.ndjson.zst", g.cutracer_ndjson(g.flag("GPU"), launch_id=3)
    )
    out = tmp_path / "all.arrow"
    convert(folder, out)
    kernels = json.loads(ipc.open_file(str(out)).schema.metadata[b"tracerace.kernels"])
    assert [k["name"] for k in kernels] == ["handoff_kernel()", "tile_kernel()"]
    assert g.imported_accesses(out) == (
        g.expected_accesses(g.flag("GPU"), 0) | g.expected_accesses(g.tile(True), 1)
    )


def test_generic_addresses_need_windows(tmp_path):
    k = g.Kernel("generic_kernel", (1, 1, 1), (32, 1, 1))
    k.program += [
        g.Ins(
            (0, 0, 0),
            0,
            0x10,
            "ST.E [R2.64], R4 ;",
            addrs=[k.shmem_base + 4 * i for i in g.lanes()],
        ),
        g.Ins((0, 0, 0), 0, 0x20, "EXIT ;"),
    ]
    src = write(tmp_path, k, "k")
    with pytest.raises(TraceError, match="no shared or local window") as info:
        convert(src, tmp_path / "k.arrow")
    assert info.value.rule == "gpu-generic" and info.value.path.endswith(".ndjson:2")
    convert(src, tmp_path / "k.arrow", shared_window=f"{k.shmem_base:#x}:0x1000000")
    assert {(a[4], a[5]) for a in g.imported_accesses(tmp_path / "k.arrow")} == {
        (1, 4 * i) for i in range(32)
    }
    convert(src, tmp_path / "k2.arrow", generic_global=True)
    assert {a[4] for a in g.imported_accesses(tmp_path / "k2.arrow")} == {0}


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    good = g.cutracer_ndjson(g.tile(True)).split("\n")
    rec = json.loads(good[1])
    cases = {
        "not-json": (good[:2] + ['{"type": "mem_addr_trace", '] + good[2:], "cutracer-syntax", 3),
        "addrs": (
            good[:1] + [json.dumps(dict(rec, addrs=[1, 2]))] + good[2:],
            "cutracer-syntax",
            2,
        ),
        "warp": (good[:1] + [json.dumps(dict(rec, warp=9))] + good[2:], "cutracer-syntax", 2),
        "type": (
            good[:1] + [json.dumps(dict(rec, type="mem_sth"))] + good[2:],
            "cutracer-syntax",
            2,
        ),
        "opcode-id": (
            good[:1] + [json.dumps(dict(rec, opcode_id=99))] + good[2:],
            "cutracer-syntax",
            2,
        ),
        "no-metadata": (good[1:], "cutracer-syntax", 1),
        "lost-records": (good[:3] + good[5:], "cutracer-missing", 4),
    }
    runner = CliRunner()
    for name, (content, rule, lineno) in cases.items():
        src = g.write(tmp_path / f"{name}.ndjson", "\n".join(content))
        out = tmp_path / f"{name}.arrow"
        res = runner.invoke(app, ["convert", src, str(out)])
        assert res.exit_code == 2, (name, res.output)
        text = res.stderr.strip().splitlines()
        assert len(text) == 1 and text[0].startswith(
            f"tracerace: error: {src}:{lineno}: {rule}: "
        ), (name, text)
        assert not out.exists()


def test_truncated_zstd(tmp_path):
    src = write(tmp_path, g.pipeline(True), "p", zst=True)
    data = open(src, "rb").read()
    cut = tmp_path / "cut.ndjson.zst"
    cut.write_bytes(data[: len(data) - 40])
    with pytest.raises(TraceError) as info:
        convert(cut, tmp_path / "cut.arrow")
    assert info.value.rule == "truncated" and "inside a frame" in str(info.value)
    assert not (tmp_path / "cut.arrow").exists()


def test_named_barrier_with_a_count(tmp_path):
    for arrive, found in ((True, {}), (False, {"raw": 32})):
        src = write(tmp_path, g.named_barrier(arrive), f"n{arrive}")
        out = tmp_path / f"n{arrive}.arrow"
        convert(src, out)
        assert kinds(out) == found
    bars = g.ops_of(tmp_path / "nTrue.arrow")
    assert Counter((r[0], r[3], r[4]) for r in bars) == {
        ("bar_arrive", 1, 64): 32,
        ("bar_sync", 1, 64): 32,
    }


def test_warpsync_orders_the_lanes_of_a_warp(tmp_path):
    for sync, found in ((True, {}), (False, {"raw": 32})):
        src = write(tmp_path, g.warp_exchange(sync), f"w{sync}")
        out = tmp_path / f"w{sync}.arrow"
        convert(src, out)
        assert kinds(out) == found, sync


def test_depbar_on_another_scoreboard_waits_for_no_copy(tmp_path):
    text = g.cutracer_ndjson(g.pipeline(True)).replace("DEPBAR.LE SB0", "DEPBAR.LE SB1")
    src = g.write(tmp_path / "p.ndjson", text)
    convert(src, tmp_path / "p.arrow")
    assert not [r for r in g.ops_of(tmp_path / "p.arrow") if r[0] == "cp_async_wait"]
    assert kinds(tmp_path / "p.arrow")["async_inflight"] > 0


def test_mem_value_records_come_after_the_instruction_record(tmp_path):
    for kernel, found in (
        (g.pipeline(True), {}),
        (g.pipeline(False), {"async_inflight": 32}),
        (g.tile(False), {"raw": 64}),
    ):
        src = g.write(tmp_path / "v.ndjson", g.cutracer_ndjson(kernel, values=True))
        assert '"mem_value_trace"' in open(src).read()
        convert(src, tmp_path / "v.arrow")
        assert g.imported_accesses(tmp_path / "v.arrow") <= g.expected_accesses(kernel)
        assert kinds(tmp_path / "v.arrow") == found


def test_recontainer_keeps_the_import_metadata(tmp_path):
    src = write(tmp_path, g.tile(True), "t")
    convert(src, tmp_path / "t.arrow")
    convert(tmp_path / "t.arrow", tmp_path / "t.parquet")
    import pyarrow.parquet as pq

    meta = pq.read_schema(str(tmp_path / "t.parquet")).metadata
    assert json.loads(meta[b"tracerace.kernels"])[0]["name"] == "tile_kernel()"
    assert b"tracerace.import" in meta
