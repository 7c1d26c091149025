"""Findings grouped as they are found: memory bounded by the groups, not the findings.

A checker hands its findings over a batch at a time (``FINDING_DTYPE``
arrays); :class:`GroupBuilder` folds each batch into per-group totals and
keeps only a few examples per group, so a trace with 10^7 findings at a
handful of source lines costs a handful of rows. The fold is one jitted pass
over the batch (:func:`tracerace.group.fold.fold`: a hash table from group
key to id, one state row per group, in record pools that grow in place and
are faulted in ahead on another thread, :mod:`tracerace.group.pools`): done
NumPy sorts and scatters would fault in the pages of their temporaries at
every batch. :meth:`GroupBuilder.keys` computes the
same key with NumPy, and ``tests/test_groups.py`` checks the whole fold
against a naive one in plain Python.

**The group key.** Findings are in one group when they share

* the hazard kind;
* the site of the earlier access and the site of the later access, by site
  text (two site indices with the same text are one site; a finding without
  an earlier access, such as ``uninit_read``, has an earlier site of its own
  that no two-access finding shares);
* the roles of the two agents: for each access, whether a thread made it or
  an async copy (``cp.async``, TMA, bulk store) issued by a thread
  (:data:`ROLE_THREAD`, :data:`ROLE_COPY`; :data:`ROLE_NONE` for a missing
  earlier access).

**Per group:** the number of findings; the severity (an error when any
member is); the byte span (the lowest and the highest byte the members with
bytes touch, and the range of their spaces, owners and launches, so a caller
can tell whether the span is one piece of memory); the first
:data:`EXAMPLES` members in canonical order (row, then kind, then earlier row),
whole ``FINDING_DTYPE`` records; and the first :data:`EXAMPLES` distinct byte
ranges the members touch (the first found, by row), with whether there are more:
the text report lists a group's first locations and, when there are no more,
how many there are. Byte ranges are told apart as the report names them:
by space, address and size, and by owner (block or thread) only outside the
declared buffers (``out[1, 2]`` is the same element in every block's shared
memory) and by launch only inside buffers declared for one launch. A group's id is
the order in which its first finding was found.

**Exact totals:** findings per kind (those the kind filter kept, and those it
dropped), errors and warnings, and ``racy_rows``, the distinct rows that are
the later access of a kept finding (a bitmap of rows: one bit per row up to
the last racy one).

Two things are kept per finding rather than per group, on request or because
the report needs them: every kept finding when ``keep_findings`` is set, and
for each ``sync_alias`` error a compact record of the waiting thread (48
bytes), from which the text report links a race to the crossed wait of its
thread (:meth:`GroupTable.alias_behind`).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cached_property

import numpy as np

from ..checker.findings import FINDING_DTYPE, NO_ROW, empty_findings
from ..trace.meta import TraceMeta
from ..trace.ops import ASYNC_OPS, HazardKind, Severity, Space
from .fold import (
    GROUP_DTYPE,
    LOCATOR_DTYPE,
    PREFETCH_AHEAD,
    PREFETCH_GROUPS,
    ROLE_COPY,
    ROLE_NAMES,
    ROLE_NONE,
    ROLE_THREAD,
    SV_ERRORS,
    SV_FIELDS,
    SV_GROUPS,
    SV_LOCATORS,
    SV_RACY,
    fold,
    rehash,
    scan,
    table_slots,
)
from .pools import AHEAD_MIN, Ahead, Records

EXAMPLES = 8
"""Members kept per group, first in canonical order."""

N_KINDS = len(HazardKind)

_COPY_OPS = np.zeros(256, dtype=bool)
_COPY_OPS[sorted(ASYNC_OPS)] = True
_U64_MAX = np.iinfo(np.uint64).max

ALIAS_DTYPE = np.dtype(
    [
        ("row", np.int64),
        ("launch", np.uint32),
        ("block", np.uint32),
        ("thread", np.uint32),
        ("site", np.uint32),
        ("obj", np.uint64),
    ]
)
"""What is kept of a ``sync_alias`` error: the wait, its thread, its flag."""


def site_keys(meta: TraceMeta) -> np.ndarray:
    """Site index -> grouping key: equal texts share the smallest index; the
    last entry (any index past the list, such as "no site") is -1."""
    canon = np.full(len(meta.sites) + 1, -1, dtype=np.int64)
    if len(set(meta.sites)) == len(meta.sites):
        canon[:-1] = np.arange(len(meta.sites))
    elif meta.sites:
        import pyarrow as pa

        codes = pa.array(meta.sites, pa.string()).dictionary_encode().indices.to_numpy()
        _, first = np.unique(codes, return_index=True)  # codes number texts by first use
        canon[:-1] = first[codes]
    return canon


def stable_order(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` by two plain sorts: NumPy's stable
    sort of 64-bit keys is about ten times slower than its plain one."""
    n = len(values)
    if n < 2:
        return np.arange(n)
    first = np.argsort(values)
    ordered = values[first]
    rank = np.empty(n, dtype=np.uint64)
    rank[first] = np.concatenate(([0], np.cumsum(ordered[1:] != ordered[:-1])))
    return np.argsort((rank << np.uint64(32)) | np.arange(n, dtype=np.uint64))


def roles(findings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(earlier role, later role) of each finding (``ROLE_*``)."""
    later = np.where(_COPY_OPS[findings["op"]], ROLE_COPY, ROLE_THREAD).astype(np.uint8)
    earlier = np.where(
        (findings["prev_async"] != 0) | _COPY_OPS[findings["prev_op"]], ROLE_COPY, ROLE_THREAD
    ).astype(np.uint8)
    earlier[findings["prev_row"] == NO_ROW] = ROLE_NONE
    return earlier, later


class GroupTable:
    """The groups of one check, indexed by group id (see the module doc).

    Examples and locators stay where they were collected until something asks
    for all of them (:attr:`examples`, :attr:`locators`): a report that shows
    a hundred groups reads a hundred first examples.
    """

    def __init__(
        self,
        *,
        groups: np.ndarray,
        example_parts: list[np.ndarray],
        example_gid_parts: list[np.ndarray],
        locator_log: np.ndarray,
        findings: np.ndarray | None,
        finding_groups: np.ndarray | None,
        aliases: np.ndarray,
        by_kind: np.ndarray,
        filtered_by_kind: np.ndarray,
        errors: int,
        warnings: int,
        racy_rows: int,
    ) -> None:
        low = groups["key"].astype(np.uint8)  # the key's low byte: kind, roles
        self.kind = low >> np.uint8(4)
        self.earlier_role = (low >> np.uint8(2)) & np.uint8(3)
        self.later_role = low & np.uint8(3)
        self._groups = groups
        self._example_parts, self._example_gid_parts = example_parts, example_gid_parts
        self._locator_log = locator_log
        self.locator_count = groups["loc_n"]
        """How many locators group ``g`` has."""
        self.more_locators = groups["loc_more"] != 0
        """Whether group ``g``'s members touch more byte ranges than its locators."""
        self.findings = findings
        """Every kept finding, in canonical order (only when asked to keep them)."""
        self.finding_groups = finding_groups
        """The group id of each of :attr:`findings`."""
        self.aliases = aliases
        """``ALIAS_DTYPE``: every ``sync_alias`` error, by row."""
        self.by_kind = by_kind
        """Kept findings per kind."""
        self.filtered_by_kind = filtered_by_kind
        """Findings the kind filter dropped, per kind."""
        self.errors = errors
        self.warnings = warnings
        self.racy_rows = racy_rows

    def __len__(self) -> int:
        return len(self.kind)

    @cached_property
    def stats(self) -> dict[str, np.ndarray]:
        """Per group: ``count``, ``severity``, the span (``lo``, ``last``: its first
        and last byte; ``space_min`` .. ``launch_max``: the range of the spaces,
        owners and launches of the members with bytes; ``bytes``: how many have
        bytes) and ``first_row``."""
        g = self._groups
        return {
            name: g[name]
            for name in (
                "count",
                "severity",
                "lo",
                "last",
                "space_min",
                "space_max",
                "owner_min",
                "owner_max",
                "launch_min",
                "launch_max",
                "bytes",
                "first_row",
            )
        }

    @property
    def count(self) -> np.ndarray:
        return self._groups["count"]

    @property
    def severity(self) -> np.ndarray:
        return self._groups["severity"]

    def example(self, g: int) -> np.void:
        """The first member of group ``g`` (canonical order)."""
        rec = self._groups[g]
        return self._example_parts[int(rec["first_part"])][int(rec["first_index"])]

    @cached_property
    def _example_table(self) -> tuple[np.ndarray, np.ndarray]:
        ex, gid = _joined(self._example_parts, self._example_gid_parts, FINDING_DTYPE)
        # A group's examples are in canonical order already (a batch is; one
        # that came before a group's last example made it sort them all).
        order = stable_order(gid)
        gid = gid[order]
        return take_rows(ex, order), np.searchsorted(gid, np.arange(len(self) + 1))

    @property
    def examples(self) -> np.ndarray:
        """``FINDING_DTYPE`` records: every group's first members, by group id, then
        canonical order."""
        return self._example_table[0]

    @property
    def example_start(self) -> np.ndarray:
        """Group ``g``'s examples are ``examples[example_start[g]:example_start[g + 1]]``."""
        return self._example_table[1]

    @cached_property
    def _locator_table(self) -> tuple[np.ndarray, np.ndarray]:
        log = concat_rows(
            [self._locator_log, self._first_locators(np.flatnonzero(self._groups["bytes"] == 1))]
        )
        order = np.lexsort((log["row"], log["group"]))  # ties: as found (the log's order)
        return (
            take_rows(log, order),
            np.searchsorted(log["group"][order], np.arange(len(self) + 1)),
        )

    def _first_locators(self, ids: np.ndarray) -> np.ndarray:
        """The locators of groups ``ids``, each with one member with bytes: its
        span (``fold`` logs a group's first range only when a second member
        with bytes comes)."""
        g = self._groups[ids]
        out = np.zeros(len(ids), dtype=LOCATOR_DTYPE)
        out["row"], out["addr"], out["next"], out["group"] = g["loc_row"], g["lo"], -1, ids
        out["owner"], out["launch"], out["space"] = g["owner_min"], g["launch_min"], g["space_min"]
        out["size"] = g["last"] - g["lo"] + np.uint64(1)
        out["named"] = g["loc_named"]
        return out

    @property
    def locators(self) -> np.ndarray:
        """``LOCATOR_DTYPE``: every group's first distinct byte ranges found, by group
        id, then row (the row of the first member that touched the range)."""
        return self._locator_table[0]

    @property
    def locator_start(self) -> np.ndarray:
        return self._locator_table[1]

    def locators_of(self, g: int) -> np.ndarray:
        """Group ``g``'s locators, by row (read from its list: no sorting of all)."""
        if self._groups[g]["bytes"] == 1:
            return self._first_locators(np.array([g]))
        entries = []
        e = int(self._groups[g]["loc_head"])
        while e >= 0:
            entries.append(e)
            e = int(self._locator_log[e]["next"])
        entries.reverse()  # the list is newest first: as found
        found = self._locator_log[entries]
        return found[np.argsort(found["row"], kind="stable")]

    def display_order(self, limit: int | None = None) -> np.ndarray:
        """Group ids, errors first, then by the row of their first member, then
        kind, then id; only the first ``limit`` when given (without sorting all)."""
        n = len(self)
        warning = (self.severity != Severity.ERROR).astype(np.int64)
        first, kind = self._groups["first_row"], self.kind
        if limit is None or limit >= n:
            return np.lexsort((kind, first, warning))
        if limit <= 0:
            return np.zeros(0, dtype=np.int64)
        # The same order as one int64 (rows stay below 2^57), ties apart.
        key = (warning << 62) | (first << 4) | kind
        kth = np.partition(key, limit - 1)[limit - 1]
        candidates = np.flatnonzero(key <= kth)
        order = np.lexsort((kind[candidates], first[candidates], warning[candidates]))
        return candidates[order][:limit]

    def alias_behind(self, launch: int, block: int, thread: int, row: int) -> np.void | None:
        """The ``sync_alias`` error of thread ``(launch, block, thread)``: the
        latest before ``row``, else the first after it (``ALIAS_DTYPE``), or None."""
        a = self.aliases
        if len(a) == 0:
            return None
        mine = np.flatnonzero(
            (a["launch"] == launch) & (a["block"] == block) & (a["thread"] == thread)
        )
        if mine.size == 0:
            return None
        before = mine[a["row"][mine] < row]  # aliases are by row
        return a[before[-1]] if before.size else a[mine[0]]


class GroupBuilder:
    """Folds batches of findings into a :class:`GroupTable` (see the module doc).

    ``kinds``: the hazard kinds kept (the others are counted as filtered and
    go no further). ``keep_findings``: keep every kept finding too.
    ``ahead_min``: a batch that made fewer new groups than this is not worth
    faulting memory in ahead for (``pools.Ahead``).
    """

    def __init__(
        self,
        meta: TraceMeta,
        kinds: Iterable[int] | None = None,
        *,
        keep_findings: bool = False,
        examples: int = EXAMPLES,
        ahead_min: int = AHEAD_MIN,
    ) -> None:
        if not 0 < examples < 255:
            raise ValueError(f"examples must be in 1..254, not {examples}")
        self._canon = site_keys(meta)
        self._nsites = len(meta.sites)
        self._base = self._nsites + 3  # earlier keys 0 .. nsites + 2, later 0 .. nsites + 1
        if self._base**2 * 256 >= 1 << 63:
            raise ValueError(f"too many sites to group by ({self._nsites:,})")
        self._named, self._named_start = _buffer_ranges(meta)
        self._launch_named = any(b.launch is not None for b in meta.buffers)
        self._keep = np.zeros(256, dtype=bool)
        self._keep[list(range(N_KINDS)) if kinds is None else [int(k) for k in kinds]] = True
        self._keep_all = bool(self._keep[:N_KINDS].all())
        self._keep_findings = keep_findings
        self._k = examples
        self._groups = Records(GROUP_DTYPE)
        self._loc = Records(LOCATOR_DTYPE)
        self._ahead = Ahead((self._groups, self._loc), ahead_min)
        self._table = np.zeros(0, dtype=np.uint64)
        self._sv = np.zeros(SV_FIELDS, dtype=np.int64)
        self._rows_seen = np.zeros(0, dtype=np.uint8)  # bitmap of racy rows
        self.by_kind = np.zeros(256, dtype=np.int64)
        self.filtered_by_kind = np.zeros(N_KINDS, dtype=np.int64)
        # Examples: parts in the order found, trimmed to ``examples`` per group
        # when a batch came before a group's last example.
        self._ex_parts: list[np.ndarray] = []
        self._ex_gid_parts: list[np.ndarray] = []
        self._kept_parts: list[np.ndarray] = []
        self._kept_gid_parts: list[np.ndarray] = []
        self._alias_parts: list[np.ndarray] = []

    @property
    def groups(self) -> int:
        return int(self._sv[SV_GROUPS])

    # -- adding ---------------------------------------------------------------

    def add(self, findings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fold one batch in. Returns the kept findings, in canonical order,
        and the group id of each (what a streaming output writes)."""
        findings = np.ascontiguousarray(findings)
        canonical, max_kind = scan(findings)
        if not self._keep_all or max_kind >= N_KINDS:
            kinds = findings["kind"]
            keep = self._keep[kinds]
            if not keep.all():
                self.filtered_by_kind += np.bincount(kinds[~keep], minlength=N_KINDS)[:N_KINDS]
                findings = take_rows(findings, np.flatnonzero(keep))
        n = len(findings)
        if n == 0:
            return findings, np.zeros(0, dtype=np.int64)
        if not canonical:
            findings = take_rows(
                findings, np.lexsort((findings["prev_row"], findings["kind"], findings["row"]))
            )
        groups, locators = self.groups, int(self._sv[SV_LOCATORS])
        self._room(n, int(findings["row"][-1]))
        gids = np.empty(n, dtype=np.int64)
        ex_idx = np.empty(n, dtype=np.int64)
        alias_idx = np.empty(n, dtype=np.int64)
        n_ex, early, n_alias = fold(
            findings,
            self._canon,
            _COPY_OPS,
            self._base,
            self._named,
            self._named_start,
            self._launch_named,
            self._k,
            len(self._ex_parts),
            self._groups.array,
            self._table,
            self._loc.array,
            self._sv,
            self.by_kind,
            self._rows_seen,
            gids,
            ex_idx,
            alias_idx,
            PREFETCH_AHEAD if groups >= PREFETCH_GROUPS else None,
        )
        used = (self.groups, int(self._sv[SV_LOCATORS]))
        self._ahead.after(
            used,
            (used[0] - groups, used[1] - locators),
            table_slots(2 * (used[0] + n)),
            len(self._table),
        )
        if n_ex:
            # Kept in the batch's order: when every finding is an example (a
            # group each), the batch itself is the part, uncopied.
            idx = ex_idx[:n_ex]
            self._ex_parts.append(findings if n_ex == n else take_rows(findings, idx))
            self._ex_gid_parts.append(gids if n_ex == n else gids[idx])
            if early:
                self._trim_examples()
        if n_alias:
            at = alias_idx[:n_alias]
            part = np.zeros(n_alias, dtype=ALIAS_DTYPE)
            for name in ALIAS_DTYPE.names:
                part[name] = findings[name][at]
            self._alias_parts.append(part)
        if self._keep_findings:
            self._kept_parts.append(findings)
            self._kept_gid_parts.append(gids)
        return findings, gids

    def compile_kernels(self) -> None:
        """Have every kernel the fold runs compiled (or loaded from Numba's cache)
        now, for each shape of its arguments: scanning, growing the table, and
        folding with and without the prefetch that many groups turn on. A check
        that finds nothing runs none of them; without this, the first check that
        finds something would compile them, after the notice of the first run
        promised that compiling was over. Leaves the builder as it was."""
        empty = np.zeros(0, dtype=FINDING_DTYPE)
        none = np.empty(0, dtype=np.int64)
        scan(empty)
        table = np.zeros(table_slots(1), dtype=np.uint64)
        rehash(self._table, table)
        sv = self._sv.copy()
        for prefetch in (None, PREFETCH_AHEAD):
            fold(
                empty,
                self._canon,
                _COPY_OPS,
                self._base,
                self._named,
                self._named_start,
                self._launch_named,
                self._k,
                0,
                self._groups.array,
                table,
                self._loc.array,
                sv,
                self.by_kind.copy(),
                self._rows_seen,
                none,
                none,
                none,
                prefetch,
            )

    def _room(self, n: int, last_row: int) -> None:
        """Capacities for ``n`` more findings (at most as many new groups, twice
        as many locators), up to row ``last_row``."""
        groups, locators = int(self._sv[SV_GROUPS]), int(self._sv[SV_LOCATORS])
        if (groups + n) * self._k >= 1 << 32:  # ids, and example positions, are 32-bit
            raise MemoryError(f"more than {(1 << 32) // self._k:,} groups")
        self._groups.room(groups + n, groups)
        # A finding logs at most its own range and its group's first.
        self._loc.room(locators + 2 * n, locators)
        need = (last_row >> 3) + 1
        if need > len(self._rows_seen):
            grown = np.zeros(max(need, 2 * len(self._rows_seen)), dtype=np.uint8)
            grown[: len(self._rows_seen)] = self._rows_seen
            self._rows_seen = grown
        want = 2 * (groups + n)  # at most half full
        if want > len(self._table):
            old = self._table
            slots = table_slots(want)
            spare = self._ahead.spare(slots)
            self._table = spare if spare is not None else np.zeros(slots, dtype=np.uint64)
            rehash(old, self._table)

    def _trim_examples(self) -> None:
        """Keep each group's first ``examples`` in canonical order."""
        ex, gid = self._examples()
        order = np.lexsort((ex["prev_row"], ex["kind"], ex["row"], gid))
        ex, gid = take_rows(ex, order), gid[order]
        head = np.ones(len(gid), dtype=bool)
        head[1:] = gid[1:] != gid[:-1]
        start = np.maximum.accumulate(np.where(head, np.arange(len(gid)), 0))
        keep = np.arange(len(gid)) - start < self._k
        ex, gid = take_rows(ex, np.flatnonzero(keep)), gid[keep]
        self._ex_parts, self._ex_gid_parts = [ex], [gid]
        g = self._groups.array[: self.groups]
        g["ex_n"] = np.bincount(gid, minlength=len(g))
        max_row = np.full(len(g), -1, dtype=np.int64)
        np.maximum.at(max_row, gid, ex["row"])
        g["ex_max_row"] = max_row
        heads = np.flatnonzero(np.concatenate(([True], gid[1:] != gid[:-1])))
        g["first_part"][gid[heads]] = 0
        g["first_index"][gid[heads]] = heads

    def _examples(self) -> tuple[np.ndarray, np.ndarray]:
        ex, gid = _joined(self._ex_parts, self._ex_gid_parts, FINDING_DTYPE)
        self._ex_parts, self._ex_gid_parts = [ex], [gid]
        return ex, gid

    def keys(self, f: np.ndarray) -> np.ndarray:
        """The group key of each finding, with NumPy (what ``fold`` computes)."""
        canon, last = self._canon, self._nsites
        later = canon[np.minimum(f["site"].astype(np.int64), last)] + 1
        earlier = canon[np.minimum(f["prev_site"].astype(np.int64), last)] + 2
        earlier[f["prev_row"] == NO_ROW] = 0
        r1, r2 = roles(f)
        pair = (earlier * self._base + later).astype(np.uint64)
        return (pair * np.uint64(16) + f["kind"].astype(np.uint64)) * np.uint64(16) + (
            r1.astype(np.uint64) * np.uint64(4) + r2
        )

    # -- the result -------------------------------------------------------------

    def table(self) -> GroupTable:
        self._ahead.stop()
        findings = finding_groups = None
        if self._keep_findings:
            if self._kept_parts:
                findings = concat_rows(self._kept_parts)
                finding_groups = np.concatenate(self._kept_gid_parts)
                order = np.lexsort((findings["prev_row"], findings["kind"], findings["row"]))
                findings, finding_groups = take_rows(findings, order), finding_groups[order]
            else:
                findings, finding_groups = empty_findings(), np.zeros(0, dtype=np.int64)
        aliases = (
            np.concatenate(self._alias_parts)
            if self._alias_parts
            else np.zeros(0, dtype=ALIAS_DTYPE)
        )
        aliases = aliases[np.argsort(aliases["row"], kind="stable")]
        errors = int(self._sv[SV_ERRORS])
        return GroupTable(
            groups=self._groups.array[: self.groups],
            example_parts=self._ex_parts,
            example_gid_parts=self._ex_gid_parts,
            locator_log=self._loc.array[: int(self._sv[SV_LOCATORS])],
            findings=findings,
            finding_groups=finding_groups,
            aliases=aliases,
            by_kind=self.by_kind[:N_KINDS].copy(),
            filtered_by_kind=self.filtered_by_kind.copy(),
            errors=errors,
            warnings=int(self.by_kind.sum()) - errors,
            racy_rows=int(self._sv[SV_RACY]),
        )


def take_rows(records: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``records[index]`` for a structured array, as rows of bytes: NumPy copies
    packed records field by field otherwise (ten times slower)."""
    records = np.ascontiguousarray(records)
    raw = records.view(np.uint8).reshape(len(records), records.dtype.itemsize)
    return np.take(raw, index, axis=0).view(records.dtype).reshape(-1)


def concat_rows(parts: list[np.ndarray]) -> np.ndarray:
    """``np.concatenate`` of structured arrays of one dtype, as opaque records."""
    dtype = parts[0].dtype
    void = np.dtype((np.void, dtype.itemsize))
    return np.concatenate([np.ascontiguousarray(p).view(void) for p in parts]).view(dtype)


def _buffer_ranges(meta: TraceMeta) -> tuple[np.ndarray, np.ndarray]:
    """The declared buffers' byte ranges, merged, by space then start: rows of
    (lo, hi), and where each space's rows start (``fold``'s ``named``)."""
    rows: list[tuple[int, int]] = []
    start = [0]
    for space in range(len(Space)):
        spans = sorted(
            (b.base, b.base + b.nbytes_span)
            for b in meta.buffers
            if b.space == space and b.nbytes_span > 0
        )
        merged: list[list[int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        rows.extend((lo, min(hi, int(_U64_MAX))) for lo, hi in merged)
        start.append(len(rows))
    return (np.array(rows, dtype=np.uint64).reshape(-1, 2), np.array(start, dtype=np.int64))


def _joined(
    parts: list[np.ndarray], gid_parts: list[np.ndarray], dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """Parts (and their group ids) as one array each."""
    if not parts:
        return np.zeros(0, dtype=dtype), np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0], gid_parts[0]
    return concat_rows(parts), np.concatenate(gid_parts)


def group_findings(
    findings: np.ndarray,
    meta: TraceMeta,
    kinds: Iterable[int] | None = None,
    *,
    keep_findings: bool = True,
) -> GroupTable:
    """The :class:`GroupTable` of a whole findings array at once."""
    builder = GroupBuilder(meta, kinds, keep_findings=keep_findings)
    builder.add(findings)
    return builder.table()


__all__ = [
    "EXAMPLES",
    "FINDING_DTYPE",
    "ROLE_NAMES",
    "GroupBuilder",
    "GroupTable",
    "group_findings",
    "roles",
    "site_keys",
]
