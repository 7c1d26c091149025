"""An access or a copy of any size: whole pages through ``pages``, the rest through
the granules (``granules``); a copy is a read of its source and a write of its
destination by the async agent that performs it.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...trace import ops as O
from ..jit import jit_inline_ir, jit_leaf
from .atomics import acquire_atomic, release_atomic
from .granules import Access, granule_range, granules, region_of, shadow_of
from .layout import (
    AG_BASE,
    AG_FREL_BASE,
    AG_FREL_EPOCH,
    AG_THREAD,
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
    add_init,
)
from .pages import access_pages, covers_page, split_pages_of
from .races import flush_candidates, offer_uninit
from .shadow import INIT_INTERVAL_MIN, find_granule, granule_shift, iv_add, iv_region
from .shards import owns, stretch_end


@jit_leaf
def access(sh, x):
    """Check access ``x`` (by agent ``x.a`` at ``x.epoch``; ``x.t`` is the
    thread whose clock orders it: ``x.a`` itself, or the issuer of a copy) to
    the ``Shadow`` arrays ``sh``, and record it. ``x.info`` carries op,
    write/atomic/async/proxy bits and scope.
    Returns 1 when it left a candidate in ``cand`` (the caller then flushes
    them), else 0: most accesses find nothing and skip the flush.

    In a shard (``shards``) only the bytes this state owns are checked, range
    by range, each as an access of its own that names the whole access; the
    uninitialized bytes found are the first and last of them all.

    ``replay`` does the same with ``granule_range`` inlined (see there):
    here it is called, as inlining it into this function too made the first
    run's compile of the kernels several times longer."""
    if x.size <= 0:
        return 0
    sv = sh.sv
    if sv[SV_SHARDS] <= 1:
        found, ulo, uhi = access_range(sh, x, x.addr, x.end)
        return found | offer_uninit(sh.cand, x.space, x.owner, ulo, uhi)
    found = 0
    ulo = np.int64(-1)
    uhi = np.int64(-1)
    lo = x.addr
    while lo < x.end:
        hi, mine = stretch_end(sv, x.space, x.owner, lo, x.end)
        if mine:
            f, flo, fhi = access_range(sh, x, lo, hi)
            found |= f
            if flo >= 0:
                if ulo < 0:
                    ulo = flo
                uhi = fhi
        lo = hi
    return found | offer_uninit(sh.cand, x.space, x.owner, ulo, uhi)


@jit_leaf
def access_range(sh, x, lo, hi):
    """``access`` of the bytes [lo, hi) of access ``x``: (1 when it left a
    candidate, the first and last uninitialized byte or -1)."""
    if covers_page(sh.sv, lo, hi - lo):
        return access_pages(sh, x, lo, hi)
    split_pages_of(
        sh.sv, sh.nodes, sh.cold, sh.shades, sh.gran, sh.ivs, sh.pst, x.region, lo, hi - lo
    )
    return granules(sh, x, lo, hi, np.int64(-1))


CopyOp = namedtuple(
    "CopyOp",
    "t ca epoch proxy_bits dst_bits copy_kind row ts site op space addr size space2 addr2 "
    "block peer",
)
"""A copy of ``size`` bytes from (``space2``, ``addr2``; shared memory: of
``block``) to (``space``, ``addr``; shared memory: of ``peer``), issued by
thread ``t`` and made by its copy agent ``ca`` at ``epoch``: ``proxy_bits``
(``I_PROXY`` or 0), ``dst_bits`` (``info`` bits of the destination write
alone: a bulk reduction's ``I_ATOMIC`` and scope, else 0), its
``reasons.INFLIGHT_*`` kind, and the event's row, ts, site and op (ts and
site unread, see ``granules.Access``). Every field is an int64."""


@jit_leaf
def copy(sh, cp):
    """A copy's source read then destination write, by copy agent ``cp.ca``,
    to the ``Shadow`` arrays ``sh``. Returns 1 when either left a candidate
    in ``cand`` (see ``access``)."""
    ag, sv, t, size = sh.ag, sh.sv, cp.t, cp.size
    space, space2, block, peer = cp.space, cp.space2, cp.block, cp.peer
    info = cp.op | I_ASYNC | cp.proxy_bits | (cp.copy_kind << I_COPY_SHIFT)
    found = 0
    if sv[SV_VIEW] & (1 << space2):
        sowner = (
            block
            if space2 == O.SPACE_SHARED
            else (ag[t, AG_THREAD] if space2 == O.SPACE_LOCAL else 0)
        )
        found = access(
            sh,
            Access(
                region_of(space2, block, t, sv),
                space2,
                sowner,
                cp.addr2,
                cp.addr2 + size,
                cp.ca,
                cp.epoch,
                t,
                info,
                cp.row,
                cp.ts,
                cp.site,
                size,
            ),
        )
    if sv[SV_VIEW] & (1 << space):
        downer = (
            peer if space == O.SPACE_SHARED else (ag[t, AG_THREAD] if space == O.SPACE_LOCAL else 0)
        )
        found |= access(
            sh,
            Access(
                region_of(space, peer, t, sv),
                space,
                downer,
                cp.addr,
                cp.addr + size,
                cp.ca,
                cp.epoch,
                t,
                info | I_WRITE | cp.dst_bits,
                cp.row,
                cp.ts,
                cp.site,
                size,
            ),
        )
    return found


# ---------------------------------------------------------------------------
@jit_inline_ir
def on_access(t, c, i, ev, a, epoch, own):
    """A read, write or atomic: the reference's ``on_access``. ``own``: the
    bytes of it this state owns (``shards.access_owned``; 1, all of them,
    but in a shard)."""
    sv, ag = t.sv, t.ag
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
            t.snaps,
            t.arena_a,
            t.arena_e,
            sv,
            t.atom_map,
            t.rels,
            t.scratch,
            t.touched,
            t.cvs,
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
        sh = shadow_of(t)
        x = Access(region, space, owner, addr, addr + size, a, epoch, a, info, row, ts, site, size)
        if own == 2 or (
            own == 1 and (covers_page(sv, addr, size) or sv[SV_PAGE_LAUNCH] == sv[SV_LAUNCH])
        ):
            found = access(sh, x)
        elif own == 1:
            found, ulo, uhi = granule_range(sh, x, addr, addr + size, np.int64(-1))
            found |= offer_uninit(t.cand, space, owner, ulo, uhi)
    if found:
        flush_candidates(
            t.cand,
            t.find,
            sv,
            t.gens,
            ag,
            a,
            row,
            launch,
            block,
            thread,
            op,
            ts,
            site,
        )
    if op == O.ATOMIC:
        # The release side (the reference's ``atomic_release``): a
        # release atomic releases the clock at its scope; a relaxed
        # one, the clock at each level's latest release fence, at the
        # narrower of the two scopes.
        if sem == O.SEM_RELEASE or sem == O.SEM_ACQ_REL:
            release_atomic(
                ag,
                t.snaps,
                t.arena_a,
                t.arena_e,
                sv,
                t.atom_map,
                t.rels,
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
                        t.snaps,
                        t.arena_a,
                        t.arena_e,
                        sv,
                        t.atom_map,
                        t.rels,
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
            add_init(gran, slot, ((1 << hi) - 1) ^ ((1 << lo) - 1))
