"""Cluster barriers: barrier.cluster.arrive (release or relaxed) and
barrier.cluster.wait (the twin of ``reference/clusters.py``).

A cluster barrier's generations live in ``gens`` like a block barrier's, keyed
by (CLUSTER_KEY, cluster, 0) in ``bar_map``. Every arrival is an entry of the
generation's list flagged ``ARF_CLUSTER`` (a relaxed one also ``ARF_NOJOIN``:
it gives no clock). At the last arrival each arriver takes the generation's
clock: at once if its ``cluster_wait`` holds it (``AG_BLOCKED``), else the
snapshot waits in ``AG_CL_DONE`` for its wait.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from .. import reasons as R
from ..jit import jit_leaf
from .agents import join_into
from .barriers import add_arrival, free_arrivals, join_arrivals
from .clocks import decref, incref
from .hashmap import hm_get, hm_put
from .layout import (
    AG_BASE,
    AG_BLOCKED,
    AG_BLOCKNUM,
    AG_CL_DONE,
    AG_CL_PEND,
    AG_CLUSTER,
    AR_AGENT,
    AR_NEXT,
    ARF_CLUSTER,
    ARF_NOJOIN,
    CLUSTER_BARRIER,
    E_CLUSTER_AGAIN,
    E_CLUSTER_COUNT,
    E_CLUSTER_WAIT,
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
    GN_NUMBER,
    GN_OPEN,
    OK,
    SV_ERR_A,
    SV_ERR_B,
    SV_ERR_C,
    SV_GEN_N,
)
from .races import emit, set_bar, set_prev

CLUSTER_KEY = 2  # bar_map's first key word: 0 block barriers, 1 warp_sync, 2 clusters, 3 names


@jit_leaf
def on_cluster_arrive(t, c, i, ev, a, epoch):
    """cluster_arrive / cluster_arrive_relaxed: the reference's ``on_cluster_arrive``."""
    (sv, ag, snaps, gens, arr, find) = (t.sv, t.ag, t.snaps, t.gens, t.arr, t.find)
    cluster = ag[a, AG_CLUSTER]
    if ag[a, AG_CL_PEND] != 0 or ag[a, AG_CL_DONE] >= 0:
        sv[SV_ERR_A] = ev.block
        sv[SV_ERR_B] = ev.thread
        sv[SV_ERR_C] = cluster
        return E_CLUSTER_AGAIN
    count = np.int64(c.arg[i])
    if count <= 0:
        sv[SV_ERR_A] = cluster
        sv[SV_ERR_B] = count
        return E_CLUSTER_COUNT
    gslot = hm_get(t.bar_map, np.int64(CLUSTER_KEY), cluster, np.int64(0))
    if gslot < 0:
        gslot = sv[SV_GEN_N]
        sv[SV_GEN_N] += 1
        hm_put(t.bar_map, np.int64(CLUSTER_KEY), cluster, np.int64(0), gslot)
        gens[gslot, GN_OPEN] = 0
        gens[gslot, GN_NUMBER] = 0
    if gens[gslot, GN_OPEN] == 0:
        gens[gslot, GN_OPEN] = 1
        gens[gslot, GN_ARG] = count
        gens[gslot, GN_MASK] = 0
        gens[gslot, GN_COUNT] = 0
        gens[gslot, GN_ARRIVALS] = -1
        gens[gslot, GN_BAROBJ] = CLUSTER_BARRIER
        gens[gslot, GN_KEYOBJ] = cluster
        gens[gslot, GN_F_ROW] = ev.row
        gens[gslot, GN_F_LAUNCH] = ev.launch
        gens[gslot, GN_F_BLOCK] = ev.block
        gens[gslot, GN_F_THREAD] = ev.thread
        gens[gslot, GN_F_OP] = ev.op
        gens[gslot, GN_F_TS] = ev.ts
        gens[gslot, GN_F_SITE] = ev.site
    elif count != gens[gslot, GN_ARG]:
        k = emit(
            find,
            sv,
            O.K_BARRIER_MISMATCH,
            ev.row,
            ev.launch,
            ev.block,
            ev.thread,
            ev.op,
            ev.ts,
            ev.site,
        )
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
        find[k, F_OBJ] = cluster
        find[k, F_CODE] = R.BAR_ARG_DISAGREES
        find[k, F_AUX] = gens[gslot, GN_ARG]
        set_bar(find, k, ag, a)
    gens[gslot, GN_COUNT] += 1
    gens[gslot, GN_L_ROW] = ev.row
    gens[gslot, GN_L_LAUNCH] = ev.launch
    gens[gslot, GN_L_BLOCK] = ev.block
    gens[gslot, GN_L_THREAD] = ev.thread
    gens[gslot, GN_L_OP] = ev.op
    gens[gslot, GN_L_TS] = ev.ts
    gens[gslot, GN_L_SITE] = ev.site
    gens[gslot, GN_L_OBJ] = cluster
    if ev.op == O.CLUSTER_ARRIVE:  # a release: what came before goes to the waiters
        gens[gslot, GN_ARRIVALS] = add_arrival(
            arr, sv, snaps, gens[gslot, GN_ARRIVALS], ag[a, AG_BASE], a, epoch, ARF_CLUSTER
        )
    else:
        gens[gslot, GN_ARRIVALS] = add_arrival(
            arr, sv, snaps, gens[gslot, GN_ARRIVALS], 0, a, epoch, ARF_CLUSTER | ARF_NOJOIN
        )
    ag[a, AG_CL_PEND] = gslot + 1
    if gens[gslot, GN_COUNT] < gens[gslot, GN_ARG]:
        return OK
    head = gens[gslot, GN_ARRIVALS]
    snap = join_arrivals(arr, sv, snaps, t.arena_a, t.arena_e, head, t.scratch, t.touched, t.cvs)
    k = head
    while k >= 0:
        w = arr[k, AR_AGENT]
        if ag[w, AG_BLOCKED] == gslot:
            join_into(ag, snaps, t.arena_a, t.arena_e, sv, w, snap, -1, 0)
            ag[w, AG_BLOCKED] = -1
        else:
            incref(snaps, snap)
            ag[w, AG_CL_DONE] = snap
        ag[w, AG_CL_PEND] = 0
        k = arr[k, AR_NEXT]
    free_arrivals(arr, sv, snaps, head)
    gens[gslot, GN_ARRIVALS] = -1
    gens[gslot, GN_NUMBER] += 1
    gens[gslot, GN_OPEN] = 0
    return OK


@jit_leaf
def on_cluster_wait(t, c, i, ev, a, epoch):
    """cluster_wait: the reference's ``on_cluster_wait``."""
    ag, snaps, sv = t.ag, t.snaps, t.sv
    done = ag[a, AG_CL_DONE]
    if done >= 0:
        join_into(ag, snaps, t.arena_a, t.arena_e, sv, a, done, -1, 0)
        decref(snaps, sv, done)
        ag[a, AG_CL_DONE] = -1
    elif ag[a, AG_CL_PEND] != 0:
        g = ag[a, AG_CL_PEND] - 1
        ag[a, AG_BLOCKED] = g
        ag[a, AG_BLOCKNUM] = t.gens[g, GN_NUMBER]
    else:
        sv[SV_ERR_A] = ev.block
        sv[SV_ERR_B] = ev.thread
        sv[SV_ERR_C] = ag[a, AG_CLUSTER]
        return E_CLUSTER_WAIT
    return OK
