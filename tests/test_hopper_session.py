"""The Hopper GPU session (``tests/kernels_cuda/hopper_session.sh``) without a GPU: its
shell scripts parse, and its Triton kernel compiles to tensor TMA for sm_90 and records
through the Triton backend (Triton's interpreter) to the verdicts each form is built for."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from time import perf_counter

import pytest
from needs import require

require("triton", ("triton", "torch"))

import tracerace  # noqa: E402
from tracerace.record import record  # noqa: E402

KERNELS = Path(__file__).parent / "kernels_cuda"
SCRIPT = KERNELS / "triton_tma.py"


def _kernel_module():
    spec = importlib.util.spec_from_file_location("triton_tma", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line_of(text: str) -> str:
    lines = SCRIPT.read_text().splitlines()
    return f"triton_tma.py:{next(n for n, line in enumerate(lines, 1) if text in line)}"


@pytest.mark.parametrize("script", sorted(p.name for p in KERNELS.glob("*.sh")))
def test_session_scripts_parse(script):
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run([bash, "-n", str(KERNELS / script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_triton_kernel_compiles_to_tensor_tma_on_an_mbarrier_for_sm90():
    """Compiled for a GPUTarget of sm_90 with no GPU present: the descriptor load is a
    tensor TMA completing on an mbarrier, the store a bulk-group TMA store, and the
    descriptors are written by the kernel itself."""
    found = _kernel_module().compile_sm90()
    assert "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes" in found
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in found
    assert {"mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64"} <= set(
        found
    )
    assert any(i.startswith("tensormap.replace.tile.global_address") for i in found)


def _recorded(tmp_path, form: str):
    out = tmp_path / f"{form}.arrow"
    result = record(["python", str(SCRIPT), form], str(out), backend="triton")
    assert result.exit_code == 0 and result.launches == 1
    return tracerace.check(str(out))


def test_triton_tma_aliased_races_between_the_tile_store_and_the_next_tile_load(tmp_path):
    report = _recorded(tmp_path, "aliased")
    assert report.groups
    assert {g.kind for g in report.groups} <= {"raw", "war"}
    sites = {os.path.basename(s) for g in report.groups for s in (g.first_site, g.second_site) if s}
    assert sites == {_line_of("tile = src.load("), _line_of("dst.store(")}


def test_triton_tma_separate_is_clean(tmp_path):
    report = _recorded(tmp_path, "separate")
    assert not report.groups, report.summary_line()


STUBS = {
    # nvcc: writes the -o file it is asked for, so the session goes on to its rows
    "nvcc": 'while [ $# -gt 0 ]; do [ "$1" = -o ] && : >"$2"; shift; done; echo "stub nvcc"',
    "nvidia-smi": 'echo "stub GPU, 0"',
    # compute-sanitizer: hangs on every tool run, as a stuck program would
    "compute-sanitizer": 'case "$*" in --version) echo "stub sanitizer" ;; *) sleep 60 ;; esac',
}


def _stubbed_env(tmp_path, stubs: dict[str, str], **settings: str) -> dict[str, str]:
    """The environment for a session whose tools are ``stubs`` (name: sh body)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in stubs.items():
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\n{body}\n")
        stub.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHON": sys.executable,
        "PYTHONPATH": str(Path(__file__).parent.parent),
        "TRACERACE_CACHE_DIR": str(tmp_path / "cache"),
        "TRACERACE_GPU_WORK": str(tmp_path / "work"),
        "TRACERACE_GPU_WARMUP": "0",  # the checker's compile is the other tests' business
    }
    for name in (
        "OUT",
        "ACCELSIM_TRACER",
        "ACCELSIM_POST",
        "ACCELSIM_DIR",
        "NVBIT_DIR",
        "TRACERACE_GPU_ROWS",
    ):
        env.pop(name, None)
    return {**env, **settings}


def test_session_ends_within_its_budget_when_every_step_hangs_or_fails(tmp_path):
    """Every step is bounded: with a sanitizer that never returns and no GPU, the session
    still ends within its budget, each row saying which steps timed out or were skipped."""
    env = _stubbed_env(tmp_path, STUBS, TRACERACE_GPU_BUDGET="10", TRACERACE_GPU_LIMIT="1")
    fixtures = tmp_path / "fixtures"
    started = perf_counter()
    result = subprocess.run(
        ["bash", str(KERNELS / "hopper_session.sh"), str(fixtures)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert perf_counter() - started < 10 + 15  # the budget, and the last step's bound
    table = (fixtures / "VERDICTS.md").read_text()
    rows = [
        line.split(" | ")
        for line in table.splitlines()
        if line.startswith("| hopper-") or line.startswith("| triton-")
    ]
    assert [r[0][2:] for r in rows] == [
        f"{kernel}-{form}"
        for kernel, forms in (
            ("hopper-tma", ("wait", "nowait")),
            ("hopper-ring", ("fence", "nofence")),
            ("hopper-cluster", ("sync", "nosync")),
            ("hopper-multicast", ("wait", "nowait")),
            ("triton-tma", ("separate", "aliased")),
        )
        for form in forms
    ]
    skipped = "skipped: session budget spent"
    for cells in rows:
        assert cells[1].startswith(("not recorded: ", "timed out", skipped)), cells
        assert {cells[2], cells[3].rstrip(" |")} <= {"timed out", skipped}, cells
    assert rows[0][2] == "timed out"  # the sanitizer that hangs is stopped at its bound
    assert rows[-1][1] == skipped
    assert "| (all) | not run: no tracer:" in table


ACCELSIM_REAL = (
    Path(__file__).parent
    / "gpu_fixtures"
    / "accelsim_real"
    / "kernel-593-ctx_0x55c28dad19e0.traceg"
)


def test_accelsim_tracer_rows_post_process_each_context_list_and_import_it(tmp_path):
    """The tracer step's plumbing, with a tracer and post-processor standing in for
    Accel-Sim's: the kernel run under the tracer writes a per-context kernelslist, the
    post-processor its ``.g`` and grouped trace (here a real Accel-Sim ``.traceg``), and
    the row is the import's verdict, the traces packed as a fixture."""
    kernel = tmp_path / "kernel.sh"
    kernel.write_text(
        '#!/bin/sh\n[ -n "$CUDA_INJECTION64_PATH" ] || exit 1\n'
        'mkdir -p "$TRACES_FOLDER/traces"\n'
        'echo kernel-1-ctx_0x1.trace >"$TRACES_FOLDER/traces/kernelslist_ctx_0x1"\n'
        'echo raw >"$TRACES_FOLDER/traces/kernel-1-ctx_0x1.trace"\n'
    )
    kernel.chmod(0o755)
    post = tmp_path / "post-traces-processing"
    post.write_text(
        "#!/bin/sh\n"
        'echo kernel-1-ctx_0x1.traceg >"$1.g"\n'
        f'cp {ACCELSIM_REAL} "$(dirname "$1")/kernel-1-ctx_0x1.traceg"\n'
    )
    post.chmod(0o755)
    tracer = tmp_path / "tracer_tool.so"
    tracer.write_bytes(b"")
    stubs = {
        **STUBS,
        "nvcc": f'while [ $# -gt 0 ]; do [ "$1" = -o ] && cp {kernel} "$2"; shift; done',
        "compute-sanitizer": 'echo "stub sanitizer"',
    }
    env = _stubbed_env(
        tmp_path,
        stubs,
        TRACERACE_GPU_ROWS="^hopper-cluster-sync$",
        ACCELSIM_TRACER=str(tracer),
        ACCELSIM_POST=str(post),
    )
    fixtures = tmp_path / "fixtures"
    result = subprocess.run(
        ["bash", str(KERNELS / "hopper_session.sh"), str(fixtures)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    table = (fixtures / "VERDICTS.md").read_text().splitlines()
    assert [line.split(" | ")[0] for line in table if line.startswith("| hopper-")] == [
        "| hopper-cluster-sync"
    ] * 2
    assert "| hopper-cluster-sync | clean |" in table
    with tarfile.open(fixtures / "hopper-cluster-sync.accelsim.tar.xz") as packed:
        names = {os.path.basename(n) for n in packed.getnames()}
    assert {"kernelslist.g", "kernel-1-ctx_0x1.traceg", "kernelslist_ctx_0x1"} <= names
    assert "kernel-1-ctx_0x1.trace" not in names
