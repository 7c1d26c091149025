"""``--format html``: one self-contained page, escaped, small for many hazards, and
rendered by a real browser (Debian's chromium, headless) without console errors.

The browser tests need ``chromium`` (``.ci/run`` installs it); outside CI
(``CI`` unset) they skip when it is absent, in CI they fail.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from builders import Trace
from typer.testing import CliRunner

import tracerace
from tracerace.checker.findings import CheckResult, empty_findings
from tracerace.checker.options import make_options
from tracerace.cli import app
from tracerace.report import Report
from tracerace.report.formats import html
from tracerace.report.output import render
from tracerace.scenarios import SCENARIOS
from tracerace.trace.meta import TraceMeta
from tracerace.trace.writer import make_table

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = "<script>document.title='pwned'</script><img src=x onerror=alert(1)>"


def page_of(report: Report) -> str:
    out = io.StringIO()
    render(report, "html", out)
    return out.getvalue()


def hostile_trace(tmp_path: Path) -> Path:
    """A racy trace whose site texts, buffer name and producer are markup."""
    t = Trace().init(0, 0, addr=0x1000, size=16, site=0)
    t.write(0, 0, addr=0x1000, size=4, site=1).read(1, 0, addr=0x1000, size=4, site=2)
    table = make_table(
        t.columns(),
        sites=["k.cu:1 init", f"k.cu:2 {HOSTILE}", HOSTILE],
        buffers=[
            {"name": f"buf{HOSTILE}", "space": 0, "base": 0x1000, "shape": [4], "itemsize": 4}
        ],
        producer=f"</title>{HOSTILE}",
    )
    path = tmp_path / "hostile.arrow"
    import pyarrow.feather as feather

    feather.write_feather(table, str(path))
    return path


def test_trace_text_is_escaped_and_nothing_can_run(tmp_path):
    path = hostile_trace(tmp_path)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(app, ["check", str(path), "-f", "html", "-o", str(out)])
    assert result.exit_code == 1
    page = out.read_text()
    assert "<script" not in page.lower() and "<img src=x" not in page
    assert "&lt;script&gt;document.title=" in page and "&lt;/title&gt;" in page
    assert "default-src 'none'" in page  # and the page's policy forbids scripts
    assert "buf&lt;script&gt;" in page  # the buffer's heatmap title


def test_page_is_self_contained_with_summary_groups_and_heatmap(tmp_path):
    path = SCENARIOS["incident4"].write(tmp_path / "i4.arrow")
    out = tmp_path / "i4.html"
    result = CliRunner().invoke(app, ["check", str(path), "-f", "html", "-o", str(out)])
    assert result.exit_code == 1
    page = out.read_text()
    report = tracerace.check(path)
    assert f'id="summary" class="summary errors">{report.summary_line()}<' in page
    assert page.count('class="timeline-svg"') == len(report.shown_groups) == 2
    assert "block (63,0,0) thread (0,0,0)" in page
    # no resource outside the file: only data: URIs
    assert not re.search(r"""(src|href)=["'](?!data:)""", page)
    # heatmap counts every finding (the CLI's sink sees them all): 4,064 on x
    assert "4,064 findings" in page and "Every finding counted." in page


def test_heatmap_counts_are_exact_through_the_sink(tmp_path):
    path = SCENARIOS["incident2"].write(tmp_path / "i2.arrow")
    full = tracerace.check(path, keep_findings=True)
    heat = html.Heat(full.meta)
    heat.add(full.findings)
    (ring,) = [m for m in heat.maps() if m["name"] == "ring"]
    assert ring["findings"] == full.total == 816
    # each finding covers one chunk (32 elements) of one slot
    f = full.findings
    per_element = np.zeros(8 * 32, dtype=np.int64)
    buf = next(b for b in full.meta.buffers if b.name == "ring")
    for addr, size in zip(f["addr"].tolist(), f["size"].tolist()):
        lo = (addr - buf.base) // buf.itemsize
        per_element[lo : (addr + size - buf.base - 1) // buf.itemsize + 1] += 1
    top = int(per_element.max())
    assert ring["hottest"][0].endswith(f": {top:,}")
    # rendered from a report that kept only examples: said to be a sample
    assert "Counted from the findings the report kept" in page_of(tracerace.check(path))


def many_groups_report(n: int) -> Report:
    """``n`` raw findings, each at a pair of sites of its own: ``n`` groups."""
    f = empty_findings(n)
    f["kind"] = 0
    f["row"] = np.arange(n) * 2 + 1
    f["prev_row"] = np.arange(n) * 2
    f["block"], f["prev_block"] = 1, 0
    f["op"], f["prev_op"] = 0, 1
    f["site"] = np.arange(n) * 2 + 1
    f["prev_site"] = np.arange(n) * 2
    f["addr"] = 0x1000 + 4 * (np.arange(n) % 1024)
    f["size"] = 4
    f["bar_obj"] = f["bar_gen"] = f["prev_bar_obj"] = f["prev_bar_gen"] = -1
    sites = tuple(f"k.cu:{i} op" for i in range(2 * n))
    meta = TraceMeta(
        path=None,
        sites=sites,
        buffers=(tracerace.trace.meta.Buffer("out", 0, 0x1000, (32, 32), 4),),
    )
    return Report.from_result(CheckResult(2 * n, f), meta, make_options(max_reports="all"))


def test_page_stays_small_for_a_hundred_thousand_hazards():
    report = many_groups_report(100_000)
    page = page_of(report)
    assert len(page.encode()) < 1_500_000
    assert page.count('<section class="group') == html.DETAIL_GROUPS
    assert page.count("<tr class=") == html.TABLE_GROUPS
    unlisted = 100_000 - html.DETAIL_GROUPS - html.TABLE_GROUPS
    assert f"{unlisted:,} more shown groups are not listed" in page
    assert "100,000 hazards (100,000 errors, 0 warnings) in 100,000 groups" in page


# -- in a browser ----------------------------------------------------------------------


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def browse(page: Path, tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            chromium(),
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            "--enable-logging=stderr",
            "--log-level=0",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1280,1800",
            *extra,
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


def console_messages(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_the_console_check_sees_a_script_error(tmp_path):
    """The check below would notice a page error: a broken page shows one."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    run = browse(bad, tmp_path, "--dump-dom")
    assert any("undefinedFunction" in m for m in console_messages(run.stderr))


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_incident_pages_render_in_chromium(tmp_path, name):
    from PIL import Image

    path = SCENARIOS[name].write(tmp_path / f"{name}.arrow")
    out = tmp_path / f"{name}.html"
    assert (
        CliRunner().invoke(app, ["check", str(path), "-f", "html", "-o", str(out)]).exit_code == 1
    )
    dom = browse(out, tmp_path, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert console_messages(dom.stderr) == []
    summary = tracerace.check(path).summary_line()
    assert f'id="summary" class="summary errors">{summary}<' in dom.stdout
    assert '<svg class="timeline-svg"' in dom.stdout and "<circle" in dom.stdout
    shot = tmp_path / f"{name}.png"
    run = browse(out, tmp_path, f"--screenshot={shot}")
    assert run.returncode == 0 and console_messages(run.stderr) == []
    image = Image.open(shot).convert("RGB")
    colors = image.getcolors(maxcolors=1 << 20)
    assert colors is not None and len(colors) > 50  # text, marks, colours
    white = sum(n for n, rgb in colors if min(rgb) >= 245)
    assert white < 0.97 * image.width * image.height  # not a blank page


def test_hostile_page_runs_nothing_in_chromium(tmp_path):
    path = hostile_trace(tmp_path)
    out = tmp_path / "h.html"
    CliRunner().invoke(app, ["check", str(path), "-f", "html", "-o", str(out)])
    dom = browse(out, tmp_path, "--dump-dom")
    assert console_messages(dom.stderr) == []
    assert (
        "<title>tracerace report" in dom.stdout and "pwned" not in dom.stdout.split("</title>")[0]
    )
    assert "&lt;script&gt;document.title='pwned'" in dom.stdout


def test_source_lines_around_both_sites_from_the_source_root(tmp_path):
    source = tmp_path / "kern.cu"
    source.write_text("".join(f"line {n} of the kernel\n" for n in range(1, 21)))
    t = Trace().init(0, 0, addr=0, size=4, site=0)
    t.write(0, 0, addr=0, size=4, site=1).read(1, 0, addr=0, size=4, site=2)
    table = make_table(t.columns(), sites=["kern.cu:1 init", "kern.cu:5 st", "kern.cu:12 ld"])
    path = tmp_path / "t.arrow"
    import pyarrow.feather as feather

    feather.write_feather(table, str(path))
    report = tracerace.check(str(path))
    out = io.StringIO()
    render(report, "html", out, source_roots=[tmp_path])
    page = out.getvalue()
    assert '<span class="line hl">    5  line 5 of the kernel</span>\n' in page
    assert '<span class="line hl">   12  line 12 of the kernel</span>\n' in page
    assert '<span class="line">    9  line 9 of the kernel</span>\n' in page
    assert "line 16 of" not in page
    assert "line 5 of the kernel" not in page_of(report)  # no root: nothing read
    source.unlink()
    out = io.StringIO()
    render(report, "html", out, source_roots=[tmp_path])
    assert "line 5 of the kernel" not in out.getvalue()


def test_a_group_of_one_access_labels_its_snippet_access(tmp_path):
    (tmp_path / "k.cu").write_text("".join(f"line {n}\n" for n in range(1, 10)))
    t = Trace().read(0, 0, addr=0x40, size=4, site=0)
    table = make_table(t.columns(), sites=["k.cu:4 ld"])
    path = tmp_path / "u.arrow"
    import pyarrow.feather as feather

    feather.write_feather(table, str(path))
    report = tracerace.check(str(path))
    assert [g.kind for g in report.shown_groups] == ["uninit_read"]
    out = io.StringIO()
    render(report, "html", out, source_roots=[tmp_path])
    page = out.getvalue()
    assert '<div class="muted">access: <code>k.cu:4</code></div>' in page
    assert "later: <code>" not in page


# -- what a reader sees: geometry after layout ---------------------------------------------

MEASURE = """<script>
(function () {
  function box(r) { return [r.left, r.top, r.right, r.bottom]; }
  var out = {snippets: [], timelines: []};
  document.querySelectorAll("pre.src").forEach(function (pre) {
    var range = document.createRange();
    range.selectNodeContents(pre);
    var tops = [];
    Array.prototype.forEach.call(range.getClientRects(), function (r) {
      if (r.width > 0) { tops.push(r.top); }
    });
    out.snippets.push({tops: tops,
                       lines: pre.querySelectorAll("span.line").length,
                       scrolls: pre.scrollWidth > pre.clientWidth + 1});
  });
  document.querySelectorAll("div.timeline").forEach(function (div) {
    var svg = div.querySelector("svg");
    var texts = [];
    svg.querySelectorAll("text").forEach(function (t) {
      texts.push({text: t.textContent, box: box(t.getBoundingClientRect())});
    });
    var marks = [];
    svg.querySelectorAll(".earlier, .later").forEach(function (m) {
      marks.push(box(m.getBoundingClientRect()));
    });
    out.timelines.push({view: box(div.getBoundingClientRect()),
                        svg: box(svg.getBoundingClientRect()),
                        texts: texts, accesses: marks});
  });
  var pre = document.createElement("pre");
  pre.id = "measured";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>"""


def measured(page: Path, tmp_path: Path) -> dict:
    """Boxes of the page's snippets and timelines as chromium lays them out (a
    copy of the page with its no-script policy removed and a measuring script
    added)."""
    import html as html_lib
    import json

    text = page.read_text()
    text = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text)
    copy = tmp_path / f"measure-{page.name}"
    copy.write_text(text.replace("</body>", MEASURE + "</body>"))
    run = browse(copy, tmp_path, "--dump-dom")
    assert run.returncode == 0 and console_messages(run.stderr) == [], run.stderr[-2000:]
    found = re.search(r'<pre id="measured">(.*?)</pre>', run.stdout, re.S)
    assert found, run.stdout[-2000:]
    return json.loads(html_lib.unescape(found.group(1)))


def rows(tops: list[float]) -> int:
    """Text rows, from the tops of a block's text boxes: boxes of one row lie
    within a few pixels of each other (an inline block sits a little apart)."""
    out, last = 0, None
    for top in sorted(tops):
        if last is None or top - last > 6:
            out += 1
            last = top
    return out


def overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] - 0.5 and b[0] < a[2] - 0.5 and a[1] < b[3] - 0.5 and b[1] < a[3] - 0.5


def inside(a: list[float], b: list[float]) -> bool:
    return a[0] >= b[0] - 0.5 and a[1] >= b[1] - 0.5 and a[2] <= b[2] + 0.5 and a[3] <= b[3] + 0.5


def fake_sources(folder: Path, sites: tuple[str, ...]) -> Path:
    """Source files for every ``file:line`` a scenario's sites name, under ``folder``."""
    from tracerace.report.formats.sarif import SITE_RE

    folder.mkdir()
    for site in sites:
        m = SITE_RE.match(site)
        if m and "/" not in m["file"]:
            (folder / m["file"]).write_text(
                "".join(f"    statement({n}); // line {n} of {m['file']}\n" for n in range(1, 300))
            )
    return folder


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_reader_sees_snippet_lines_on_rows_and_timelines_that_fit(tmp_path, name):
    path = SCENARIOS[name].write(tmp_path / f"{name}.arrow")
    report = tracerace.check(path)
    root = fake_sources(tmp_path / "src", report.meta.sites)
    out = tmp_path / f"{name}.html"
    result = CliRunner().invoke(
        app, ["check", str(path), "-f", "html", "-o", str(out), "--source-root", str(root)]
    )
    assert result.exit_code == 1, result.output
    seen = measured(out, tmp_path)
    assert seen["snippets"] and seen["timelines"]
    for snippet in seen["snippets"]:
        # every site is at line 4 or later of its (fake) file: a full snippet
        assert rows(snippet["tops"]) == snippet["lines"] == 2 * html.SOURCE_CONTEXT + 1, snippet
        assert not snippet["scrolls"]
    for t in seen["timelines"]:
        # the whole picture is in view (no scrolling to find the later access)
        assert inside(t["svg"], t["view"]), (t["svg"], t["view"])
        assert t["accesses"]
        for mark in t["accesses"]:
            assert inside(mark, t["view"])
        texts = t["texts"]
        for x in texts:
            assert inside(x["box"], t["svg"]), (x["text"], x["box"], t["svg"])
        for i, a in enumerate(texts):
            for b in texts[i + 1 :]:
                assert not overlap(a["box"], b["box"]), (a, b)


def estimated_boxes(picture: dict) -> list[tuple[str, tuple[float, float, float, float]]]:
    """The layout's own estimate of each text's box (what it promises to keep apart)."""
    sizes = {
        "lanelabel": html.NAME_PX,
        "evlabel": html.EVENT_PX,
        "rowlabel": html.ROW_PX,
        "gap": html.EVENT_PX,
    }
    out = []
    texts = list(picture["texts"])
    if picture["missing"]:
        m = picture["missing"]
        texts.append(
            {
                "x": m["tx"],
                "y": m["ty"],
                "text": m["label"],
                "cls": "missinglabel",
                "anchor": "middle",
            }
        )
    for t in texts:
        size = sizes.get(t["cls"], html.EDGE_PX)
        w = html.text_width(t["text"], size)
        left = t["x"] - w / 2 if t.get("anchor") == "middle" else t["x"]
        out.append((t["text"], (left, t["y"] - size, left + w, t["y"] + size * 0.25)))
    return out


@pytest.mark.parametrize("events, same_lane", [(4, True), (40, True), (40, False), (3, False)])
def test_timeline_layout_keeps_texts_apart_and_both_accesses_in_view(events, same_lane):
    from tracerace.report.timeline import Event, Lane

    ops = [
        "bar_sync",
        "cp_async_commit",
        "cp_async_wait",
        "mbar_arrive",
        "fence_proxy_async",
        "write",
    ]
    first = Lane(
        0,
        0,
        0,
        "block (1023,1023,63) thread (1023,1023,63) (warp 31, lane 31)",
        skipped=123_456_789,
        dropped=987_654,
    )
    second = first if same_lane else Lane(0, 1, 0, "block (0,0,1) thread (0,0,0)")
    lanes = [first] if same_lane else [first, second]
    base = 10**12
    for i in range(events):
        lane = lanes[i % len(lanes)]
        lane.events.append(Event(base + 3 * i, ops[i % len(ops)], i * 7, "k.cu:1 x"))
    first.events.insert(1, Event(base + 1, "cp_async", 0, "k.cu:2", role="earlier"))
    second.events.append(Event(base + 3 * events, "write", 0, "k.cu:3", role="later"))
    group = type("G", (), {"kind": "async_inflight"})()
    picture = html.timeline_layout(group, lanes)
    assert picture["width"] <= html.MAX_WIDTH
    roles = {m["role"]: m for m in picture["marks"] if m["role"]}
    assert set(roles) == {"earlier", "later"}
    for m in roles.values():
        assert 0 < m["x"] < picture["width"] and 0 < m["y"] < picture["height"]
    boxes = estimated_boxes(picture)
    for text, (x0, y0, x1, y1) in boxes:
        assert 0 <= x0 and x1 <= picture["width"] and 0 <= y0 and y1 <= picture["height"], text
    for i, (ta, a) in enumerate(boxes):
        for tb, b in boxes[i + 1 :]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (ta, tb)


def test_timeline_shows_an_agent_name_whole_when_the_picture_is_narrow():
    from tracerace.report.timeline import Event, Lane

    lanes = [
        Lane(0, 0, 4, "block (0,0,0) thread (4,0,0)"),
        Lane(0, 0, 0, "block (0,0,0) thread (0,0,0)", skipped=1),
    ]
    lanes[0].events += [Event(27, "bar_sync", 0, None), Event(70, "write", 0, None, "earlier")]
    lanes[1].events += [Event(19, "bar_sync", 0, None), Event(78, "read", 0, None, "later")]
    picture = html.timeline_layout(type("G", (), {"kind": "raw"})(), lanes)
    names = [t["text"] for t in picture["texts"] if t["cls"] == "lanelabel"]
    assert names == [
        "block (0,0,0) thread (4,0,0)",
        "block (0,0,0) thread (0,0,0)  (1 other access not shown)",
    ]
