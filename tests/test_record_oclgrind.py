"""The oclgrind backend: building the plugin, converting its output, and the
OpenCL corpus, where Oclgrind's own race detector and tracerace must say what
``opencl_corpus/agreement.py`` states for every kernel form.

Outside CI (``CI`` unset) the tests that run Oclgrind skip, with the reason,
when it is not installed; in CI they fail instead (``.ci/run`` installs it).
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
from opencl_corpus import agreement
from peak import PEAK_KIB

from tracerace.errors import TraceError
from tracerace.record.oclgrind import build as oclgrind_build
from tracerace.record.oclgrind import convert as oclgrind_convert
from tracerace.record.oclgrind.convert import RECORD_DTYPE, Kind
from tracerace.trace.ops import Op, Space

ON_CI = bool(os.environ.get("CI"))
INSTALL = "apt-get install oclgrind liboclgrind-dev opencl-headers ocl-icd-opencl-dev"


def unavailable(what: str) -> None:
    """Fail in CI, skip (with the reason, also as a warning) elsewhere."""
    if ON_CI:
        pytest.fail(f"{what}: CI must run the Oclgrind tests (.ci/run installs it)")
    reason = f"{what}; the Oclgrind backend tests skip ({INSTALL}; pip install pyopencl)"
    warnings.warn(reason, stacklevel=2)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def plugin(tmp_path_factory):
    """The plugin, built once per session into a fresh cache (the first-use path)."""
    if shutil.which("oclgrind") is None:
        unavailable("Oclgrind is not installed")
    patch = pytest.MonkeyPatch()
    patch.setenv("TRACERACE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    yield oclgrind_build.plugin_library(oclgrind_build.find_oclgrind())
    patch.undo()


@pytest.fixture(scope="session")
def c_host(plugin, tmp_path_factory):
    """histogram_host.c, compiled with gcc against the OpenCL ICD loader."""
    if shutil.which(os.environ.get("CC", "gcc")) is None:
        unavailable("no C compiler for the C host program")
    try:
        return agreement.build_c_host(str(tmp_path_factory.mktemp("host")))
    except subprocess.CalledProcessError:
        unavailable("the C host program does not build (OpenCL headers or -lOpenCL missing)")


@pytest.fixture(scope="session")
def pyopencl_installed():
    try:
        import pyopencl  # noqa: F401
    except ImportError:
        unavailable("pyopencl is not installed")


# --- the corpus ---------------------------------------------------------------------


@pytest.mark.parametrize("case", agreement.CASES, ids=lambda c: c.name)
def test_corpus_case(case, plugin, request, tmp_path):
    """Oclgrind --data-races and tracerace say what the table says."""
    c_host = request.getfixturevalue("c_host") if case.host == "c" else None
    if case.host == "pyopencl":
        request.getfixturevalue("pyopencl_installed")
    outcome = agreement.run_case(case, str(tmp_path), c_host)
    assert outcome.events > 0
    assert outcome.matches(case), f"{case.name}: expected {case}, got {outcome}"


def test_reference_engine_agrees_on_the_corpus_traces(plugin, tmp_path):
    """A few corpus traces give the same hazard kinds under the reference checker."""
    import tracerace

    for case in agreement.CASES[:4]:
        agreement.run_case(case, str(tmp_path))
        trace = tmp_path / f"{case.name}.arrow"
        kinds = [
            {(g.kind, g.severity) for g in tracerace.check(trace, engine=e).groups}
            for e in ("numba", "reference")
        ]
        assert kinds[0] == kinds[1], case.name


def test_every_difference_is_explained():
    """A case has a `why` exactly when the two checkers' answers differ."""
    for case in agreement.CASES:
        assert (case.why is not None) == agreement.differs(case), case.name


def test_corpus_covers_twenty_kernels_in_correct_and_broken_forms():
    kernels = {c.kernel for c in agreement.CASES}
    assert len(kernels) >= 20
    for kernel in kernels:
        forms = [c.form for c in agreement.CASES if c.kernel == kernel]
        assert "ok" in forms and len(forms) >= 2, kernel
    sources = {p.stem for p in agreement.CORPUS.glob("*.cl")}
    assert sources == kernels
    assert {c.host for c in agreement.CASES} == {"sim", "pyopencl", "c"}


def test_docs_table_is_current():
    """docs/oclgrind.md shows the table rendered from CASES (agreement.py --write)."""
    document = agreement.DOC.read_text()
    assert agreement.document_with_table(document, agreement.render_table()) == document


# --- the recorded trace -------------------------------------------------------------


def test_trace_of_the_tree_reduction(plugin, tmp_path):
    """Blocks, threads, spaces, barriers, sites and buffers of a known kernel."""
    from tracerace.record.oclgrind import record
    from tracerace.trace.reader import open_trace

    out = tmp_path / "reduce.arrow"
    result = record([str(agreement.CORPUS / "reduce.sim")], str(out))
    assert (result.launches, result.exit_code) == (1, 0)
    with open_trace(str(out)) as trace:
        cols = {
            name: np.concatenate([b.cols[name] for b in trace])
            for name in ("ts", "op", "block", "thread", "space", "arg", "site")
        }
        meta = trace.meta
    assert len(cols["ts"]) == result.events
    assert np.all(np.diff(cols["ts"].astype(np.int64)) > 0)
    assert set(cols["block"]) == {0, 1} and set(cols["thread"]) == set(range(8))
    bars = cols["op"] == Op.BAR_SYNC
    assert np.all(cols["arg"][bars] == 8) and bars.sum() == 2 * 8 * 4  # 1 + 3 levels
    assert {Space.GLOBAL, Space.SHARED} <= set(cols["space"].tolist())
    assert all(site.startswith("reduce.cl:") for site in meta.sites)
    assert {b.name for b in meta.buffers} == {"in", "out", "tile"}


def test_two_launches_and_the_command_line(plugin, pyopencl_installed, tmp_path):
    """`tracerace record --backend oclgrind` on a pyopencl host, then `check`."""
    out = tmp_path / "dot.arrow"
    record = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracerace",
            "record",
            "--backend",
            "oclgrind",
            "-o",
            str(out),
            "--",
            sys.executable,
            str(agreement.CORPUS / "dot.py"),
        ],
        capture_output=True,
        text=True,
    )
    assert record.returncode == 0, record.stderr
    assert "2 launches" in record.stderr
    check = subprocess.run(
        [sys.executable, "-m", "tracerace", "check", str(out)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout


def test_a_failing_host_program_is_an_error(plugin, tmp_path):
    from tracerace.record.oclgrind import record

    with pytest.raises(TraceError, match="exited with status 3"):
        record([sys.executable, "-c", "raise SystemExit(3)"], str(tmp_path / "x.arrow"))
    assert not (tmp_path / "x.arrow").exists()


def test_a_program_without_opencl_is_an_error(plugin, tmp_path):
    from tracerace.record.oclgrind import record

    with pytest.raises(TraceError, match="no OpenCL context"):
        record([sys.executable, "-c", "pass"], str(tmp_path / "x.arrow"))


def test_the_plugin_is_built_once(plugin):
    ocl = oclgrind_build.find_oclgrind()
    built = os.stat(plugin).st_mtime_ns
    assert oclgrind_build.plugin_library(ocl) == plugin
    assert os.stat(plugin).st_mtime_ns == built


# --- what the recorder must not miss (tests/opencl_corpus/recorder/) ----------------

RECORDER = agreement.CORPUS / "recorder"


def record_form(kernel: str, tmp_path, form: str = "ok") -> str:
    """Record ``recorder/KERNEL.sim`` built with ``-DFORM`` (none for ``ok``)."""
    from tracerace.record.oclgrind import run

    out = tmp_path / f"{kernel}-{form}.arrow"
    options = [] if form == "ok" else ["--build-options", f"-D{form.upper()}"]
    run([str(RECORDER / f"{kernel}.sim")], str(out), oclgrind_args=options)
    return str(out)


def error_kinds(trace: str) -> set[str]:
    import tracerace

    kinds = [
        {g.kind for g in tracerace.check(trace, engine=e).groups if g.severity == "error"}
        for e in ("numba", "reference")
    ]
    assert kinds[0] == kinds[1]
    return kinds[0]


def trace_columns(path: str, *names: str) -> dict[str, np.ndarray]:
    from tracerace.trace.reader import open_trace

    with open_trace(path) as trace:
        batches = [b.cols for b in trace]
        sites = trace.meta.sites
    return {n: np.concatenate([b[n] for b in batches]) for n in names} | {"sites": sites}


def test_a_struct_argument_counts_as_initialized(plugin, tmp_path):
    """Oclgrind fills a by-value struct's private copy without a store: each
    work-item's copy is an init of its local space, and reading it is clean."""
    trace = record_form("struct_arg", tmp_path)
    assert error_kinds(trace) == set()
    cols = trace_columns(trace, "op", "space", "block", "thread", "size")
    init = (cols["op"] == Op.INIT) & (cols["space"] == Space.LOCAL)
    assert sorted(zip(cols["block"][init].tolist(), cols["thread"][init].tolist())) == [
        (b, t) for b in range(2) for t in range(4)
    ]
    assert set(cols["size"][init].tolist()) == {8}


def test_barrier_rows_carry_the_fence_spaces_of_their_flags(plugin, tmp_path):
    """barrier(CLK_LOCAL_MEM_FENCE) orders shared memory only (2), the global
    flag global memory (1), both 3, barrier(0) none: as each line's comment says."""
    trace = record_form("barrier_flags", tmp_path)
    source = (RECORDER / "barrier_flags.cl").read_text().splitlines()
    expected = {
        f"barrier_flags.cl:{n}": int(line.split("// fence_spaces")[1])
        for n, line in enumerate(source, 1)
        if "// fence_spaces" in line
    }
    cols = trace_columns(trace, "op", "site", "fence_spaces")
    bars = cols["op"] == Op.BAR_SYNC
    seen = {}
    for site, spaces in zip(cols["site"][bars].tolist(), cols["fence_spaces"][bars].tolist()):
        seen.setdefault(cols["sites"][site], set()).add(spaces)
    assert seen == {site: {spaces} for site, spaces in expected.items()}
    assert bars.sum() == 4 * 8


@pytest.mark.parametrize(
    "kernel, form, kinds",
    [
        ("async_inflight", "ok", set()),
        ("async_inflight", "early_read", {"async_inflight", "raw"}),
        ("async_store", "ok", set()),
        ("async_store", "overwrite", {"async_inflight", "war"}),
    ],
)
def test_an_async_copy_is_in_flight_until_its_wait(plugin, tmp_path, kernel, form, kinds):
    """Reading an async copy's destination, or writing its source, between the
    call and wait_group_events races with the copy; after the wait it does not."""
    assert error_kinds(record_form(kernel, tmp_path, form)) == kinds


def test_a_fatal_oclgrind_error_fails_the_recording(plugin, tmp_path):
    """Oclgrind abandons the launch at `unreachable` and still exits 0: the
    recording is an error naming the kernel, the work-item and the line."""
    out = tmp_path / "fatal.arrow"
    env = dict(
        os.environ,
        OCLGRIND_BUILD_OPTIONS="-cl-opt-disable",
        TRACERACE_CACHE_DIR=str(Path(plugin).parent),
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracerace",
            "record",
            "--backend",
            "oclgrind",
            "-o",
            str(out),
            "--",
            str(RECORDER / "fatal.sim"),
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("tracerace: error: ") and "fatal error" in last
    assert "unreachable" in last and "Global(5,0,0)" in last and "fatal.cl:9" in last
    assert not out.exists()


# --- without Oclgrind ---------------------------------------------------------------


def test_missing_oclgrind_names_the_package(monkeypatch, tmp_path):
    from tracerace.record import record

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TraceError, match="apt-get install oclgrind") as err:
        record(["host"], str(tmp_path / "x.arrow"), backend="oclgrind")
    assert err.value.rule == "missing-tool"


def test_missing_compiler_names_one(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CXX", raising=False)
    with pytest.raises(TraceError, match="install g\\+\\+"):
        oclgrind_build.find_compiler()


def test_missing_llvm_headers_name_the_version(monkeypatch, tmp_path):
    """The LLVM version comes from the libLLVM that liboclgrind links."""
    library = tmp_path / "liboclgrind.so"
    library.write_bytes(b"\x7fELF...libLLVM-999.so.1\x00...")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert oclgrind_build.llvm_major(str(library)) == "999"
    with pytest.raises(TraceError, match="install llvm-999-dev"):
        oclgrind_build.find_llvm_include(str(library))


def test_other_schedules_are_refused():
    from tracerace.record.oclgrind import record

    with pytest.raises(TraceError, match="Oclgrind's own schedule"):
        record(["host"], "x.arrow", schedule="random")


def test_the_cache_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("TRACERACE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert oclgrind_build.cache_dir() == tmp_path / "tracerace"


def test_record_kinds_mirror_the_plugin():
    """Kind and RECORD_DTYPE match the plugin's enum Kind and struct Record."""
    import re

    source = oclgrind_build.PLUGIN_SOURCE.read_text()
    body = source[source.index("enum Kind") :]
    body = body[: body.index("};")]
    plugin = {name: int(code) for name, code in re.findall(r"(\w+) = (\d+),", body)}
    assert plugin == {k.name: int(k) for k in Kind}
    assert RECORD_DTYPE.itemsize == 32 and "sizeof(Record) == 32" in source


def records(*rows: tuple) -> np.ndarray:
    """Plugin records from (kind, group, item, count, space, address) tuples."""
    out = np.zeros(len(rows), dtype=RECORD_DTYPE)
    for i, (kind, group, item, count, space, address) in enumerate(rows):
        out[i] = (kind, space, 0, 0, 4, group, item, address, 0xFFFFFFFF, count)
    return out


def test_a_divergent_barrier_becomes_a_count_mismatch():
    """Work-items that finished arrive with the count of those that did arrive."""
    recs = records(
        (Kind.KERNEL_BEGIN, 0, 0, 0, 0, 0),
        (Kind.ARRIVE, 0, 0, 4, 0, 0),
        (Kind.ARRIVE, 0, 1, 4, 0, 0),
        (Kind.RELEASE, 0, 0xFFFFFFFF, 4, 0, 0),
        (Kind.LOAD, 0, 0, 0, 3, 16),
    )
    cols, sites = oclgrind_convert.to_columns(recs, [])
    assert cols["op"].tolist() == [Op.BAR_SYNC, Op.BAR_SYNC, Op.BAR_ARRIVE, Op.BAR_ARRIVE, Op.READ]
    assert cols["thread"].tolist() == [0, 1, 2, 3, 0]
    assert cols["arg"].tolist()[:4] == [4, 4, 2, 2]
    assert cols["space"][-1] == Space.SHARED
    assert "finished before the barrier" in sites[cols["site"][2]]


def copy_meta(*events_waited: tuple[int, ...]) -> oclgrind_convert.Meta:
    """Side table: two calls (copy lines 0 and 1) of one 2-element global-to-local
    copy with event 1, and the waits' event lists."""
    call = oclgrind_convert.CopyCall(
        dest=0,
        src=64,
        dest_space=3,
        src_space=1,
        element=4,
        count=2,
        src_stride=1,
        dest_stride=1,
        event=1,
    )
    return oclgrind_convert.Meta(copies={0: call, 1: call}, waits=dict(enumerate(events_waited)))


def test_an_async_copy_is_in_flight_from_its_issue_to_the_wait():
    """The first caller issues the copy (cp_async per element, commit) at its
    call; its wait_group_events retires it (cp_async_wait 0) before its bar_sync."""
    recs = records(
        (Kind.KERNEL_BEGIN, 0, 0, 0, 0, 0),
        (Kind.COPY_ISSUE, 0, 0, 0, 0, 0),
        (Kind.LOAD, 0, 0, 0, 3, 4),
        (Kind.WAIT_EVENTS, 0, 0, 0, 0, 0),
        (Kind.ARRIVE, 0, 0, 2, 0, 0),
        (Kind.COPY_ISSUE, 0, 1, 1, 0, 0),
        (Kind.WAIT_EVENTS, 0, 1, 1, 0, 0),
        (Kind.ARRIVE, 0, 1, 2, 0, 0),
        (Kind.GROUP_LOAD, 0, 0xFFFFFFFF, 0, 1, 64),
        (Kind.GROUP_STORE, 0, 0xFFFFFFFF, 0, 3, 0),
        (Kind.RELEASE, 0, 0xFFFFFFFF, 2, 0, 0),
    )
    cols, _ = oclgrind_convert.to_columns(recs, [], copy_meta((1,), (1,)))
    assert cols["op"].tolist() == [
        Op.CP_ASYNC,
        Op.CP_ASYNC,
        Op.CP_ASYNC_COMMIT,
        Op.READ,
        Op.CP_ASYNC_WAIT,
        Op.BAR_SYNC,
        Op.BAR_SYNC,
    ]
    assert cols["thread"].tolist() == [0, 0, 0, 0, 0, 0, 1]
    assert cols["addr"].tolist()[:2] == [0, 4] and cols["addr2"].tolist()[:2] == [64, 68]
    assert cols["space"].tolist()[:2] == [Space.SHARED] * 2
    assert cols["space2"].tolist()[:2] == [Space.GLOBAL] * 2
    assert cols["size"].tolist()[:2] == [4, 4] and cols["arg"][4] == 0


def test_a_copy_left_in_flight_behind_a_newer_one_is_refused():
    """Two copies by one issuer, the newer waited for first: FIFO retirement
    cannot express it, so the conversion fails rather than over-retire."""
    call = oclgrind_convert.CopyCall(0, 64, 3, 1, 4, 1, 1, 1, event=1)
    meta = oclgrind_convert.Meta(
        copies={0: call, 1: dataclasses.replace(call, event=2)}, waits={0: (2,)}
    )
    recs = records(
        (Kind.KERNEL_BEGIN, 0, 0, 0, 0, 0),
        (Kind.COPY_ISSUE, 0, 0, 0, 0, 0),
        (Kind.COPY_ISSUE, 0, 0, 1, 0, 0),
        (Kind.WAIT_EVENTS, 0, 0, 0, 0, 0),
        (Kind.ARRIVE, 0, 0, 1, 0, 0),
    )
    with pytest.raises(TraceError, match="older copy"):
        oclgrind_convert.to_columns(recs, [], meta)


def test_fence_flags_map_to_fence_spaces():
    assert oclgrind_convert.fence_spaces([0, 1, 2, 3, 4, 7]).tolist() == [0, 2, 1, 3, 1, 3]


def test_host_writes_belong_to_the_next_launch():
    recs = records(
        (Kind.HOST_WRITE, 0, 0, 0, 1, 8),
        (Kind.KERNEL_BEGIN, 0, 0, 0, 0, 0),
        (Kind.STORE, 1, 2, 0, 1, 8),
        (Kind.KERNEL_END, 0, 0, 0, 0, 0),
        (Kind.HOST_WRITE, 0, 0, 0, 1, 8),
        (Kind.KERNEL_BEGIN, 0, 0, 1, 0, 0),
        (Kind.LOAD, 0, 0, 0, 1, 8),
        (Kind.KERNEL_END, 0, 0, 1, 0, 0),
        (Kind.HOST_WRITE, 0, 0, 0, 1, 8),
    )
    cols, _ = oclgrind_convert.to_columns(recs, [])
    assert cols["op"].tolist() == [Op.INIT, Op.WRITE, Op.INIT, Op.READ]
    assert cols["launch"].tolist() == [0, 0, 1, 1]
    assert cols["ts"].tolist() == [0, 1, 2, 3]


def test_sim_program_names_the_source(tmp_path):
    from tracerace.record.oclgrind import sim_program

    sim = tmp_path / "k.sim"
    sim.write_text("# a comment\n\n  kern.cl  # the program\nk\n1 1 1\n1 1 1\n")
    assert sim_program(Path(sim)) == "kern.cl"


# --- the plugin's files are untrusted; a recording streams ---------------------------------


@pytest.mark.parametrize(
    "what, why",
    [
        ("meta-kind", "unknown line kind 'hello'"),
        ("meta-short", "a buffer line needs 6 fields"),
        ("meta-number", "'zero' is not a number"),
        ("meta-site-gap", "site 1 is missing"),
        ("meta-buffer-name", "'name' must be a non-empty string"),
        ("record-kind", "unknown record kind 99"),
        ("record-copy", "async copy 12345, which the side table lacks"),
        ("record-address", "passes the end of the 64-bit address space"),
        ("record-partial", "not a whole number of 32-byte records"),
    ],
)
def test_plugin_files_the_program_wrote_fail_in_one_line(
    plugin, pyopencl_installed, tmp_path, what, why
):
    """``forge_records.py`` adds to the plugin's side table or records file what
    the plugin never writes, then exits at once."""
    out = tmp_path / "out.arrow"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tracerace",
            "record",
            "--backend",
            "oclgrind",
            "-o",
            str(out),
            "--",
            sys.executable,
            str(RECORDER / "forge_records.py"),
            what,
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("tracerace: error")]
    assert len(errors) == 1, done.stderr
    assert why in errors[0] and "the plugin does not write this" in errors[0], errors[0]
    assert not out.exists()


def record_peak(tmp_path, rounds: int) -> tuple[int, int]:
    """(events, peak resident KiB of the recording process) of ``private_loops.sim``
    with ``ROUNDS`` iterations, built with -cl-opt-disable (Oclgrind itself runs in
    a child of that process)."""
    out = tmp_path / f"loops{rounds}.arrow"
    code = textwrap.dedent(f"""
        from tracerace.record.oclgrind import run
        result = run([{str(RECORDER / "private_loops.sim")!r}], {str(out)!r},
                     oclgrind_args=["--build-options", "-cl-opt-disable -DROUNDS={rounds}"])
        print(result.events, {PEAK_KIB})
    """)
    root = str(Path(__file__).parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=root),
    )
    assert done.returncode == 0, done.stderr
    events, peak = done.stdout.split()[-2:]
    return int(events), int(peak)


RECORDING_PEAK_KIB = 450 << 10
"""A recording's peak memory, imports included: well under what the 2 million
events of 64 rounds take when the whole run is held in memory."""


def test_recording_memory_does_not_grow_with_the_kernel(plugin, tmp_path):
    """Long loops over private variables (a kernel shaped like GPUVerify's
    multiloop_return, 8 groups of 64): 16 times the events, the same memory."""
    small_events, small_peak = record_peak(tmp_path, 4)
    events, peak = record_peak(tmp_path, 64)
    assert events > 10 * small_events and events > 1_900_000
    assert peak < RECORDING_PEAK_KIB, peak
    assert peak - small_peak < 100 << 10, (small_peak, peak)
