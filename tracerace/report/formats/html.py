"""HTML: one self-contained page a person opens in a browser (no server, no network).

The page holds the summary; per shown group the text report's words (sites,
accesses, bytes, why, fix), the source lines around both sites when their
file lies inside a source root the caller names (:mod:`tracerace.report.sources`;
none by default, and then no file is read), and a timeline (inline SVG) of the agents around the two
accesses, read back from the trace (:mod:`tracerace.report.timeline`): the barriers,
waits, signals, fences and copies between them, and a dashed line where the
ordering edge is missing; then, for each named buffer, a heatmap of the
elements involved in hazards, rows by the leading dimensions (``head, row``)
and columns by the last (a PNG in a data URI).

Exact where it matters, bounded in size: the heatmaps count every finding
the check hands over (:class:`FindingsWriter`, a findings sink, like the
Arrow output's), binned into at most :data:`HEAT_ROWS` x :data:`HEAT_COLS`
cells; only the first :data:`DETAIL_GROUPS` groups get source and timeline,
the rest of the shown groups (at most :data:`TABLE_GROUPS`) a table row; the
counts are the report's exact totals. A report rendered without a check's
sink (``output.render(report, "html")``) draws the heatmaps from the
findings the report kept and says so.

Everything from the trace (sites, buffer and kernel names, producer text) is
data: Jinja2 escapes it, and the page's Content-Security-Policy allows no
script at all, so a site holding ``<script>`` shows that text and runs nothing.
A site (and the producer, a buffer's name) is cut to :data:`SITE_CHARS`
characters wherever the page names it (:func:`bounded`), so its size cannot
blow the page up.
"""

from __future__ import annotations

import io
import math
import os
import struct
import zlib
from base64 import b64encode
from collections.abc import Iterable
from dataclasses import replace
from typing import IO, Any

import numpy as np

from ...trace.meta import Buffer, TraceMeta
from ...trace.ops import Space
from ...version import tool_version
from ..model import HazardGroup, ReportModel
from ..sources import SourceRoots
from .sarif import SITE_RE

NAME = "html"
BINARY = False

DETAIL_GROUPS = 20
"""Groups shown with source context and a timeline."""
TABLE_GROUPS = 1000
"""Shown groups listed (one table row each) past the detailed ones."""
HEAT_ROWS, HEAT_COLS = 96, 128
"""Most cells of a heatmap; larger buffers are binned (a cell sums its elements)."""
HEAT_BUFFERS = 8
"""Buffers with a heatmap (those with the most findings)."""
HEAT_ELEMENTS = 1 << 20
"""Per-element counts up to this many elements; a larger buffer is counted in
this many bins of consecutive elements."""
SOURCE_CONTEXT = 3
"""Source lines shown before and after a site's line."""
SOURCE_LINE_CHARS = 400
"""Characters shown of one source line; the rest is cut, with a marker."""
SITE_CHARS = 300
"""Characters shown of one site (and of the producer, of a buffer's name); the
rest is cut, with a marker."""
WARNING_CHARS = 1000
"""Characters shown of one of the trace's warnings; the rest is cut, with a marker."""


TAKES_SOURCE_ROOTS = True
"""``write`` and ``FindingsWriter`` take ``source_roots`` (the files source lines come from)."""


def write(
    report: ReportModel,
    stream: IO[str],
    *,
    source_roots: SourceRoots | Iterable[str | os.PathLike[str]] = (),
) -> None:
    """The page of ``report``, heatmaps from the findings it kept; source lines
    only from files inside ``source_roots`` (none: no file is read)."""
    heat = Heat(report.meta)
    heat.add(report.findings)
    stream.write(
        render_page(
            report,
            heat,
            exact=report.keeps_every_finding,
            source_roots=SourceRoots.of(source_roots),
        )
    )


class FindingsWriter:
    """Counts every finding of a check for the heatmaps (``api.check(..., sink=...)``);
    :meth:`close` with the finished report writes the page."""

    takes_report = True

    def __init__(
        self,
        out: Any,
        *,
        file: bool,
        source_roots: SourceRoots | Iterable[str | os.PathLike[str]] = (),
    ) -> None:
        self._out = out
        self._heat: Heat | None = None
        self._roots = SourceRoots.of(source_roots)

    @property
    def opened(self) -> bool:
        return self._heat is not None

    def open(self, meta: TraceMeta, events: int | None = None) -> None:
        self._heat = Heat(meta)

    def write(self, findings: np.ndarray, groups: np.ndarray) -> None:
        self._heat.add(findings)

    def close(self, report: ReportModel | None = None, exact: bool = True) -> None:
        if report is None:
            return
        page = render_page(report, self._heat, exact=exact, source_roots=self._roots)
        if isinstance(self._out, (io.RawIOBase, io.BufferedIOBase)) or "b" in getattr(
            self._out, "mode", ""
        ):
            self._out.write(page.encode("utf-8"))
        else:
            self._out.write(page)


# -- heatmaps -----------------------------------------------------------------------


class Heat:
    """Findings per element of each named buffer, exact, in bounded memory."""

    def __init__(self, meta: TraceMeta) -> None:
        self.meta = meta
        self.buffers = [b for b in meta.buffers if b.nbytes_span > 0 and b.shape]
        self._diff = []
        self._bin = []
        for b in self.buffers:
            n = math.prod(b.shape)
            per = max(1, -(-n // HEAT_ELEMENTS))
            self._bin.append(per)
            self._diff.append(np.zeros(-(-n // per) + 1, dtype=np.int64))
        self.findings = np.zeros(len(self.buffers), dtype=np.int64)

    def add(self, f: np.ndarray) -> None:
        if len(f) == 0 or not self.buffers:
            return
        has = f["size"] > 0
        space, addr, size, launch = f["space"], f["addr"], f["size"], f["launch"]
        taken = np.zeros(len(f), dtype=bool)
        for i, b in enumerate(self.buffers):
            base, span = np.uint64(b.base), np.uint64(b.nbytes_span)
            mask = has & ~taken & (space == b.space) & (addr >= base) & (addr - base < span)
            if b.launch is not None:
                mask &= launch == b.launch
            rows = np.flatnonzero(mask)
            if rows.size == 0:
                continue
            taken[rows] = True
            first = _flat(b, (addr[rows] - base).astype(np.int64))
            end = np.minimum((addr[rows] + size[rows] - base).astype(np.int64), b.nbytes_span)
            last = _flat(b, end - 1)
            lo, hi = np.minimum(first, last), np.maximum(first, last)
            per = self._bin[i]
            np.add.at(self._diff[i], lo // per, 1)
            np.add.at(self._diff[i], hi // per + 1, -1)
            self.findings[i] += rows.size

    def maps(self) -> list[dict[str, Any]]:
        """Per buffer with findings (most first): name, shape, space, findings,
        the grid as a PNG data URI and axis words."""
        out = []
        order = np.argsort(-self.findings, kind="stable")[:HEAT_BUFFERS]
        for i in order.tolist():
            if self.findings[i] == 0:
                continue
            b = self.buffers[i]
            counts = np.cumsum(self._diff[i])[:-1]
            out.append(_heatmap(b, counts, self._bin[i], int(self.findings[i])))
        return out


def _flat(b: Buffer, offset: np.ndarray) -> np.ndarray:
    """Logical (row-major) element index of byte offsets into ``b``."""
    elem = offset // b.itemsize
    strides = b.element_strides
    flat = np.zeros_like(elem)
    rest = elem
    mult = 1
    logical = [1] * len(b.shape)
    for d in range(len(b.shape) - 1, -1, -1):
        logical[d] = mult
        mult *= b.shape[d]
    for d in sorted(range(len(b.shape)), key=lambda d: -strides[d]):
        if strides[d] == 0:
            continue
        q, rest = np.divmod(rest, strides[d])
        flat += np.minimum(q, b.shape[d] - 1) * logical[d]
    return flat


def _heatmap(b: Buffer, counts: np.ndarray, per: int, findings: int) -> dict[str, Any]:
    b = replace(b, name=shorten(b.name, SITE_CHARS))
    cols = b.shape[-1]
    n = math.prod(b.shape)
    if per > 1:  # bins of consecutive elements: lay them out as rows of one bin each
        grid = counts[None, :]
        rows_label, cols_label = "", f"elements 0..{n - 1} in {len(counts)} bins of {per}"
    else:
        grid = counts.reshape(-1, cols)
        lead = " x ".join(str(d) for d in b.shape[:-1])
        rows_label = (
            f"rows: [{lead}] (index {', '.join(f'i{k}' for k in range(len(b.shape) - 1))})"
            if len(b.shape) > 1
            else ""
        )
        cols_label = f"columns: last index 0..{cols - 1}"
    grid = _bin2d(grid, HEAT_ROWS, HEAT_COLS)
    hot = np.argsort(-counts, kind="stable")[:3]
    hottest = []
    for e in hot.tolist():
        if counts[e] == 0:
            break
        index = np.unravel_index(e * per, b.shape) if per == 1 else None
        name = (
            f"{b.name}[{', '.join(map(str, index))}]"
            if index is not None
            else f"{b.name} elements {e * per}..{min(n, (e + 1) * per) - 1}"
        )
        hottest.append(f"{name}: {int(counts[e]):,}")
    space = Space(b.space).name.lower() if b.space in Space._value2member_map_ else str(b.space)
    return {
        "name": b.name,
        "shape": " x ".join(map(str, b.shape)),
        "space": space,
        "findings": findings,
        "involved": int(np.count_nonzero(counts)) * per if per == 1 else None,
        "elements": n,
        "png": _png_uri(grid),
        "rows": grid.shape[0],
        "cols": grid.shape[1],
        "rows_label": rows_label,
        "cols_label": cols_label,
        "hottest": hottest,
    }


def _bin2d(grid: np.ndarray, max_rows: int, max_cols: int) -> np.ndarray:
    """Sum ``grid`` into at most ``max_rows`` x ``max_cols`` cells."""
    r, c = grid.shape
    fr, fc = -(-r // max_rows), -(-c // max_cols)
    if fr == 1 and fc == 1:
        return grid
    padded = np.zeros((-(-r // fr) * fr, -(-c // fc) * fc), dtype=grid.dtype)
    padded[:r, :c] = grid
    return padded.reshape(padded.shape[0] // fr, fr, padded.shape[1] // fc, fc).sum(axis=(1, 3))


_LOW = np.array([255, 247, 214], dtype=np.float64)  # pale yellow
_HIGH = np.array([189, 0, 38], dtype=np.float64)  # dark red


def _png_uri(grid: np.ndarray) -> str:
    """A PNG (data URI) of ``grid``: white for 0, pale yellow to dark red by log count."""
    g = grid.astype(np.float64)
    top = g.max() if g.size else 0
    t = np.log1p(g) / math.log1p(top) if top > 0 else np.zeros_like(g)
    rgb = _LOW[None, None, :] + (t[..., None] * (_HIGH - _LOW)[None, None, :])
    rgb[g == 0] = 255
    pixels = rgb.round().astype(np.uint8)
    h, w = pixels.shape[:2]
    raw = b"".join(b"\x00" + pixels[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
        )

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )
    return "data:image/png;base64," + b64encode(png).decode("ascii")


# -- source context -----------------------------------------------------------------


class Sources:
    """Lines around the sites, from files inside the source roots only
    (:class:`~tracerace.report.sources.SourceRoots`: with no root, nothing is read).
    One file is held at a time: memory is bounded by
    :data:`~tracerace.report.sources.MAX_SOURCE_BYTES`, whatever the sites name."""

    def __init__(self, roots: SourceRoots) -> None:
        self._roots = roots
        self._contexts: dict[tuple[str, int], dict[str, Any] | None] = {}
        self._unreadable: set[str] = set()

    def context(self, site: str | None) -> dict[str, Any] | None:
        m = SITE_RE.match(site) if site and self._roots else None
        if m is None:
            return None
        name, line = m["file"], int(m["line"])
        key = (name, line)
        if key not in self._contexts:
            self._contexts[key] = self._read(name, line)
        return self._contexts[key]

    def _read(self, name: str, line: int) -> dict[str, Any] | None:
        if name in self._unreadable:
            return None
        data = self._roots.read(name)
        if data is None:
            self._unreadable.add(name)
            return None
        lines = data.decode("utf-8", errors="replace").splitlines()
        if not 1 <= line <= len(lines):
            return None
        lo, hi = max(1, line - SOURCE_CONTEXT), min(len(lines), line + SOURCE_CONTEXT)
        return {
            "file": name,
            "line": line,
            "lines": [
                (n, shorten(lines[n - 1], SOURCE_LINE_CHARS), n == line) for n in range(lo, hi + 1)
            ],
        }


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\u2026 [{len(text) - limit:,} more characters not shown]"


def bounded(report: ReportModel) -> ReportModel:
    """``report`` over metadata whose text from the trace is cut: sites, the
    producer and buffer names to :data:`SITE_CHARS`, warnings to
    :data:`WARNING_CHARS`. So a huge site adds a few hundred characters to
    each place the page names it, never its whole length."""
    meta = report.meta
    texts = [*meta.sites, meta.producer or "", *(b.name for b in meta.buffers)]
    if all(len(t) <= SITE_CHARS for t in texts) and all(
        len(w) <= WARNING_CHARS for w in meta.warnings
    ):
        return report
    meta = replace(
        meta,
        sites=tuple(shorten(s, SITE_CHARS) for s in meta.sites),
        producer=None if meta.producer is None else shorten(meta.producer, SITE_CHARS),
        buffers=tuple(replace(b, name=shorten(b.name, SITE_CHARS)) for b in meta.buffers),
        warnings=tuple(shorten(w, WARNING_CHARS) for w in meta.warnings),
    )
    return replace(report, meta=meta)


# -- timelines ------------------------------------------------------------------------
#
# The picture is laid out here, not by the browser: every text's box is
# estimated from its length (monospace fonts advance about 0.6 em a character;
# CHAR_EM leaves a margin), so the layout can promise what a reader needs: no
# text over another, everything inside the picture, and the two accesses in a
# picture at most MAX_WIDTH wide (no scrolling to find the later one).
#
# A lane, top to bottom: the agent's name; a band for the missing edge's
# label; the events (marks) on the lane's line; their names; their rows.

MAX_WIDTH = 1120
"""Widest picture (pixels): fits the page's group box in a 1280-pixel window."""
MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 16, 16, 6, 4
LANE_HEIGHT = 106
NAME_Y, EDGE_Y, ARC_Y, MARK_Y, EVENT_Y, ROW_Y = 15, 33, 40, 58, 84, 98
"""Offsets from a lane's top: the baselines of its name, of the missing edge's
label and of its events' names and rows; the peak of a missing edge within
one lane; the lane's line (mark centres)."""
CHAR_EM = 0.64
"""Estimated advance of a monospace character, in em."""
NAME_PX, EVENT_PX, ROW_PX, EDGE_PX = 12, 11, 10, 11
"""Font sizes (pixels) of the lane names, event names, row numbers and the
missing edge's label; the stylesheet's ``svg`` rules use the same."""
EVENT_CHARS = 18
"""Characters of an event's name; a longer one is cut with an ellipsis."""
MIN_SLOT, SLOT_PAD, GAP = 56, 14, 30
"""Narrowest column, space between two columns' texts, and the width of a
column standing for events left out between two shown ones."""

_SYNC_SHAPES = {
    "bar_sync": "bar",
    "bar_arrive": "bar",
    "warp_sync": "bar",
    "wait": "wait",
    "mbar_wait": "wait",
    "cp_async_wait": "wait",
    "bulk_wait": "wait",
    "acquire": "wait",
    "signal": "signal",
    "release": "signal",
    "mbar_arrive": "signal",
    "fence": "fence",
    "fence_proxy_async": "fence",
}


_EDGE_LABELS = {
    "async_inflight": "copy still in flight",
    "proxy_fence": "no fence.proxy.async",
    "sync_alias": "crossed hand-off",
}


def text_width(text: str, size: int) -> float:
    """Estimated width (pixels) of ``text`` in the page's monospace font."""
    return len(text) * size * CHAR_EM


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "\u2026"


def _event_label(e: Any) -> str:
    access = e.op in ("read", "write", "atomic", "init")
    return _cut(e.op if e.obj == 0 or access else f"{e.op} {e.obj}", EVENT_CHARS)


def _columns(rows: list[int], keep: set[int], slot: int, room: int) -> list[tuple[str, Any]]:
    """The picture's columns, left to right: ("row", row) for a shown event,
    ("gap", rows) for a run of rows left out. The rows in ``keep`` are always
    shown; the others nearest to them (by rank) while the columns fit ``room``."""
    rank = {row: i for i, row in enumerate(rows)}
    anchors = [rank[r] for r in keep if r in rank] or [len(rows) - 1]
    by_distance = sorted(range(len(rows)), key=lambda i: (min(abs(i - a) for a in anchors), i))
    chosen: set[int] = set()
    for i in by_distance:
        trial = chosen | {i}
        if chosen and _width(trial, len(rows), slot) > room and i not in anchors:
            break
        chosen = trial
    out: list[tuple[str, Any]] = []
    run: list[int] = []
    for i, row in enumerate(rows):
        if i in chosen:
            if run:
                out.append(("gap", run))
                run = []
            out.append(("row", row))
        else:
            run.append(row)
    if run:
        out.append(("gap", run))
    return out


def _width(chosen: set[int], n: int, slot: int) -> int:
    gaps = sum(1 for i in range(n) if i not in chosen and (i == 0 or i - 1 in chosen))
    return len(chosen) * slot + gaps * GAP


def timeline_layout(group: HazardGroup, lanes: list) -> dict[str, Any]:
    """Lanes (agents), events in row order one column each, the two accesses
    highlighted, the missing edge dashed; laid out so that no text covers
    another and all lies inside the picture (see the comment above)."""
    events = [e for lane in lanes for e in lane.events]
    rows = sorted({e.row for e in events})
    slot = MIN_SLOT
    for e in events:
        slot = max(
            slot,
            math.ceil(text_width(_event_label(e), EVENT_PX)) + SLOT_PAD,
            math.ceil(text_width(f"{e.row:,}", ROW_PX)) + SLOT_PAD,
        )
    room = MAX_WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    columns = _columns(rows, {e.row for e in events if e.role}, slot, room)
    x_of: dict[int, int] = {}
    gaps: list[tuple[int, set[int]]] = []
    x = MARGIN_LEFT
    for kind, what in columns:
        if kind == "row":
            x_of[what] = x + slot // 2
            x += slot
        else:
            gaps.append((x + GAP // 2, set(what)))
            x += GAP
    names = []
    for lane in lanes:
        hidden = sum(1 for e in lane.events if e.row not in x_of)
        extra = []
        if lane.skipped:
            extra.append(_count(lane.skipped, "other access", "other accesses") + " not shown")
        if lane.dropped + hidden:
            extra.append(_count(lane.dropped + hidden, "event", "events") + " not shown")
        names.append(lane.label + (f"  ({'; '.join(extra)})" if extra else ""))
    kind_label = _EDGE_LABELS.get(group.kind, "unordered")
    width = max(
        x + MARGIN_RIGHT,
        max((math.ceil(text_width(n, NAME_PX)) + 2 * 8 for n in names), default=0),
        math.ceil(text_width(kind_label, EDGE_PX)) + 2 * 8,
    )
    width = min(width, MAX_WIDTH)
    name_chars = math.floor((width - 2 * 8) / (NAME_PX * CHAR_EM) + 1e-9)
    height = MARGIN_TOP + LANE_HEIGHT * len(lanes) + MARGIN_BOTTOM
    marks, texts, lines = [], [], []
    points: dict[str, tuple[int, int, int]] = {}
    for li, lane in enumerate(lanes):
        top = MARGIN_TOP + LANE_HEIGHT * li
        y = top + MARK_Y
        lines.append({"x1": MARGIN_LEFT - 10, "y1": y, "x2": width - 6, "y2": y, "cls": "lane"})
        texts.append(
            {"x": 8, "y": top + NAME_Y, "text": _cut(names[li], name_chars), "cls": "lanelabel"}
        )
        for e in lane.events:
            if e.row not in x_of:
                continue
            ex = x_of[e.row]
            kind = (
                "access"
                if e.op in ("read", "write", "atomic", "init")
                else _SYNC_SHAPES.get(e.op, "copy")
            )
            title = (
                f"row {e.row:,}: {e.op}"
                + (f" on {e.obj}" if e.obj else "")
                + (f" at {e.site}" if e.site else "")
            )
            marks.append({"x": ex, "y": y, "kind": kind, "role": e.role or "", "title": title})
            texts.append(
                {
                    "x": ex,
                    "y": top + EVENT_Y,
                    "text": _event_label(e),
                    "cls": "evlabel",
                    "anchor": "middle",
                }
            )
            texts.append(
                {
                    "x": ex,
                    "y": top + ROW_Y,
                    "text": f"{e.row:,}",
                    "cls": "rowlabel",
                    "anchor": "middle",
                }
            )
            if e.role:
                points[e.role] = (ex, y, top)
        lane_rows = {e.row for e in lane.events}
        for gx, hidden_rows in gaps:
            if lane_rows & hidden_rows:
                texts.append(
                    {"x": gx, "y": y + 4, "text": "\u22ef", "cls": "gap", "anchor": "middle"}
                )
    missing = None
    if "earlier" in points and "later" in points:
        (x1, y1, _), (x2, y2, top2) = points["earlier"], points["later"]
        half = text_width(kind_label, EDGE_PX) / 2
        if y1 == y2:
            tx = (x1 + x2) / 2
            path = f"M {x1} {y1} Q {(x1 + x2) // 2} {2 * (top2 + ARC_Y) - y1} {x2} {y2}"
        else:  # the label sits in the later lane's band, beside where the line crosses it
            band = top2 + EDGE_Y - EDGE_PX // 3
            tx = x1 + (x2 - x1) * (band - y1) / (y2 - y1) + half + 6
            path = f"M {x1} {y1} L {x2} {y2}"
        tx = int(min(max(tx, half + 4), width - half - 4))
        missing = {"path": path, "label": kind_label, "tx": tx, "ty": top2 + EDGE_Y}
    return {
        "width": width,
        "height": height,
        "marks": marks,
        "texts": texts,
        "lines": lines,
        "missing": missing,
        "empty": not rows,
    }


def _windows(groups: list[HazardGroup]) -> list:
    from ..timeline import Window

    out = []
    for g in groups:
        ex = g.example
        first = ex.first
        out.append(
            Window(
                ex.second.launch,
                (ex.second.row, ex.second.block, ex.second.thread),
                None
                if first is None or first.launch != ex.second.launch
                else (first.row, first.block, first.thread),
            )
        )
    return out


def _lanes(report: ReportModel, groups: list[HazardGroup]) -> list[list] | None:
    """The timelines of ``groups`` from the trace file, or None when it cannot be read."""
    from ...errors import TraceError
    from ..timeline import timelines

    path = report.meta.path
    if not groups or not path or not os.path.isfile(path):
        return None
    coords = report.meta.coords
    try:
        return timelines(
            path,
            _windows(groups),
            report.meta,
            lambda launch, block, thread: coords.agent(launch, block, thread),
        )
    except (TraceError, OSError):
        return None


# -- the page -------------------------------------------------------------------------


def _snippets(sources: Sources, example: Any) -> list[tuple[str, dict[str, Any]]]:
    """(label, source context) of the example's sites that have one, labelled
    as the fields above them are: ``earlier`` and ``later``, or ``access`` for
    a hazard of one access (``uninit_read``)."""
    if example.first is None:
        sites = [("access", example.second.site)]
    else:
        sites = [("earlier", example.first.site), ("later", example.second.site)]
    out = []
    for label, site in sites:
        context = sources.context(site)
        if context is not None:
            out.append((label, context))
    return out


def render_page(
    report: ReportModel, heat: Heat, *, exact: bool, source_roots: SourceRoots | None = None
) -> str:
    import jinja2

    report = bounded(report)
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("tracerace.report.formats", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    shown = list(report.shown_groups)
    detailed = shown[:DETAIL_GROUPS]
    lanes = _lanes(report, detailed)
    sources = Sources(source_roots if source_roots is not None else SourceRoots())
    groups = []
    for i, g in enumerate(detailed):
        ex = g.example
        hint = g.hint
        timeline = timeline_layout(g, lanes[i]) if lanes is not None else None
        groups.append(
            {
                "id": g.id,
                "kind": g.kind,
                "severity": g.severity,
                "count": g.count,
                "first_site": g.first_site,
                "second_site": g.second_site,
                "earlier": ex.first.text if ex.first is not None else None,
                "later": ex.second.text,
                "bytes": g.bytes_text() if ex.location is not None else None,
                "why": ex.explanation,
                "fix": hint.text if hint is not None else None,
                "linked": g.linked,
                "sources": _snippets(sources, ex),
                "timeline": timeline,
            }
        )
    table = [
        {
            "id": g.id,
            "kind": g.kind,
            "severity": g.severity,
            "count": g.count,
            "first_site": g.first_site,
            "second_site": g.second_site,
            "fix": g.hint.text if g.hint is not None else "",
        }
        for g in shown[DETAIL_GROUPS : DETAIL_GROUPS + TABLE_GROUPS]
    ]
    by_kind = [(k, n) for k, n in report.summary["by_kind"].items() if n]
    return env.get_template("report.html.j2").render(
        report=report,
        meta=report.meta,
        version=tool_version(),
        summary=report.summary_line(),
        by_kind=by_kind,
        omitted=report.omitted_line(),
        legend=report.legend,
        groups=groups,
        table=table,
        unlisted=max(0, len(shown) - DETAIL_GROUPS - TABLE_GROUPS),
        heatmaps=heat.maps(),
        exact=exact,
        timelines_read=lanes is not None,
        status="errors" if report.errors else ("warnings" if report.warnings else "clean"),
    )
