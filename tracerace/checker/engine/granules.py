"""The granule path of an access: each granule's history of writes and
reads is checked (``races.offer``), updated and pruned; ``init`` bytes and uninitialised reads.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...trace import ops as O
from ..jit import jit_inline, jit_inline_ir, jit_leaf, store_row_nt
from .agents import known
from .async_copies import copy_retired, cp_waiter, first_wait, proxy_fenced, retiring_wait
from .layout import (
    AG_BARPOS,
    AG_KIND,
    FN_EPOCH,
    FN_VAL,
    HEAD_READS,
    HEAD_WRITES,
    I_AFTER_ALL,
    I_ASYNC,
    I_ATOMIC,
    I_PROXY,
    I_RACED,
    I_SHADE_HIDES,
    I_WRITE,
    KIND_TMA,
    N_EPOCH,
    N_INFO,
    N_ROW,
    SV_GLOBAL_REGION,
    SV_GRAN_COUNT,
    SV_IV_N,
    SV_LAUNCH,
    SV_NODE_FREE,
    SV_NODE_TOP,
    SV_NODE_USED,
    SV_SHARDS,
    SV_SHARED_REGION,
    add_init,
    add_mask,
    count_read,
    head,
    info_mask,
    info_scope,
    info_shadow,
    node_agent,
    node_next,
    reads_count,
    set_head,
    set_link,
    set_next,
    set_reads,
    slot_init,
    with_mask,
    with_shadow,
)
from .pools import pool_alloc, pool_free
from .races import ORDERED, offer, race_kind
from .shadow import (
    PF_FAR,
    PF_NEAR,
    READ_PRUNE_MIN,
    REGION_LOCAL,
    find_granule,
    granule_shift,
    hidden_bytes,
    hide_bytes,
    iv_init_mask,
    iv_region,
    prefetch_lists,
    prefetch_slots,
    set_shadow,
    shaded,
    shadow_agent,
    shadow_epoch,
)
from .shards import keep_owned

Shadow = namedtuple("Shadow", "ag snaps arena_a arena_e sv nodes cold shades gran fen cand ivs pst")
"""The arrays an access reads and writes: the agents and their clocks, the
granule table and its nodes, the fences of the async agents, the candidates,
the init intervals and the page stamps (``shadow_of`` takes them from
``Tables``)."""

Access = namedtuple("Access", "region space owner addr end a epoch t info row ts site size")
"""One access [addr, end) of ``size`` bytes, every field an int64: its region,
space and owner, the agent ``a`` that makes it at ``epoch``, the thread ``t``
whose clock orders it (``a`` itself, or the issuer of a copy), its ``info``
word (without a mask) and the event's row (a report finds the rest of the
access there: ``races.add_earlier_rows``). ``ts`` and ``site`` are the
event's too, and no kernel reads them: without them (and without
``CopyOp``'s) the pipeline benchmark's replay ran ~10% slower, at fewer
instructions (``bench/README.md``, "A node's report fields read back from
the trace")."""


@jit_inline
def shadow_of(t):
    """The ``Shadow`` arrays of ``Tables`` ``t``."""
    return Shadow(
        t.ag,
        t.snaps,
        t.arena_a,
        t.arena_e,
        t.sv,
        t.nodes,
        t.cold,
        t.shades,
        t.gran,
        t.fen,
        t.cand,
        t.ivs,
        t.pst,
    )


@jit_inline
def set_node(nodes, cold, ag, n, nxt, row, a, epoch, info, t):
    """Every field of node ``n``, followed by ``nxt`` in its list: the access
    of agent ``a`` (ordered by thread ``t``, whose barrier position it
    records). ``info`` has no shadow bits and no I_SHADED: the node starts
    unshadowed, its shade row untouched."""
    set_link(nodes, n, nxt, a)
    nodes[n, N_EPOCH] = epoch
    nodes[n, N_INFO] = info
    nodes[n, N_ROW] = row
    # The cold row is written past the caches (see store_row_nt): it is
    # rarely read again (only to report the node), and a cp.async pipeline
    # writes one per shared read, which used to evict the lists and slots the
    # next accesses need. The access's address, size, ts and site are its
    # row's (``races.offer``).
    store_row_nt(cold, n, (ag[t, AG_BARPOS],))


@jit_inline
def unlink(gran, slot, which, nodes, sv, prev, x, nxt):
    """Take node ``x`` (after ``prev``, -1: the head; followed by ``nxt``)
    out of list ``which`` (HEAD_WRITES, HEAD_READS) of ``slot`` and free it."""
    if prev < 0:
        set_head(gran, slot, which, nxt)
    else:
        set_next(nodes, prev, nxt)
    pool_free(nodes, sv, SV_NODE_FREE, SV_NODE_USED, x)


# A read that reuses the list head (see ``access``) prunes the rest of a list
# up to this long.
EAGER_PRUNE_MAX = 64


@jit_inline
def prune_reads(ag, snaps, arena_a, arena_e, sv, nodes, gran, slot, first, m, t, floor):
    """Drop, from the read list of ``slot`` after node ``first`` (-1: from
    its head), the bytes ``m`` of every read that thread ``t`` has ordered
    before it; a node left with no bytes is freed. Sets the next doubling
    limit: twice the reads left, at least ``floor``."""
    prev = first
    x = head(gran, slot, HEAD_READS) if first < 0 else node_next(nodes, first)
    left = np.int64(0) if first < 0 else np.int64(1)  # ``first`` is the head
    while x >= 0:
        nxt = node_next(nodes, x)
        xinfo = nodes[x, N_INFO]
        xm = info_mask(xinfo)
        if (
            xm & m
            and known(ag, snaps, arena_a, arena_e, t, node_agent(nodes, x)) >= nodes[x, N_EPOCH]
        ):
            xm &= ~m
            if xm == 0:
                unlink(gran, slot, HEAD_READS, nodes, sv, prev, x, nxt)
                x = nxt
                continue
            nodes[x, N_INFO] = with_mask(xinfo, xm)
        left += 1
        prev = x
        x = nxt
    set_reads(gran, slot, left, max(READ_PRUNE_MIN, 2 * left, floor))


@jit_leaf
def extend_bytes(un, base, gsize, first, last):
    """(first, last) byte of a range (-1: none yet) extended by the bytes
    ``un`` (a mask) of the granule at ``base``, met in address order."""
    for b in range(gsize):
        if un & (1 << b):
            if first < 0:
                first = base + b
            last = base + b
    return first, last


@jit_inline_ir
def granule_range(sh, x, lo_addr, hi_addr, page):
    """Check access ``x`` [addr, end) to the ``Shadow`` arrays ``sh`` against
    the lists of the granules of its
    bytes [lo_addr, hi_addr), record it there, and find the uninitialized
    ones; or, when ``page`` is a slot, against a run of pages' lists (one unit,
    bit 0: the whole run; its uninitialized bytes are ``range_uninit``'s).
    Returns (1 when it left a candidate in ``cand``, else 0; the first and
    last uninitialized byte or -1).

    Per granule, as the reference's ``on_access``: the earlier writes race
    with any access, the earlier reads with a write (``races.race_kind``);
    an async-proxy access after a generic-proxy write it may see needs a
    proxy fence; then the access joins the granule's writes or reads."""
    ag, snaps, arena_a, arena_e, sv, nodes, cold, shades, gran, fen, cand, ivs, pst = sh
    region, space, owner, addr, end, a, epoch, t, info, row, ts, site, size = x
    found = 0
    is_write = (info & I_WRITE) != 0
    reads = not is_write or (info & I_ATOMIC) != 0
    uninit_lo = np.int64(-1)
    uninit_hi = np.int64(-1)
    gs = granule_shift(region)
    gsize = np.int64(1) << gs
    g0 = lo_addr >> gs
    g1 = (hi_addr - 1) >> gs
    if page >= 0:
        g0 = g1 = 0
        gsize = np.int64(1)  # one unit
    for g in range(g0, g1 + 1):
        if page >= 0:
            slot = page
            m = np.int64(1)
        else:
            base = g << gs
            # (conditionals, not max and min: inlined at IR level, those
            # builtins stayed calls, ~25 instructions an access)
            lo = (lo_addr if lo_addr > base else base) - base
            hi = (hi_addr if hi_addr < base + gsize else base + gsize) - base
            m = ((np.int64(1) << hi) - 1) ^ ((np.int64(1) << lo) - 1)
            slot = find_granule(gran, region, g, True, sv, SV_GRAN_COUNT, sv[SV_LAUNCH], pst)
            if reads:
                un = uninitialized(gran, sv, ivs, region, slot, base, m)
                if un:
                    uninit_lo, uninit_hi = extend_bytes(un, base, gsize, uninit_lo, uninit_hi)
        found_w, after_all = check_writes(
            ag,
            snaps,
            arena_a,
            arena_e,
            sv,
            nodes,
            cold,
            shades,
            gran,
            fen,
            cand,
            slot,
            m,
            space,
            owner,
            addr,
            end,
            a,
            epoch,
            t,
            info,
        )
        found |= found_w
        if is_write:
            found |= check_reads(
                ag,
                snaps,
                arena_a,
                arena_e,
                nodes,
                cold,
                gran,
                fen,
                cand,
                slot,
                m,
                space,
                owner,
                addr,
                end,
                t,
            )
        record(
            ag,
            snaps,
            arena_a,
            arena_e,
            sv,
            nodes,
            cold,
            gran,
            slot,
            m,
            a,
            epoch,
            t,
            info | I_AFTER_ALL if after_all else info,
            row,
            page,
        )
    return found, uninit_lo, uninit_hi


@jit_inline
def uninitialized(gran, sv, ivs, region, slot, base, m):
    """The bytes of ``m`` in granule ``slot`` (at ``base``) no write or ``init``
    initialized; bytes an init interval covers are marked initialized on the way."""
    un = m & ~slot_init(gran, slot)
    if un and sv[SV_IV_N] > 0:
        covered = iv_init_mask(ivs, sv[SV_IV_N], iv_region(region), base, un)
        add_init(gran, slot, covered)
        un &= ~covered
    return un


@jit_inline
def check_writes(
    ag,
    snaps,
    arena_a,
    arena_e,
    sv,
    nodes,
    cold,
    shades,
    gran,
    fen,
    cand,
    slot,
    m,
    space,
    owner,
    addr,
    end,
    a,
    epoch,
    t,
    info,
):
    """The granule's writes against the access: each one that overlaps and races
    is a candidate; for an async-proxy access, each one it may see is checked
    for its proxy fence (``check_proxy_fence``). One pass also prunes them: a
    plain write (or an atomic, of its own earlier atomics) that happens after
    a write covers its bytes; another atomic hides them from the proxy rule;
    retired copies drop their shadowed bytes; an async copy's write shadows
    the bytes it overwrites. Returns (1 when it left a candidate, else 0;
    for a copy's write, whether every write it overlaps happens before it:
    its node is then ``I_AFTER_ALL``).

    The invariant the proxy rule relies on: a write leaves the list, or has
    its bytes hidden, only once a later write that it happens before has been
    performed (a copy: retired), and such a copy stays in the list until then.
    A write ``x`` the access may see is one it knows of and whose bytes here
    no later performed write follows: not hidden, and not under a retired
    copy newer than ``x`` (met earlier in this pass: the list is newest
    first) that ``x`` happens before. Every newer copy overlapping ``x`` was
    checked against ``x`` (which was in the list, over those bytes, then):
    either ``x`` happens before it, or ``x`` raced it and is ``I_RACED``. So
    all of them follow an ``x`` that is not ``I_RACED``; an ``I_RACED`` one
    is hidden by the ``I_AFTER_ALL`` copies (which every write they overlap
    happens before) and by its one shadow (``shade``)."""
    found = 0
    is_copy_write = (info & I_ASYNC) != 0 and (info & I_WRITE) != 0
    after_all = is_copy_write
    # Bytes of m under the retired copies met so far, and under those of
    # them that are I_AFTER_ALL.
    cover = np.int64(0)
    cover_after_all = np.int64(0)
    is_write = (info & I_WRITE) != 0
    is_atomic = (info & I_ATOMIC) != 0
    is_copy = (info & I_ASYNC) != 0
    is_proxy = (info & I_PROXY) != 0
    scope = info_scope(info)
    aw = 1 if is_write else 0
    prunes_writes = is_write and not is_copy
    prev = np.int64(-1)
    x = head(gran, slot, HEAD_WRITES)
    while x >= 0:
        nxt = node_next(nodes, x)
        xinfo = nodes[x, N_INFO]
        xm = info_mask(xinfo)
        if info_shadow(xinfo) and copy_retired(
            ag, fen, shadow_agent(shades, x), shadow_epoch(shades, x)
        ):
            # A retired copy that x happens before covers these bytes (an
            # async atomic's hides them).
            if xinfo & I_SHADE_HIDES:
                xinfo = hide_bytes(nodes, shades, x, xinfo, info_shadow(xinfo))
                xinfo = with_shadow(xinfo, np.int64(0)) & ~np.int64(I_SHADE_HIDES)
            else:
                xm &= ~info_shadow(xinfo)
                if xm == 0:
                    unlink(gran, slot, HEAD_WRITES, nodes, sv, prev, x, nxt)
                    x = nxt
                    continue
                xinfo = with_shadow(with_mask(xinfo, xm), np.int64(0))
            nodes[x, N_INFO] = xinfo
        if xm & m:
            xa = node_agent(nodes, x)
            kind = race_kind(
                ag,
                snaps,
                arena_a,
                arena_e,
                fen,
                nodes,
                x,
                t,
                True,
                is_write,
                is_atomic,
                scope,
                is_copy and is_proxy,
            )
            if kind >= 0:
                offer(cand, kind, ag, nodes, cold, fen, x, 1, aw, space, owner, addr, end, t)
                found = 1
            elif (
                kind == ORDERED
                and is_proxy
                and (xinfo & I_PROXY) == 0
                and xm
                & m
                & ~hidden_bytes(shades, x, xinfo)
                & ~(cover_after_all if xinfo & I_RACED else cover)
            ):
                found |= check_proxy_fence(
                    ag,
                    snaps,
                    arena_a,
                    arena_e,
                    nodes,
                    cold,
                    fen,
                    cand,
                    x,
                    aw,
                    space,
                    owner,
                    addr,
                    end,
                    t,
                )
            if kind != ORDERED and is_copy_write:
                after_all = False
                xinfo |= I_RACED
                nodes[x, N_INFO] = xinfo
            if is_proxy and (xinfo & I_ASYNC) != 0 and copy_retired(ag, fen, xa, nodes[x, N_EPOCH]):
                cover |= xm & m
                if xinfo & I_AFTER_ALL:
                    cover_after_all |= xm & m
            if (
                kind == ORDERED
                and prunes_writes
                and (
                    not is_atomic
                    or (
                        (xinfo & I_ATOMIC) != 0
                        and (xinfo & I_ASYNC) == 0
                        and xa == a
                        and info_scope(xinfo) >= scope
                    )
                )
            ):
                xm &= ~m
                if xm == 0:
                    unlink(gran, slot, HEAD_WRITES, nodes, sv, prev, x, nxt)
                    x = nxt
                    continue
                nodes[x, N_INFO] = with_mask(xinfo, xm)
            elif kind == ORDERED and is_atomic and not is_copy:
                hide_bytes(nodes, shades, x, xinfo, xm & m)
            elif kind == ORDERED and is_copy and is_write:
                shade(ag, nodes, shades, x, xinfo, xm & m, a, epoch, is_atomic)
        prev = x
        x = nxt
    return found, after_all


@jit_inline
def shade(ag, nodes, shades, x, xinfo, m, a, epoch, atomic):
    """Copy ``epoch`` of async agent ``a``, which write ``x`` happens before,
    shadows the bytes ``m`` of ``x`` (one shadow per node). Where ``x`` is
    already shadowed by a copy still in flight, the copy that retires first
    is kept when that is known: the same group of the same agent shadows
    both sets of bytes; an older group of the same cp.async or bulk agent
    (retired no later) keeps its own when it already covers ``m``. Otherwise
    the newer copy replaces the older one. An ``atomic`` copy (red_async, a
    bulk reduction) hides the bytes once retired instead of dropping them
    (``I_SHADE_HIDES``; when one group shadows for both, hiding is what is
    kept: hidden bytes stay in the list, which only costs room)."""
    old = info_shadow(xinfo)
    hides = np.int64(I_SHADE_HIDES) if atomic else np.int64(0)
    if old and shadow_agent(shades, x) == a and ag[a, AG_KIND] != KIND_TMA:
        e = shadow_epoch(shades, x)
        if e == epoch:
            m |= old
            hides |= xinfo & I_SHADE_HIDES
        elif e < epoch and (m & ~old) == 0:
            return
    xinfo = shaded(nodes, shades, x, xinfo)
    set_shadow(shades, x, a, epoch)
    nodes[x, N_INFO] = (with_shadow(xinfo, m) & ~np.int64(I_SHADE_HIDES)) | hides


@jit_inline
def check_proxy_fence(
    ag, snaps, arena_a, arena_e, nodes, cold, fen, cand, x, aw, space, owner, addr, end, t
):
    """An async-proxy access after a generic-proxy write ``x`` it may see: the
    writer must have fenced the proxies (``fence.proxy.async``) after the
    write (a cp.async destination: after the wait that retired it) and before
    what orders it before the access, else a ``proxy_fence`` candidate."""
    xa = node_agent(nodes, x)
    # An async agent's write that happens before the access need not be
    # performed: knowing a TMA agent's later copy knows its earlier ones,
    # and one of a phase no wait returned on (or of an mbarrier not yet
    # initialized) stays in flight. Such a write is no W (the reference's
    # ``writes_seen`` leaves it out).
    if nodes[x, N_INFO] & I_ASYNC and ag[xa, AG_KIND] == KIND_TMA:
        # An st_async destination: the write of the first waiter on its
        # phase, performed at that wait.
        f = first_wait(ag, fen, xa, nodes[x, N_EPOCH])
        if f < 0:
            return 0  # not performed yet: no write for rule 7 (below)
        w = fen[f, FN_VAL]
        after = fen[f, FN_EPOCH]
    elif nodes[x, N_INFO] & I_ASYNC:
        # A cp.async destination: the write of the thread of the wait that
        # retired it (its issuer's, or an mbar_wait's on a phase that tracked
        # it), performed at that wait.
        f = retiring_wait(ag, fen, xa, nodes[x, N_EPOCH])
        if f < 0:
            return 0
        w = cp_waiter(ag, fen, xa, f)
        after = fen[f, FN_EPOCH]
    else:
        w = xa
        after = nodes[x, N_EPOCH]
    if proxy_fenced(ag, fen, w, after, known(ag, snaps, arena_a, arena_e, t, w)):
        return 0
    offer(cand, O.K_PROXY_FENCE, ag, nodes, cold, fen, x, 1, aw, space, owner, addr, end, t)
    return 1


@jit_inline
def check_reads(
    ag, snaps, arena_a, arena_e, nodes, cold, gran, fen, cand, slot, m, space, owner, addr, end, t
):
    """A write against the granule's reads: each one that overlaps and races
    (``war``, or ``async_inflight`` for a copy's read still in flight) is a
    candidate."""
    found = 0
    x = head(gran, slot, HEAD_READS)
    while x >= 0:
        if info_mask(nodes[x, N_INFO]) & m:
            kind = race_kind(
                ag, snaps, arena_a, arena_e, fen, nodes, x, t, False, True, False, 0, False
            )
            if kind >= 0:
                offer(cand, kind, ag, nodes, cold, fen, x, 0, 1, space, owner, addr, end, t)
                found = 1
        x = node_next(nodes, x)
    return found


@jit_inline
def record(
    ag,
    snaps,
    arena_a,
    arena_e,
    sv,
    nodes,
    cold,
    gran,
    slot,
    m,
    a,
    epoch,
    t,
    info,
    row,
    page,
):
    """The access joins the granule's writes or reads (a new node at the head).
    A read first prunes the reads it makes redundant: at once the newest read,
    when this one covers it and happens after it (its node is reused), else
    all of them once the list has doubled."""
    is_write = (info & I_WRITE) != 0
    is_copy = (info & I_ASYNC) != 0
    if not is_write:
        # The usual case of a variable read again after synchronization: the
        # newest read's node is reused, so the list does not grow.
        h = head(gran, slot, HEAD_READS)
        if h >= 0 and not is_copy:
            hm = info_mask(nodes[h, N_INFO])
            ha = node_agent(nodes, h)
            if (hm & ~m) == 0 and known(ag, snaps, arena_a, arena_e, t, ha) >= nodes[h, N_EPOCH]:
                set_node(
                    nodes,
                    cold,
                    ag,
                    h,
                    node_next(nodes, h),
                    row,
                    a,
                    epoch,
                    add_mask(info, m),
                    t,
                )
                # Another agent's read ordered before this one: most likely
                # a new generation of readers after a barrier, so the rest
                # of the old one is redundant now. Dropping it at once keeps
                # the list one generation long for the next write's scan.
                # Bounded (EAGER_PRUNE_MAX) so a long list of unordered
                # readers is not rescanned at every such read.
                nr = reads_count(gran, slot)
                if ha != a and 1 < nr <= EAGER_PRUNE_MAX:
                    # The old generation's size predicts the new one's:
                    # the next doubling prune waits until the list has
                    # outgrown it (else it would scan a generation of
                    # unordered readers and drop none of them).
                    prune_reads(ag, snaps, arena_a, arena_e, sv, nodes, gran, slot, h, m, t, 2 * nr)
                return
        if count_read(gran, slot) and not is_copy:
            prune_reads(ag, snaps, arena_a, arena_e, sv, nodes, gran, slot, -1, m, t, 0)
    n = pool_alloc(nodes, sv, SV_NODE_TOP, SV_NODE_FREE, SV_NODE_USED)
    # (each list by its own constant shift: a shift by a variable cost every
    # access instructions)
    if is_write:
        nxt = head(gran, slot, HEAD_WRITES)
        set_head(gran, slot, HEAD_WRITES, n)
    else:
        nxt = head(gran, slot, HEAD_READS)
        set_head(gran, slot, HEAD_READS, n)
    set_node(nodes, cold, ag, n, nxt, row, a, epoch, add_mask(info, m), t)
    if is_write and page < 0:  # a page's written bytes go to an init interval
        add_init(gran, slot, m)


@jit_leaf
def granules(sh, x, lo_addr, hi_addr, page):
    """``granule_range`` as a function of its own, for the rare large accesses
    (``access_pages``) and copies: inlined there too, it made the first run's
    compile of the kernels several times longer."""
    return granule_range(sh, x, lo_addr, hi_addr, page)


@jit_inline
def region_of(space, owner_block, agent, sv):
    if space == O.SPACE_GLOBAL:
        return sv[SV_GLOBAL_REGION]
    if space == O.SPACE_SHARED:
        return sv[SV_SHARED_REGION] | owner_block
    return REGION_LOCAL | agent


@jit_inline
def prefetch_ahead(addr_c, size_c, gpos, k, gran, nodes, gregion):
    """Prefetch for the global accesses ahead of the one at ``gpos[k]`` (see
    shadow.PF_FAR): the granule slots of the access ``PF_FAR`` ahead, the
    list heads of the one ``PF_NEAR`` ahead (its slot has arrived by then).

    ``gpos`` lists the batch's global-memory accesses (computed by
    :func:`global_accesses` on the read-ahead thread), and only they
    prefetch: a block's shared tiles are small and hot (prefetching them
    measured slower, pipeline), and a look at the op and space of the
    events ahead at every event cost the tiled benchmark ~50 instructions
    per event (valgrind), where nearly every access is to shared memory."""
    j = k + PF_FAR
    if j < gpos.shape[0]:
        e = gpos[j]
        prefetch_slots(gran, gregion, np.int64(addr_c[e]), np.int64(size_c[e]))
    j = k + PF_NEAR
    if j < gpos.shape[0]:
        e = gpos[j]
        prefetch_lists(gran, nodes, gregion, np.int64(addr_c[e]), np.int64(size_c[e]))


def global_accesses(batch, sv: np.ndarray | None = None) -> np.ndarray:
    """Rows of ``batch`` (0-based) that are plain or atomic accesses to global
    memory: the events whose shadow is worth prefetching. With the ``sv`` of
    a shard's state, only those it replays: its atomics and the plain
    accesses whose bytes it owns, in part or whole (``shards``)."""
    rows = batch.once("global_accesses", _global_rows)  # the same for every shard
    if sv is not None and sv[SV_SHARDS] > 1:
        c = batch.cols
        rows = rows.copy()  # keep_owned keeps this shard's at the front
        rows = rows[: keep_owned(rows, c["op"], c["addr"], c["size"], sv)]
    return rows


def _global_rows(c: dict[str, np.ndarray]) -> np.ndarray:
    rows = np.flatnonzero((c["op"] <= O.ATOMIC) & (c["space"] == O.SPACE_GLOBAL))
    return rows.astype(np.int64, copy=False)  # already int64 where intp is
