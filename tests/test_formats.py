"""Output formats: text, JSON, SARIF 2.1.0 and Arrow, behind one registry."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pytest
from test_report import SITES, alias, out_addr, raw, report, uninit

from tracerace.errors import TraceError
from tracerace.report import formats
from tracerace.report.formats import sarif
from tracerace.report.output import render
from tracerace.trace.meta import TraceMeta
from tracerace.trace.ops import HazardKind, Severity


def sample(**options):
    return report(raw(12, 4), raw(30, 5), uninit(7), alias(40, Severity.WARNING), **options)


def rendered(rep, fmt: str) -> str:
    buf = io.StringIO()
    render(rep, fmt, buf)
    return buf.getvalue()


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_registry():
    assert set(formats.FORMATS) == {"text", "json", "sarif", "arrow", "html"}
    for name, module in formats.FORMATS.items():
        assert module.NAME == name and callable(module.write)
    assert formats.FORMATS["arrow"].BINARY and not formats.FORMATS["text"].BINARY


def test_unknown_format_is_a_usage_error():
    with pytest.raises(TraceError) as err:
        render(sample(), "xml", io.StringIO())
    assert err.value.rule == "usage" and "xml" in str(err.value)


def test_binary_format_to_a_terminal_is_a_usage_error():
    with pytest.raises(TraceError, match="binary"):
        formats.resolve("arrow", FakeTerminal())


# -- text ----------------------------------------------------------------------------


def test_text_groups_errors_first_with_example_bytes_and_why():
    text = rendered(sample(), "text")
    assert "\x1b[" not in text  # no colour outside a terminal
    blocks = text.strip().split("\n\n")
    assert [b.split(":")[0] for b in blocks[:3]] == [
        "error uninit_read",
        "error raw",
        "warning sync_alias",
    ]
    raw_block = blocks[1].splitlines()
    assert raw_block[0] == f"error raw: 2 hazards between {SITES[0]} and {SITES[1]}"
    assert raw_block[1] == f"  earlier: write by (0,4) in launch 0, row 4, ts 4, at {SITES[0]}"
    assert raw_block[2] == f"  later:   read by (1,12) in launch 0, row 12, ts 12, at {SITES[1]}"
    assert raw_block[3] == "  bytes:   out[1, 2]"
    assert raw_block[4].startswith("  why:     blocks 0 and 1 share no barrier")
    uninit_block = blocks[0].splitlines()
    assert uninit_block[0] == f"error uninit_read: 1 hazard at {SITES[2]}"
    assert uninit_block[1].startswith("  access:  read by (2,3)")
    assert uninit_block[2] == "  bytes:   shared[block 2] 0x1a0..0x1a4"
    assert text.rstrip().splitlines()[-1] == (
        "4 hazards (3 errors, 1 warning) in 3 groups over 1,234 events; racy rows: 4"
    )


def test_text_merges_adjacent_byte_ranges_into_element_slices():
    rep = report(*(raw(10 + j, 1, addr=out_addr(0, j)) for j in range(8)))
    bytes_line = next(line for line in rendered(rep, "text").splitlines() if "bytes:" in line)
    assert bytes_line == "  bytes:   out[0, 0:8]"


def test_text_lists_a_few_locations_then_a_count():
    rep = report(*(raw(10 + j, 1, addr=out_addr(j % 4, 2 * (j // 4))) for j in range(8)))
    unwrapped = rendered(rep, "text").replace("\n" + " " * 11, " ")
    bytes_line = next(line for line in unwrapped.splitlines() if "bytes:" in line)
    assert bytes_line.endswith(
        "out[0, 0], out[1, 0], out[2, 0], out[3, 0], out[0, 2], "
        "out[1, 2], ... (8 byte ranges in all)"
    )


def test_text_max_reports_says_how_many_were_left_out():
    text = rendered(sample(max_reports=1), "text")
    assert "error uninit_read" in text and "error raw" not in text
    assert "2 more groups not shown (showing 1 of 3; max reports 1)" in text
    assert "4 hazards (3 errors, 1 warning) in 3 groups" in text


def test_text_clean_report():
    assert rendered(report(events=5), "text") == "no hazards in 5 events\n"


def test_text_in_colour_on_a_terminal():
    term = FakeTerminal()
    render(sample(), "text", term)
    out = term.getvalue()
    assert "\x1b[" in out and "out[1, 2]" in out


def test_text_to_a_file(tmp_path):
    path = tmp_path / "report.txt"
    render(sample(), "text", path)
    assert path.read_text() == rendered(sample(), "text")


def test_unwritable_output_is_an_io_error(tmp_path):
    with pytest.raises(TraceError) as err:
        render(sample(), "json", tmp_path / "missing" / "r.json")
    assert err.value.rule == "io"


# -- JSON ----------------------------------------------------------------------------


def test_json_is_the_report_dict():
    rep = sample(max_reports=2)
    assert json.loads(rendered(rep, "json")) == json.loads(json.dumps(rep.to_json()))


def test_json_to_a_binary_stream():
    buf = io.BytesIO()
    render(sample(), "json", buf)
    assert json.loads(buf.getvalue())["version"] == 1


# -- SARIF ---------------------------------------------------------------------------


def test_sarif_shape():
    doc = json.loads(rendered(sample(), "sarif"))
    assert doc["version"] == "2.1.0" and "sarif-2.1.0" in doc["$schema"]
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "tracerace" and driver["version"]
    assert [rule["id"] for rule in driver["rules"]] == [k.label for k in HazardKind]
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    results = run["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [
        ("uninit_read", "error"),
        ("raw", "error"),
        ("sync_alias", "warning"),
    ]
    for r in results:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["message"]["text"]
    assert run["properties"]["events"] == 1234


def test_sarif_locations_from_file_line_sites():
    doc = json.loads(rendered(sample(), "sarif"))
    raw_result = doc["runs"][0]["results"][1]
    (loc,) = raw_result["locations"]
    assert loc["physicalLocation"] == {
        "artifactLocation": {"uri": "attn.cu"},
        "region": {"startLine": 20},
    }
    assert "ld.global" in loc["message"]["text"]
    (related,) = raw_result["relatedLocations"]
    assert related["id"] == 1
    assert related["physicalLocation"]["region"]["startLine"] == 10
    assert "earlier write by (0,4)" in related["message"]["text"]
    assert "2 hazards" in raw_result["message"]["text"]
    assert "relatedLocations" not in doc["runs"][0]["results"][0]  # uninit_read: one access


@pytest.mark.parametrize(
    "site, physical",
    [
        (
            "kernel.py:88 tl.store",
            {"artifactLocation": {"uri": "kernel.py"}, "region": {"startLine": 88}},
        ),
        (
            "src/k.cu:7:13",
            {
                "artifactLocation": {"uri": "src/k.cu"},
                "region": {"startLine": 7, "startColumn": 13},
            },
        ),
        (
            "src/k#2.cu:3 x",
            {"artifactLocation": {"uri": "src/k%232.cu"}, "region": {"startLine": 3}},
        ),
    ],
)
def test_sarif_physical_location(site, physical):
    from tracerace.report.model import Access

    loc = sarif.location(Access(1, 0, 0, 0, "read", 0, site), "read")
    assert loc["physicalLocation"] == physical


@pytest.mark.parametrize("site", ["decode pipeline QK ready", "flag3", "k.cu:L4"])
def test_sarif_other_sites_are_logical_locations(site):
    from tracerace.report.model import Access

    loc = sarif.location(Access(1, 0, 0, 0, "read", 0, site), "read")
    assert loc["logicalLocations"] == [{"name": site, "fullyQualifiedName": site}]
    assert "physicalLocation" not in loc


def test_sarif_max_reports():
    doc = json.loads(rendered(sample(max_reports=1), "sarif"))
    assert len(doc["runs"][0]["results"]) == 1
    assert doc["runs"][0]["properties"]["hazardsOmitted"] == 2


# -- Arrow ---------------------------------------------------------------------------


def test_arrow_one_row_per_finding():
    rep = sample()
    table = rep.to_arrow()
    assert table.num_rows == 4
    rows = table.to_pylist()
    assert [r["kind"] for r in rows] == ["uninit_read", "raw", "raw", "sync_alias"]
    assert [r["severity"] for r in rows] == ["error", "error", "error", "warning"]
    assert [r["group"] for r in rows] == [0, 1, 1, 2]
    uninit_row, raw_row = rows[0], rows[1]
    assert uninit_row["first_row"] is None and uninit_row["first_op"] is None
    assert uninit_row["location"] == "shared[block 2] 0x1a0..0x1a4"
    assert raw_row["first_row"] == 4 and raw_row["first_op"] == "write"
    assert raw_row["op"] == "read" and raw_row["site"] == SITES[1]
    assert raw_row["element"] == "out[1, 2]" and raw_row["space"] == "global"
    assert raw_row["explanation"] == rep.hazards[1].explanation
    assert rows[3]["reason"] == "protocols may cross"
    assert table.schema.field("kind").type == pa.dictionary(pa.int16(), pa.string())
    assert table.schema.metadata[b"tracerace.events"] == b"1234"


def test_arrow_empty_report_keeps_the_schema():
    empty = report().to_arrow()
    assert empty.num_rows == 0 and empty.schema == sample().to_arrow().schema


def test_arrow_to_a_file_and_to_a_stream(tmp_path):
    rep = sample()
    path = tmp_path / "r.arrow"
    render(rep, "arrow", path)
    with pa.ipc.open_file(path) as f:
        assert f.read_all().num_rows == 4
    buf = io.BytesIO()
    render(rep, "arrow", buf)
    assert pa.ipc.open_stream(buf.getvalue()).read_all().equals(rep.to_arrow())


def test_formats_without_sites_or_buffers():
    bare = report(raw(3, 1, site=0xFFFFFFFF, prev_site=0xFFFFFFFF), meta=TraceMeta())
    text = rendered(bare, "text")
    assert text.splitlines()[0] == "error raw: 1 hazard"
    result = json.loads(rendered(bare, "sarif"))["runs"][0]["results"][0]
    assert "physicalLocation" not in result["locations"][0]
