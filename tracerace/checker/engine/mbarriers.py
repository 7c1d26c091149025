"""mbarriers: phases, arrivals and transaction counts, and what a completed phase gives
its waiters.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from .. import reasons as R
from ..jit import jit_inline, jit_leaf
from .agents import async_agent, join_into
from .async_copies import phase_entry
from .barriers import add_arrival, free_arrivals, join_arrivals
from .clocks import decref, incref
from .granules import Access, region_of, shadow_of
from .hashmap import hm_get, hm_put
from .layout import (
    AG_BASE,
    AG_CP_AGENT,
    AG_CP_OPEN,
    AG_EPOCH,
    AG_FENCES,
    AG_MBAR,
    AG_RETIRED,
    AR_AGENT,
    AR_BASE,
    AR_EPOCH,
    AR_FLAG,
    AR_NEXT,
    ARF_CP,
    ARF_CP_LOG_SHIFT,
    ARF_TMA,
    COUNT_MAX,
    COUNT_MIN,
    CP_ARRIVES_MASK,
    E_CP_ARRIVE_OVERFLOW,
    E_MBAR_COUNT,
    E_TX_OVERFLOW,
    FN_AUX,
    FN_EPOCH,
    FN_NEXT,
    FN_VAL,
    I_ASYNC,
    I_ATOMIC,
    I_COPY_SHIFT,
    I_PROXY,
    I_SCOPE_SHIFT,
    I_WRITE,
    KIND_TMA,
    MB_ARRIVALS,
    MB_DONE0,
    MB_DONE1,
    MB_EXPECTED,
    MB_FIELDS,
    MB_I_BLOCK,
    MB_I_LAUNCH,
    MB_I_OP,
    MB_I_ROW,
    MB_I_SITE,
    MB_I_THREAD,
    MB_I_TS,
    MB_INITS,
    MB_PENDING,
    MB_PHASE,
    MB_TMA0,
    MB_TMA1,
    MB_TX,
    MB_VALID,
    OK,
    SV_ARR_FREE,
    SV_ARR_USED,
    SV_CP_ARRIVES_MAX,
    SV_ERR_A,
    SV_ERR_B,
    SV_ERR_C,
    SV_FEN_TOP,
    SV_MB_N,
    SV_VIEW,
)
from .memory import CopyOp, access, copy
from .pools import pool_free
from .races import flush_candidates, misuse, set_prev


@jit_leaf
def complete_phase(
    mbs,
    m,
    arr,
    ag,
    sv,
    snaps,
    arena_a,
    arena_e,
    scratch,
    touched,
    cvs,
    find,
    a,
    row,
    launch,
    block,
    thread,
    op,
    ts,
    site,
    peer,
    obj,
):
    if mbs[m, MB_PENDING] > 0 or mbs[m, MB_TX] > 0:
        return
    if mbs[m, MB_TX] < 0:
        misuse(
            find,
            sv,
            ag,
            a,
            R.MBAR_TX_UNDERFLOW,
            row,
            launch,
            block,
            thread,
            op,
            ts,
            site,
            peer,
            obj,
        )
    head = mbs[m, MB_ARRIVALS]
    snap = join_arrivals(arr, sv, snaps, arena_a, arena_e, head, scratch, touched, cvs)
    col = MB_DONE0 + (mbs[m, MB_PHASE] & 1)
    incref(snaps, snap)
    if mbs[m, col] >= 0:
        decref(snaps, sv, mbs[m, col])
    mbs[m, col] = snap
    # The phase's tma_loads (and cp.async copies it tracked) wait, per parity,
    # for a wait to retire them; those of an older phase of that parity nobody
    # waited on stay in flight.
    tcol = MB_TMA0 + (mbs[m, MB_PHASE] & 1)
    free_arrivals(arr, sv, snaps, mbs[m, tcol])
    mbs[m, tcol] = -1
    k = head
    while k >= 0:
        nxt = arr[k, AR_NEXT]
        if arr[k, AR_FLAG] == ARF_TMA or arr[k, AR_FLAG] & ARF_CP:
            arr[k, AR_NEXT] = mbs[m, tcol]
            mbs[m, tcol] = k
        else:
            decref(snaps, sv, arr[k, AR_BASE])
            pool_free(arr, sv, SV_ARR_FREE, SV_ARR_USED, k)
        k = nxt
    mbs[m, MB_ARRIVALS] = -1
    mbs[m, MB_PHASE] += 1
    mbs[m, MB_PENDING] = mbs[m, MB_EXPECTED]
    mbs[m, MB_TX] = 0


# ---------------------------------------------------------------------------
# The handlers. An mbarrier is known by its (owner block, address); a slot of
# ``mbs`` is made for it at its first op.
@jit_inline
def mbarrier_slot(t, peer, obj):
    mbs, sv = t.mbs, t.sv
    mslot = hm_get(t.mb_map, peer, obj, 0)
    if mslot < 0:
        mslot = sv[SV_MB_N]
        sv[SV_MB_N] += 1
        hm_put(t.mb_map, peer, obj, 0, mslot)
        for f in range(MB_FIELDS):
            mbs[mslot, f] = 0
        mbs[mslot, MB_ARRIVALS] = -1
        mbs[mslot, MB_DONE0] = -1
        mbs[mslot, MB_DONE1] = -1
        mbs[mslot, MB_TMA0] = -1
        mbs[mslot, MB_TMA1] = -1
    return mslot


@jit_inline
def row_misuse(t, c, i, ev, a, code):
    """An ``mbarrier_misuse`` (``code``) at the event at hand, about the
    mbarrier its row names (``peer``, ``obj``)."""
    return misuse(
        t.find,
        t.sv,
        t.ag,
        a,
        code,
        ev.row,
        ev.launch,
        ev.block,
        ev.thread,
        ev.op,
        ev.ts,
        ev.site,
        np.int64(c.peer[i]),
        np.int64(c.obj[i]),
    )


@jit_inline
def not_initialized(t, c, i, ev, a, mslot):
    """A misuse (``MBAR_BEFORE_INIT``) when the mbarrier is not initialized."""
    if t.mbs[mslot, MB_VALID] == 1:
        return False
    row_misuse(t, c, i, ev, a, R.MBAR_BEFORE_INIT)
    return True


@jit_inline
def arrived(t, c, i, ev, a, mslot):
    """After an arrival or a transaction count: complete the phase if it is due."""
    complete_phase(
        t.mbs,
        mslot,
        t.arr,
        t.ag,
        t.sv,
        t.snaps,
        t.arena_a,
        t.arena_e,
        t.scratch,
        t.touched,
        t.cvs,
        t.find,
        a,
        ev.row,
        ev.launch,
        ev.block,
        ev.thread,
        ev.op,
        ev.ts,
        ev.site,
        np.int64(c.peer[i]),
        np.int64(c.obj[i]),
    )


@jit_inline
def tma_agent(t, a, mslot, obj):
    """Thread ``a``'s TMA agent of mbarrier slot ``mslot`` and the number of
    its next copy or store, logged with the phase it completes when the phase
    changes: (agent, number)."""
    sv, ag, mbs, fen = t.sv, t.ag, t.mbs, t.fen
    ta = async_agent(ag, sv, t.async_map, a, KIND_TMA, mslot)
    ag[ta, AG_MBAR] = obj
    ag[ta, AG_EPOCH] += 1
    cnt = ag[ta, AG_EPOCH]
    key = (mbs[mslot, MB_INITS] << 32) | mbs[mslot, MB_PHASE]
    f = ag[ta, AG_FENCES]
    if f < 0 or fen[f, FN_VAL] != key:
        f = sv[SV_FEN_TOP]
        sv[SV_FEN_TOP] += 1
        fen[f, FN_NEXT] = ag[ta, AG_FENCES]
        fen[f, FN_EPOCH] = cnt
        fen[f, FN_VAL] = key
        fen[f, FN_AUX] = 0
        ag[ta, AG_FENCES] = f
    return ta, cnt


@jit_inline
def complete_bytes(t, c, i, ev, a, epoch, mslot, obj, ta, cnt):
    """The row's ``size`` bytes, copied or stored by ``ta`` (its ``cnt``-th),
    complete on the phase, which takes the issuer's clock and the copy. A
    transaction count past the int64 range is ``E_TX_OVERFLOW``."""
    sv, ag, mbs, arr, snaps = t.sv, t.ag, t.mbs, t.arr, t.snaps
    if not not_initialized(t, c, i, ev, a, mslot):
        if tx_overflows(t, mslot, obj, -ev.size):
            return E_TX_OVERFLOW
        mbs[mslot, MB_TX] -= ev.size
        h = add_arrival(arr, sv, snaps, mbs[mslot, MB_ARRIVALS], ag[a, AG_BASE], a, epoch, 0)
        mbs[mslot, MB_ARRIVALS] = add_arrival(arr, sv, snaps, h, 0, ta, cnt, ARF_TMA)
        arrived(t, c, i, ev, a, mslot)
    return OK


@jit_inline
def flush_row(t, ev, a):
    """Report the candidates the row's accesses left."""
    flush_candidates(
        t.cand,
        t.find,
        t.sv,
        t.gens,
        t.ag,
        a,
        ev.row,
        ev.launch,
        ev.block,
        ev.thread,
        ev.op,
        ev.ts,
        ev.site,
    )


@jit_leaf
def on_tma_load(t, c, i, ev, a, epoch):
    """A TMA load (bulk_copy_peer: from shared memory; bulk_reduce_peer: its
    destination write a relaxed cluster-scope atomic): a copy by the
    mbarrier's TMA agent, whose bytes count against the phase's transaction
    count; it completes the phase (with the arrivals) and is retired by the
    first wait on it."""
    peer = np.int64(c.peer[i])
    obj = np.int64(c.obj[i])
    mslot = mbarrier_slot(t, peer, obj)
    ta, cnt = tma_agent(t, a, mslot, obj)
    dst_bits = np.int64(0)
    if ev.op == O.BULK_REDUCE_PEER:
        dst_bits = np.int64(I_ATOMIC | (O.SCOPE_CLUSTER << I_SCOPE_SHIFT))
    if copy(
        shadow_of(t),
        CopyOp(
            a,
            ta,
            cnt,
            np.int64(I_PROXY),
            dst_bits,
            np.int64(R.INFLIGHT_TMA_LOAD),
            ev.row,
            ev.ts,
            ev.site,
            ev.op,
            np.int64(c.space[i]),
            np.int64(c.addr[i]),
            ev.size,
            np.int64(c.space2[i]),
            np.int64(c.addr2[i]),
            ev.block,
            peer,
        ),
    ):
        flush_row(t, ev, a)
    return complete_bytes(t, c, i, ev, a, epoch, mslot, obj, ta, cnt)


@jit_leaf
def on_st_async(t, c, i, ev, a, epoch):
    """st.async (red.async: the write is a relaxed cluster-scope atomic): a
    generic-proxy write of ``peer``'s shared bytes by the thread's TMA agent
    of the mbarrier; its bytes complete on the phase (no
    arrival) and the first wait on the phase retires it, as a TMA load's."""
    sv = t.sv
    peer = np.int64(c.peer[i])
    obj = np.int64(c.obj[i])
    space = np.int64(c.space[i])
    mslot = mbarrier_slot(t, peer, obj)
    ta, cnt = tma_agent(t, a, mslot, obj)
    if sv[SV_VIEW] & (1 << space):
        info = ev.op | I_ASYNC | I_WRITE | (R.INFLIGHT_TMA_LOAD << I_COPY_SHIFT)
        if ev.op == O.RED_ASYNC:
            info |= I_ATOMIC | (O.SCOPE_CLUSTER << I_SCOPE_SHIFT)
        addr = np.int64(c.addr[i])
        if access(
            shadow_of(t),
            Access(
                region_of(space, peer, a, sv),
                space,
                peer,
                addr,
                addr + ev.size,
                np.int64(ta),
                np.int64(cnt),
                np.int64(a),
                np.int64(info),
                ev.row,
                ev.ts,
                ev.site,
                ev.size,
            ),
        ):
            flush_row(t, ev, a)
    return complete_bytes(t, c, i, ev, a, epoch, mslot, obj, ta, cnt)


@jit_leaf
def on_mbar_init(t, c, i, ev, a, epoch):
    """mbarrier.init: a new phase 0 expecting ``arg`` arrivals; re-initializing
    a valid mbarrier is a misuse."""
    sv, mbs, arr, snaps = t.sv, t.mbs, t.arr, t.snaps
    peer = np.int64(c.peer[i])
    obj = np.int64(c.obj[i])
    arg = np.int64(c.arg[i])
    mslot = mbarrier_slot(t, peer, obj)
    if arg <= 0:
        sv[SV_ERR_A] = obj
        sv[SV_ERR_B] = arg
        return E_MBAR_COUNT
    if mbs[mslot, MB_VALID] == 1:
        k = misuse(
            t.find,
            sv,
            t.ag,
            a,
            R.MBAR_REINIT,
            ev.row,
            ev.launch,
            ev.block,
            ev.thread,
            ev.op,
            ev.ts,
            ev.site,
            peer,
            obj,
        )
        set_prev(
            t.find,
            k,
            mbs[mslot, MB_I_ROW],
            mbs[mslot, MB_I_LAUNCH],
            mbs[mslot, MB_I_BLOCK],
            mbs[mslot, MB_I_THREAD],
            mbs[mslot, MB_I_OP],
            mbs[mslot, MB_I_TS],
            mbs[mslot, MB_I_SITE],
        )
    free_arrivals(arr, sv, snaps, mbs[mslot, MB_ARRIVALS])
    for col in (MB_DONE0, MB_DONE1):
        if mbs[mslot, col] >= 0:
            decref(snaps, sv, mbs[mslot, col])
        mbs[mslot, col] = -1
    for col in (MB_TMA0, MB_TMA1):
        free_arrivals(arr, sv, snaps, mbs[mslot, col])
        mbs[mslot, col] = -1
    mbs[mslot, MB_ARRIVALS] = -1
    mbs[mslot, MB_INITS] += 1
    mbs[mslot, MB_VALID] = 1
    mbs[mslot, MB_EXPECTED] = arg
    mbs[mslot, MB_PENDING] = arg
    mbs[mslot, MB_TX] = 0
    mbs[mslot, MB_PHASE] = 0
    mbs[mslot, MB_I_ROW] = ev.row
    mbs[mslot, MB_I_LAUNCH] = ev.launch
    mbs[mslot, MB_I_BLOCK] = ev.block
    mbs[mslot, MB_I_THREAD] = ev.thread
    mbs[mslot, MB_I_OP] = ev.op
    mbs[mslot, MB_I_TS] = ev.ts
    mbs[mslot, MB_I_SITE] = ev.site
    return OK


@jit_leaf
def on_mbar_arrive(t, c, i, ev, a, epoch):
    """An arrival of ``arg`` counts (1 if 0); more than are pending is a misuse."""
    mslot = mbarrier_slot(t, np.int64(c.peer[i]), np.int64(c.obj[i]))
    if not_initialized(t, c, i, ev, a, mslot):
        return
    arg = np.int64(c.arg[i])
    arrive(t, c, i, ev, a, epoch, mslot, arg if arg > 0 else 1)


@jit_leaf
def on_mbar_arrive_drop(t, c, i, ev, a, epoch):
    """mbarrier.arrive_drop: later phases expect ``arg`` (1 if 0) fewer arrivals,
    then an arrival of that count; dropping below zero is a misuse (the
    expected count stays at zero, the arrival takes what is pending)."""
    mbs = t.mbs
    mslot = mbarrier_slot(t, np.int64(c.peer[i]), np.int64(c.obj[i]))
    if not_initialized(t, c, i, ev, a, mslot):
        return
    arg = np.int64(c.arg[i])
    count = arg if arg > 0 else 1
    if count > mbs[mslot, MB_EXPECTED]:
        # One misuse per row: pending never exceeds expected.
        row_misuse(t, c, i, ev, a, R.MBAR_DROP_UNDERFLOW)
        mbs[mslot, MB_EXPECTED] = 0
        count = mbs[mslot, MB_PENDING]
    else:
        mbs[mslot, MB_EXPECTED] -= count
    arrive(t, c, i, ev, a, epoch, mslot, count)


@jit_inline
def arrive(t, c, i, ev, a, epoch, mslot, count):
    """``count`` arrivals with release semantics; more than are pending is a misuse."""
    mbs = t.mbs
    if count > mbs[mslot, MB_PENDING]:
        row_misuse(t, c, i, ev, a, R.MBAR_ARRIVAL_UNDERFLOW)
        count = mbs[mslot, MB_PENDING]
    mbs[mslot, MB_PENDING] -= count
    mbs[mslot, MB_ARRIVALS] = add_arrival(
        t.arr, t.sv, t.snaps, mbs[mslot, MB_ARRIVALS], t.ag[a, AG_BASE], a, epoch, 0
    )
    arrived(t, c, i, ev, a, mslot)


@jit_leaf
def on_mbar_expect_tx(t, c, i, ev, a, epoch):
    """expect_tx: the phase also waits for ``arg`` more bytes of TMA loads; a
    count past the int64 range is ``E_TX_OVERFLOW``."""
    obj = np.int64(c.obj[i])
    arg = np.int64(c.arg[i])
    mslot = mbarrier_slot(t, np.int64(c.peer[i]), obj)
    if not_initialized(t, c, i, ev, a, mslot):
        return OK
    if tx_overflows(t, mslot, obj, arg):
        return E_TX_OVERFLOW
    t.mbs[mslot, MB_TX] += arg
    arrived(t, c, i, ev, a, mslot)
    return OK


@jit_inline
def tx_overflows(t, mslot, obj, change):
    """Whether the transaction count plus ``change`` leaves the int64 range
    (the reference's ``check_tx``); if so the error's values are set."""
    tx = t.mbs[mslot, MB_TX]
    if (tx > COUNT_MAX - change) if change > 0 else (tx < COUNT_MIN - change):
        t.sv[SV_ERR_A] = obj
        t.sv[SV_ERR_B] = tx
        t.sv[SV_ERR_C] = change
        return True
    return False


@jit_leaf
def on_mbar_wait(t, c, i, ev, a, epoch):
    """A wait that returned on the phase of parity ``arg``: the waiter joins the
    phase's clock; waiting on a phase that never completed is a misuse."""
    mbs, fen, arr = t.mbs, t.fen, t.arr
    mslot = mbarrier_slot(t, np.int64(c.peer[i]), np.int64(c.obj[i]))
    if not_initialized(t, c, i, ev, a, mslot):
        return
    arg = np.int64(c.arg[i])
    done = mbs[mslot, MB_DONE0 + (arg & 1)]
    if done < 0:
        row_misuse(t, c, i, ev, a, R.MBAR_PHASE_NEVER_COMPLETED)
        return
    join_into(t.ag, t.snaps, t.arena_a, t.arena_e, t.sv, a, done, -1, 0)
    # The first wait on the phase retires its tma_loads and st_async stores,
    # whose phase entries then name the wait's entry, and the cp.async copies
    # it tracked that no wait retired before (logged in the row the arrival
    # kept, naming the wait's entry).
    ag = t.ag
    tcol = MB_TMA0 + (arg & 1)
    k = mbs[mslot, tcol]
    w = np.int64(-1)
    if k >= 0:
        w = t.sv[SV_FEN_TOP]
        t.sv[SV_FEN_TOP] += 1
        fen[w, FN_NEXT] = -1
        fen[w, FN_EPOCH] = epoch
        fen[w, FN_VAL] = a
        fen[w, FN_AUX] = ev.site
    while k >= 0:
        u = arr[k, AR_AGENT]
        if arr[k, AR_FLAG] & ARF_CP:
            stamp = arr[k, AR_EPOCH]
            if ag[u, AG_RETIRED] < stamp:
                f = arr[k, AR_FLAG] >> ARF_CP_LOG_SHIFT
                fen[f, FN_NEXT] = ag[u, AG_FENCES]
                fen[f, FN_EPOCH] = epoch
                fen[f, FN_VAL] = stamp
                fen[f, FN_AUX] = -(w + 1)
                ag[u, AG_FENCES] = f
                ag[u, AG_RETIRED] = stamp
        else:
            f = phase_entry(ag, fen, u, arr[k, AR_EPOCH])
            fen[f, FN_AUX] = w + 1
        k = arr[k, AR_NEXT]
    free_arrivals(arr, t.sv, t.snaps, mbs[mslot, tcol])
    mbs[mslot, tcol] = -1


@jit_leaf
def on_cp_async_mbar_arrive(t, c, i, ev, a, epoch):
    """cp.async.mbarrier.arrive(.noinc): the thread's cp.async copies so far
    arrive on the open phase with the thread's clock at its latest copy (its
    cp.async agent keeps it), and are retired by the first wait on the phase
    (a ``fen`` row is kept for that wait's log entry now, so the wait needs
    no room of its own). Later copies get the next stamp. Without ``.noinc``
    the arrival adds the pending arrival it takes, with it it is one of the
    expected ones (one more than is pending is a misuse)."""
    sv, ag, mbs = t.sv, t.ag, t.mbs
    mslot = mbarrier_slot(t, np.int64(c.peer[i]), np.int64(c.obj[i]))
    if not_initialized(t, c, i, ev, a, mslot):
        return OK
    ca = ag[a, AG_CP_AGENT]
    if ca >= 0 and ag[ca, AG_EPOCH] > 0:
        stamp = ag[a, AG_CP_OPEN]
        if stamp & CP_ARRIVES_MASK >= sv[SV_CP_ARRIVES_MAX]:
            sv[SV_ERR_A] = ev.block
            sv[SV_ERR_B] = ev.thread
            sv[SV_ERR_C] = sv[SV_CP_ARRIVES_MAX]
            return E_CP_ARRIVE_OVERFLOW
        f = sv[SV_FEN_TOP]
        sv[SV_FEN_TOP] += 1
        h = add_arrival(
            t.arr,
            sv,
            t.snaps,
            mbs[mslot, MB_ARRIVALS],
            ag[ca, AG_BASE],
            a,
            ag[ca, AG_EPOCH],
            0,
        )
        mbs[mslot, MB_ARRIVALS] = add_arrival(
            t.arr, sv, t.snaps, h, 0, ca, stamp, ARF_CP | (f << ARF_CP_LOG_SHIFT)
        )
        ag[a, AG_CP_OPEN] = stamp + 1
    if ev.op == O.CP_ASYNC_MBAR_ARRIVE_NOINC:
        if mbs[mslot, MB_PENDING] < 1:
            row_misuse(t, c, i, ev, a, R.MBAR_ARRIVAL_UNDERFLOW)
        else:
            mbs[mslot, MB_PENDING] -= 1
    arrived(t, c, i, ev, a, mslot)
    return OK


@jit_leaf
def on_mbar_inval(t, c, i, ev, a, epoch):
    """mbarrier.inval: not valid until the next init."""
    mslot = mbarrier_slot(t, np.int64(c.peer[i]), np.int64(c.obj[i]))
    if not not_initialized(t, c, i, ev, a, mslot):
        t.mbs[mslot, MB_VALID] = 0
