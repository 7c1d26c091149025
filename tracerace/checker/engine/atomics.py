"""Atomics: the releases an atomic reads (acquire side) and leaves (release side)."""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from .. import reasons as R
from ..jit import jit_leaf
from .agents import join_into, reach, set_base
from .clocks import CV_AGENT, CV_BASE, CV_EPOCH, decref, incref, merge, merge_many
from .hashmap import hm_get, hm_put
from .layout import (
    AG_BASE,
    AG_FREL_BASE,
    AG_FREL_EPOCH,
    AG_PACQ,
    AG_WEAK_AGENT,
    AG_WEAK_AUX,
    AG_WEAK_EPOCH,
    AG_WEAK_OBJ,
    RL_AGENT,
    RL_BASE,
    RL_EPOCH,
    RL_NEXT,
    RL_SCOPE,
    SV_AR_FREE,
    SV_AR_TOP,
    SV_AR_USED,
    SV_ATOM_N,
)
from .pools import pool_alloc


# ---------------------------------------------------------------------------
@jit_leaf
def acquire_atomic(
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
):
    """The acquire side of an atomic by ``a`` (the reference's
    ``atomic_acquire``): every release on the address whose scope and this
    atomic's both reach the pair is joined, into the clock (acquire) or the
    pending acquire of its reach (relaxed, for a later fence). The newest
    release it reads without joining is remembered in AG_WEAK_*."""
    h = hm_get(atom_map, region, addr, 0)
    if h < 0:
        return
    acq = sem == O.SEM_ACQUIRE or sem == O.SEM_ACQ_REL
    cvs[0, CV_BASE] = ag[a, AG_BASE]
    cvs[0, CV_AGENT] = -1
    cvs[0, CV_EPOCH] = 0
    m = 1
    weak = False
    r = h
    while r >= 0:
        u = rels[r, RL_AGENT]
        if u != a:
            need = reach(ag, u, a)
            how = R.WEAK_SCOPE
            if rels[r, RL_SCOPE] >= need and scope >= need:
                how = R.WEAK_RELAXED
                if acq:
                    cvs[m, CV_BASE] = rels[r, RL_BASE]
                    cvs[m, CV_AGENT] = u
                    cvs[m, CV_EPOCH] = rels[r, RL_EPOCH]
                    m += 1
                else:
                    lvl = AG_PACQ + need - 1
                    snap = merge(
                        snaps,
                        arena_a,
                        arena_e,
                        sv,
                        ag[a, lvl],
                        rels[r, RL_BASE],
                        u,
                        rels[r, RL_EPOCH],
                    )
                    incref(snaps, snap)
                    decref(snaps, sv, ag[a, lvl])
                    ag[a, lvl] = snap
            # The newest release read in vain (ties: the record made last,
            # met first here; the reference meets it last).
            if (not acq or how == R.WEAK_SCOPE) and (
                not weak or rels[r, RL_EPOCH] > ag[a, AG_WEAK_EPOCH]
            ):
                weak = True
                ag[a, AG_WEAK_AGENT] = u
                ag[a, AG_WEAK_EPOCH] = rels[r, RL_EPOCH]
                ag[a, AG_WEAK_AUX] = rels[r, RL_SCOPE] | (scope << 4) | (need << 8) | (how << 12)
                ag[a, AG_WEAK_OBJ] = addr
        r = rels[r, RL_NEXT]
    if m > 1:
        snap = merge_many(snaps, arena_a, arena_e, sv, cvs, m, scratch, touched)
        set_base(ag, snaps, sv, a, snap)


@jit_leaf
def release_atomic(
    ag, snaps, arena_a, arena_e, sv, atom_map, rels, a, region, addr, scope, base, epoch
):
    """Record a release of clock (``base``, ``a`` at ``epoch``) at ``scope`` on
    the address: merged into ``a``'s record of that scope, else a new record
    at the head of the address's list (the reference's creation order)."""
    h = hm_get(atom_map, region, addr, 0)
    r = h
    while r >= 0:
        if rels[r, RL_AGENT] == a and rels[r, RL_SCOPE] == scope:
            break
        r = rels[r, RL_NEXT]
    if r >= 0:
        snap = merge(snaps, arena_a, arena_e, sv, rels[r, RL_BASE], base, -1, 0)
        incref(snaps, snap)
        decref(snaps, sv, rels[r, RL_BASE])
        rels[r, RL_BASE] = snap
        rels[r, RL_EPOCH] = max(rels[r, RL_EPOCH], epoch)
    else:
        r = pool_alloc(rels, sv, SV_AR_TOP, SV_AR_FREE, SV_AR_USED)
        rels[r, RL_NEXT] = h
        rels[r, RL_SCOPE] = scope
        rels[r, RL_AGENT] = a
        incref(snaps, base)
        rels[r, RL_BASE] = base
        rels[r, RL_EPOCH] = epoch
        sv[SV_ATOM_N] += hm_put(atom_map, region, addr, 0, r)


# ---------------------------------------------------------------------------
@jit_leaf
def on_fence(t, c, i, ev, a, epoch):
    """A fence: the reference's ``on_fence``."""
    sv, ag, snaps, arena_a, arena_e = t.sv, t.ag, t.snaps, t.arena_a, t.arena_e
    # The reference's ``on_fence``: levels WARP up to the fence's scope.
    sem = np.int64(c.sem[i])
    top = min(np.int64(c.scope[i]), O.SCOPE_DEVICE)
    if sem == O.SEM_ACQUIRE or sem == O.SEM_ACQ_REL:
        for lvl in range(top):
            if ag[a, AG_PACQ + lvl] != 0:
                join_into(ag, snaps, arena_a, arena_e, sv, a, ag[a, AG_PACQ + lvl], -1, 0)
                decref(snaps, sv, ag[a, AG_PACQ + lvl])
                ag[a, AG_PACQ + lvl] = 0
    if sem == O.SEM_RELEASE or sem == O.SEM_ACQ_REL:
        for lvl in range(top):
            incref(snaps, ag[a, AG_BASE])
            if ag[a, AG_FREL_BASE + lvl] >= 0:
                decref(snaps, sv, ag[a, AG_FREL_BASE + lvl])
            ag[a, AG_FREL_BASE + lvl] = ag[a, AG_BASE]
            ag[a, AG_FREL_EPOCH + lvl] = epoch
