"""The cuda backend on streams RECORDED ON A GPU (``tests/data/cuda/``, see its
README): the conversion of real Compute Sanitizer records, the verdicts of the
GPU session's kernels, and their source lines."""

from __future__ import annotations

import lzma
import re
from pathlib import Path

import pytest

import tracerace
from tracerace.errors import TraceError
from tracerace.record.cuda import lines as cuda_lines
from tracerace.record.cuda.convert import convert
from tracerace.record.cuda.stream import Kind, read_stream, strings
from tracerace.trace.reader import open_trace

DATA = Path(__file__).resolve().parent / "data" / "cuda"
PID = 4242  # the recording's own pid is in its cubins' names, read from the stream


def unpacked(name: str, tmp_path: Path, *, cubins: bool = True) -> str:
    """The recorded stream ``name`` (and its cubins) as the tool left it: the prefix."""
    folder = tmp_path / name
    folder.mkdir()
    trc = folder / f"run.{PID}.trc"
    trc.write_bytes(lzma.decompress((DATA / f"{name}.trc.xz").read_bytes()))
    records = read_stream(str(trc))
    texts, keep = strings(records, str(trc))
    modules = records[keep][records[keep]["kind"] == Kind.MODULE]
    for packed in DATA.glob(f"{name}.module-*.cubin.xz") if cubins else ():
        module = int(packed.name[len(name) + len(".module-") : -len(".cubin.xz")])
        (cubin,) = [texts[int(m["size"])] for m in modules if int(m["thread"]) == module]
        (folder / cubin).write_bytes(lzma.decompress(packed.read_bytes()))
    return str(folder / "run")


def checked(name: str, tmp_path: Path, **kw) -> tuple[tracerace.Report, str]:
    out = str(tmp_path / f"{name}.arrow")
    convert(unpacked(name, tmp_path), out, **kw)
    report = tracerace.check(out)
    reference = tracerace.check(out, engine="reference")
    assert [(g.kind, g.count) for g in report.groups] == [
        (g.kind, g.count) for g in reference.groups
    ]
    return report, out


def error_kinds(report) -> set[str]:
    return {g.kind for g in report.groups if g.severity == "error"}


@pytest.mark.parametrize(
    "name, expected",
    [
        ("reduce-sync", set()),
        ("reduce-nosync", {"raw"}),
        ("reduce-exit", set()),
        ("pipeline-wait", set()),
        ("pipeline-nowait", {"async_inflight"}),
        ("triton-separate", set()),
        ("triton-aliased", {"war"}),
        ("hopper-cluster-sync", set()),
        ("hopper-cluster-nosync", {"raw"}),
        # the API reports neither the bulk stores' wait_group nor the proxy fence
        # (the trace warns): each store stays in flight and unfenced
        ("hopper-ring-fence", {"async_inflight", "proxy_fence"}),
        ("hopper-ring-nofence", {"async_inflight", "proxy_fence"}),
    ],
)
def test_recorded_kernels_get_the_gpu_session_verdicts(name, expected, tmp_path):
    report, _ = checked(name, tmp_path)
    assert error_kinds(report) == expected


def test_a_reduction_without_barriers_races_in_shared_memory_of_every_block(tmp_path):
    report, _ = checked("reduce-nosync", tmp_path)
    raw = [g for g in report.groups if g.kind == "raw"]
    assert raw and all(g.example.space == "shared" for g in raw)
    pairs = {(h.first.block, h.second.block) for g in raw for h in [g.example]}
    assert all(a == b for a, b in pairs)  # shared memory is per block
    assert {a for a, _ in pairs} <= {0, 1, 2, 3}


def test_threads_that_exit_before_a_barrier_count_as_arrived_with_a_warning(tmp_path):
    report, _ = checked("reduce-exit", tmp_path)
    exits = [w for w in report.meta.warnings if "had exited" in w]
    assert exits and all("128 thread(s)" in w for w in exits)


def test_the_cp_async_race_is_a_copy_still_in_flight_when_read(tmp_path):
    report, _ = checked("pipeline-nowait", tmp_path)
    (group, *_) = [g for g in report.groups if g.kind == "async_inflight"]
    assert group.example.space == "shared"


def test_a_cluster_s_blocks_read_the_bytes_their_peer_wrote(tmp_path):
    """On an H200 the API reports block rank 1's accesses to its own shared memory
    at shared::cluster addresses (0x1000000 up); the tool takes each apart into its
    owner and the offset in the owner's window, so block b's reads through
    map_shared_rank name exactly the bytes block 1 - b wrote."""
    import pyarrow.ipc as ipc

    _, out = checked("hopper-cluster-sync", tmp_path)
    t = ipc.open_file(out).read_all().to_pydict()
    shared = [
        (op, block, peer, addr)
        for op, block, peer, addr, space in zip(
            t["op"], t["block"], t["peer"], t["addr"], t["space"]
        )
        if space == 1 and op in (0, 1)
    ]
    written = {(peer, addr) for op, block, peer, addr in shared if op == 1}
    read = {(peer, addr) for op, block, peer, addr in shared if op == 0}
    assert all(peer == block for op, block, peer, _ in shared if op == 1)
    assert all(peer == 1 - block for op, block, peer, _ in shared if op == 0)
    assert len(written) == 256 and read == written
    assert all(0x400 <= addr < 0x600 for _, addr in written)


def test_an_mbarrier_init_without_a_count_is_refused(tmp_path):
    """On sm_90 the API reports a cuda::barrier's init (a warp-uniform
    SYNCS.EXCH, one record per lane) with no expected count: refused, exit 2."""
    for name in ("exchange-wait", "exchange-nowait"):
        out = tmp_path / f"{name}.arrow"
        with pytest.raises(TraceError) as err:
            convert(unpacked(name, tmp_path), str(out))
        assert re.search(
            r"init of mbarrier 0x600 at .*reports no expected arrival count", str(err.value)
        ), str(err.value)
        assert not out.exists()


def test_a_refused_recording_names_the_program_not_the_deleted_stream(tmp_path, monkeypatch):
    """Through ``record`` (the GPU run replaced by a spy that leaves the stream
    recorded on the GPU where the tool would): the refusal names the program
    and the stream's record, not the temporary file deleted by then."""
    import shutil
    import subprocess
    from types import SimpleNamespace

    from tracerace.record import cuda

    recorded = Path(unpacked("exchange-wait", tmp_path)).parent
    real_run = subprocess.run

    def run_on_gpu(command, env=None, **kw):
        if env is None or cuda.OUTPUT_ENV not in env:  # nvdisasm, for the source lines
            return real_run(command, env=env, **kw)
        for f in recorded.iterdir():
            shutil.copy(f, Path(env[cuda.OUTPUT_ENV]).parent)
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(cuda, "find_toolkit", lambda: None)
    monkeypatch.setattr(cuda, "tool_library", lambda _: SimpleNamespace(library="x", patches="y"))
    monkeypatch.setattr(cuda, "check_gpu", lambda: None)
    monkeypatch.setattr(subprocess, "run", run_on_gpu)  # the tool run (record.tool)
    out = tmp_path / "exchange.arrow"
    with pytest.raises(TraceError) as err:
        cuda.record(["./exchange"], str(out))
    assert err.value.path == "./exchange" and err.value.row is None
    assert "reports no expected arrival count" in err.value.message
    assert (
        "(record 11 of the CUDA tool's stream; TRACERACE_CUDA_KEEP=DIR keeps the stream)"
        in err.value.message
    )
    assert not out.exists()


def test_recorded_launches_carry_their_grid_and_block(tmp_path):
    _, out = checked("reduce-sync", tmp_path)
    with open_trace(out) as t:
        launches = t.meta.launches
    assert [(d.grid, d.block) for d in launches] == [((4, 1, 1), (256, 1, 1))]
    assert "_Z6reducePKfPfbb" == launches[0].kernel


def test_without_cubins_sites_are_kernel_offsets(tmp_path):
    out = str(tmp_path / "out.arrow")
    convert(unpacked("reduce-nosync", tmp_path, cubins=False), out)
    with open_trace(out) as t:
        sites = t.meta.sites
    assert sites and all(re.fullmatch(r"_Z6reducePKfPfbb\+0x[0-9a-f]+", s) for s in sites)


NVDISASM_TEXT = """\
//--------------------- .text._Z6reducePKfPfb     --------------------------
\t.section\t.text._Z6reducePKfPfb,"ax",@progbits
_Z6reducePKfPfb:
.text._Z6reducePKfPfb:
\t//## File "/src/reduce.cu", line 11
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "/src/reduce.cu", line 15
        /*0010*/                   S2R R0, SR_CTAID.X ;
        /*0110*/                   STS [R7], R4 ;
\t//## File "/src/reduce.cu", line 16
        /*0120*/               @P0 BAR.SYNC.DEFER_BLOCKING 0x0 ;
.L_x_1:
        /*0130*/              @!P1 LDS R2, [R7] ;
//--------------------- .text._Z5otherv     --------------------------
_Z5otherv:
.text._Z5otherv:
        /*0000*/                   EXIT ;
"""


def test_nvdisasm_line_comments_give_each_instruction_its_line():
    table = cuda_lines.parse_nvdisasm(NVDISASM_TEXT)
    assert table["_Z6reducePKfPfb"] == {
        0x0: ("/src/reduce.cu", 11),
        0x10: ("/src/reduce.cu", 15),
        0x110: ("/src/reduce.cu", 15),
        0x120: ("/src/reduce.cu", 16),
        0x130: ("/src/reduce.cu", 16),
    }
    assert table["_Z5otherv"] == {}  # no line comment in this function: no line


def test_recorded_sites_name_source_lines_through_nvdisasm(tmp_path):
    assert cuda_lines.find_nvdisasm(), "nvdisasm: install the test extra (nvidia-cuda-nvdisasm)"
    report, _ = checked("reduce-nosync", tmp_path)
    raw = [g for g in report.groups if g.kind == "raw"]
    lines = {(g.first_site.split()[0], g.second_site.split()[0]) for g in raw}
    # the kernel was built from /work/main/tests/kernels_cuda/reduce.cu, where
    # line 17 stores s[t] and line 21 is s[t] += s[t + stride]
    source = "/work/main/tests/kernels_cuda/reduce.cu"
    if Path.cwd() == Path("/work/main"):
        source = "tests/kernels_cuda/reduce.cu"
    assert (f"{source}:17", f"{source}:21") in lines
    assert (f"{source}:21", f"{source}:21") in lines
    assert all(
        re.fullmatch(rf"{source}:(17|21) _Z6reducePKfPfbb\+0x[0-9a-f]+", s)
        for g in raw
        for s in (g.first_site, g.second_site)
    )
