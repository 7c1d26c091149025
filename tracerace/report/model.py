"""A checker's findings, grouped: the report's model, which every format lays out.

:class:`ReportModel` wraps the :class:`~tracerace.group.groups.GroupTable` of a check
(the findings folded into groups as they were found: kind, earlier site,
later site and the agents' roles; exact counts; a few examples per group)
with the trace's metadata. A kernel bug usually shows up as thousands of
findings at one pair of source lines, and a person wants the pair once, with
a count and one example. Groups are ordered errors first, then by the row of
their first member. Only what a format shows is worded: a group's example
and its explanation are built when first read.

Everything here works without the trace. The model holds data and the few
sentences several outputs share (the summary line, what ``max_reports`` left
out, a group's bytes); each format in :mod:`tracerace.report.formats` lays it
out itself. :class:`tracerace.report.Report` is the model with a call to the
text, JSON and Arrow layouts (``to_text()``, ``to_json()``, ``to_arrow()``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from ..checker.findings import FIELDS, NO_ROW, CheckResult
from ..checker.options import CheckOptions
from ..group.groups import ROLE_NAMES, GroupTable, group_findings, stable_order
from ..trace.coords import FLAT_LEGEND
from ..trace.meta import TraceMeta
from ..trace.ops import HazardKind, Space
from .explain import explain_all
from .hazards import (
    KIND_NAMES,
    RACE_KINDS,
    SEVERITY_NAMES,
    Access,
    Hazard,
    Link,
    hazard_from_record,
)
from .hints import PLAIN_OPS, Hint, buffer_name, hint, site_lines, updates
from .locations import byte_range, locate_all, merge_ranges, name_range, space_name

__all__ = ["Access", "Hazard", "HazardGroup", "Link", "ReportModel"]

MAX_LOCATIONS = 6
"""Distinct elements / byte ranges listed per group before the count of all of them."""


class HazardGroup:
    """The findings of one group (see :mod:`tracerace.group.groups` for the key): one
    kind between one earlier site and one later site, with the same agents' roles.

    Built on demand from a :class:`ReportModel`'s group table: the example (and its
    explanation) is worded on first use only.
    """

    def __init__(self, report: ReportModel, gid: int) -> None:
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
        return (
            f"HazardGroup(id={self.id}, kind={self.kind!r}, severity={self.severity!r}, "
            f"count={self.count}, first_site={self.first_site!r}, "
            f"second_site={self.second_site!r})"
        )

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
        """Positions of the members kept in :attr:`ReportModel.findings`, by row
        (every member when the report keeps every finding, else the first
        :data:`~tracerace.group.groups.EXAMPLES`)."""
        return self._report.members(self.id)

    @property
    def complete(self) -> bool:
        """Whether every member is among :attr:`indices`."""
        return len(self.indices) == self.count

    @cached_property
    def locations(self) -> tuple[str, ...]:
        """The group's first distinct byte ranges (:data:`~tracerace.group.groups.EXAMPLES`
        of them), adjacent ones merged, named as elements or slices
        (``out[3, 0:64]``) or else raw byte ranges, in the order found."""
        meta = self._report.meta
        seen: dict[str, None] = {}
        for space, owner, lo, end, launch in merge_ranges(self._report.table.locators_of(self.id)):
            seen.setdefault(name_range(meta, space, owner, lo, end, launch))
        return tuple(seen)

    @cached_property
    def hint(self) -> Hint | None:
        """What to change, from the example (:mod:`tracerace.report.hints`); an atomic
        update when the group is a read-modify-write by many threads
        (:attr:`ReportModel.updates`)."""
        return hint(
            self._record,
            self._report.meta,
            buffer_name(self.example.element),
            update=self._report.update_lines.get(self.id),
        )

    @cached_property
    def linked(self) -> Link | None:
        """For a race: the crossed wait of its later access's thread that most likely
        caused it (:meth:`ReportModel.link`); else None. Every format shows it."""
        if self.kind not in RACE_KINDS:
            return None
        ex = self.example.second
        return self._report.link(ex.launch, ex.block, ex.thread, ex.row)

    def locations_head(self, limit: int) -> tuple[str, ...]:
        """The first ``limit`` of :attr:`locations`."""
        return self.locations[:limit]

    def bytes_text(self, limit: int = MAX_LOCATIONS) -> str:
        """``out[0, 1:3], out[2, 0]`` (:attr:`locations`); past ``limit``: ``..., ...
        (4,096 byte ranges in all)``; when the report kept only the group's first
        members and they do not cover its bytes: ``..., ... (all within
        out[0, 0]..out[63, 63])``."""
        head = self.locations_head(limit)
        shown = ", ".join(head)
        ranges = self.byte_ranges
        if ranges is not None:
            if len(self.locations) > len(head):
                return f"{shown}, ... ({ranges:,} byte ranges in all)"
            return shown
        span = self.span
        if span is None or head == (span,):
            return shown
        return f"{shown}, ... (all within {span})"

    @property
    def byte_ranges(self) -> int | None:
        """Distinct (space, owner, addr, size, launch) among the members, or None
        when there are more than :data:`~tracerace.group.groups.EXAMPLES` (see :attr:`span`)."""
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


@dataclass(frozen=True, eq=False)
class ReportModel:
    """The outcome of one check: events replayed, the groups of its findings
    (:class:`~tracerace.group.groups.GroupTable`), exact counts, the options."""

    events: int
    meta: TraceMeta
    table: GroupTable
    options: CheckOptions | None = None

    @classmethod
    def from_result(
        cls, result: CheckResult, meta: TraceMeta, options: CheckOptions | None = None
    ) -> ReportModel:
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
        each group's first :data:`~tracerace.group.groups.EXAMPLES`."""
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
        return order[start[gid] : start[gid + 1]]

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
        return {
            "by_kind": {name: int(counts[i]) for i, name in enumerate(KIND_NAMES)},
            "racy_rows": int(self.table.racy_rows),
        }

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
            order = self._display_order[: self.max_reports]
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
            line = (
                f"{_count(n, 'hazard')} ({_count(self.errors, 'error')}, "
                f"{_count(self.warnings, 'warning')}) in {_count(self.group_count, 'group')} "
                f"over {self.events:,} events; racy rows: {self.summary['racy_rows']:,}"
            )
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
        return (
            f"{_count(left, 'more group')} not shown "
            f"(showing {len(self.shown_groups):,} of {self.group_count:,}; max reports "
            f"{self.max_reports:,})"
        )

    # -- hazards --------------------------------------------------------------

    @cached_property
    def hazards(self) -> list[Hazard]:
        """One :class:`Hazard` per finding of :attr:`findings`, by row (built on first use)."""
        f, meta = self.findings, self.meta
        return [
            hazard_from_record(dict(zip(FIELDS, values)), meta, text, located)
            for values, text, located in zip(f.tolist(), explain_all(f, meta), locate_all(f, meta))
        ]

    def link(self, launch: int, block: int, thread: int, row: int) -> Link | None:
        """The :class:`Link` of a race whose later access is ``row`` of thread
        ``(launch, block, thread)``: a crossed wait of that thread, the latest
        before the access, else the first after it (the crossing is only
        visible once the wait site has been fed by both protocols); None when
        the thread has none. A race of a thread whose waits mix two protocols
        is most likely their doing."""
        alias = self.table.alias_behind(launch, block, thread, row)
        if alias is None:
            return None
        return Link(
            row=int(alias["row"]),
            site=self.meta.site_text(int(alias["site"])),
            obj=int(alias["obj"]),
        )

    @cached_property
    def links(self) -> dict[int, Link]:
        """Group id -> :attr:`HazardGroup.linked`, for every group that has one
        (shown or not: the Arrow report gives each finding its group's)."""
        table = self.table
        if len(table.aliases) == 0 or len(table) == 0:
            return {}
        races = np.isin(table.kind, [int(HazardKind[k.upper()]) for k in RACE_KINDS])
        first = table.examples[table.example_start[:-1]]  # each group's example
        key = (
            (first["launch"].astype(np.uint64) << np.uint64(42))
            | (first["block"].astype(np.uint64) << np.uint64(21))
            | first["thread"]
        )
        a = table.aliases
        alias_key = (
            (a["launch"].astype(np.uint64) << np.uint64(42))
            | (a["block"].astype(np.uint64) << np.uint64(21))
            | a["thread"]
        )
        out = {}
        for g in np.flatnonzero(races & np.isin(key, alias_key)).tolist():  # a few candidates
            ex = first[g]
            link = self.link(int(ex["launch"]), int(ex["block"]), int(ex["thread"]), int(ex["row"]))
            if link is not None:
                out[g] = link
        return out

    @property
    def updates(self) -> frozenset[int]:
        """Ids of the race groups that are a read-modify-write of the same bytes by
        many threads (:func:`~tracerace.report.hints.updates`): their fix is an
        atomic update."""
        return frozenset(self.update_lines)

    @cached_property
    def update_lines(self) -> dict[int, tuple[str, str]]:
        """Group id -> (read line, write line) of each of :attr:`updates`."""
        table = self.table
        if len(table) == 0:
            return {}
        first = table.examples[table.example_start[:-1]]  # each group's example
        plain = (
            np.isin(first["op"], PLAIN_OPS)
            & np.isin(first["prev_op"], PLAIN_OPS)
            & (first["prev_row"] >= 0)
        )
        kind = table.kind.astype(np.int64)
        if not (plain & (kind == int(HazardKind.WAW))).any():
            return {}
        names, site_line = site_lines(self.meta.sites)
        nsites = len(self.meta.sites)

        def line(sites: np.ndarray) -> np.ndarray:
            return site_line[np.minimum(sites.astype(np.int64), nsites)]

        found = updates(kind, line(first["prev_site"]), line(first["site"]), plain)
        return {g: (names[r], names[w]) for g, (r, w) in found.items()}

    @cached_property
    def update_hints(self) -> dict[int, Hint]:
        """Group id -> hint of each of :attr:`updates` (the Arrow report gives each
        finding of such a group its group's hint)."""
        return {g: h for g in sorted(self.updates) if (h := HazardGroup(self, g).hint) is not None}

    @property
    def legend(self) -> str | None:
        """How agents are named when the trace gives no dimensions (None otherwise,
        or when no group is shown)."""
        if self.meta.coords.known or not self.shown_groups:
            return None
        return FLAT_LEGEND


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"
