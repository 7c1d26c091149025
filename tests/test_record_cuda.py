"""The cuda backend without a GPU: the record stream, its conversion, the build and
the command line's error paths.

Every stream here is SYNTHETIC: written by :class:`StreamWriter` as the tool
library would write it for the kernel each test describes, not recorded on a
GPU. What a GPU session must still record and compare is listed in
``docs/cuda.md``.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.ipc as ipc
import pytest
from peak import PEAK_KIB

import tracerace
from tracerace.errors import TraceError
from tracerace.record.cuda import build as cuda_build
from tracerace.record.cuda.convert import ZERO_SOURCE, convert
from tracerace.record.cuda.stream import (
    MAGIC,
    RECORD_DTYPE,
    AccessFlag,
    BarrierAction,
    Kind,
    Space,
    StreamWriter,
    read_stream,
)
from tracerace.trace.ops import Op, Scope
from tracerace.trace.reader import open_trace

ROOT = Path(__file__).resolve().parent.parent
A = 0x7F00_0000_0000  # a device allocation of the synthetic kernels
N = 8  # threads per block


def stream(tmp_path: Path, name: str = "run") -> tuple[StreamWriter, str]:
    prefix = str(tmp_path / name)
    return StreamWriter(f"{prefix}.4242.trc"), prefix


def converted(prefix: str, tmp_path: Path):
    out = str(tmp_path / "out.arrow")
    events, launches, warnings = convert(prefix, out)
    return out, warnings


def errors(trace: str) -> set[str]:
    kinds = [
        {g.kind for g in tracerace.check(trace, engine=e).groups if g.severity == "error"}
        for e in ("numba", "reference")
    ]
    assert kinds[0] == kinds[1]
    return kinds[0]


def columns(trace: str) -> dict[str, np.ndarray]:
    with open_trace(trace) as t:
        batches = list(t)
    return {name: np.concatenate([b.cols[name] for b in batches]) for name in batches[0].cols}


def reduction(w: StreamWriter, *, sync: bool) -> None:
    """Synthetic shared-memory tree reduction of N floats, one block."""
    w.alloc(A, 4 * N)
    w.host_init(A, 4 * N)
    w.launch("reduce", block=(N, 1, 1), pc=0x1000)
    for t in range(N):
        w.read(0, t, A + 4 * t, pc=0x1010)
        w.write(0, t, 4 * t, space=Space.SHARED, pc=0x1020)
    stride = N // 2
    while stride:
        if sync:
            for t in range(N):
                w.barrier(0, t, pc=0x1030)
        for t in range(stride):
            w.read(0, t, 4 * (t + stride), space=Space.SHARED, pc=0x1040)
            w.read(0, t, 4 * t, space=Space.SHARED, pc=0x1040)
            w.write(0, t, 4 * t, space=Space.SHARED, pc=0x1050)
        stride //= 2
    w.write(0, 0, A, pc=0x1060)
    for t in range(N):
        w.exit(0, t, pc=0x1070)
    w.launch_end()


@pytest.mark.parametrize("sync, expected", [(True, set()), (False, {"raw"})])
def test_a_reduction_races_without_syncthreads(tmp_path, sync, expected):
    w, prefix = stream(tmp_path)
    with w:
        reduction(w, sync=sync)
    out, warnings = converted(prefix, tmp_path)
    found = errors(out)
    assert found >= expected and found <= expected | {"war", "waw"}
    with open_trace(out) as t:
        assert "reduce+0x40" in t.meta.sites and "reduce+0x50" in t.meta.sites


def pipeline(w: StreamWriter, *, wait: bool, zero_fill: bool = False) -> None:
    """Synthetic cp.async double buffer: each thread copies 16 bytes, commits,
    waits (or not), a barrier, then its neighbour reads the tile."""
    w.alloc(A, 16 * N)
    w.host_init(A, 16 * N)
    w.launch("pipeline", block=(N, 1, 1), pc=0x2000)
    for t in range(N):
        src = 0 if zero_fill and t == 0 else A + 16 * t
        w.cp_async(0, t, 16 * t, src, 16, pc=0x2010)
        w.cp_commit(0, t, pc=0x2020)
    for t in range(N):
        if wait:
            w.cp_wait(0, t, 0, pc=0x2030)
        w.barrier(0, t, pc=0x2040)
    for t in range(N):
        w.read(0, t, 16 * ((t + 1) % N), 16, space=Space.SHARED, pc=0x2050)
    w.launch_end()


@pytest.mark.parametrize("wait, expected", [(True, set()), (False, {"async_inflight"})])
def test_a_cp_async_pipeline_needs_its_wait_group(tmp_path, wait, expected):
    w, prefix = stream(tmp_path)
    with w:
        pipeline(w, wait=wait)
    out, _ = converted(prefix, tmp_path)
    assert errors(out) == expected
    cols = columns(out)
    assert np.sum(cols["op"] == Op.CP_ASYNC) == N
    assert np.sum(cols["op"] == Op.CP_ASYNC_WAIT) == (N if wait else 0)


def test_a_zero_filling_copy_reads_defined_zeros_and_stays_in_flight(tmp_path):
    for wait, expected in ((True, set()), (False, {"async_inflight"})):
        w, prefix = stream(tmp_path, f"z{wait}")
        with w:
            pipeline(w, wait=wait, zero_fill=True)
        out, _ = converted(prefix, tmp_path)
        assert errors(out) == expected
        cols = columns(out)
        copies = cols["op"] == Op.CP_ASYNC
        assert np.sum(copies & (cols["addr2"] == ZERO_SOURCE) & (cols["space2"] == 2)) == 1


def test_atomics_are_relaxed_with_their_scope_and_a_warning(tmp_path):
    w, prefix = stream(tmp_path)
    with w:
        w.alloc(A, 64)
        w.host_init(A, 64)
        w.launch("count", block=(N, 1, 1))
        w.write(0, 0, 0, space=Space.SHARED)  # the shared counter starts at 0
        for t in range(N):
            w.barrier(0, t)
        for t in range(N):
            w.atomic(0, t, A, pc=0x10)
            w.atomic(0, t, 0, space=Space.SHARED, pc=0x20)
            w.atomic(0, t, A + 8, pc=0x30, system=True)
        w.launch_end()
    out, warnings = converted(prefix, tmp_path)
    cols = columns(out)
    atomics = cols["op"] == Op.ATOMIC
    assert np.sum(atomics) == 3 * N
    assert set(cols["scope"][atomics & (cols["space"] == 1)].tolist()) == {Scope.BLOCK}
    assert set(cols["scope"][atomics & (cols["addr"] == A + 8)].tolist()) == {Scope.SYSTEM}
    assert set(cols["scope"][atomics & (cols["addr"] == A)].tolist()) == {Scope.DEVICE}
    assert set(cols["sem"][atomics].tolist()) == {0}
    assert errors(out) == set()
    assert any("launch 0 (count): atomics are recorded as relaxed" in x for x in warnings)
    with open_trace(out) as t:
        assert any("relaxed" in x for x in t.meta.warnings)


def test_threads_that_exited_count_as_arrived_at_a_block_barrier(tmp_path):
    w, prefix = stream(tmp_path)
    with w:
        w.alloc(A, 4 * N)
        w.launch("early_exit", block=(N, 1, 1), pc=0x100)
        w.exit(0, N - 1, pc=0x110)  # thread 7 returns early
        for t in range(N - 1):
            w.write(0, t, 4 * t, space=Space.SHARED, pc=0x120)
            w.barrier(0, t, pc=0x130)
        for t in range(N - 1):
            w.read(0, t, 4 * ((t + 1) % (N - 1)), space=Space.SHARED, pc=0x140)
        w.launch_end()
    out, warnings = converted(prefix, tmp_path)
    cols = columns(out)
    arrive = np.flatnonzero(cols["op"] == Op.BAR_ARRIVE)
    assert cols["thread"][arrive].tolist() == [N - 1]
    assert errors(out) == set()
    assert any("1 thread(s) had exited" in x and "early_exit+0x30" in x for x in warnings)


def test_host_copies_define_memory_and_fresh_allocations_do_not(tmp_path):
    w, prefix = stream(tmp_path)
    with w:
        w.alloc(A, 64)
        w.host_init(A, 32)  # cudaMemcpy of the first 32 bytes
        w.launch("reader", block=(1, 1, 1))
        w.read(0, 0, A, 4)  # copied: defined
        w.read(0, 0, A + 40, 4)  # allocated, never written: uninit_read
        w.read(0, 0, 0x5000, 4)  # outside every allocation (a __device__
        w.launch_end()  # variable): defined at the launch's start
    out, _ = converted(prefix, tmp_path)
    groups = tracerace.check(out).groups
    assert [g.kind for g in groups] == ["uninit_read"]
    cols = columns(out)
    inits = np.flatnonzero(cols["op"] == Op.INIT)
    assert sorted(cols["addr"][inits].tolist()) == [0x5000, A]


def test_an_mbarrier_wait_gets_the_parity_of_the_completed_phase(tmp_path):
    w, prefix = stream(tmp_path)
    bar = 0x100
    with w:
        w.launch("mbar", block=(2, 1, 1))
        w.mbarrier(0, 0, BarrierAction.INIT, bar, 2)
        w.barrier(0, 0), w.barrier(0, 1)
        for phase in range(2):
            w.write(0, 0, 8 * phase, 4, space=Space.SHARED)
            w.mbarrier(0, 0, BarrierAction.ARRIVE, bar, 1)
            w.mbarrier(0, 1, BarrierAction.ARRIVE, bar, 1)
            w.mbarrier(0, 1, BarrierAction.WAIT, bar)
            w.read(0, 1, 8 * phase, 4, space=Space.SHARED)
        w.launch_end()
    out, _ = converted(prefix, tmp_path)
    cols = columns(out)
    waits = cols["op"] == Op.MBAR_WAIT
    assert cols["arg"][waits].tolist() == [0, 1]
    assert errors(out) == set()


def refused(tmp_path, write, pattern: str) -> TraceError:
    w, prefix = stream(tmp_path)
    with w:
        write(w)
    with pytest.raises(TraceError) as err:
        converted(prefix, tmp_path)
    assert re.search(pattern, str(err.value)), str(err.value)
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out.arrow").exists()
    return err.value


def test_a_wait_no_arrivals_completed_is_refused(tmp_path):
    def write(w):
        w.launch("mbar", block=(1, 1, 1))
        w.mbarrier(0, 0, BarrierAction.INIT, 0x40, 1)
        w.mbarrier(0, 0, BarrierAction.WAIT, 0x40, pc=0x8)
        w.launch_end()

    refused(tmp_path, write, r"mbarrier 0x40 at mbar\+0x8 returned before any")


def test_an_overflowing_launch_is_refused_naming_the_buffer_to_set(tmp_path):
    def write(w):
        w.launch("big", block=(1, 1, 1))
        w.read(0, 0, A)
        w.launch_end(produced=5_000_000, capacity=1)

    refused(
        tmp_path,
        write,
        r"launch 0 \(big\) produced 5,000,000 records .* "
        r"TRACERACE_CUDA_BUFFER_MB to at least 230",
    )


@pytest.mark.parametrize(
    "instruction, what",
    [(19, "ldmatrix"), (23, "wgmma"), (34, "cp.async.mbarrier.arrive"), (31, "tcgen05")],
)
def test_instructions_the_format_cannot_express_are_refused(tmp_path, instruction, what):
    def write(w):
        w.launch("tma", block=(1, 1, 1), pc=0x100)
        w.unfollowed(0, 0, instruction, pc=0x180)
        w.launch_end()

    refused(
        tmp_path,
        write,
        rf"launch 0 \(tma\) executed .*{what}.* at tma\+0x80 "
        r"\(block 0, thread 0\), which tracerace cannot follow",
    )


def test_an_arrive_and_drop_lowers_the_later_phases_count(tmp_path):
    """Thread 0 arrives and drops out of an mbarrier of two; thread 1 then completes
    phase 0 alone and, as the only one expected, phase 1: its waits get parities
    0 and 1."""
    w, prefix = stream(tmp_path)
    bar = 0x40
    with w:
        w.launch("drop", block=(2, 1, 1))
        w.mbarrier(0, 0, BarrierAction.INIT, bar, 2)
        w.mbarrier(0, 0, BarrierAction.ARRIVE_DROP, bar, 1, pc=0x10)
        for _ in range(2):
            w.mbarrier(0, 1, BarrierAction.ARRIVE, bar, 1)
            w.mbarrier(0, 1, BarrierAction.WAIT, bar)
        w.launch_end()
    out = str(tmp_path / "out.arrow")
    convert(prefix, out)
    t = ipc.open_file(out).read_all().to_pydict()
    rows = [
        (op, thread, arg)
        for op, thread, arg in zip(t["op"], t["thread"], t["arg"])
        if op in (Op.MBAR_ARRIVE_DROP, Op.MBAR_WAIT)
    ]
    assert rows == [(Op.MBAR_ARRIVE_DROP, 0, 1), (Op.MBAR_WAIT, 1, 0), (Op.MBAR_WAIT, 1, 1)]


def test_a_stream_that_ends_inside_a_launch_is_refused(tmp_path):
    def write(w):
        w.launch("crash", block=(1, 1, 1))
        w.read(0, 0, A)

    refused(tmp_path, write, r"ended while launch 0 \(crash\) was running")


def test_what_the_tool_could_not_do_refuses_the_recording(tmp_path):
    def write(w):
        w.record(Kind.ERROR, size=w.string("the program launched a CUDA graph"))
        w.launch("k", block=(1, 1, 1))
        w.launch_end()

    refused(tmp_path, write, "the CUDA tool stopped recording: the program launched a CUDA graph")


def test_a_stream_of_another_version_is_refused_naming_both(tmp_path):
    path = tmp_path / "run.1.trc"
    path.write_bytes(MAGIC + (3).to_bytes(2, "little") + (48).to_bytes(2, "little") + bytes(4))
    with pytest.raises(TraceError, match="record stream version 3 .* reads versions 1 to 2"):
        read_stream(str(path))
    path.write_bytes(b"garbage!" + bytes(8))
    with pytest.raises(TraceError, match="bad magic"):
        read_stream(str(path))


def test_only_one_process_may_launch_kernels(tmp_path):
    for pid in (1, 2):
        with StreamWriter(tmp_path / f"run.{pid}.trc") as w:
            w.launch("k", block=(1, 1, 1))
            w.launch_end()
    with pytest.raises(TraceError, match="2 processes launched CUDA kernels"):
        convert(str(tmp_path / "run"), str(tmp_path / "out.arrow"))


def test_syncwarp_and_named_barriers_keep_their_operands(tmp_path):
    w, prefix = stream(tmp_path)
    with w:
        w.launch("warp", block=(64, 1, 1))
        for t in range(32):
            w.syncwarp(0, t, 0xFFFFFFFF)
        for t in range(64):
            w.barrier(0, t, index=3, count=64)
        w.launch_end()
    out, _ = converted(prefix, tmp_path)
    cols = columns(out)
    assert set(cols["arg"][cols["op"] == Op.WARP_SYNC].tolist()) == {0xFFFFFFFF}
    bars = cols["op"] == Op.BAR_SYNC
    assert set(cols["obj"][bars].tolist()) == {3} and set(cols["arg"][bars].tolist()) == {64}


def test_the_stream_kinds_mirror_the_tool_header():
    header = (ROOT / "tracerace/record/cuda/tool/tracerace_cuda.h").read_text()
    body = header[header.index("enum Kind") : header.index("};", header.index("enum Kind"))]
    found = {name: int(value) for name, value in re.findall(r"(\w+) = (\d+),", body)}
    assert found == {k.name: int(k) for k in Kind}
    assert int(AccessFlag.ATOMSYS) == 4 and int(BarrierAction.WAIT) == 6


# --- the command line and the build -------------------------------------------------


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tracerace", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
    )


def test_record_without_nvcc_fails_in_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "run.arrow"
    done = run_cli(
        ["record", "--backend", "cuda", "-o", str(out), "--", "./app"],
        {"CUDA_HOME": str(tmp_path / "no-toolkit")},
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"tracerace: error: cuda backend: missing-tool: CUDA_HOME={tmp_path / 'no-toolkit'} "
        "holds no bin/nvcc; point it at a CUDA toolkit, or unset it"
    ]
    assert not out.exists()


def test_record_on_a_machine_without_a_gpu_fails_in_one_line(tmp_path):
    """CI has no NVIDIA driver: the recording stops before running the program.
    (With one, the missing program is the one-line error instead.)"""
    try:
        ctypes.CDLL("libcuda.so.1")
        driver = True
    except OSError:
        driver = False
    out = tmp_path / "run.arrow"
    done = run_cli(
        ["record", "--backend", "cuda", "-o", str(out), "--", str(tmp_path / "no-such-app")],
        {"TRACERACE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    expected = "cannot run" if driver else "cuda backend: no-gpu: no NVIDIA GPU driver"
    assert expected in lines[0]
    assert not out.exists()


def test_check_gpu_names_a_missing_driver():
    with pytest.raises(TraceError, match="no NVIDIA GPU driver .*libcuda-missing.so"):
        cuda_build.check_gpu("libcuda-missing.so")


def test_the_schedule_is_the_gpus_own(tmp_path):
    done = run_cli(
        [
            "record",
            "--backend",
            "cuda",
            "--schedule",
            "random",
            "-o",
            str(tmp_path / "x.arrow"),
            "--",
            "./app",
        ],
        {},
    )
    assert done.returncode == 2 and "GPU's own schedule" in done.stderr


def test_the_tool_library_and_its_patches_build_here(tmp_path, monkeypatch):
    """Compiles both parts against this machine's nvcc and the Compute Sanitizer
    API (the test extra installs the nvidia-cuda-sanitizer-api wheel)."""
    monkeypatch.setenv("TRACERACE_CACHE_DIR", str(tmp_path / "cache"))
    kit = cuda_build.find_toolkit()
    tool = cuda_build.tool_library(kit)
    library, patches = Path(tool.library), Path(tool.patches)
    assert library.stat().st_size > 0 and patches.stat().st_size > 0
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True
    ).stdout
    assert re.search(r"\bT InitializeInjection\b", symbols)
    needed = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True).stdout
    assert "libsanitizer-public.so" in needed
    # the fatbin holds every patch function the host side names
    source = cuda_build.HOST_SOURCE.read_text()
    names = set(re.findall(r'"(tracerace_\w+)"', source))
    blob = patches.read_bytes()
    assert names and all(name.encode() in blob for name in names), names
    assert cuda_build.tool_library(kit) == tool  # cached: built once


# --- the conversion streams ----------------------------------------------------------------


def mixed(w: StreamWriter) -> None:
    """Several launches whose rows span batches: strings, host inits, untracked
    globals, exits at a barrier, zero-filling copies and mbarrier phases."""
    reduction(w, sync=True)
    pipeline(w, wait=True, zero_fill=True)
    w.launch("early_exit", block=(N, 1, 1), pc=0x100)
    w.exit(0, N - 1, pc=0x110)
    for t in range(N - 1):
        w.write(0, t, 4 * t, space=Space.SHARED, pc=0x120)
        w.barrier(0, t, pc=0x130)
    w.read(0, 0, 0x5000, 4)
    w.launch_end()
    w.launch("mbar", block=(2, 1, 1))
    w.mbarrier(0, 0, BarrierAction.INIT, 0x100, 2)
    for _phase in range(3):
        w.mbarrier(0, 0, BarrierAction.ARRIVE, 0x100, 1)
        w.mbarrier(0, 1, BarrierAction.ARRIVE, 0x100, 1)
        w.mbarrier(0, 1, BarrierAction.WAIT, 0x100)
    w.launch_end()


def test_batches_of_any_size_give_the_same_trace(tmp_path):
    w, prefix = stream(tmp_path)
    with w:
        mixed(w)
    outs = {}
    for batch in (1, 2, 3, 7, 1 << 18):
        out = str(tmp_path / f"out{batch}.arrow")
        _, _, warnings = convert(prefix, out, batch_records=batch)
        with open_trace(out) as t:
            outs[batch] = (columns(out), t.meta.sites, warnings)
    cols, sites, warnings = outs[1 << 18]
    assert (cols["op"] == Op.BAR_ARRIVE).any() and (cols["op"] == Op.MBAR_WAIT).any()
    for batch, (c, s, warn) in outs.items():
        assert s == sites and warn == warnings, batch
        for name in cols:
            assert np.array_equal(c[name], cols[name]), (batch, name)


def conversion_peak(tmp_path, accesses: int) -> int:
    """Peak resident KiB of converting a one-launch stream of ``accesses`` global
    reads, in a fresh interpreter."""
    w, prefix = stream(tmp_path, f"big{accesses}")
    with w:
        w.alloc(A, 4 * 1024)
        w.host_init(A, 4 * 1024)
        w.launch("long", block=(1024, 1, 1), pc=0x100)
        step = 1 << 20
        for first in range(0, accesses, step):
            n = min(step, accesses - first)
            rec = np.zeros(n, dtype=RECORD_DTYPE)
            rec["kind"], rec["space"], rec["flags"] = Kind.ACCESS, Space.GLOBAL, AccessFlag.READ
            rec["size"], rec["pc"] = 4, 0x110
            rec["thread"] = np.arange(first, first + n) % 1024
            rec["addr"] = A + 4 * rec["thread"].astype(np.uint64)
            w.device_records(rec)
        w.launch_end()
    code = textwrap.dedent(f"""
        from tracerace.record.cuda.convert import convert
        events, _, _ = convert({prefix!r}, {prefix + ".arrow"!r})
        assert events == {accesses + 1}, events
        print({PEAK_KIB})
    """)
    root = str(Path(__file__).parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=root),
    )
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_conversion_memory_does_not_grow_with_the_launch(tmp_path):
    """Four times the records (4 million, 192 MB of stream), the same memory, well
    under what holding the whole stream takes."""
    small = conversion_peak(tmp_path, 1 << 20)
    large = conversion_peak(tmp_path, 1 << 22)
    assert large < 450 << 10, large
    assert large - small < 100 << 10, (small, large)


@pytest.mark.parametrize(
    "write, what",
    [
        (lambda w: w.read(0, 0, 0xFFFFFFFFFFFFFFFE, 4), "ACCESS record's bytes pass the end"),
        (lambda w: w.cp_async(0, 0, 0, 0xFFFFFFFFFFFFFFF8, 16), "CP_ASYNC record's bytes pass"),
        (lambda w: w.host_init(0xFFFFFFFFFFFFFFF0, 32), "HOST_INIT record's bytes pass"),
    ],
    ids=["access", "cp-async-source", "host-init"],
)
def test_bytes_past_64_bits_are_refused_naming_the_record(tmp_path, write, what):
    """The stream is written inside the recorded process, which could write it too."""

    def program(w):
        w.launch("k", block=(1, 1, 1))
        write(w)
        w.launch_end()

    refused(tmp_path, program, what)


def test_a_grid_past_2_32_blocks_is_refused(tmp_path):
    def program(w):
        w.launch("huge", grid=(1 << 31, 4, 1), block=(1, 1, 1))
        w.launch_end()

    refused(tmp_path, program, r"more than 2\^32 blocks or threads")
