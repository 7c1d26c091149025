"""An access or a copy of any size: whole pages through ``pages``, the rest through
the granules (``granules``); a copy is a read of its source and a write of its
destination by the async agent that performs it.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from ..jit import jit_inline_ir, jit_leaf
from .atomics import acquire_atomic, release_atomic
from .granules import granule_range, granules, region_of
from .layout import (
    AG_BARGEN,
    AG_BAROBJ,
    AG_BASE,
    AG_FREL_BASE,
    AG_FREL_EPOCH,
    AG_THREAD,
    G_INIT,
    I_ASYNC,
    I_ATOMIC,
    I_COPY_SHIFT,
    I_PROXY,
    I_SCOPE_SHIFT,
    I_WRITE,
    N_LEVELS,
    SV_GRAN_COUNT,
    SV_IV_N,
    SV_LAUNCH,
    SV_PAGE_LAUNCH,
    SV_SHARDS,
    SV_VIEW,
)
from .pages import access_pages, covers_page, split_pages_of
from .races import flush_candidates, offer_uninit
from .shadow import INIT_INTERVAL_MIN, find_granule, granule_shift, iv_add, iv_region
from .shards import owns, stretch_end


@jit_leaf
def access(
    ag,
    snaps,
    arena_a,
    arena_e,
    sv,
    nodes,
    cold,
    gran,
    fen,
    cand,
    ivs,
    pst,
    region,
    space,
    owner,
    addr,
    size,
    a,
    epoch,
    t,
    info,
    row,
    ts,
    site,
):
    """Check an access by agent ``a`` (epoch ``epoch``; ``t`` is the thread
    whose clock orders it: ``a`` itself, or the issuer of a copy) and record
    it. ``info`` carries op, write/atomic/async/proxy bits and scope.
    Returns 1 when it left a candidate in ``cand`` (the caller then flushes
    them), else 0: most accesses find nothing and skip the flush.

    In a shard (``shards``) only the bytes this state owns are checked, range
    by range, each as an access of its own that names the whole access; the
    uninitialized bytes found are the first and last of them all.

    ``replay`` does the same with ``granule_range`` inlined (see there):
    here it is called, as inlining it into this function too made the first
    run's compile of the kernels several times longer."""
    if size <= 0:
        return 0
    end = addr + size
    if sv[SV_SHARDS] <= 1:
        found, ulo, uhi = access_range(
            ag,
            snaps,
            arena_a,
            arena_e,
            sv,
            nodes,
            cold,
            gran,
            fen,
            cand,
            ivs,
            pst,
            region,
            space,
            owner,
            addr,
            end,
            addr,
            size,
            a,
            epoch,
            t,
            info,
            row,
            ts,
            site,
        )
        return found | offer_uninit(cand, space, owner, ulo, uhi)
    found = 0
    ulo = np.int64(-1)
    uhi = np.int64(-1)
    lo = addr
    while lo < end:
        hi, mine = stretch_end(sv, space, owner, lo, end)
        if mine:
            f, flo, fhi = access_range(
                ag,
                snaps,
                arena_a,
                arena_e,
                sv,
                nodes,
                cold,
                gran,
                fen,
                cand,
                ivs,
                pst,
                region,
                space,
                owner,
                lo,
                hi,
                addr,
                size,
                a,
                epoch,
                t,
                info,
                row,
                ts,
                site,
            )
            found |= f
            if flo >= 0:
                if ulo < 0:
                    ulo = flo
                uhi = fhi
        lo = hi
    return found | offer_uninit(cand, space, owner, ulo, uhi)


@jit_leaf
def access_range(
    ag,
    snaps,
    arena_a,
    arena_e,
    sv,
    nodes,
    cold,
    gran,
    fen,
    cand,
    ivs,
    pst,
    region,
    space,
    owner,
    lo,
    hi,
    addr,
    size,
    a,
    epoch,
    t,
    info,
    row,
    ts,
    site,
):
    """``access`` of the bytes [lo, hi) of the access [addr, addr + size):
    (1 when it left a candidate, the first and last uninitialized byte or -1)."""
    if covers_page(sv, lo, hi - lo):
        return access_pages(
            ag,
            snaps,
            arena_a,
            arena_e,
            sv,
            nodes,
            cold,
            gran,
            fen,
            cand,
            ivs,
            pst,
            region,
            space,
            owner,
            lo,
            hi,
            addr,
            size,
            a,
            epoch,
            t,
            info,
            row,
            ts,
            site,
        )
    split_pages_of(sv, nodes, cold, gran, ivs, pst, region, lo, hi - lo)
    return granules(
        ag,
        snaps,
        arena_a,
        arena_e,
        sv,
        nodes,
        cold,
        gran,
        fen,
        cand,
        ivs,
        pst,
        region,
        space,
        owner,
        lo,
        hi,
        addr,
        addr + size,
        a,
        epoch,
        t,
        info,
        row,
        ts,
        site,
        size,
        np.int64(-1),
    )


@jit_leaf
def copy(
    ag,
    snaps,
    arena_a,
    arena_e,
    sv,
    nodes,
    cold,
    gran,
    fen,
    cand,
    ivs,
    pst,
    t,
    ca,
    epoch,
    proxy_bits,
    copy_kind,
    row,
    ts,
    site,
    op,
    space,
    addr,
    size,
    space2,
    addr2,
    block,
    peer,
):
    """A copy's source read then destination write, by copy agent ``ca``.
    Returns 1 when either left a candidate in ``cand`` (see ``access``)."""
    info = op | I_ASYNC | proxy_bits | (copy_kind << I_COPY_SHIFT)
    found = 0
    if sv[SV_VIEW] & (1 << space2):
        sowner = (
            block
            if space2 == O.SPACE_SHARED
            else (ag[t, AG_THREAD] if space2 == O.SPACE_LOCAL else 0)
        )
        found = access(
            ag,
            snaps,
            arena_a,
            arena_e,
            sv,
            nodes,
            cold,
            gran,
            fen,
            cand,
            ivs,
            pst,
            region_of(space2, block, t, sv),
            space2,
            sowner,
            addr2,
            size,
            ca,
            epoch,
            t,
            info,
            row,
            ts,
            site,
        )
    if sv[SV_VIEW] & (1 << space):
        downer = (
            peer if space == O.SPACE_SHARED else (ag[t, AG_THREAD] if space == O.SPACE_LOCAL else 0)
        )
        found |= access(
            ag,
            snaps,
            arena_a,
            arena_e,
            sv,
            nodes,
            cold,
            gran,
            fen,
            cand,
            ivs,
            pst,
            region_of(space, peer, t, sv),
            space,
            downer,
            addr,
            size,
            ca,
            epoch,
            t,
            info | I_WRITE,
            row,
            ts,
            site,
        )
    return found


# ---------------------------------------------------------------------------
@jit_inline_ir
def on_access(t, c, i, ev, a, epoch):
    """A read, write or atomic: the reference's ``on_access``."""
    (
        sv,
        ag,
        snaps,
        arena_a,
        arena_e,
        scratch,
        touched,
        nodes,
        cold,
        gran,
        rels,
        atom_map,
        fen,
        find,
        cand,
        ivs,
        pst,
        cvs,
    ) = (
        t.sv,
        t.ag,
        t.snaps,
        t.arena_a,
        t.arena_e,
        t.scratch,
        t.touched,
        t.nodes,
        t.cold,
        t.gran,
        t.rels,
        t.atom_map,
        t.fen,
        t.find,
        t.cand,
        t.ivs,
        t.pst,
        t.cvs,
    )
    (row, launch, block, thread, op, ts, site, size) = (
        ev.row,
        ev.launch,
        ev.block,
        ev.thread,
        ev.op,
        ev.ts,
        ev.site,
        ev.size,
    )
    space = np.int64(c.space[i])
    addr = np.int64(c.addr[i])
    peer = np.int64(c.peer[i])
    scope = np.int64(c.scope[i])
    sem = np.int64(c.sem[i])
    region = region_of(space, peer, a, sv)
    owner = peer if space == O.SPACE_SHARED else (thread if space == O.SPACE_LOCAL else 0)
    info = op | (scope << I_SCOPE_SHIFT)
    if op != O.READ:
        info |= I_WRITE
    if op == O.ATOMIC:
        info |= I_ATOMIC
        acquire_atomic(
            ag,
            snaps,
            arena_a,
            arena_e,
            sv,
            atom_map,
            rels,
            scratch,
            touched,
            cvs,
            a,
            region,
            addr,
            sem,
            scope,
        )
    if c.proxy[i] == 1:
        info |= I_PROXY
    # ``access``, with the granule path inlined: replay allocates
    # nothing, so it is compiled without reference counting, and a
    # call pushes every array argument as a struct of ~8 words, ~100
    # pushes per access (inlining into a reference-counted caller
    # instead costs an incref and decref of each array per event).
    found = 0
    if sv[SV_VIEW] & (1 << space) and size > 0:
        # A launch with runs of pages (see ``pages``): ``access`` splits the
        # pages a small access needs out of their runs; the call to it is the
        # one large accesses take, so ``replay`` inlines no more for them. In
        # a shard (``shards``): an access of bytes another shard owns is
        # skipped, and ``access`` takes one that crosses a stretch boundary.
        own = owns(sv, space, owner, addr, size)
        if own == 2 or (
            own == 1 and (covers_page(sv, addr, size) or sv[SV_PAGE_LAUNCH] == sv[SV_LAUNCH])
        ):
            found = access(
                ag,
                snaps,
                arena_a,
                arena_e,
                sv,
                nodes,
                cold,
                gran,
                fen,
                cand,
                ivs,
                pst,
                region,
                space,
                owner,
                addr,
                size,
                a,
                epoch,
                a,
                info,
                row,
                ts,
                site,
            )
        elif own == 1:
            found, ulo, uhi = granule_range(
                ag,
                snaps,
                arena_a,
                arena_e,
                sv,
                nodes,
                cold,
                gran,
                fen,
                cand,
                ivs,
                pst,
                region,
                space,
                owner,
                addr,
                addr + size,
                addr,
                addr + size,
                a,
                epoch,
                a,
                info,
                row,
                ts,
                site,
                size,
                np.int64(-1),
            )
            found |= offer_uninit(cand, space, owner, ulo, uhi)
    if found:
        flush_candidates(
            cand,
            find,
            sv,
            row,
            launch,
            block,
            thread,
            op,
            ts,
            site,
            ag[a, AG_BAROBJ],
            ag[a, AG_BARGEN],
        )
    if op == O.ATOMIC:
        # The release side (the reference's ``atomic_release``): a
        # release atomic releases the clock at its scope; a relaxed
        # one, the clock at each level's latest release fence, at the
        # narrower of the two scopes.
        if sem == O.SEM_RELEASE or sem == O.SEM_ACQ_REL:
            release_atomic(
                ag,
                snaps,
                arena_a,
                arena_e,
                sv,
                atom_map,
                rels,
                a,
                region,
                addr,
                scope,
                ag[a, AG_BASE],
                epoch,
            )
        else:
            for lvl in range(N_LEVELS):
                if ag[a, AG_FREL_BASE + lvl] >= 0:
                    release_atomic(
                        ag,
                        snaps,
                        arena_a,
                        arena_e,
                        sv,
                        atom_map,
                        rels,
                        a,
                        region,
                        addr,
                        min(lvl + 1, scope),
                        ag[a, AG_FREL_BASE + lvl],
                        ag[a, AG_FREL_EPOCH + lvl],
                    )


# ---------------------------------------------------------------------------
@jit_leaf
def on_init(t, c, i, ev, a, epoch):
    """``init``: the bytes are initialized (the reference's ``on_init``)."""
    sv, gran, ivs, pst = t.sv, t.gran, t.ivs, t.pst
    size = ev.size
    space = np.int64(c.space[i])
    addr = np.int64(c.addr[i])
    region = region_of(space, np.int64(c.peer[i]), a, sv)
    if size >= INIT_INTERVAL_MIN:
        sv[SV_IV_N] = iv_add(ivs, sv[SV_IV_N], iv_region(region), addr, addr + size)
    elif size > 0:
        end = addr + size
        gs = granule_shift(region)
        owner = np.int64(c.peer[i]) if space == O.SPACE_SHARED else np.int64(0)
        for g in range(addr >> gs, ((end - 1) >> gs) + 1):
            base = g << gs
            if owns(sv, space, owner, base, np.int64(1) << gs) == 0:
                continue  # another shard's bytes (``shards``)
            lo = max(addr, base) - base
            hi = min(end, base + (np.int64(1) << gs)) - base
            slot = find_granule(gran, region, g, True, sv, SV_GRAN_COUNT, sv[SV_LAUNCH], pst)
            gran[slot, G_INIT] |= ((1 << hi) - 1) ^ ((1 << lo) - 1)
