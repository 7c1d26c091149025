"""The command line never destroys an input or lies about what it did.

* an output path that is an input is refused (``check T -o T`` in every
  format, ``convert IN IN``), one line, exit 2, the input untouched;
* ``convert`` into a missing or read-only folder: one line, exit 2;
* ``validate`` rejects what ``check`` rejects, with the same rule and row;
* ``--select``/``--ignore`` say what they filtered out;
* output files get the user's umask;
* ``convert`` keeps the input's compression and writes LZ4 by default;
* a check that runs out of memory: one line, exit 2, no traceback.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from builders import Trace
from test_cli_check import assert_one_line_error, write_trace
from typer.testing import CliRunner

from tracerace.cli import app
from tracerace.convert import trace_compression
from tracerace.trace.ops import Space
from tracerace.trace.writer import make_table, write_table

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ["text", "json", "sarif", "arrow"]


def cli(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def racy(tmp_path) -> str:
    return write_trace(tmp_path / "racy.arrow", barrier=False)


# -- an output that is an input ----------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_refuses_to_write_over_its_trace(racy, fmt):
    before = Path(racy).read_bytes()
    assert_one_line_error(cli("check", racy, "-f", fmt, "-o", racy), "usage", "same file")
    assert Path(racy).read_bytes() == before


def test_check_refuses_the_trace_by_another_name(racy, tmp_path, monkeypatch):
    link = tmp_path / "link.arrow"
    link.symlink_to(racy)
    before = Path(racy).read_bytes()
    monkeypatch.chdir(tmp_path)
    for out in (str(link), "./racy.arrow", "../" + tmp_path.name + "/racy.arrow"):
        assert_one_line_error(cli("check", racy, "-o", out), "usage")
    assert Path(racy).read_bytes() == before


@pytest.mark.parametrize("name", ["t.arrow", "t.std"])
def test_convert_refuses_to_write_over_its_input(tmp_path, name):
    src = tmp_path / name
    if name.endswith(".std"):
        src.write_text("T0|w(V1)|1\nT1|r(V1)|2\n")
    else:
        write_trace(src, barrier=False)
    before = src.read_bytes()
    assert_one_line_error(cli("convert", str(src), str(src)), "usage", "same file")
    assert src.read_bytes() == before


def test_a_failed_check_leaves_an_existing_output_alone(tmp_path):
    bad = tmp_path / "bad.arrow"
    bad.write_bytes(b"not a trace")
    out = tmp_path / "report.json"
    out.write_text("previous report")
    assert_one_line_error(cli("check", str(bad), "-f", "json", "-o", str(out)), "not-arrow")
    assert out.read_text() == "previous report"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.arrow", "report.json"]


# -- convert into a folder it cannot write ---------------------------------------------------


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in (root ignores permission bits: /sys)."""
    if os.geteuid() == 0:
        return Path("/sys")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return folder


@pytest.mark.parametrize("out", ["out.arrow", "out.parquet", "out.std"])
def test_convert_into_a_missing_folder(tmp_path, out):
    src = write_trace(tmp_path / "t.arrow", barrier=False)
    dst = tmp_path / "missing" / "deeper" / out
    assert_one_line_error(cli("convert", src, str(dst)), "io", "no such folder")


@pytest.mark.parametrize("src_name", ["t.arrow", "t.std"])
def test_convert_into_a_read_only_folder(tmp_path, src_name):
    src = tmp_path / src_name
    if src_name.endswith(".std"):
        src.write_text("T0|w(V1)|1\n")
    else:
        write_trace(src, barrier=False)
    dst = unwritable_folder(tmp_path) / "out.arrow"
    assert_one_line_error(cli("convert", str(src), str(dst)), "io", "cannot write")
    assert not dst.exists()


def test_real_convert_process_prints_no_traceback(tmp_path):
    src = write_trace(tmp_path / "t.arrow", barrier=False)
    out = subprocess.run(
        [sys.executable, "-m", "tracerace", "convert", src, str(tmp_path / "nope" / "o.arrow")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr


# -- validate rejects what check rejects -------------------------------------------------------


def _launch_order(t: Trace) -> None:
    t.launch = 1
    t.write(0, 0, addr=0, size=4)
    t.launch = 0
    t.write(0, 0, addr=0, size=4)


REPLAY_RULES = {
    # name: (events, rule, row)
    "launch-order": (_launch_order, "launch-order", 1),
    "barrier-count": (
        lambda t: t.write(0, 0, addr=0, size=4).bar_sync(0, 0, arg=0),
        "barrier-count",
        1,
    ),
    "barrier-count-negative": (lambda t: t.bar_sync(0, 1, arg=-3), "barrier-count", 0),
    "barrier-order": (
        lambda t: t.bar_sync(0, 0, arg=2).write(0, 0, addr=0, size=4),
        "barrier-order",
        1,
    ),
    "wait-without-signal": (
        lambda t: t.signal(0, 0, obj=5).wait(0, 1, obj=5, arg=2),
        "wait-without-signal",
        1,
    ),
    "mbarrier-count": (lambda t: t.mbar_init(0, 0, obj=0x100, arg=0), "mbarrier-count", 0),
}


def rule_trace(path: Path, build) -> str:
    t = Trace()
    build(t)
    write_table(path, t.columns())
    return str(path)


def address_overflow_trace(path: Path) -> str:
    write_table(
        path,
        dict(
            ts=[0, 1],
            op=["write", "read"],
            launch=0,
            block=0,
            thread=[0, 1],
            addr=[0, 2**64 - 8],
            size=[4, 16],
        ),
    )
    return str(path)


@pytest.mark.parametrize("case", [*REPLAY_RULES, "address-overflow"])
def test_validate_rejects_what_check_rejects(tmp_path, case):
    if case == "address-overflow":
        path, rule, row = address_overflow_trace(tmp_path / "t.arrow"), "address-overflow", 1
    else:
        build, rule, row = REPLAY_RULES[case]
        path = rule_trace(tmp_path / "t.arrow", build)
    checked = cli("check", path, "--no-progress")
    validated = cli("validate", path)
    for result in (checked, validated):
        assert_one_line_error(result, f"{path}: row {row}: {rule}: ")
    assert checked.stderr == validated.stderr


def test_validate_passes_a_racy_trace(racy):
    result = cli("validate", racy)  # hazards are findings, not bad input
    assert result.exit_code == 0 and result.stdout.startswith(f"{racy}: OK: ")


def test_the_last_byte_of_the_address_space_is_valid(tmp_path):
    path = tmp_path / "t.arrow"
    write_table(
        path, dict(ts=[0], op=["write"], launch=0, block=0, thread=0, addr=2**64 - 9, size=8)
    )
    assert cli("validate", str(path)).exit_code == 0


# -- filters say what they filtered ------------------------------------------------------------


def test_ignore_that_drops_everything_says_so(racy):
    result = cli("check", racy, "--ignore", "waw")
    assert result.exit_code == 0
    assert result.stdout == ("no hazards in 2 events; filtered out by --select/--ignore: 1 waw\n")


def test_select_that_keeps_nothing_says_so_in_json_and_sarif(racy):
    doc = json.loads(cli("check", racy, "--select", "raw", "-f", "json").stdout)
    assert doc["filtered"] == {"waw": 1} and doc["hazards"] == []
    assert doc["summary"]["by_kind"]["waw"] == 0
    run = json.loads(cli("check", racy, "--select", "raw", "-f", "sarif").stdout)["runs"][0]
    assert run["properties"]["filtered"] == {"waw": 1} and run["results"] == []


def test_no_filter_note_when_nothing_was_filtered(racy):
    result = cli("check", racy, "--select", "waw", "-f", "json")
    assert "filtered" not in json.loads(result.stdout)


# -- the umask ---------------------------------------------------------------------------------


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("fmt", FORMATS)
def test_check_output_gets_the_umask(racy, tmp_path, umask, fmt):
    out = tmp_path / f"r.{fmt}"
    assert cli("check", racy, "-f", fmt, "-o", str(out)).exit_code == 1
    assert mode(out) == 0o666 & ~umask


@pytest.mark.parametrize("name", ["o.arrow", "o.arrows", "o.parquet", "o.std"])
def test_convert_output_gets_the_umask(tmp_path, umask, name):
    src = tmp_path / "t.std"
    src.write_text("T0|w(V1)|1\nT1|r(V1)|2\n")
    mid = tmp_path / "mid.arrow"
    assert cli("convert", str(src), str(mid)).exit_code == 0
    assert mode(mid) == 0o666 & ~umask
    out = tmp_path / name
    assert cli("convert", str(mid), str(out)).exit_code == 0, name
    assert mode(out) == 0o666 & ~umask


def test_writer_output_gets_the_umask(tmp_path, umask):
    path = tmp_path / "w.arrow"
    write_table(path, dict(ts=[0], op=["write"], launch=0, block=0, thread=0))
    assert mode(path) == 0o666 & ~umask


# -- convert's compression ---------------------------------------------------------------------


def v1(path: Path, compression) -> Path:
    n = 5000
    write_table(
        path,
        dict(
            ts=np.arange(n),
            op=["write"] * n,
            launch=0,
            block=0,
            thread=np.arange(n) % 7,
            addr=8 * np.arange(n),
            size=8,
        ),
        compression=compression,
    )
    return path


@pytest.mark.parametrize("codec", ["lz4", "zstd"])
@pytest.mark.parametrize(
    "src_name, dst_name",
    [("a.arrow", "b.arrows"), ("a.arrows", "b.parquet"), ("a.parquet", "b.arrow")],
)
def test_convert_keeps_the_input_compression(tmp_path, codec, src_name, dst_name):
    src = v1(tmp_path / src_name, codec)
    dst = tmp_path / dst_name
    assert cli("convert", str(src), str(dst)).exit_code == 0
    assert trace_compression(str(dst)) == codec
    if dst_name.endswith(".parquet"):  # pyarrow's own account of the codec
        codec_name = pq.ParquetFile(dst).metadata.row_group(0).column(0).compression
        assert codec_name.lower().startswith(codec)


def test_convert_writes_lz4_by_default(tmp_path):
    std = tmp_path / "t.std"
    std.write_text("".join(f"T{i % 3}|w(V{i})|{i}\n" for i in range(2000)))
    imported = tmp_path / "t.arrow"
    assert cli("convert", str(std), str(imported)).exit_code == 0
    assert trace_compression(str(imported)) == "lz4"
    plain = v1(tmp_path / "plain.arrow", None)
    assert trace_compression(str(plain)) == "none"
    out = tmp_path / "from-plain.arrows"
    assert cli("convert", str(plain), str(out)).exit_code == 0
    assert trace_compression(str(out)) == "lz4"
    assert out.stat().st_size < plain.stat().st_size


def test_convert_compression_option_wins(tmp_path):
    src = v1(tmp_path / "a.arrow", "lz4")
    for codec in ("zstd", "none"):
        dst = tmp_path / f"b-{codec}.parquet"
        assert cli("convert", str(src), str(dst), "--compression", codec).exit_code == 0
        assert trace_compression(str(dst)) == codec
    assert_one_line_error(
        cli("convert", str(src), str(tmp_path / "c.arrow"), "--compression", "gzip"),
        "usage",
        "gzip",
    )


def test_compression_of_ipc_files_is_read_from_the_message(tmp_path):
    for codec in (None, "lz4", "zstd"):
        for name in ("f.arrow", "s.arrows"):
            path = v1(tmp_path / f"{codec}-{name}", codec)
            assert trace_compression(str(path)) == (codec or "none"), (codec, name)
    empty = tmp_path / "empty.arrow"
    write_table(empty, make_table(dict(ts=[], op=[], launch=[], block=[], thread=[])))
    assert trace_compression(str(empty)) is None


# -- out of memory -----------------------------------------------------------------------------


def test_a_check_that_runs_out_of_memory_fails_on_one_line(tmp_path):
    n = 1 << 20  # distinct granules: several hundred MiB of shadow memory
    path = tmp_path / "big.arrow"
    write_table(
        path,
        dict(
            ts=np.arange(n),
            op=np.ones(n, np.uint8),
            launch=0,
            block=0,
            thread=np.arange(n) % 1024,
            space=int(Space.GLOBAL),
            addr=8 * np.arange(n, dtype=np.uint64),
            size=8,
        ),
        compression="lz4",
    )
    script = textwrap.dedent(f"""
        import resource, sys
        sys.path.insert(0, {str(ROOT)!r})
        from tracerace import api
        from tracerace.cli import main
        from tracerace.trace.writer import make_table
        # load (or, with an empty Numba cache, compile) every kernel the check
        # runs first, growth paths included: the limit is for the check's
        # memory, and LLVM compiling under it would crash instead
        api.check(make_table({{"ts": [0, 1], "op": ["write", "read"], "launch": 0, "block": 0,
                              "thread": [0, 1], "addr": 0, "size": 4}}))
        api.check({str(path)!r})
        api.check({str(path)!r}, jobs=None)  # the command's default: shards on a large trace
        size = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                    if line.startswith("VmSize:"))
        limit = size + (192 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        sys.argv = ["tracerace", "check", {str(path)!r}, "--no-progress"]
        main()
    """)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=600
    )
    assert out.returncode == 2, out.stderr[-2000:]
    assert out.stdout == "" and "Traceback" not in out.stderr
    assert (
        out.stderr == f"tracerace: error: {path}: out-of-memory: not enough memory to "
        f"check this trace\n"
    )


def _crashing_app():
    """A command line whose one command fails as a bug in tracerace would."""
    import typer

    crashing = typer.Typer()

    @crashing.command()
    def check() -> None:
        raise ImportError("no module named 'tracerace.missing'")

    return crashing


def test_an_internal_error_is_never_a_verdict(capsys, monkeypatch):
    """A crash exits 2 with one line naming it (never 1, which means hazards
    found, nor 0), and the traceback only when asked for."""
    from tracerace import cli

    monkeypatch.delenv(cli.INTERNAL_TRACEBACK_ENV, raising=False)
    with pytest.raises(SystemExit) as stop:
        cli._run_app(_crashing_app(), [])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "internal error: ImportError: no module named 'tracerace.missing'" in err
    assert "Traceback" not in err

    monkeypatch.setenv(cli.INTERNAL_TRACEBACK_ENV, "1")
    with pytest.raises(SystemExit) as stop:
        cli._run_app(_crashing_app(), [])
    assert stop.value.code == 2
    assert "Traceback (most recent call last)" in capsys.readouterr().err
