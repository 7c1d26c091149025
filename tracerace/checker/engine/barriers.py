"""Block and warp barriers: generations, their arrivals, and what a completed generation
gives its waiters.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from .. import reasons as R
from ..jit import jit, jit_inline, jit_leaf
from .agents import set_base
from .clocks import CV_AGENT, CV_BASE, CV_EPOCH, decref, incref, merge_many
from .hashmap import hm_get, hm_put
from .layout import (
    AG_BARFENCE,
    AG_BAROBJ,
    AG_BARPOS,
    AG_BASE,
    AG_BLOCKED,
    AG_BLOCKNUM,
    AR_AGENT,
    AR_BASE,
    AR_EPOCH,
    AR_FLAG,
    AR_NEXT,
    ARF_FENCE_SHIFT,
    ARF_NOJOIN,
    ARF_WAITER,
    BARPOS_NAME_SHIFT,
    E_BAR_COUNT,
    E_BAR_GENS_OVERFLOW,
    E_WARP_MASK,
    F_AUX,
    F_CODE,
    F_OBJ,
    GN_ARG,
    GN_ARRIVALS,
    GN_BAROBJ,
    GN_COUNT,
    GN_F_BLOCK,
    GN_F_LAUNCH,
    GN_F_OP,
    GN_F_ROW,
    GN_F_SITE,
    GN_F_THREAD,
    GN_F_TS,
    GN_KEYOBJ,
    GN_L_BLOCK,
    GN_L_LAUNCH,
    GN_L_OBJ,
    GN_L_OP,
    GN_L_ROW,
    GN_L_SITE,
    GN_L_THREAD,
    GN_L_TS,
    GN_MASK,
    GN_NAME,
    GN_NUMBER,
    GN_OPEN,
    OK,
    SV_ARR_FREE,
    SV_ARR_TOP,
    SV_ARR_USED,
    SV_BAR_GENS_MAX,
    SV_ERR_A,
    SV_ERR_B,
    SV_ERR_C,
    SV_GEN_N,
    SV_NFIND,
    SV_VIEW,
    WARP_BARRIER,
)
from .pools import pool_alloc, pool_free
from .races import emit, set_bar, set_prev

# bar_map's first key word for a barrier's name (AG_BARPOS), by its obj
# (clusters.CLUSTER_KEY lists the others).
NAME_KEY = np.int64(3)


# ---------------------------------------------------------------------------
# Arrival lists: barrier generations and mbarrier phases.
@jit_leaf
def add_arrival(arr, sv, snaps, head, base, agent, epoch, flag):
    k = pool_alloc(arr, sv, SV_ARR_TOP, SV_ARR_FREE, SV_ARR_USED)
    incref(snaps, base)
    arr[k, AR_NEXT] = head
    arr[k, AR_BASE] = base
    arr[k, AR_AGENT] = agent
    arr[k, AR_EPOCH] = epoch
    arr[k, AR_FLAG] = flag
    return k


@jit_leaf
def join_arrivals(arr, sv, snaps, arena_a, arena_e, head, scratch, touched, cvs):
    """The join of the clock values of an arrival list (``cvs`` has a row
    for each: the arrival pool's size)."""
    k = head
    n = 0
    while k >= 0:
        cvs[n, CV_BASE] = arr[k, AR_BASE]
        cvs[n, CV_AGENT] = -1 if arr[k, AR_FLAG] & ARF_NOJOIN else arr[k, AR_AGENT]
        cvs[n, CV_EPOCH] = arr[k, AR_EPOCH]
        n += 1
        k = arr[k, AR_NEXT]
    return merge_many(snaps, arena_a, arena_e, sv, cvs, n, scratch, touched)


@jit_leaf
def free_arrivals(arr, sv, snaps, head):
    k = head
    while k >= 0:
        nxt = arr[k, AR_NEXT]
        decref(snaps, sv, arr[k, AR_BASE])
        pool_free(arr, sv, SV_ARR_FREE, SV_ARR_USED, k)
        k = nxt


@jit
def finish_launch(gens, sv, find):
    """End of a launch: every generation still open is a barrier_mismatch."""
    for g in range(sv[SV_GEN_N]):
        if gens[g, GN_OPEN] == 1:
            emit(
                find,
                sv,
                O.K_BARRIER_MISMATCH,
                gens[g, GN_L_ROW],
                gens[g, GN_L_LAUNCH],
                gens[g, GN_L_BLOCK],
                gens[g, GN_L_THREAD],
                gens[g, GN_L_OP],
                gens[g, GN_L_TS],
                gens[g, GN_L_SITE],
            )
            k = sv[SV_NFIND] - 1
            find[k, F_OBJ] = gens[g, GN_L_OBJ]
            find[k, F_CODE] = R.BAR_INCOMPLETE
            find[k, F_AUX] = gens[g, GN_COUNT]


# ---------------------------------------------------------------------------
# Inlined into the replay always, unlike the other handlers, which LLVM
# inlines at its own choice: since barrier positions are one word
# (AG_BARPOS) it chose not to, and each barrier event paid a call that
# passes the Tables (tiled: 662 -> 692 instructions an event, the kernel 10%
# slower; inlined: 674; bench/README.md, "Figures behind the code's choices").
@jit_inline
def on_barrier(t, c, i, ev, a, epoch):
    """bar_sync, bar_arrive, warp_sync: the reference's ``on_barrier``."""
    (sv, ag, snaps, arena_a, arena_e, scratch, touched, gens, bar_map, arr, find, cvs) = (
        t.sv,
        t.ag,
        t.snaps,
        t.arena_a,
        t.arena_e,
        t.scratch,
        t.touched,
        t.gens,
        t.bar_map,
        t.arr,
        t.find,
        t.cvs,
    )
    (row, launch, block, thread, op, ts, site) = (
        ev.row,
        ev.launch,
        ev.block,
        ev.thread,
        ev.op,
        ev.ts,
        ev.site,
    )
    arg = np.int64(c.arg[i])
    obj = np.int64(c.obj[i])
    if op == O.WARP_SYNC:
        mask = arg & 0xFFFFFFFF
        count = np.int64(0)
        mm = mask
        while mm:
            mm &= mm - 1
            count += 1
        bk0, bk2 = np.int64(1), thread // 32
        bar_obj = np.int64(WARP_BARRIER)
        mis_obj = arg
        if count == 0:
            return E_WARP_MASK
    else:
        count = arg
        mask = np.int64(0)
        bk0, bk2 = np.int64(0), obj
        bar_obj = obj
        mis_obj = obj
        if count <= 0:
            sv[SV_ERR_A] = obj
            sv[SV_ERR_B] = count
            return E_BAR_COUNT
    gslot = hm_get(bar_map, bk0, block, bk2)
    if gslot < 0:
        gslot = sv[SV_GEN_N]
        sv[SV_GEN_N] += 1
        hm_put(bar_map, bk0, block, bk2, gslot)
        gens[gslot, GN_OPEN] = 0
        gens[gslot, GN_NUMBER] = 0
        # The barrier's name in positions (AG_BARPOS): the launch's first
        # slot with its obj, whatever the block.
        name = hm_get(bar_map, NAME_KEY, np.int64(0), bar_obj)
        if name < 0:
            name = gslot
            hm_put(bar_map, NAME_KEY, np.int64(0), bar_obj, gslot)
        gens[gslot, GN_NAME] = name
    if gens[gslot, GN_OPEN] == 0:
        gens[gslot, GN_OPEN] = 1
        gens[gslot, GN_ARG] = count
        gens[gslot, GN_MASK] = mask
        gens[gslot, GN_COUNT] = 0
        gens[gslot, GN_ARRIVALS] = -1
        gens[gslot, GN_BAROBJ] = bar_obj
        gens[gslot, GN_KEYOBJ] = bk2
        gens[gslot, GN_F_ROW] = row
        gens[gslot, GN_F_LAUNCH] = launch
        gens[gslot, GN_F_BLOCK] = block
        gens[gslot, GN_F_THREAD] = thread
        gens[gslot, GN_F_OP] = op
        gens[gslot, GN_F_TS] = ts
        gens[gslot, GN_F_SITE] = site
    elif count != gens[gslot, GN_ARG] or mask != gens[gslot, GN_MASK]:
        k = emit(find, sv, O.K_BARRIER_MISMATCH, row, launch, block, thread, op, ts, site)
        set_prev(
            find,
            k,
            gens[gslot, GN_F_ROW],
            gens[gslot, GN_F_LAUNCH],
            gens[gslot, GN_F_BLOCK],
            gens[gslot, GN_F_THREAD],
            gens[gslot, GN_F_OP],
            gens[gslot, GN_F_TS],
            gens[gslot, GN_F_SITE],
        )
        find[k, F_OBJ] = mis_obj
        find[k, F_CODE] = R.BAR_ARG_DISAGREES
        find[k, F_AUX] = gens[gslot, GN_ARG]
        set_bar(find, k, ag, a)
    gens[gslot, GN_COUNT] += 1
    gens[gslot, GN_L_ROW] = row
    gens[gslot, GN_L_LAUNCH] = launch
    gens[gslot, GN_L_BLOCK] = block
    gens[gslot, GN_L_THREAD] = thread
    gens[gslot, GN_L_OP] = op
    gens[gslot, GN_L_TS] = ts
    gens[gslot, GN_L_SITE] = site
    gens[gslot, GN_L_OBJ] = mis_obj
    # An arrival whose barrier does not fence this view's memory
    # gives no clock, and (a bar_sync) takes none.
    fences = (np.int64(c.fence_spaces[i]) & sv[SV_VIEW] & 3) != 0
    flag = (
        (ARF_WAITER | (np.int64(c.fence_spaces[i]) << ARF_FENCE_SHIFT)) if op != O.BAR_ARRIVE else 0
    )
    if fences:
        gens[gslot, GN_ARRIVALS] = add_arrival(
            arr, sv, snaps, gens[gslot, GN_ARRIVALS], ag[a, AG_BASE], a, epoch, flag
        )
    else:
        gens[gslot, GN_ARRIVALS] = add_arrival(
            arr, sv, snaps, gens[gslot, GN_ARRIVALS], 0, a, epoch, flag | ARF_NOJOIN
        )
    if flag:
        ag[a, AG_BLOCKED] = gslot
        ag[a, AG_BLOCKNUM] = gens[gslot, GN_NUMBER]
    if gens[gslot, GN_COUNT] >= gens[gslot, GN_ARG]:
        number = gens[gslot, GN_NUMBER]
        if number >= sv[SV_BAR_GENS_MAX]:  # past what a position holds
            sv[SV_ERR_A] = block
            sv[SV_ERR_B] = mask if op == O.WARP_SYNC else obj
            sv[SV_ERR_C] = sv[SV_BAR_GENS_MAX]
            return E_BAR_GENS_OVERFLOW
        head = gens[gslot, GN_ARRIVALS]
        snap = join_arrivals(arr, sv, snaps, arena_a, arena_e, head, scratch, touched, cvs)
        k = head
        while k >= 0:
            if arr[k, AR_FLAG] & ARF_WAITER:
                w = arr[k, AR_AGENT]
                if arr[k, AR_FLAG] & ARF_NOJOIN == 0:
                    set_base(ag, snaps, sv, w, snap)
                ag[w, AG_BLOCKED] = -1
                ag[w, AG_BAROBJ] = gens[gslot, GN_BAROBJ]
                ag[w, AG_BARPOS] = (gens[gslot, GN_NAME] << BARPOS_NAME_SHIFT) | number
                ag[w, AG_BARFENCE] = (arr[k, AR_FLAG] >> ARF_FENCE_SHIFT) & 7
            k = arr[k, AR_NEXT]
        free_arrivals(arr, sv, snaps, head)
        gens[gslot, GN_ARRIVALS] = -1
        gens[gslot, GN_NUMBER] += 1
        gens[gslot, GN_OPEN] = 0
    return OK
