"""Shadow memory: per granule (8 bytes of global memory, 4 of shared or
local; 16 of global or shared memory in a launch of aligned 16-byte
vectors), the accesses that may still race.

A granule is found by open addressing on (region, granule index); a region
is a space and its owner (global: 0, or ``REGION_WIDE`` for 16-byte
granules; shared: ``1 << 40 | block``; local: ``2 << 40 | agent``). Each
granule keeps two lists of nodes, writes (plain, atomic, copy destinations)
and reads (plain, copy sources), and the mask of its bytes that some write
or ``init`` has covered.

A node is one access restricted to one granule: ``mask`` says which of the
granule's bytes it still stands for. The lists are antichains, pruned when a
new access ``a`` makes an older ``x`` redundant for every later query: ``x``
happens before ``a`` and any later event racing ``x`` also races ``a`` with
the same hazard kind, and ``a`` is later in replay order. That holds for a
read dropping reads, for a plain write dropping writes and atomics, and for an
atomic dropping its own agent's atomics of a scope at least as wide; it does
not hold for copies (an in-flight copy races as ``async_inflight``), so copies
drop nothing.

A copy cannot drop what it makes redundant while it is in flight, but once
it has retired it races as a plain access: so a copy write ``y`` marks each
write ``x`` that happens before it (the agent and epoch in ``x``'s shade row,
the covered bytes in its info), and a later scan drops those bytes of ``x`` as soon as
``y``'s agent has retired ``y``. Without this, the stage buffers of a cp.async
pipeline collect one node per iteration.

Pruning never changes an answer (a dropped node is always shadowed by a later
node of the same kind), so it is done when it is cheap: writes are pruned in
the same pass that checks them, reads only when their list has doubled since
the last prune (amortized constant work per read). A write leaves a list only
once a later write that it happens before has been performed (a copy: retired),
and an atomic that a write happens before marks those bytes of the write
hidden (``hide_bytes``) instead: the writes of a list that happen before an
access, with bytes neither hidden nor under a newer retired copy that follows
them (``I_AFTER_ALL``, ``I_RACED``), are the ones it may see, which the proxy
rule relies on (``granules.check_writes``).
"""

from __future__ import annotations

import numpy as np

from ..jit import jit, jit_inline, jit_leaf, prefetch_row
from .layout import (
    G_FIELDS,
    G_HEADS,
    G_INDEX,
    G_REGION,
    G_STAMP,
    HEAD_READS,
    HEAD_WRITES,
    I_SHADED,
    IV_FIELDS,
    IV_HI,
    IV_LO,
    IV_REGION,
    KS_AGENT_MASK,
    KS_HIDDEN_SHIFT,
    MASK_ALL,
    N_INFO,
    S_AGENT,
    S_EPOCH,
    SLOT_REGION_MASK,
    STAMP_RLIMIT_SHIFT,
    SV_GLOBAL_SIZES,
    SV_PAGE_SHIFT,
    add_init,
    clear_init,
    head,
    slot_init,
    slot_launch,
    slot_region,
)

# 4-byte granules in shared and local memory: two 4-byte elements in one
# granule would share read lists, and pruning (which only drops bytes the new
# access covers) left the other element's stale readers behind; with 4 bytes
# the tiled benchmark's read lists stay one generation long. Measured: 8-byte granules ~0.9 us per
# shared read there, 4-byte ones far less.
GRANULE_SHIFT = 2
# Global memory uses 8-byte granules: there, 8-byte words are the common
# variable (every STD trace `tracerace convert` imports, CPU-style programs,
# pointers, doubles), and each granule is a slot and a list head that is
# usually a cache miss on a large footprint. A launch of aligned 16-byte
# vectors (a cp.async pipeline's sources) takes 16-byte granules instead
# (see SV_GLOBAL_SIZES below).
GLOBAL_GRANULE_SHIFT = 3
REGION_SHARED = np.int64(1) << 40
REGION_LOCAL = np.int64(2) << 40


# Shared memory may use 16-byte granules instead, chosen per launch: where a
# launch's shared accesses are nearly all aligned 16-byte vectors
# (``ld.shared.v4``, ``cp.async`` of 16 bytes), each of them is one granule
# instead of four, and no two elements share a read list (see
# ``granularity.shared_shift_for``). Such a launch's shared regions carry
# ``REGION_WIDE``, so the region alone says the granule size, and masks hold
# 16 bytes.
WIDE_GRANULE_SHIFT = 4
REGION_WIDE = np.int64(1) << 39  # above any block index (uint32) or agent

# Global memory may take 16-byte granules too, per launch (see
# ``granularity.global_shift_for``): its region is then REGION_WIDE instead of 0.
# Unlike shared memory, global memory's initialized bytes outlive a launch, so
# a launch that meets a global granule first (slot made, or reset from an
# older launch) takes the initialized bytes of the other size's slots, once
# any launch has used the other size (``SV_GLOBAL_SIZES``, a slot of the
# engine's state vector: GS_NARROW, GS_WIDE). Init intervals are kept under
# region 0 whatever the granule size (``iv_region``).
GS_NARROW, GS_WIDE = 1, 2


@jit_inline
def is_global(region):
    return region < REGION_SHARED


@jit_inline
def iv_region(region):
    """The region init intervals are kept under: 0 for global memory."""
    return np.int64(0) if is_global(region) else region


@jit_inline
def granule_shift(region):
    """log2 of the granule size in ``region`` (global: 0; shared: 1 << 40
    and up, with REGION_WIDE for 16-byte granules; local: 2 << 40 and up)."""
    if region == 0:
        return GLOBAL_GRANULE_SHIFT
    return GRANULE_SHIFT + ((region >> 38) & 2)  # REGION_WIDE (bit 39) adds 2


# Granule table columns, node columns (hot and cold) and the node's ``info``
# word are ``layout``'s. ``G_STAMP`` stamps the launch that last used the
# lists: a new launch forgets every list without touching the table (a slot
# of an older launch is reset when it is next found, see ``find_granule``),
# so a trace of many small launches does not pay for the table each time.
READ_PRUNE_MIN = 8
# G_STAMP of a slot whose lists are empty, but for its launch: no reads, pruned
# past READ_PRUNE_MIN.
assert READ_PRUNE_MIN & (READ_PRUNE_MIN - 1) == 0  # a power of two, as pruning lengths are
FRESH_STAMP = np.int64(READ_PRUNE_MIN.bit_length() - 1) << STAMP_RLIMIT_SHIFT
EMPTY = -1

# The table grows (doubles) before it would pass half full, or three
# quarters once it has GRAN_DENSE_MIN slots (32 MiB). A line's granules take
# one group of slots (LINE_GRANULES, below), so the lines of a long run of
# fresh addresses (a kernel reading its input once) fill whole groups and
# collide only group against group; at three quarters a 32-byte slot costs
# 43-85 bytes per granule, at half 64-128, and the growth that doubles a large
# table is the check's peak of memory (the old table and the new one at
# once). A smaller table is little memory next to the process, and half
# full it probes less: filled to three quarters from the start, the cpu
# benchmark's table took more instructions per event (``bench/README.md``).
# The kernels (``room.replay_room``, ``pages.page_room``) write the limit out
# as ``4 * granules > (2 + dense) * slots``: a call of ``gran_limit``, though
# inlined, and other spellings of the same test cost every benchmark
# instructions per event (``bench/README.md``).
GRAN_DENSE_MIN = 1 << 20


def gran_limit(cap: int) -> int:
    """The granules a table of ``cap`` slots may hold (for the driver)."""
    return cap >> 1 if cap < GRAN_DENSE_MIN else cap - (cap >> 2)


# A node's shade row (layout, S_*) holds anything until the node is shaded
# (I_SHADED in its info): ``shaded`` clears it then. Only these read or write it.


@jit_inline
def shaded(nodes, shades, x, info):
    """``info``, node ``x``'s, with I_SHADED (written to the node): its shade
    row cleared first if it had none (no shadow, no hidden bytes)."""
    if (info & I_SHADED) == 0:
        shades[x, S_AGENT] = 0
        shades[x, S_EPOCH] = 0
        info |= I_SHADED
        nodes[x, N_INFO] = info
    return info


@jit_inline
def shadow_agent(shades, x):
    """The agent of the copy that shadows node ``x`` (meaningful while its
    shadow bits are set: its row is shaded then)."""
    return shades[x, S_AGENT] & KS_AGENT_MASK


@jit_inline
def shadow_epoch(shades, x):
    """The epoch of the copy that shadows node ``x`` (as ``shadow_agent``)."""
    return shades[x, S_EPOCH]


@jit_inline
def set_shadow(shades, x, a, epoch):
    """Make copy ``epoch`` of agent ``a`` the shadow of shaded node ``x``."""
    shades[x, S_AGENT] = (shades[x, S_AGENT] & ~np.int64(KS_AGENT_MASK)) | a
    shades[x, S_EPOCH] = epoch


@jit_inline
def hidden_bytes(shades, x, info):
    """The bytes of node ``x`` (whose info is ``info``) that a later atomic
    follows in happens-before."""
    if (info & I_SHADED) == 0:
        return np.int64(0)
    return (shades[x, S_AGENT] >> KS_HIDDEN_SHIFT) & MASK_ALL


@jit_inline
def hide_bytes(nodes, shades, x, info, m):
    """Mark the bytes ``m`` of node ``x`` (whose info is ``info``) hidden;
    returns its info as it is now (shaded)."""
    info = shaded(nodes, shades, x, info)
    shades[x, S_AGENT] |= m << KS_HIDDEN_SHIFT
    return info


# The 16 granules of an aligned 64-byte line share a hash and take the 16
# slots of one aligned group (in an order the hash permutes, so that strided
# accesses spread over all offsets), so a large access walks contiguous memory
# instead of one random slot per 4 bytes. Probing steps 17 slots: odd, so it
# reaches every slot of the power-of-two table, and off the line's group.
LINE_GRANULES = 16
PROBE_STEP = LINE_GRANULES + 1


@jit_inline
def _hash(region, index, cap):
    line = index >> 4
    h = (line * np.int64(-7046029254386353131)) ^ (region * np.int64(-4658895280553007687))
    h ^= h >> 29
    return ((h << 4) | ((index ^ (h >> 40)) & (LINE_GRANULES - 1))) & (cap - 1)


@jit_inline
def _reset_slot(gran, h, launch):
    """Empty lists for ``launch``; only global memory keeps its initialized
    bytes across launches (shared and local memory start undefined)."""
    gran[h, G_HEADS] = -1  # both lists empty
    gran[h, G_STAMP] = launch | FRESH_STAMP
    if not is_global(slot_region(gran, h)):
        clear_init(gran, h)


@jit_inline
def probe(gran, region, index):
    """Slot of (region, index), or -1; changes nothing."""
    cap = gran.shape[0]
    h = _hash(region, index, cap)
    while True:
        r = gran[h, G_REGION]
        if r == EMPTY:
            return -1
        if (r & SLOT_REGION_MASK) == region and gran[h, G_INDEX] == index:
            return h
        h = (h + PROBE_STEP) & (cap - 1)


@jit_inline
def _carry_if_mixed(gran, h, region, index, sv):
    """``carry_init`` where slot ``h`` is global and a launch has used the
    other granule size (see SV_GLOBAL_SIZES)."""
    if is_global(region) and sv[SV_GLOBAL_SIZES] & (GS_NARROW if region else GS_WIDE):
        carry_init(gran, h, region, index)


@jit_leaf
def other_size_init(gran, region, index):
    """The initialized bytes of global granule (region, index) that its
    other-size slots hold."""
    bits = np.int64(0)
    if region == 0:  # 8-byte granule: a half of a 16-byte one
        w = probe(gran, REGION_WIDE, index >> 1)
        if w >= 0:
            bits = (slot_init(gran, w) >> (8 * (index & 1))) & 0xFF
    else:  # 16-byte granule: two 8-byte ones
        for half in range(2):
            n = probe(gran, np.int64(0), 2 * index + half)
            if n >= 0:
                bits |= (slot_init(gran, n) & 0xFF) << (8 * half)
    return bits


@jit_inline
def carry_init(gran, h, region, index):
    """Add to global slot ``h`` the initialized bytes its other-size slots
    hold."""
    add_init(gran, h, other_size_init(gran, region, index))


@jit_inline
def find_granule(gran, region, index, create, sv, count_slot, launch, pst):
    """Slot of (region, index) with lists of ``launch``; -1 when absent and
    ``create`` is false. A granule that becomes ``launch``'s stamps its
    page's entry of ``pst`` (see PAGES)."""
    cap = gran.shape[0]
    h = _hash(region, index, cap)
    while True:
        r = gran[h, G_REGION]
        if r == EMPTY:
            if not create:
                return -1
            gran[h, G_REGION] = region  # no initialized bytes
            gran[h, G_INDEX] = index
            _reset_slot(gran, h, launch)
            sv[count_slot] += 1
            _carry_if_mixed(gran, h, region, index, sv)
            _stamp_page(pst, sv, region, index, launch)
            return h
        if (r & SLOT_REGION_MASK) == region and gran[h, G_INDEX] == index:
            if slot_launch(gran, h) != launch:
                _reset_slot(gran, h, launch)
                _carry_if_mixed(gran, h, region, index, sv)
                _stamp_page(pst, sv, region, index, launch)
            return h
        h = (h + PROBE_STEP) & (cap - 1)


# ---------------------------------------------------------------------------
# PAGES. An access that covers whole pages (``1 << sv[SV_PAGE_SHIFT]``
# aligned bytes, 4 KiB by default) records them as runs of pages, one slot of
# this table per run (region ``region | PAGE_REGION``, index the run's first
# page); ``pages.py`` (RUNS) has the design. ``pst`` tells a large access
# which pages a granule of the launch may hold lists for.
PAGE_SHIFT = 12
PAGE_REGION = np.int64(1) << 43  # above any shared, local or wide region
PST_SIZE = 1 << 16


@jit_inline
def page_stamp_index(region, page):
    h = (page * np.int64(-7046029254386353131)) ^ (region * np.int64(-4658895280553007687))
    return (h ^ (h >> 31)) & (PST_SIZE - 1)


@jit_inline
def _stamp_page(pst, sv, region, index, launch):
    if region < PAGE_REGION:
        pst[page_stamp_index(region, index >> (sv[SV_PAGE_SHIFT] - granule_shift(region)))] = launch


# Software prefetch. The replay loop knows the addresses of the events ahead
# of the one it checks, and a granule's slot and list heads are usually cache
# misses on large footprints (the cpu benchmark's 10^6 variables: a quarter of
# its samples sat on the slot load). So each global access asks for the
# slots of the global access PF_FAR accesses ahead of it, and for the list
# heads of the one PF_NEAR ahead (its slot has arrived by then); see
# granules.prefetch_ahead. Hints only: a wrong guess (a probe that will step
# on, a list of an older launch) costs a load.
PF_FAR = 10
PF_NEAR = 5


PF_GRANULES = 4  # of an access, the first this many granules


@jit_inline
def _prefetch_granules(region, addr, size):
    """The first granules of an access, as a range (empty when size <= 0)."""
    gs = granule_shift(region)
    g0 = addr >> gs
    if size <= 0:
        return range(g0, g0)
    return range(g0, min((addr + size - 1) >> gs, g0 + PF_GRANULES - 1) + 1)


@jit_inline
def prefetch_slots(gran, region, addr, size):
    for g in _prefetch_granules(region, addr, size):
        prefetch_row(gran, _hash(region, g, gran.shape[0]))


@jit_inline
def prefetch_lists(gran, nodes, region, addr, size):
    for g in _prefetch_granules(region, addr, size):
        h = _hash(region, g, gran.shape[0])
        if slot_region(gran, h) == region and gran[h, G_INDEX] == g:  # (never EMPTY's)
            w = head(gran, h, HEAD_WRITES)
            if w >= 0:
                prefetch_row(nodes, w)
            r = head(gran, h, HEAD_READS)
            if r >= 0:
                prefetch_row(nodes, r)
        else:  # the slot is further along its probe sequence
            prefetch_row(gran, (h + PROBE_STEP) & (gran.shape[0] - 1))


@jit
def rehash(old, new, launch):
    """Move the entries of ``launch`` into ``new`` (all EMPTY), and of older
    launches only global granules with initialized bytes (their stale lists
    are reset when ``find_granule`` next meets them).
    Returns the number of entries moved."""
    n = 0
    cap = new.shape[0]
    for s in range(old.shape[0]):
        if old[s, G_REGION] == EMPTY:
            continue
        r = slot_region(old, s)
        stale = slot_launch(old, s) != launch
        if stale and (not is_global(r) or slot_init(old, s) == 0):
            continue
        h = _hash(r, old[s, G_INDEX], cap)
        while new[h, G_REGION] != EMPTY:
            h = (h + PROBE_STEP) & (cap - 1)
        for f in range(G_FIELDS):
            new[h, f] = old[s, f]
        n += 1
    return n


# ---------------------------------------------------------------------------
# Large ``init`` ranges: a sorted list of disjoint [lo, hi) intervals per
# region, so initializing a 1 GiB tensor costs one row, not 2^27 granules.
# A granule learns its covered bytes from here the first time a read finds
# them missing from its own mask (then they are cached in the slot's init bits).
INIT_INTERVAL_MIN = 64  # bytes; smaller inits go straight to granule masks


@jit_leaf
def iv_before(ivs, n, region, addr):
    """Index of the last row of ``ivs`` (init intervals and page runs, sorted by
    region, then start) starting at or before (region, addr), or -1."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        r = ivs[mid, IV_REGION]
        if r < region or (r == region and ivs[mid, IV_LO] <= addr):
            lo = mid + 1
        else:
            hi = mid
    return lo - 1


@jit_leaf
def iv_init_mask(ivs, n, region, base, un):
    """Of the bytes ``un`` (a mask) of the granule at ``base``, those some
    interval covers: one search per interval met, not one per byte."""
    covered = 0
    b = 0
    while un >> b:
        if not (un >> b) & 1:
            b += 1
            continue
        k = iv_before(ivs, n, region, base + b)
        if k >= 0 and ivs[k, IV_REGION] == region and base + b < ivs[k, IV_HI]:
            # The interval covers bytes [b, end) of the granule (masks hold
            # at most 16 bytes, so 32 stands for "to its end").
            end = min(ivs[k, IV_HI] - base, 32)
            covered |= un & (((np.int64(1) << end) - 1) ^ ((np.int64(1) << b) - 1))
            b = end
        else:
            b += 1
    return covered


@jit_leaf
def iv_covers(ivs, n, region, lo, hi):
    """Whether one interval covers all of [lo, hi)."""
    k = iv_before(ivs, n, region, lo)
    return k >= 0 and ivs[k, IV_REGION] == region and ivs[k, IV_HI] >= hi


@jit_leaf
def iv_add(ivs, n, region, lo, hi):
    """Insert [lo, hi) into the list of ``n`` rows, merging; returns the new n.
    The caller guarantees room for one more row."""
    k = iv_before(ivs, n, region, lo)
    # Start merging at k when it touches [lo, hi), else at k + 1.
    if k >= 0 and ivs[k, IV_REGION] == region and ivs[k, IV_HI] >= lo:
        first = k
        lo = ivs[k, IV_LO]
        hi = max(hi, ivs[k, IV_HI])
    else:
        first = k + 1
    last = first
    while last < n and ivs[last, IV_REGION] == region and ivs[last, IV_LO] <= hi:
        hi = max(hi, ivs[last, IV_HI])
        last += 1
    removed = last - first
    if removed == 0:
        for q in range(n, first, -1):
            for f in range(IV_FIELDS):
                ivs[q, f] = ivs[q - 1, f]
        n += 1
    elif removed > 1:
        shift = removed - 1
        for q in range(first + 1, n - shift):
            for f in range(IV_FIELDS):
                ivs[q, f] = ivs[q + shift, f]
        n -= shift
    ivs[first, IV_REGION] = region
    ivs[first, IV_LO] = lo
    ivs[first, IV_HI] = hi
    return n
