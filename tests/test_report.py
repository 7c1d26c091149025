"""Report: grouping, counts, exit codes, the pinned JSON shape, options, element names."""

from __future__ import annotations

import json

import numpy as np
import pytest
from test_explain import finding

from tracerace.checker.findings import FINDING_DTYPE, CheckResult
from tracerace.checker.options import make_options, parse_kinds
from tracerace.errors import TraceError
from tracerace.report import Report
from tracerace.trace.meta import Buffer, TraceMeta
from tracerace.trace.ops import HazardKind, Op, Severity, Space

K = HazardKind
SITES = (
    "attn.cu:10 st.global",
    "attn.cu:20 ld.global",
    "attn.cu:30 ld.shared",
    "attn.cu:10 st.global",
)  # the last repeats the first: same site, other index
OUT = Buffer("out", int(Space.GLOBAL), 0x1000, (4, 8), 4)  # out[i, j] at 0x1000 + 4 * (8i + j)
TILE = Buffer("tile", int(Space.SHARED), 0x0, (16,), 2)
META = TraceMeta(path="t.arrow", sites=SITES, buffers=(OUT, TILE))


def findings_array(*records: dict) -> np.ndarray:
    out = np.zeros(len(records), dtype=FINDING_DTYPE)
    for i, rec in enumerate(records):
        for name, value in rec.items():
            out[i][name] = value
    return out


def out_addr(i: int, j: int) -> int:
    return 0x1000 + 4 * (8 * i + j)


def raw(row: int, prev_row: int, *, site=1, prev_site=0, addr=None, size=4, **kw) -> dict:
    fields = dict(
        kind=K.RAW,
        row=row,
        block=1,
        thread=row,
        op=Op.READ,
        ts=row,
        site=site,
        prev_row=prev_row,
        prev_block=0,
        prev_thread=prev_row,
        prev_op=Op.WRITE,
        prev_ts=prev_row,
        prev_site=prev_site,
        space=Space.GLOBAL,
        addr=out_addr(1, 2) if addr is None else addr,
        size=size,
    )
    fields.update(kw)
    return finding(**fields)


def uninit(row: int, **kw) -> dict:
    fields = dict(
        kind=K.UNINIT_READ,
        row=row,
        thread=3,
        op=Op.READ,
        site=2,
        space=Space.SHARED,
        owner=2,
        block=2,
        addr=0x1A0,
        size=4,
    )
    fields.update(kw)
    return finding(**fields)


def alias(row: int, severity: Severity, site=1, prev_site=0) -> dict:
    return finding(
        kind=K.SYNC_ALIAS,
        severity=severity,
        row=row,
        op=Op.WAIT,
        site=site,
        prev_row=row - 1,
        prev_op=Op.SIGNAL,
        prev_site=prev_site,
        obj=3,
        code=2,
    )


def report(*records: dict, events: int = 1234, meta: TraceMeta = META, **options) -> Report:
    return Report.from_result(
        CheckResult(events, findings_array(*records)), meta, make_options(**options)
    )


def test_groups_by_kind_and_site_pair_with_count_and_first_example():
    r = report(raw(30, 5), raw(12, 4), raw(50, 6, prev_site=3), raw(40, 7, site=2), uninit(60))
    assert [(g.kind, g.first_site, g.second_site, g.count) for g in r.groups] == [
        ("raw", SITES[0], SITES[1], 3),  # site index 3 has the same text as 0
        ("raw", SITES[0], SITES[2], 1),
        ("uninit_read", None, SITES[2], 1),
    ]
    assert r.groups[0].example.row == 12
    assert r.groups[0].example.first.row == 4
    assert sorted(r.findings["row"][r.groups[0].indices].tolist()) == [12, 30, 50]


def test_group_severity_is_error_when_any_member_is_and_errors_come_first():
    r = report(
        alias(10, Severity.WARNING),
        alias(20, Severity.ERROR),
        alias(5, Severity.WARNING, site=2),
        raw(30, 1),
    )
    assert [(g.kind, g.severity, g.example.row) for g in r.groups] == [
        ("sync_alias", "error", 10),
        ("raw", "error", 30),
        ("sync_alias", "warning", 5),
    ]
    assert (r.errors, r.warnings, r.exit_code) == (2, 2, 1)


def test_only_warnings_exit_zero_and_empty_report():
    assert report(alias(3, Severity.WARNING)).exit_code == 0
    empty = report()
    assert (empty.exit_code, empty.groups, empty.hazards) == (0, (), [])
    assert empty.summary_line() == "no hazards in 1,234 events"
    assert empty.summary == {"by_kind": {k.label: 0 for k in K}, "racy_rows": 0}


def test_summary_counts_kinds_and_distinct_later_rows():
    r = report(raw(10, 1), uninit(10), raw(11, 2), alias(12, Severity.WARNING))
    assert r.summary["racy_rows"] == 3
    assert r.summary["by_kind"]["raw"] == 2
    assert r.summary["by_kind"]["uninit_read"] == 1
    assert r.summary["by_kind"]["sync_alias"] == 1
    assert list(r.summary["by_kind"]) == [k.label for k in K]
    assert r.summary_line() == (
        "4 hazards (3 errors, 1 warning) in 3 groups over 1,234 events; racy rows: 3"
    )


def test_hazards_one_per_finding_with_accesses():
    r = report(raw(12, 4, ts=99), uninit(7))
    assert len(r.hazards) == 2
    first, second = r.hazards
    assert first.kind == "uninit_read" and first.first is None
    assert second.second.row == 12 and second.second.ts == 99 and second.second.op == "read"
    assert second.first.op == "write" and second.first.site == SITES[0]
    assert second.first.agent == "(0,4)" and second.second.agent == "(1,12)"
    assert second.severity == "error" and second.space == "global"
    assert "never synchronized" not in second.explanation  # different blocks
    assert second.explanation.startswith("blocks 0 and 1")


def test_async_flag_on_accesses():
    rec = raw(12, 4, prev_op=Op.CP_ASYNC, prev_async=1, op=Op.READ)
    h = report(rec).hazards[0]
    assert h.first.is_async and not h.second.is_async


def test_element_names_through_a_2d_buffer():
    h = report(raw(12, 4, addr=out_addr(1, 2), size=4)).hazards[0]
    assert (h.element, h.location) == ("out[1, 2]", "out[1, 2]")
    span = report(raw(12, 4, addr=out_addr(2, 7), size=8)).hazards[0]
    assert (span.element, span.location) == ("out[2, 7]", "out[2, 7]..out[3, 0]")
    shared = report(uninit(3, addr=0x4, size=2)).hazards[0]
    assert shared.element == "tile[2]"
    raw_bytes = report(uninit(3, addr=0x1A0, size=4)).hazards[0]
    assert (raw_bytes.element, raw_bytes.location) == (None, "shared[block 2] 0x1a0..0x1a4")
    beyond = report(raw(3, 1, addr=0x9000)).hazards[0]
    assert beyond.location == "global 0x9000..0x9004"


def test_group_locations_are_distinct_in_row_order():
    r = report(
        raw(12, 4, addr=out_addr(0, 1)),
        raw(13, 4, addr=out_addr(0, 0)),
        raw(14, 4, addr=out_addr(0, 1)),
        raw(15, 4, addr=0x9000),
        raw(16, 4, addr=out_addr(0, 1), size=2),
    )  # other bytes, same element
    group = r.groups[0]
    # adjacent ranges merge: out[0, 1] (found first) and out[0, 0] are one slice
    assert group.locations == ("out[0, 0:2]", "global 0x9000..0x9004")
    assert group.locations_head(1) == ("out[0, 0:2]",)
    assert group.byte_ranges == 4
    assert group.bytes_text() == "out[0, 0:2], global 0x9000..0x9004"
    assert group.bytes_text(1) == "out[0, 0:2], ... (4 byte ranges in all)"


def test_hazards_match_the_examples_of_their_groups():
    r = report(raw(30, 5), raw(12, 4), uninit(7), alias(40, Severity.WARNING))
    by_row = {h.row: h for h in r.hazards}
    for group in r.groups:
        assert by_row[group.example.row] == group.example


# -- JSON (shape pinned by the product spec) ---------------------------------------

ACCESS_KEYS = {"row", "launch", "block", "thread", "op", "ts", "site"}
ACCESS_ADDED = {"async", "agent", "coords"}
GROUP_KEYS = {"kind", "severity", "count", "space", "addr", "size", "first", "second"}
GROUP_EXTRA = {"element", "explanation", "obj", "reason"}
GROUP_ADDED = {
    "group",
    "first_site",
    "second_site",
    "roles",
    "owner",
    "owner_text",
    "location",
    "locations",
    "byte_ranges",
    "span",
    "code",
    "aux",
    "hint",
    "linked",
}
"""Fields version 1 gained after the pinned ones (schemas/report-v1.schema.json)."""


def test_json_shape_keeps_the_pinned_fields_and_adds_only_documented_ones():
    r = report(raw(12, 4), raw(30, 5), uninit(7), alias(40, Severity.WARNING))
    doc = json.loads(json.dumps(r.to_json()))  # plain JSON types only
    assert {"version", "events", "hazards", "summary"} <= set(doc)
    assert set(doc) - {"version", "events", "hazards", "summary"} == {
        "trace",
        "producer",
        "warnings",
        "launches",
        "legend",
        "summary_line",
        "groups",
    }
    assert doc["version"] == 1 and doc["events"] == 1234
    assert set(doc["summary"]) == {"by_kind", "racy_rows"}
    assert doc["summary"]["racy_rows"] == 4
    assert doc["summary_line"] == r.summary_line() and doc["groups"] == 3
    for group in doc["hazards"]:
        assert set(group) == GROUP_KEYS | GROUP_EXTRA | GROUP_ADDED
        assert set(group["second"]) == ACCESS_KEYS | ACCESS_ADDED
        assert group["first"] is None or set(group["first"]) == ACCESS_KEYS | ACCESS_ADDED
    uninit_group, raw_group, alias_group = doc["hazards"]
    pinned = {k: v for k, v in raw_group.items() if k in GROUP_KEYS | GROUP_EXTRA}
    for side in ("first", "second"):
        pinned[side] = {k: v for k, v in pinned[side].items() if k in ACCESS_KEYS}
    assert pinned == {
        "kind": "raw",
        "severity": "error",
        "count": 2,
        "space": "global",
        "addr": out_addr(1, 2),
        "size": 4,
        "first": {
            "row": 4,
            "launch": 0,
            "block": 0,
            "thread": 4,
            "op": "write",
            "ts": 4,
            "site": SITES[0],
        },
        "second": {
            "row": 12,
            "launch": 0,
            "block": 1,
            "thread": 12,
            "op": "read",
            "ts": 12,
            "site": SITES[1],
        },
        "element": "out[1, 2]",
        "explanation": raw_group["explanation"],
        "obj": 0,
        "reason": None,
    }
    # what the text report says of the group is there too
    assert raw_group["locations"] == ["out[1, 2]"] and raw_group["span"] == "out[1, 2]"
    assert raw_group["hint"]["text"].startswith("blocks 0 and 1 must be ordered")
    assert raw_group["first"]["agent"] == "(0,4)" and raw_group["first"]["coords"] is None
    assert doc["legend"].startswith("agents are (block,thread)")
    assert uninit_group["first"] is None and uninit_group["space"] == "shared"
    assert alias_group["severity"] == "warning" and alias_group["reason"] == "protocols may cross"


def test_json_site_is_null_without_a_site():
    r = report(uninit(7, site=0xFFFFFFFF))
    assert r.to_json()["hazards"][0]["second"]["site"] is None


def test_max_reports_limits_groups_not_counts():
    records = (raw(12, 4), raw(13, 4, site=2), uninit(7))
    r = report(*records, max_reports=1)
    assert len(r.groups) == 3 and len(r.shown_groups) == 1 and r.omitted_groups == 2
    doc = r.to_json()
    assert len(doc["hazards"]) == 1 and doc["hazards_omitted"] == 2
    assert doc["summary"]["racy_rows"] == 3 and r.exit_code == 1
    assert "2 more groups not shown" in r.omitted_line()
    assert "hazards_omitted" not in report(*records, max_reports=3).to_json()
    every = report(*records, max_reports=0)  # 0: no cap, as "all"
    assert len(every.to_json()["hazards"]) == 3 and every.omitted_line() is None
    assert len(report(*records, max_reports="all").shown_groups) == 3
    assert report(*records).omitted_line() is None


# -- options -----------------------------------------------------------------------


def test_select_and_ignore_filter_findings_and_counts():
    records = (raw(12, 4), uninit(7), alias(40, Severity.WARNING))
    only = report(*records, select=["raw", "sync_alias"])
    assert only.summary["by_kind"]["uninit_read"] == 0 and len(only.findings) == 2
    dropped = report(*records, ignore="raw,uninit_read")
    assert [g.kind for g in dropped.groups] == ["sync_alias"] and dropped.exit_code == 0
    both = report(*records, select=["raw, uninit_read"], ignore=["UNINIT_READ"])
    assert [g.kind for g in both.groups] == ["raw"]


@pytest.mark.parametrize(
    "options",
    [
        dict(select=["raw", "racy"]),
        dict(ignore="nope"),
        dict(engine="gpu"),
        dict(max_reports=-1),
        dict(batch_size=0),
    ],
)
def test_bad_options_are_usage_errors(options):
    with pytest.raises(TraceError) as err:
        make_options(**options)
    assert err.value.rule == "usage"


def test_parse_kinds():
    assert parse_kinds(["raw,war", " waw "]) == {int(K.RAW), int(K.WAR), int(K.WAW)}
    assert parse_kinds(None) == frozenset()


# -- the API over real checkers (lazy: they land separately) ----------------------------

ENGINES = ["reference", "numba"]


def two_thread_writes(*, barrier: bool):
    from tracerace.trace.writer import make_table

    ops = ["write", "bar_sync", "bar_sync", "write"] if barrier else ["write", "write"]
    n = len(ops)
    thread = [0, 0, 1, 1] if barrier else [0, 1]
    return make_table(
        dict(
            ts=list(range(n)),
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
        buffers=[TILE],
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_check_finds_one_waw_without_sync(engine):
    from tracerace import check

    r = check(two_thread_writes(barrier=False), engine=engine)
    assert r.events == 2 and r.exit_code == 1
    assert r.summary == {"by_kind": {**{k.label: 0 for k in K}, "waw": 1}, "racy_rows": 1}
    (group,) = r.groups
    assert (group.kind, group.severity, group.count) == ("waw", "error", 1)
    assert (group.first_site, group.second_site) == ("k.cu:5 st.shared", "k.cu:9 st.shared")
    h = group.example
    assert (h.first.row, h.second.row, h.element) == (0, 1, "tile[8]")
    assert h.explanation == "threads (0,0) and (0,1) never synchronized between the accesses"


@pytest.mark.parametrize("engine", ENGINES)
def test_check_is_clean_with_a_barrier_between(engine):
    from tracerace import check

    r = check(two_thread_writes(barrier=True), engine=engine)
    assert (r.events, r.exit_code, r.groups) == (4, 0, ())
    assert r.summary_line() == "no hazards in 4 events"


def test_check_select_and_progress_callback_path():
    from tracerace import check

    calls = []
    r = check(
        two_thread_writes(barrier=False),
        engine="reference",
        ignore=["waw"],
        progress=lambda done, total: calls.append(done),
    )
    assert r.exit_code == 0 and r.summary["by_kind"]["waw"] == 0
    assert calls[-1] == r.events


def test_check_rejects_bad_options_before_reading():
    from tracerace import check

    with pytest.raises(TraceError, match="unknown hazard kind 'racy'"):
        check("does-not-matter.arrow", select=["racy"])


@pytest.mark.parametrize("engine", ENGINES)
def test_check_reports_progress_to_a_plain_callback(engine):
    from tracerace import check
    from tracerace.trace.writer import make_table

    n = 9
    table = make_table(
        dict(
            ts=list(range(n)),
            op=["write"] * n,
            launch=0,
            block=0,
            thread=list(range(n)),
            space=int(Space.GLOBAL),
            addr=0,
            size=4,
        )
    )
    calls = []
    report = check(
        table, engine=engine, batch_size=4, progress=lambda done, total: calls.append((done, total))
    )
    assert report.events == n
    assert calls[0] == (0, n) and calls[-1] == (n, n)
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert len(calls) >= 3  # 0, then after each of the three batches
    with pytest.raises(TraceError, match="progress must be a function"):
        check(table, engine=engine, progress=True)
