"""The race check and the findings it makes: ``race_kind`` decides whether an earlier
access and this one race, and how (the reference's ``Races.race_kind``: the same
questions in the same order); ``offer`` keeps, per hazard kind, the earlier access a
finding names and what was missing; ``flush_candidates`` and ``emit`` write findings.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from .. import reasons as R
from ..findings import FINDING_DTYPE
from ..jit import jit, jit_inline, jit_leaf
from .agents import known, reach
from .async_copies import copy_retired, cp_wait_site, first_wait, phase_entry, retiring_wait
from .layout import (
    AG_BARFENCE,
    AG_BAROBJ,
    AG_BARPOS,
    AG_BLOCK,
    AG_KIND,
    AG_MBAR,
    AG_THREAD,
    AG_WEAK_AGENT,
    AG_WEAK_AUX,
    AG_WEAK_EPOCH,
    AG_WEAK_OBJ,
    BARPOS_GEN_MASK,
    BARPOS_NAME_SHIFT,
    C_AUX,
    C_AW,
    C_CODE,
    C_HI,
    C_LO,
    C_OBJ,
    C_OWNER,
    C_PREV_ASYNC,
    C_PREV_BARPOS,
    C_PREV_BLOCK,
    C_PREV_OP,
    C_PREV_ROW,
    C_PREV_THREAD,
    C_PW,
    C_SPACE,
    C_VALID,
    CP_ARRIVE_BITS,
    F_ADDR,
    F_AUX,
    F_BAR_GEN,
    F_BAR_OBJ,
    F_BLOCK,
    F_CODE,
    F_KIND,
    F_LAUNCH,
    F_OBJ,
    F_OP,
    F_OWNER,
    F_PREV_ASYNC,
    F_PREV_BAR_GEN,
    F_PREV_BAR_OBJ,
    F_PREV_BLOCK,
    F_PREV_LAUNCH,
    F_PREV_OP,
    F_PREV_ROW,
    F_PREV_SITE,
    F_PREV_THREAD,
    F_PREV_TS,
    F_RANK,
    F_ROW,
    F_SEVERITY,
    F_SITE,
    F_SIZE,
    F_SPACE,
    F_THREAD,
    F_TS,
    FN_AUX,
    FN_VAL,
    GN_BAROBJ,
    I_ASYNC,
    I_ATOMIC,
    I_PROXY,
    K_BARPOS,
    K_FIELDS,
    KIND_TMA,
    N_EPOCH,
    N_INFO,
    N_KINDS,
    N_ROW,
    NF,
    SITE_NONE_I,
    SV_NFIND,
    info_copy_kind,
    info_op,
    info_scope,
    node_agent,
)


# ---------------------------------------------------------------------------
# Findings.
@jit_leaf
def set_prev(find, k, row, launch, block, thread, op, ts, site):
    """The earlier event of finding ``k`` (one that is not a memory access)."""
    find[k, F_PREV_ROW] = row
    find[k, F_PREV_LAUNCH] = launch
    find[k, F_PREV_BLOCK] = block
    find[k, F_PREV_THREAD] = thread
    find[k, F_PREV_OP] = op
    find[k, F_PREV_TS] = ts
    find[k, F_PREV_SITE] = site


@jit_leaf
def emit(find, sv, kind, row, launch, block, thread, op, ts, site):
    k = sv[SV_NFIND]
    sv[SV_NFIND] += 1
    for f in range(NF + 1):
        find[k, f] = 0
    find[k, F_KIND] = kind
    find[k, F_ROW] = row
    find[k, F_LAUNCH] = launch
    find[k, F_BLOCK] = block
    find[k, F_THREAD] = thread
    find[k, F_OP] = op
    find[k, F_TS] = ts
    find[k, F_SITE] = site
    find[k, F_PREV_ROW] = -1
    find[k, F_PREV_SITE] = SITE_NONE_I
    find[k, F_BAR_OBJ] = -1
    find[k, F_BAR_GEN] = -1
    find[k, F_PREV_BAR_OBJ] = -1
    find[k, F_PREV_BAR_GEN] = -1
    return k


# What ``race_kind`` says when an earlier access does not race with this one.
ORDERED = -1  # it happens before this access
ATOMIC_PAIR = -2  # both are atomics of a scope that reaches both agents


@jit_inline
def race_kind(
    ag, snaps, arena_a, arena_e, fen, nodes, x, t, x_wrote, is_write, is_atomic, scope, reduction
):
    """Whether the earlier access ``x`` (a write when ``x_wrote``) races with
    this access of thread ``t``, the rule of the reference's ``on_access``:
    an access ``t`` knows of happens before it (``ORDERED``); two atomics
    whose scopes both reach both agents do not race (``ATOMIC_PAIR``) when
    both are bulk reductions (an async agent's atomic in the async proxy:
    ``reduction`` for this one) or neither is; an async copy not yet retired
    is ``async_inflight``; else ``waw`` or ``raw`` after a write, ``war``
    after a read."""
    xinfo = nodes[x, N_INFO]
    xa = node_agent(nodes, x)
    if known(ag, snaps, arena_a, arena_e, t, xa) >= nodes[x, N_EPOCH]:
        return ORDERED
    if (
        is_atomic
        and (xinfo & I_ATOMIC) != 0
        and ((xinfo & (I_ASYNC | I_PROXY)) == (I_ASYNC | I_PROXY)) == reduction
        and min(info_scope(xinfo), scope) >= reach(ag, xa, t)
    ):
        return ATOMIC_PAIR
    if (xinfo & I_ASYNC) and not copy_retired(ag, fen, xa, nodes[x, N_EPOCH]):
        return O.K_ASYNC_INFLIGHT
    if not x_wrote:
        return O.K_WAR
    return O.K_WAW if is_write else O.K_RAW


@jit_leaf
def offer(cand, kind, ag, nodes, cold, fen, x, pw, aw, space, owner, lo_addr, hi_addr, t):
    """Keep node ``x`` as the candidate for ``kind`` when it ranks higher:
    by row, then a write before a read, then (for the later side) a write.
    ``t``: the thread whose clock orders the later access."""
    row = nodes[x, N_ROW]
    if cand[kind, C_VALID] == 1:
        r0, p0, a0 = cand[kind, C_PREV_ROW], cand[kind, C_PW], cand[kind, C_AW]
        if row < r0 or (row == r0 and (pw < p0 or (pw == p0 and aw <= a0))):
            return
    info = nodes[x, N_INFO]
    xa = node_agent(nodes, x)
    cand[kind, C_VALID] = 1
    cand[kind, C_PREV_ROW] = row
    cand[kind, C_PW] = pw
    cand[kind, C_AW] = aw
    cand[kind, C_PREV_BLOCK] = ag[xa, AG_BLOCK]
    cand[kind, C_PREV_THREAD] = ag[xa, AG_THREAD]
    cand[kind, C_PREV_OP] = info_op(info)
    cand[kind, C_PREV_ASYNC] = 1 if info & I_ASYNC else 0
    cand[kind, C_PREV_BARPOS] = cold[x, K_BARPOS]
    cand[kind, C_SPACE] = space
    cand[kind, C_OWNER] = owner
    # This access's bytes: the driver keeps those the earlier one touched
    # too, once it has looked up that one's row (``tracerace.trace.rows``).
    cand[kind, C_LO] = lo_addr
    cand[kind, C_HI] = hi_addr
    # What was missing (the reference's ``reason``).
    cand[kind, C_CODE] = 0
    cand[kind, C_AUX] = 0
    cand[kind, C_OBJ] = 0
    if kind == O.K_ASYNC_INFLIGHT:
        ck = info_copy_kind(info)
        cand[kind, C_CODE] = ck
        if ck == R.INFLIGHT_TMA_LOAD:
            f = phase_entry(ag, fen, xa, nodes[x, N_EPOCH])
            cand[kind, C_AUX] = fen[f, FN_VAL] & 0xFFFFFFFF
            cand[kind, C_OBJ] = ag[xa, AG_MBAR]
        elif ck == R.INFLIGHT_CP_ASYNC:  # the group of the copy's stamp
            cand[kind, C_AUX] = nodes[x, N_EPOCH] >> CP_ARRIVE_BITS
        else:
            cand[kind, C_AUX] = nodes[x, N_EPOCH]
    elif kind == O.K_PROXY_FENCE:
        if info & I_ASYNC:
            cand[kind, C_CODE] = R.PROXY_CP_ASYNC_DEST
            if ag[xa, AG_KIND] == KIND_TMA:  # an st_async destination
                cand[kind, C_AUX] = fen[first_wait(ag, fen, xa, nodes[x, N_EPOCH]), FN_AUX]
            else:
                f = retiring_wait(ag, fen, xa, nodes[x, N_EPOCH])
                cand[kind, C_AUX] = cp_wait_site(fen, f)
                if fen[f, FN_AUX] < 0:  # retired by an mbar_wait
                    cand[kind, C_CODE] = R.PROXY_CP_ASYNC_MBAR_DEST
    elif kind != O.K_UNINIT_READ and (info & I_ASYNC) == 0:
        if ag[t, AG_WEAK_AGENT] == xa and ag[t, AG_WEAK_EPOCH] >= nodes[x, N_EPOCH]:
            cand[kind, C_CODE] = R.RACE_WEAK_SYNC
            cand[kind, C_AUX] = ag[t, AG_WEAK_AUX]
            cand[kind, C_OBJ] = ag[t, AG_WEAK_OBJ]
        elif (
            ag[t, AG_BARPOS] >= 0
            and before_barrier(cold[x, K_BARPOS], ag[t, AG_BARPOS])
            and not ag[t, AG_BARFENCE] & (1 << space)
        ):
            cand[kind, C_CODE] = R.RACE_UNFENCED_BARRIER
            cand[kind, C_AUX] = ag[t, AG_BARFENCE]


@jit_inline
def bar_gen(pos):
    """The generation of barrier position ``pos`` (AG_BARPOS; -1: none)."""
    return pos & BARPOS_GEN_MASK if pos >= 0 else np.int64(-1)


@jit_inline
def bar_obj(gens, pos):
    """The obj of the barrier of position ``pos`` (AG_BARPOS; -1: none)."""
    return gens[pos >> BARPOS_NAME_SHIFT, GN_BAROBJ] if pos >= 0 else np.int64(-1)


@jit_inline
def before_barrier(xpos, tpos):
    """Whether a thread at barrier position ``xpos`` had not yet completed
    the generation at ``tpos`` (>= 0) of the same barrier: none at all, or an
    earlier generation of the barrier (equal names are equal objs)."""
    return xpos < 0 or (
        xpos >> BARPOS_NAME_SHIFT == tpos >> BARPOS_NAME_SHIFT
        and xpos & BARPOS_GEN_MASK < tpos & BARPOS_GEN_MASK
    )


@jit_inline
def set_bar(find, k, ag, a):
    """Finding ``k`` at an event of agent ``a``: the barrier it last passed."""
    find[k, F_BAR_OBJ] = ag[a, AG_BAROBJ]
    find[k, F_BAR_GEN] = bar_gen(ag[a, AG_BARPOS])


@jit_leaf
def flush_candidates(cand, find, sv, gens, ag, a, row, launch, block, thread, op, ts, site):
    for kind in range(N_KINDS):
        if cand[kind, C_VALID] != 1:
            continue
        cand[kind, C_VALID] = 0
        k = emit(find, sv, kind, row, launch, block, thread, op, ts, site)
        find[k, F_SPACE] = cand[kind, C_SPACE]
        find[k, F_OWNER] = cand[kind, C_OWNER]
        find[k, F_ADDR] = cand[kind, C_LO]
        find[k, F_SIZE] = cand[kind, C_HI] - cand[kind, C_LO]
        set_bar(find, k, ag, a)
        if kind == O.K_UNINIT_READ:
            continue
        find[k, F_RANK] = 2 * cand[kind, C_PW] + cand[kind, C_AW]
        find[k, F_PREV_ROW] = cand[kind, C_PREV_ROW]
        find[k, F_PREV_LAUNCH] = launch
        find[k, F_PREV_BLOCK] = cand[kind, C_PREV_BLOCK]
        find[k, F_PREV_THREAD] = cand[kind, C_PREV_THREAD]
        find[k, F_PREV_OP] = cand[kind, C_PREV_OP]
        find[k, F_PREV_ASYNC] = cand[kind, C_PREV_ASYNC]
        find[k, F_PREV_BAR_OBJ] = bar_obj(gens, cand[kind, C_PREV_BARPOS])
        find[k, F_PREV_BAR_GEN] = bar_gen(cand[kind, C_PREV_BARPOS])
        find[k, F_CODE] = cand[kind, C_CODE]
        find[k, F_AUX] = cand[kind, C_AUX]
        find[k, F_OBJ] = cand[kind, C_OBJ]


# ---------------------------------------------------------------------------
# One access against shadow memory.

# set_node writes the cold row whole (store_row_nt).
assert (K_BARPOS, K_FIELDS) == (0, 1)


@jit_inline
def offer_uninit(cand, space, owner, lo, hi):
    """The first uninitialized range an event reads (``lo``..``hi``, last
    byte included) is its candidate."""
    if lo >= 0 and cand[O.K_UNINIT_READ, C_VALID] == 0:
        cand[O.K_UNINIT_READ, C_VALID] = 1
        cand[O.K_UNINIT_READ, C_SPACE] = space
        cand[O.K_UNINIT_READ, C_OWNER] = owner
        cand[O.K_UNINIT_READ, C_LO] = lo
        cand[O.K_UNINIT_READ, C_HI] = hi + 1
        return 1
    return 0


@jit_leaf
def misuse(find, sv, ag, a, code, row, launch, block, thread, op, ts, site, peer, obj):
    k = emit(find, sv, O.K_MBARRIER_MISUSE, row, launch, block, thread, op, ts, site)
    find[k, F_SPACE] = O.SPACE_SHARED
    find[k, F_OWNER] = peer
    find[k, F_ADDR] = obj
    find[k, F_SIZE] = 8
    find[k, F_OBJ] = obj
    find[k, F_CODE] = code
    set_bar(find, k, ag, a)
    return k


# ---------------------------------------------------------------------------
# Findings handed out: the rows as FINDING_DTYPE records.
@jit
def rows_to_records(rows, out):
    """``out[i]`` = row ``i`` of ``rows`` (int64 values in the order of
    ``FIELDS``, as the engine keeps them: ``F_*``), each cast to its field's type.
    Fifteen times faster than a cast per field (NumPy writes the packed records
    a field at a time)."""
    for i in range(rows.shape[0]):
        row = rows[i]
        rec = out[i]
        rec.kind = row[F_KIND]
        rec.severity = row[F_SEVERITY]
        rec.row = row[F_ROW]
        rec.launch = row[F_LAUNCH]
        rec.block = row[F_BLOCK]
        rec.thread = row[F_THREAD]
        rec.op = row[F_OP]
        rec.ts = row[F_TS]
        rec.site = row[F_SITE]
        rec.prev_row = row[F_PREV_ROW]
        rec.prev_launch = row[F_PREV_LAUNCH]
        rec.prev_block = row[F_PREV_BLOCK]
        rec.prev_thread = row[F_PREV_THREAD]
        rec.prev_op = row[F_PREV_OP]
        rec.prev_ts = row[F_PREV_TS]
        rec.prev_site = row[F_PREV_SITE]
        rec.prev_async = row[F_PREV_ASYNC]
        rec.space = row[F_SPACE]
        rec.owner = row[F_OWNER]
        rec.addr = row[F_ADDR]
        rec.size = row[F_SIZE]
        rec.obj = row[F_OBJ]
        rec.bar_obj = row[F_BAR_OBJ]
        rec.bar_gen = row[F_BAR_GEN]
        rec.prev_bar_obj = row[F_PREV_BAR_OBJ]
        rec.prev_bar_gen = row[F_PREV_BAR_GEN]
        rec.code = row[F_CODE]
        rec.aux = row[F_AUX]


_EARLIER_ACCESS = np.array([O.K_RAW, O.K_WAR, O.K_WAW, O.K_ASYNC_INFLIGHT, O.K_PROXY_FENCE])
"""The kinds whose earlier side is a node's access (``offer``)."""


def add_earlier_rows(found: np.ndarray, rows) -> None:
    """Complete the findings pool's rows ``found`` (with F_RANK) from the
    rows their earlier accesses were at (``rows``, a
    :class:`tracerace.trace.rows.RowFields`): the earlier access's ts and
    site, and the bytes (this access's, from ``offer``) cut to those it
    touched too, the reference's overlap. A copy's source read (an async
    agent's read: F_RANK below 2) was at ``addr2``."""
    at = np.flatnonzero(np.isin(found[:, F_KIND], _EARLIER_ACCESS))
    if at.shape[0] == 0:
        return
    got = rows.take(found[at, F_PREV_ROW])
    source = (found[at, F_PREV_ASYNC] == 1) & (found[at, F_RANK] < 2)
    lo = np.where(source, got["addr2"], got["addr"])
    hi = lo + got["size"]
    lo = np.maximum(lo, found[at, F_ADDR])
    hi = np.minimum(hi, found[at, F_ADDR] + found[at, F_SIZE])
    found[at, F_ADDR] = lo
    found[at, F_SIZE] = hi - lo
    found[at, F_PREV_TS] = got["ts"]
    found[at, F_PREV_SITE] = got["site"]


def records(rows: np.ndarray) -> np.ndarray:
    """``FINDING_DTYPE`` records from int64 rows in the order of ``FIELDS``."""
    out = np.empty(rows.shape[0], dtype=FINDING_DTYPE)
    if rows.shape[0]:
        rows_to_records(np.ascontiguousarray(rows), out)
    return out
