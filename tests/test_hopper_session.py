"""The Hopper GPU session (``tests/kernels_cuda/hopper_session.sh``) without a GPU: its
shell scripts parse, and its Triton kernel compiles to tensor TMA for sm_90 and records
through the Triton backend (Triton's interpreter) to the verdicts each form is built for."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

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
