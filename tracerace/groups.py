"""Findings grouped as they are found: memory bounded by the groups, not the findings.

A checker hands its findings over a batch at a time (``FINDING_DTYPE``
arrays); :class:`GroupBuilder` folds each batch into per-group totals with
NumPy and keeps only a few examples per group, so a trace with 10^7 findings
at a handful of source lines costs a handful of rows.

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
from dataclasses import dataclass

import numpy as np

from .findings import FINDING_DTYPE, empty_findings
from .meta import TraceMeta
from .ops import HazardKind, Op, Severity

EXAMPLES = 8
"""Members kept per group, first in canonical order."""

ROLE_NONE, ROLE_THREAD, ROLE_COPY = 0, 1, 2
ROLE_NAMES = ("none", "thread", "async copy")

N_KINDS = len(HazardKind)
NO_ROW = -1

_COPY_OPS = np.zeros(256, dtype=bool)
_COPY_OPS[[int(Op.CP_ASYNC), int(Op.TMA_LOAD), int(Op.TMA_STORE)]] = True
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)
_U64_MAX = np.iinfo(np.uint64).max

LOCATOR_DTYPE = np.dtype([("row", np.int64), ("space", np.uint8), ("owner", np.uint32),
                          ("addr", np.uint64), ("size", np.uint32), ("launch", np.uint32)])
"""A byte range a group's members touch, and the row of the first that did."""

ALIAS_DTYPE = np.dtype([("row", np.int64), ("launch", np.uint32), ("block", np.uint32),
                        ("thread", np.uint32), ("site", np.uint32), ("obj", np.uint64)])
"""What is kept of a ``sync_alias`` error: the wait, its thread, its flag."""

# Per-group statistics kept in arrays indexed by group id: name -> (dtype, start
# value, how a batch's value merges in).
_STATS = {
    "count": (np.int64, 0, np.add),
    "severity": (np.uint8, 255, np.minimum),
    "lo": (np.uint64, _U64_MAX, np.minimum),      # lowest byte (members with bytes)
    "last": (np.uint64, 0, np.maximum),           # highest byte
    "space_min": (np.uint8, 255, np.minimum),
    "space_max": (np.uint8, 0, np.maximum),
    "owner_min": (np.uint32, np.iinfo(np.uint32).max, np.minimum),
    "owner_max": (np.uint32, 0, np.maximum),
    "launch_min": (np.uint32, np.iinfo(np.uint32).max, np.minimum),
    "launch_max": (np.uint32, 0, np.maximum),
    "bytes": (np.int64, 0, np.add),                # members with bytes (size > 0)
}


def site_keys(meta: TraceMeta) -> np.ndarray:
    """Site index -> grouping key: equal texts share the smallest index; the
    last entry (any index past the list, such as "no site") is -1."""
    canon = np.full(len(meta.sites) + 1, -1, dtype=np.int64)
    if meta.sites:
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
    earlier = np.where((findings["prev_async"] != 0) | _COPY_OPS[findings["prev_op"]],
                       ROLE_COPY, ROLE_THREAD).astype(np.uint8)
    earlier[findings["prev_row"] == NO_ROW] = ROLE_NONE
    return earlier, later


def is_canonical(findings: np.ndarray) -> bool:
    """Whether ``findings`` are in canonical order (row, kind, earlier row)."""
    if len(findings) < 2:
        return True
    row, kind, prev = findings["row"], findings["kind"], findings["prev_row"]
    up = row[1:] > row[:-1]
    same = row[1:] == row[:-1]
    kind_up = kind[1:] > kind[:-1]
    same_kind = kind[1:] == kind[:-1]
    return bool(np.all(up | (same & (kind_up | (same_kind & (prev[1:] >= prev[:-1]))))))


def _expand(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])``."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(total)


@dataclass(frozen=True)
class GroupTable:
    """The groups of one check, as arrays indexed by group id (see the module doc)."""

    kind: np.ndarray
    earlier_role: np.ndarray
    later_role: np.ndarray
    stats: dict[str, np.ndarray]
    examples: np.ndarray
    """``FINDING_DTYPE`` records: every group's first members, by group id, then canonical order."""
    example_start: np.ndarray
    """Group ``g``'s examples are ``examples[example_start[g]:example_start[g + 1]]``."""
    locators: np.ndarray
    """``LOCATOR_DTYPE``: every group's first distinct byte ranges found, by group
    id, then row (the row of the first member that touched the range)."""
    locator_start: np.ndarray
    more_locators: np.ndarray
    """Whether group ``g``'s members touch more byte ranges than its locators."""
    findings: np.ndarray | None
    """Every kept finding, in canonical order (only when asked to keep them)."""
    finding_groups: np.ndarray | None
    """The group id of each of :attr:`findings`."""
    aliases: np.ndarray
    """``ALIAS_DTYPE``: every ``sync_alias`` error, by row."""
    by_kind: np.ndarray
    """Kept findings per kind."""
    filtered_by_kind: np.ndarray
    """Findings the kind filter dropped, per kind."""
    errors: int
    warnings: int
    racy_rows: int

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def count(self) -> np.ndarray:
        return self.stats["count"]

    @property
    def severity(self) -> np.ndarray:
        return self.stats["severity"]

    def example(self, g: int) -> np.void:
        """The first member of group ``g``."""
        return self.examples[int(self.example_start[g])]

    def locators_of(self, g: int) -> np.ndarray:
        return self.locators[int(self.locator_start[g]):int(self.locator_start[g + 1])]

    def first_rows(self) -> np.ndarray:
        return self.examples["row"][self.example_start[:-1]]

    def display_order(self) -> np.ndarray:
        """Group ids, errors first, then by the row of their first member, then kind."""
        if len(self) == 0:
            return np.zeros(0, dtype=np.int64)
        warning = self.severity != Severity.ERROR
        return np.lexsort((self.kind, self.first_rows(), warning))

    def alias_behind(self, launch: int, block: int, thread: int, row: int) -> np.void | None:
        """The ``sync_alias`` error of thread ``(launch, block, thread)``: the
        latest before ``row``, else the first after it (``ALIAS_DTYPE``), or None."""
        a = self.aliases
        if len(a) == 0:
            return None
        mine = np.flatnonzero((a["launch"] == launch) & (a["block"] == block)
                              & (a["thread"] == thread))
        if mine.size == 0:
            return None
        before = mine[a["row"][mine] < row]  # aliases are by row
        return a[before[-1]] if before.size else a[mine[0]]


class GroupBuilder:
    """Folds batches of findings into a :class:`GroupTable`.

    ``kinds``: the hazard kinds kept (the others are counted as filtered and
    go no further). ``keep_findings``: keep every kept finding too.
    """

    def __init__(self, meta: TraceMeta, kinds: Iterable[int] | None = None, *,
                 keep_findings: bool = False, examples: int = EXAMPLES) -> None:
        self._canon = site_keys(meta)
        self._nsites = len(meta.sites)
        self._base = self._nsites + 3  # earlier keys 0 .. nsites + 2, later 0 .. nsites + 1
        if self._base ** 2 * 256 >= 1 << 63:
            raise ValueError(f"too many sites to group by ({self._nsites:,})")
        self._named = _buffer_ranges(meta)
        self._launch_named = any(b.launch is not None for b in meta.buffers)
        self._keep = np.zeros(256, dtype=bool)
        self._keep[list(range(N_KINDS)) if kinds is None else [int(k) for k in kinds]] = True
        self._keep_findings = keep_findings
        self._k = examples
        # Groups, by id.
        self._n = 0
        self._key = np.zeros(16, dtype=np.uint64)
        self._stats = {name: np.full(16, start, dtype) for name, (dtype, start, _) in
                       _STATS.items()}
        # The keys in order, for lookups.
        self._sorted_keys = np.zeros(0, dtype=np.uint64)
        self._sorted_ids = np.zeros(0, dtype=np.int64)
        # Examples: appended parts, trimmed to ``examples`` per group when needed.
        self._ex_parts: list[np.ndarray] = []
        self._ex_gid_parts: list[np.ndarray] = []
        self._ex_n = np.zeros(16, dtype=np.int64)
        self._ex_max_row = np.full(16, -1, dtype=np.int64)
        self._loc_parts: list[np.ndarray] = []
        self._loc_gid_parts: list[np.ndarray] = []
        self._loc_n = np.zeros(16, dtype=np.int64)
        self._loc_more = np.zeros(16, dtype=bool)
        self._kept_parts: list[np.ndarray] = []
        self._kept_gid_parts: list[np.ndarray] = []
        self._alias_parts: list[np.ndarray] = []
        self.by_kind = np.zeros(N_KINDS, dtype=np.int64)
        self.filtered_by_kind = np.zeros(N_KINDS, dtype=np.int64)
        self.errors = 0
        self.warnings = 0
        self._rows_seen = np.zeros(0, dtype=np.uint8)  # bitmap of racy rows
        self.racy_rows = 0

    # -- adding ---------------------------------------------------------------

    def add(self, findings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fold one batch in. Returns the kept findings, in canonical order,
        and the group id of each (what a streaming output writes)."""
        kinds = findings["kind"]
        keep = self._keep[kinds]
        if not keep.all():
            self.filtered_by_kind += np.bincount(kinds[~keep], minlength=N_KINDS)[:N_KINDS]
            findings = take_rows(findings, np.flatnonzero(keep))
        if len(findings) == 0:
            return findings, np.zeros(0, dtype=np.int64)
        if not is_canonical(findings):
            findings = take_rows(findings, np.lexsort(
                (findings["prev_row"], findings["kind"], findings["row"])))
        self.by_kind += np.bincount(findings["kind"], minlength=N_KINDS)[:N_KINDS]
        errors = int(np.count_nonzero(findings["severity"] == Severity.ERROR))
        self.errors += errors
        self.warnings += len(findings) - errors
        self._count_rows(findings["row"])
        gids = self._fold(findings)
        alias = (findings["kind"] == HazardKind.SYNC_ALIAS) & (
            findings["severity"] == Severity.ERROR)
        if alias.any():
            part = np.zeros(int(alias.sum()), dtype=ALIAS_DTYPE)
            for name in ALIAS_DTYPE.names:
                part[name] = findings[name][alias]
            self._alias_parts.append(part)
        if self._keep_findings:
            self._kept_parts.append(findings)
            self._kept_gid_parts.append(gids)
        return findings, gids

    def _keys(self, f: np.ndarray) -> np.ndarray:
        canon = self._canon
        last = self._nsites
        later = canon[np.minimum(f["site"].astype(np.int64), last)] + 1
        earlier = canon[np.minimum(f["prev_site"].astype(np.int64), last)] + 2
        earlier[f["prev_row"] == NO_ROW] = 0
        r1, r2 = roles(f)
        pair = (earlier * self._base + later).astype(np.uint64)
        return ((pair * np.uint64(16) + f["kind"].astype(np.uint64)) * np.uint64(16)
                + (r1.astype(np.uint64) * np.uint64(4) + r2))

    def _fold(self, f: np.ndarray) -> np.ndarray:
        n = len(f)
        key = self._keys(f)
        # Runs of equal keys (a kernel bug repeats one pair many times in a
        # row), then the runs sorted by key: the common case sorts few keys.
        cut = np.flatnonzero(key[1:] != key[:-1]) + 1
        run_start = np.concatenate(([0], cut))
        run_len = np.diff(np.append(run_start, n))
        order = stable_order(key[run_start])
        sorted_keys = key[run_start][order]
        head = np.ones(len(order), dtype=bool)
        head[1:] = sorted_keys[1:] != sorted_keys[:-1]
        local_sorted = np.cumsum(head) - 1          # chunk group of each sorted run
        group_keys = sorted_keys[head]
        ng = len(group_keys)
        run_group = np.empty(len(order), dtype=np.int64)
        run_group[order] = local_sorted

        # Chunk groups -> ids; new groups numbered by their first finding.
        pos = np.searchsorted(self._sorted_keys, group_keys)
        found = pos < len(self._sorted_keys)
        found[found] = self._sorted_keys[pos[found]] == group_keys[found]
        ids = np.empty(ng, dtype=np.int64)
        ids[found] = self._sorted_ids[pos[found]]
        new = np.flatnonzero(~found)
        if new.size:
            first_at = run_start[order[head]]       # first finding of each chunk group
            new = new[np.argsort(first_at[new])]    # distinct positions
            ids[new] = np.arange(self._n, self._n + new.size)
            self._grow(self._n + new.size)
            self._key[ids[new]] = group_keys[new]
            self._n += new.size
            ins = np.sort(new)                       # by key, as pos is
            self._sorted_keys = np.insert(self._sorted_keys, pos[ins], group_keys[ins])
            self._sorted_ids = np.insert(self._sorted_ids, pos[ins], ids[ins])

        # Statistics: per run (contiguous reduceat), then runs into groups.
        has_bytes = f["size"] > 0
        addr = f["addr"]
        per_finding = {
            "count": np.ones(n, dtype=np.int64),
            "severity": f["severity"],
            "lo": np.where(has_bytes, addr, _U64_MAX),
            "last": np.where(has_bytes, addr + (f["size"].astype(np.uint64) - np.uint64(1)),
                             0).astype(np.uint64),
            **{f"{name}_{end}": np.where(has_bytes, f[name], _STATS[f"{name}_{end}"][1])
               for name in ("space", "owner", "launch") for end in ("min", "max")},
            "bytes": has_bytes.astype(np.int64),
        }
        if len(run_start) == n:  # every finding a run of its own
            per_run = per_finding
        else:
            per_run = {name: _STATS[name][2].reduceat(values, run_start)
                       for name, values in per_finding.items()}
        gid_of_run = ids[run_group]
        one_run = len(order) == ng  # each group one run: ids are distinct, no ufunc.at
        for name, (dtype, _, merge) in _STATS.items():
            values = per_run[name].astype(dtype)
            if one_run:
                stat = self._stats[name]
                stat[gid_of_run] = merge(stat[gid_of_run], values)
            else:
                merge.at(self._stats[name], gid_of_run, values)

        self._add_examples(f, run_start[order], run_len[order], local_sorted, ids)
        gids = np.repeat(gid_of_run, run_len)
        self._add_locators(f, gids)
        return gids

    def _add_examples(self, f: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                      run_group: np.ndarray, ids: np.ndarray) -> None:
        """Offer each chunk group's first members (runs sorted by group, then
        position) as examples."""
        k = self._k
        ends = np.cumsum(lengths)
        group_head = np.ones(len(starts), dtype=bool)
        group_head[1:] = run_group[1:] != run_group[:-1]
        base = np.maximum.accumulate(np.where(group_head, ends - lengths, 0))
        before = ends - lengths - base                  # members of the group in earlier runs
        take = np.clip(k - before, 0, lengths)
        idx = _expand(starts[take > 0], take[take > 0])
        if idx.size == 0:
            return
        gid = np.repeat(ids[run_group[take > 0]], take[take > 0])
        # A finding no later than a group's last example may displace one (a
        # batch nearly always comes after everything before it, and then only
        # fills the groups that have room): those are added and trimmed.
        early = f["row"][idx] <= self._ex_max_row[gid]
        head = np.ones(len(gid), dtype=bool)
        head[1:] = gid[1:] != gid[:-1]
        rank = np.arange(len(gid)) - np.maximum.accumulate(
            np.where(head, np.arange(len(gid)), 0))
        accept = early | (rank < k - self._ex_n[gid])
        idx, gid = idx[accept], gid[accept]
        if idx.size == 0:
            return
        cand = take_rows(f, idx)
        self._ex_parts.append(cand)
        self._ex_gid_parts.append(gid)
        # ``gid`` comes group by group, each group's by row: its last is its latest.
        last = np.flatnonzero(np.append(gid[1:] != gid[:-1], True))
        first = np.concatenate(([0], last[:-1] + 1))
        self._ex_n[gid[last]] += last - first + 1
        rows = cand["row"][last]
        self._ex_max_row[gid[last]] = np.maximum(self._ex_max_row[gid[last]], rows)
        if early[accept].any():
            self._trim_examples()

    def _add_locators(self, f: np.ndarray, gids: np.ndarray) -> None:
        """Record the byte ranges of this batch that groups with room have not seen."""
        cand = np.flatnonzero((f["size"] > 0) & ~self._loc_more[gids])
        if cand.size == 0:
            return
        g = gids[cand]
        ident = self._identity(f, cand)
        # A group with nothing stored that has one candidate: it is new (the
        # common case when nearly every finding is a group of its own).
        counts = np.bincount(g - g.min(), minlength=1) if g.size else g
        alone = (counts[g - g.min()] == 1) & (self._loc_n[g] == 0)
        if alone.any():
            self._store_locators(f, g[alone], cand[alone])
            keep = ~alone
            cand, g, ident = cand[keep], g[keep], [a[keep] for a in ident]
            if cand.size == 0:
                return
        # Ranges these groups stored before (only groups that have some).
        seen = self._loc_n[g] > 0
        if seen.any():
            stored, stored_gid = _joined(self._loc_parts, self._loc_gid_parts, LOCATOR_DTYPE)
            self._loc_parts, self._loc_gid_parts = [stored], [stored_gid]
            involved = np.zeros(self._n, dtype=bool)
            involved[g[seen]] = True
            mine = involved[stored_gid]
            old_g, old_ident = stored_gid[mine], self._identity(stored, np.flatnonzero(mine))
        else:
            old_g, old_ident = np.zeros(0, np.int64), [np.zeros(0, a.dtype) for a in ident]
        # The stored ranges and the candidates, sorted by (group, range, stored
        # first, position): a run's head is the range's first appearance, and
        # it is new when it is a candidate.
        group = np.concatenate([old_g, g])
        source = np.concatenate([np.zeros(len(old_g), np.int8), np.ones(cand.size, np.int8)])
        position = np.concatenate([np.zeros(len(old_g), np.int64), cand])
        keys = [np.concatenate([a, b]) for a, b in zip(old_ident, ident)]
        order = np.lexsort((position, source, *reversed(keys), group))
        same = np.ones(len(order) - 1, dtype=bool)
        for key in (group, *keys):
            k = key[order]
            same &= k[1:] == k[:-1]
        first = order[np.concatenate(([True], ~same))]
        first = first[source[first] == 1]
        if first.size == 0:
            return
        # ``first`` is by group, then range: put each group's new ranges by position.
        new_g, new_pos = group[first], position[first]
        o = np.lexsort((new_pos, new_g))
        new_g, new_pos = new_g[o], new_pos[o]
        starts = np.ones(len(new_g), dtype=bool)
        starts[1:] = new_g[1:] != new_g[:-1]
        rank = np.arange(len(new_g)) - np.maximum.accumulate(
            np.where(starts, np.arange(len(new_g)), 0))
        accept = rank < self._k - self._loc_n[new_g]
        self._loc_more[new_g[~accept]] = True
        if accept.any():
            self._store_locators(f, new_g[accept], new_pos[accept])

    def _store_locators(self, f: np.ndarray, gid: np.ndarray, at: np.ndarray) -> None:
        part = np.zeros(gid.size, dtype=LOCATOR_DTYPE)
        for name in LOCATOR_DTYPE.names:
            part[name] = f[name][at]
        self._loc_parts.append(part)
        self._loc_gid_parts.append(gid)
        np.add.at(self._loc_n, gid, 1)

    def _identity(self, r: np.ndarray, at: np.ndarray) -> list[np.ndarray]:
        """What tells the byte ranges ``r[at]`` apart in a report (see the module
        doc): (space, owner, addr, size, launch) with the owner 0 inside a
        declared buffer and the launch 0 outside buffers declared for one launch."""
        space, addr = r["space"][at], r["addr"][at]
        named = np.zeros(len(at), dtype=bool)
        for sp, (starts, ends) in self._named.items():
            mine = np.flatnonzero(space == sp)
            where = np.searchsorted(starts, addr[mine], side="right") - 1
            inside = where >= 0
            inside[inside] = addr[mine][inside] < ends[where[inside]]
            named[mine[inside]] = True
        owner = np.where(named, 0, r["owner"][at]).astype(np.uint32)
        launch = (np.where(named, r["launch"][at], 0) if self._launch_named
                  else np.zeros(len(at))).astype(np.uint32)
        return [space, owner, addr, r["size"][at], launch]

    def _trim_examples(self) -> None:
        ex, gid = self._examples()
        order = np.lexsort((ex["prev_row"], ex["kind"], ex["row"], gid))
        ex, gid = take_rows(ex, order), gid[order]
        head = np.ones(len(gid), dtype=bool)
        head[1:] = gid[1:] != gid[:-1]
        start = np.maximum.accumulate(np.where(head, np.arange(len(gid)), 0))
        keep = np.arange(len(gid)) - start < self._k
        ex, gid = take_rows(ex, np.flatnonzero(keep)), gid[keep]
        self._ex_parts, self._ex_gid_parts = [ex], [gid]
        self._ex_n[:] = 0
        np.add.at(self._ex_n, gid, 1)
        self._ex_max_row[:] = -1
        np.maximum.at(self._ex_max_row, gid, ex["row"])

    def _examples(self) -> tuple[np.ndarray, np.ndarray]:
        ex, gid = _joined(self._ex_parts, self._ex_gid_parts, FINDING_DTYPE)
        self._ex_parts, self._ex_gid_parts = [ex], [gid]
        return ex, gid

    def _grow(self, n: int) -> None:
        cap = len(self._key)
        if n <= cap:
            return
        while cap < n:
            cap *= 2

        def grown(a: np.ndarray, fill) -> np.ndarray:
            out = np.full(cap, fill, a.dtype)
            out[:len(a)] = a
            return out

        self._key = grown(self._key, 0)
        self._stats = {name: grown(self._stats[name], start)
                       for name, (_, start, _) in _STATS.items()}
        self._ex_n = grown(self._ex_n, 0)
        self._ex_max_row = grown(self._ex_max_row, -1)
        self._loc_n = grown(self._loc_n, 0)
        self._loc_more = grown(self._loc_more, False)

    def _count_rows(self, rows: np.ndarray) -> None:
        """Add the distinct ``rows`` (sorted) to the racy-row bitmap and count the new ones."""
        rows = rows[np.concatenate(([True], rows[1:] != rows[:-1]))]
        byte = rows >> 3
        need = int(byte[-1]) + 1
        if need > len(self._rows_seen):
            grown = np.zeros(max(need, 2 * len(self._rows_seen)), dtype=np.uint8)
            grown[:len(self._rows_seen)] = self._rows_seen
            self._rows_seen = grown
        bits = (np.uint8(1) << (rows & 7).astype(np.uint8)).astype(np.uint8)
        if np.all(byte[1:] > byte[:-1]):
            starts = np.arange(len(byte))
        else:  # rows are sorted, so bytes are; combine the bits of each byte
            starts = np.flatnonzero(np.concatenate(([True], byte[1:] != byte[:-1])))
            bits = np.bitwise_or.reduceat(bits, starts)
        at = byte[starts]
        fresh = bits & ~self._rows_seen[at]
        self.racy_rows += int(_POPCOUNT[fresh].sum())
        self._rows_seen[at] |= bits

    # -- the result -------------------------------------------------------------

    def table(self) -> GroupTable:
        n = self._n
        ex, gid = self._examples()
        # A group's examples are in canonical order already (a batch is; one
        # that came before a group's last example made it sort them all).
        order = stable_order(gid)
        ex, gid = take_rows(ex, order), gid[order]
        start = np.searchsorted(gid, np.arange(n + 1))
        key = self._key[:n]
        loc, loc_gid = _joined(self._loc_parts, self._loc_gid_parts, LOCATOR_DTYPE)
        order = np.lexsort((np.ascontiguousarray(loc["row"]), loc_gid))
        loc, loc_gid = take_rows(loc, order), loc_gid[order]
        findings = finding_groups = None
        if self._keep_findings:
            if self._kept_parts:
                findings = concat_rows(self._kept_parts)
                finding_groups = np.concatenate(self._kept_gid_parts)
                order = np.lexsort((findings["prev_row"], findings["kind"], findings["row"]))
                findings, finding_groups = take_rows(findings, order), finding_groups[order]
            else:
                findings, finding_groups = empty_findings(), np.zeros(0, dtype=np.int64)
        aliases = (np.concatenate(self._alias_parts) if self._alias_parts
                   else np.zeros(0, dtype=ALIAS_DTYPE))
        aliases = aliases[np.argsort(aliases["row"], kind="stable")]
        return GroupTable(
            kind=((key >> np.uint64(4)) & np.uint64(15)).astype(np.uint8),
            earlier_role=((key >> np.uint64(2)) & np.uint64(3)).astype(np.uint8),
            later_role=(key & np.uint64(3)).astype(np.uint8),
            stats={name: a[:n].copy() for name, a in self._stats.items()},
            examples=ex, example_start=start, locators=loc,
            locator_start=np.searchsorted(loc_gid, np.arange(n + 1)),
            more_locators=self._loc_more[:n].copy(), findings=findings,
            finding_groups=finding_groups, aliases=aliases,
            by_kind=self.by_kind.copy(), filtered_by_kind=self.filtered_by_kind.copy(),
            errors=self.errors, warnings=self.warnings, racy_rows=self.racy_rows)


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


def _buffer_ranges(meta: TraceMeta) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per space, the declared buffers' byte ranges merged: sorted starts and their ends."""
    out = {}
    for space in sorted({b.space for b in meta.buffers}):
        spans = sorted((b.base, b.base + b.nbytes_span) for b in meta.buffers
                       if b.space == space and b.nbytes_span > 0)
        merged: list[list[int]] = []
        for lo, hi in spans:
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        if merged:
            starts = np.array([lo for lo, _ in merged], dtype=np.uint64)
            ends = np.array([min(hi, _U64_MAX) for _, hi in merged], dtype=np.uint64)
            out[space] = (starts, ends)
    return out


def _joined(parts: list[np.ndarray], gid_parts: list[np.ndarray],
            dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """Parts (and their group ids) as one array each."""
    if not parts:
        return np.zeros(0, dtype=dtype), np.zeros(0, dtype=np.int64)
    if len(parts) == 1:
        return parts[0], gid_parts[0]
    return concat_rows(parts), np.concatenate(gid_parts)


def group_findings(findings: np.ndarray, meta: TraceMeta, kinds: Iterable[int] | None = None,
                   *, keep_findings: bool = True) -> GroupTable:
    """The :class:`GroupTable` of a whole findings array at once."""
    builder = GroupBuilder(meta, kinds, keep_findings=keep_findings)
    builder.add(findings)
    return builder.table()


__all__ = ["EXAMPLES", "FINDING_DTYPE", "GroupBuilder", "GroupTable", "group_findings",
           "roles", "site_keys"]
