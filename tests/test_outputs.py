"""Files and pipes: what tracerace writes, and what it reads that is not a file.

* ``record`` and ``convert`` never write over an input (the program, a file on
  its command line) or an existing file that is not a trace;
* an output that is a character device, a FIFO or one of the process's own
  descriptors (``-``, ``/dev/stdout``) is written as a stream, never replaced;
  a symbolic link is followed (its target replaced, the link kept); a folder,
  a block device or a link to nothing is refused;
* a reader that closes stdout (``| head``) ends the command quietly with the
  exit status it would have had;
* SIGTERM and SIGHUP remove an output being written, as Ctrl-C does (a
  stopped ``record`` stops its recording process, which discards its trace);
* ``-``, a FIFO or a device as the trace is read once, as an Arrow IPC stream
  (or the bytes of an IPC file); Parquet from a pipe is refused in one line.

The process-level behaviours (pipes, signals, FIFOs) run ``python -m tracerace``.
"""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from needs import require
from test_cli_check import assert_one_line_error, write_trace
from typer.testing import CliRunner

from tracerace.cli import app
from tracerace.trace.outfile import destination

ROOT = Path(__file__).resolve().parent.parent
RACY_SUMMARY = "1 hazard (1 error, 0 warnings)"


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


def tracerace(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """``python -m tracerace ARGS`` as a user runs it."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("timeout", 300)
    return subprocess.run([sys.executable, "-m", "tracerace", *args], cwd=ROOT, **kwargs)


@pytest.fixture
def racy(tmp_path) -> str:
    return write_trace(tmp_path / "racy.arrow", barrier=False)


def stream_bytes(path: str) -> bytes:
    """The trace at ``path`` as an Arrow IPC stream."""
    table = ipc.open_file(path).read_all()
    sink = io.BytesIO()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


# -- record and convert: never over an input or a file that is not a trace --------------


def test_record_refuses_to_write_over_its_program(tmp_path, monkeypatch):
    program = tmp_path / "prog.py"
    program.write_text("print('hello')\n")
    monkeypatch.chdir(tmp_path)
    for out in ("prog.py", str(program), "./prog.py"):
        result = cli("record", "-o", out, "--", "python", "prog.py")
        assert_one_line_error(result, "usage", "same file")
    assert program.read_text() == "print('hello')\n"


def test_record_refuses_a_trace_on_the_programs_command_line(tmp_path, racy):
    program = tmp_path / "prog.py"
    program.write_text("import sys\n")
    before = Path(racy).read_bytes()
    result = cli("record", "-o", racy, "--", "python", str(program), racy)
    assert_one_line_error(result, "usage", "same file")
    assert Path(racy).read_bytes() == before


@pytest.mark.parametrize("command", ["record", "convert"])
def test_record_and_convert_refuse_an_existing_file_that_is_not_a_trace(tmp_path, racy, command):
    notes = tmp_path / "notes.arrow"
    notes.write_text("my notes, not a trace\n")
    program = tmp_path / "prog.py"
    program.write_text("print('hello')\n")
    if command == "record":
        result = cli("record", "-o", str(notes), "--", "python", str(program))
    else:
        result = cli("convert", racy, str(notes))
    assert_one_line_error(result, "usage", "not a trace")
    assert notes.read_text() == "my notes, not a trace\n"


@pytest.mark.parametrize(
    "name", ["old.arrow", "old.arrows", "old.parquet", "old.std", "blank-first.std", "empty.arrow"]
)
def test_convert_replaces_an_existing_trace_or_empty_file(tmp_path, racy, name):
    old = tmp_path / name
    if name.startswith("empty"):
        old.write_bytes(b"")
    elif name.startswith("blank"):
        old.write_text("\n   \nT0|w(V1)|1\n")
    else:
        assert cli("convert", racy, str(old)).exit_code == 0
    result = cli("convert", racy, str(old))
    assert result.exit_code == 0, result.output
    assert old.stat().st_size > 0


def test_demo_refuses_an_existing_file_that_is_not_a_trace(tmp_path):
    notes = tmp_path / "notes.arrow"
    notes.write_text("my notes, not a trace\n")
    assert_one_line_error(cli("demo", "incident1", "-o", str(notes)), "usage", "not a trace")
    assert notes.read_text() == "my notes, not a trace\n"


# -- what an output path is ---------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "convert"])
def test_an_output_through_a_symlink_replaces_its_target_and_keeps_the_link(
    tmp_path, racy, command
):
    target = tmp_path / "target.arrow"
    target.write_bytes(b"")
    link = tmp_path / "link.arrow"
    link.symlink_to(target.name)
    if command == "check":
        result = cli("check", racy, "-f", "json", "-o", str(link))
        assert result.exit_code == 1, result.output
        assert '"version"' in target.read_text()
    else:
        assert cli("convert", racy, str(link)).exit_code == 0
        assert ipc.open_file(str(target)).read_all().num_rows == 2
    assert link.is_symlink() and os.readlink(link) == target.name
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "link.arrow",
        "racy.arrow",
        "target.arrow",
    ]


@pytest.mark.parametrize("what", ["folder", "dangling link"])
def test_an_output_that_cannot_be_a_file_is_refused(tmp_path, racy, what):
    out = tmp_path / "out.arrow"
    if what == "folder":
        out.mkdir()
    else:
        out.symlink_to(tmp_path / "nowhere")
    for args in (("check", racy, "-o", str(out)), ("convert", racy, str(out))):
        assert_one_line_error(cli(*args), "usage", str(out))
    assert out.is_dir() if what == "folder" else out.is_symlink()
    assert not (tmp_path / "nowhere").exists()


def test_devices_and_descriptors_are_streams():
    assert destination("/dev/null").kind == "stream"
    assert destination("-").fd == 1
    assert destination("/dev/stdout").fd == 1
    assert destination("/dev/fd/2").fd == 2
    assert destination(f"/proc/{os.getpid()}/fd/2").fd == 2


@pytest.mark.parametrize("fmt", ["json", "arrow"])
def test_check_into_dev_null_leaves_the_device(racy, fmt):
    before = os.stat("/dev/null")
    result = tracerace("check", racy, "-f", fmt, "-o", "/dev/null")
    assert result.returncode == 1, result.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert not [name for name in os.listdir("/dev") if name.startswith(".null.")]


@pytest.mark.parametrize("out", ["/dev/stdout", "/dev/fd/1", "-"])
def test_check_into_stdout_by_name_prints_the_report(racy, out):
    result = tracerace("check", racy, "-f", "json", "-o", out, text=True)
    assert result.returncode == 1, result.stderr
    assert '"version"' in result.stdout
    assert RACY_SUMMARY in result.stderr


@pytest.mark.parametrize(
    "args",
    [("check", "-f", "json", "-o"), ("check", "-f", "arrow", "-o"), ("convert",)],
    ids=["json", "arrow", "convert"],
)
def test_an_output_fifo_is_written_not_replaced(tmp_path, racy, args):
    fifo = tmp_path / "out.arrows"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    if args[0] == "check":
        result = tracerace("check", racy, *args[1:], str(fifo))
        assert result.returncode == 1, result.stderr
    else:
        result = tracerace("convert", racy, str(fifo))
        assert result.returncode == 0, result.stderr
    reader.join(60)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    if args[-2:] == ("json", "-o"):
        assert got[0].startswith(b"{")
    else:  # an Arrow IPC stream
        assert ipc.open_stream(pa.BufferReader(got[0])).read_all().num_rows > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.arrows", "racy.arrow"]


# -- a reader that closes stdout -----------------------------------------------------------


@pytest.mark.parametrize(
    "args, code",
    [
        (("check", "{racy}"), 1),
        (("check", "{racy}", "-f", "json"), 1),
        (("check", "{racy}", "-f", "arrow"), 1),
        (("check", "{racy}", "-f", "json", "-o", "/dev/stdout"), 1),
        (("info", "{racy}", "--format", "json"), 0),
        (("validate", "{racy}"), 0),
    ],
    ids=["check", "json", "arrow", "dev-stdout", "info", "validate"],
)
def test_a_closed_stdout_ends_quietly_with_the_result(racy, args, code):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the first byte
    try:
        result = tracerace(
            *(a.format(racy=racy) for a in args),
            stdout=write_end,
            stderr=subprocess.PIPE,
            capture_output=False,
            text=True,
        )
    finally:
        os.close(write_end)
    assert result.returncode == code, result.stderr
    assert "Broken pipe" not in result.stderr and "Traceback" not in result.stderr
    assert "tracerace: error" not in result.stderr


# -- stop signals clean up -----------------------------------------------------------------


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"]
)
def test_a_stop_signal_removes_the_report_being_written(tmp_path, signum):
    # The report's temporary exists before the trace is opened; a FIFO with no
    # writer holds the check there until the signal comes.
    trace = tmp_path / "trace.arrows"
    os.mkfifo(trace)
    out = tmp_path / "out"
    out.mkdir()
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracerace",
            "check",
            str(trace),
            "-o",
            str(out / "report.json"),
            "-f",
            "json",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while not os.listdir(out):
            assert child.poll() is None and time.monotonic() < deadline, child.stderr.read()
            time.sleep(0.05)
        child.send_signal(signum)
        child.wait(60)
    finally:
        child.kill()
    assert child.returncode in (-signum, 128 + signum, 130 if signum == signal.SIGINT else -1)
    assert os.listdir(out) == []
    assert b"Traceback" not in child.stderr.read()


# -- traces that can be read only once -----------------------------------------------------


@pytest.mark.parametrize("as_file", [False, True], ids=["ipc-stream", "ipc-file-bytes"])
def test_check_validate_info_read_the_trace_from_stdin(racy, as_file):
    data = Path(racy).read_bytes() if as_file else stream_bytes(racy)
    for output in ((), ("-o", "-")):  # stdin in, stdout out: two streams, not one file
        check = tracerace("check", "-", "-f", "json", *output, input=data)
        assert check.returncode == 1, check.stderr
        assert b'"waw"' in check.stdout
    validate = tracerace("validate", "-", input=data)
    assert validate.returncode == 0 and b"<stdin>: OK" in validate.stdout, validate.stderr
    info = tracerace("info", "-", input=data)
    assert info.returncode == 0 and b"events    2" in info.stdout, info.stderr


def test_convert_reads_an_arrow_stream_from_stdin(racy, tmp_path):
    out = tmp_path / "copy.parquet"
    result = tracerace("convert", "-", str(out), input=stream_bytes(racy))
    assert result.returncode == 0, result.stderr
    assert pq.read_table(out).num_rows == 2
    std = tracerace("convert", "-", str(tmp_path / "copy.std"), input=stream_bytes(racy))
    assert std.returncode == 2 and std.stderr.decode().count("\n") == 1
    assert b"reads its input twice" in std.stderr
    assert not (tmp_path / "copy.std").exists()


@pytest.mark.parametrize(
    "data, words",
    [
        (b"", "empty input"),
        (b"not a trace at all", "not an Arrow IPC stream"),
        ("parquet", "Parquet"),
    ],
    ids=["empty", "garbage", "parquet"],
)
def test_bad_stdin_is_one_line(racy, tmp_path, data, words):
    if data == "parquet":
        pq.write_table(ipc.open_file(racy).read_all(), tmp_path / "t.parquet")
        data = (tmp_path / "t.parquet").read_bytes()
    result = tracerace("check", "-", input=data, text=False)
    assert result.returncode == 2
    lines = result.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "<stdin>" in lines[0] and words in lines[0], lines


def test_stdin_that_is_a_terminal_is_refused_not_waited_on():
    leader, follower = os.openpty()
    try:
        result = tracerace("check", "-", stdin=follower, timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    assert result.returncode == 2
    assert result.stderr.decode().startswith(
        "tracerace: error: <stdin>: usage: standard input is a terminal"
    )


@pytest.mark.parametrize("command, code", [("check", 1), ("validate", 0), ("info", 0)])
def test_a_fifo_trace_is_read_once_and_the_command_returns(tmp_path, racy, command, code):
    fifo = tmp_path / "trace.arrow"
    os.mkfifo(fifo)
    data = Path(racy).read_bytes()
    writer = threading.Thread(target=lambda: fifo.write_bytes(data), daemon=True)
    writer.start()
    result = tracerace(command, str(fifo), timeout=120)
    writer.join(10)
    assert result.returncode == code, result.stderr
    assert not writer.is_alive()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stop_signal_removes_the_trace_being_converted(racy, tmp_path, signum):
    # convert reads the trace from a pipe this test holds open after the first
    # batch: the output's temporary exists, and the conversion waits for more.
    table = ipc.open_file(racy).read_all()
    unfinished = io.BytesIO()
    writer = ipc.new_stream(unfinished, table.schema)
    writer.write_table(table)  # no end-of-stream marker yet
    out = tmp_path / "out"
    out.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-m", "tracerace", "convert", "-", str(out / "copy.arrow")],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        child.stdin.write(unfinished.getvalue())
        child.stdin.flush()
        deadline = time.monotonic() + 120
        while not os.listdir(out):
            assert child.poll() is None and time.monotonic() < deadline, child.stderr.read()
            time.sleep(0.05)
        child.send_signal(signum)
        child.wait(60)
    finally:
        child.kill()
        child.stdin.close()
    assert child.returncode == -signum, child.stderr.read()
    assert os.listdir(out) == []


SLEEPY_PROGRAM = """
import sys, time
import numpy as np
from numba import cuda

@cuda.jit
def fill(x):
    x[cuda.grid(1)] = 1

fill[1, 4](np.zeros(4, dtype=np.int32))
print("launched", flush=True)
time.sleep({seconds})
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_stopped_recording_leaves_nothing_and_writes_nothing_later(tmp_path, signum):
    require("numba", ("numba_cuda", "greenlet"))
    seconds = 4
    program = tmp_path / "prog.py"
    program.write_text(SLEEPY_PROGRAM.format(seconds=seconds))
    out = tmp_path / "out"
    out.mkdir()
    parent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tracerace",
            "record",
            "-o",
            str(out / "trace.arrow"),
            "--",
            "python",
            str(program),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert parent.stdout.readline() == b"launched\n", parent.stderr.read()
        parent.send_signal(signum)
        parent.wait(60)
    finally:
        parent.kill()
    assert parent.returncode == -signum, parent.stderr.read()
    time.sleep(seconds + 1)  # a recording process left running would write the trace now
    assert os.listdir(out) == []
