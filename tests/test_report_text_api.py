"""``tracerace --version``, ``print(report)`` / ``Report.to_text()``, and the notice
printed while Numba compiles the checker on a first run."""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
from pathlib import Path

import numba
from builders import Trace
from typer.testing import CliRunner

import tracerace
from tracerace.checker.notice import NOTICE, CompileNotice
from tracerace.cli import app
from tracerace.trace.writer import make_table

ROOT = Path(__file__).resolve().parent.parent


def racy_table():
    t = Trace().init(0, 0, addr=0, size=4, site=0).write(0, 0, addr=0, size=4, site=1)
    t.read(1, 0, addr=0, size=4, site=2)
    return make_table(t.columns(), sites=["k.cu:1 init", "k.cu:2 st", "k.cu:3 ld"])


def test_version():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"tracerace {tracerace.__version__}"


def test_print_report_shows_the_text_report(tmp_path):
    report = tracerace.check(racy_table())
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        print(report)
    assert out.getvalue() == report.to_text() + "\n"
    text = report.to_text()
    assert text.startswith("error raw: 1 hazard between k.cu:2 st and k.cu:3 ld\n")
    assert "  fix:     blocks 0 and 1 must be ordered" in text
    assert text.rstrip().endswith(report.summary_line())
    # the same words as `tracerace check` writes to a file
    path = tmp_path / "t.arrow"
    pa_table = racy_table()
    import pyarrow.feather as feather

    feather.write_feather(pa_table, str(path))
    result = CliRunner().invoke(app, ["check", str(path), "-o", str(tmp_path / "r.txt")])
    assert result.exit_code == 1
    assert (tmp_path / "r.txt").read_text() == tracerace.check(str(path)).to_text()


def test_compile_notice_is_printed_once_when_a_kernel_of_the_package_compiles():
    # A fresh function is compiled (not loaded from a cache): the event fires.
    def add(a, b):
        return a + b

    add.__module__ = __name__
    jitted = numba.njit(add)
    err = io.StringIO()
    with CompileNotice(err, prefix=__name__, once=False) as notice:
        jitted(1, 2)
        jitted(1.0, 2.0)  # a second compilation: still one line
    assert err.getvalue() == NOTICE + "\n" and notice.shown
    other = io.StringIO()
    with CompileNotice(other, prefix="somewhere.else", once=False):
        numba.njit(lambda a: a + 1)(3)
    assert other.getvalue() == ""


def test_no_notice_when_the_kernels_come_from_the_cache(tmp_path):
    path = tmp_path / "t.arrow"
    import pyarrow.feather as feather

    feather.write_feather(racy_table(), str(path))
    tracerace.check(str(path))  # warm this interpreter's caches (and the on-disk one)
    run = subprocess.run(
        [sys.executable, "-m", "tracerace", "check", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1
    assert NOTICE not in run.stderr


def test_the_first_run_compiles_what_a_later_check_with_findings_needs(tmp_path):
    """On a cold cache, a clean trace's check says the notice and compiles the
    kernels findings need, the grouping's included; later checks, with findings
    and with larger state (kernels the engine compiles when its tables grow),
    say nothing."""
    import os

    import pyarrow.feather as feather

    racy, clean = tmp_path / "racy.arrow", tmp_path / "clean.arrow"
    feather.write_feather(racy_table(), str(racy))
    t = Trace().init(0, 0, addr=0, size=4).write(0, 0, addr=0, size=4).read(0, 0, addr=0, size=4)
    feather.write_feather(make_table(t.columns()), str(clean))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}

    def check(path):
        return subprocess.run(
            [sys.executable, "-m", "tracerace", "check", str(path)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )

    first = check(clean)
    assert first.returncode == 0 and first.stderr.count(NOTICE) == 1
    second = check(racy)
    assert second.returncode == 1 and NOTICE not in second.stderr
    from tracerace.scenarios import SCENARIOS

    third = check(SCENARIOS["incident3"].write(tmp_path / "incident3.arrow"))
    assert third.returncode == 1 and NOTICE not in third.stderr
