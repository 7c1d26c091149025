"""The benchmark suite runs end to end (bench/README.md).

``test_smoke``: every workload at the smoke size (about 10^4 events), in
one child process (a crashing checker fails the test instead of killing
pytest): the results file has its structure, race-free workloads report no
hazards, and both checkers agree. ``test_scale`` (marked ``scale``) runs every
workload at ``TRACERACE_SCALE`` events (default 10^5, so CI stays quick; the
README's numbers come from ``python -m bench.run``) and checks the memory
bounds the project promises.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.render import BEGIN, END  # noqa: E402
from bench.run import parse_size  # noqa: E402
from bench.workloads import BUILTIN, workloads  # noqa: E402

GiB = 1 << 30
RESULT_FIELDS = {
    "workload",
    "size",
    "events",
    "agents",
    "seconds",
    "events_per_second",
    "peak_rss_bytes",
    "read_in_check_seconds",
    "check_only_seconds",
    "read_floor_seconds",
    "floor_ratio",
    "reference_seconds",
    "reference_ratio",
    "hazards",
    "racy_rows",
    "by_kind",
    "ok",
    "reps",
    "stolen",
    "granules",
    "live_bytes_per_granule",
    "table_bytes_per_granule",
}


def run_bench(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "results.json"
    cmd = [
        sys.executable,
        "-m",
        "bench.run",
        "--out",
        str(out),
        "--data-dir",
        str(tmp_path / "data"),
        "--readme",
        str(tmp_path / "README.md"),
        "--plot",
        "",
        "--no-startup",
        "--no-isolate",
        *args,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    results = json.loads(out.read_text()) if out.exists() else {"results": []}
    return proc, results


def by_workload(results: dict) -> dict[str, dict]:
    return {r["workload"]: r for r in results["results"]}


def test_smoke(tmp_path):
    proc, results = run_bench(tmp_path, "--size", "smoke", "--reps", "1")
    got = by_workload(results)
    missing = set(workloads()) - set(got)
    assert not missing, (
        f"no result for {sorted(missing)}; bench output:\n{proc.stdout}\n{proc.stderr}"
    )
    assert {"nproc", "ram_bytes", "cpu", "python", "numba", "numpy", "pyarrow"} <= set(
        results["machine"]
    )
    for name, r in got.items():
        assert not r.get("error"), f"{name}: {r.get('error')}"
        assert RESULT_FIELDS <= set(r), f"{name}: missing {RESULT_FIELDS - set(r)}"
        assert r["size"] == "smoke" and 0.5 * parse_size("smoke") <= r["events"] <= 2e5
        assert r["events_per_second"] > 0 and r["peak_rss_bytes"] > 0
        assert r["granules"] == 0 or r["live_bytes_per_granule"] > 0
        assert r["stolen"] is None or 0 <= r["stolen"] <= 1
        # The reference checker runs at this size, and both checkers agree
        # (but on workloads of GiB-sized accesses: it keeps every byte).
        if workloads()[name].reference:
            assert r["reference_seconds"] is not None
            assert r["reference_hazards"] == r["hazards"]
        else:
            assert r["reference_seconds"] is None
        if workloads()[name].race_free:
            assert r["hazards"] == 0 and r["ok"], f"{name}: {r['by_kind']}"
        else:
            assert r["ok"], f"{name}: expected {workloads()[name].expect_kinds}, got {r['by_kind']}"
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = (tmp_path / "README.md").read_text()
    assert BEGIN in table and END in table
    for name in got:
        assert f"| {name} | smoke |" in table


def test_workloads_are_deterministic_and_close_to_size(tmp_path):
    from bench.workloads import write_workload

    for name in BUILTIN:
        a = write_workload(name, str(tmp_path / "a.arrow"), 30_000, seed=1)
        b = write_workload(name, str(tmp_path / "b.arrow"), 30_000, seed=1)
        assert a == b
        assert (tmp_path / "a.arrow").read_bytes() == (tmp_path / "b.arrow").read_bytes()
        assert 15_000 <= a["events"] <= 60_000, (name, a)


@pytest.mark.scale
def test_scale(tmp_path):
    label = os.environ.get("TRACERACE_SCALE", "1e5")
    names = ",".join(BUILTIN)
    proc, results = run_bench(
        tmp_path, "--size", label, "--workload", names, "--reps", "1", "--reference-max", "0"
    )
    got = by_workload(results)
    assert set(got) == set(BUILTIN), proc.stdout + proc.stderr
    for name, r in got.items():
        assert not r.get("error"), f"{name}: {r.get('error')}"
        if BUILTIN[name].race_free:
            assert r["hazards"] == 0, f"{name}: {r['by_kind']}"
        else:
            assert BUILTIN[name].expect_kinds <= set(r["by_kind"]), f"{name}: {r['by_kind']}"
        # In-process, this is the whole process's peak: an upper bound of the check's.
        assert r["peak_rss_bytes"] < 8 * GiB, name
    assert got["tiled_wide"]["peak_rss_bytes"] < 4 * GiB


def test_stolen_fraction_is_the_share_of_stolen_jiffies():
    from bench.run import cpu_jiffies, stolen_fraction

    assert stolen_fraction((10, 100), (20, 300)) == 0.05
    assert stolen_fraction(None, (20, 300)) is None
    assert stolen_fraction((20, 300), (20, 300)) is None  # no time passed
    now = cpu_jiffies()
    assert now is None or 0 <= now[0] <= now[1]


@pytest.mark.scale
def test_jobs_mode_runs(tmp_path):
    """``python -m bench.jobs`` (docs/parallel.md): events/s per shard count,
    the same findings whatever the count."""
    out = tmp_path / "jobs.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.jobs",
            "--size",
            "3000",
            "--workload",
            "tiled_racy",
            "--jobs",
            "1,2",
            "--data-dir",
            str(tmp_path / "data"),
            "--out",
            str(out),
            "--batch-size",
            "1024",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    points = json.loads(out.read_text())["tiled_racy"]["3000"]
    assert set(points) == {"1", "2"}
    assert points["1"]["findings"] == points["2"]["findings"] > 0
    assert points["1"]["speedup"] == 1.0 and points["2"]["events_per_s"] > 0
    for point in points.values():  # CPU seconds over wall seconds
        assert point["cores_busy"] > 0
        if sys.platform == "linux":  # the busiest thread, from /proc/self/task
            assert 0 <= point["busiest_thread"] <= point["cores_busy"] + 0.05


def test_read_once_reads_each_word_once_and_reports_state_per_granule(tmp_path):
    from bench.measure import run_state
    from bench.workloads import write_workload
    from tracerace.trace.reader import open_trace

    path = tmp_path / "read_once.arrow"
    info = write_workload("read_once", str(path), 20_000)
    with open_trace(str(path)) as reader:
        addrs = np.concatenate([b.cols["addr"] for b in reader])
    assert info["words"] == len(addrs) == len(np.unique(addrs))
    state = run_state(str(path))
    # Coalesced 4-byte reads take 16-byte global granules (granularity): four
    # words to a granule, each read kept (no write can be ordered after them
    # yet).
    assert state["granules"] == info["words"] // 4
    assert state["nodes"] == info["words"]
    assert state["live_bytes_per_granule"] > 0
    assert state["table_bytes_per_granule"] >= state["live_bytes_per_granule"]


def test_ceiling_times_each_loop_per_thread_count():
    """``python -m bench.ceiling``: one line per loop, a ratio per count."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.ceiling", "--scale", "0.0001", "--reps", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["stream", "gather", "compute"]
    assert all(line.split()[1] == "1.00x" for line in lines[1:])


def test_icount_refuses_a_shard_outside_its_count():
    from bench.icount import main

    with pytest.raises(SystemExit, match="--shard 2/2"):
        main(["--shard", "2/2", "trace.arrow"])
