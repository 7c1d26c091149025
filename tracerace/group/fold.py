"""The compiled fold of findings into groups, and its hash table.

:func:`fold` is the one jitted pass over a batch of findings that
:class:`tracerace.group.groups.GroupBuilder` makes (the grouping itself, its key
and what is kept per group: :mod:`tracerace.group.groups`); :func:`group_key` is the
key it folds by, :func:`rehash` moves the hash table into a larger one
(:func:`table_slots`). The record pools the fold writes into, and the thread
that faults their pages in ahead, are :mod:`tracerace.group.pools`.
"""

from __future__ import annotations

import numpy as np

from ..checker.findings import NO_ROW
from ..checker.jit import jit_inline, jit_kernel, jit_leaf, prefetch_row
from ..trace.ops import HazardKind

ROLE_NONE, ROLE_THREAD, ROLE_COPY = 0, 1, 2
ROLE_NAMES = ("none", "thread", "async copy")

KIND_SYNC_ALIAS = int(HazardKind.SYNC_ALIAS)

LOCATOR_DTYPE = np.dtype(
    [
        ("row", np.int64),
        ("addr", np.uint64),
        ("next", np.int64),
        ("group", np.int64),
        ("owner", np.uint32),
        ("launch", np.uint32),
        ("size", np.uint32),
        ("space", np.uint8),
        ("named", np.uint8),
    ],
    align=True,
)
"""A byte range a group's members touch: the row of the first that did, the
bytes, the group, the group's entry logged before it in the fold's log (-1:
none), and whether a declared buffer holds the range (then the report names
it by element)."""


# -- the fold kernel -------------------------------------------------------------
#
# State: a GROUP_DTYPE record per group id; a hash table from group key to id
# (``table``: per slot the high 32 bits of the key's hash above id + 1, 0
# empty, so a probe reads a group's record only when the hashes agree); the
# locators. A group's first byte range lives in its record (``loc_row``,
# ``loc_named``, and the span, which is that range while one member has
# bytes); it is written to the locator log when a second member with bytes
# comes, and the log's entries of a group are a list through ``next``, newest
# first. Most groups of a racy trace have one member: they cost a record and
# no log entry. Records and locators grow in place (tracerace.checker.engine.mapped: no
# copy); the pages the next batch's records take, and the table the next
# growth needs, are faulted in ahead on another thread (``pools.Ahead``):
# fresh pages, not the fold's work, were most of what a group cost
# (bench/README.md, the racy rows). Capacities are made before a call (GroupBuilder._room), so
# the kernel never runs out. The fold allocates nothing and is compiled
# without reference counting (``jit_kernel``): the atomic increments and
# decrements of the record views it takes were much of its time (ibid.).

GROUP_DTYPE = np.dtype(
    [
        ("key", np.int64),
        ("count", np.int64),
        ("bytes", np.int64),
        ("lo", np.uint64),
        ("last", np.uint64),  # the span's first and last byte
        ("first_row", np.int64),
        ("ex_max_row", np.int64),  # examples: the last's row
        ("loc_row", np.int64),  # locators: the first's row
        ("loc_head", np.int64),  # the log's entries, newest first
        ("first_index", np.uint32),
        ("first_part", np.uint32),  # examples: where the first is
        ("owner_min", np.uint32),
        ("owner_max", np.uint32),
        ("launch_min", np.uint32),
        ("launch_max", np.uint32),
        ("severity", np.uint8),
        ("space_min", np.uint8),
        ("space_max", np.uint8),
        ("ex_n", np.uint8),
        ("loc_n", np.uint8),
        ("loc_more", np.uint8),
        ("loc_named", np.uint8),  # locators: the first's ``named``
    ],
    align=True,
)
"""A group's state while findings are folded in."""

SV_GROUPS, SV_LOCATORS, SV_ERRORS, SV_RACY = range(4)
SV_FIELDS = 4
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the product's high bits
_SHIFT32 = np.uint64(32)
PREFETCH_AHEAD = 8  # findings: the fold asks for the hash slot of the one this far ahead,
PREFETCH_GROUPS = 1 << 14  # once there are this many groups (fewer: their slots are cached)
_LOW32 = np.uint64(0xFFFFFFFF)
_U32_MAX = np.iinfo(np.uint32).max
assert GROUP_DTYPE.itemsize % 8 == 0 and LOCATOR_DTYPE.itemsize % 8 == 0  # int64 rows


@jit_kernel
def fold(
    f,
    canon,
    copy_ops,
    base,
    buffers,
    buffer_start,
    launch_named,
    k,
    part,
    groups,
    table,
    loc,
    sv,
    by_kind,
    rows_seen,
    gid,
    ex_idx,
    alias_idx,
    prefetch,
):
    """Fold findings ``f`` (canonical order) into the groups; ``gid`` gets each
    finding's group id, ``ex_idx`` the positions of the findings admitted as
    examples, ``alias_idx`` those of the ``sync_alias`` errors. Returns
    (examples admitted, whether one of them comes no later than an example its
    group had: the caller then re-sorts and trims, aliases)."""
    nsites = canon.shape[0] - 1
    mask = table.shape[0] - 1
    n_ex = 0
    n_alias = 0
    early = False
    last_row = np.int64(-1)
    n = f.shape[0]
    for i in range(n):
        # (Numba compiles one fold without this, for prefetch=None, and prunes it.)
        if prefetch is not None and i + prefetch < n:  # the slot a later finding will probe
            ahead = group_key(f[i + prefetch], canon, nsites, copy_ops, base)
            prefetch_row(table, np.int64((np.uint64(ahead) * _GOLDEN) >> _SHIFT32) & mask)
        r = f[i]
        key = group_key(r, canon, nsites, copy_ops, base)
        # Its group.
        hash32 = (np.uint64(key) * _GOLDEN) >> _SHIFT32
        h = np.int64(hash32) & mask
        while True:
            t = table[h]
            if t == 0 or (
                (t >> _SHIFT32) == hash32 and groups[np.int64(t & _LOW32) - 1].key == key
            ):
                break
            h = (h + 1) & mask
        if t == 0:
            g = sv[SV_GROUPS]
            sv[SV_GROUPS] += 1
            table[h] = (hash32 << _SHIFT32) | np.uint64(g + 1)
            s = groups[g]  # a fresh record: zeros
            s.key = key
            s.first_row = r.row
            s.lo = np.uint64(0xFFFFFFFFFFFFFFFF)
            s.ex_max_row = -1
            s.loc_head = -1
            s.owner_min = _U32_MAX
            s.launch_min = _U32_MAX
            s.severity = 255
            s.space_min = 255
        else:
            g = np.int64(t & _LOW32) - 1
            s = groups[g]
        gid[i] = g
        # Totals and statistics.
        by_kind[r.kind] += 1
        if r.severity == 0:
            sv[SV_ERRORS] += 1
            if r.kind == KIND_SYNC_ALIAS:
                alias_idx[n_alias] = i
                n_alias += 1
        if r.row != last_row:  # rows come in order: a new one is counted once
            last_row = r.row
            byte, bit = r.row >> 3, np.uint8(1) << np.uint8(r.row & 7)
            if (rows_seen[byte] & bit) == 0:
                rows_seen[byte] |= bit
                sv[SV_RACY] += 1
        s.count += 1
        s.first_row = min(s.first_row, r.row)
        s.severity = min(s.severity, r.severity)
        # Examples: a group's first k, and any that comes before its last one.
        if s.ex_n < k or r.row <= s.ex_max_row:
            if r.row <= s.ex_max_row:
                early = True
            if s.ex_n == 0:
                s.first_part = part
                s.first_index = n_ex
            s.ex_n = min(s.ex_n + 1, 255)
            s.ex_max_row = max(s.ex_max_row, r.row)
            ex_idx[n_ex] = i
            n_ex += 1
        if r.size == 0:
            continue
        addr = np.uint64(r.addr)
        if s.bytes == 0:
            # The group's first byte range: the span holds it while it is the
            # only member with bytes (the comment above: no log entry yet).
            s.loc_row = r.row
            s.loc_named = in_buffer(buffers, buffer_start, np.int64(r.space), addr)
            s.loc_n = 1
        elif s.bytes == 1:
            # The span is about to hold more than the first range: log it.
            e = sv[SV_LOCATORS]
            sv[SV_LOCATORS] += 1
            x = loc[e]
            x.row = s.loc_row
            x.addr = s.lo
            x.next = -1
            x.group = g
            x.owner = s.owner_min
            x.launch = s.launch_min
            x.size = np.uint32(s.last - s.lo + np.uint64(1))
            x.space = s.space_min
            x.named = s.loc_named
            s.loc_head = e
        s.bytes += 1
        s.lo = min(s.lo, addr)
        s.last = max(s.last, addr + np.uint64(r.size - 1))
        s.space_min = min(s.space_min, r.space)
        s.space_max = max(s.space_max, r.space)
        s.owner_min = min(s.owner_min, r.owner)
        s.owner_max = max(s.owner_max, r.owner)
        s.launch_min = min(s.launch_min, r.launch)
        s.launch_max = max(s.launch_max, r.launch)
        if s.bytes == 1 or s.loc_more != 0:
            continue
        # Locators, told apart as the report names byte ranges (tracerace.group.groups):
        # the owner only outside buffers, the launch only in launch buffers.
        named = in_buffer(buffers, buffer_start, np.int64(r.space), addr)
        e = s.loc_head
        while e >= 0:
            x = loc[e]
            if (
                x.space == r.space
                and x.addr == addr
                and x.size == r.size
                and (named or x.owner == r.owner)
                and (not (named and launch_named) or x.launch == r.launch)
            ):
                break
            e = x.next
        if e >= 0:
            continue
        if s.loc_n >= k:
            s.loc_more = 1
            continue
        e = sv[SV_LOCATORS]
        sv[SV_LOCATORS] += 1
        x = loc[e]
        x.row = r.row
        x.addr = addr
        x.next = s.loc_head
        x.group = g
        x.owner = r.owner
        x.launch = r.launch
        x.size = r.size
        x.space = r.space
        x.named = named
        s.loc_head = e
        s.loc_n += 1
    return n_ex, early, n_alias


@jit_inline
def group_key(r, canon, nsites, copy_ops, base):
    """The group key of finding ``r`` (GroupBuilder.keys says the same with NumPy)."""
    later_role = ROLE_COPY if copy_ops[r.op] else ROLE_THREAD
    if r.prev_row == NO_ROW:
        earlier, earlier_role = 0, ROLE_NONE
    else:
        earlier = canon[min(np.int64(r.prev_site), nsites)] + 2
        earlier_role = ROLE_COPY if (r.prev_async != 0 or copy_ops[r.prev_op]) else ROLE_THREAD
    later = canon[min(np.int64(r.site), nsites)] + 1
    return ((earlier * base + later) * 16 + r.kind) * 16 + earlier_role * 4 + later_role


@jit_leaf
def in_buffer(buffers, buffer_start, space, addr):
    """Whether ``addr`` of ``space`` lies in a declared buffer (``buffers``: rows
    of merged (lo, hi) ranges, each space's from ``buffer_start[space]``, by lo)."""
    lo, hi = buffer_start[space], buffer_start[space + 1]
    while lo < hi:  # the last range starting at or below addr
        mid = (lo + hi) // 2
        if buffers[mid, 0] <= addr:
            lo = mid + 1
        else:
            hi = mid
    return lo > buffer_start[space] and addr < buffers[lo - 1, 1]


@jit_kernel
def scan(f):
    """(whether findings ``f`` are in canonical order (row, kind, earlier row),
    their highest kind)."""
    canonical = True
    top = 0
    for i in range(f.shape[0]):
        b = f[i]
        top = max(top, b.kind)
        if i == 0 or not canonical:
            continue
        a = f[i - 1]
        if b.row != a.row:
            canonical = b.row > a.row
        elif b.kind != a.kind:
            canonical = b.kind > a.kind
        else:
            canonical = b.prev_row >= a.prev_row
    return canonical, top


@jit_kernel
def rehash(old, new):
    mask = new.shape[0] - 1
    for s in range(old.shape[0]):
        t = old[s]
        if t == 0:
            continue
        h = np.int64(t >> _SHIFT32) & mask
        while new[h] != 0:
            h = (h + 1) & mask
        new[h] = t


def table_slots(want: int) -> int:
    """The hash table's size for ``want`` slots (a power of two)."""
    return 1 << max(10, (want - 1).bit_length())
