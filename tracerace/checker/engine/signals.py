"""Flags (signal/wait) and the sync_alias check of which signal a wait consumed."""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from .. import reasons as R
from ..jit import jit_inline, jit_leaf
from .agents import set_base
from .clocks import CV_AGENT, CV_BASE, CV_EPOCH, decref, incref, lookup, merge_many
from .hashmap import hm_get, hm_put
from .layout import (
    AG_BASE,
    COUNT_MAX,
    CV_CONS,
    CV_USED,
    E_SIGNAL_OVERFLOW,
    E_WAIT,
    ED_NEXT,
    ED_S,
    ED_W,
    F_CODE,
    F_OBJ,
    F_SEVERITY,
    FQ_EDGES,
    FQ_HEAD,
    FQ_PAIRS,
    FQ_PAIRS_LAUNCH,
    FQ_TAIL,
    FQ_TOTAL,
    OK,
    PR_NEXT,
    PR_S_AGENT,
    PR_S_BLOCK,
    PR_S_EPOCH,
    PR_S_LAUNCH,
    PR_S_ROW,
    PR_S_SITE,
    PR_S_THREAD,
    PR_S_TS,
    PR_W_AGENT,
    PR_W_EPOCH,
    PR_W_SITE,
    SG_AGENT,
    SG_BASE,
    SG_BLOCK,
    SG_COUNT,
    SG_EPOCH,
    SG_LAUNCH,
    SG_NEXT,
    SG_ROW,
    SG_SITE,
    SG_THREAD,
    SG_TS,
    SV_ED_TOP,
    SV_ERR_A,
    SV_ERR_B,
    SV_ERR_C,
    SV_FQ_N,
    SV_PR_TOP,
    SV_SIG_FREE,
    SV_SIG_TOP,
    SV_SIG_USED,
    WARNING,
)
from .pools import pool_alloc, pool_free
from .races import emit, set_bar, set_prev


@jit_inline
def pairs_of(fq, q, launch):
    """The head of flag queue ``q``'s pairings in ``launch`` (-1: none yet;
    the list an earlier launch left is not this launch's)."""
    return fq[q, FQ_PAIRS] if fq[q, FQ_PAIRS_LAUNCH] == launch else np.int64(-1)


@jit_leaf
def sig_knows(snaps, arena_a, arena_e, sigs, s, u):
    """What signal ``s``'s clock knows of agent ``u``."""
    if u == sigs[s, SG_AGENT]:
        return sigs[s, SG_EPOCH]
    return lookup(snaps, arena_a, arena_e, sigs[s, SG_BASE], u)


@jit_inline
def _alias(
    find,
    sv,
    ag,
    a,
    row,
    launch,
    block,
    thread,
    op,
    ts,
    site,
    obj,
    code,
    s_row,
    s_launch,
    s_block,
    s_thread,
    s_ts,
    s_site,
):
    """A ``sync_alias`` finding at the wait, the signal it pairs with as its
    earlier side; returns its row in ``find``."""
    k = emit(find, sv, O.K_SYNC_ALIAS, row, launch, block, thread, op, ts, site)
    set_prev(find, k, s_row, s_launch, s_block, s_thread, O.SIGNAL, s_ts, s_site)
    find[k, F_OBJ] = obj
    find[k, F_CODE] = code
    set_bar(find, k, ag, a)
    return k


@jit_leaf
def sync_alias(
    ag,
    snaps,
    arena_a,
    arena_e,
    sv,
    sigs,
    fq,
    q,
    pairs,
    edges,
    find,
    cons,
    ncons,
    a,
    epoch,
    row,
    launch,
    block,
    thread,
    op,
    ts,
    site,
    obj,
):
    """The reference's ``sync_alias`` rule over consumed signals ``cons``."""
    warn = np.int64(-1)
    for c in range(ncons):
        s = cons[c]
        if sigs[s, SG_LAUNCH] != launch:
            continue
        p = pairs_of(fq, q, launch)
        while p >= 0:
            if (
                pairs[p, PR_S_SITE] != sigs[s, SG_SITE]
                and pairs[p, PR_W_SITE] != site
                and pairs[p, PR_S_LAUNCH] == launch
            ):
                w1 = (
                    sig_knows(snaps, arena_a, arena_e, sigs, s, pairs[p, PR_W_AGENT])
                    >= pairs[p, PR_W_EPOCH]
                )
                s1 = (
                    sig_knows(snaps, arena_a, arena_e, sigs, s, pairs[p, PR_S_AGENT])
                    >= pairs[p, PR_S_EPOCH]
                )
                if not w1 and not s1 and (warn < 0 or pairs[p, PR_S_ROW] > pairs[warn, PR_S_ROW]):
                    warn = p
            p = pairs[p, PR_NEXT]
    fq[q, FQ_PAIRS] = pairs_of(fq, q, launch)
    fq[q, FQ_PAIRS_LAUNCH] = launch
    for c in range(ncons):
        s = cons[c]
        p = sv[SV_PR_TOP]
        sv[SV_PR_TOP] += 1
        pairs[p, PR_NEXT] = fq[q, FQ_PAIRS]
        fq[q, FQ_PAIRS] = p
        pairs[p, PR_S_ROW] = sigs[s, SG_ROW]
        pairs[p, PR_S_SITE] = sigs[s, SG_SITE]
        pairs[p, PR_S_AGENT] = sigs[s, SG_AGENT] if sigs[s, SG_LAUNCH] == launch else -1
        pairs[p, PR_S_EPOCH] = sigs[s, SG_EPOCH]
        pairs[p, PR_W_SITE] = site
        pairs[p, PR_W_AGENT] = a
        pairs[p, PR_W_EPOCH] = epoch
        pairs[p, PR_S_LAUNCH] = sigs[s, SG_LAUNCH]
        pairs[p, PR_S_BLOCK] = sigs[s, SG_BLOCK]
        pairs[p, PR_S_THREAD] = sigs[s, SG_THREAD]
        pairs[p, PR_S_TS] = sigs[s, SG_TS]
        e = fq[q, FQ_EDGES]
        while e >= 0 and not (edges[e, ED_S] == sigs[s, SG_SITE] and edges[e, ED_W] == site):
            e = edges[e, ED_NEXT]
        if e < 0:
            e = sv[SV_ED_TOP]
            sv[SV_ED_TOP] += 1
            edges[e, ED_NEXT] = fq[q, FQ_EDGES]
            edges[e, ED_S] = sigs[s, SG_SITE]
            edges[e, ED_W] = site
            fq[q, FQ_EDGES] = e
    # Error: this wait site fed by >= 2 signal sites, one of which feeds another wait site.
    nfed = 0
    any_foreign = False
    e = fq[q, FQ_EDGES]
    while e >= 0:
        if edges[e, ED_W] == site:
            nfed += 1
            if is_foreign(edges, fq[q, FQ_EDGES], edges[e, ED_S], site):
                any_foreign = True
        e = edges[e, ED_NEXT]
    if nfed >= 2 and any_foreign:
        pick = np.int64(-1)
        for c in range(ncons):
            s = cons[c]
            if is_foreign(edges, fq[q, FQ_EDGES], sigs[s, SG_SITE], site) and (
                pick < 0 or sigs[s, SG_ROW] > sigs[pick, SG_ROW]
            ):
                pick = s
        if pick < 0:
            for c in range(ncons):
                s = cons[c]
                if pick < 0 or sigs[s, SG_ROW] > sigs[pick, SG_ROW]:
                    pick = s
        _alias(
            find,
            sv,
            ag,
            a,
            row,
            launch,
            block,
            thread,
            op,
            ts,
            site,
            obj,
            R.ALIAS_CROSSED,
            sigs[pick, SG_ROW],
            sigs[pick, SG_LAUNCH],
            sigs[pick, SG_BLOCK],
            sigs[pick, SG_THREAD],
            sigs[pick, SG_TS],
            sigs[pick, SG_SITE],
        )
    elif warn >= 0:
        k = _alias(
            find,
            sv,
            ag,
            a,
            row,
            launch,
            block,
            thread,
            op,
            ts,
            site,
            obj,
            R.ALIAS_MAY_CROSS,
            pairs[warn, PR_S_ROW],
            pairs[warn, PR_S_LAUNCH],
            pairs[warn, PR_S_BLOCK],
            pairs[warn, PR_S_THREAD],
            pairs[warn, PR_S_TS],
            pairs[warn, PR_S_SITE],
        )
        find[k, F_SEVERITY] = WARNING


@jit_leaf
def is_foreign(edges, head, ssite, wsite):
    """Signal site ``ssite`` has fed a wait site other than ``wsite``."""
    e = head
    while e >= 0:
        if edges[e, ED_S] == ssite and edges[e, ED_W] != wsite:
            return True
        e = edges[e, ED_NEXT]
    return False


@jit_leaf
def consume_signals(t, ev, a, epoch, q, need, obj):
    """A wait of ``a`` (event ``ev``, at ``epoch``) takes ``need`` signals from
    flag queue ``q`` of flag ``obj`` in FIFO order and joins their clocks
    (``t.cvs``: a row per signal record taken, at most the live records)."""
    sv, ag, snaps, arena_a, arena_e, sigs, fq, cvs = (
        t.sv,
        t.ag,
        t.snaps,
        t.arena_a,
        t.arena_e,
        t.sigs,
        t.fq,
        t.cvs,
    )
    row, launch, block, thread, op, ts, site = (
        ev.row,
        ev.launch,
        ev.block,
        ev.thread,
        ev.op,
        ev.ts,
        ev.site,
    )
    cvs[0, CV_BASE] = ag[a, AG_BASE]
    cvs[0, CV_AGENT] = -1
    cvs[0, CV_EPOCH] = 0
    m = 1
    nused = 0
    ncons = 0
    while need > 0:
        s = fq[q, FQ_HEAD]
        take = min(need, sigs[s, SG_COUNT])
        cvs[ncons, CV_CONS] = s
        ncons += 1
        if sigs[s, SG_LAUNCH] == launch:
            cvs[m, CV_BASE] = sigs[s, SG_BASE]
            cvs[m, CV_AGENT] = sigs[s, SG_AGENT]
        else:  # a signal of an earlier launch orders nothing of this one
            cvs[m, CV_BASE] = 0
            cvs[m, CV_AGENT] = -1
        cvs[m, CV_EPOCH] = sigs[s, SG_EPOCH]
        m += 1
        sigs[s, SG_COUNT] -= take
        fq[q, FQ_TOTAL] -= take
        need -= take
        if sigs[s, SG_COUNT] == 0:
            fq[q, FQ_HEAD] = sigs[s, SG_NEXT]
            if fq[q, FQ_HEAD] < 0:
                fq[q, FQ_TAIL] = -1
            cvs[nused, CV_USED] = s
            nused += 1
    snap = merge_many(snaps, arena_a, arena_e, sv, cvs, m, t.scratch, t.touched)
    set_base(ag, snaps, sv, a, snap)
    sync_alias(
        ag,
        snaps,
        arena_a,
        arena_e,
        sv,
        sigs,
        fq,
        q,
        t.pairs,
        t.edges,
        t.find,
        cvs[:, CV_CONS],
        ncons,
        a,
        epoch,
        row,
        launch,
        block,
        thread,
        op,
        ts,
        site,
        obj,
    )
    # Consumed signals go only after the merge has read their clocks.
    for p in range(nused):
        if sigs[cvs[p, CV_USED], SG_LAUNCH] == launch:  # (an older one's snapshot is gone)
            decref(snaps, sv, sigs[cvs[p, CV_USED], SG_BASE])
        pool_free(sigs, sv, SV_SIG_FREE, SV_SIG_USED, cvs[p, CV_USED])


# ---------------------------------------------------------------------------
@jit_leaf
def on_signal(t, c, i, ev, a, epoch):
    """A signal: the reference's ``on_signal``; a pending count past the
    format's int64 is ``E_SIGNAL_OVERFLOW``."""
    sv, ag, snaps, sigs, flag_map, fq = t.sv, t.ag, t.snaps, t.sigs, t.flag_map, t.fq
    row, launch, block, thread, ts, site = ev.row, ev.launch, ev.block, ev.thread, ev.ts, ev.site
    obj = np.int64(c.obj[i])
    arg = np.int64(c.arg[i])
    q = hm_get(flag_map, obj, 0, 0)
    if q < 0:
        q = sv[SV_FQ_N]
        sv[SV_FQ_N] += 1
        hm_put(flag_map, obj, 0, 0, q)
        fq[q, FQ_HEAD] = -1
        fq[q, FQ_TAIL] = -1
        fq[q, FQ_TOTAL] = 0
        fq[q, FQ_PAIRS] = -1
        fq[q, FQ_PAIRS_LAUNCH] = launch
        fq[q, FQ_EDGES] = -1
    count = arg if arg > 0 else 1
    if fq[q, FQ_TOTAL] > COUNT_MAX - count:  # (the sum itself would wrap)
        sv[SV_ERR_A] = obj
        sv[SV_ERR_B] = fq[q, FQ_TOTAL]
        sv[SV_ERR_C] = count
        return E_SIGNAL_OVERFLOW
    s = pool_alloc(sigs, sv, SV_SIG_TOP, SV_SIG_FREE, SV_SIG_USED)
    sigs[s, SG_ROW] = row
    sigs[s, SG_SITE] = site
    sigs[s, SG_LAUNCH] = launch
    sigs[s, SG_BLOCK] = block
    sigs[s, SG_THREAD] = thread
    sigs[s, SG_TS] = ts
    sigs[s, SG_COUNT] = count
    incref(snaps, ag[a, AG_BASE])
    sigs[s, SG_BASE] = ag[a, AG_BASE]
    sigs[s, SG_AGENT] = a
    sigs[s, SG_EPOCH] = epoch
    if fq[q, FQ_TAIL] >= 0:
        sigs[fq[q, FQ_TAIL], SG_NEXT] = s
    else:
        fq[q, FQ_HEAD] = s
    fq[q, FQ_TAIL] = s
    fq[q, FQ_TOTAL] += count
    return OK


# ---------------------------------------------------------------------------
@jit_leaf
def on_wait(t, c, i, ev, a, epoch):
    """A wait: the reference's ``on_wait``."""
    sv, fq = t.sv, t.fq
    obj = np.int64(c.obj[i])
    arg = np.int64(c.arg[i])
    need = arg if arg > 0 else 1
    q = hm_get(t.flag_map, obj, 0, 0)
    avail = fq[q, FQ_TOTAL] if q >= 0 else 0
    if avail < need:
        sv[SV_ERR_A] = obj
        sv[SV_ERR_B] = need
        sv[SV_ERR_C] = avail
        return E_WAIT
    consume_signals(t, ev, a, epoch, q, need, obj)
    return OK
