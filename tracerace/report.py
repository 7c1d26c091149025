"""A checker's findings, grouped and worded for people and tools.

:class:`Report` wraps the ``FINDING_DTYPE`` array a checker returns (one
record per (later event, hazard kind)) with the trace's metadata. It groups
the findings by (kind, earlier site, later site): a kernel bug usually shows up
as thousands of findings at one pair of source lines, and a person wants the
pair once, with a count and one example. Groups are ordered errors first, then
by the row of their example.

Everything here works on the findings array without the trace: the formats in
:mod:`tracerace.formats` only read a :class:`Report`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from .explain import COPY_OPS, explain, explain_all, op_name, reason_text
from .findings import FIELDS, CheckResult
from .meta import TraceMeta
from .ops import HazardKind, Severity, Space

if TYPE_CHECKING:
    import pyarrow as pa

    from .api import CheckOptions

JSON_VERSION = 1
"""``version`` of the JSON report (pinned by the product spec)."""

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

    @property
    def agent(self) -> str:
        """``(block,thread)``."""
        return f"({self.block},{self.thread})"

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "launch": self.launch, "block": self.block,
                "thread": self.thread, "op": self.op, "ts": self.ts, "site": self.site}


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
    second = Access(r["row"], r["launch"], r["block"], r["thread"], op_name(r["op"]), r["ts"],
                    meta.site_text(r["site"]), r["op"] in COPY_OPS)
    first = None
    if r["prev_row"] != NO_ROW:
        first = Access(r["prev_row"], r["prev_launch"], r["prev_block"], r["prev_thread"],
                       op_name(r["prev_op"]), r["prev_ts"], meta.site_text(r["prev_site"]),
                       bool(r["prev_async"]) or r["prev_op"] in COPY_OPS)
    if located is None:
        located = locate(meta, *(r[name] for name in _BYTES_KEY))
    element, location = located
    return Hazard(kind=KIND_NAMES[r["kind"]], severity=SEVERITY_NAMES[r["severity"]],
                  first=first, second=second, space=space_name(r["space"]), owner=r["owner"],
                  addr=r["addr"], size=r["size"], element=element, location=location,
                  obj=r["obj"], code=r["code"], aux=r["aux"],
                  explanation=explain(r, meta) if explanation is None else explanation)


@dataclass(frozen=True, eq=False)
class HazardGroup:
    """The findings of one kind between one earlier site and one later site."""

    kind: str
    severity: str
    """``error`` when any member is an error, else ``warning``."""
    count: int
    first_site: str | None
    """Site of the earlier access (None: no site, or a single-access hazard)."""
    second_site: str | None
    example: Hazard
    """The member with the smallest row."""
    indices: np.ndarray = field(repr=False)
    """Positions of the members in :attr:`Report.findings`, by row."""
    _findings: np.ndarray = field(repr=False)
    _meta: TraceMeta = field(repr=False)

    @cached_property
    def locations(self) -> tuple[str, ...]:
        """Distinct elements (``out[1, 2]``) or byte ranges the members touch, by row."""
        return self.locations_head(len(self.indices))

    def locations_head(self, limit: int) -> tuple[str, ...]:
        """The first ``limit`` of :attr:`locations`, without wording the whole group."""
        seen: dict[str, None] = {}
        chunk = max(64, 4 * limit)
        for start in range(0, len(self.indices), chunk):
            for _, text in locate_all(self._findings, self._meta,
                                      self.indices[start:start + chunk]):
                if text is not None:
                    seen.setdefault(text)
            if len(seen) >= limit:
                break
        return tuple(seen)[:limit]

    @cached_property
    def byte_ranges(self) -> int:
        """Distinct (space, owner, addr, size, launch) among the members."""
        if len(self.indices) < 2:
            return len(self.indices)
        keys = [self._findings[name][self.indices] for name in _BYTES_KEY]
        order = np.lexsort(keys)
        new = np.zeros(len(order) - 1, dtype=bool)
        for key in keys:
            sorted_key = key[order]
            new |= sorted_key[1:] != sorted_key[:-1]
        return 1 + int(np.count_nonzero(new))

    def to_json(self) -> dict[str, Any]:
        """The pinned JSON shape of a group; the example supplies bytes and accesses."""
        ex = self.example
        return {
            "kind": self.kind, "severity": self.severity, "count": self.count,
            "space": ex.space, "addr": ex.addr, "size": ex.size,
            "first": ex.first.to_json() if ex.first is not None else None,
            "second": ex.second.to_json(),
            "element": ex.element, "explanation": ex.explanation,
            "obj": ex.obj, "reason": ex.reason,
        }


@dataclass(frozen=True, eq=False)
class Report:
    """The outcome of one check: events replayed, findings, their groups, the options."""

    events: int
    meta: TraceMeta
    findings: np.ndarray
    """``FINDING_DTYPE`` records kept by the options' kind filter, by row."""
    groups: tuple[HazardGroup, ...]
    """Every group, errors first; formats show :attr:`shown_groups`."""
    options: CheckOptions | None = None

    @classmethod
    def from_result(cls, result: CheckResult, meta: TraceMeta,
                    options: CheckOptions | None = None) -> Report:
        findings = result.findings
        if options is not None and len(findings):
            findings = findings[np.isin(findings["kind"], sorted(options.kinds))]
        return cls(result.events, meta, findings, _group(findings, meta), options)

    # -- counts ---------------------------------------------------------------

    @property
    def errors(self) -> int:
        return int(np.count_nonzero(self.findings["severity"] == Severity.ERROR))

    @property
    def warnings(self) -> int:
        return int(np.count_nonzero(self.findings["severity"] == Severity.WARNING))

    @property
    def exit_code(self) -> int:
        """1 when any hazard is an error (it happened in the recorded schedule), else 0."""
        return 1 if self.errors else 0

    @property
    def summary(self) -> dict[str, Any]:
        """``by_kind`` (every kind, 0 included) and ``racy_rows``: the distinct rows
        that are the later access of some hazard."""
        counts = np.bincount(self.findings["kind"], minlength=len(KIND_NAMES))
        return {"by_kind": {name: int(counts[i]) for i, name in enumerate(KIND_NAMES)},
                "racy_rows": int(len(np.unique(self.findings["row"])))}

    @property
    def max_reports(self) -> int | None:
        return None if self.options is None else self.options.max_reports

    @property
    def shown_groups(self) -> tuple[HazardGroup, ...]:
        """The groups the formats show: the first ``max_reports`` of :attr:`groups`."""
        if self.max_reports is None:
            return self.groups
        return self.groups[:self.max_reports]

    @property
    def omitted_groups(self) -> int:
        return len(self.groups) - len(self.shown_groups)

    def summary_line(self) -> str:
        """``3 hazards (2 errors, 1 warning) in 2 groups over 1,234 events; racy rows: 3``."""
        n = len(self.findings)
        if n == 0:
            return f"no hazards in {self.events:,} events"
        return (f"{_count(n, 'hazard')} ({_count(self.errors, 'error')}, "
                f"{_count(self.warnings, 'warning')}) in {_count(len(self.groups), 'group')} "
                f"over {self.events:,} events; racy rows: {self.summary['racy_rows']:,}")

    def omitted_line(self) -> str | None:
        """What ``max_reports`` left out, or None when every group is shown."""
        left = self.omitted_groups
        if not left:
            return None
        return (f"{_count(left, 'more group')} not shown "
                f"(showing {len(self.shown_groups)} of {len(self.groups)}; max reports "
                f"{self.max_reports})")

    # -- hazards --------------------------------------------------------------

    @cached_property
    def hazards(self) -> list[Hazard]:
        """One :class:`Hazard` per finding, by row (built on first use)."""
        f, meta = self.findings, self.meta
        return [hazard_from_record(dict(zip(FIELDS, values)), meta, text, located)
                for values, text, located in zip(f.tolist(), explain_all(f, meta),
                                                 locate_all(f, meta))]

    def alias_behind(self, group: HazardGroup) -> dict | None:
        """For a race group: a crossed wait (a ``sync_alias`` error) of the later
        access's thread in the same launch, as a finding record, or None: the
        latest one before the access, else the first after it (the crossing is
        only visible once the wait site has been fed by both protocols). A race
        of a thread whose waits mix two protocols is most likely their doing."""
        if group.kind not in ("raw", "war", "waw"):
            return None
        f = self.findings
        ex = group.example.second
        alias = ((f["kind"] == HazardKind.SYNC_ALIAS) & (f["severity"] == Severity.ERROR)
                 & (f["launch"] == ex.launch) & (f["block"] == ex.block)
                 & (f["thread"] == ex.thread))
        rows = np.flatnonzero(alias)
        if rows.size == 0:
            return None
        before = rows[f["row"][rows] < ex.row]
        pick = before[np.argmax(f["row"][before])] if before.size else rows[np.argmin(f["row"][rows])]
        return dict(zip(FIELDS, f[pick].tolist()))

    # -- exports --------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The pinned JSON report. ``hazards`` holds the shown groups;
        ``hazards_omitted`` appears only when ``max_reports`` left groups out."""
        out: dict[str, Any] = {
            "version": JSON_VERSION,
            "events": self.events,
            "hazards": [g.to_json() for g in self.shown_groups],
            "summary": self.summary,
        }
        if self.omitted_groups:
            out["hazards_omitted"] = self.omitted_groups
        return out

    def to_arrow(self) -> pa.Table:
        """One row per finding (not grouped), flat columns (see :mod:`tracerace.formats.arrowfmt`)."""
        from .formats.arrowfmt import report_table

        return report_table(self)

    def group_of(self) -> np.ndarray:
        """For each finding, the position of its group in :attr:`groups`."""
        out = np.empty(len(self.findings), dtype=np.int32)
        for gi, g in enumerate(self.groups):
            out[g.indices] = gi
        return out


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _site_keys(meta: TraceMeta, site: np.ndarray) -> np.ndarray:
    """A grouping key per site index: equal texts share a key; no site is -1."""
    canon = np.full(len(meta.sites) + 1, -1, dtype=np.int64)
    first: dict[str, int] = {}
    for i, text in enumerate(meta.sites):
        canon[i] = first.setdefault(text, i)
    return canon[np.minimum(site.astype(np.int64), len(meta.sites))]


def _group(findings: np.ndarray, meta: TraceMeta) -> tuple[HazardGroup, ...]:
    """Group by (kind, earlier site, later site); errors first, then by example row."""
    n = len(findings)
    if n == 0:
        return ()
    later = _site_keys(meta, findings["site"])
    earlier = np.where(findings["prev_row"] == NO_ROW, -2,  # single-access hazards apart
                       _site_keys(meta, findings["prev_site"]))
    kind = findings["kind"]
    order = np.lexsort((findings["row"], later, earlier, kind))
    k, e, s = kind[order], earlier[order], later[order]
    change = np.ones(n, dtype=bool)
    change[1:] = (k[1:] != k[:-1]) | (e[1:] != e[:-1]) | (s[1:] != s[:-1])
    starts = np.flatnonzero(change)
    ends = np.append(starts[1:], n)
    severity = np.minimum.reduceat(findings["severity"][order], starts)

    groups = []
    for start, end, sev in zip(starts.tolist(), ends.tolist(), severity.tolist()):
        members = order[start:end]
        rec = findings[members[0]]
        groups.append(HazardGroup(
            kind=KIND_NAMES[int(rec["kind"])], severity=SEVERITY_NAMES[sev],
            count=end - start,
            first_site=meta.site_text(int(rec["prev_site"])) if rec["prev_row"] != NO_ROW else None,
            second_site=meta.site_text(int(rec["site"])),
            example=hazard_from_record(rec, meta), indices=members, _findings=findings,
            _meta=meta))
    groups.sort(key=lambda g: (g.severity != SEVERITY_NAMES[Severity.ERROR], g.example.row,
                               g.kind))
    return tuple(groups)


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
