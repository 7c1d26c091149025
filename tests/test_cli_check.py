"""`tracerace check`: formats, output files, exit codes 0/1/2, one-line errors."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from tracerace.cli import app
from tracerace.trace.ops import Space

ENGINES = ["reference", "numba"]


def write_trace(path, *, barrier: bool) -> str:
    """Two threads of block 0 write the same 4 shared bytes; optionally a bar_sync between."""
    from tracerace.trace.writer import write_table

    ops = ["write", "bar_sync", "bar_sync", "write"] if barrier else ["write", "write"]
    thread = [0, 0, 1, 1] if barrier else [0, 1]
    write_table(
        path,
        dict(
            ts=list(range(len(ops))),
            op=ops,
            launch=0,
            block=0,
            thread=thread,
            space=int(Space.SHARED),
            addr=0x10,
            size=4,
            arg=[2 if op == "bar_sync" else 0 for op in ops],
            site=[0 if t == 0 else 1 for t in thread],
        ),
        sites=["k.cu:5 st.shared", "k.cu:9 st.shared"],
    )
    return str(path)


@pytest.fixture
def racy(tmp_path) -> str:
    return write_trace(tmp_path / "racy.arrow", barrier=False)


@pytest.fixture
def clean(tmp_path) -> str:
    return write_trace(tmp_path / "clean.arrow", barrier=True)


def run(*args: str):
    return CliRunner().invoke(app, ["check", *args])


def assert_one_line_error(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tracerace: error: "), result.stderr
    assert "Traceback" not in result.output
    for word in words:
        assert word in lines[0]


@pytest.mark.parametrize("engine", ENGINES)
def test_racy_trace_exits_1_with_one_waw(racy, engine):
    result = run(racy, "--engine", engine, "--no-progress")
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith(
        "error waw: 1 hazard between k.cu:5 st.shared and k.cu:9 st.shared"
    )
    assert "threads (0,0) and (0,1) never synchronized" in result.stdout
    assert result.stdout.rstrip().endswith(
        "1 hazard (1 error, 0 warnings) in 1 group over 2 events; racy rows: 1"
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_clean_trace_exits_0(clean, engine):
    result = run(clean, "--engine", engine)
    assert result.exit_code == 0, result.output
    assert result.stdout == "no hazards in 4 events\n"


def test_json_to_stdout(racy):
    result = run(racy, "--format", "json", "--engine", "reference")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert {"version", "events", "hazards", "summary"} <= set(doc)
    assert doc["summary"]["by_kind"]["waw"] == 1 and doc["summary"]["racy_rows"] == 1
    (group,) = doc["hazards"]
    assert (group["kind"], group["severity"], group["count"]) == ("waw", "error", 1)
    assert (group["first"]["row"], group["second"]["row"]) == (0, 1)
    assert group["second"]["site"] == "k.cu:9 st.shared"
    assert result.stderr == ""


def test_output_file_gets_the_report_and_stderr_the_summary(racy, tmp_path):
    out = tmp_path / "r.sarif"
    result = run(racy, "-f", "sarif", "-o", str(out), "--engine", "reference")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.strip() == (
        "1 hazard (1 error, 0 warnings) in 1 group over 2 events; racy rows: 1"
    )
    doc = json.loads(out.read_text())
    (res,) = doc["runs"][0]["results"]
    assert res["ruleId"] == "waw" and res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 9


def test_arrow_to_a_file_and_to_stdout(racy, tmp_path):
    out = tmp_path / "r.arrow"
    result = run(racy, "--format", "arrow", "--output", str(out), "--engine", "reference")
    assert result.exit_code == 1
    with pa.ipc.open_file(out) as f:
        table = f.read_all()
    assert table.column("kind").to_pylist() == ["waw"]
    piped = run(racy, "--format", "arrow", "--engine", "reference")
    assert piped.exit_code == 1
    assert pa.ipc.open_stream(piped.stdout_bytes).read_all().equals(table)


def test_select_and_ignore(racy):
    assert run(racy, "--select", "raw,war", "--engine", "reference").exit_code == 0
    assert run(racy, "--ignore", "waw", "--engine", "reference").exit_code == 0
    kept = run(racy, "--select", "raw", "--select", "waw", "--engine", "reference")
    assert kept.exit_code == 1 and "error waw" in kept.stdout


@pytest.mark.parametrize("every", ["0", "all"])
def test_max_reports_zero_or_all_shows_every_group(racy, every):
    result = run(racy, "--max-reports", every, "-f", "json", "--engine", "reference")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert len(doc["hazards"]) == 1 and "hazards_omitted" not in doc
    assert doc["summary"]["by_kind"]["waw"] == 1


@pytest.mark.parametrize(
    "args, words",
    [
        (["--select", "racy"], ["usage", "unknown hazard kind 'racy'"]),
        (["--ignore", "waw,nope"], ["usage", "'nope'"]),
        (["--format", "xml"], ["usage", "unknown format 'xml'"]),
        (["--engine", "gpu"], ["usage", "unknown engine 'gpu'"]),
        (["--max-reports", "-1"], ["usage", "max_reports"]),
    ],
)
def test_bad_options_exit_2_on_one_line(racy, args, words):
    assert_one_line_error(run(racy, *args), *words)


def test_missing_file_exits_2(tmp_path):
    assert_one_line_error(run(str(tmp_path / "nope.arrow")), "nope.arrow")


def test_garbage_file_exits_2(tmp_path):
    bad = tmp_path / "bad.arrow"
    bad.write_bytes(b"this is not arrow")
    assert_one_line_error(run(str(bad)), "bad.arrow")


def test_unwritable_output_exits_2(racy, tmp_path):
    result = run(racy, "-o", str(tmp_path / "no" / "dir" / "r.txt"), "--engine", "reference")
    assert_one_line_error(result, "io")


@pytest.mark.parametrize(
    "asked, terminal, rows, shown",
    [
        (None, True, 10, False),
        (None, True, 3_000_000, True),
        (None, True, None, True),
        (None, False, 3_000_000, False),
        (True, False, 10, True),
        (False, True, None, False),
    ],
)
def test_progress_bar_when_asked_or_large_on_a_terminal(asked, terminal, rows, shown):
    import io

    from tracerace.cli import ProgressBar, show_progress

    class Stream(io.StringIO):
        def isatty(self) -> bool:
            return terminal

    assert show_progress(asked, terminal, rows) == shown
    stream = Stream()
    with ProgressBar(asked, stream) as bar:
        bar.update(0, rows)
        bar.update(5, rows)
    assert bar.shown == shown
    assert ("checking" in stream.getvalue()) == (shown and terminal)  # rich draws on terminals
    assert ("checked: 5" in stream.getvalue()) == (shown and not terminal)  # a log gets lines


def test_progress_off_a_terminal_is_plain_lines():
    import io

    from tracerace.cli import ProgressBar

    stream = io.StringIO()
    with ProgressBar(True, stream, interval=0) as bar:
        for done in (0, 1_500_000, 3_000_000):
            bar.update(done, 3_000_000)
    lines = stream.getvalue().splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "checking: 1.5M/3M rows (50%)",
        "checking: 3M/3M rows (100%)",
        "checked: 3M/3M rows (100%)",
    ]
    assert all(line.endswith(" s") and "events/s" in line for line in lines)
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()


@pytest.mark.parametrize("columns", [80, 60])
def test_progress_bar_fits_the_terminal_on_one_line(columns):
    import io
    import re

    from tracerace.cli import ProgressBar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    with ProgressBar(True, stream, width=columns) as bar:
        bar.update(0, 123_456_789)
        bar.update(12_345_678, 123_456_789)
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", stream.getvalue())
    lines = [line for line in re.split(r"[\r\n]", drawn) if line.strip()]
    assert lines and all(len(line) <= columns for line in lines)
    assert all("checking" in line and "rows" in line for line in lines)


def test_progress_bar_leaves_the_report_alone(racy):
    result = run(racy, "--progress")
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith("error waw: 1 hazard")
