"""Importing Accel-Sim tracer output: .trace, .traceg, kernelslist, plain and xz."""

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
from tracerace.convert.gpu import ImportOptions, import_trace
from tracerace.convert.gpu.emit import GLOBAL_INIT_WINDOW
from tracerace.errors import TraceError
from tracerace.trace.info import trace_info
from tracerace.trace.reader import validate_trace

sys.path.insert(0, os.path.dirname(__file__))
import gputrace as g  # noqa: E402

REAL = os.path.join(
    os.path.dirname(__file__),
    "gpu_fixtures",
    "accelsim_real",
    "kernel-593-ctx_0x55c28dad19e0.traceg",
)


def kinds(path, engine="numba") -> Counter:
    by_kind = tracerace.check(str(path), engine=engine).summary["by_kind"]
    return Counter({kind: n for kind, n in by_kind.items() if n})


def metadata(path) -> dict:
    meta = ipc.open_file(str(path)).schema.metadata
    return {k.decode(): v.decode() for k, v in meta.items()}


# --- the real trace --------------------------------------------------------------------


def test_real_pow_kernel_imports_validates_and_is_clean(tmp_path):
    out = tmp_path / "pow.arrow"
    result = convert(REAL, out)
    assert validate_trace(str(out)).num_rows == result.rows_out
    rep = tracerace.check(str(out))
    assert rep.hazards == [] and rep.exit_code == 0
    acc = g.imported_accesses(out)
    # 2 blocks x 128 threads x (2 LDG.E.128 + 2 STG.E.128), 16 bytes each.
    assert len(acc) == 1024 and {a[6] for a in acc} == {16}
    assert Counter(a[1] for a in acc) == {"read": 512, "write": 512}
    # Block 1, warp 2, lane 5: its first LDG is 0x7f580facf800 + 5 * 16 (base+stride).
    assert (0, "read", 1, 2 * 32 + 5, 0, 0x7F580FACF800 + 80, 16, 0) in acc
    kernel = json.loads(metadata(out)["tracerace.kernels"])[0]
    assert kernel["name"].startswith("_ZN2at6native29vectorized_elementwise_kernel")
    assert (kernel["grid"], kernel["block"]) == ([55, 1, 1], [128, 1, 1])
    assert kernel["shared_window"] == [0x7F59DD000000, 1 << 24]
    assert kernel["local_window"] == [0x7F59DB000000, 1 << 24]
    assert json.loads(metadata(out)["tracerace.import"]) == {
        "format": "accelsim",
        "order": "reconstructed",
        "notes": [],
    }


def test_global_memory_counts_as_initialized(tmp_path):
    out = tmp_path / "pow.arrow"
    convert(REAL, out)
    t = ipc.open_file(str(out)).read_all().to_pydict()
    inits = [i for i, op in enumerate(t["op"]) if op == 3]
    assert inits and all(t["size"][i] == GLOBAL_INIT_WINDOW for i in inits)
    # Every global read lies in a window declared before it; each declaration comes
    # just before the read that needs it, by the same thread.
    for i, op in enumerate(t["op"]):
        if op == 0:
            window = t["addr"][i] // GLOBAL_INIT_WINDOW * GLOBAL_INIT_WINDOW
            assert any(t["addr"][j] == window for j in inits if j < i)
    for i in inits:
        nxt = next(j for j in range(i + 1, len(t["op"])) if t["op"][j] != 3)
        assert (t["block"][i], t["thread"][i], t["ts"][i]) == (
            t["block"][nxt],
            t["thread"][nxt],
            t["ts"][nxt],
        )
    summary = trace_info(str(out))
    assert (summary.blocks, summary.agents) == (2, 256)


# --- hand-written kernels: the trace they give, the hazards they have -------------------

SCENARIOS = {
    "tile": (g.tile(True), g.tile(False)),
    "flag": (g.flag("GPU"), g.flag("SM")),
    "pipeline": (g.pipeline(True), g.pipeline(False)),
}
# Hazards of the broken kernel, by file kind (the .traceg order is reconstructed).
BROKEN = {
    ("tile", "trace"): {"raw": 64},
    ("tile", "traceg"): {"uninit_read": 32, "war": 32, "raw": 32},
    ("flag", "trace"): {"raw": 32, "waw": 1},
    ("flag", "traceg"): {"raw": 32, "waw": 1},
    ("pipeline", "trace"): {"async_inflight": 32},
}


def write_kind(tmp_path, kernel, kind: str, name: str) -> str:
    text = (
        g.accel_trace(kernel)
        if kind.startswith("trace.") or kind == "trace"
        else g.accel_traceg(kernel)
    )
    return g.write(tmp_path / f"{name}.{kind}", text, xz=kind.endswith(".xz"))


@pytest.mark.parametrize("kind", ["trace", "traceg", "trace.xz", "traceg.xz"])
@pytest.mark.parametrize("scenario", ["tile", "flag"])
def test_accesses_and_hazards(tmp_path, scenario, kind):
    fixed, broken = SCENARIOS[scenario]
    for kernel, name in ((fixed, "fixed"), (broken, "broken")):
        src = write_kind(tmp_path, kernel, kind, name)
        out = tmp_path / f"{name}.arrow"
        convert(src, out)
        assert g.imported_accesses(out) == g.expected_accesses(kernel)
        found = kinds(out)
        if name == "fixed":
            assert found == {}
        else:
            assert found == BROKEN[(scenario, kind.split(".")[0])]
            assert found == kinds(out, engine="reference")


def test_barrier_rows_count_the_threads_that_arrive(tmp_path):
    src = write_kind(tmp_path, g.tile(True), "trace", "t")
    convert(src, tmp_path / "t.arrow")
    bars = [r for r in g.ops_of(tmp_path / "t.arrow") if r[0] == "bar_sync"]
    assert sorted(r[2] for r in bars) == list(range(64))
    assert {(r[3], r[4]) for r in bars} == {(0, 64)}  # barrier 0, 64 threads


def test_reconstructed_order_releases_a_barrier_after_every_warp_arrives(tmp_path):
    src = write_kind(tmp_path, g.tile(True), "traceg", "t")
    convert(src, tmp_path / "t.arrow")
    t = ipc.open_file(str(tmp_path / "t.arrow")).read_all().to_pydict()
    rows = list(zip(t["op"], t["thread"], t["site"]))
    first_bar = min(i for i, r in enumerate(rows) if r[0] == 10)
    last_bar = max(i for i, r in enumerate(rows) if r[0] == 10)
    sts = [i for i, r in enumerate(rows) if r[0] == 1 and t["space"][i] == 1]
    lds = [i for i, r in enumerate(rows) if r[0] == 0 and t["space"][i] == 1]
    assert max(sts) < first_bar and last_bar < min(lds)


def test_cp_async_pipeline_from_the_raw_trace(tmp_path):
    fixed, broken = SCENARIOS["pipeline"]
    for kernel, name in ((fixed, "fixed"), (broken, "broken")):
        src = write_kind(tmp_path, kernel, "trace.xz", name)
        out = tmp_path / f"{name}.arrow"
        convert(src, out)
        assert g.imported_accesses(out) == g.expected_accesses(kernel)
        ops = Counter(r[0] for r in g.ops_of(out))
        assert ops["cp_async_commit"] == 5 * 32
        assert ops["cp_async_wait"] == (4 if name == "fixed" else 3) * 32
        assert kinds(out) == ({} if name == "fixed" else BROKEN[("pipeline", "trace")])
    waits = {r[4] for r in g.ops_of(tmp_path / "fixed.arrow") if r[0] == "cp_async_wait"}
    assert waits == {0, 1}


def test_traceg_ldgsts_cannot_be_imported(tmp_path):
    src = write_kind(tmp_path, g.pipeline(True), "traceg", "p")
    with pytest.raises(TraceError, match="keeps only the global source") as info:
        convert(src, tmp_path / "p.arrow")
    assert info.value.rule == "sass-unfollowable" and ".traceg:" in info.value.path
    assert not (tmp_path / "p.arrow").exists()


def test_uncompressed_address_lists(tmp_path):
    """TOOL_COMPRESS=0 writes every active lane's address (format 0)."""
    kernel = g.pipeline(False)
    text = g._accel_header(kernel, 1, 5) + "".join(
        f"{line}\n" for line in g.accel_lines(kernel, compress=False)
    )
    assert " 16 0 0x" in text
    src = g.write(tmp_path / "k.trace", text)
    convert(src, tmp_path / "k.arrow")
    assert g.imported_accesses(tmp_path / "k.arrow") == g.expected_accesses(kernel)


def test_kernelslist_is_one_launch_per_kernel(tmp_path):
    a, b = g.tile(True), g.flag("GPU")
    g.write(tmp_path / "kernel-1.traceg", g.accel_traceg(a, 1))
    g.write(tmp_path / "kernel-2.traceg.xz", g.accel_traceg(b, 2), xz=True)
    (tmp_path / "kernelslist.g").write_text(
        "MemcpyHtoD,0x00007f0000000000,4096\nkernel-1.traceg\nkernel-2.traceg.xz\n"
    )
    out = tmp_path / "all.arrow"
    result = convert(tmp_path / "kernelslist.g", out)
    assert "2 launches" in result.summary_line()
    expected = g.expected_accesses(a, 0) | g.expected_accesses(b, 1)
    assert g.imported_accesses(out) == expected
    kernels = json.loads(metadata(out)["tracerace.kernels"])
    assert [(k["launch"], k["name"], k["kernel_id"]) for k in kernels] == [
        (0, "tile_kernel", 1),
        (1, "handoff_kernel", 2),
    ]
    assert kinds(out) == {}


def test_a_context_kernel_list_names_raw_traces_in_launch_order(tmp_path):
    """Newer tracers write one raw list per CUDA context, named
    ``kernelslist_ctx_0x<context>``, naming ``kernel-N-ctx_0x<context>.trace.xz``."""
    a, b = g.tile(True), g.flag("GPU")
    g.write(tmp_path / "kernel-1-ctx_0x55f4.trace", g.accel_trace(a, 1))
    g.write(tmp_path / "kernel-2-ctx_0x55f4.trace.xz", g.accel_trace(b, 2), xz=True)
    listing = tmp_path / "kernelslist_ctx_0x55f4"
    listing.write_text("kernel-1-ctx_0x55f4.trace\nkernel-2-ctx_0x55f4.trace.xz\n")
    out = tmp_path / "all.arrow"
    result = convert(listing, out)
    assert "2 launches" in result.summary_line()
    assert g.imported_accesses(out) == g.expected_accesses(a, 0) | g.expected_accesses(b, 1)


def test_generic_addresses_resolve_by_the_windows(tmp_path):
    k = g.Kernel("generic_kernel", (1, 1, 1), (32, 1, 1))
    lanes = g.lanes()
    k.program += [
        g.Ins(
            (0, 0, 0), 0, 0x10, "ST.E [R2.64], R4 ;", addrs=[k.shmem_base + 4 * i for i in lanes]
        ),
        g.Ins((0, 0, 0), 0, 0x20, "ST.E [R2.64], R4 ;", addrs=[k.local_base + 8 for _ in lanes]),
        g.Ins((0, 0, 0), 0, 0x30, "LD.E R5, [R2.64] ;", addrs=[g.G_IN + 4 * i for i in lanes]),
        g.Ins((0, 0, 0), 0, 0x40, "EXIT ;"),
    ]
    src = g.write(tmp_path / "k.trace", g.accel_trace(k))
    convert(src, tmp_path / "k.arrow")
    acc = g.imported_accesses(tmp_path / "k.arrow")
    assert {a[4:6] for a in acc if a[3] == 3} == {(1, 12), (2, 8), (0, g.G_IN + 12)}
    # Shared offset 12 of lane 3; every thread's own local word 8; global as given.


def test_lines_with_source_line_numbers(tmp_path):
    text = g.accel_trace(g.tile(False)).replace("-enable lineinfo = 0", "-enable lineinfo = 1")
    text = "\n".join(
        " ".join(line.split(" ", 4)[:4] + ["42"] + [line.split(" ", 4)[4]])
        if line[:1].isdigit()
        else line
        for line in text.split("\n")
    )
    src = g.write(tmp_path / "k.trace", text)
    convert(src, tmp_path / "k.arrow")
    sites = json.loads(metadata(tmp_path / "k.arrow")["tracerace.sites"])
    assert "tile_kernel line 42 pc 0x0020 STS" in sites
    assert kinds(tmp_path / "k.arrow") == {"raw": 64}


# --- bad input: one line naming file, line and rule; no output --------------------------


def broken_inputs(tmp_path):
    ok_g = g.accel_traceg(g.tile(True))
    ok_t = g.accel_trace(g.tile(True))
    cases = {
        "truncated-traceg": ("k.traceg", ok_g[: ok_g.rindex("#END_TB")], "truncated"),
        "short-warp": ("k.traceg", ok_g.replace("insts = 6", "insts = 7", 1), "truncated"),
        "bad-line": (
            "k.trace",
            ok_t.replace("0 0 0 1 0040 ffffffff", "0 0 0 1 0040 fffzffff"),
            "accelsim-syntax",
        ),
        "cta-outside": ("k.trace", ok_t.replace("0 0 0 1 0040", "0 2 0 1 0040"), "accelsim-syntax"),
        "unknown-opcode": ("k.trace", ok_t.replace(" STG.E.SYS ", " FROB.E.SYS "), "sass-unknown"),
        "mbarrier": (
            "k.trace",
            ok_t.replace(" STS ", " SYNCS.ARRIVE.TRANS64.A1T0 "),
            "sass-unfollowable",
        ),
        "no-barrier-id": ("k.trace", g.accel_trace(g.tile(True), version=4), "sass-unfollowable"),
        "lanes-outside": ("k.trace", ok_t.replace("(64,1,1)", "(48,1,1)"), "gpu-lanes"),
        "no-format-line": ("k.trace", ok_t.split("#traces")[0], "truncated"),
    }
    for name, (file, text, rule) in cases.items():
        path = tmp_path / name / file
        path.parent.mkdir()
        yield name, g.write(path, text), rule
    data = lzma_bytes(ok_t)
    path = tmp_path / "xz" / "k.trace.xz"
    path.parent.mkdir()
    path.write_bytes(data[: len(data) * 2 // 3])
    yield "truncated-xz", str(path), "truncated"


def lzma_bytes(text: str) -> bytes:
    import lzma

    return lzma.compress(text.encode() * 40, preset=1)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    runner = CliRunner()
    for name, src, rule in broken_inputs(tmp_path):
        out = os.path.join(os.path.dirname(src), "out.arrow")
        res = runner.invoke(app, ["convert", src, out])
        assert res.exit_code == 2, (name, res.output)
        lines = (
            res.stderr.strip().splitlines()
            if hasattr(res, "stderr")
            else res.output.strip().splitlines()
        )
        assert len(lines) == 1, (name, lines)
        assert lines[0].startswith(f"tracerace: error: {src}"), (name, lines[0])
        assert f": {rule}: " in lines[0], (name, lines[0])
        assert not os.path.exists(out), name


def test_bad_input_names_the_line(tmp_path):
    text = g.accel_trace(g.tile(True)).replace(" STG.E.SYS ", " FROB.E.SYS ")
    lineno = next(i for i, line in enumerate(text.split("\n"), 1) if "FROB" in line)
    src = g.write(tmp_path / "k.trace", text)
    with pytest.raises(TraceError) as info:
        import_trace(src, tmp_path / "k.arrow")
    assert str(info.value).startswith(f"{src}:{lineno}: sass-unknown: FROB.E.SYS: ")


def test_options(tmp_path):
    src = write_kind(tmp_path, g.tile(True), "trace", "t")
    with pytest.raises(TraceError, match="v1 trace"):
        import_trace(src, tmp_path / "t.std")
    with pytest.raises(TraceError, match="unknown input format"):
        convert(src, tmp_path / "t.arrow", fmt="nsight")
    with pytest.raises(TraceError, match="BASE"):
        convert(src, tmp_path / "t.arrow", shared_window="near the top")
    result = import_trace(src, tmp_path / "t.parquet", options=ImportOptions(compression="zstd"))
    assert validate_trace(str(tmp_path / "t.parquet")).num_rows == result.rows


def test_warpsync_mask_from_the_immediate(tmp_path):
    for sync, found in ((True, {}), (False, {"raw": 32})):
        src = g.write(tmp_path / f"w{sync}.trace", g.accel_trace(g.warp_exchange(sync)))
        convert(src, tmp_path / f"w{sync}.arrow")
        assert kinds(tmp_path / f"w{sync}.arrow") == found
    syncs = [r for r in g.ops_of(tmp_path / "wTrue.arrow") if r[0] == "warp_sync"]
    assert len(syncs) == 32 and {r[4] for r in syncs} == {0xFFFFFFFF}


def test_barrier_with_a_count_has_no_id_in_the_trace(tmp_path):
    """Accel-Sim records one immediate: for BAR.ARV 0x1, 0x40 that is the count."""
    src = g.write(tmp_path / "n.trace", g.accel_trace(g.named_barrier(True)))
    with pytest.raises(TraceError, match="barrier's id and thread count") as info:
        convert(src, tmp_path / "n.arrow")
    assert info.value.rule == "sass-unfollowable"


def test_bench_workload_imports_clean(tmp_path):
    """bench.gpu_import's synthetic .traceg is race-free and imports whole."""
    from bench.gpu_import import generate

    src = tmp_path / "bench.traceg"
    lines = generate(src, 3000, ksteps=2)
    result = convert(src, tmp_path / "bench.arrow")
    assert result.rows_in == lines
    assert kinds(tmp_path / "bench.arrow") == {}
    ops = Counter(r[0] for r in g.ops_of(tmp_path / "bench.arrow"))
    assert ops == {"bar_sync": 2 * 2 * 256 * (lines // (8 * (58 * 2 + 2)))}


@pytest.mark.parametrize("scope", ["SM", "CTA"])
def test_block_scope_release_does_not_reach_another_block(tmp_path, scope):
    """SASS spells CTA scope ``.STRONG.SM``; ``.CTA`` reads the same."""
    src = g.write(tmp_path / "f.trace", g.accel_trace(g.flag(scope)))
    convert(src, tmp_path / "f.arrow")
    assert kinds(tmp_path / "f.arrow") == {"raw": 32, "waw": 1}
