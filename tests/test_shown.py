"""What tracerace shows: trace text that a terminal would obey is written as an
escape in every human-readable output; text that is not Unicode is refused."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from typer.testing import CliRunner

import tracerace
from tracerace.cli import app
from tracerace.errors import TraceError
from tracerace.report.formats.sarif import to_sarif
from tracerace.report.output import render
from tracerace.shown import ODD, shown
from tracerace.trace.writer import write_table

ESCAPES = "\x1b]0;pwned\x07\x1b[2J"
FORGED = "k.cu:1\nerror waw: 999 hazards between FAKE and FAKE"
BIDI = "k.cu:7 \u202eevil"
SITES = [f"{ESCAPES}k.cu:3", FORGED, BIDI]


def _racy(path, sites=SITES, **meta):
    """Three threads write the same word, unordered: waw groups between the sites."""
    write_table(
        path,
        {
            "op": ["write"] * 3,
            "ts": [0, 1, 2],
            "launch": 0,
            "block": 0,
            "thread": [0, 1, 2],
            "addr": 64,
            "size": 4,
            "site": [0, 1, 2],
        },
        sites=sites,
        **meta,
    )
    return path


def _assert_inert(text: str) -> None:
    """No character a terminal or editor acts on; no forged line."""
    assert ODD.search(text.replace("\n", "")) is None, text
    assert not any(line.startswith("error waw: 999") for line in text.splitlines())


@pytest.mark.parametrize(
    "text, expected",
    [
        ("plain k.cu:12 x", "plain k.cu:12 x"),
        (ESCAPES, "\\x1b]0;pwned\\x07\\x1b[2J"),
        ("a\nb\tc\rd", "a\\nb\\tc\\rd"),
        ("\x7f\x85\x9b", "\\x7f\\x85\\x9b"),
        ("x\u202ey\u2066z\u200f\u061c", "x\\u202ey\\u2066z\\u200f\\u061c"),
        ("\u2028\u2029", "\\u2028\\u2029"),
        ("\ud800bad.cu:1 x", "\\ud800bad.cu:1 x"),
        ("C:\\src\\k.cu:3 ü ß 名", "C:\\src\\k.cu:3 ü ß 名"),
    ],
)
def test_shown_escapes_what_a_terminal_obeys(text, expected):
    assert shown(text) == expected
    assert shown(shown(text)) == shown(text)
    shown(text).encode("utf-8")  # always writable


def test_text_report_shows_sites_escaped(tmp_path):
    path = _racy(tmp_path / "t.arrow")
    result = CliRunner().invoke(app, ["check", str(path)])
    assert result.exit_code == 1
    _assert_inert(result.stdout)
    assert "\\x1b]0;pwned\\x07\\x1b[2Jk.cu:3" in result.stdout
    assert "k.cu:1\\nerror waw: 999 hazards between FAKE and FAKE" in result.stdout
    assert "k.cu:7 \\u202eevil" in result.stdout
    report = tracerace.check(str(path))
    _assert_inert(report.to_text())


def test_info_shows_names_escaped(tmp_path):
    path = _racy(
        tmp_path / "t.arrow",
        producer=f"cuda {ESCAPES}",
        buffers=[{"name": "out\n\u202etuo", "space": 0, "base": 64, "shape": [4], "itemsize": 4}],
    )
    result = CliRunner().invoke(app, ["info", str(path)])
    assert result.exit_code == 0
    _assert_inert(result.stdout)
    assert "producer: cuda \\x1b]0;pwned" in result.stdout
    assert "out\\n\\u202etuo: global" in result.stdout


def test_warning_and_error_lines_stay_one_line(tmp_path):
    path = _racy(tmp_path / "t.arrow", warnings=[f"lost events\n{ESCAPES}"])
    result = CliRunner().invoke(app, ["check", str(path)])
    warning = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warning == [f"tracerace: warning: {path}: lost events\\n\\x1b]0;pwned\\x07\\x1b[2J"]
    missing = tmp_path / "a\x1b[2J\nb.arrow"
    result = CliRunner().invoke(app, ["validate", str(missing)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "a\\x1b[2J\\nb.arrow" in result.stderr
    _assert_inert(result.stderr)
    assert "\n" not in str(TraceError(f"site {FORGED}", row=3, rule="bad-site"))


def test_sarif_messages_show_sites_escaped(tmp_path):
    report = tracerace.check(str(_racy(tmp_path / "t.arrow", sites=[f"{ESCAPES}k", FORGED, BIDI])))
    doc = to_sarif(report)
    texts = []

    def collect(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("text", "name", "fullyQualifiedName") and isinstance(item, str):
                    texts.append(item)
                else:
                    collect(item)
        elif isinstance(value, list):
            for item in value:
                collect(item)

    collect(doc["runs"][0]["results"])
    assert texts and all(ODD.search(t) is None for t in texts)
    assert any("\\x1b]0;pwned" in t for t in texts)


def _with_metadata(path, key: str, value: str):
    table = pa.table(
        {
            "op": pa.array([1], pa.uint8()),
            "ts": pa.array([0], pa.uint64()),
            "launch": pa.array([0], pa.uint32()),
            "block": pa.array([0], pa.uint32()),
            "thread": pa.array([0], pa.uint32()),
        }
    )
    table = table.replace_schema_metadata({"tracerace.version": "1", key: value})
    with pa.ipc.new_file(str(path), table.schema) as w:
        w.write_table(table)
    return path


@pytest.mark.parametrize(
    "key, value, where",
    [
        ("tracerace.sites", '["ok.cu:1", "\\ud800bad.cu:1 x"]', "tracerace.sites[1]"),
        ("tracerace.warnings", '["\\udfff"]', "tracerace.warnings[0]"),
        (
            "tracerace.buffers",
            '[{"name": "b\\ud800", "space": 0, "base": 0, "shape": [1], "itemsize": 4}]',
            "tracerace.buffers[0].name",
        ),
        (
            "tracerace.launches",
            '[{"launch": 0, "grid": [1], "block": [1], "kernel": "\\udc00"}]',
            "tracerace.launches[0].kernel",
        ),
    ],
)
@pytest.mark.parametrize("command", ["check", "validate", "info"])
def test_lone_surrogate_is_refused_in_one_line(tmp_path, key, value, where, command):
    path = _with_metadata(tmp_path / "t.arrow", key, value)
    result = CliRunner().invoke(app, [command, str(path)])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == (
        f"tracerace: error: {path}: metadata: {where} holds a lone "
        f"surrogate (a \\ud800-\\udfff escape with no pair): trace text "
        f"must be Unicode\n"
    )


def test_paired_surrogate_escapes_are_text(tmp_path):
    # json.dumps writes the emoji as the pair \ud83d\ude00: that is text, not a lone one.
    path = _racy(tmp_path / "t.arrow", sites=["k.cu:1 \U0001f600", "k.cu:2", "k.cu:3"])
    assert "\\ud83d\\ude00" in json.dumps("\U0001f600")
    report = tracerace.check(str(path))
    assert "k.cu:1 \U0001f600" in report.to_text()
    for fmt in ("text", "json", "sarif", "html", "arrow"):
        render(report, fmt, str(tmp_path / f"r.{fmt}"))
    assert "\U0001f600" in (tmp_path / "r.text").read_text(encoding="utf-8")
