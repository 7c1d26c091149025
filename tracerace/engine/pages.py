"""Large accesses: whole 4 KiB pages recorded once (PURE) until another access needs their
granules (SPLIT); see ``shadow`` (PAGES).
"""

from __future__ import annotations

import numpy as np

from .. import ops as O
from ._jit import jit_inline, jit_leaf
from .granules import extend_bytes, granules, region_of
from .layout import (
    GR_GRAN, GR_IV, GR_NODES, SV_GLOBAL_SIZES, SV_GRAN_COUNT, SV_GROW, SV_IV_N, SV_LAUNCH,
    SV_NODE_FREE, SV_NODE_TOP, SV_NODE_USED, SV_PAGE_LAUNCH, SV_PAGE_SHIFT)
from .pools import pool_alloc, pool_free
from .races import offer_uninit
from .shadow import (
    GS_NARROW, GS_WIDE, G_INIT, G_LAUNCH, G_NREADS, G_READS, G_RLIMIT, G_WRITES, I_ATOMIC,
    I_MASK_SHIFT, I_SHADOW_SHIFT, I_WRITE, KS_HIDDEN_SHIFT, K_FIELDS, K_SHADOW_AGENT, MASK_ALL,
    N_AGENT, N_EPOCH, N_INFO, N_NEXT, PAGE_REGION, PAGE_SPLIT, find_granule, granule_shift,
    hidden_bytes, is_global, iv_add, iv_covers, iv_init_mask, iv_region, other_size_init,
    page_stamp_index, probe, shadow_agent)

@jit_inline
def covers_page(sv, addr, size):
    """Whether [addr, addr + size) covers a whole page."""
    ps = sv[SV_PAGE_SHIFT]
    return size >= (np.int64(1) << ps) and ((addr + size) >> ps) > ((addr - 1) >> ps) + 1


@jit_inline
def split_pages_of(sv, nodes, cold, gran, pst, region, addr, size):
    """Before a granule path over [addr, addr + size): split the PURE pages
    it touches, in a launch that has any."""
    if sv[SV_PAGE_LAUNCH] == sv[SV_LAUNCH]:
        ps = sv[SV_PAGE_SHIFT]
        split_pages(sv, nodes, cold, gran, pst, region, addr >> ps, (addr + size - 1) >> ps)


# ---------------------------------------------------------------------------
# Pages (see shadow.PAGES): large accesses.
@jit_inline
def page_of(gran, sv, region, page):
    """The slot of ``region``'s page ``page`` when it is this launch's, else -1."""
    s = probe(gran, region | PAGE_REGION, page)
    if s >= 0 and gran[s, G_LAUNCH] != sv[SV_LAUNCH]:
        return -1
    return s


@jit_leaf
def copy_list(nodes, cold, gran, sv, src, slot, col, m):
    """Append copies of the nodes of list ``src`` (a page's) to list ``col``
    of granule ``slot``, in order, standing for its bytes ``m``."""
    tail = np.int64(-1)
    x = gran[slot, col]
    while x >= 0:
        tail = x
        x = nodes[x, N_NEXT]
    x = src
    while x >= 0:
        n = pool_alloc(nodes, sv, SV_NODE_TOP, SV_NODE_FREE, SV_NODE_USED)
        info = nodes[x, N_INFO] & ~(np.int64(MASK_ALL) << I_MASK_SHIFT)
        info |= m << I_MASK_SHIFT
        if (info >> I_SHADOW_SHIFT) & MASK_ALL:
            info = (info & ~(np.int64(MASK_ALL) << I_SHADOW_SHIFT)) | (m << I_SHADOW_SHIFT)
        nodes[n, N_AGENT] = nodes[x, N_AGENT]
        nodes[n, N_EPOCH] = nodes[x, N_EPOCH]
        nodes[n, N_INFO] = info
        nodes[n, N_NEXT] = -1
        for f in range(K_FIELDS):
            cold[n, f] = cold[x, f]
        if hidden_bytes(cold, n):  # the page's one unit stands for all of m
            cold[n, K_SHADOW_AGENT] = shadow_agent(cold, n) | (m << KS_HIDDEN_SHIFT)
        if tail < 0:
            gran[slot, col] = n
        else:
            nodes[tail, N_NEXT] = n
        tail = n
        x = nodes[x, N_NEXT]


@jit_leaf
def free_list(nodes, sv, x):
    while x >= 0:
        nxt = nodes[x, N_NEXT]
        pool_free(nodes, sv, SV_NODE_FREE, SV_NODE_USED, x)
        x = nxt


@jit_leaf
def split_pages(sv, nodes, cold, gran, pst, region, p0, p1):
    """Split every PURE page of ``region`` from ``p0`` to ``p1``: its nodes
    go to each of its granules, which hold the history from now on."""
    gs = granule_shift(region)
    per = np.int64(1) << (sv[SV_PAGE_SHIFT] - gs)
    full = (np.int64(1) << (np.int64(1) << gs)) - 1
    for p in range(p0, p1 + 1):
        s = page_of(gran, sv, region, p)
        if s < 0 or gran[s, G_INIT] == PAGE_SPLIT:
            continue
        for g in range(p * per, (p + 1) * per):
            slot = find_granule(gran, region, g, True, sv, SV_GRAN_COUNT, sv[SV_LAUNCH], pst)
            copy_list(nodes, cold, gran, sv, gran[s, G_WRITES], slot, G_WRITES, full)
            copy_list(nodes, cold, gran, sv, gran[s, G_READS], slot, G_READS, full)
            gran[slot, G_NREADS] += gran[s, G_NREADS]
            gran[slot, G_RLIMIT] = max(gran[slot, G_RLIMIT], gran[s, G_RLIMIT])
        free_list(nodes, sv, gran[s, G_WRITES])
        free_list(nodes, sv, gran[s, G_READS])
        gran[s, G_WRITES] = -1
        gran[s, G_READS] = -1
        gran[s, G_NREADS] = 0
        gran[s, G_INIT] = PAGE_SPLIT


@jit_leaf
def page_uninit(gran, sv, ivs, region, lo_addr, hi_addr):
    """The first and last uninitialized byte of [lo_addr, hi_addr) (a page
    no access of this launch but large ones has touched), or -1: from the
    init intervals, and where they leave a gap, from the granules' init bits
    (a global granule keeps them across launches)."""
    ivr = iv_region(region)
    n = sv[SV_IV_N]
    if n > 0 and iv_covers(ivs, n, ivr, lo_addr, hi_addr):
        return np.int64(-1), np.int64(-1)
    gs = granule_shift(region)
    gsize = np.int64(1) << gs
    full = (np.int64(1) << gsize) - 1
    glob = is_global(region)
    first = np.int64(-1)
    last = np.int64(-1)
    for g in range(lo_addr >> gs, hi_addr >> gs):
        base = g << gs
        init = np.int64(0)
        s = probe(gran, region, g)
        if s >= 0 and (glob or gran[s, G_LAUNCH] == sv[SV_LAUNCH]):
            init = gran[s, G_INIT]
        if glob and sv[SV_GLOBAL_SIZES] & (GS_NARROW if region else GS_WIDE):
            init |= other_size_init(gran, region, g)
        un = full & ~init
        if un and n > 0:
            un &= ~iv_init_mask(ivs, n, ivr, base, un)
        if un:
            first, last = extend_bytes(un, base, gsize, first, last)
    return first, last


@jit_leaf
def access_pages(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst,
                 region, space, owner, addr, size, a, epoch, t, info, row, ts, site):
    """``access`` of a range that covers at least one whole page: the whole
    pages each as one unit, the partial pages at its ends granule by
    granule."""
    launch = sv[SV_LAUNCH]
    ps = sv[SV_PAGE_SHIFT]
    end = addr + size
    p0 = (addr + (np.int64(1) << ps) - 1) >> ps
    p1 = end >> ps
    reads = (info & I_WRITE) == 0 or (info & I_ATOMIC) != 0
    found = 0
    ulo = np.int64(-1)
    uhi = np.int64(-1)
    for part in range(3):  # the head, the whole pages, the tail: in address order
        if part == 1:
            for p in range(p0, p1):
                plo = p << ps
                phi = plo + (np.int64(1) << ps)
                s = page_of(gran, sv, region, p)
                if s < 0:
                    s = find_granule(gran, region | PAGE_REGION, p, True, sv, SV_GRAN_COUNT,
                                     launch, pst)
                    if pst[page_stamp_index(region, p)] == launch:
                        gran[s, G_INIT] = PAGE_SPLIT  # a granule may have lists
                    else:
                        sv[SV_PAGE_LAUNCH] = launch
                if gran[s, G_INIT] == PAGE_SPLIT:
                    f, lo, hi = granules(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran,
                                         fen, cand, ivs, pst, region, space, owner, plo, phi,
                                         addr, end, a, epoch, t, info, row, ts, site, size,
                                         np.int64(-1))
                else:
                    lo = np.int64(-1)
                    hi = np.int64(-1)
                    if reads:
                        lo, hi = page_uninit(gran, sv, ivs, region, plo, phi)
                    f, _, _ = granules(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen,
                                       cand, ivs, pst, region, space, owner, plo, phi, addr, end,
                                       a, epoch, t, info, row, ts, site, size, s)
                found |= f
                if lo >= 0:
                    if ulo < 0:
                        ulo = lo
                    uhi = hi
            if info & I_WRITE:
                sv[SV_IV_N] = iv_add(ivs, sv[SV_IV_N], iv_region(region), p0 << ps, p1 << ps)
            continue
        lo_addr = addr if part == 0 else p1 << ps
        hi_addr = p0 << ps if part == 0 else end
        if lo_addr >= hi_addr:
            continue
        split_pages_of(sv, nodes, cold, gran, pst, region, lo_addr, hi_addr - lo_addr)
        f, lo, hi = granules(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand,
                             ivs, pst, region, space, owner, lo_addr, hi_addr, addr, end, a,
                             epoch, t, info, row, ts, site, size, np.int64(-1))
        found |= f
        if lo >= 0:
            if ulo < 0:
                ulo = lo
            uhi = hi
    return found | offer_uninit(cand, space, owner, ulo, uhi)


@jit_inline
def list_length(nodes, x):
    k = np.int64(0)
    while x >= 0:
        k += 1
        x = nodes[x, N_NEXT]
    return k


@jit_leaf
def range_need(gran, nodes, sv, pst, region, addr, size):
    """(granule slots, nodes) an access of [addr, addr + size) in ``region``
    may add, pages counted (see ``access_pages`` and ``split_pages``)."""
    if size <= 0:
        return np.int64(0), np.int64(0)
    launch = sv[SV_LAUNCH]
    ps = sv[SV_PAGE_SHIFT]
    gs = granule_shift(region)
    per = np.int64(1) << (ps - gs)
    end = addr + size
    p0 = (addr + (np.int64(1) << ps) - 1) >> ps
    p1 = end >> ps
    g = np.int64(0)
    n = np.int64(0)
    if p1 > p0:
        for p in range(p0, p1):
            s = page_of(gran, sv, region, p)
            if s < 0:
                g += 1
                n += 1
                if pst[page_stamp_index(region, p)] == launch:
                    g += per
                    n += per
            elif gran[s, G_INIT] == PAGE_SPLIT:
                g += per
                n += per
            else:
                n += 1
        head = (addr, p0 << ps)
        tail = (p1 << ps, end)
    else:  # no whole page: one granule range
        head = (addr, end)
        tail = (end, end)
    for part in range(2):
        lo, hi = head if part == 0 else tail
        if lo >= hi:
            continue
        k = ((hi - 1) >> gs) - (lo >> gs) + 1
        g += k
        n += k
        if sv[SV_PAGE_LAUNCH] == launch:  # pure pages it splits
            for p in range(lo >> ps, ((hi - 1) >> ps) + 1):
                s = page_of(gran, sv, region, p)
                if s >= 0 and gran[s, G_INIT] != PAGE_SPLIT:
                    g += per
                    n += per * (list_length(nodes, gran[s, G_WRITES]) +
                                list_length(nodes, gran[s, G_READS]))
    return g, n


@jit_leaf
def page_room(op, space, addr, size, space2, addr2, peer, block, a, sv, nodes, gran, ivs, pst):
    """``replay_room`` for an access or copy that covers a whole page or
    meets a launch with pages: sets ``SV_GROW`` and returns False when the
    pools lack the room it may need."""
    g, n = range_need(gran, nodes, sv, pst, region_of(space, peer, a, sv), addr, size)
    if op == O.CP_ASYNC or op == O.TMA_LOAD or op == O.TMA_STORE:
        g2, n2 = range_need(gran, nodes, sv, pst, region_of(space2, block, a, sv), addr2, size)
        g += g2
        n += n2
    grow = 0
    if sv[SV_NODE_USED] + n > nodes.shape[0]:
        grow |= GR_NODES
    if 2 * (sv[SV_GRAN_COUNT] + g) > gran.shape[0]:
        grow |= GR_GRAN
    if sv[SV_IV_N] + 2 > ivs.shape[0]:
        grow |= GR_IV
    sv[SV_GROW] = grow
    return grow == 0
