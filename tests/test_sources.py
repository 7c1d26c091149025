"""Source files named by sites: read only inside the source roots the user gives
(HTML snippets), named only relative to them (SARIF), and a site's size bounded
in the HTML page. A trace's sites are untrusted: ``/etc/passwd:1``,
``/proc/self/environ:1``, ``/dev/zero:1``, a FIFO, a symlink out."""

from __future__ import annotations

import io
import json
import os
import threading
import tracemalloc
from pathlib import Path

import pyarrow.feather as feather
import pytest
from builders import Trace
from typer.testing import CliRunner

import tracerace
from tracerace.cli import app
from tracerace.errors import TraceError
from tracerace.report.output import render
from tracerace.report.sources import MAX_SOURCE_BYTES, SourceRoots
from tracerace.trace.writer import make_table

SECRET = "tracerace-secret-in-environment-7f3a"


def racy_trace(folder: Path, sites: list[str]) -> Path:
    """A trace whose site ``i`` is a write by thread 0 that thread 1's read
    races with: one ``raw`` group per site (at its own address)."""
    t = Trace()
    for i in range(len(sites)):
        t.init(0, 0, addr=0x100 * i, size=4, site=len(sites))
    for i in range(len(sites)):
        t.write(0, 0, addr=0x100 * i, size=4, site=i)
        t.read(1, 0, addr=0x100 * i, size=4, site=i)
    table = make_table(t.columns(), sites=[*sites, "host.py:1 init"])
    path = folder / "t.arrow"
    feather.write_feather(table, str(path))
    return path


def page(trace: Path, **kw) -> str:
    out = io.StringIO()
    render(tracerace.check(str(trace), max_reports="all"), "html", out, **kw)
    return out.getvalue()


def kernel_source(path: Path, lines: int = 20) -> None:
    path.write_text("".join(f"line {n} of {path.name}\n" for n in range(1, lines + 1)))


# -- which files ----------------------------------------------------------------------


def test_no_root_no_file_read(tmp_path, monkeypatch):
    kernel_source(tmp_path / "kern.cu")
    trace = racy_trace(tmp_path, ["kern.cu:5 st"])
    monkeypatch.chdir(tmp_path)  # beside the trace and in the working directory: still not read
    assert "line 5 of kern.cu" not in page(trace)
    shown = page(trace, source_roots=[tmp_path])
    assert '<span class="line hl">    5  line 5 of kern.cu</span>' in shown


def test_hostile_sites_read_nothing_outside_the_root(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACERACE_TEST_SECRET", SECRET)
    root = tmp_path / "src"
    root.mkdir()
    kernel_source(root / "kern.cu")
    outside = tmp_path / "private.txt"
    outside.write_text("private line 1\nprivate line 2\nprivate line 3\n")
    (root / "link.cu").symlink_to(outside)
    (root / "up.cu").symlink_to("../private.txt")
    os.mkfifo(root / "fifo.cu")
    os.mkfifo(tmp_path / "beside.cu")
    sites = [
        "/etc/passwd:1 x",
        "../../../../etc/passwd:3 x",
        "/proc/self/environ:1 x",
        "/proc/self/maps:1 x",
        "/dev/zero:1 x",
        "fifo.cu:1 x",
        "beside.cu:1 x",
        "link.cu:2 x",
        "up.cu:2 x",
        "../private.txt:1 x",
        f"{outside}:1 x",
        "kern.cu:7 ok",
    ]
    trace = racy_trace(tmp_path, sites)
    done: list[str] = []
    worker = threading.Thread(
        target=lambda: done.append(page(trace, source_roots=[root])), daemon=True
    )
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), "the report hangs (a FIFO opened for reading?)"
    (shown,) = done
    assert "line 7 of kern.cu" in shown  # the root's own file is read
    assert "private line" not in shown
    assert SECRET not in shown and "root:x:0:0" not in shown and "[heap]" not in shown
    assert "\x00" not in shown and len(shown) < 400_000


def test_an_absolute_path_inside_the_root_is_read(tmp_path):
    kernel_source(tmp_path / "kern.cu")
    trace = racy_trace(tmp_path, [f"{tmp_path / 'kern.cu'}:4 st"])
    assert "line 4 of kern.cu" in page(trace, source_roots=[str(tmp_path)])


def test_reads_are_bounded_by_bytes_read_not_the_claimed_size(tmp_path):
    big = tmp_path / "big.cu"
    with open(big, "wb") as f:
        f.write(b"int x;\n" * (MAX_SOURCE_BYTES // 7 + 2))
    small = tmp_path / "small.cu"
    kernel_source(small)
    roots = SourceRoots([tmp_path])
    assert roots.read("big.cu") is None
    assert roots.read("small.cu") == small.read_bytes()
    root = SourceRoots(["/"])  # even a root of / reads no pseudo-file or device
    for name in (
        "proc/self/environ",
        "/proc/self/status",
        "/dev/zero",
        "dev/null",
        "sys/kernel/hostname",
    ):
        assert root.read(name) is None, name


def test_a_root_that_is_not_a_directory_is_a_usage_error(tmp_path):
    with pytest.raises(TraceError, match="usage: --source-root .*nope: not a directory"):
        SourceRoots([tmp_path / "nope"])
    trace = racy_trace(tmp_path, ["kern.cu:1 x"])
    result = CliRunner().invoke(
        app, ["check", str(trace), "-f", "html", "--source-root", str(tmp_path / "nope")]
    )
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"tracerace: error: options: usage: --source-root {tmp_path / 'nope'}: not a directory"
    ]


def test_cli_source_root_is_repeatable(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    kernel_source(tmp_path / "a" / "one.cu")
    kernel_source(tmp_path / "b" / "two.cu")
    trace = racy_trace(tmp_path, ["one.cu:3 st", "two.cu:9 st"])
    out = tmp_path / "r.html"
    result = CliRunner().invoke(
        app,
        [
            "check",
            str(trace),
            "-f",
            "html",
            "-o",
            str(out),
            "--source-root",
            str(tmp_path / "a"),
            "--source-root",
            str(tmp_path / "b"),
        ],
    )
    assert result.exit_code == 1, result.output
    text = out.read_text()
    assert "line 3 of one.cu" in text and "line 9 of two.cu" in text


def test_relative_names_for_sarif():
    roots = SourceRoots(["/usr"])
    assert roots.relative("src/k.cu") == "src/k.cu"
    assert roots.relative("./src/../k.cu") == "k.cu"
    assert roots.relative("/usr/share/k.cu") == "share/k.cu"
    for name in (
        "https://evil.example/x.cu",
        "file:///etc/passwd",
        "/etc/passwd",
        "../../etc/passwd",
        "src/../../x.cu",
        "C:\\Windows\\x.cu",
        "..",
        "",
    ):
        assert roots.relative(name) is None, name


# -- SARIF ----------------------------------------------------------------------------


def test_sarif_uris_from_sites_are_relative_or_dropped(tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    sites = [
        "https://evil.example/x.cu:3 st",
        "file:///etc/passwd:1 st",
        "/etc/passwd:2 st",
        "../../x.cu:4 st",
        f"{root}/kern/k.cu:5 st",
        "kern/ok.cu:6 st",
    ]
    trace = racy_trace(tmp_path, sites)
    out = tmp_path / "r.sarif"
    result = CliRunner().invoke(
        app, ["check", str(trace), "-f", "sarif", "-o", str(out), "--source-root", str(root)]
    )
    assert result.exit_code == 1, result.output
    doc = json.loads(out.read_text())
    results = doc["runs"][0]["results"]
    uris = [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in results
        for loc in r["locations"] + r.get("relatedLocations", [])
        if "physicalLocation" in loc
    ]
    assert sorted(set(uris)) == ["kern/k.cu", "kern/ok.cu"]
    logical = {
        loc["logicalLocations"][0]["name"]
        for r in results
        for loc in r["locations"]
        if "logicalLocations" in loc
    }
    assert logical == set(sites[:4])  # the site stays visible, as a logical location
    for r in results:
        for fix in r.get("fixes", []):
            for change in fix["artifactChanges"]:
                assert change["artifactLocation"]["uri"] in ("kern/k.cu", "kern/ok.cu")


def test_sarif_without_a_root_names_no_absolute_file(tmp_path):
    trace = racy_trace(tmp_path, ["/abs/src/k.cu:3 x", "rel/k.cu:4 x"])
    out = io.StringIO()
    render(tracerace.check(str(trace)), "sarif", out)
    doc = json.loads(out.getvalue())
    uris = [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for r in doc["runs"][0]["results"]
        for loc in r["locations"]
        if "physicalLocation" in loc
    ]
    assert uris == ["rel/k.cu"]


# -- a huge site ------------------------------------------------------------------------


def test_a_huge_site_adds_a_bounded_part_to_the_page(tmp_path):
    huge = "k.cu:1 " + "A" * 15_000_000  # under the 16 MiB a metadata value may hold
    trace = racy_trace(tmp_path, [huge, "k.cu:2 small"])
    text = page(trace)  # with timelines (read back from the file)
    assert len(text) < 300_000
    assert text.count("14,999,707 more characters not shown]") >= 3
    # what composing the page costs, apart from reading the trace again: no copy
    # of the site (the check's report is made from a table, so nothing is re-read)
    report = tracerace.check(feather.read_table(str(trace)))
    out = io.StringIO()
    tracemalloc.start()
    try:
        render(report, "html", out)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, peak


def test_sarif_names_an_absolute_site_under_a_root_given_through_a_symlink(tmp_path):
    real = tmp_path / "real"
    (real / "kern").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    roots = SourceRoots([tmp_path / "link"])
    assert roots.relative(f"{tmp_path}/link/kern/k.cu") == "kern/k.cu"
    assert roots.relative(f"{real}/kern/k.cu") == "kern/k.cu"
    assert roots.relative(f"{tmp_path}/other/k.cu") is None


def test_huge_buffer_names_producer_and_warnings_are_cut_in_the_page(tmp_path):
    t = Trace().init(0, 0, addr=0x1000, size=16, site=0)
    t.write(0, 0, addr=0x1000, size=4, site=1).read(1, 0, addr=0x1000, size=4, site=1)
    table = make_table(
        t.columns(),
        sites=["k.cu:1 init", "k.cu:2 st"],
        buffers=[
            {"name": "B" * 3_000_000, "space": 0, "base": 0x1000, "shape": [4], "itemsize": 4}
        ],
        producer="P" * 3_000_000,
        warnings=["W" * 3_000_000],
    )
    path = tmp_path / "b.arrow"
    feather.write_feather(table, str(path))
    text = page(path)
    assert len(text) < 200_000
    assert "2,999,700 more characters not shown]" in text  # buffer name, producer
    assert "2,999,000 more characters not shown]" in text  # the warning
