"""The pytest plugin, in small pytest sessions (pytester) of a racy and a clean
numba kernel: off unless asked for, ``--tracerace`` for every test, a marker for one."""

from __future__ import annotations

import json
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from needs import require

require("numba", ("numba.cuda", "greenlet"))

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parent.parent

KERNELS = """
import numpy as np
import pytest
from numba import cuda


@cuda.jit
def shift(x, out):
    s = cuda.shared.array(32, np.float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    out[t] = s[(t + 1) % 32]          # no barrier: another thread's slot, unordered


@cuda.jit
def shift_fixed(x, out):
    s = cuda.shared.array(32, np.float32)
    t = cuda.threadIdx.x
    s[t] = x[t]
    cuda.syncthreads()
    out[t] = s[(t + 1) % 32]


def run(kernel):
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(32, dtype=np.float32)
    kernel[1, 32](x, out)
    return out


{racy_marker}
def test_racy():
    run(shift)


def test_clean():
    assert run(shift_fixed)[0] == 1


def test_without_kernels():
    assert True
"""


def plugin_args() -> list[str]:
    """``-p`` the plugin unless the installed distribution's entry point loads it."""
    names = {ep.value for ep in entry_points(group="pytest11")}
    return [] if "tracerace.pytest_plugin" in names else ["-p", "tracerace.pytest_plugin"]


@pytest.fixture
def session(pytester, monkeypatch):
    # The child interpreters import this checkout's tracerace; kernels that are not
    # recorded run on numba's simulator (no GPU here).
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")

    def run(*args: str, marker: str = ""):
        pytester.makepyfile(test_kernels=KERNELS.format(racy_marker=marker))
        return pytester.runpytest_subprocess(*plugin_args(), *args)

    return run


def test_every_test_is_recorded_with_the_option(session, pytester):
    result = session("--tracerace")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    # the racy test fails with the text report, at the kernel's lines, with a fix
    assert "test_kernels.py::test_racy - Failed: tracerace: 32 hazards (32 errors" in out
    assert "error raw: 32 hazards between test_kernels.py:10 and test_kernels.py:11" in out
    assert "fix:     order test_kernels.py:10 before test_kernels.py:11" in out
    assert "test_kernels.py::test_clean: no hazards in" in out
    assert (
        "test_kernels.py::test_without_kernels: launched no numba kernel, nothing was "
        "checked" in out
    )
    reports = pytester.path / "tracerace-reports"
    sarif = json.loads((reports / "test_kernels.py_test_racy.sarif").read_text())
    (result_,) = sarif["runs"][0]["results"]
    assert result_["ruleId"] == "raw" and result_["fixes"]
    assert sarif["runs"][0]["results"] and (reports / "test_kernels.py_test_racy.html").is_file()
    # no --tracerace-source-root: the page shows no source lines
    assert (
        "no barrier: another thread" not in (reports / "test_kernels.py_test_racy.html").read_text()
    )
    clean = json.loads((reports / "test_kernels.py_test_clean.sarif").read_text())
    assert clean["runs"][0]["results"] == []
    assert (reports / "test_kernels.py_test_clean.arrow").is_file()


def test_off_unless_asked_for(session, pytester):
    result = session()
    result.assert_outcomes(passed=3)  # the race goes unseen: nothing recorded
    # Installed, the plugin is named in pytest's "plugins:" header, and nowhere else.
    said = [line for line in result.stdout.lines if not line.startswith("plugins:")]
    assert not [line for line in said if "tracerace" in line], said
    assert not (pytester.path / "tracerace-reports").exists()


def test_a_marker_records_one_test(session, pytester):
    result = session("--tracerace-dir", "out", marker="@pytest.mark.tracerace")
    result.assert_outcomes(passed=2, failed=1)
    assert "test_kernels.py::test_racy - Failed: tracerace" in result.stdout.str()
    assert sorted(p.name for p in (pytester.path / "out").iterdir()) == [
        "test_kernels.py_test_racy.arrow",
        "test_kernels.py_test_racy.html",
        "test_kernels.py_test_racy.sarif",
    ]


def test_source_lines_come_from_the_source_root_option(session, pytester):
    result = session("--tracerace-source-root", str(pytester.path), marker="@pytest.mark.tracerace")
    result.assert_outcomes(passed=2, failed=1)
    page = (pytester.path / "tracerace-reports" / "test_kernels.py_test_racy.html").read_text()
    assert "out[t] = s[(t + 1) % 32]          # no barrier: another thread" in page


def test_a_test_that_fails_by_itself_fails_with_its_own_report(session, pytester):
    pytester.makepyfile(
        test_plain="""
import pytest

@pytest.mark.tracerace
def test_wrong():
    assert 1 + 1 == 3
"""
    )
    result = session("test_plain.py")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert (
        "the test failed under tracerace's numba recorder" in out and "assert (1 + 1) == 3" in out
    )
