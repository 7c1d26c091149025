"""Importing NVBit mem_trace output."""

from __future__ import annotations

import json
import os
import sys
from collections import Counter

import pyarrow.ipc as ipc
import pytest
from typer.testing import CliRunner

import tracerace
from tracerace.cli import app
from tracerace.convert import convert
from tracerace.convert.gpu import detect
from tracerace.errors import TraceError

sys.path.insert(0, os.path.dirname(__file__))
import gputrace as g  # noqa: E402

SLOT = 8  # the hardware warp slot gputrace.memtrace_log gives warp 0


def kinds(path, engine="numba") -> Counter:
    by_kind = tracerace.check(str(path), engine=engine).summary["by_kind"]
    return Counter({kind: n for kind, n in by_kind.items() if n})


def expected(kernel, launch=0) -> set[tuple]:
    """Accesses with mem_trace's thread numbering: hardware slot * 32 + lane."""
    return {
        (lau, op, b, t + 32 * SLOT, sp, a, size, a2)
        for lau, op, b, t, sp, a, size, a2 in g.expected_accesses(kernel, launch)
    }


def test_detected_by_content(tmp_path):
    src = g.write(tmp_path / "run.log", g.memtrace_log([g.crossblock(True)]))
    assert detect(src) == "memtrace"
    assert detect(g.write(tmp_path / "plain.log", "hello\n")) is None


@pytest.mark.parametrize("racy", [True, False])
def test_cross_block_race(tmp_path, racy):
    kernel = g.crossblock(racy)
    src = g.write(tmp_path / "run.log", g.memtrace_log([kernel]))
    out = tmp_path / "run.arrow"
    result = convert(src, out)
    assert g.imported_accesses(out) == expected(kernel)
    assert any("memory instructions only" in n for n in result.notes)
    want = {"raw": 32, "war": 32, "waw": 32} if racy else {}
    assert kinds(out) == want == kinds(out, engine="reference")


def test_barriers_are_not_recorded_so_the_tile_reports(tmp_path):
    kernel = g.tile(True)
    src = g.write(tmp_path / "run.log", g.memtrace_log([kernel]))
    convert(src, tmp_path / "run.arrow")
    assert g.ops_of(tmp_path / "run.arrow") == []  # no barrier rows
    assert kinds(tmp_path / "run.arrow") == {"raw": 64}  # said in the notes


def test_ldgsts_two_records_make_one_copy(tmp_path):
    kernel = g.pipeline(True)
    src = g.write(tmp_path / "run.log", g.memtrace_log([kernel]))
    out = tmp_path / "run.arrow"
    convert(src, out)
    copies = {a for a in g.imported_accesses(out) if a[1] == "cp_async"}
    assert copies == {a for a in expected(kernel) if a[1] == "cp_async"} and len(copies) == 128


def test_several_launches(tmp_path):
    a, b = g.crossblock(False), g.tile(False)
    src = g.write(tmp_path / "run.log", g.memtrace_log([a, b]))
    out = tmp_path / "run.arrow"
    convert(src, out)
    assert g.imported_accesses(out) == expected(a, 0) | expected(b, 1)
    meta = ipc.open_file(str(out)).schema.metadata
    kernels = json.loads(meta[b"tracerace.kernels"])
    assert [(k["name"], k["grid"], k["block"]) for k in kernels] == [
        ("cross_kernel(float*, int)", [2, 1, 1], [32, 1, 1]),
        ("tile_kernel(float*, int)", [1, 1, 1], [64, 1, 1]),
    ]
    assert json.loads(meta[b"tracerace.import"])["order"] == "recorded"


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    good = g.memtrace_log([g.crossblock(True)]).split("\n")
    launch = next(i for i, line in enumerate(good) if " - LAUNCH - " in line)
    first = launch + 1
    cases = {
        "short-record": (
            good[:first] + [good[first].rsplit(" 0x", 3)[0]] + good[first + 1 :],
            first + 1,
        ),
        "no-launch": (good[:launch] + good[launch + 1 :], launch + 1),
        "cta-outside": (
            good[:first] + [good[first].replace("CTA 0,0,0", "CTA 5,0,0")] + good[first + 1 :],
            first + 1,
        ),
        "odd-line": (good[:first] + ["MEMTRACE: something else"] + good[first:], first + 1),
    }
    runner = CliRunner()
    for name, (content, lineno) in cases.items():
        src = g.write(tmp_path / f"{name}.log", "\n".join(content))
        out = tmp_path / f"{name}.arrow"
        res = runner.invoke(app, ["convert", "--from", "memtrace", src, str(out)])
        assert res.exit_code == 2, (name, res.output)
        text = res.stderr.strip().splitlines()
        assert len(text) == 1 and text[0].startswith(
            f"tracerace: error: {src}:{lineno}: memtrace-syntax: "
        ), (name, text)
        assert not out.exists()
    with pytest.raises(TraceError, match="no 'MEMTRACE: ... LAUNCH' line"):
        convert(g.write(tmp_path / "empty.log", "hello\n"), tmp_path / "e.arrow", fmt="memtrace")
