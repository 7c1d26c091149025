"""`tracerace record --backend triton`: real Triton kernels run under Triton's
interpreter, recorded and checked.

Each script in ``kernels_triton/`` takes its variant as its first argument;
the lines where racing accesses happen end in ``# race`` (``# race cta``: in
that variant only) and the line of an uninitialized read ends in ``# uninit``.
A broken variant must be reported at exactly those lines with exactly the
expected hazard kinds; a correct one must be clean. Every recording starts a
Python with torch and Triton (about two seconds), so the matrix is kept small.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from time import perf_counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from needs import require

require("triton", ("triton", "torch"))

import tracerace  # noqa: E402
from tracerace.errors import TraceError  # noqa: E402
from tracerace.record import record  # noqa: E402
from tracerace.record.triton._memory import Intervals, LaunchMemory, RecordError  # noqa: E402
from tracerace.trace.ops import Op, Scope, Sem, Space  # noqa: E402
from tracerace.trace.reader import open_trace  # noqa: E402

TESTS = Path(__file__).parent
KERNELS = TESTS / "kernels_triton"


def record_script(tmp_path, script: str, *args: str) -> str:
    out = tmp_path / "trace.arrow"
    result = record(["python", str(KERNELS / script), *args], str(out), backend="triton")
    assert result.exit_code == 0 and result.launches >= 1 and result.events > 0
    return str(out)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """``recorded(script, *args)``: the trace of that run, recorded once per module."""
    traces: dict[tuple[str, ...], str] = {}

    def get(*args: str) -> str:
        if args not in traces:
            traces[args] = record_script(tmp_path_factory.mktemp("trace"), *args)
        return traces[args]

    return get


def marked_lines(script: str, *marks: str) -> set[str]:
    """``file.py:line`` of every line of ``script`` that ends in ``# MARK`` for a mark."""
    source = (KERNELS / script).read_text().splitlines()
    return {
        f"{script}:{n}"
        for n, line in enumerate(source, 1)
        if any(line.rstrip().endswith(f"# {mark}") for mark in marks)
    }


def reported_lines(report) -> set[str]:
    return {
        os.path.basename(site)
        for g in report.groups
        for site in (g.first_site, g.second_site)
        if site is not None
    }


def read_columns(path: str) -> dict:
    with open_trace(path) as trace:
        batches = [batch.cols for batch in trace]
        meta = trace.meta
    cols = {name: np.concatenate([b[name] for b in batches]) for name in batches[0]}
    return cols | {"meta": meta}


def buffer_named(cols: dict, name: str, launch: int = 0):
    return next(b for b in cols["meta"].buffers if b.name == name and b.launch == launch)


# --- correct and broken kernels --------------------------------------------------------

BROKEN = [
    ("permute.py", "aliased", {"raw", "war"}, ("race",)),
    ("histogram.py", "plain", {"raw", "war", "waw"}, ("race",)),
    ("flag.py", "relaxed", {"raw"}, ("race",)),
    ("flag.py", "cta", {"raw", "waw"}, ("race", "race cta")),
    ("scalars.py", "shared", {"waw"}, ("race",)),
    ("lookback.py", "relaxed", {"raw"}, ("race",)),
    ("lookback.py", "volatile", {"raw", "war"}, ("race volatile",)),
]

CORRECT = [
    ("vector_add.py", "100"),
    ("permute.py", "separate"),
    ("histogram.py", "atomic"),
    ("flag.py", "acq_rel"),
    ("uninit.py", "zeros"),
    ("uninit.py", "filled"),
    ("uninit.py", "numpy"),
    ("uninit.py", "late"),
    ("transpose.py",),
    ("descriptor.py",),
    ("scalars.py", "rows"),
    ("gelu.py", "stub"),
    ("gelu.py", "cuda"),
    ("lookback.py", "acq_rel"),
    ("lookback.py", "minimal"),
]


@pytest.mark.parametrize("script,variant,kinds,marks", BROKEN)
def test_broken_kernel_is_reported_at_its_racy_lines(recorded, script, variant, kinds, marks):
    report = tracerace.check(recorded(script, variant))
    assert {g.kind for g in report.groups} == kinds
    assert reported_lines(report) == marked_lines(script, *marks)


@pytest.mark.parametrize("args", CORRECT, ids=lambda a: " ".join(a))
def test_correct_kernel_is_clean(recorded, args):
    report = tracerace.check(recorded(*args))
    assert not report.groups, report.summary_line()


def test_aliased_permutation_names_the_shared_rows(recorded):
    """Incident 4 recorded: input and output are one tensor, so one buffer names both,
    and every launch (two autotuning configs, then the call) races."""
    path = recorded("permute.py", "aliased")
    cols = read_columns(path)
    report = tracerace.check(path, keep_findings=True)
    assert {b.name for b in cols["meta"].buffers} == {"x_ptr=out_ptr", "dst_ptr"}
    assert {h.second.launch for h in report.hazards} == {0, 1, 2}
    rows = set()
    for loc in (loc for g in report.groups for loc in g.locations):
        first = loc.split("[")[1].split(",")[0]  # a row, or rows lo:hi merged
        lo, _, hi = first.partition(":")
        rows |= {str(r) for r in range(int(lo), int(hi or int(lo) + 1))}
    assert rows <= {str(r) for r in range(16)} and len(rows) > 8


# --- uninitialized memory ----------------------------------------------------------------


def test_reading_torch_empty_memory_is_uninit_read(recorded):
    report = tracerace.check(recorded("uninit.py", "empty"))
    assert [g.kind for g in report.groups] == ["uninit_read"]
    assert reported_lines(report) == marked_lines("uninit.py", "uninit")
    # four loads of 8 adjacent elements: one merged range
    assert report.groups[0].locations == ("out_ptr[0:32]",)


def test_host_writes_initialize_only_the_elements_written(recorded):
    """The host zeroes ``out[:16]`` of a torch.empty tensor: the other half is uninitialized."""
    path = recorded("uninit.py", "half")
    report = tracerace.check(path)
    assert [g.kind for g in report.groups] == ["uninit_read"]
    assert report.groups[0].locations == ("out_ptr[16:32]",)
    cols = read_columns(path)
    init = cols["op"] == Op.INIT
    out = buffer_named(cols, "out_ptr")
    assert sorted(zip(cols["addr"][init].tolist(), cols["size"][init].tolist())) == [
        (buffer_named(cols, "x_ptr").base, 128),
        (out.base, 64),
    ]


# --- what a trace holds ---------------------------------------------------------------------


def test_masked_lanes_are_not_recorded(recorded):
    """100 elements in blocks of 16: the last program's 12 lanes past the end are
    masked off, so it reads and writes 4 elements (16 bytes) of each tensor."""
    cols = read_columns(recorded("vector_add.py", "100"))
    access = np.isin(cols["op"], [Op.READ, Op.WRITE])
    last = access & (cols["block"] == 6)
    assert cols["size"][access & (cols["block"] < 6)].tolist() == [64] * 18
    assert cols["size"][last].tolist() == [16, 16, 16]
    for name, op in (("x_ptr", Op.READ), ("y_ptr", Op.READ), ("out_ptr", Op.WRITE)):
        buf = buffer_named(cols, name)
        mine = access & (cols["addr"] >= buf.base) & (cols["addr"] < buf.base + 400)
        assert set(cols["op"][mine].tolist()) == {op}
        assert np.all(cols["addr"][mine] + cols["size"][mine] <= buf.base + 400)
        assert cols["size"][mine].sum() == 400
    # x and y were written by the host (init); out came from torch.empty (no init).
    init = cols["op"] == Op.INIT
    assert sorted(cols["addr"][init].tolist()) == [
        buffer_named(cols, "x_ptr").base,
        buffer_named(cols, "y_ptr").base,
    ]


def test_programs_are_blocks_of_one_agent_on_a_2d_grid(recorded):
    cols = read_columns(recorded("transpose.py"))
    assert set(cols["block"].tolist()) == set(range(6))  # a 2 x 3 grid
    assert set(cols["thread"].tolist()) == {0}
    # the grid is in the trace: program (x, y) is block x + 2 y, a block of one agent
    (dims,) = cols["meta"].launches
    assert (dims.grid, dims.block, dims.kernel) == ((2, 3, 1), (1, 1, 1), "transpose_kernel")
    assert cols["meta"].coords.agent(0, 5, 0) == "block (1,2,0)"
    # programs run in the interpreter's grid order (the last axis fastest)
    ran = cols["block"][cols["op"] != Op.INIT].tolist()
    assert [b for i, b in enumerate(ran) if i == 0 or ran[i - 1] != b] == [0, 2, 4, 1, 3, 5]
    x = buffer_named(cols, "x_ptr")
    assert x.shape == (8, 12) and x.strides == (1, 8)
    assert buffer_named(cols, "out_ptr").strides is None
    # A 4 x 4 tile: the view's columns lie in memory as the base's rows, so its load
    # is 4 runs of 4 adjacent elements; its transposed store is 4 runs of out's rows.
    reads = (cols["op"] == Op.READ) & (cols["block"] == 0)
    writes = (cols["op"] == Op.WRITE) & (cols["block"] == 0)
    assert (cols["addr"][reads] - x.base).tolist() == [0, 32, 64, 96]
    assert cols["size"][reads].tolist() == [16] * 4
    assert cols["size"][writes].tolist() == [16] * 4


def test_atomics_carry_their_sem_and_scope(recorded):
    """(block, sem, scope) of the flag's exchange (program 0) and compare-and-swap (1)."""

    def atomics(variant: str) -> list[tuple[int, int, int]]:
        cols = read_columns(recorded("flag.py", variant))
        atomic = cols["op"] == Op.ATOMIC
        return list(zip(*(cols[c][atomic].tolist() for c in ("block", "sem", "scope"))))

    assert atomics("acq_rel") == [(0, Sem.RELEASE, Scope.DEVICE), (1, Sem.ACQUIRE, Scope.DEVICE)]
    assert atomics("cta") == [(0, Sem.RELEASE, Scope.BLOCK), (1, Sem.ACQUIRE, Scope.DEVICE)]
    assert atomics("relaxed") == [(0, Sem.RELAXED, Scope.DEVICE), (1, Sem.RELAXED, Scope.DEVICE)]


def test_debug_barrier_is_a_barrier_of_one_program(recorded):
    cols = read_columns(recorded("flag.py", "relaxed"))
    bar = cols["op"] == Op.BAR_SYNC
    assert cols["block"][bar].tolist() == [0] and cols["arg"][bar].tolist() == [1]
    assert (
        cols["meta"]
        .sites[cols["site"][bar][0]]
        .endswith(f"flag.py:{_line_of('flag.py', 'tl.debug_barrier()')}")
    )


def test_autotuning_runs_every_config_once_then_the_call(recorded):
    """Configs BLOCK=16 (4 programs) and 32 (2), then the call with the first config;
    each lane's atomic_add is one acq_rel atomic at device scope."""
    cols = read_columns(recorded("histogram.py", "atomic"))
    programs = [len(set(cols["block"][cols["launch"] == launch].tolist())) for launch in range(3)]
    assert programs == [4, 2, 4]
    atomic = cols["op"] == Op.ATOMIC
    assert np.bincount(cols["launch"][atomic]).tolist() == [64, 64, 64]
    assert set(cols["sem"][atomic].tolist()) == {Sem.ACQ_REL}
    assert set(cols["scope"][atomic].tolist()) == {Scope.DEVICE}
    assert set(cols["space"][atomic].tolist()) == {Space.GLOBAL}


def test_sites_are_the_kernel_lines(recorded):
    cols = read_columns(recorded("vector_add.py", "100"))
    assert sorted(os.path.basename(s) for s in cols["meta"].sites) == sorted(
        f"vector_add.py:{_line_of('vector_add.py', f'# {what}')}"
        for what in ("load x", "load y", "store out")
    )


def test_descriptor_tiles_and_device_function_lines(recorded):
    cols = read_columns(recorded("descriptor.py"))
    sites = {os.path.basename(s) for s in cols["meta"].sites}
    assert sites == {
        f"descriptor.py:{_line_of('descriptor.py', text)}"
        for text in ("# helper load", "# descriptor load", "tl.store(")
    }
    x = buffer_named(cols, "x_desc")
    tile = (cols["op"] == Op.READ) & (cols["addr"] >= x.base) & (cols["addr"] < x.base + 128)
    assert cols["size"][tile].tolist() == [64, 64]  # each program's 4 x 4 tile, one run


def test_same_program_gives_a_bit_identical_trace(tmp_path, recorded):
    first = recorded("permute.py", "aliased")
    again = record_script(tmp_path, "permute.py", "aliased")
    assert Path(first).read_bytes() == Path(again).read_bytes()


def _line_of(script: str, text: str) -> int:
    lines = (KERNELS / script).read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


# --- the command line and failures ----------------------------------------------------------


def run_cli(tmp_path, *command: str, cwd=None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(Path(tracerace.__file__).parent.parent))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tracerace",
            "record",
            "--backend",
            "triton",
            "-o",
            str(tmp_path / "out.arrow"),
            "--",
            *command,
        ],
        capture_output=True,
        text=True,
        cwd=cwd or tmp_path,
        env=env,
    )


def run_source(tmp_path, source: str) -> subprocess.CompletedProcess:
    (tmp_path / "prog.py").write_text(source)
    return run_cli(tmp_path, "python", "prog.py")


KERNEL = """import torch
import triton
import triton.language as tl


@triton.jit
def copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets))

"""


def one_error_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracerace: error: "), result.stderr
    return lines[0]


def test_a_module_is_recorded_through_the_cli(tmp_path):
    result = run_cli(tmp_path, "python", "-m", "kernels_triton.vector_add", "40", cwd=TESTS)
    assert result.returncode == 0, result.stderr
    assert "1 launch" in result.stderr
    sites = read_columns(str(tmp_path / "out.arrow"))["meta"].sites
    assert sites and all(s.startswith("kernels_triton/vector_add.py:") for s in sites)


def test_an_access_outside_the_tensors_fails_the_recording(tmp_path):
    """Unmasked, the second program's lanes 10..15 read past x: nothing is written."""
    line = one_error_line(
        run_source(tmp_path, KERNEL + "copy[(2,)](torch.ones(10), torch.empty(16), BLOCK=8)\n")
    )
    assert "kernel copy, program (1, 0, 0): a load at prog.py:9" in line
    assert "outside every tensor argument" in line
    assert not (tmp_path / "out.arrow").exists()


def test_a_tensor_off_the_cpu_fails_the_recording(tmp_path):
    line = one_error_line(
        run_source(
            tmp_path, KERNEL + "copy[(1,)](torch.ones(8, device='meta'), torch.empty(8), BLOCK=8)\n"
        )
    )
    assert "cannot record the program: argument x_ptr of kernel copy is a tensor on meta" in line


def test_a_caught_failure_still_fails_the_recording(tmp_path):
    line = one_error_line(
        run_source(
            tmp_path,
            KERNEL + "try:\n    copy[(2,)](torch.ones(10), torch.empty(16), BLOCK=8)\n"
            "except Exception:\n    pass\n"
            "copy[(1,)](torch.ones(8), torch.empty(8), BLOCK=8)\n",
        )
    )
    assert "outside every tensor argument" in line
    assert not (tmp_path / "out.arrow").exists()


def test_a_float_argument_is_an_fp32_scalar(tmp_path):
    """The issue's minimal form: ``s.to`` needs ``s`` to be a Triton scalar."""
    result = run_source(
        tmp_path,
        KERNEL
        + (
            "@triton.jit\n"
            "def k(x_ptr, s):\n"
            "    tl.store(x_ptr + tl.arange(0, 4), s.to(tl.float32))\n\n"
            "x = torch.zeros(4)\n"
            "k[(1,)](x, 2.0)\n"
            "assert x.tolist() == [2.0] * 4\n"
        ),
    )
    assert result.returncode == 0, result.stderr
    cols = read_columns(str(tmp_path / "out.arrow"))
    assert cols["size"][cols["op"] == Op.WRITE].tolist() == [16]


def test_scalars_have_the_types_compiled_triton_gives_them(tmp_path):
    """fp32 for a float, i32 or i64 for an int by its range, i1 for a bool."""
    result = run_source(
        tmp_path,
        KERNEL
        + (
            "@triton.jit\n"
            "def k(x_ptr, f, small, big, flag):\n"
            "    tl.static_assert(f.dtype == tl.float32)\n"
            "    tl.static_assert(small.dtype == tl.int32)\n"
            "    tl.static_assert(big.dtype == tl.int64)\n"
            "    tl.static_assert(flag.dtype == tl.int1)\n"
            "    tl.store(x_ptr + tl.arange(0, 2), (f * 2).to(tl.float32))\n\n"
            "x = torch.zeros(2)\n"
            "k[(1,)](x, 0.25, 7, 2**40, True)\n"
            "assert x.tolist() == [0.5, 0.5]\n"
        ),
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    "variant,function,reason",
    [
        ("bessel", "j0", "libdevice.j0 (__nv_j0f) has no CPU version"),
        ("fast_tanhf", "fast_tanhf", "libdevice.fast_tanhf has no CUDA version"),
    ],
)
def test_a_libdevice_function_without_a_cpu_version_is_refused(tmp_path, variant, function, reason):
    line = one_error_line(run_cli(tmp_path, "python", str(KERNELS / "gelu.py"), variant))
    assert f"program (0, 0, 0): {reason}" in line
    assert line.endswith(f"gelu.py:{_line_of('gelu.py', f'libdevice.{function}(')}")
    assert not (tmp_path / "out.arrow").exists()


def test_libdevice_values_are_numpy_ones():
    """Against Python's math: the functions whose NumPy form is not one ufunc."""
    import math

    from tracerace.record.triton._libdevice import NUMPY

    x = np.array([-2.5, -0.5, 0.5, 1.5, 2.5], dtype=np.float32)
    assert NUMPY["round"](x).tolist() == [-3.0, -1.0, 1.0, 2.0, 3.0]
    assert NUMPY["rint"](x).tolist() == [-2.0, -0.0, 0.0, 2.0, 2.0]
    assert NUMPY["erf"](x).tolist() == [math.erf(v) for v in x.tolist()]
    assert NUMPY["remainder"](x, np.float32(2)).tolist() == [
        math.remainder(v, 2) for v in x.tolist()
    ]
    assert NUMPY["fdim"](x, np.float32(0)).tolist() == [0.0, 0.0, 0.5, 1.5, 2.5]
    assert NUMPY["rsqrt"](np.float32(4)) == 0.5


BAD_KERNEL = (
    KERNEL
    + """@triton.jit
def bad(x_ptr, s):
    offsets = tl.arange(0, 4)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + s.nope())

"""
)


@pytest.mark.parametrize(
    "call,caught",
    [
        ("bad[(2,)](torch.ones(8), 2)\n", ""),
        (
            "try:\n    bad[(2,)](torch.ones(8), 2)\nexcept Exception:\n    pass\n",
            " (the program caught it)",
        ),
    ],
)
def test_a_kernel_exception_names_the_kernel_line(tmp_path, call, caught):
    line = one_error_line(run_source(tmp_path, BAD_KERNEL + call))
    assert line.endswith(
        "kernel bad, program (0, 0, 0) raised AttributeError: 'tensor' "
        "object has no attribute 'nope' at prog.py:14" + caught
    ), line
    assert not (tmp_path / "out.arrow").exists()


def test_a_program_without_kernels_is_an_error(tmp_path):
    line = one_error_line(run_source(tmp_path, "import triton\nprint('hello')\n"))
    assert "launched no Triton kernel" in line


def test_the_schedules_are_serial_and_random(tmp_path):
    with pytest.raises(TraceError, match="usage.*serial and random"):
        record(
            ["python", str(KERNELS / "vector_add.py")],
            str(tmp_path / "x.arrow"),
            backend="triton",
            schedule="round-robin",
        )


# --- programs that wait for later programs -------------------------------------------------


def test_a_program_waits_for_a_later_one_in_the_order_they_ran(recorded):
    """Program 0 polls, program 1 raises the flag and ends, program 0 polls again
    (now it sees the flag) and stores: the trace is in that order."""
    cols = read_columns(recorded("lookback.py", "minimal"))
    ran = cols["op"] != Op.INIT
    assert list(zip(cols["block"][ran].tolist(), cols["op"][ran].tolist())) == [
        (0, Op.ATOMIC),
        (1, Op.ATOMIC),
        (0, Op.ATOMIC),
        (0, Op.WRITE),
    ]


@pytest.mark.parametrize("variant,kinds", [("acq_rel", set()), ("relaxed", {"raw"})])
def test_the_random_schedule_interleaves_at_atomics(tmp_path, recorded, variant, kinds):
    """Seeded: the same seed gives the same trace, another seed another order."""
    traces = []
    for seed, folder in ((1, "a"), (1, "b"), (2, "c")):
        out = tmp_path / folder
        out.mkdir()
        result = record(
            ["python", str(KERNELS / "lookback.py"), variant],
            str(out / "trace.arrow"),
            backend="triton",
            schedule="random",
            seed=seed,
        )
        assert result.exit_code == 0
        traces.append(out / "trace.arrow")
    assert traces[0].read_bytes() == traces[1].read_bytes()
    orders = [read_columns(str(t))["block"].tolist() for t in (traces[0], traces[2])]
    serial = read_columns(recorded("lookback.py", variant))["block"].tolist()
    assert len({tuple(serial), *map(tuple, orders)}) > 1
    for trace in traces:
        report = tracerace.check(str(trace))
        assert {g.kind for g in report.groups} == kinds
        if kinds:
            assert reported_lines(report) == marked_lines("lookback.py", "race")


def test_a_deadlock_stops_the_recording_naming_programs_and_lines(tmp_path):
    start = perf_counter()
    line = one_error_line(run_cli(tmp_path, "python", str(KERNELS / "lookback.py"), "deadlock"))
    assert perf_counter() - start < 60
    assert "kernel wait_for_later: no program can go on" in line
    for program, mark in (("(0, 0, 0)", "wait 0"), ("(1, 0, 0)", "wait 1")):
        (site,) = marked_lines("lookback.py", mark)
        assert f"program {program} at {KERNELS}/{site}" in line
    assert not (tmp_path / "out.arrow").exists()


def test_the_hooked_interpreter_names_exist():
    """A Triton upgrade that moves what the recorder hooks must fail here."""
    code = (
        "import json; from tracerace.record.triton._hooks import missing_hooks; "
        "print(json.dumps(missing_hooks()))"
    )
    env = dict(
        os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(Path(tracerace.__file__).parent.parent)
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert out.strip() == "[]"


# --- the pieces ---------------------------------------------------------------------------


def as_set(intervals: Intervals) -> set[int]:
    return {b for start, end in intervals.runs() for b in range(start, end)}


def from_set(points: set[int]) -> Intervals:
    return Intervals.of_elements(np.array(sorted(points), dtype=np.int64), 1)


byte_sets = st.sets(st.integers(0, 40), max_size=30)


@settings(max_examples=200, deadline=None)
@given(byte_sets, byte_sets, st.integers(0, 45), st.integers(0, 45))
def test_intervals_are_byte_sets(a, b, lo, hi):
    """Against plain Python sets: runs are disjoint, sorted and not adjacent."""
    ia, ib = from_set(a), from_set(b)
    assert as_set(ia) == a
    assert as_set(ia.minus(ib)) == a - b
    assert as_set(ia.intersect(ib)) == a & b
    assert as_set(ia.complement_in(lo, hi)) == set(range(lo, hi)) - a
    for result in (ia, ia.minus(ib), ia.intersect(ib)):
        assert np.all(result.starts < result.ends)
        assert np.all(result.starts[1:] > result.ends[:-1])


def test_elements_merge_into_runs():
    runs = Intervals.of_elements(np.array([8, 0, 4, 20, 20, 24, 40]), 4).runs()
    assert runs == [(0, 12), (20, 28), (40, 44)]


def test_launch_memory_translates_and_refuses():
    # Two storages; the third lies inside the first (another view of its memory).
    memory = LaunchMemory(
        [(0x1000, 64, 0x1_0000_0000), (0x5000, 16, 0x1_0000_0100), (0x1010, 16, 0x1_0000_0010)]
    )
    addrs = np.array([0x1000, 0x103C, 0x5000, 0x1010], dtype=np.uint64)
    assert memory.translate(addrs, 4).tolist() == [
        0x1_0000_0000,
        0x1_0000_003C,
        0x1_0000_0100,
        0x1_0000_0010,
    ]
    for bad in (0x0FFC, 0x103D, 0x500D, 0x2000):
        with pytest.raises(RecordError, match=f"0x{bad:x}"):
            memory.translate(np.array([0x1000, bad], dtype=np.uint64), 4)
