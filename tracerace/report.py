"""A checker's findings, grouped and worded for people and tools.

:class:`Report` wraps the :class:`~tracerace.groups.GroupTable` of a check
(the findings folded into groups as they were found: kind, earlier site,
later site and the agents' roles; exact counts; a few examples per group)
with the trace's metadata. A kernel bug usually shows up as thousands of
findings at one pair of source lines, and a person wants the pair once, with
a count and one example. Groups are ordered errors first, then by the row of
their first member. Only what a format shows is worded: a group's example
and its explanation are built when first read.

Everything here works without the trace: the formats in
:mod:`tracerace.formats` only read a :class:`Report`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .coords import FLAT_LEGEND
from .explain import COPY_OPS, explain, explain_all, op_name, reason_text
from .findings import FIELDS, CheckResult
from .groups import ROLE_NAMES, GroupTable, group_findings, stable_order
from .hints import Hint, buffer_name, hint, link_hint
from .meta import Buffer, TraceMeta
from .ops import HazardKind, Severity, Space

if TYPE_CHECKING:
    import pyarrow as pa

    from .api import CheckOptions

JSON_VERSION = 1
"""``version`` of the JSON report (``schemas/report-v1.schema.json``): fields are
only ever added within a version; a change to an existing one is a new version."""

NO_ROW = -1
"""``prev_row`` of a finding with a single event (``uninit_read``, ...)."""

_BYTES_KEY = ("space", "owner", "addr", "size", "launch")
"""The fields that say which bytes a finding is about (the arguments of :func:`locate`)."""

KIND_NAMES = tuple(k.label for k in HazardKind)
SEVERITY_NAMES = tuple(s.label for s in Severity)


def space_name(space: int) -> str:
    try:
        return Space(space).name.lower()
    except ValueError:
        return f"space{space}"


def byte_range(space: int, owner: int, addr: int, size: int) -> str:
    """``shared[block 3] 0x1a0..0x1a4``: the bytes ``[addr, addr + size)``."""
    if space == Space.SHARED:
        where = f"shared[block {owner}]"
    elif space == Space.LOCAL:
        where = f"local[thread {owner}]"
    else:
        where = space_name(space)
    return f"{where} 0x{addr:x}..0x{addr + size:x}"


def locate(meta: TraceMeta, space: int, owner: int, addr: int, size: int,
           launch: int) -> tuple[str | None, str | None]:
    """(element, location) of a finding's bytes.

    ``element`` names the tensor element holding the first byte (``out[1, 2]``)
    when a buffer declares it; ``location`` is the element span
    (``out[1, 2]..out[1, 5]``) or else the raw byte range. Both are None for a
    finding without bytes (barriers, sync objects).
    """
    if size == 0:
        return None, None
    element = meta.describe_bytes(space, addr, launch)
    if element is None:
        return None, byte_range(space, owner, addr, size)
    last = meta.describe_bytes(space, addr + size - 1, launch) if size > 1 else None
    if last is not None and last != element:
        return element, f"{element}..{last}"
    return element, element


def _row_major(buf: Buffer) -> bool:
    strides = buf.element_strides
    expect, acc = [], 1
    for dim in reversed(buf.shape):
        expect.append(acc)
        acc *= dim
    return tuple(strides) == tuple(reversed(expect))


def element_range(buf: Buffer, lo: int, end: int) -> str | None:
    """The elements holding bytes ``[lo, end)`` of ``buf`` as NumPy-style slices:
    ``out[3, 0:64]``, ``ring[0:8, :]``, ``x[5]``; None when the bytes are not in
    ``buf`` or are no such block of a row-major buffer."""
    first = buf.element_index(lo)
    last = buf.element_index(end - 1)
    if first is None or last is None:
        return None
    if first == last:
        return f"{buf.name}[{', '.join(map(str, first))}]"
    if not _row_major(buf):
        return None
    n = len(first)
    p = next(i for i in range(n) if first[i] != last[i])
    rest = range(p + 1, n)
    if not all(first[i] == 0 and last[i] == buf.shape[i] - 1 for i in rest):
        return None
    parts = [str(first[i]) for i in range(p)] + [f"{first[p]}:{last[p] + 1}"]
    parts += [":"] * len(rest)
    return f"{buf.name}[{', '.join(parts)}]"


def name_range(meta: TraceMeta, space: int, owner: int, lo: int, end: int,
               launch: int | None) -> str:
    """Bytes ``[lo, end)`` named as compactly as the trace allows: an element or
    element slices (:func:`element_range`), ``first..last`` elements, or the raw
    byte range."""
    for buf in meta.buffers:
        if buf.contains(space, lo, launch):
            text = element_range(buf, lo, end)
            if text is not None:
                return text
            break
    first = meta.describe_bytes(space, lo, launch)
    if first is None:
        return byte_range(space, owner, lo, end - lo)
    last = meta.describe_bytes(space, end - 1, launch) if end - lo > 1 else None
    return first if last is None or last == first else f"{first}..{last}"


def merge_ranges(locators: np.ndarray) -> list[tuple[int, int, int, int, int | None]]:
    """(space, owner, lo, end, launch) of the byte ranges of ``locators``
    (``LOCATOR_DTYPE``) with adjacent and overlapping ranges of the same memory
    merged, in the order their first range was found. Ranges in a declared
    buffer (``named``) merge across owners, as the report names them by element."""
    runs: dict[tuple, list[list[int]]] = {}
    order: list[tuple] = []
    cols = [locators[name].tolist() for name in ("space", "owner", "addr", "size", "launch",
                                                 "row", "named")]
    for space, owner, addr, size, launch, row, named in zip(*cols):
        if size == 0:
            continue
        key = (space, 0, launch) if named else (space, owner, None)
        if key not in runs:
            runs[key] = []
            order.append(key)
        runs[key].append([addr, addr + size, row])
    if len(order) == 1 and len(runs[order[0]]) == 1:  # most groups: one range
        space, owner, launch = order[0]
        ((lo, end, _),) = runs[order[0]]
        return [(space, owner, lo, end, launch)]
    out = []
    for key in order:
        merged: list[list[int]] = []
        for lo, end, row in sorted(runs[key]):
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
                merged[-1][2] = min(merged[-1][2], row)
            else:
                merged.append([lo, end, row])
        space, owner, launch = key
        out += [(row, space, owner, lo, end, launch) for lo, end, row in merged]
    out.sort(key=lambda r: r[0])
    return [r[1:] for r in out]


@dataclass(frozen=True)
class Access:
    """One side of a hazard: the event, its agent and where in the source it is."""

    row: int
    launch: int
    block: int
    thread: int
    op: str
    ts: int
    site: str | None
    is_async: bool = False
    """The access was made by an async copy (cp.async, TMA) issued at ``row``."""
    name: str | None = None
    """The agent as the report names it: ``block (1,0,0) thread (33,0,0) (warp 1,
    lane 1)`` when the trace gives the launch's dimensions, else :attr:`agent`."""
    coords: dict | None = None
    """``{"block": [x, y, z], "thread": [x, y, z], "warp", "lane"}``, or None."""

    @property
    def agent(self) -> str:
        """``(block,thread)``."""
        return f"({self.block},{self.thread})"

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "launch": self.launch, "block": self.block,
                "thread": self.thread, "op": self.op, "ts": self.ts, "site": self.site,
                "async": self.is_async, "agent": self.name or self.agent,
                "coords": self.coords}


def _access(meta: TraceMeta, row: int, launch: int, block: int, thread: int, op: int, ts: int,
            site: int, is_async: bool) -> Access:
    coords = meta.coords
    return Access(row, launch, block, thread, op_name(op), ts, meta.site_text(site), is_async,
                  coords.agent(launch, block, thread), coords.coords(launch, block, thread))


@dataclass(frozen=True)
class Hazard:
    """One finding, in words: the later access, the earlier one (if any), the bytes, why."""

    kind: str
    severity: str
    first: Access | None
    second: Access
    space: str
    owner: int
    addr: int
    size: int
    element: str | None
    location: str | None
    obj: int
    code: int
    aux: int
    explanation: str

    @property
    def row(self) -> int:
        return self.second.row

    @property
    def reason(self) -> str | None:
        """The short name of ``code`` (``"use before init"``), or None."""
        return reason_text(HazardKind[self.kind.upper()], self.code)


def hazard_from_record(rec: Any, meta: TraceMeta, explanation: str | None = None,
                       located: tuple[str | None, str | None] | None = None) -> Hazard:
    """The :class:`Hazard` of one ``FINDING_DTYPE`` record (or a dict of its fields).

    ``explanation`` and ``located`` (element, location) may come precomputed
    from :func:`~tracerace.explain.explain_all` and :func:`locate_all`.
    """
    r = rec if isinstance(rec, dict) else dict(zip(FIELDS, rec.tolist()))
    second = _access(meta, r["row"], r["launch"], r["block"], r["thread"], r["op"], r["ts"],
                     r["site"], r["op"] in COPY_OPS)
    first = None
    if r["prev_row"] != NO_ROW:
        first = _access(meta, r["prev_row"], r["prev_launch"], r["prev_block"], r["prev_thread"],
                        r["prev_op"], r["prev_ts"], r["prev_site"],
                        bool(r["prev_async"]) or r["prev_op"] in COPY_OPS)
    if located is None:
        located = locate(meta, *(r[name] for name in _BYTES_KEY))
    element, location = located
    return Hazard(kind=KIND_NAMES[r["kind"]], severity=SEVERITY_NAMES[r["severity"]],
                  first=first, second=second, space=space_name(r["space"]), owner=r["owner"],
                  addr=r["addr"], size=r["size"], element=element, location=location,
                  obj=r["obj"], code=r["code"], aux=r["aux"],
                  explanation=explain(r, meta) if explanation is None else explanation)


class HazardGroup:
    """The findings of one group (see :mod:`tracerace.groups` for the key): one
    kind between one earlier site and one later site, with the same agents' roles.

    Built on demand from a :class:`Report`'s group table: the example (and its
    explanation) is worded on first use only.
    """

    def __init__(self, report: "Report", gid: int) -> None:
        self._report = report
        self.id = gid
        """The group's id: groups are numbered in the order their first finding
        was found (the ``group`` column of the Arrow output)."""
        table = report.table
        self.kind = KIND_NAMES[int(table.kind[gid])]
        self.severity = SEVERITY_NAMES[int(table.severity[gid])]
        """``error`` when any member is an error, else ``warning``."""
        self.count = int(table.count[gid])
        self.earlier_role = ROLE_NAMES[int(table.earlier_role[gid])]
        """``thread``, ``async copy``, or ``none`` (a single-access hazard)."""
        self.later_role = ROLE_NAMES[int(table.later_role[gid])]
        self._record = table.example(gid)

    def __repr__(self) -> str:
        return (f"HazardGroup(id={self.id}, kind={self.kind!r}, severity={self.severity!r}, "
                f"count={self.count}, first_site={self.first_site!r}, "
                f"second_site={self.second_site!r})")

    @property
    def first_site(self) -> str | None:
        """Site of the earlier access (None: no site, or a single-access hazard)."""
        rec = self._record
        if int(rec["prev_row"]) == NO_ROW:
            return None
        return self._report.meta.site_text(int(rec["prev_site"]))

    @property
    def second_site(self) -> str | None:
        return self._report.meta.site_text(int(self._record["site"]))

    @cached_property
    def example(self) -> Hazard:
        """The member with the smallest row, worded."""
        return hazard_from_record(self._record, self._report.meta)

    @cached_property
    def indices(self) -> np.ndarray:
        """Positions of the members kept in :attr:`Report.findings`, by row
        (every member when the report keeps every finding, else the first
        :data:`~tracerace.groups.EXAMPLES`)."""
        return self._report.members(self.id)

    @property
    def complete(self) -> bool:
        """Whether every member is among :attr:`indices`."""
        return len(self.indices) == self.count

    @cached_property
    def locations(self) -> tuple[str, ...]:
        """The group's first distinct byte ranges (:data:`~tracerace.groups.EXAMPLES`
        of them), adjacent ones merged, named as elements or slices
        (``out[3, 0:64]``) or else raw byte ranges, in the order found."""
        meta = self._report.meta
        seen: dict[str, None] = {}
        for space, owner, lo, end, launch in merge_ranges(self._report.table.locators_of(self.id)):
            seen.setdefault(name_range(meta, space, owner, lo, end, launch))
        return tuple(seen)

    @cached_property
    def hint(self) -> Hint | None:
        """What to change, from the example (:mod:`tracerace.hints`)."""
        return hint(self._record, self._report.meta, buffer_name(self.example.element))

    @cached_property
    def linked(self) -> dict | None:
        """For a race: the crossed wait of its thread (:meth:`Report.alias_behind`)
        as ``row``, ``site``, ``obj``, ``text`` and ``hint``; else None."""
        alias = self._report.alias_behind(self)
        if alias is None:
            return None
        site = self._report.meta.site_text(alias["site"])
        where = site or f"row {alias['row']}"
        text = (f"this thread's wait on flag {alias['obj']} at {where} (row {alias['row']}) "
                f"mixes two protocols (sync_alias): a wait released by the other protocol's "
                f"signal leaves this access unordered")
        return {"kind": "sync_alias", "row": alias["row"], "site": site, "obj": alias["obj"],
                "text": text, "hint": link_hint(alias["obj"], site).to_json()}

    def locations_head(self, limit: int) -> tuple[str, ...]:
        """The first ``limit`` of :attr:`locations`."""
        return self.locations[:limit]

    @property
    def byte_ranges(self) -> int | None:
        """Distinct (space, owner, addr, size, launch) among the members, or None
        when there are more than :data:`~tracerace.groups.EXAMPLES` (see :attr:`span`)."""
        table = self._report.table
        if table.more_locators[self.id]:
            return None
        return int(table.locator_count[self.id])

    @cached_property
    def span(self) -> str | None:
        """Every byte the members touch lies in this range: ``out[0, 0]..out[3, 7]``,
        ``global 0x1000..0x2000``, or ``shared 0x0..0x400 of several blocks``;
        None when no member has bytes."""
        stats = self._report.table.stats
        g = self.id
        if int(stats["bytes"][g]) == 0:
            return None
        lo, last = int(stats["lo"][g]), int(stats["last"][g])
        space = int(stats["space_min"][g])
        if space != int(stats["space_max"][g]):
            return f"0x{lo:x}..0x{last + 1:x} in several spaces"
        launch = int(stats["launch_min"][g])
        launch = launch if launch == int(stats["launch_max"][g]) else None
        owner = int(stats["owner_min"][g])
        several = owner != int(stats["owner_max"][g])
        whose = "blocks" if space == Space.SHARED else "threads"
        element = self._report.meta.describe_bytes(space, lo, launch)
        end = self._report.meta.describe_bytes(space, last, launch)
        if element is not None and end is not None:
            named = name_range(self._report.meta, space, owner, lo, last + 1, launch)
            return f"{named} of several {whose}" if several else named
        if several:
            return f"{space_name(space)} 0x{lo:x}..0x{last + 1:x} of several {whose}"
        return byte_range(space, owner, lo, last + 1 - lo)

    @property
    def owner_text(self) -> str | None:
        """Whose memory the example's bytes are: ``block 3`` (shared), ``thread 5``
        (local), None (global)."""
        ex = self.example
        if ex.space == "shared":
            return f"block {ex.owner}"
        if ex.space == "local":
            return f"thread {ex.owner}"
        return None

    def to_json(self) -> dict[str, Any]:
        """A group of the JSON report (``schemas/report-v1.schema.json``): what the
        text report says of it, and the example's fields."""
        ex = self.example
        hint_ = self.hint
        return {
            "kind": self.kind, "severity": self.severity, "count": self.count,
            "space": ex.space, "addr": ex.addr, "size": ex.size,
            "first": ex.first.to_json() if ex.first is not None else None,
            "second": ex.second.to_json(),
            "element": ex.element, "explanation": ex.explanation,
            "obj": ex.obj, "reason": ex.reason,
            "group": self.id, "first_site": self.first_site, "second_site": self.second_site,
            "roles": {"earlier": self.earlier_role, "later": self.later_role},
            "owner": ex.owner, "owner_text": self.owner_text, "location": ex.location,
            "locations": list(self.locations), "byte_ranges": self.byte_ranges,
            "span": self.span, "code": ex.code, "aux": ex.aux,
            "hint": hint_.to_json() if hint_ is not None else None,
            "linked": self.linked,
        }


@dataclass(frozen=True, eq=False)
class Report:
    """The outcome of one check: events replayed, the groups of its findings
    (:class:`~tracerace.groups.GroupTable`), exact counts, the options."""

    events: int
    meta: TraceMeta
    table: GroupTable
    options: CheckOptions | None = None

    @classmethod
    def from_result(cls, result: CheckResult, meta: TraceMeta,
                    options: CheckOptions | None = None) -> Report:
        """The report of a checker's whole findings array (every finding kept)."""
        kinds = None if options is None else options.kinds
        return cls(result.events, meta, group_findings(result.findings, meta, kinds), options)

    # -- findings kept ----------------------------------------------------------

    @cached_property
    def _kept(self) -> tuple[np.ndarray, np.ndarray]:
        t = self.table
        if t.findings is not None:
            return t.findings, t.finding_groups
        gid = np.repeat(np.arange(len(t)), np.diff(t.example_start))
        ex = t.examples
        order = np.lexsort((ex["prev_row"], ex["kind"], ex["row"]))
        return ex[order], gid[order]

    @property
    def findings(self) -> np.ndarray:
        """``FINDING_DTYPE`` records the kind filter kept, by row: every one when
        the check kept them (``keep_findings``, or :meth:`from_result`), else
        each group's first :data:`~tracerace.groups.EXAMPLES`."""
        return self._kept[0]

    @property
    def keeps_every_finding(self) -> bool:
        return self.table.findings is not None

    def group_of(self) -> np.ndarray:
        """For each of :attr:`findings`, its group's id."""
        return self._kept[1]

    @cached_property
    def _members(self) -> tuple[np.ndarray, np.ndarray]:
        gid = self.group_of()
        order = stable_order(gid)
        return order, np.searchsorted(gid[order], np.arange(len(self.table) + 1))

    def members(self, gid: int) -> np.ndarray:
        """Positions in :attr:`findings` of group ``gid``'s kept members, by row."""
        order, start = self._members
        return order[start[gid]:start[gid + 1]]

    # -- counts ---------------------------------------------------------------

    @property
    def errors(self) -> int:
        return self.table.errors

    @property
    def warnings(self) -> int:
        return self.table.warnings

    @property
    def total(self) -> int:
        """Findings the kind filter kept."""
        return self.errors + self.warnings

    @property
    def exit_code(self) -> int:
        """1 when any hazard is an error (it happened in the recorded schedule), else 0."""
        return 1 if self.errors else 0

    @property
    def summary(self) -> dict[str, Any]:
        """``by_kind`` (every kind, 0 included) and ``racy_rows``: the distinct rows
        that are the later access of some hazard."""
        counts = self.table.by_kind
        return {"by_kind": {name: int(counts[i]) for i, name in enumerate(KIND_NAMES)},
                "racy_rows": int(self.table.racy_rows)}

    @property
    def filtered(self) -> dict[str, int]:
        """Findings ``select``/``ignore`` dropped, per kind (kinds with none left out)."""
        return {name: int(n) for name, n in zip(KIND_NAMES, self.table.filtered_by_kind) if n}

    @property
    def max_reports(self) -> int | None:
        return None if self.options is None else self.options.max_reports

    @property
    def group_count(self) -> int:
        return len(self.table)

    @cached_property
    def _display_order(self) -> np.ndarray:
        return self.table.display_order()

    @cached_property
    def groups(self) -> tuple[HazardGroup, ...]:
        """Every group, errors first, then by the row of their first member
        (formats show :attr:`shown_groups`)."""
        return tuple(HazardGroup(self, int(g)) for g in self._display_order)

    @cached_property
    def shown_groups(self) -> tuple[HazardGroup, ...]:
        """The groups the formats show: the first ``max_reports`` of :attr:`groups`
        (only these are built when there are more)."""
        if self.max_reports is None:
            return self.groups
        if "_display_order" in self.__dict__:
            order = self._display_order[:self.max_reports]
        else:
            order = self.table.display_order(self.max_reports)
        return tuple(HazardGroup(self, int(g)) for g in order)

    @property
    def omitted_groups(self) -> int:
        return self.group_count - len(self.shown_groups)

    def summary_line(self) -> str:
        """``3 hazards (2 errors, 1 warning) in 2 groups over 1,234 events; racy rows: 3``,
        and what ``select``/``ignore`` left out, if anything."""
        n = self.total
        if n == 0:
            line = f"no hazards in {self.events:,} events"
        else:
            line = (f"{_count(n, 'hazard')} ({_count(self.errors, 'error')}, "
                    f"{_count(self.warnings, 'warning')}) in {_count(self.group_count, 'group')} "
                    f"over {self.events:,} events; racy rows: {self.summary['racy_rows']:,}")
        filtered = self.filtered_text()
        return line if filtered is None else f"{line}; {filtered}"

    def filtered_text(self) -> str | None:
        """``filtered out by --select/--ignore: 3 waw, 1 raw``, or None."""
        dropped = self.filtered
        if not dropped:
            return None
        kinds = ", ".join(f"{n:,} {name}" for name, n in dropped.items())
        return f"filtered out by --select/--ignore: {kinds}"

    def omitted_line(self) -> str | None:
        """What ``max_reports`` left out, or None when every group is shown."""
        left = self.omitted_groups
        if not left:
            return None
        return (f"{_count(left, 'more group')} not shown "
                f"(showing {len(self.shown_groups):,} of {self.group_count:,}; max reports "
                f"{self.max_reports:,})")

    # -- hazards --------------------------------------------------------------

    @cached_property
    def hazards(self) -> list[Hazard]:
        """One :class:`Hazard` per finding of :attr:`findings`, by row (built on first use)."""
        f, meta = self.findings, self.meta
        return [hazard_from_record(dict(zip(FIELDS, values)), meta, text, located)
                for values, text, located in zip(f.tolist(), explain_all(f, meta),
                                                 locate_all(f, meta))]

    def alias_behind(self, group: HazardGroup) -> dict | None:
        """For a race group: a crossed wait (a ``sync_alias`` error) of the later
        access's thread in the same launch, as a dict with its ``row``, ``site``
        and ``obj`` (flag), or None: the latest one before the access, else the
        first after it (the crossing is only visible once the wait site has been
        fed by both protocols). A race of a thread whose waits mix two
        protocols is most likely their doing."""
        if group.kind not in ("raw", "war", "waw"):
            return None
        ex = group.example.second
        alias = self.table.alias_behind(ex.launch, ex.block, ex.thread, ex.row)
        if alias is None:
            return None
        return dict(zip(alias.dtype.names, alias.tolist()))

    @property
    def legend(self) -> str | None:
        """How agents are named when the trace gives no dimensions (None otherwise,
        or when no group is shown)."""
        if self.meta.coords.known or not self.shown_groups:
            return None
        return FLAT_LEGEND

    # -- exports --------------------------------------------------------------

    def to_text(self) -> str:
        """The text report, as ``tracerace check`` prints it to a file."""
        import io

        from .formats import text

        out = io.StringIO()
        text.write(self, out)
        return out.getvalue()

    def __str__(self) -> str:
        return self.to_text()

    def json_head(self) -> dict[str, Any]:
        """The JSON report's fields other than ``hazards``, in order."""
        meta = self.meta
        out: dict[str, Any] = {"version": JSON_VERSION, "events": self.events,
                               "trace": meta.path, "producer": meta.producer,
                               "warnings": list(meta.warnings),
                               "launches": [d.to_json() for d in meta.launches],
                               "legend": self.legend}
        return out

    def json_tail(self) -> dict[str, Any]:
        out: dict[str, Any] = {"summary": self.summary, "summary_line": self.summary_line(),
                               "groups": self.group_count}
        if self.omitted_groups:
            out["hazards_omitted"] = self.omitted_groups
        if self.filtered:
            out["filtered"] = self.filtered
        return out

    def to_json(self) -> dict[str, Any]:
        """The pinned JSON report. ``hazards`` holds the shown groups;
        ``hazards_omitted`` appears only when ``max_reports`` left groups out,
        ``filtered`` (findings per kind) only when ``select``/``ignore`` dropped some."""
        return {**self.json_head(), "hazards": [g.to_json() for g in self.shown_groups],
                **self.json_tail()}

    def to_arrow(self) -> pa.Table:
        """One row per finding of :attr:`findings` (not grouped), flat columns
        (see :mod:`tracerace.formats.arrowfmt`)."""
        from .formats.arrowfmt import report_table

        return report_table(self)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def locate_all(findings: np.ndarray, meta: TraceMeta,
               indices: np.ndarray | None = None) -> list[tuple[str | None, str | None]]:
    """:func:`locate` for each finding (or those at ``indices``), once per distinct bytes."""
    if indices is not None:
        findings = findings[indices]
    memo: dict[tuple[int, ...], tuple[str | None, str | None]] = {}
    cols = [findings[name].tolist() for name in _BYTES_KEY]
    out = []
    for key in zip(*cols):
        if key not in memo:
            memo[key] = locate(meta, *key)
        out.append(memo[key])
    return out
