"""The Arrow report: one row per finding (not grouped), flat columns for pandas /
duckdb (``Report.to_arrow()``; ``tracerace check --format arrow`` writes it,
see :mod:`tracerace.report.formats.arrowfmt`).

Columns: ``group`` (the group's id: groups are numbered in the order their
first finding was found; SARIF results carry it as ``properties.group``),
``kind``, ``severity``, the later access ``row, launch, block, thread, op,
ts, site, async``, the earlier one ``first_row ... first_async`` (null for
single-access hazards), the bytes ``space, owner, addr, size, element,
location``, ``obj``, ``code``, ``reason``, ``aux``, the barrier generations
``bar_obj, bar_gen, first_bar_obj, first_bar_gen``, ``explanation``, the
fix hint ``hint`` with ``hint_site``, the site where the change goes
(:mod:`tracerace.report.hints`), and the group's link to a crossed wait
(:class:`~tracerace.report.hazards.Link`): ``linked_row, linked_obj, linked_site,
linked, linked_hint`` (null for a group without one). The columns, their
types and the schema metadata are published in
``schemas/report-v1.arrow-schema.json``.

What repeats from row to row is dictionary-encoded, so each distinct text is
stored once per output, not once per finding (10^5 findings of a few groups
repeat a few sentences 10^5 times). Names (kind, severity, op, space) and
``reason`` carry the same dictionary in every batch (every code's name);
``site``, ``first_site`` and ``linked_site`` the trace's sites; the
sentences (``explanation``, ``hint``, ``hint_site``, ``linked``,
``linked_hint``) a dictionary that grows from batch to batch, each batch's
extending the one before (an IPC dictionary delta: write with
:data:`WRITE_OPTIONS`).

Columns are built with NumPy and Arrow compute; sentences are worded once
per distinct set of the fields they read (:data:`~tracerace.report.explain.UNWORDED`).
A group whose fix is an atomic update (:attr:`~tracerace.report.model.ReportModel.updates`:
known only when every group is) gives each of its findings its group's hint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..checker.findings import FIELDS, NO_ROW
from ..checker.reasons import NAMES as REASON_NAMES
from ..trace.coords import META_LAUNCHES, launches_json
from ..trace.meta import TraceMeta
from ..trace.ops import HazardKind, Space
from .explain import ASYNC_OP_CODES, UNWORDED, explain, op_name
from .hazards import KIND_NAMES, SEVERITY_NAMES, Link
from .hints import Hint, hint
from .locations import space_name

REPORT_VERSION = "1"

_CODES = np.arange(256)
_OP_DICT = pa.array([op_name(code) for code in range(256)], pa.string())
_SPACE_DICT = pa.array([space_name(code) for code in range(256)], pa.string())
_KIND_DICT = pa.array(list(KIND_NAMES), pa.string())
_SEVERITY_DICT = pa.array(list(SEVERITY_NAMES), pa.string())
_IS_COPY = np.isin(_CODES, sorted(ASYNC_OP_CODES))
_NAME_TYPE = pa.dictionary(pa.int16(), pa.string())
_TEXT_TYPE = pa.dictionary(pa.int32(), pa.string())
WRITE_OPTIONS = pa.ipc.IpcWriteOptions(emit_dictionary_deltas=True)
"""How every writer of the report writes it: a sentence column's dictionary grows
by deltas from batch to batch."""
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_SHIFTS = np.arange(60, -1, -4, dtype=np.uint64)

# reason text by (kind, code), as an index into _REASON_TEXTS (0: none)
_REASON_TEXTS = [None]
_REASON_INDEX = np.zeros((len(KIND_NAMES), 256), dtype=np.int32)
for _kind, _names in REASON_NAMES.items():
    for _code, _text in _names.items():
        _REASON_INDEX[int(HazardKind[_kind.upper()]), _code] = len(_REASON_TEXTS)
        _REASON_TEXTS.append(_text)
_REASON_DICT = pa.array(_REASON_TEXTS[1:], pa.string())

_WORDED = [name for name in FIELDS if name not in UNWORDED and name != "prev_row"]

SCHEMA = pa.schema(
    [
        ("group", pa.int32()),
        ("kind", _NAME_TYPE),
        ("severity", _NAME_TYPE),
        ("row", pa.int64()),
        ("launch", pa.uint32()),
        ("block", pa.uint32()),
        ("thread", pa.uint32()),
        ("op", _NAME_TYPE),
        ("ts", pa.uint64()),
        ("site", _TEXT_TYPE),
        ("async", pa.bool_()),
        ("first_row", pa.int64()),
        ("first_launch", pa.uint32()),
        ("first_block", pa.uint32()),
        ("first_thread", pa.uint32()),
        ("first_op", _NAME_TYPE),
        ("first_ts", pa.uint64()),
        ("first_site", _TEXT_TYPE),
        ("first_async", pa.bool_()),
        ("space", _NAME_TYPE),
        ("owner", pa.uint32()),
        ("addr", pa.uint64()),
        ("size", pa.uint32()),
        ("element", pa.string()),
        ("location", pa.string()),
        ("obj", pa.uint64()),
        ("code", pa.uint8()),
        ("reason", _TEXT_TYPE),
        ("aux", pa.int64()),
        ("bar_obj", pa.int64()),
        ("bar_gen", pa.int64()),
        ("first_bar_obj", pa.int64()),
        ("first_bar_gen", pa.int64()),
        ("explanation", _TEXT_TYPE),
        ("hint", _TEXT_TYPE),
        ("hint_site", _TEXT_TYPE),
        ("linked_row", pa.int64()),
        ("linked_obj", pa.uint64()),
        ("linked_site", _TEXT_TYPE),
        ("linked", _TEXT_TYPE),
        ("linked_hint", _TEXT_TYPE),
    ]
)
LINK_FIELDS = [field for field in SCHEMA if field.name.startswith("linked")]
"""The columns of a group's :class:`~tracerace.report.hazards.Link`: the last ones."""


def schema_for(meta: TraceMeta, events: int | None) -> pa.Schema:
    """:data:`SCHEMA` with the report's metadata: version, events (when known), trace."""
    metadata = {"tracerace.report.version": REPORT_VERSION}
    if events is not None:
        metadata["tracerace.events"] = str(events)
    if meta.path:
        metadata["tracerace.trace"] = meta.path
    if meta.launches:
        metadata[META_LAUNCHES] = launches_json(meta.launches)
    return SCHEMA.with_metadata(metadata)


def report_table(
    meta: TraceMeta,
    findings: np.ndarray,
    groups: np.ndarray,
    events: int | None,
    links: Mapping[int, Link],
    updates: Mapping[int, Hint] | None = None,
) -> pa.Table:
    """``findings`` (``FINDING_DTYPE``) and their group ids as one table, with the
    groups' ``links`` and the hints of the groups whose fix is an atomic update."""
    batch = Columns(meta).batch(findings, groups, links, updates)
    return pa.Table.from_batches([batch]).replace_schema_metadata(schema_for(meta, events).metadata)


class Texts:
    """A column's strings as indices into one dictionary that only grows, so that
    each batch's dictionary extends the one before (an IPC dictionary delta)."""

    def __init__(self) -> None:
        self._index: dict[str, int] = {}
        self._values: list[str] = []
        self._array = pa.array([], pa.string())

    def index(self, text: str | None) -> int:
        """The dictionary index of ``text`` (added when new); -1 for None (null)."""
        if text is None:
            return -1
        at = self._index.get(text)
        if at is None:
            at = self._index[text] = len(self._values)
            self._values.append(text)
        return at

    def column(self, indices: np.ndarray) -> pa.DictionaryArray:
        """The column of these indices (-1: null) over the dictionary as it is now."""
        if len(self._array) != len(self._values):
            self._array = pa.array(self._values, pa.string())
        null = indices < 0
        ids = pa.array(np.where(null, 0, indices).astype(np.int32), pa.int32(), mask=null)
        return pa.DictionaryArray.from_arrays(ids, self._array)


class Columns:
    """Builds the record batch of a batch of findings; remembers the sentences
    already worded across batches, and their dictionaries."""

    def __init__(self, meta: TraceMeta) -> None:
        self.meta = meta
        self._sites = pa.array(list(meta.sites), pa.string())
        self._memo: dict[tuple[int, int], int] = {}
        self._hints: dict[tuple[int, int, int], tuple[int, int]] = {}
        self.explanations_dict = Texts()
        self.hints_dict = Texts()
        self.hint_sites_dict = Texts()

    def batch(
        self,
        f: np.ndarray,
        groups: np.ndarray,
        links: Mapping[int, Link] | None = None,
        updates: Mapping[int, Hint] | None = None,
    ) -> pa.RecordBatch:
        """The findings ``f`` of groups ``groups``, with the groups' ``links``
        (None: not known yet, null) and the hints of the ``updates`` groups."""
        meta = self.meta
        no_first = f["prev_row"] == NO_ROW

        def names(codes: np.ndarray, dictionary: pa.Array, mask=None) -> pa.DictionaryArray:
            indices = pa.array(codes.astype(np.int16), pa.int16(), mask=mask)
            return pa.DictionaryArray.from_arrays(indices, dictionary)

        def earlier(values: np.ndarray, type_: pa.DataType) -> pa.Array:
            return pa.array(values, type_, mask=no_first)

        def site(col: np.ndarray, mask=None) -> pa.Array:
            null = col >= len(meta.sites)
            if mask is not None:
                null = null | mask
            ids = pa.array(np.where(null, 0, col).astype(np.int32), pa.int32(), mask=null)
            return pa.DictionaryArray.from_arrays(ids, self._sites)

        element, location = name_bytes(
            meta, f["space"], f["owner"], f["addr"], f["size"], f["launch"]
        )
        explanation, keys, inverse = self.explanations(f)
        reason = _REASON_INDEX[np.minimum(f["kind"], len(KIND_NAMES) - 1), f["code"]]
        columns = [
            pa.array(groups, pa.int32()),
            names(f["kind"], _KIND_DICT),
            names(f["severity"], _SEVERITY_DICT),
            pa.array(f["row"], pa.int64()),
            pa.array(f["launch"], pa.uint32()),
            pa.array(f["block"], pa.uint32()),
            pa.array(f["thread"], pa.uint32()),
            names(f["op"], _OP_DICT),
            pa.array(f["ts"], pa.uint64()),
            site(f["site"]),
            pa.array(_IS_COPY[f["op"]], pa.bool_()),
            earlier(f["prev_row"], pa.int64()),
            earlier(f["prev_launch"], pa.uint32()),
            earlier(f["prev_block"], pa.uint32()),
            earlier(f["prev_thread"], pa.uint32()),
            names(f["prev_op"], _OP_DICT, mask=no_first),
            earlier(f["prev_ts"], pa.uint64()),
            site(f["prev_site"], no_first),
            earlier((f["prev_async"] != 0) | _IS_COPY[f["prev_op"]], pa.bool_()),
            names(f["space"], _SPACE_DICT),
            pa.array(f["owner"], pa.uint32()),
            pa.array(f["addr"], pa.uint64()),
            pa.array(f["size"], pa.uint32()),
            element,
            location,
            pa.array(f["obj"], pa.uint64()),
            pa.array(f["code"], pa.uint8()),
            names(reason - 1, _REASON_DICT, mask=reason == 0),
            pa.array(f["aux"], pa.int64()),
            pa.array(f["bar_obj"], pa.int64()),
            pa.array(f["bar_gen"], pa.int64()),
            earlier(f["prev_bar_obj"], pa.int64()),
            earlier(f["prev_bar_gen"], pa.int64()),
            explanation,
            *self.hints(f, keys, inverse, groups, updates or {}),
            *link_columns(groups, links or {}),
        ]
        return pa.RecordBatch.from_arrays(columns, schema=SCHEMA)

    def hints(
        self,
        f: np.ndarray,
        keys: np.ndarray,
        inverse: np.ndarray,
        groups: np.ndarray,
        updates: Mapping[int, Hint],
    ) -> list[pa.Array]:
        """(hint, hint_site) of every finding: worded once per distinct set of the
        fields a sentence reads (``keys``/``inverse`` from :meth:`explanations`)
        and the buffer the bytes are in (an ``uninit_read`` hint names it); a
        finding of an ``updates`` group gets its group's hint."""
        n = len(f)
        text_ids = np.full(n, -1, dtype=np.int64)
        site_ids = np.full(n, -1, dtype=np.int64)
        if n:
            buf = _buffer_index(self.meta, f["space"], f["addr"], f["launch"])
            combined = inverse.astype(np.int64) * (len(self.meta.buffers) + 1) + buf + 1
            _, first, which = np.unique(combined, return_index=True, return_inverse=True)
            texts, sites = [], []
            records = f[first].tolist()  # one conversion, not one per record
            for i, record, b in zip(first.tolist(), records, buf[first].tolist()):
                key = (*keys[inverse[i]], b)
                found = self._hints.get(key)
                if found is None:
                    name = self.meta.buffers[b].name if b >= 0 else None
                    h = hint(dict(zip(FIELDS, record)), self.meta, name)
                    found = self._hints[key] = self._hint_ids(h)
                texts.append(found[0])
                sites.append(found[1])
            text_ids = np.array(texts, dtype=np.int64)[which]
            site_ids = np.array(sites, dtype=np.int64)[which]
            self._update(groups, updates, text_ids, site_ids)
        return [self.hints_dict.column(text_ids), self.hint_sites_dict.column(site_ids)]

    def _hint_ids(self, h: Hint | None) -> tuple[int, int]:
        if h is None:
            return -1, -1
        return self.hints_dict.index(h.text), self.hint_sites_dict.index(h.site)

    def _update(
        self,
        groups: np.ndarray,
        updates: Mapping[int, Hint],
        text_ids: np.ndarray,
        site_ids: np.ndarray,
    ) -> None:
        """Give the findings of each ``updates`` group that group's hint, in place."""
        for gid, h in updates.items():
            rows = groups == gid
            if rows.any():
                text_ids[rows], site_ids[rows] = self._hint_ids(h)

    def rehint(self, batch: pa.RecordBatch, updates: Mapping[int, Hint]) -> list[pa.Array]:
        """The (hint, hint_site) columns of a written ``batch`` again, with the
        ``updates`` groups' hints, over this object's dictionaries."""
        groups = batch.column(SCHEMA.get_field_index("group")).to_numpy(zero_copy_only=False)
        out = []
        for name, texts in (("hint", self.hints_dict), ("hint_site", self.hint_sites_dict)):
            col = batch.column(SCHEMA.get_field_index(name))
            ids = np.array(
                [texts.index(v) for v in col.dictionary.to_pylist()] + [-1], dtype=np.int64
            )
            old = col.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
            null = col.is_null().to_numpy(zero_copy_only=False)
            out.append(ids[np.where(null, len(ids) - 1, old)])
        self._update(groups, updates, out[0], out[1])
        return [self.hints_dict.column(out[0]), self.hint_sites_dict.column(out[1])]

    def explanations(self, f: np.ndarray) -> tuple[pa.Array, list, np.ndarray]:
        """:func:`~tracerace.report.explain.explain` of every finding, worded once per
        distinct set of the fields a sentence reads. Within a batch the sets
        are found by a hash and every member is compared field by field with
        the one worded; across batches the sentences are remembered by two
        independent 64-bit hashes of the set (a collision of both: 2^-128).
        Also returns each set's hash pair and each finding's set."""
        n = len(f)
        if n == 0:
            return (
                self.explanations_dict.column(np.zeros(0, dtype=np.int64)),
                [],
                np.zeros(0, dtype=np.int64),
            )
        cols = [f[name].astype(np.uint64) for name in _WORDED]
        cols.append((f["prev_row"] >= 0).astype(np.uint64))
        h1 = np.zeros(n, dtype=np.uint64)
        h2 = np.full(n, 0x9E3779B97F4A7C15, dtype=np.uint64)
        for col in cols:
            h1 ^= col
            h1 *= np.uint64(0x100000001B3)
            h1 ^= h1 >> np.uint64(29)
            h2 += col
            h2 *= np.uint64(0xBF58476D1CE4E5B9)
            h2 ^= h2 >> np.uint64(31)
        _, first, inverse = np.unique(h1, return_index=True, return_inverse=True)
        rep = first[inverse]
        same = np.ones(n, dtype=bool)
        for col in cols:
            same &= col == col[rep]
        if not same.all():  # h1 collided within the batch: word those one by one
            odd = np.flatnonzero(~same)
            inverse = inverse.astype(np.int64)
            inverse[odd] = len(first) + np.arange(len(odd))
            first = np.concatenate([first, odd])
        ids = []
        keys = list(zip(h1[first].tolist(), h2[first].tolist()))
        records = f[first].tolist()  # one conversion, not one per record
        for key, record in zip(keys, records):
            at = self._memo.get(key)
            if at is None:
                at = self._memo[key] = self.explanations_dict.index(
                    explain(dict(zip(FIELDS, record)), self.meta)
                )
            ids.append(at)
        inverse = inverse.astype(np.int64)
        return (
            self.explanations_dict.column(np.array(ids, dtype=np.int64)[inverse]),
            keys,
            inverse,
        )


def link_columns(groups: np.ndarray, links: Mapping[int, Link]) -> list[pa.Array]:
    """The ``linked_*`` columns of findings of groups ``groups``: their group's link
    in ``links``, null where it has none. The text columns' dictionaries are the
    links' values, the same for every batch of one output."""
    n = len(groups)
    if not links:
        return [pa.nulls(n, field.type) for field in LINK_FIELDS]
    gids = np.array(sorted(links), dtype=np.int64)
    at = np.minimum(np.searchsorted(gids, groups), len(gids) - 1)
    missing = gids[at] != groups
    values = [links[g] for g in gids.tolist()]
    columns = (
        [v.row for v in values],
        [v.obj for v in values],
        [v.site for v in values],
        [v.text for v in values],
        [v.hint.text for v in values],
    )
    out = []
    for c, field in zip(columns, LINK_FIELDS):
        if pa.types.is_dictionary(field.type):
            ids = pa.array(at.astype(np.int32), pa.int32(), mask=missing)
            out.append(pa.DictionaryArray.from_arrays(ids, pa.array(c, pa.string())))
        else:
            out.append(pa.array(c, field.type).take(pa.array(at, pa.int64(), mask=missing)))
    return out


# -- element names and byte ranges, vectorised (report.locate is the definition) --


def name_bytes(
    meta: TraceMeta,
    space: np.ndarray,
    owner: np.ndarray,
    addr: np.ndarray,
    size: np.ndarray,
    launch: np.ndarray,
) -> tuple[pa.Array, pa.Array]:
    """(element, location) of each finding's bytes, as :func:`tracerace.report.locations.locate`
    words them, for whole columns at once."""
    n = len(addr)
    has = size > 0
    first = _elements(meta, space, addr, launch, has)
    last_addr = addr + (size.astype(np.uint64) - np.uint64(1)) * has
    wide = size > 1
    last = _elements(meta, space, last_addr, launch, wide)
    element = first
    # "a..b" when the last byte names another element
    differs = pc.fill_null(pc.not_equal(element, last), False)
    span = pc.binary_join_element_wise(element, "..", last, "")
    named = pc.if_else(differs, span, element)
    raw = _byte_ranges(space, owner, addr, size) if n else pa.array([], pa.string())
    location = pc.if_else(pc.is_valid(element), named, raw)
    location = pc.if_else(pa.array(has), location, pa.scalar(None, pa.string()))
    return element, location


def _buffer_index(
    meta: TraceMeta, space: np.ndarray, addr: np.ndarray, launch: np.ndarray
) -> np.ndarray:
    """The index in ``meta.buffers`` of the first buffer whose span holds each
    address (-1: none), as :meth:`TraceMeta.describe_bytes` looks them up."""
    out = np.full(len(addr), -1, dtype=np.int64)
    for i, buffer in enumerate(meta.buffers):
        span = buffer.nbytes_span
        if span == 0:
            continue
        todo = (out < 0) & (space == buffer.space)
        if buffer.launch is not None:
            todo &= launch == buffer.launch
        base = np.uint64(buffer.base)
        todo &= (addr >= base) & (addr - base < np.uint64(span))
        out[todo] = i
    return out


def _elements(
    meta: TraceMeta, space: np.ndarray, addr: np.ndarray, launch: np.ndarray, wanted: np.ndarray
) -> pa.Array:
    """The name of the element holding each address (where ``wanted``), as
    :meth:`TraceMeta.describe_bytes` gives it: the first buffer that names it."""
    n = len(addr)
    done = np.zeros(n, dtype=bool)
    texts = []
    for buffer in meta.buffers:
        todo = wanted & ~done & (space == buffer.space)
        if buffer.launch is not None:
            todo &= launch == buffer.launch
        span = buffer.nbytes_span
        if span == 0 or not todo.any():
            continue
        base = np.uint64(buffer.base)
        todo &= (addr >= base) & (addr - base < np.uint64(span))
        rows = np.flatnonzero(todo)
        if rows.size == 0:
            continue
        elem, within = np.divmod((addr[rows] - base).astype(np.int64), buffer.itemsize)
        strides = buffer.element_strides
        idx = np.zeros((rows.size, len(buffer.shape)), dtype=np.int64)
        ok = np.ones(rows.size, dtype=bool)
        rest = elem
        for i in sorted(range(len(buffer.shape)), key=lambda i: -strides[i]):
            if strides[i] == 0:
                continue
            q, rest = np.divmod(rest, strides[i])
            ok &= q < buffer.shape[i]
            idx[:, i] = q
        ok &= rest == 0
        rows, idx = rows[ok], idx[ok]
        if rows.size == 0:
            continue
        done[rows] = True
        parts: list[Any] = [f"{buffer.name}["]
        for i in range(idx.shape[1]):
            if i:
                parts.append(", ")
            parts.append(pc.cast(pa.array(idx[:, i]), pa.string()))
        parts.append("]")
        names = (
            pc.binary_join_element_wise(*parts, "")
            if idx.shape[1]
            else pa.array([f"{buffer.name}[]"] * rows.size, pa.string())
        )
        full = np.full(n, -1, dtype=np.int64)
        full[rows] = np.arange(rows.size)
        texts.append(names.take(pa.array(full, mask=full < 0)))
    if not texts:
        return pa.nulls(n, pa.string())
    return texts[0] if len(texts) == 1 else pc.coalesce(*texts)


def _hex(values: np.ndarray) -> pa.Array:
    """Lower-case hex digits of uint64 values, without leading zeros."""
    n = len(values)
    nibbles = ((values[:, None] >> _SHIFTS[None, :]) & np.uint64(15)).astype(np.uint8)
    leading = np.minimum(np.argmax(nibbles != 0, axis=1), 15)
    leading[~(nibbles != 0).any(axis=1)] = 15
    keep = np.arange(16)[None, :] >= leading[:, None]
    data = _HEX[nibbles[keep]]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(16 - leading, out=offsets[1:])
    return pa.LargeStringArray.from_buffers(
        n, pa.py_buffer(offsets), pa.py_buffer(data.tobytes())
    ).cast(pa.string())


def _byte_ranges(
    space: np.ndarray, owner: np.ndarray, addr: np.ndarray, size: np.ndarray
) -> pa.Array:
    """:func:`tracerace.report.locations.byte_range` of each finding."""
    owners = pc.cast(pa.array(owner), pa.string())
    where = _SPACE_DICT.take(pa.array(space.astype(np.int64)))
    where = pc.if_else(
        pa.array(space == Space.SHARED),
        pc.binary_join_element_wise("shared[block ", owners, "]", ""),
        where,
    )
    where = pc.if_else(
        pa.array(space == Space.LOCAL),
        pc.binary_join_element_wise("local[thread ", owners, "]", ""),
        where,
    )
    end = addr + size.astype(np.uint64)
    return pc.binary_join_element_wise(where, " 0x", _hex(addr), "..0x", _hex(end), "")
