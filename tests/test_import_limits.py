"""GPU-trace and STD imports read untrusted input: what they refuse, in one line, exit 2.

Addresses and ids must fit the format (an import rejects what ``check`` would
reject, naming the input line); lines, blank runs and JSON nesting are bounded,
so a decompression bomb fails fast in bounded memory.
"""

from __future__ import annotations

import json
import lzma
import os
import subprocess
import sys
import textwrap

import pytest
from typer.testing import CliRunner

import tracerace
from tracerace.cli import app
from tracerace.convert import convert
from tracerace.convert.gpu import detect
from tracerace.convert.gpu.source import lines
from tracerace.errors import TraceError

sys.path.insert(0, os.path.dirname(__file__))
import gputrace as g  # noqa: E402
from peak import PEAK_KIB

TOP = 0xFFFFFFFFFFFFFFFF
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def store(addrs, grid=(1, 1, 1), cta=(0, 0, 0)) -> g.Kernel:
    k = g.Kernel("k", grid, (32, 1, 1))
    k.program.append(g.Ins(cta, 0, 0x10, "STG.E.SYS [R2.64], R5 ;", addrs=addrs, nsrc=2))
    k.program.append(g.Ins(cta, 0, 0x20, "LDG.E.SYS R6, [R2.64] ;", addrs=addrs, nsrc=1))
    return k


def refused(src, tmp_path, rule: str, line: int | None) -> str:
    """Convert ``src`` through the CLI: exit 2, one line naming file, line and rule."""
    out = tmp_path / "out.arrow"
    result = CliRunner().invoke(app, ["convert", str(src), str(out)])
    assert result.exit_code == 2, result.output
    text = result.output.strip()
    assert "\n" not in text and "Traceback" not in text
    where = f"{src}:{line}" if line is not None else str(src)
    assert f"{where}: {rule}:" in text, text
    assert not out.exists()
    return text


# --- addresses and ids ------------------------------------------------------------------


def test_memtrace_address_at_the_top_is_refused_at_its_line(tmp_path):
    src = g.write(tmp_path / "run.log", g.memtrace_log([store([TOP] * 32)]))
    refused(src, tmp_path, "address-overflow", 5)


def test_memtrace_address_past_64_bits_is_refused(tmp_path):
    text = g.memtrace_log([store([TOP] * 32)]).replace(f"0x{TOP:016x}", "0x1" + "0" * 16)
    src = g.write(tmp_path / "run.log", text)
    assert "is not a 64-bit address" in refused(src, tmp_path, "address-overflow", 5)


def test_accelsim_base_and_stride_past_64_bits_is_refused(tmp_path):
    k = store([0xFFFFFFFFFFFFF000 + 0x100 * lane for lane in range(32)])
    src = g.write(tmp_path / "kernel-1.trace", g.accel_trace(k))
    assert " 1 0xfffffffffffff000 256 " in open(src).read()  # base+stride form
    refused(src, tmp_path, "address-overflow", 17)


def test_accelsim_deltas_below_zero_are_refused(tmp_path):
    k = store([0x40 - 8 * lane * lane for lane in range(32)])  # no stride: base+deltas
    src = g.write(tmp_path / "kernel-1.trace", g.accel_trace(k))
    assert " 2 0x40 " in open(src).read()
    refused(src, tmp_path, "address-overflow", 17)


def test_the_last_bytes_of_the_address_space_convert_and_check(tmp_path):
    """The highest word a 4-byte access may touch (its end must fit 64 bits); its
    global window's init row stops one byte short of 2^64 so that ``check``
    accepts the trace."""
    k = store([TOP - 7 - 4 * (31 - lane) for lane in range(32)])
    src = g.write(tmp_path / "kernel-1.trace", g.accel_trace(k))
    out = tmp_path / "out.arrow"
    convert(src, out)
    for engine in ("numba", "reference"):
        assert not any(tracerace.check(str(out), engine=engine).summary["by_kind"].values())


@pytest.mark.parametrize("fmt", ["memtrace", "accelsim", "cutracer"])
def test_grid_of_more_than_2_32_blocks_is_refused(tmp_path, fmt):
    k = store([0x1000 + 4 * lane for lane in range(32)], grid=(65536, 65536, 2), cta=(0, 0, 1))
    if fmt == "memtrace":
        src, line = g.write(tmp_path / "run.log", g.memtrace_log([k])), 4
        rule = "memtrace-syntax"
    elif fmt == "accelsim":
        src, line = g.write(tmp_path / "kernel-1.trace", g.accel_trace(k)), 3
        rule = "accelsim-syntax"
    else:
        src, line = g.write(tmp_path / "k.ndjson", g.cutracer_ndjson(k)), 1
        rule = "cutracer-syntax"
    assert "8,589,934,592 blocks" in refused(src, tmp_path, rule, line)


def test_block_of_more_than_2_32_threads_is_refused(tmp_path):
    k = store([0x1000 + 4 * lane for lane in range(32)])
    k.block = (1 << 16, 1 << 16, 2)
    src = g.write(tmp_path / "run.log", g.memtrace_log([k]))
    assert "threads" in refused(src, tmp_path, "memtrace-syntax", 4)


def test_shared_window_past_64_bits_is_a_usage_error(tmp_path):
    src = g.write(tmp_path / "run.log", g.memtrace_log([store([0x1000] * 32)]))
    with pytest.raises(TraceError, match="passes the end of the 64-bit"):
        convert(src, tmp_path / "o.arrow", shared_window=f"{TOP - 15:#x}:32")


# --- JSON nesting ------------------------------------------------------------------------


def test_cutracer_record_nested_100000_deep_is_refused(tmp_path):
    k = store([0x1000 + 4 * lane for lane in range(32)])
    text = g.cutracer_ndjson(k).splitlines()
    text[1] = '{"type": "opcode_only", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    src = g.write(tmp_path / "k.ndjson", "\n".join(text) + "\n")
    assert "nested deeper" in refused(src, tmp_path, "cutracer-syntax", 2)


def test_cutracer_metadata_nested_100000_deep_is_refused(tmp_path):
    meta = '{"type": "kernel_metadata", "instructions": ' + "[" * 100_000 + "]" * 100_000 + "}"
    src = g.write(tmp_path / "k.ndjson", meta + "\n")
    refused(src, tmp_path, "cutracer-syntax", 1)
    plain = g.write(tmp_path / "k.log", meta + "\n")
    assert detect(plain) is None  # sniffing a deep line does not crash either


def test_deep_brackets_inside_strings_are_only_text(tmp_path):
    k = store([0x1000 + 4 * lane for lane in range(32)])
    text = g.cutracer_ndjson(k).splitlines()
    meta = json.loads(text[0])
    meta["unmangled_name"] = "k" + "[" * 1000
    text[0] = json.dumps(meta)
    src = g.write(tmp_path / "k.ndjson", "\n".join(text) + "\n")
    convert(src, tmp_path / "o.arrow")


# --- lines, blank input, decompression bombs ----------------------------------------------


def test_a_line_longer_than_the_limit_is_refused(tmp_path):
    src = g.write(tmp_path / "t.log", "ab\n" + "x" * 100 + "\nshort\n")
    with pytest.raises(TraceError, match=r"t.log:2: line-too-long"):
        list(lines(src, max_line=64))
    assert [t for _, t in lines(src, max_line=101)][1] == "x" * 100  # the newline is extra


def test_a_run_of_blank_lines_is_refused(tmp_path):
    src = g.write(tmp_path / "t.log", "a\n" + "  \n" * 10 + "b\n" + " \n" * 40)
    with pytest.raises(TraceError, match=r"t.log:13: blank-input"):
        list(lines(src, max_blank=64))


def _convert_in_child(src: str, out: str) -> tuple[str, int, float]:
    """(the error line, peak resident KiB, seconds) of ``convert`` in a fresh interpreter."""
    code = textwrap.dedent(f"""
        import time
        from tracerace.convert import convert
        from tracerace.errors import TraceError
        start = time.perf_counter()
        try:
            convert({src!r}, {out!r})
            message = "converted"
        except TraceError as err:
            message = str(err)
        print(message)
        print({PEAK_KIB})
        print(time.perf_counter() - start)
    """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    message, rss, seconds = done.stdout.strip().splitlines()
    return message, int(rss), float(seconds)


def _zstd_of(path, piece: bytes, total: int) -> str:
    import zstandard

    with open(path, "wb") as f, zstandard.ZstdCompressor(level=3).stream_writer(f) as w:
        for _ in range(total // len(piece)):
            w.write(piece)
    return str(path)


BOMB_RSS_KIB = 600 << 10
"""Peak memory of a whole interpreter (imports included) converting a bomb."""


@pytest.mark.parametrize(
    "byte, rule", [(b" ", "line-too-long"), (b"f", "line-too-long"), (b"\n", "blank-input")]
)
def test_zstd_bomb_of_1_gib_fails_fast_in_bounded_memory(tmp_path, byte, rule):
    src = _zstd_of(tmp_path / "k.ndjson.zst", byte * (1 << 20), 1 << 30)
    assert os.path.getsize(src) < 1 << 20
    message, rss, seconds = _convert_in_child(src, str(tmp_path / "o.arrow"))
    assert f"k.ndjson.zst:1: {rule}:" in message
    assert rss < BOMB_RSS_KIB, rss
    assert seconds < 30


def test_xz_line_without_newline_fails_fast_in_bounded_memory(tmp_path):
    src = str(tmp_path / "kernel-1.trace.xz")
    with lzma.open(src, "wb", preset=0) as f:
        for _ in range(256):
            f.write(b"f" * (1 << 20))
    message, rss, seconds = _convert_in_child(src, str(tmp_path / "o.arrow"))
    assert "kernel-1.trace.xz:1: line-too-long:" in message
    assert rss < BOMB_RSS_KIB, rss


def test_whitespace_only_is_not_a_trace(tmp_path):
    for name in ("k.ndjson", "t.std"):
        src = g.write(tmp_path / name, " \n\t\n   \n")
        text = refused(src, tmp_path, "truncated" if name.endswith("ndjson") else "empty", None)
        assert "empty" in text


def test_std_line_longer_than_the_limit_is_refused(tmp_path):
    src = g.write(tmp_path / "t.std", "T0|w(V1)|1\n" + "T0|w(V1)|" + "9" * (1 << 25))
    refused(src, tmp_path, "line-too-long", None)


BIG = "9" * 5000
"""More digits than Python converts from decimal text (4300)."""


@pytest.mark.parametrize(
    "name, old, new, line",
    [
        ("run.log", "grid size 1,1,1", f"grid size {BIG},1,1", 4),
        ("run.log", "grid launch id 0", f"grid launch id {BIG}", 4),
        ("run.log", "CTA 0,0,0", f"CTA {BIG},0,0", 5),
        ("kernel-1.trace", "-grid dim = (1,1,1)", f"-grid dim = ({BIG},1,1)", 3),
        ("k.ndjson", '"grid": [1, 1, 1]', f'"grid": [{BIG}, 1, 1]', 1),
    ],
    ids=["memtrace-grid", "memtrace-launch-id", "memtrace-cta", "accelsim-grid", "cutracer-grid"],
)
def test_numbers_of_5000_digits_are_refused_at_their_line(tmp_path, name, old, new, line):
    k = store([0x1000 + 4 * lane for lane in range(32)])
    text = {
        "run.log": g.memtrace_log,
        "kernel-1.trace": lambda ks: g.accel_trace(ks[0]),
        "k.ndjson": lambda ks: g.cutracer_ndjson(ks[0]),
    }[name]([k])
    assert old in text
    src = g.write(tmp_path / name, text.replace(old, new))
    rule = {
        "run.log": "memtrace-syntax",
        "kernel-1.trace": "accelsim-syntax",
        "k.ndjson": "cutracer-syntax",
    }[name]
    assert len(refused(src, tmp_path, rule, line)) < 400
