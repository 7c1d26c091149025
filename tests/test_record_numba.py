"""`tracerace record` with the numba backend: textbook kernels under numba-cuda's
simulator, recorded under every schedule and checked.

Each script in ``kernels_numba/`` holds a correct and a broken kernel (picked by
its first argument); the lines of the broken one where racing accesses happen
end in ``# race``. The broken ones must be reported at exactly those lines,
the correct ones must be clean. Every recording starts a Python with numba
(about a second), so the matrix is kept small.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from needs import require

require("numba", ("numba_cuda", "greenlet"))

import tracerace  # noqa: E402
from tracerace.errors import TraceError  # noqa: E402
from tracerace.record import record  # noqa: E402
from tracerace.record.numba._warp import (
    SHFL_BFLY,
    SHFL_CLAMP,
    SHFL_DOWN,  # noqa: E402
    SHFL_IDX,
    SHFL_UP,
    ballot,
    match_all,
    match_any,
    shfl_source,
    shuffle,
)
from tracerace.trace.ops import Op, Scope, Sem, Space  # noqa: E402
from tracerace.trace.reader import open_trace  # noqa: E402

KERNELS = Path(__file__).parent / "kernels_numba"
ALGORITHMS = [
    "reduce",
    "matmul",
    "scan",
    "histogram",
    "transpose",
    "views",
    "captured",
    "records",
    "grid_sync",
]
"""Scripts with a correct and a broken form; the last four reach memory through
views and ufuncs, globals and closures, records, and the grid barrier."""
BROKEN_SCHEDULES = [("serial", 0), ("round-robin", 0), ("random", 1), ("random", 7)]
CORRECT_SCHEDULES = [("serial", 0), ("round-robin", 0), ("random", 3)]


def record_script(
    tmp_path,
    script: str,
    *args: str,
    schedule: str | None = "serial",
    seed: int = 0,
    name: str = "trace",
) -> str:
    out = tmp_path / f"{name}.arrow"
    result = record(
        ["python", str(KERNELS / script), *args], str(out), schedule=schedule, seed=seed
    )
    assert result.exit_code == 0 and result.launches >= 1 and result.events > 0
    return str(out)


def record_cli(
    tmp_path, script: str, *args: str, schedule: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """``tracerace record`` on a kernel script (a hang is a failure, not a stuck test)."""
    options = ["--schedule", schedule] if schedule else []
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tracerace",
            "record",
            "-o",
            str(tmp_path / "out.arrow"),
            *options,
            "--",
            "python",
            str(KERNELS / script),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
    )


def cli_env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(Path(tracerace.__file__).parent.parent))


def marked_lines(script: str, mark: str) -> set[int]:
    """Lines of ``script`` whose inline comment (after ``  # ``) holds ``mark``."""
    source = (KERNELS / script).read_text().splitlines()
    return {
        n for n, line in enumerate(source, 1) if "  # " in line and mark in line.split("  # ", 1)[1]
    }


def race_lines(algorithm: str) -> set[str]:
    """``file.py:line`` of every line marked ``# race``."""
    source = (KERNELS / f"{algorithm}.py").read_text().splitlines()
    return {
        f"{algorithm}.py:{n}"
        for n, line in enumerate(source, 1)
        if line.rstrip().endswith("# race")
    }


def reported_lines(report) -> set[str]:
    return {
        os.path.basename(site)
        for g in report.groups
        for site in (g.first_site, g.second_site)
        if site is not None
    }


def read_columns(path: str) -> dict[str, np.ndarray]:
    with open_trace(path) as trace:
        batches = [batch.cols for batch in trace]
        meta = trace.meta
    cols = {name: np.concatenate([b[name] for b in batches]) for name in batches[0]}
    return cols | {"meta": meta}


# --- textbook kernels ------------------------------------------------------------------


@pytest.mark.parametrize("schedule,seed", BROKEN_SCHEDULES)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_broken_kernel_is_reported_at_its_racy_lines(tmp_path, algorithm, schedule, seed):
    report = tracerace.check(
        record_script(tmp_path, f"{algorithm}.py", "broken", schedule=schedule, seed=seed)
    )
    assert report.errors > 0
    assert {g.kind for g in report.groups} <= {"raw", "war", "waw"}
    assert reported_lines(report) == race_lines(algorithm)


@pytest.mark.parametrize("schedule,seed", CORRECT_SCHEDULES)
@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_correct_kernel_is_clean(tmp_path, algorithm, schedule, seed):
    report = tracerace.check(
        record_script(tmp_path, f"{algorithm}.py", "correct", schedule=schedule, seed=seed)
    )
    assert not report.groups, report.summary_line()


# --- what a trace holds ------------------------------------------------------------------


@pytest.fixture(scope="module")
def features(tmp_path_factory) -> dict:
    """The columns and metadata of ``features.py`` recorded serially."""
    return read_columns(record_script(tmp_path_factory.mktemp("features"), "features.py"))


def test_features_are_clean_and_every_launch_is_recorded(features):
    assert set(features["launch"].tolist()) == {0, 1, 2, 3, 4}
    assert np.all(np.diff(features["ts"].astype(np.int64)) >= 0)


def test_barriers_count_the_threads_that_arrive(features):
    bar = features["op"] == Op.BAR_SYNC
    assert np.all(features["obj"][bar] == 0)
    # features (launches 0, 1): count/and/or = 3 barriers of 8; dynamic: 1 of 8;
    # early_exit: 4 of the 8 threads return first, so the barrier counts 4.
    for launch, arrivals, barriers in ((0, 8, 3), (1, 8, 3), (2, 8, 1), (3, 4, 1)):
        mine = bar & (features["launch"] == launch)
        assert features["arg"][mine].tolist() == [arrivals] * (arrivals * barriers)


def test_fences_and_atomics_carry_their_scope(features):
    fence = features["op"] == Op.FENCE
    assert sorted(set(features["scope"][fence].tolist())) == [
        Scope.BLOCK,
        Scope.DEVICE,
        Scope.SYSTEM,
    ]
    assert np.all(features["sem"][fence] == Sem.ACQ_REL)
    atomic = features["op"] == Op.ATOMIC
    assert atomic.sum() == 2 * 2 * 8  # add and max, 8 threads, 2 launches
    assert np.all(features["scope"][atomic] == Scope.DEVICE)
    assert np.all(features["space"][atomic] == Space.GLOBAL)
    assert np.all(features["size"][atomic] == 4)


def test_every_space_is_recorded_with_element_sizes(features):
    access = np.isin(features["op"], [Op.READ, Op.WRITE])
    spaces = set(features["space"][access].tolist())
    assert spaces == {Space.GLOBAL, Space.SHARED, Space.LOCAL}
    assert set(features["size"][access].tolist()) == {4}


def test_buffers_name_arguments_and_arrays(features):
    buffers = {(b.name, b.launch): b for b in features["meta"].buffers}
    assert {"x", "out", "counts", "a", "b", "scratch", "d", "mirrored"} <= {
        name for name, _ in buffers
    }
    assert buffers[("a", 0)].space == Space.SHARED and buffers[("b", 0)].space == Space.SHARED
    assert buffers[("a", 0)].base != buffers[("b", 0)].base  # two arrays, not one
    assert buffers[("scratch", 0)].space == Space.LOCAL
    # A device array keeps its address across launches; host arrays are copied anew.
    assert buffers[("out", 0)].base == buffers[("out", 1)].base
    assert buffers[("x", 0)].base != buffers[("x", 1)].base


def test_host_filled_arrays_are_initialized_once_per_copy(features):
    init = features["op"] == Op.INIT
    # launch 0: x, out, counts; launch 1: x, counts (out is the same device array);
    # launch 2: out; launch 3: out, mirrored; launch 4: points.
    assert np.bincount(features["launch"][init]).tolist() == [3, 2, 1, 2, 1]


def test_record_fields_are_accessed_at_their_offsets(features):
    access = np.isin(features["op"], [Op.READ, Op.WRITE]) & (features["launch"] == 4)
    points = next(b for b in features["meta"].buffers if b.name == "points")
    offsets = features["addr"][access].astype(np.int64) - points.base
    assert features["op"][access].tolist() == [Op.READ, Op.WRITE] * 8  # .x read, .y written
    assert offsets.tolist() == [off for t in range(8) for off in (8 * t, 8 * t + 4)]
    assert set(features["size"][access].tolist()) == {4}


def test_sites_are_the_users_lines(features):
    sites = features["meta"].sites
    source = (KERNELS / "features.py").read_text().splitlines()
    store = next(n for n, line in enumerate(source, 1) if "# device function store" in line)
    assert all(os.path.basename(site).startswith("features.py:") for site in sites)
    assert any(site.endswith(f"features.py:{store}") for site in sites)


def test_clean_trace_has_no_hazards(tmp_path):
    report = tracerace.check(record_script(tmp_path, "features.py", schedule="random", seed=4))
    assert not report.groups, report.summary_line()


# --- what the recorder must not miss --------------------------------------------------


def site_lines(cols: dict, script: str, ops) -> set[int]:
    """Lines of ``script`` that have rows with one of ``ops``."""
    sites = cols["meta"].sites
    mine = np.isin(cols["op"], ops) & (cols["site"] < len(sites))
    return {
        int(sites[s].rsplit(":", 1)[1])
        for s in set(cols["site"][mine].tolist())
        if os.path.basename(sites[s].rsplit(":", 1)[0]) == script
    }


def test_accesses_through_views_and_ufuncs_are_recorded(tmp_path):
    """.reshape, .ravel, .view, .T, np.sin(x, out) and slice copies: every line
    marked ``# view`` has its reads and writes in the trace."""
    cols = read_columns(record_script(tmp_path, "views.py", "correct"))
    lines = site_lines(cols, "views.py", [Op.READ, Op.WRITE])
    assert marked_lines("views.py", "view") <= lines
    sines = (cols["launch"] == 1) & np.isin(cols["op"], [Op.READ, Op.WRITE])
    assert np.bincount(cols["op"][sines]).tolist()[:2] == [8, 8]  # all of x read, r written


def test_arrays_captured_by_name_are_recorded(tmp_path):
    """Module-level device arrays (also under atomics), a host table, an
    object's device array and a closure's device array are buffers of the
    trace and their accesses rows."""
    cols = read_columns(record_script(tmp_path, "captured.py", "correct"))
    names = {b.name for b in cols["meta"].buffers}
    assert {"PRICES", "COUNTS", "TABLE", "SETTINGS.weights", "scratch"} <= names
    weights = next(b for b in cols["meta"].buffers if b.name == "SETTINGS.weights")
    read = cols["op"] == Op.READ
    mine = (cols["addr"][read] >= weights.base) & (cols["addr"][read] < weights.base + 32)
    assert mine.sum() == 8
    counts = next(b for b in cols["meta"].buffers if b.name == "COUNTS")
    atomic = cols["op"] == Op.ATOMIC
    assert atomic.sum() == 8 and set(cols["addr"][atomic].tolist()) == {counts.base}


def test_captured_arrays_get_the_same_addresses_in_every_run(tmp_path, monkeypatch):
    """Arrays are placed in the order the recorder finds them, whatever Python's
    hash seed (a set of names iterated as it comes would differ)."""
    paths = []
    for seed in ("1", "2", "3"):
        monkeypatch.setenv("PYTHONHASHSEED", seed)
        paths.append(record_script(tmp_path, "captured.py", "correct", name=f"h{seed}"))
    assert Path(paths[0]).read_bytes() == Path(paths[1]).read_bytes() == Path(paths[2]).read_bytes()


def test_a_record_argument_is_device_memory_copied_back(tmp_path):
    """np.void is one element in global memory: its field accesses are rows,
    and the host record sees thread 0's write (the script checks it)."""
    cols = read_columns(record_script(tmp_path, "records.py", "correct"))
    record = next(b for b in cols["meta"].buffers if b.name == "r")
    mine = (
        np.isin(cols["op"], [Op.READ, Op.WRITE])
        & (cols["addr"] >= record.base)
        & (cols["addr"] < record.base + 8)
        & (cols["launch"] == 0)
    )
    assert sorted(zip(cols["op"][mine].tolist(), (cols["addr"][mine] - record.base).tolist())) == [
        (Op.READ, 0)
    ] * 8 + [(Op.WRITE, 4)]


def test_the_grid_barrier_is_signals_among_all_threads(tmp_path):
    """Each grid.sync generation: every thread signals F and waits on G; the
    last to arrive waits for all of F and signals G once per thread."""
    cols = read_columns(record_script(tmp_path, "grid_sync.py", "correct"))
    threads, generations = 24, 5
    signal, wait = cols["op"] == Op.SIGNAL, cols["op"] == Op.WAIT
    assert signal.sum() == wait.sum() == generations * (threads + 1)
    assert len(set(cols["obj"][signal | wait].tolist())) == 2 * generations
    assert sorted(set(cols["arg"][signal].tolist())) == [1, threads]
    assert not np.any(cols["op"] == Op.BAR_SYNC)


def test_mixed_barriers_are_a_deadlock_not_a_hang(tmp_path):
    result = record_cli(tmp_path, "grid_sync.py", "deadlock")
    assert result.returncode == 2
    assert "deadlock" in result.stderr and "grid_sync.py:43" in result.stderr


@pytest.mark.parametrize("schedule", ["serial", "round-robin", "random"])
@pytest.mark.parametrize("variant", ["in_block", "cross_block"])
def test_a_spin_wait_hand_off_records_under_every_schedule(tmp_path, variant, schedule):
    """Threads polling a flag with atomics let the others run (serial switches
    at atomics and fences; a block that cannot go on lets the next block run)."""
    result = record_cli(tmp_path, "spin.py", variant, schedule=schedule)
    assert result.returncode == 0, result.stderr
    assert not tracerace.check(str(tmp_path / "out.arrow")).groups


@pytest.mark.parametrize("schedule", ["serial", "round-robin"])
def test_an_unfenced_hand_off_races_at_its_lines(tmp_path, schedule):
    report = tracerace.check(
        record_script(tmp_path, "spin.py", "in_block_unfenced", schedule=schedule)
    )
    assert reported_lines(report) == {f"spin.py:{n}" for n in marked_lines("spin.py", "race")}


def test_a_spin_wait_that_never_ends_stops_the_recording(tmp_path):
    result = record_cli(tmp_path, "spin.py", "forever", schedule="serial")
    assert result.returncode == 2
    line = max(marked_lines("spin.py", "nobody sets the flag"))
    assert "no progress" in result.stderr and f"spin.py:{line}" in result.stderr
    assert not (tmp_path / "out.arrow").exists()


# --- warp operations ---------------------------------------------------------------------

WARP_CLEAN = ["reduce", "scan", "votes", "exchange", "tree"]
"""warp.py's correct kernels: a shuffle reduction and scan, votes and matches in a
partial warp, a syncwarp-ordered exchange and a tree reduction ending in syncwarp."""


@pytest.mark.parametrize("schedule,seed", CORRECT_SCHEDULES)
@pytest.mark.parametrize("variant", WARP_CLEAN)
def test_warp_kernels_compute_what_a_gpu_does_and_are_clean(tmp_path, variant, schedule, seed):
    """The program exits 1 when a result differs from the GPU's (record_script
    asserts it exits 0); the reference checker agrees with the engine."""
    trace = record_script(tmp_path, "warp.py", variant, schedule=schedule, seed=seed)
    assert not tracerace.check(trace).groups
    assert not tracerace.check(trace, engine="reference").groups


def warp_meetings(cols: dict) -> list[tuple[int, int, list[int], int]]:
    """The trace's warp_sync rows cut into meetings: (block, mask, threads, site)."""
    rows = np.flatnonzero(cols["op"] == Op.WARP_SYNC)
    meetings, i = [], 0
    while i < len(rows):
        mask = int(cols["arg"][rows[i]])
        n = bin(mask).count("1")
        part = rows[i : i + n]
        assert np.array_equal(part, np.arange(part[0], part[0] + n))  # rows stand together
        assert set(cols["arg"][part].tolist()) == {mask}
        assert len(set(cols["block"][part].tolist())) == 1
        meetings.append(
            (
                int(cols["block"][part[0]]),
                mask,
                sorted(cols["thread"][part].tolist()),
                int(cols["site"][part[0]]),
            )
        )
        i += n
    return meetings


def test_each_shuffle_is_a_warp_sync_of_its_lanes(tmp_path):
    cols = read_columns(record_script(tmp_path, "warp.py", "reduce", schedule="round-robin"))
    meetings = warp_meetings(cols)
    assert len(meetings) == 5 * 4  # five shuffles in each of the 2 x 2 warps
    for _block, mask, threads, _site in meetings:
        assert mask == 0xFFFFFFFF
        assert threads == list(range(threads[0], threads[0] + 32)) and threads[0] % 32 == 0
    assert site_lines(cols, "warp.py", [Op.WARP_SYNC]) == marked_lines("warp.py", "shuffle")


def test_a_partial_warp_meets_over_the_lanes_the_block_has(tmp_path):
    """A full mask in a 48-thread block: warp 1 meets over its 16 lanes; the
    two halves of warp 0 meet apart, each meeting's rows together."""
    cols = read_columns(record_script(tmp_path, "warp.py", "votes", schedule="random", seed=5))
    masks = {(threads[0] // 32, mask) for _, mask, threads, _ in warp_meetings(cols)}
    assert masks == {(0, 0xFFFFFFFF), (1, 0xFFFF), (0, 0xFFFF), (0, 0xFFFF0000)}


@pytest.mark.parametrize("schedule,seed", BROKEN_SCHEDULES)
def test_an_exchange_without_syncwarp_races_at_its_lines(tmp_path, schedule, seed):
    trace = record_script(tmp_path, "warp.py", "exchange_broken", schedule=schedule, seed=seed)
    assert reported_lines(tracerace.check(trace)) == race_lines("warp")
    assert reported_lines(tracerace.check(trace, engine="reference")) == race_lines("warp")


@pytest.mark.parametrize("variant", ["left_out", "returned_early"])
@pytest.mark.parametrize("schedule", ["serial", "round-robin", "random"])
def test_an_ended_lane_is_let_off_its_warp_operations(tmp_path, variant, schedule):
    """CUDA asks only the lanes that have not exited to make a warp operation:
    lane 31 of each warp ends first, the other 31 meet over a mask without it."""
    trace = record_script(tmp_path, "warp.py", variant, schedule=schedule, seed=3)
    meetings = warp_meetings(read_columns(trace))
    assert len(meetings) == 2  # one per warp of the 64-thread block
    for _, mask, threads, _ in meetings:
        assert mask == 0x7FFFFFFF
        assert threads == list(range(threads[0], threads[0] + 31)) and threads[0] % 32 == 0
    assert not tracerace.check(trace).groups
    assert not tracerace.check(trace, engine="reference").groups


@pytest.mark.parametrize(
    "variant, mark, words",
    [
        (
            "left_out_deadlock",
            "lane 31 busy",
            ["deadlock", "lane(s) 31 of warp 0", "warp.py:{elsewhere}"],
        ),
        ("outside_mask", "outside", ["lane 1", "0x00000001 leaves out"]),
        (
            "mismatch",
            "other operation",
            [
                "cuda.ballot_sync",
                "cuda.shfl_xor_sync",
                "warp.py:{first}",
                "the same warp operation",
            ],
        ),
    ],
)
@pytest.mark.parametrize("schedule", ["serial", "round-robin", "random"])
def test_a_lane_missing_from_its_mask_stops_the_recording_at_the_line(
    tmp_path, variant, mark, words, schedule
):
    result = record_cli(tmp_path, "warp.py", variant, schedule=schedule, timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    (line,) = marked_lines("warp.py", mark)
    assert f"warp.py:{line}" in lines[0]
    (elsewhere,) = marked_lines("warp.py", "elsewhere")
    (first,) = marked_lines("warp.py", "first operation")
    assert all(w.format(elsewhere=elsewhere, first=first) in lines[0] for w in words), lines[0]
    assert not (tmp_path / "out.arrow").exists()


@pytest.mark.parametrize("schedule", ["serial", "round-robin", "random"])
def test_a_warp_polling_with_a_vote_lets_the_other_blocks_run(tmp_path, schedule):
    """A warp operation is not progress: block 0's warp polls a flag with
    any_sync until block 1, which runs once block 0 stalls, sets it."""
    result = record_cli(tmp_path, "warp.py", "vote_hand_off", schedule=schedule)
    assert result.returncode == 0, result.stderr
    assert "results ok" in result.stdout
    assert not tracerace.check(str(tmp_path / "out.arrow")).groups


def test_a_warp_polling_a_flag_nobody_sets_stops_the_recording(tmp_path):
    result = record_cli(tmp_path, "warp.py", "vote_spin", schedule="round-robin", timeout=60)
    assert result.returncode == 2
    (line,) = marked_lines("warp.py", "nobody sets the flag")
    assert "no progress" in result.stderr and f"warp.py:{line}" in result.stderr
    assert not (tmp_path / "out.arrow").exists()


@pytest.mark.parametrize(
    "mode, lane, b, source",
    [
        (SHFL_DOWN, 3, 1, 4),
        (SHFL_DOWN, 31, 1, 31),
        (SHFL_DOWN, 20, 16, 20),
        (SHFL_DOWN, 0, 33, 1),
        (SHFL_UP, 4, 4, 0),
        (SHFL_UP, 3, 4, 3),
        (SHFL_UP, 31, 16, 15),
        (SHFL_BFLY, 5, 1, 4),
        (SHFL_BFLY, 7, 16, 23),
        (SHFL_IDX, 9, 3, 3),
        (SHFL_IDX, 9, 35, 3),
    ],
)
def test_shuffles_read_the_lane_ptx_names(mode, lane, b, source):
    """PTX shfl.sync with numba-cuda's clamp operands: five bits of b; a source
    past the warp's end (down) or before its start (up) is the lane itself."""
    assert shfl_source(mode, lane, b, SHFL_CLAMP[mode]) == source


def test_votes_and_matches_combine_the_lanes_values():
    values = {0: 5, 1: 7, 2: 5, 4: 9}
    assert ballot({0: True, 1: False, 3: True}) == 0b1001
    assert match_any(values, 2) == 0b101 and match_any(values, 4) == 1 << 4
    assert match_all(values, 0x17) == (0, False)
    assert match_all({0: 1, 5: 1}, 0x21) == (0x21, True)
    assert shuffle(values, SHFL_DOWN, 1, 2) == 7  # lane 3 gave nothing: the caller's own


@pytest.mark.parametrize("variant", ["container", "sum"])
def test_memory_the_recorder_cannot_follow_fails_the_recording(tmp_path, variant):
    result = record_cli(tmp_path, "unfollowed.py", variant)
    assert result.returncode == 2
    lines = sorted(marked_lines("unfollowed.py", "unfollowed"))  # container, then sum
    line = lines[variant == "sum"]
    assert "cannot record" in result.stderr and f"unfollowed.py:{line}" in result.stderr
    assert not (tmp_path / "out.arrow").exists()


def test_a_launch_without_accesses_is_a_warning_in_the_trace_and_the_report(tmp_path):
    result = record_cli(tmp_path, "unfollowed.py", "no_access")
    assert result.returncode == 0, result.stderr
    assert "no memory access was recorded" in result.stderr
    cols = read_columns(str(tmp_path / "out.arrow"))
    assert len(cols["meta"].warnings) == 1 and "launch 0 (nothing" in cols["meta"].warnings[0]
    check = subprocess.run(
        [sys.executable, "-m", "tracerace", "check", str(tmp_path / "out.arrow")],
        capture_output=True,
        text=True,
        env=cli_env(),
    )
    assert check.returncode == 0 and "tracerace: warning:" in check.stderr
    assert "no memory access was recorded" in check.stderr


def test_forall_launches_what_cuda_launches(tmp_path):
    """forall(20, tpb=8): three blocks of eight threads, as CUDA's ForAll."""
    cols = read_columns(record_script(tmp_path, "forall.py", "20", "8"))
    agents = set(zip(cols["block"].tolist(), cols["thread"].tolist()))
    assert {b for b, _ in agents} == {0, 1, 2} and {t for _, t in agents} == set(range(8))
    assert not cols["meta"].warnings
    # the launch configuration is in the trace: reports name agents by CUDA coordinates
    (dims,) = cols["meta"].launches
    assert (dims.launch, dims.grid, dims.block, dims.kernel) == (
        0,
        (3, 1, 1),
        (8, 1, 1),
        "neighbours",
    )


def test_forall_without_tpb_says_what_it_ran(tmp_path):
    """CUDA picks the block size by occupancy: the recording runs blocks of 1024
    threads and says so in the trace's warnings."""
    path = record_script(tmp_path, "forall.py", "20")
    cols = read_columns(path)
    assert set(cols["block"].tolist()) == {0} and cols["thread"].max() == 1023
    (warning,) = cols["meta"].warnings
    assert "forall(20)" in warning and "1 block(s) of 1024 threads" in warning
    assert not tracerace.check(path).groups


def test_the_default_schedule_is_round_robin(tmp_path):
    """Lockstep at every access: the reduction without its barrier shows the
    read-after-write race itself, not reads of slots nobody wrote yet."""
    path = record_script(tmp_path, "reduce.py", "broken", schedule=None)
    assert "schedule round-robin" in read_columns(path)["meta"].producer
    assert {g.kind for g in tracerace.check(path).groups} == {"raw"}


# --- the event log ---------------------------------------------------------------------


def write_log(path, flush_every: int) -> None:
    """Ten shared writes by changing agents and one patched bar_sync, flushed
    every ``flush_every`` rows (0: once at the end)."""
    from tracerace.record.events import SITE_SHIFT, EventLog, pack
    from tracerace.trace.writer import TraceWriter

    with TraceWriter(path) as writer:
        log = EventLog(writer)
        for i in range(10):
            log.set_agent(0, i // 5, i % 3)
            site = writer.site(f"k.py:{i}") << SITE_SHIFT
            log.log(0x100 + 4 * i, pack(Op.WRITE, space=int(Space.SHARED), size=4) | site)
            if flush_every and i % flush_every == flush_every - 1:
                log.flush()
        row = log.log(0, pack(Op.BAR_SYNC) | writer.site("k.py:99") << SITE_SHIFT)
        log.set_arg(row, 3)
        log.flush()


def test_event_log_rows_do_not_depend_on_flushes(tmp_path):
    write_log(tmp_path / "once.arrow", 0)
    write_log(tmp_path / "often.arrow", 3)
    once, often = read_columns(tmp_path / "once.arrow"), read_columns(tmp_path / "often.arrow")
    for name in ("ts", "op", "launch", "block", "thread", "space", "addr", "size", "arg", "site"):
        assert once[name].tolist() == often[name].tolist(), name
    assert once["block"].tolist() == [0] * 5 + [1] * 6
    assert once["thread"].tolist() == [i % 3 for i in range(10)] + [0]
    assert once["op"][-1] == Op.BAR_SYNC and once["arg"][-1] == 3 and once["addr"][-1] == 0
    assert once["size"][:10].tolist() == [4] * 10 and once["space"][0] == Space.SHARED


def test_a_full_size_block_is_recorded_event_for_event(tmp_path):
    """256 threads (greenlets start at the launcher's stack depth, not each
    other's); per thread: load (2), barrier, 2 steps of 6, store (2)."""
    path = record_script(tmp_path, "barrier_heavy.py", "1", "2")
    report = tracerace.check(path)
    assert not report.groups and report.events == 2 + 256 * (5 + 6 * 2)


# --- determinism -------------------------------------------------------------------------


def test_same_seed_gives_a_bit_identical_trace(tmp_path):
    args = ("reduce.py", "broken")
    first = record_script(tmp_path, *args, schedule="random", seed=5, name="a")
    again = record_script(tmp_path, *args, schedule="random", seed=5, name="b")
    other = record_script(tmp_path, *args, schedule="random", seed=6, name="c")
    assert Path(first).read_bytes() == Path(again).read_bytes()
    assert Path(first).read_bytes() != Path(other).read_bytes()


# --- failures -------------------------------------------------------------------------


def run_cli(tmp_path, source: str) -> subprocess.CompletedProcess:
    script = tmp_path / "bad.py"
    script.write_text(source)
    root = str(Path(tracerace.__file__).parent.parent)
    env = dict(os.environ, PYTHONPATH=root)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tracerace",
            "record",
            "-o",
            str(tmp_path / "out.arrow"),
            "--",
            "python",
            str(script),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )


def test_a_failing_kernel_is_a_one_line_error(tmp_path):
    result = run_cli(
        tmp_path,
        "import numpy as np\nfrom numba import cuda\n\n"
        "@cuda.jit\ndef k(a):\n    a[cuda.threadIdx.x + 4] = 1\n\n"
        "k[1, 8](np.zeros(8))\n",
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracerace: error: "), result.stderr
    assert "IndexError" in lines[0] and "bad.py:6" in lines[0] and "threadIdx=(4, 0, 0)" in lines[0]
    assert not (tmp_path / "out.arrow").exists()


def test_a_program_without_kernels_is_an_error(tmp_path):
    result = run_cli(tmp_path, "print('hello')\n")
    assert result.returncode == 2
    assert "launched no CUDA kernel" in result.stderr and "Traceback" not in result.stderr


def test_a_failure_after_the_launches_keeps_their_trace(tmp_path):
    source = (
        "import numpy as np\nfrom numba import cuda\n\n@cuda.jit\ndef k(a):\n"
        "    a[cuda.threadIdx.x] = 1\n\nk[1, 4](np.zeros(4))\nraise SystemError('late')\n"
    )
    (tmp_path / "late.py").write_text(source)
    with pytest.raises(TraceError, match="SystemError: late at .*late.py:9.*completed launch"):
        record(
            ["python", str(tmp_path / "late.py")],
            str(tmp_path / "late.arrow"),
            schedule="serial",
            seed=0,
        )
    assert tracerace.check(str(tmp_path / "late.arrow")).events == 5


def test_a_caught_kernel_exception_still_fails_the_recording(tmp_path):
    source = (
        "import numpy as np\nfrom numba import cuda\n\n@cuda.jit\ndef k(a):\n"
        "    cuda.syncthreads()\n    a[cuda.threadIdx.x + 2] = 1\n\n"
        "try:\n    k[1, 4](np.zeros(4))\nexcept IndexError:\n    pass\n"
        "k[1, 2](np.zeros(4))\n"
    )
    (tmp_path / "caught.py").write_text(source)
    with pytest.raises(TraceError, match="caught it"):
        record(
            ["python", str(tmp_path / "caught.py")],
            str(tmp_path / "c.arrow"),
            schedule="round-robin",
            seed=0,
        )
    assert not (tmp_path / "c.arrow").exists()


def test_exit_code_of_the_program_is_reported(tmp_path):
    source = (
        "import sys\nimport numpy as np\nfrom numba import cuda\n\n@cuda.jit\n"
        "def k(a):\n    a[0] = 1\n\nk[1, 1](np.zeros(1))\nsys.exit(3)\n"
    )
    (tmp_path / "three.py").write_text(source)
    result = record(
        ["python", str(tmp_path / "three.py")], str(tmp_path / "t.arrow"), schedule="serial", seed=0
    )
    assert result.exit_code == 3 and result.launches == 1


def test_a_command_that_is_not_python_is_a_usage_error(tmp_path):
    with pytest.raises(TraceError, match="usage"):
        record(["python", "-c", "print(1)"], str(tmp_path / "x.arrow"), schedule="serial", seed=0)


# --- the hooks ----------------------------------------------------------------------------


def test_the_hooked_simulator_names_exist():
    """An upgrade of numba-cuda that moves what the recorder hooks must fail here."""
    code = (
        "import json; from tracerace.record.numba._hooks import missing_hooks; "
        "print(json.dumps(missing_hooks()))"
    )
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    ).stdout
    assert json.loads(out) == []


# --- the status file is untrusted: the recorded program can write it -------------------

VALID_STATUS = {
    "events": 5,
    "launches": 1,
    "seconds": 0.1,
    "exit_code": 0,
    "written": True,
    "warnings": [],
    "error": None,
}


@pytest.mark.parametrize(
    "text, why",
    [
        ('{"error": 5}', "other keys"),
        ("[]", "not a JSON object"),
        ("{}", "other keys"),
        ("[" * 100_000, "nested JSON"),
        ("not json", "not JSON"),
        (json.dumps(VALID_STATUS | {"events": "many"}), "events is str"),
        (json.dumps(VALID_STATUS | {"error": ["x"]}), "error is list"),
        (json.dumps(VALID_STATUS | {"warnings": [1]}), "a warning is not text"),
        (json.dumps(VALID_STATUS | {"launches": -1}), "out of range"),
        (json.dumps(VALID_STATUS), "was not written"),
    ],
    ids=[
        "error-int",
        "list",
        "empty",
        "deep",
        "text",
        "events-str",
        "error-list",
        "warning-int",
        "negative",
        "says-written",
    ],
)
def test_a_status_file_the_program_wrote_fails_in_one_line(tmp_path, text, why):
    """``forge_status.py`` overwrites the child's status file and exits at once."""
    done = record_cli(tmp_path, "forge_status.py", text)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("tracerace: error")]
    assert len(errors) == 1 and "status file" in errors[0] and why in errors[0], done.stderr
    assert not (tmp_path / "out.arrow").exists()


def test_rows_flush_while_a_barrier_waits_for_its_count(tmp_path):
    """A generation still open (threads wait while another runs on) does not keep
    the rows since its first arrival in memory: the log flushes them, and the
    count reaches the flushed ``bar_sync`` rows through the writer."""
    from tracerace.record.events import NO_SITE_WORD, EventLog, pack
    from tracerace.trace.writer import TraceWriter

    out = tmp_path / "t.arrow"
    with TraceWriter(out) as writer:
        log = EventLog(writer)
        log.set_agent(0, 0, 0)
        first = log.log(0, pack(Op.BAR_SYNC) | NO_SITE_WORD)  # thread 0 waits
        log.set_agent(0, 0, 1)
        for i in range(10):
            log.log(8 * i, pack(Op.WRITE, size=8) | NO_SITE_WORD)  # thread 1 runs on
        log.flush()
        assert len(log.addr) == 0
        last = log.log(0, pack(Op.BAR_SYNC) | NO_SITE_WORD)  # thread 1 arrives: count 2
        log.set_arg(first, 2)
        log.set_arg(last, 2)
        log.flush()
    cols = read_columns(str(out))
    bars = cols["op"] == Op.BAR_SYNC
    assert np.flatnonzero(bars).tolist() == [first, last] == [0, 11]
    assert cols["arg"][bars].tolist() == [2, 2]
    assert not any(tracerace.check(str(out)).summary["by_kind"].values())


def test_a_nested_record_field_is_refused_at_its_line(tmp_path):
    result = record_cli(tmp_path, "nested_record.py")
    assert result.returncode == 2, result.stderr
    (line,) = marked_lines("nested_record.py", "nested")
    assert "nested record" in result.stderr and f"nested_record.py:{line}" in result.stderr
    assert not (tmp_path / "out.arrow").exists()
