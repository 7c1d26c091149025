"""Large accesses: runs of whole 4 KiB pages recorded once (a run record) until
another access needs some of their pages (the run is cut there) or granules
(the page is split into them); see ``RUNS`` below.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from ..jit import jit_inline, jit_leaf
from .granules import extend_bytes, granules, region_of
from .layout import (
    G_HEADS,
    GR_GRAN,
    GR_IV,
    GR_NODES,
    HEAD_READS,
    HEAD_WRITES,
    I_ATOMIC,
    I_SHADED,
    I_WRITE,
    IV_FIELDS,
    IV_HI,
    IV_LO,
    IV_REGION,
    K_FIELDS,
    KS_HIDDEN_SHIFT,
    N_EPOCH,
    N_INFO,
    N_ROW,
    S_AGENT,
    S_FIELDS,
    SV_GLOBAL_SIZES,
    SV_GRAN_COUNT,
    SV_GROW,
    SV_IV_N,
    SV_LAUNCH,
    SV_NODE_FREE,
    SV_NODE_TOP,
    SV_NODE_USED,
    SV_PAGE_LAUNCH,
    SV_PAGE_SHIFT,
    SV_SHARDS,
    head,
    info_shadow,
    node_agent,
    node_next,
    reads_count,
    reads_limit,
    set_head,
    set_link,
    set_next,
    set_reads,
    slot_init,
    slot_launch,
    with_mask,
    with_shadow,
)
from .pools import pool_alloc, pool_free
from .shadow import (
    GRAN_DENSE_MIN,
    GS_NARROW,
    GS_WIDE,
    PAGE_REGION,
    find_granule,
    granule_shift,
    hidden_bytes,
    is_global,
    iv_add,
    iv_before,
    iv_init_mask,
    iv_region,
    other_size_init,
    page_stamp_index,
    probe,
    shadow_agent,
)
from .shards import stretch_end

# ---------------------------------------------------------------------------
# RUNS. An access that covers whole pages (``1 << sv[SV_PAGE_SHIFT]`` aligned
# bytes, 4 KiB by default) records them as runs: a run is a row of the sorted
# interval list ``ivs`` under region ``region | PAGE_REGION`` (above every
# init interval's region, so run rows sort after them and never merge with
# them), ``IV_LO`` and ``IV_HI`` its first and past-last page; its history is
# the two lists of the granule table's slot (``region | PAGE_REGION``, first
# page), whose nodes each stand for the whole run (mask bit 0). The runs of
# a launch are disjoint, and a run's pages are PURE: their granules of this
# launch hold no nodes (only ``init`` bits), the run's lists are the whole
# history of their bytes.
#
# Invariant: memory follows the boundaries a trace creates, not the bytes it
# claims. A large access costs a run row, a slot and a node per maximal stretch
# of its pages that no run holds and no granule of the launch has touched, and
# a node per run it meets; a run it covers only in part is first cut at the
# access's ends (``cut_run``: the far part gets a copy of the lists). A page
# some other access needs granule by granule (a small access, or the partial
# page at a large access's end) is cut out of its run and split into its
# granules (``split_page``): each gets a copy of the run's nodes. Every run
# row is dropped with the launch's other non-global intervals
# (``EngineState.reset_launch``), and its slot with the launch's lists.
#
# A page no run holds may have granules with lists of this launch; then a
# large access goes through its granules too (``touched``). To know that
# without probing every granule of every page, each granule that becomes the
# launch's stamps ``pst[page_hash]`` with the launch (``shadow.find_granule``);
# only a page whose stamp is the launch's (its own, or one that collides with
# it) has its granules probed.
# Small accesses look at runs only in a launch that made one
# (``SV_PAGE_LAUNCH``). A large write's bytes are initialized through an init
# interval, not granule masks; run slots never carry init bits.


@jit_inline
def covers_page(sv, addr, size):
    """Whether [addr, addr + size) covers a whole page."""
    ps = sv[SV_PAGE_SHIFT]
    return size >= (np.int64(1) << ps) and ((addr + size) >> ps) > ((addr - 1) >> ps) + 1


@jit_leaf
def touched(gran, pst, sv, region, page):
    """Whether a granule of ``page`` holds lists of this launch. The stamp
    answers most pages; where it says maybe (the page's own stamp or one
    that collides with it), the page's granules are probed."""
    launch = sv[SV_LAUNCH]
    if pst[page_stamp_index(region, page)] != launch:
        return False
    gs = granule_shift(region)
    per = np.int64(1) << (sv[SV_PAGE_SHIFT] - gs)
    for g in range(page * per, (page + 1) * per):
        s = probe(gran, region, g)
        if (
            s >= 0 and slot_launch(gran, s) == launch and gran[s, G_HEADS] != -1  # a list not empty
        ):
            return True
    return False


@jit_inline
def run_of(ivs, n, rr, page):
    """Index of the run row of region ``rr`` that holds ``page``, or -1."""
    k = iv_before(ivs, n, rr, page)
    if k >= 0 and ivs[k, IV_REGION] == rr and ivs[k, IV_HI] > page:
        return k
    return -1


@jit_inline
def next_run_start(ivs, n, rr, k, limit):
    """The first page of the run row after ``k`` when it is of ``rr`` and
    before ``limit``, else ``limit``."""
    if k + 1 < n and ivs[k + 1, IV_REGION] == rr and ivs[k + 1, IV_LO] < limit:
        return ivs[k + 1, IV_LO]
    return limit


@jit_leaf
def row_insert(ivs, sv, k, rr, lo, hi):
    """Insert the row (rr, lo, hi) at index ``k``; the caller has made room."""
    n = sv[SV_IV_N]
    for q in range(n, k, -1):
        for f in range(IV_FIELDS):
            ivs[q, f] = ivs[q - 1, f]
    ivs[k, IV_REGION] = rr
    ivs[k, IV_LO] = lo
    ivs[k, IV_HI] = hi
    sv[SV_IV_N] = n + 1


@jit_leaf
def row_remove(ivs, sv, k):
    n = sv[SV_IV_N]
    for q in range(k, n - 1):
        for f in range(IV_FIELDS):
            ivs[q, f] = ivs[q + 1, f]
    sv[SV_IV_N] = n - 1


@jit_leaf
def copy_list(nodes, cold, shades, gran, sv, src, slot, which, m):
    """Append copies of the nodes of list ``src`` (a run's) to list ``which``
    (HEAD_WRITES, HEAD_READS) of granule ``slot``, in order, standing for its
    bytes ``m``."""
    tail = np.int64(-1)
    x = head(gran, slot, which)
    while x >= 0:
        tail = x
        x = node_next(nodes, x)
    x = src
    while x >= 0:
        n = pool_alloc(nodes, sv, SV_NODE_TOP, SV_NODE_FREE, SV_NODE_USED)
        info = with_mask(nodes[x, N_INFO], m)
        if info_shadow(info):
            info = with_shadow(info, m)
        set_link(nodes, n, -1, node_agent(nodes, x))
        nodes[n, N_EPOCH] = nodes[x, N_EPOCH]
        nodes[n, N_INFO] = info
        nodes[n, N_ROW] = nodes[x, N_ROW]
        for f in range(K_FIELDS):
            cold[n, f] = cold[x, f]
        if info & I_SHADED:
            for f in range(S_FIELDS):
                shades[n, f] = shades[x, f]
            if hidden_bytes(shades, n, info):  # the run's one unit stands for all of m
                shades[n, S_AGENT] = shadow_agent(shades, n) | (m << KS_HIDDEN_SHIFT)
        if tail < 0:
            set_head(gran, slot, which, n)
        else:
            set_next(nodes, tail, n)
        tail = n
        x = node_next(nodes, x)


@jit_leaf
def free_list(nodes, sv, x):
    while x >= 0:
        nxt = node_next(nodes, x)
        pool_free(nodes, sv, SV_NODE_FREE, SV_NODE_USED, x)
        x = nxt


@jit_leaf
def clear_lists(nodes, sv, gran, s):
    free_list(nodes, sv, head(gran, s, HEAD_WRITES))
    free_list(nodes, sv, head(gran, s, HEAD_READS))
    gran[s, G_HEADS] = -1  # both lists empty
    set_reads(gran, s, 0, reads_limit(gran, s))


@jit_leaf
def new_run(sv, gran, nodes, ivs, pst, k, rr, lo, hi):
    """A run row (rr, lo, hi) at index ``k`` with empty lists; its slot."""
    s = find_granule(gran, rr, lo, True, sv, SV_GRAN_COUNT, sv[SV_LAUNCH], pst)
    clear_lists(nodes, sv, gran, s)  # a slot a cut-out page of this launch left
    row_insert(ivs, sv, k, rr, lo, hi)
    sv[SV_PAGE_LAUNCH] = sv[SV_LAUNCH]
    return s


@jit_leaf
def cut_run(sv, nodes, cold, shades, gran, ivs, pst, k, q):
    """Cut run row ``k`` before page ``q`` (inside it): the pages from ``q``
    on become the run row ``k + 1``, with a copy of the lists."""
    rr = ivs[k, IV_REGION]
    hi = ivs[k, IV_HI]
    s = probe(gran, rr, ivs[k, IV_LO])
    ivs[k, IV_HI] = q
    s2 = new_run(sv, gran, nodes, ivs, pst, k + 1, rr, q, hi)
    copy_list(nodes, cold, shades, gran, sv, head(gran, s, HEAD_WRITES), s2, HEAD_WRITES, 1)
    copy_list(nodes, cold, shades, gran, sv, head(gran, s, HEAD_READS), s2, HEAD_READS, 1)
    set_reads(gran, s2, reads_count(gran, s), reads_limit(gran, s))


@jit_leaf
def split_page(sv, nodes, cold, shades, gran, ivs, pst, region, p):
    """When a run holds page ``p`` of ``region``: cut the page out of it and
    give its nodes to each of its granules, which hold its history from now on."""
    rr = region | PAGE_REGION
    k = run_of(ivs, sv[SV_IV_N], rr, p)
    if k < 0:
        return
    if ivs[k, IV_LO] < p:
        cut_run(sv, nodes, cold, shades, gran, ivs, pst, k, p)
        k += 1
    if ivs[k, IV_HI] > p + 1:
        cut_run(sv, nodes, cold, shades, gran, ivs, pst, k, p + 1)
    s = probe(gran, rr, p)
    gs = granule_shift(region)
    per = np.int64(1) << (sv[SV_PAGE_SHIFT] - gs)
    full = (np.int64(1) << (np.int64(1) << gs)) - 1
    for g in range(p * per, (p + 1) * per):
        slot = find_granule(gran, region, g, True, sv, SV_GRAN_COUNT, sv[SV_LAUNCH], pst)
        copy_list(
            nodes, cold, shades, gran, sv, head(gran, s, HEAD_WRITES), slot, HEAD_WRITES, full
        )
        copy_list(nodes, cold, shades, gran, sv, head(gran, s, HEAD_READS), slot, HEAD_READS, full)
        set_reads(
            gran,
            slot,
            reads_count(gran, slot) + reads_count(gran, s),
            max(reads_limit(gran, slot), reads_limit(gran, s)),
        )
    clear_lists(nodes, sv, gran, s)
    row_remove(ivs, sv, k)


@jit_leaf
def split_pages(sv, nodes, cold, shades, gran, ivs, pst, region, p0, p1):
    """``split_page`` of pages ``p0`` to ``p1``."""
    for p in range(p0, p1 + 1):
        split_page(sv, nodes, cold, shades, gran, ivs, pst, region, p)


@jit_inline
def split_pages_of(sv, nodes, cold, shades, gran, ivs, pst, region, addr, size):
    """Before a granule path over [addr, addr + size): split the pages it
    touches out of their runs, in a launch that has any. One call, not a
    loop, where small accesses inline it (into ``replay``)."""
    if sv[SV_PAGE_LAUNCH] == sv[SV_LAUNCH]:
        ps = sv[SV_PAGE_SHIFT]
        split_pages(
            sv, nodes, cold, shades, gran, ivs, pst, region, addr >> ps, (addr + size - 1) >> ps
        )


@jit_leaf
def granule_uninit(gran, sv, ivs, region, g):
    """The uninitialized bytes (a mask) of granule ``g`` of ``region``: its
    init bits (a global granule keeps them across launches, in both sizes)
    and the init intervals."""
    gs = granule_shift(region)
    full = (np.int64(1) << (np.int64(1) << gs)) - 1
    glob = is_global(region)
    init = np.int64(0)
    s = probe(gran, region, g)
    if s >= 0 and (glob or slot_launch(gran, s) == sv[SV_LAUNCH]):
        init = slot_init(gran, s)
    if glob and sv[SV_GLOBAL_SIZES] & (GS_NARROW if region else GS_WIDE):
        init |= other_size_init(gran, region, g)
    un = full & ~init
    if un and sv[SV_IV_N] > 0:
        un &= ~iv_init_mask(ivs, sv[SV_IV_N], iv_region(region), g << gs, un)
    return un


@jit_leaf
def range_uninit(gran, sv, ivs, region, lo_addr, hi_addr):
    """The first and last uninitialized byte of [lo_addr, hi_addr) (granule
    aligned, pages no access of this launch but large ones has touched), or
    -1. Each is found by a walk from its end that steps over an init
    interval at once and stops at the first granule with an uninitialized
    byte: it visits only granules that hold init bits and intervals, so it
    costs what the trace initialized there, not the range's length."""
    gs = granule_shift(region)
    gsize = np.int64(1) << gs
    ivr = iv_region(region)
    n = sv[SV_IV_N]
    first = np.int64(-1)
    last = np.int64(-1)
    g = lo_addr >> gs
    gend = hi_addr >> gs
    while g < gend:
        base = g << gs
        k = iv_before(ivs, n, ivr, base)
        if k >= 0 and ivs[k, IV_REGION] == ivr and (ivs[k, IV_HI] >> gs) > g:
            g = ivs[k, IV_HI] >> gs  # the interval covers granules g and on to there
            continue
        un = granule_uninit(gran, sv, ivs, region, g)
        if un:
            first, _ = extend_bytes(un, base, gsize, first, last)
            break
        g += 1
    if first < 0:
        return first, last
    g = gend - 1
    while g >= lo_addr >> gs:
        base = g << gs
        k = iv_before(ivs, n, ivr, base + gsize - 1)
        if k >= 0 and ivs[k, IV_REGION] == ivr and ivs[k, IV_HI] >= base + gsize:
            down = ((ivs[k, IV_LO] + gsize - 1) >> gs) - 1
            if down < g:
                g = down  # the interval covers granules down+1 to g
                continue
        un = granule_uninit(gran, sv, ivs, region, g)
        if un:
            _, last = extend_bytes(un, base, gsize, first, last)
            break
        g -= 1
    return first, last


@jit_leaf
def access_pages(sh, x, from_addr, to_addr):
    """``access`` of the bytes [from_addr, to_addr) of access ``x`` (to the
    ``Shadow`` arrays ``sh``), a range that covers at least one whole page: the whole pages run by
    run (``RUNS``; a page some granule of the launch has touched granule by
    granule), the partial pages at its ends granule by granule. Returns (1
    when it left a candidate in ``cand``, else 0; the first and last
    uninitialized byte of the range or -1)."""
    sv, nodes, cold, shades, gran = sh.sv, sh.nodes, sh.cold, sh.shades, sh.gran
    ivs, pst = sh.ivs, sh.pst
    region, info = x.region, x.info
    ps = sv[SV_PAGE_SHIFT]
    p0 = (from_addr + (np.int64(1) << ps) - 1) >> ps
    p1 = to_addr >> ps
    rr = region | PAGE_REGION
    reads = (info & I_WRITE) == 0 or (info & I_ATOMIC) != 0
    found = 0
    ulo = np.int64(-1)
    uhi = np.int64(-1)
    for part in range(3):  # the head, the whole pages, the tail: in address order
        if part == 1:
            p = p0
            while p < p1:
                n = sv[SV_IV_N]
                k = iv_before(ivs, n, rr, p)
                s = np.int64(-1)
                q = p + 1
                if k >= 0 and ivs[k, IV_REGION] == rr and ivs[k, IV_HI] > p:  # a run
                    if ivs[k, IV_LO] < p:
                        cut_run(sv, nodes, cold, shades, gran, ivs, pst, k, p)
                        k += 1
                    if ivs[k, IV_HI] > p1:
                        cut_run(sv, nodes, cold, shades, gran, ivs, pst, k, p1)
                    q = ivs[k, IV_HI]
                    s = probe(gran, rr, p)
                elif not touched(gran, pst, sv, region, p):  # a new run, to the next boundary
                    nxt = next_run_start(ivs, n, rr, k, p1)
                    while q < nxt and not touched(gran, pst, sv, region, q):
                        q += 1
                    s = new_run(sv, gran, nodes, ivs, pst, k + 1, rr, p, q)
                plo = p << ps
                phi = q << ps
                if s < 0:  # a page some granule of the launch holds lists for
                    f, lo, hi = granules(sh, x, plo, phi, np.int64(-1))
                else:
                    lo = np.int64(-1)
                    hi = np.int64(-1)
                    if reads:
                        lo, hi = range_uninit(gran, sv, ivs, region, plo, phi)
                    f, _, _ = granules(sh, x, plo, phi, s)
                found |= f
                if lo >= 0:
                    if ulo < 0:
                        ulo = lo
                    uhi = hi
                p = q
            if info & I_WRITE:
                sv[SV_IV_N] = iv_add(ivs, sv[SV_IV_N], iv_region(region), p0 << ps, p1 << ps)
            continue
        lo_addr = from_addr if part == 0 else p1 << ps
        hi_addr = p0 << ps if part == 0 else to_addr
        if lo_addr >= hi_addr:
            continue
        split_pages_of(sv, nodes, cold, shades, gran, ivs, pst, region, lo_addr, hi_addr - lo_addr)
        f, lo, hi = granules(sh, x, lo_addr, hi_addr, np.int64(-1))
        found |= f
        if lo >= 0:
            if ulo < 0:
                ulo = lo
            uhi = hi
    return found, ulo, uhi


@jit_inline
def list_length(nodes, x):
    k = np.int64(0)
    while x >= 0:
        k += 1
        x = node_next(nodes, x)
    return k


@jit_inline
def run_lists(gran, nodes, rr, lo):
    s = probe(gran, rr, lo)
    return list_length(nodes, head(gran, s, HEAD_WRITES)) + list_length(
        nodes, head(gran, s, HEAD_READS)
    )


@jit_leaf
def range_need(gran, nodes, sv, ivs, pst, region, addr, size):
    """(granule slots, nodes, interval rows) an access of [addr, addr + size)
    in ``region`` may add (see ``access_pages``, ``cut_run``, ``split_page``)."""
    if size <= 0:
        return np.int64(0), np.int64(0), np.int64(0)
    launch = sv[SV_LAUNCH]
    ps = sv[SV_PAGE_SHIFT]
    gs = granule_shift(region)
    per = np.int64(1) << (ps - gs)
    end = addr + size
    p0 = (addr + (np.int64(1) << ps) - 1) >> ps
    p1 = end >> ps
    rr = region | PAGE_REGION
    nrows = sv[SV_IV_N]
    g = np.int64(0)
    n = np.int64(0)
    r = np.int64(0)
    if p1 > p0:
        p = p0
        while p < p1:
            k = iv_before(ivs, nrows, rr, p)
            if k >= 0 and ivs[k, IV_REGION] == rr and ivs[k, IV_HI] > p:
                n += 1
                cuts = (1 if ivs[k, IV_LO] < p else 0) + (1 if ivs[k, IV_HI] > p1 else 0)
                if cuts:
                    g += cuts
                    r += cuts
                    n += cuts * run_lists(gran, nodes, rr, ivs[k, IV_LO])
                p = min(ivs[k, IV_HI], p1)
                continue
            nxt = next_run_start(ivs, nrows, rr, k, p1)
            while p < nxt:
                if touched(gran, pst, sv, region, p):
                    g += per
                    n += per
                    p += 1
                else:
                    while p < nxt and not touched(gran, pst, sv, region, p):
                        p += 1
                    g += 1
                    n += 1
                    r += 1
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
        if sv[SV_PAGE_LAUNCH] == launch:  # pages it splits out of their runs
            for p in range(lo >> ps, ((hi - 1) >> ps) + 1):
                k = run_of(ivs, nrows, rr, p)
                if k >= 0:
                    ln = run_lists(gran, nodes, rr, ivs[k, IV_LO])
                    g += per + 2
                    n += (per + 2) * ln
                    r += 2
    return g, n, r


@jit_leaf
def owned_need(gran, nodes, sv, ivs, pst, region, space, owner, addr, size):
    """``range_need`` of an access as this state checks it: in a shard
    (``shards``), the sum over the ranges it owns, each checked as an access
    of its own (``memory.access``)."""
    if sv[SV_SHARDS] <= 1 or size <= 0:
        return range_need(gran, nodes, sv, ivs, pst, region, addr, size)
    g = np.int64(0)
    n = np.int64(0)
    r = np.int64(0)
    lo = addr
    end = addr + size
    while lo < end:
        hi, mine = stretch_end(sv, space, owner, lo, end)
        if mine:
            g1, n1, r1 = range_need(gran, nodes, sv, ivs, pst, region, lo, hi - lo)
            g += g1
            n += n1
            r += r1
        lo = hi
    return g, n, r


@jit_leaf
def page_room(op, space, addr, size, space2, addr2, peer, block, a, sv, nodes, gran, ivs, pst):
    """``replay_room`` for an access or copy that covers a whole page or
    meets a launch with pages: sets ``SV_GROW`` and returns False when the
    pools lack the room it may need."""
    g, n, r = owned_need(
        gran, nodes, sv, ivs, pst, region_of(space, peer, a, sv), space, peer, addr, size
    )
    if (
        op == O.CP_ASYNC
        or op == O.TMA_LOAD
        or op == O.TMA_STORE
        or O.BULK_COPY_PEER <= op <= O.BULK_REDUCE_PEER
    ):
        g2, n2, r2 = owned_need(
            gran, nodes, sv, ivs, pst, region_of(space2, block, a, sv), space2, block, addr2, size
        )
        g += g2
        n += n2
        r += r2
    grow = 0
    if sv[SV_NODE_USED] + n > nodes.shape[0]:
        grow |= GR_NODES
    # shadow.gran_limit, written out (see there)
    if 4 * (sv[SV_GRAN_COUNT] + g) > (2 + (gran.shape[0] >= GRAN_DENSE_MIN)) * gran.shape[0]:
        grow |= GR_GRAN
    if sv[SV_IV_N] + r + 2 > ivs.shape[0]:
        grow |= GR_IV
    sv[SV_GROW] = grow
    return grow == 0
