"""Reports built from grouped findings: the streamed outputs say what the whole
report says, and the vectorised Arrow columns word each finding as the
one-at-a-time definitions (``report.locate``, ``explain.explain``) do."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_groups import random_findings

import tracerace
from tracerace.checker.findings import CheckResult
from tracerace.group.groups import EXAMPLES
from tracerace.report import Report, arrow_report
from tracerace.report.explain import explain
from tracerace.report.formats import jsonfmt, sarif
from tracerace.report.locations import locate
from tracerace.report.output import Output, render
from tracerace.trace.meta import Buffer, TraceMeta
from tracerace.trace.ops import Space
from tracerace.trace.writer import write_table

BUFFERS = (
    Buffer("x", int(Space.GLOBAL), 64, (4, 4), 4),  # row-major
    Buffer("xt", int(Space.GLOBAL), 64, (4, 4), 4, strides=(1, 4)),  # a transposed view
    Buffer("holey", int(Space.GLOBAL), 512, (3, 2), 8, strides=(4, 1)),  # gaps between rows
    Buffer("t", int(Space.SHARED), 0, (8,), 4, launch=1),
    Buffer("s", int(Space.SHARED), 0, (2, 8), 2),
    Buffer("scalar", int(Space.LOCAL), 16, (), 4),
)
META = TraceMeta(path="t.arrow", sites=("a.cu:1", "a.cu:2", "a.cu:1", "b.cu:7"), buffers=BUFFERS)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_vectorised_names_match_locate(data):
    n = data.draw(st.integers(0, 40))
    space = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.uint8)
    owner = np.array(data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.uint32)
    addr = np.array(
        data.draw(
            st.lists(
                st.sampled_from(
                    [0, 1, 2, 15, 16, 30, 60, 64, 67, 68, 124, 128, 512, 520, 540, 544, 2**64 - 65]
                ),
                min_size=n,
                max_size=n,
            )
        ),
        np.uint64,
    )
    size = np.array(
        data.draw(st.lists(st.sampled_from([0, 1, 2, 4, 8, 64]), min_size=n, max_size=n)), np.uint32
    )
    launch = np.array(data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), np.uint32)
    element, location = arrow_report.name_bytes(META, space, owner, addr, size, launch)
    want = [
        locate(META, *key)
        for key in zip(
            space.tolist(), owner.tolist(), addr.tolist(), size.tolist(), launch.tolist()
        )
    ]
    assert element.to_pylist() == [e for e, _ in want]
    assert location.to_pylist() == [loc for _, loc in want]


def test_hex_digits():
    values = np.array([0, 1, 15, 16, 0xABC, 2**63, 2**64 - 1], np.uint64)
    assert arrow_report._hex(values).to_pylist() == [f"{int(v):x}" for v in values]


def test_arrow_columns_word_each_finding_as_explain_does():
    findings = random_findings(np.random.default_rng(3), 300)
    report = Report.from_result(CheckResult(1000, findings), META)
    table = report.to_arrow()
    assert table.num_rows == len(report.findings) == len(findings)
    assert table.column("explanation").to_pylist() == [
        explain(dict(zip(f.dtype.names, f.tolist())), META) for f in report.findings
    ]
    assert table.column("group").to_pylist() == report.group_of().tolist()
    assert table.column("site").to_pylist() == [
        META.site_text(s) for s in report.findings["site"].tolist()
    ]


def sample_report(**options) -> Report:
    findings = random_findings(np.random.default_rng(11), 400)
    from tracerace.checker.options import make_options

    return Report.from_result(CheckResult(2000, findings), META, make_options(**options))


@pytest.mark.parametrize("options", [{}, {"max_reports": 3}, {"max_reports": 0}, {"ignore": "raw"}])
def test_streamed_json_and_sarif_are_the_documents(options):
    report = sample_report(**options)
    out = io.StringIO()
    jsonfmt.write(report, out)
    assert out.getvalue() == json.dumps(report.to_json(), indent=2) + "\n"
    out = io.StringIO()
    sarif.write(report, out)
    assert out.getvalue() == json.dumps(sarif.to_sarif(report), indent=2) + "\n"


def test_filtered_kinds_are_said_everywhere():
    report = sample_report(select="raw")
    assert report.filtered and "raw" not in report.filtered
    assert report.to_json()["filtered"] == report.filtered
    assert "filtered out by --select/--ignore" in report.summary_line()
    assert sarif.to_sarif(report)["runs"][0]["properties"]["filtered"] == report.filtered


def many_findings_trace(path, n: int = 600) -> str:
    """``n`` reads of never-written shared bytes at one site: one group of ``n``."""
    write_table(
        path,
        dict(
            ts=list(range(n)),
            op="read",
            launch=0,
            block=0,
            thread=[i % 32 for i in range(n)],
            space=int(Space.SHARED),
            addr=[4 * i for i in range(n)],
            size=4,
            site=0,
        ),
        sites=["k.cu:3 ld.shared"],
        buffers=[Buffer("tile", 1, 0, (n,), 4)],
    )
    return str(path)


@pytest.mark.parametrize("engine", ["numba", "reference"])
def test_a_big_group_keeps_a_few_examples_and_exact_counts(tmp_path, engine):
    path = many_findings_trace(tmp_path / "u.arrow")
    report = tracerace.check(path, engine=engine, batch_size=100)
    full = tracerace.check(path, engine=engine, batch_size=100, keep_findings=True)
    (group,) = report.groups
    assert group.count == 600 == len(full.findings) and report.summary == full.summary
    assert len(report.findings) == EXAMPLES
    assert np.array_equal(report.findings, full.findings[:EXAMPLES])
    assert report.to_json() == full.to_json()
    assert group.byte_ranges is None and group.span == "tile[0:600]"
    text = io.StringIO()
    render(report, "text", text)
    bytes_line = next(line for line in text.getvalue().splitlines() if "bytes:" in line)
    assert bytes_line.endswith("tile[0:8], ... (all within tile[0:600])")


def test_arrow_output_streams_every_finding(tmp_path):
    from typer.testing import CliRunner

    from tracerace.cli import app

    path = many_findings_trace(tmp_path / "u.arrow")
    out = tmp_path / "r.arrow"
    result = CliRunner().invoke(app, ["check", path, "-f", "arrow", "-o", str(out)])
    assert result.exit_code == 1, result.output
    with pa.ipc.open_file(out) as f:
        table = f.read_all()
    full = tracerace.check(path, keep_findings=True)
    assert table.column("row").to_pylist() == full.findings["row"].tolist()
    assert set(table.column("group").to_pylist()) == {0}
    assert table.schema.metadata[b"tracerace.events"] == b"600"
    assert table.equals(full.to_arrow())


def test_arrow_output_stores_each_repeated_text_once(tmp_path):
    """6000 findings of one group by 32 threads repeat 32 explanations, a hint per
    thread and one site: the file holds each once (dictionaries that grow by deltas across batches),
    and reads back as the same strings as the report's table."""
    path = many_findings_trace(tmp_path / "u.arrow", n=6000)
    out = tmp_path / "r.arrow"
    with Output("arrow", str(out)) as output:
        output.write(tracerace.check(path, sink=output.sink, batch_size=500))
    with pa.ipc.open_file(out) as f:
        batches = [f.get_batch(i) for i in range(f.num_record_batches)]
        table = f.read_all()
    assert len(batches) > 1
    texts = {"explanation", "hint", "hint_site", "site", "reason"}
    for name in texts:
        assert pa.types.is_dictionary(table.schema.field(name).type), name
    last = batches[-1]
    for name in ("explanation", "hint"):
        assert len(last.column(name).dictionary) == len(set(table.column(name).to_pylist()))
    # Against the same table with its text columns written out in every row: the
    # sentences' bytes are what the dictionaries save.
    plain = table.cast(
        pa.schema(
            [
                f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f
                for f in table.schema
            ]
        )
    )
    with pa.ipc.new_file(tmp_path / "plain.arrow", plain.schema) as writer:
        writer.write_table(plain, max_chunksize=500)
    repeated = sum(
        len(s.encode()) for name in ("explanation", "hint") for s in table.column(name).to_pylist()
    )
    assert out.stat().st_size < (tmp_path / "plain.arrow").stat().st_size - repeated * 0.9
    full = tracerace.check(path, keep_findings=True).to_arrow()
    for name in table.column_names:
        assert table.column(name).to_pylist() == full.column(name).to_pylist(), name
