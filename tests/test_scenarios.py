"""Golden tests of the incident scenarios (``tracerace.scenarios``).

Each buggy trace (scale 1, seed 0) reports its incident's hazards, and only
those, at the incident's sites and tensor elements; each fixed trace reports
nothing at all; the reference checker and the Numba engine return identical
findings on both. Plus ``tracerace demo`` and ``python -m tracerace.examples``.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from typer.testing import CliRunner

import tracerace
from tracerace.checker.findings import FIELDS
from tracerace.cli import app
from tracerace.scenarios import SCENARIOS
from tracerace.scenarios import incident4_alias_permute as permute

ENGINES = ("reference", "numba")

# (kind, earlier site, later site) -> (count, first locations), for seed 0.
GOLDEN = {
    "incident1": {
        # Flag 3 serves two handoffs; the reduce's wait took the decode's set.
        (
            "sync_alias",
            "decode.cpp:98 CrossCoreSetFlag(3) QK ready",
            "combine_scale.cpp:40 CrossCoreWaitFlag(3) partials written",
        ): (62, ()),
        ("raw", "decode.cpp:158 DataCopy partials", "combine_scale.cpp:47 DataCopy partials"): (
            62,
            (
                "partials[0, 3, 0:64]",
                "partials[1, 3, 0]..partials[2, 0, 63]",
                "partials[3, 0, 0:64]",
            ),
        ),
        ("raw", "decode.cpp:159 DataCopy lse", "combine_scale.cpp:44 DataCopy lse"): (
            62,
            ("lse[0, 3]", "lse[1, 3]..lse[2, 0]", "lse[3, 0]"),
        ),
    },
    "incident2": {
        (
            "war",
            "mesh_decode.py:162 math.matmul(ring[head % 8])",
            "mesh_decode.py:134 dma.write(ring[tail % 8])",
        ): (34 * 8 * 3, ("ring[0:8, :]",)),  # the 8 slots' chunks, adjacent, merged
    },
    "incident3": {
        (
            "async_inflight",
            "matmul_splitk.cu:71 cp.async.cg.shared.global A",
            "matmul_splitk.cu:105 st.shared.v4.f32 C",
        ): (256, ("c_tile[0, 0:32]",)),
        (
            "async_inflight",
            "matmul_splitk.cu:72 cp.async.cg.shared.global B",
            "matmul_splitk.cu:105 st.shared.v4.f32 C",
        ): (256, ("c_tile[16, 0:32]",)),
        (
            "async_inflight",
            "matmul_splitk.cu:71 cp.async.cg.shared.global A",
            "matmul_splitk.cu:109 ld.shared.v4.f32 C",
        ): (256, ("c_tile[0, 0:4]", "c_tile[0, 16:20]")),
        (
            "async_inflight",
            "matmul_splitk.cu:72 cp.async.cg.shared.global B",
            "matmul_splitk.cu:109 ld.shared.v4.f32 C",
        ): (256, ("c_tile[16, 0:4]", "c_tile[16, 16:20]")),
    },
    "incident4": {
        (
            "war",
            "permute.py:27 tl.load(x_ptr + pid * D + cols)",
            "permute.py:28 tl.store(out_ptr + dst * D + cols)",
        ): (2544, ("x[63, 0:32]", "x[109, 0:32]")),
        (
            "raw",
            "permute.py:28 tl.store(out_ptr + dst * D + cols)",
            "permute.py:27 tl.load(x_ptr + pid * D + cols)",
        ): (1520, ("x[133, 0:32]", "x[136, 0:32]")),
    },
    "incident5": {
        ("uninit_read", None, "gemm_mcast.cu:209 wgmma.mma_async B cols 64-95"): (
            128,
            ("sB_box1[0:2, :, :]",),
        ),
        (
            "proxy_fence",
            "gemm_mcast.cu:240 st.shared C",
            "gemm_mcast.cu:250 cp.async.bulk.tensor.store C",
        ): (16, ("sC[14:16, :]",)),
    },
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """``checked(name, fixed) -> (rows, {engine: Report})``; each trace written and
    checked once per test run."""
    cache: dict = {}

    def get(name: str, fixed: bool):
        if (name, fixed) not in cache:
            folder = tmp_path_factory.mktemp(name)
            path = folder / SCENARIOS[name].default_path(fixed)
            rows = SCENARIOS[name].generate(path, fixed=fixed, scale=1, seed=0)
            cache[name, fixed] = (
                rows,
                {e: tracerace.check(path, engine=e, keep_findings=True) for e in ENGINES},
            )
        return cache[name, fixed]

    return get


def groups_by_sites(report):
    return {(g.kind, g.first_site, g.second_site): g for g in report.groups}


def test_registry_matches_golden():
    assert list(SCENARIOS) == [f"incident{i}" for i in range(1, 6)]
    for name, scenario in SCENARIOS.items():
        assert scenario.title and scenario.generate
        assert {kind for kind, _, _ in GOLDEN[name]} == set(scenario.expected_kinds)
        assert set(scenario.expected_sites) == set(GOLDEN[name])
    assert all(not s.pending_kinds for s in SCENARIOS.values())


@pytest.mark.parametrize("name", SCENARIOS)
def test_buggy_trace_reports_the_incident(checked, name):
    rows, reports = checked(name, False)
    assert 1_000 <= rows <= 20_000
    scenario = SCENARIOS[name]
    for engine, report in reports.items():
        found = {g.kind for g in report.groups}
        allowed = scenario.expected_kinds | scenario.pending_kinds
        assert scenario.expected_kinds <= found <= allowed, engine
        assert report.exit_code == 1
        groups = groups_by_sites(report)
        for sites, (count, first_locations) in GOLDEN[name].items():
            group = groups[sites]
            assert group.severity == "error"
            assert group.count == count, (engine, sites)
            assert group.locations_head(len(first_locations)) == first_locations, (engine, sites)
        # Only more sync_alias groups of the same crossed flag may come on top.
        extra = set(groups) - set(GOLDEN[name])
        assert all(kind == "sync_alias" and name == "incident1" for kind, _, _ in extra), extra


@pytest.mark.parametrize("name", SCENARIOS)
def test_fixed_trace_reports_nothing(checked, name):
    rows, reports = checked(name, True)
    for engine, report in reports.items():
        assert len(report.findings) == 0, (engine, [g.kind for g in report.groups])
        assert report.exit_code == 0
        assert report.events == rows


@pytest.mark.parametrize("fixed", [False, True], ids=["buggy", "fixed"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_engines_agree(checked, name, fixed):
    _, reports = checked(name, fixed)
    ref, fast = reports["reference"].findings, reports["numba"].findings
    assert len(ref) == len(fast)
    for field in FIELDS:
        assert np.array_equal(ref[field], fast[field]), field


def test_incident1_every_head_but_the_last_reads_one_late_partial(checked):
    """Per launch, heads 0..30 each read one core's partial (and its lse) too early;
    never the reducer's own (its vector wrote it in program order)."""
    _, reports = checked("incident1", False)
    report = reports["numba"]
    partials, lse = set(), set()
    for h in report.hazards:
        if h.kind != "raw":
            continue
        element = re.fullmatch(r"(partials|lse)\[(\d+), (\d+)(, 0)?\]", h.element)
        head, core = int(element[2]), int(element[3])
        assert core != head % 4 and h.second.block == head % 4
        (partials if element[1] == "partials" else lse).add((h.second.launch, head, core))
    assert partials == lse
    for launch in (0, 1):
        assert sorted(head for ln, head, _ in partials if ln == launch) == list(range(31))


def test_incident2_races_are_math_read_then_dma_overwrite(checked):
    _, reports = checked("incident2", False)
    for h in reports["reference"].hazards:
        assert (h.first.thread, h.second.thread) == (0, 1)  # math unit, then DMA engine
        assert h.first.block == h.second.block


def test_incident4_races_follow_the_waves(checked):
    """A naive model: row r is written by block inv[r] and read by block r; the
    race is raw when the writer's wave came first, else war."""
    _, reports = checked("incident4", False)
    dst = permute.destinations(permute.ROWS, 0)
    inv = np.argsort(dst)
    wave = np.arange(permute.ROWS) // permute.RESIDENT
    moved = inv != np.arange(permute.ROWS)
    want = {
        "raw": set(np.flatnonzero(moved & (wave[inv] < wave)).tolist()),
        "war": set(np.flatnonzero(moved & (wave[inv] >= wave)).tolist()),
    }
    for kind in want:
        rows = {
            int(re.match(r"x\[(\d+),", h.element)[1])
            for h in reports["reference"].hazards
            if h.kind == kind
        }
        assert rows == want[kind], kind


def test_generation_scales_linearly(tmp_path):
    for name, scenario in SCENARIOS.items():
        small = scenario.generate(tmp_path / f"{name}-1.arrow", scale=1)
        large = scenario.generate(tmp_path / f"{name}-8.arrow", scale=8)
        assert small == scenario.events_per_scale, name
        assert 7.5 * small <= large <= 8.5 * small, name
        assert scenario.scale_for(8 * small) == 8 and scenario.scale_for(1) == 1


def test_demo_list():
    result = CliRunner().invoke(app, ["demo", "--list"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(SCENARIOS)
    assert all(s.title in result.stdout for s in SCENARIOS.values())


def test_demo_writes_and_checks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(app, ["demo", "incident3"])
    assert result.exit_code == 1, result.output
    assert (tmp_path / "incident3.arrow").exists()
    assert result.stdout.startswith(
        "error async_inflight: 256 hazards between "
        "matmul_splitk.cu:71 cp.async.cg.shared.global A and "
        "matmul_splitk.cu:105 st.shared.v4.f32 C"
    )
    result = runner.invoke(app, ["demo", "incident3", "--fixed", "--out", "clean.arrow"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "no hazards in 11,651 events\n"


def test_demo_unknown_name_is_a_usage_error():
    result = CliRunner().invoke(app, ["demo", "incident9"])
    assert result.exit_code == 2
    assert result.stderr.startswith("tracerace: error: options: usage: unknown scenario")


def test_examples_module_writes_racy_and_clean_traces(tmp_path, capsys):
    from tracerace import examples

    assert examples.main([str(tmp_path / "ex")]) == 0
    written = sorted(p.name for p in (tmp_path / "ex").iterdir())
    assert written == sorted(s.default_path(f) for s in SCENARIOS.values() for f in (False, True))
    out = capsys.readouterr().out
    assert "incident3.arrow" in out and "racy: async_inflight" in out and "clean" in out
