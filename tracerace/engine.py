"""The Numba engine: the reference checker's semantics, fast and streaming.

The kernel :func:`replay` walks a batch's NumPy columns and keeps all state in
arrays (and a few typed dicts) that persist across batches, so memory is
bounded by what may still race, not by the trace. It never sees a Table.

Representation:

* agents get dense indices per launch; clocks are shared sparse snapshots
  (``tracerace.clocks``) plus the agent's own epoch;
* shadow memory is the granule table of ``tracerace.shadow``;
* everything of a launch is dropped when the next launch starts: launch order
  makes it happen before everything that follows. Only the ``init`` state of
  global memory and the pending counts of flags survive.

When a pool is about to run out, the kernel stops *before* touching the event
that needs the room and returns ``NEED_GROW`` with a bit mask of pools; the
driver grows them and resumes at that row. So no event is ever half applied.
"""

from __future__ import annotations

import collections
import threading
from typing import Callable

import numpy as np

from . import badinput
from . import ops as O
from . import reasons as R
from ._jit import jit, jit_inline, jit_leaf, store_row_nt
from .clocks import (CV_AGENT, CV_BASE, CV_EPOCH, SN_FIELDS, SN_REF, SN_SERIAL, SV_ARENA_TOP, SV_SNAP_FREE, SV_SNAP_N,
                     compact, decref, incref, lookup, merge, merge_many)
from .errors import TraceError
from .hashmap import hm_get, hm_prefetch, hm_put, new_table
from .hashmap import rehash as hm_rehash
from .findings import FINDING_DTYPE, CheckResult, records
from .mapped import MappedArray, can_populate
from .prefetch import prefetch
from .schema import COLUMN_NAMES, SITE_NONE
from .shadow import PF_FAR, PF_NEAR, prefetch_lists, prefetch_slots
from .shadow import (G_FIELDS, G_INIT, G_LAUNCH, G_NREADS, G_READS, G_RLIMIT, G_WRITES,
                     GRANULE_SHIFT, I_ASYNC, I_ATOMIC, I_COPY_SHIFT, I_MASK_SHIFT, I_OP_MASK,
                     I_PROXY, I_SCOPE_SHIFT, I_SHADOW_SHIFT, I_WRITE, INIT_INTERVAL_MIN,
                     IV_FIELDS, IV_REGION, K_ADDR, K_BAR, K_BARGEN, K_FIELDS, K_ROW,
                     K_SHADOW_AGENT, K_SHADOW_EPOCH, K_SIZE_SITE, K_TS, N_AGENT, N_EPOCH,
                     MASK_ALL, N_FIELDS, N_INFO, N_NEXT, READ_PRUNE_MIN, REGION_LOCAL,
                     REGION_SHARED, REGION_WIDE, SV_GLOBAL_REGION, SV_GLOBAL_SIZES,
                     GLOBAL_GRANULE_SHIFT, GS_NARROW, GS_WIDE, WIDE_GRANULE_SHIFT,
                     PAGE_REGION, PAGE_SHIFT, PAGE_SPLIT, PST_SIZE, SV_PAGE_LAUNCH, SV_PAGE_SHIFT,
                     find_granule, granule_shift, is_global, iv_add, iv_covers, iv_init_mask,
                     iv_region, other_size_init, page_stamp_index, probe, rehash)

# ---------------------------------------------------------------------------
# State layout. Scalars 0-5 belong to tracerace.clocks.
SV_GRAN_COUNT = 6
SV_N_AGENTS = 7
SV_NODE_TOP, SV_NODE_FREE, SV_NODE_USED = 8, 9, 10
SV_ARR_TOP, SV_ARR_FREE, SV_ARR_USED = 11, 12, 13
SV_SIG_TOP, SV_SIG_FREE, SV_SIG_USED = 14, 15, 16
SV_AR_TOP, SV_AR_FREE, SV_AR_USED = 17, 18, 19
SV_FEN_TOP = 20
SV_GEN_N = 21
SV_FQ_N = 22
SV_MB_N = 23
SV_NFIND = 24
SV_LAUNCH = 25
SV_GROW = 26
SV_ERR_A, SV_ERR_B, SV_ERR_C, SV_ERR_D = 27, 28, 29, 30
SV_LOCK_N, SV_ATOM_N = 31, 32
SV_IV_N = 33
SV_PR_TOP, SV_ED_TOP = 34, 35
SV_SHARED_REGION = 36  # REGION_SHARED, with REGION_WIDE in a launch of 16-byte granules
# SV_GLOBAL_SIZES = 37, SV_GLOBAL_REGION = 38 (0, or REGION_WIDE): see shadow.py
# The memory spaces this state checks (fence_spaces bits: 1 global, 2 shared,
# 4 local): all of them, or, once a barrier orders only some memory, one of
# the two views the driver runs side by side (see ``check_trace``).
SV_VIEW = 39
# 40, 41: SV_PAGE_SHIFT, SV_PAGE_LAUNCH (tracerace.shadow)
SV_FIELDS = 42
VIEW_ALL, VIEW_GLOBAL, VIEW_SHARED = 7, 1 | 4, 2

# Agents.
# The first eight fields are what every access reads (finding the agent, its
# clock, its barrier position for the node it makes): with rows of 24 fields
# (three aligned cache lines; the tables are page-aligned) an access touches
# one line of its agent's row. Rows of 22 fields, hot fields spread over the
# first ten, touched two and often three lines: the pipeline benchmark sweeps
# ~17k agents (~3 MB) per instruction of its lockstep schedule, so each event
# missed the caches there.
(AG_BASE, AG_EPOCH, AG_BLOCK, AG_THREAD, AG_KIND, AG_BLOCKED, AG_BAROBJ, AG_BARGEN,
 AG_CLUSTER, AG_BLOCKNUM, AG_FENCES, AG_CP_OPEN, AG_CP_RET, AG_BULK_OPEN, AG_BULK_RET,
 AG_RETIRED, AG_CP_AGENT, AG_BULK_AGENT, AG_ACQ_SERIAL, AG_ISSUER, AG_MBAR,
 AG_WEAK_AGENT, AG_WEAK_EPOCH, AG_WEAK_AUX, AG_WEAK_OBJ, AG_BARFENCE) = range(26)
# Per scope level (WARP..DEVICE at offset scope - 1): the release fences
# (base snapshot and epoch of the latest release fence of that scope or
# wider; base -1: none) and the releases read by relaxed atomics waiting for
# an acquire fence (a snapshot per reach; 0: none).
N_LEVELS = 4
AG_FREL_BASE = 26
AG_FREL_EPOCH = AG_FREL_BASE + N_LEVELS
AG_PACQ = AG_FREL_EPOCH + N_LEVELS
AG_FIELDS = 40  # five aligned cache lines
assert AG_PACQ + N_LEVELS <= AG_FIELDS
KIND_THREAD, KIND_CP, KIND_BULK, KIND_TMA = 0, 1, 2, 3
# AG_FENCES heads the agent's log in ``fen``: fence_proxy_async epochs for a
# thread, retiring waits for a cp.async agent, phases for a TMA agent (below).
# AG_ISSUER: an async agent's thread; AG_MBAR: a TMA agent's mbarrier address.
# AG_WEAK_*: the last release the thread's atomics read without synchronizing
# (releaser, its epoch, reasons.weak_sync_aux, the address; agent -1: none).
# AG_BARFENCE: the fence_spaces of its arrival at the generation AG_BARGEN.

# Barrier generations, one slot per (kind, block, obj) key, reused per generation.
(GN_OPEN, GN_ARG, GN_MASK, GN_COUNT, GN_ARRIVALS, GN_NUMBER, GN_BAROBJ, GN_KEYOBJ,
 GN_F_ROW, GN_F_LAUNCH, GN_F_BLOCK, GN_F_THREAD, GN_F_OP, GN_F_TS, GN_F_SITE,
 GN_L_ROW, GN_L_LAUNCH, GN_L_BLOCK, GN_L_THREAD, GN_L_OP, GN_L_TS, GN_L_SITE, GN_L_OBJ) = range(23)
GN_FIELDS = 23

# Arrivals (barrier generations and mbarrier phases).
AR_NEXT, AR_BASE, AR_AGENT, AR_EPOCH, AR_FLAG = range(5)
AR_FIELDS = 5
ARF_WAITER, ARF_TMA = 1, 2
ARF_NOJOIN = 4  # a barrier arrival that does not fence this view's memory: no clock given or taken
ARF_FENCE_SHIFT = 4  # a barrier arrival's fence_spaces, in its flag

# Signals queued on a flag.
(SG_NEXT, SG_COUNT, SG_BASE, SG_AGENT, SG_EPOCH, SG_ROW, SG_SITE, SG_LAUNCH, SG_BLOCK, SG_THREAD,
 SG_TS) = range(11)
SG_FIELDS = 11
FQ_HEAD, FQ_TAIL, FQ_TOTAL, FQ_PAIRS, FQ_EDGES = range(5)
FQ_FIELDS = 5

# sync_alias: FIFO pairings of this launch, and (signal site, wait site) edges.
(PR_NEXT, PR_S_ROW, PR_S_SITE, PR_S_AGENT, PR_S_EPOCH, PR_W_SITE, PR_W_AGENT, PR_W_EPOCH,
 PR_S_LAUNCH, PR_S_BLOCK, PR_S_THREAD, PR_S_TS) = range(12)
PR_FIELDS = 12
ED_NEXT, ED_S, ED_W = range(3)
ED_FIELDS = 3

# mbarriers.
(MB_VALID, MB_EXPECTED, MB_PENDING, MB_TX, MB_PHASE, MB_ARRIVALS, MB_DONE0, MB_DONE1,
 MB_I_ROW, MB_I_LAUNCH, MB_I_BLOCK, MB_I_THREAD, MB_I_OP, MB_I_TS, MB_I_SITE, MB_INITS,
 MB_TMA0, MB_TMA1) = range(18)
MB_FIELDS = 18
# MB_INITS: mbar_inits so far (a phase is known by (init number << 32) | phase).
# MB_TMA0/1: per parity, the tma_loads (arrival records: agent, load number)
# that completed the latest completed phase, until a wait retires them.

# The clock-value workspace ``cvs`` (rows: at least the arrival, signal and
# releasing-atomic pools', so a join of any of them fits): merge_many reads
# CV_BASE/CV_AGENT/CV_EPOCH; a wait also lists the signal records it took.
CV_CONS, CV_USED = 3, 4
CV_FIELDS = 5

# Releasing atomics per address.
RL_NEXT, RL_SCOPE, RL_AGENT, RL_BASE, RL_EPOCH = range(5)
RL_FIELDS = 5

# Agent logs, newest first (head: AG_FENCES):
# - thread: fence_proxy_async, at FN_EPOCH;
# - cp.async agent: waits that retired groups: FN_EPOCH the issuer's epoch at
#   the wait, FN_VAL the groups retired up to, FN_AUX the wait's site;
# - TMA agent: phases its loads complete: FN_EPOCH the first load number in
#   the phase, FN_VAL the phase key, FN_AUX 1 once a wait returned on it.
FN_NEXT, FN_EPOCH, FN_VAL, FN_AUX = range(4)
FN_FIELDS = 4

NF = len(FINDING_DTYPE.names)
F = {name: i for i, name in enumerate(FINDING_DTYPE.names)}
# One more column past the finding's fields: its rank among candidates
# (prev is a write, 2; this access writes, 1), which the driver needs to merge
# the findings of two views.
F_RANK = NF
(F_KIND, F_SEVERITY, F_ROW, F_LAUNCH, F_BLOCK, F_THREAD, F_OP, F_TS, F_SITE, F_PREV_ROW,
 F_PREV_LAUNCH, F_PREV_BLOCK, F_PREV_THREAD, F_PREV_OP, F_PREV_TS, F_PREV_SITE, F_PREV_ASYNC,
 F_SPACE, F_OWNER, F_ADDR, F_SIZE, F_OBJ, F_BAR_OBJ, F_BAR_GEN, F_PREV_BAR_OBJ, F_PREV_BAR_GEN,
 F_CODE, F_AUX) = range(NF)

# Candidate slots per hazard kind for the current event.
(C_VALID, C_PREV_ROW, C_PW, C_AW, C_PREV_BLOCK, C_PREV_THREAD, C_PREV_OP, C_PREV_TS,
 C_PREV_SITE, C_PREV_ASYNC, C_PREV_BAR, C_PREV_BARGEN, C_SPACE, C_OWNER, C_LO, C_HI, C_CODE,
 C_AUX, C_BAR, C_BARGEN, C_OBJ) = range(21)
C_FIELDS = 21
N_KINDS = 9

# Return codes.
OK, NEED_GROW, NEW_LAUNCH = 0, 1, 2
E_BARRIER_ORDER, E_WAIT, E_BAR_COUNT, E_WARP_MASK, E_LAUNCH_ORDER, E_MBAR_COUNT, E_WAIT_GROUP = \
    range(10, 17)

# Grow bits.
(GR_AGENTS, GR_SNAPS, GR_ARENA, GR_NODES, GR_GRAN, GR_GENS, GR_ARR, GR_SIG, GR_FQ, GR_MB,
 GR_RL, GR_FEN, GR_FIND, GR_AMAP, GR_BMAP, GR_MMAP, GR_FMAP, GR_LMAP, GR_XMAP) = (
    1 << i for i in range(19))
GR_IV = 1 << 19
GR_PR = 1 << 20
GR_ED = 1 << 21
# hash map name -> grow bit
_MAPS = {"agent_map": GR_AMAP, "async_map": GR_AMAP, "bar_map": GR_BMAP, "mb_map": GR_MMAP,
         "flag_map": GR_FMAP, "lock_map": GR_LMAP, "atom_map": GR_XMAP}

WARP_BARRIER = -2
SITE_NONE_I = np.int64(SITE_NONE)

_K_RAW, _K_WAR, _K_WAW = O.K_RAW, O.K_WAR, O.K_WAW
_K_UNINIT, _K_INFLIGHT, _K_PROXY = O.K_UNINIT_READ, O.K_ASYNC_INFLIGHT, O.K_PROXY_FENCE
_K_BARMIS, _K_MBMIS = O.K_BARRIER_MISMATCH, O.K_MBARRIER_MISUSE
_WARNING = int(O.Severity.WARNING)
_LAST_ROW, _LAST_NODE = N_KINDS, N_KINDS + 1  # scratch rows of the candidate table


# ---------------------------------------------------------------------------
# Small pools with a free list threaded through column 0.
@jit_inline
def pool_alloc(pool, sv, top_i, free_i, used_i):
    if sv[free_i] >= 0:
        k = sv[free_i]
        sv[free_i] = pool[k, 0]
    else:
        k = sv[top_i]
        sv[top_i] += 1
    sv[used_i] += 1
    pool[k, 0] = -1
    return k


@jit_inline
def pool_free(pool, sv, free_i, used_i, k):
    pool[k, 0] = sv[free_i]
    sv[free_i] = k
    sv[used_i] -= 1


# ---------------------------------------------------------------------------
# Agents and clocks.
@jit_leaf
def new_agent(ag, sv, block, thread, cluster, kind):
    a = sv[SV_N_AGENTS]
    sv[SV_N_AGENTS] += 1
    for f in range(AG_FIELDS):
        ag[a, f] = 0
    ag[a, AG_BLOCK] = block
    ag[a, AG_THREAD] = thread
    ag[a, AG_CLUSTER] = cluster
    ag[a, AG_KIND] = kind
    ag[a, AG_BLOCKED] = -1
    ag[a, AG_BAROBJ] = -1
    ag[a, AG_BARGEN] = -1
    for lvl in range(N_LEVELS):
        ag[a, AG_FREL_BASE + lvl] = -1
    ag[a, AG_FENCES] = -1
    ag[a, AG_CP_OPEN] = 1
    ag[a, AG_BULK_OPEN] = 1
    ag[a, AG_CP_AGENT] = -1
    ag[a, AG_BULK_AGENT] = -1
    ag[a, AG_ISSUER] = -1
    ag[a, AG_WEAK_AGENT] = -1
    ag[a, AG_BARFENCE] = 7
    return a


@jit_inline
def known(ag, snaps, arena_a, arena_e, a, u):
    """What thread agent ``a`` knows of agent ``u``'s epoch."""
    if u == a:
        return ag[a, AG_EPOCH]
    return lookup(snaps, arena_a, arena_e, ag[a, AG_BASE], u)


@jit_leaf
def set_base(ag, snaps, sv, a, snap):
    incref(snaps, snap)
    decref(snaps, sv, ag[a, AG_BASE])
    ag[a, AG_BASE] = snap


@jit_leaf
def join_into(ag, snaps, arena_a, arena_e, sv, a, other, agent, epoch):
    """Agent ``a`` acquires the clock value (other, agent, epoch)."""
    snap = merge(snaps, arena_a, arena_e, sv, ag[a, AG_BASE], other, agent, epoch)
    set_base(ag, snaps, sv, a, snap)


@jit_inline
def reach(ag, x, y):
    """The narrowest scope containing thread agents ``x`` and ``y`` (the
    reference's ``reach``): an operation of scope s contains both when s >= it."""
    if ag[x, AG_BLOCK] == ag[y, AG_BLOCK]:
        tx = ag[x, AG_THREAD]
        ty = ag[y, AG_THREAD]
        if tx == ty:
            return O.SCOPE_THREAD
        return O.SCOPE_WARP if tx // 32 == ty // 32 else O.SCOPE_BLOCK
    return O.SCOPE_CLUSTER if ag[x, AG_CLUSTER] == ag[y, AG_CLUSTER] else O.SCOPE_DEVICE


@jit_leaf
def proxy_fenced(ag, fen, w, w_epoch, known_epoch):
    """A fence_proxy_async by ``w`` after epoch ``w_epoch`` and at or before
    ``known_epoch`` (what the later access knows of ``w``)."""
    f = ag[w, AG_FENCES]
    while f >= 0:
        e = fen[f, FN_EPOCH]
        if e <= known_epoch:
            return e > w_epoch
        f = fen[f, FN_NEXT]
    return False


@jit_inline
def retiring_wait(ag, fen, ca, group):
    """The log entry of the wait that retired ``group`` of cp.async agent
    ``ca`` (the oldest with FN_VAL >= group), or -1 when none has."""
    found = np.int64(-1)
    f = ag[ca, AG_FENCES]
    while f >= 0 and fen[f, FN_VAL] >= group:
        found = f
        f = fen[f, FN_NEXT]
    return found


@jit_inline
def phase_entry(ag, fen, ta, k):
    """The log entry of the phase that load ``k`` of TMA agent ``ta`` completes."""
    f = ag[ta, AG_FENCES]
    while f >= 0 and fen[f, FN_EPOCH] > k:
        f = fen[f, FN_NEXT]
    return f


@jit_inline
def copy_retired(ag, fen, u, k):
    """Copy ``k`` of async agent ``u`` is retired: its group retired by a wait
    of its issuer, or (a tma_load) its phase returned by some mbar_wait."""
    if ag[u, AG_RETIRED] >= k:  # (never for a TMA agent: its AG_RETIRED stays 0)
        return True
    if ag[u, AG_KIND] == KIND_TMA:
        f = phase_entry(ag, fen, u, k)
        return f >= 0 and fen[f, FN_AUX] == 1
    return False


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


@jit_leaf
def offer(cand, kind, ag, nodes, cold, fen, x, pw, aw, space, owner, lo_addr, hi_addr, t):
    """Keep node ``x`` as the candidate for ``kind`` when it ranks higher:
    by row, then a write before a read, then (for the later side) a write.
    ``t``: the thread whose clock orders the later access."""
    row = cold[x, K_ROW]
    if cand[kind, C_VALID] == 1:
        r0, p0, a0 = cand[kind, C_PREV_ROW], cand[kind, C_PW], cand[kind, C_AW]
        if row < r0 or (row == r0 and (pw < p0 or (pw == p0 and aw <= a0))):
            return
    info = nodes[x, N_INFO]
    xa = nodes[x, N_AGENT]
    cand[kind, C_VALID] = 1
    cand[kind, C_PREV_ROW] = row
    cand[kind, C_PW] = pw
    cand[kind, C_AW] = aw
    cand[kind, C_PREV_BLOCK] = ag[xa, AG_BLOCK]
    cand[kind, C_PREV_THREAD] = ag[xa, AG_THREAD]
    cand[kind, C_PREV_OP] = info & I_OP_MASK
    cand[kind, C_PREV_TS] = cold[x, K_TS]
    cand[kind, C_PREV_SITE] = (cold[x, K_SIZE_SITE] >> 32) & 0xFFFFFFFF
    cand[kind, C_PREV_ASYNC] = 1 if info & I_ASYNC else 0
    cand[kind, C_PREV_BAR] = cold[x, K_BAR]
    cand[kind, C_PREV_BARGEN] = cold[x, K_BARGEN]
    cand[kind, C_SPACE] = space
    cand[kind, C_OWNER] = owner
    xlo = cold[x, K_ADDR]
    xhi = xlo + (cold[x, K_SIZE_SITE] & 0xFFFFFFFF)
    cand[kind, C_LO] = max(xlo, lo_addr)
    cand[kind, C_HI] = min(xhi, hi_addr)
    # What was missing (the reference's ``reason``).
    cand[kind, C_CODE] = 0
    cand[kind, C_AUX] = 0
    cand[kind, C_OBJ] = 0
    if kind == _K_INFLIGHT:
        ck = (info >> I_COPY_SHIFT) & 3
        cand[kind, C_CODE] = ck
        if ck == R.INFLIGHT_TMA_LOAD:
            f = phase_entry(ag, fen, xa, nodes[x, N_EPOCH])
            cand[kind, C_AUX] = fen[f, FN_VAL] & 0xFFFFFFFF
            cand[kind, C_OBJ] = ag[xa, AG_MBAR]
        else:
            cand[kind, C_AUX] = nodes[x, N_EPOCH]
    elif kind == _K_PROXY:
        if info & I_ASYNC:
            cand[kind, C_CODE] = R.PROXY_CP_ASYNC_DEST
            cand[kind, C_AUX] = fen[retiring_wait(ag, fen, xa, nodes[x, N_EPOCH]), FN_AUX]
    elif kind != _K_UNINIT and (info & I_ASYNC) == 0:
        if ag[t, AG_WEAK_AGENT] == xa and ag[t, AG_WEAK_EPOCH] >= nodes[x, N_EPOCH]:
            cand[kind, C_CODE] = R.RACE_WEAK_SYNC
            cand[kind, C_AUX] = ag[t, AG_WEAK_AUX]
            cand[kind, C_OBJ] = ag[t, AG_WEAK_OBJ]
        elif ag[t, AG_BARGEN] >= 0 and (cold[x, K_BARGEN] < 0 or (
                cold[x, K_BAR] == ag[t, AG_BAROBJ] and cold[x, K_BARGEN] < ag[t, AG_BARGEN])) \
                and not ag[t, AG_BARFENCE] & (1 << space):
            cand[kind, C_CODE] = R.RACE_UNFENCED_BARRIER
            cand[kind, C_AUX] = ag[t, AG_BARFENCE]


@jit_leaf
def flush_candidates(cand, find, sv, row, launch, block, thread, op, ts, site, bar, bargen):
    for kind in range(N_KINDS):
        if cand[kind, C_VALID] != 1:
            continue
        cand[kind, C_VALID] = 0
        k = emit(find, sv, kind, row, launch, block, thread, op, ts, site)
        find[k, F_SPACE] = cand[kind, C_SPACE]
        find[k, F_OWNER] = cand[kind, C_OWNER]
        find[k, F_ADDR] = cand[kind, C_LO]
        find[k, F_SIZE] = cand[kind, C_HI] - cand[kind, C_LO]
        find[k, F_BAR_OBJ] = bar
        find[k, F_BAR_GEN] = bargen
        if kind == _K_UNINIT:
            continue
        find[k, F_RANK] = 2 * cand[kind, C_PW] + cand[kind, C_AW]
        find[k, F_PREV_ROW] = cand[kind, C_PREV_ROW]
        find[k, F_PREV_LAUNCH] = launch
        find[k, F_PREV_BLOCK] = cand[kind, C_PREV_BLOCK]
        find[k, F_PREV_THREAD] = cand[kind, C_PREV_THREAD]
        find[k, F_PREV_OP] = cand[kind, C_PREV_OP]
        find[k, F_PREV_TS] = cand[kind, C_PREV_TS]
        find[k, F_PREV_SITE] = cand[kind, C_PREV_SITE]
        find[k, F_PREV_ASYNC] = cand[kind, C_PREV_ASYNC]
        find[k, F_PREV_BAR_OBJ] = cand[kind, C_PREV_BAR]
        find[k, F_PREV_BAR_GEN] = cand[kind, C_PREV_BARGEN]
        find[k, F_CODE] = cand[kind, C_CODE]
        find[k, F_AUX] = cand[kind, C_AUX]
        find[k, F_OBJ] = cand[kind, C_OBJ]


# ---------------------------------------------------------------------------
# One access against shadow memory.

# set_node writes a cold row in this order, whole (store_row_nt).
assert (K_ROW, K_ADDR, K_SIZE_SITE, K_TS, K_BAR, K_BARGEN, K_SHADOW_AGENT, K_SHADOW_EPOCH,
        K_FIELDS) == (0, 1, 2, 3, 4, 5, 6, 7, 8)

@jit_inline
def set_node(nodes, cold, ag, n, row, a, epoch, addr, size, info, ts, site, t):
    """Every field of node ``n`` but its link: the access of agent ``a``
    (ordered by thread ``t``, whose barrier position it records). ``info``
    has no shadow bits: the node starts unshadowed."""
    nodes[n, N_AGENT] = a
    nodes[n, N_EPOCH] = epoch
    nodes[n, N_INFO] = info
    # The cold row is written whole, past the caches (see store_row_nt):
    # a read node's row is rarely read again (only to report it), and a
    # cp.async pipeline writes one per shared read, ~0.5 GB per 10^7 events,
    # which used to evict the lists and slots the next accesses need.
    # K_SHADOW_*: meaningless until a copy sets the node's shadow bits.
    store_row_nt(cold, n, row, addr, (site << 32) | size, ts, ag[t, AG_BAROBJ],
                 ag[t, AG_BARGEN], np.int64(0), np.int64(0))


@jit_inline
def unlink(gran, slot, col, nodes, sv, prev, x, nxt):
    """Take node ``x`` (after ``prev``, -1: the head; followed by ``nxt``)
    out of list ``col`` of ``slot`` and free it."""
    if prev < 0:
        gran[slot, col] = nxt
    else:
        nodes[prev, N_NEXT] = nxt
    pool_free(nodes, sv, SV_NODE_FREE, SV_NODE_USED, x)


# A read that reuses the list head (see ``access``) prunes the rest of a list
# up to this long.
EAGER_PRUNE_MAX = 64


@jit_inline
def prune_reads(ag, snaps, arena_a, arena_e, sv, nodes, gran, slot, first, m, t):
    """Drop, from the read list of ``slot`` after node ``first`` (-1: from
    its head), the bytes ``m`` of every read that thread ``t`` has ordered
    before it; a node left with no bytes is freed. Sets the next doubling
    limit."""
    prev = first
    x = gran[slot, G_READS] if first < 0 else nodes[first, N_NEXT]
    while x >= 0:
        nxt = nodes[x, N_NEXT]
        xinfo = nodes[x, N_INFO]
        xm = (xinfo >> I_MASK_SHIFT) & MASK_ALL
        if xm & m and known(ag, snaps, arena_a, arena_e, t, nodes[x, N_AGENT]) >= \
                nodes[x, N_EPOCH]:
            xm &= ~m
            if xm == 0:
                unlink(gran, slot, G_READS, nodes, sv, prev, x, nxt)
                gran[slot, G_NREADS] -= 1
                x = nxt
                continue
            nodes[x, N_INFO] = (xinfo & ~(MASK_ALL << I_MASK_SHIFT)) | (xm << I_MASK_SHIFT)
        prev = x
        x = nxt
    gran[slot, G_RLIMIT] = max(READ_PRUNE_MIN, 2 * gran[slot, G_NREADS])


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


@jit_inline
def granule_range(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst,
                  region, space, owner, lo_addr, hi_addr, addr, end, a, epoch, t, info, row, ts,
                  site, size, page):
    """Check an access [addr, end) against the lists of the granules of its
    bytes [lo_addr, hi_addr), record it there, and find the uninitialized
    ones; or, when ``page`` is a slot, against a PURE page's lists (one unit,
    bit 0: the whole page; its uninitialized bytes are ``page_uninit``'s).
    Returns (1 when it left a candidate in ``cand``, else 0; the first and
    last uninitialized byte or -1)."""
    found = 0
    is_write = (info & I_WRITE) != 0
    is_atomic = (info & I_ATOMIC) != 0
    is_copy = (info & I_ASYNC) != 0
    is_proxy = (info & I_PROXY) != 0
    reads = not is_write or is_atomic
    scope = (info >> I_SCOPE_SHIFT) & 7
    aw = 1 if is_write else 0
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
            lo = max(lo_addr, base) - base
            hi = min(hi_addr, base + gsize) - base
            m = ((np.int64(1) << hi) - 1) ^ ((np.int64(1) << lo) - 1)
            slot = find_granule(gran, region, g, True, sv, SV_GRAN_COUNT, sv[SV_LAUNCH], pst)
            if reads:
                un = m & ~gran[slot, G_INIT]
                if un and sv[SV_IV_N] > 0:
                    covered = iv_init_mask(ivs, sv[SV_IV_N], iv_region(region), base, un)
                    gran[slot, G_INIT] |= covered
                    un &= ~covered
                if un:
                    uninit_lo, uninit_hi = extend_bytes(un, base, gsize, uninit_lo, uninit_hi)
        # Writes conflict with every access (atomic pairs aside). One pass both
        # checks them and, for a plain write or an atomic, prunes them.
        if is_proxy:
            for b in range(gsize):
                cand[_LAST_ROW, b] = -1
        prunes_writes = is_write and not is_copy
        prev = np.int64(-1)
        x = gran[slot, G_WRITES]
        while x >= 0:
            nxt = nodes[x, N_NEXT]
            xinfo = nodes[x, N_INFO]
            xm = (xinfo >> I_MASK_SHIFT) & MASK_ALL
            if (xinfo >> I_SHADOW_SHIFT) & MASK_ALL and \
                    copy_retired(ag, fen, cold[x, K_SHADOW_AGENT], cold[x, K_SHADOW_EPOCH]):
                # A retired copy that x happens before covers these bytes.
                xm &= ~((xinfo >> I_SHADOW_SHIFT) & MASK_ALL)
                if xm == 0:
                    unlink(gran, slot, G_WRITES, nodes, sv, prev, x, nxt)
                    x = nxt
                    continue
                xinfo = (xinfo & ~(np.int64(MASK_ALL) << I_MASK_SHIFT)) & ~(np.int64(MASK_ALL) << I_SHADOW_SHIFT)
                xinfo |= xm << I_MASK_SHIFT
                nodes[x, N_INFO] = xinfo
            if xm & m:
                xa = nodes[x, N_AGENT]
                if is_proxy:
                    for b in range(gsize):
                        if (xm & m) & (1 << b) and cold[x, K_ROW] > cand[_LAST_ROW, b]:
                            cand[_LAST_ROW, b] = cold[x, K_ROW]
                            cand[_LAST_NODE, b] = x
                x_atomic = (xinfo & I_ATOMIC) != 0 and (xinfo & I_ASYNC) == 0
                ordered = known(ag, snaps, arena_a, arena_e, t, xa) >= nodes[x, N_EPOCH]
                if not ordered:
                    skip = False
                    if is_atomic and x_atomic:
                        xs = (xinfo >> I_SCOPE_SHIFT) & 7
                        skip = min(xs, scope) >= reach(ag, xa, t)
                    if not skip:
                        if (xinfo & I_ASYNC) and not copy_retired(ag, fen, xa, nodes[x, N_EPOCH]):
                            kind = _K_INFLIGHT
                        elif is_write:
                            kind = _K_WAW
                        else:
                            kind = _K_RAW
                        offer(cand, kind, ag, nodes, cold, fen, x, 1, aw, space, owner, addr, end, t)
                        found = 1
                elif prunes_writes and (not is_atomic or (
                        x_atomic and xa == a and ((xinfo >> I_SCOPE_SHIFT) & 7) >= scope)):
                    xm &= ~m
                    if xm == 0:
                        unlink(gran, slot, G_WRITES, nodes, sv, prev, x, nxt)
                        x = nxt
                        continue
                    nodes[x, N_INFO] = (xinfo & ~(MASK_ALL << I_MASK_SHIFT)) | (xm << I_MASK_SHIFT)
                elif is_copy and is_write:
                    cold[x, K_SHADOW_AGENT] = a
                    cold[x, K_SHADOW_EPOCH] = epoch
                    nodes[x, N_INFO] = (xinfo & ~(np.int64(MASK_ALL) << I_SHADOW_SHIFT)) | (
                        (xm & m) << I_SHADOW_SHIFT)
            prev = x
            x = nxt
        if is_proxy:
            for b in range(gsize):
                if not (m & (1 << b)) or cand[_LAST_ROW, b] < 0:
                    continue
                x = cand[_LAST_NODE, b]
                xinfo = nodes[x, N_INFO]
                if xinfo & I_PROXY:
                    continue
                xa = nodes[x, N_AGENT]
                if known(ag, snaps, arena_a, arena_e, t, xa) < nodes[x, N_EPOCH]:
                    continue  # not ordered: reported as a race
                if xinfo & I_ASYNC:
                    # A cp.async destination (the one generic-proxy copy): its
                    # issuer's write, performed at the wait that retired it.
                    w = ag[xa, AG_ISSUER]
                    after = fen[retiring_wait(ag, fen, xa, nodes[x, N_EPOCH]), FN_EPOCH]
                else:
                    w = xa
                    after = nodes[x, N_EPOCH]
                if not proxy_fenced(ag, fen, w, after, known(ag, snaps, arena_a, arena_e, t, w)):
                    offer(cand, _K_PROXY, ag, nodes, cold, fen, x, 1, aw, space, owner, addr, end, t)
                    found = 1
        # Reads conflict with writes.
        if is_write:
            x = gran[slot, G_READS]
            while x >= 0:
                xinfo = nodes[x, N_INFO]
                if ((xinfo >> I_MASK_SHIFT) & MASK_ALL) & m:
                    xa = nodes[x, N_AGENT]
                    if known(ag, snaps, arena_a, arena_e, t, xa) < nodes[x, N_EPOCH]:
                        if (xinfo & I_ASYNC) and not copy_retired(ag, fen, xa, nodes[x, N_EPOCH]):
                            kind = _K_INFLIGHT
                        else:
                            kind = _K_WAR
                        offer(cand, kind, ag, nodes, cold, fen, x, 0, aw, space, owner, addr, end, t)
                        found = 1
                x = nodes[x, N_NEXT]
        # A read prunes the reads it makes redundant, once the list has doubled.
        head_col = G_WRITES if is_write else G_READS
        if not is_write:
            # ... and at once the newest read, when this read covers it and
            # happens after it (the usual case of a variable read again after
            # synchronization): its node is reused, so the list does not grow.
            h = gran[slot, G_READS]
            if h >= 0 and not is_copy:
                hm = (nodes[h, N_INFO] >> I_MASK_SHIFT) & MASK_ALL
                ha = nodes[h, N_AGENT]
                if (hm & ~m) == 0 and known(ag, snaps, arena_a, arena_e, t, ha) >= nodes[h, N_EPOCH]:
                    set_node(nodes, cold, ag, h, row, a, epoch, addr, size,
                             info | (m << I_MASK_SHIFT), ts, site, t)
                    # Another agent's read ordered before this one: most likely
                    # a new generation of readers after a barrier, so the rest
                    # of the old one is redundant now. Dropping it at once keeps
                    # the list one generation long for the next write's scan.
                    # Bounded (EAGER_PRUNE_MAX) so a long list of unordered
                    # readers is not rescanned at every such read.
                    nr = gran[slot, G_NREADS]
                    if ha != a and 1 < nr <= EAGER_PRUNE_MAX:
                        prune_reads(ag, snaps, arena_a, arena_e, sv, nodes, gran, slot, h, m, t)
                        # The old generation's size predicts the new one's:
                        # the next doubling prune waits until the list has
                        # outgrown it (else it would scan a generation of
                        # unordered readers and drop none of them).
                        gran[slot, G_RLIMIT] = max(gran[slot, G_RLIMIT], 2 * nr)
                    continue
            gran[slot, G_NREADS] += 1
            if not is_copy and gran[slot, G_NREADS] > gran[slot, G_RLIMIT]:
                prune_reads(ag, snaps, arena_a, arena_e, sv, nodes, gran, slot, -1, m, t)
        n = pool_alloc(nodes, sv, SV_NODE_TOP, SV_NODE_FREE, SV_NODE_USED)
        nodes[n, N_NEXT] = gran[slot, head_col]
        gran[slot, head_col] = n
        set_node(nodes, cold, ag, n, row, a, epoch, addr, size, info | (m << I_MASK_SHIFT),
                 ts, site, t)
        if is_write and page < 0:  # a page's written bytes go to an init interval
            gran[slot, G_INIT] |= m
    return found, uninit_lo, uninit_hi


# The same as a function of its own, for the rare large accesses
# (``access_pages``): inlined there too, it made the first run's compile of
# the kernels several times longer.
granules = jit_leaf(granule_range.py_func)


@jit_inline
def offer_uninit(cand, space, owner, lo, hi):
    """The first uninitialized range an event reads (``lo``..``hi``, last
    byte included) is its candidate."""
    if lo >= 0 and cand[_K_UNINIT, C_VALID] == 0:
        cand[_K_UNINIT, C_VALID] = 1
        cand[_K_UNINIT, C_SPACE] = space
        cand[_K_UNINIT, C_OWNER] = owner
        cand[_K_UNINIT, C_LO] = lo
        cand[_K_UNINIT, C_HI] = hi + 1
        return 1
    return 0


@jit_leaf
def access(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst,
           region, space, owner, addr, size, a, epoch, t, info, row, ts, site):
    """Check an access by agent ``a`` (epoch ``epoch``; ``t`` is the thread
    whose clock orders it: ``a`` itself, or the issuer of a copy) and record
    it. ``info`` carries op, write/atomic/async/proxy bits and scope.
    Returns 1 when it left a candidate in ``cand`` (the caller then flushes
    them), else 0: most accesses find nothing and skip the flush.

    ``replay`` does the same with ``granule_range`` inlined (see there):
    here it is called, as inlining it into this function too made the first
    run's compile of the kernels several times longer."""
    if size <= 0:
        return 0
    if covers_page(sv, addr, size):
        return access_pages(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs,
                            pst, region, space, owner, addr, size, a, epoch, t, info, row, ts,
                            site)
    split_pages_of(sv, nodes, cold, gran, pst, region, addr, size)
    found, lo, hi = granules(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs,
                             pst, region, space, owner, addr, addr + size, addr, addr + size, a,
                             epoch, t, info, row, ts, site, size, np.int64(-1))
    return found | offer_uninit(cand, space, owner, lo, hi)


@jit_inline
def covers_page(sv, addr, size):
    """Whether [addr, addr + size) covers a whole page."""
    ps = sv[SV_PAGE_SHIFT]
    return size >= (np.int64(1) << ps) and ((addr + size) >> ps) > ((addr - 1) >> ps) + 1


@jit_inline
def split_pages_of(sv, nodes, cold, gran, pst, region, addr, size):
    """Before a granule path over [addr, addr + size): split the PURE pages
    it touches, in a launch that has any."""
    if sv[SV_PAGE_LAUNCH] == sv[SV_LAUNCH]:
        ps = sv[SV_PAGE_SHIFT]
        split_pages(sv, nodes, cold, gran, pst, region, addr >> ps, (addr + size - 1) >> ps)


# ---------------------------------------------------------------------------
# Pages (see shadow.PAGES): large accesses.
@jit_inline
def page_of(gran, sv, region, page):
    """The slot of ``region``'s page ``page`` when it is this launch's, else -1."""
    s = probe(gran, region | PAGE_REGION, page)
    if s >= 0 and gran[s, G_LAUNCH] != sv[SV_LAUNCH]:
        return -1
    return s


@jit_leaf
def copy_list(nodes, cold, gran, sv, src, slot, col, m):
    """Append copies of the nodes of list ``src`` (a page's) to list ``col``
    of granule ``slot``, in order, standing for its bytes ``m``."""
    tail = np.int64(-1)
    x = gran[slot, col]
    while x >= 0:
        tail = x
        x = nodes[x, N_NEXT]
    x = src
    while x >= 0:
        n = pool_alloc(nodes, sv, SV_NODE_TOP, SV_NODE_FREE, SV_NODE_USED)
        info = nodes[x, N_INFO] & ~(np.int64(MASK_ALL) << I_MASK_SHIFT)
        info |= m << I_MASK_SHIFT
        if (info >> I_SHADOW_SHIFT) & MASK_ALL:
            info = (info & ~(np.int64(MASK_ALL) << I_SHADOW_SHIFT)) | (m << I_SHADOW_SHIFT)
        nodes[n, N_AGENT] = nodes[x, N_AGENT]
        nodes[n, N_EPOCH] = nodes[x, N_EPOCH]
        nodes[n, N_INFO] = info
        nodes[n, N_NEXT] = -1
        for f in range(K_FIELDS):
            cold[n, f] = cold[x, f]
        if tail < 0:
            gran[slot, col] = n
        else:
            nodes[tail, N_NEXT] = n
        tail = n
        x = nodes[x, N_NEXT]


@jit_leaf
def free_list(nodes, sv, x):
    while x >= 0:
        nxt = nodes[x, N_NEXT]
        pool_free(nodes, sv, SV_NODE_FREE, SV_NODE_USED, x)
        x = nxt


@jit_leaf
def split_pages(sv, nodes, cold, gran, pst, region, p0, p1):
    """Split every PURE page of ``region`` from ``p0`` to ``p1``: its nodes
    go to each of its granules, which hold the history from now on."""
    gs = granule_shift(region)
    per = np.int64(1) << (sv[SV_PAGE_SHIFT] - gs)
    full = (np.int64(1) << (np.int64(1) << gs)) - 1
    for p in range(p0, p1 + 1):
        s = page_of(gran, sv, region, p)
        if s < 0 or gran[s, G_INIT] == PAGE_SPLIT:
            continue
        for g in range(p * per, (p + 1) * per):
            slot = find_granule(gran, region, g, True, sv, SV_GRAN_COUNT, sv[SV_LAUNCH], pst)
            copy_list(nodes, cold, gran, sv, gran[s, G_WRITES], slot, G_WRITES, full)
            copy_list(nodes, cold, gran, sv, gran[s, G_READS], slot, G_READS, full)
            gran[slot, G_NREADS] += gran[s, G_NREADS]
            gran[slot, G_RLIMIT] = max(gran[slot, G_RLIMIT], gran[s, G_RLIMIT])
        free_list(nodes, sv, gran[s, G_WRITES])
        free_list(nodes, sv, gran[s, G_READS])
        gran[s, G_WRITES] = -1
        gran[s, G_READS] = -1
        gran[s, G_NREADS] = 0
        gran[s, G_INIT] = PAGE_SPLIT


@jit_leaf
def page_uninit(gran, sv, ivs, region, lo_addr, hi_addr):
    """The first and last uninitialized byte of [lo_addr, hi_addr) (a page
    no access of this launch but large ones has touched), or -1: from the
    init intervals, and where they leave a gap, from the granules' init bits
    (a global granule keeps them across launches)."""
    ivr = iv_region(region)
    n = sv[SV_IV_N]
    if n > 0 and iv_covers(ivs, n, ivr, lo_addr, hi_addr):
        return np.int64(-1), np.int64(-1)
    gs = granule_shift(region)
    gsize = np.int64(1) << gs
    full = (np.int64(1) << gsize) - 1
    glob = is_global(region)
    first = np.int64(-1)
    last = np.int64(-1)
    for g in range(lo_addr >> gs, hi_addr >> gs):
        base = g << gs
        init = np.int64(0)
        s = probe(gran, region, g)
        if s >= 0 and (glob or gran[s, G_LAUNCH] == sv[SV_LAUNCH]):
            init = gran[s, G_INIT]
        if glob and sv[SV_GLOBAL_SIZES] & (GS_NARROW if region else GS_WIDE):
            init |= other_size_init(gran, region, g)
        un = full & ~init
        if un and n > 0:
            un &= ~iv_init_mask(ivs, n, ivr, base, un)
        if un:
            first, last = extend_bytes(un, base, gsize, first, last)
    return first, last


@jit_leaf
def access_pages(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst,
                 region, space, owner, addr, size, a, epoch, t, info, row, ts, site):
    """``access`` of a range that covers at least one whole page: the whole
    pages each as one unit, the partial pages at its ends granule by
    granule."""
    launch = sv[SV_LAUNCH]
    ps = sv[SV_PAGE_SHIFT]
    end = addr + size
    p0 = (addr + (np.int64(1) << ps) - 1) >> ps
    p1 = end >> ps
    reads = (info & I_WRITE) == 0 or (info & I_ATOMIC) != 0
    found = 0
    ulo = np.int64(-1)
    uhi = np.int64(-1)
    for part in range(3):  # the head, the whole pages, the tail: in address order
        if part == 1:
            for p in range(p0, p1):
                plo = p << ps
                phi = plo + (np.int64(1) << ps)
                s = page_of(gran, sv, region, p)
                if s < 0:
                    s = find_granule(gran, region | PAGE_REGION, p, True, sv, SV_GRAN_COUNT,
                                     launch, pst)
                    if pst[page_stamp_index(region, p)] == launch:
                        gran[s, G_INIT] = PAGE_SPLIT  # a granule may have lists
                    else:
                        sv[SV_PAGE_LAUNCH] = launch
                if gran[s, G_INIT] == PAGE_SPLIT:
                    f, lo, hi = granules(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran,
                                         fen, cand, ivs, pst, region, space, owner, plo, phi,
                                         addr, end, a, epoch, t, info, row, ts, site, size,
                                         np.int64(-1))
                else:
                    lo = np.int64(-1)
                    hi = np.int64(-1)
                    if reads:
                        lo, hi = page_uninit(gran, sv, ivs, region, plo, phi)
                    f, _, _ = granules(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen,
                                       cand, ivs, pst, region, space, owner, plo, phi, addr, end,
                                       a, epoch, t, info, row, ts, site, size, s)
                found |= f
                if lo >= 0:
                    if ulo < 0:
                        ulo = lo
                    uhi = hi
            if info & I_WRITE:
                sv[SV_IV_N] = iv_add(ivs, sv[SV_IV_N], iv_region(region), p0 << ps, p1 << ps)
            continue
        lo_addr = addr if part == 0 else p1 << ps
        hi_addr = p0 << ps if part == 0 else end
        if lo_addr >= hi_addr:
            continue
        split_pages_of(sv, nodes, cold, gran, pst, region, lo_addr, hi_addr - lo_addr)
        f, lo, hi = granules(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand,
                             ivs, pst, region, space, owner, lo_addr, hi_addr, addr, end, a,
                             epoch, t, info, row, ts, site, size, np.int64(-1))
        found |= f
        if lo >= 0:
            if ulo < 0:
                ulo = lo
            uhi = hi
    return found | offer_uninit(cand, space, owner, ulo, uhi)


@jit_inline
def list_length(nodes, x):
    k = np.int64(0)
    while x >= 0:
        k += 1
        x = nodes[x, N_NEXT]
    return k


@jit_leaf
def range_need(gran, nodes, sv, pst, region, addr, size):
    """(granule slots, nodes) an access of [addr, addr + size) in ``region``
    may add, pages counted (see ``access_pages`` and ``split_pages``)."""
    if size <= 0:
        return np.int64(0), np.int64(0)
    launch = sv[SV_LAUNCH]
    ps = sv[SV_PAGE_SHIFT]
    gs = granule_shift(region)
    per = np.int64(1) << (ps - gs)
    end = addr + size
    p0 = (addr + (np.int64(1) << ps) - 1) >> ps
    p1 = end >> ps
    g = np.int64(0)
    n = np.int64(0)
    if p1 > p0:
        for p in range(p0, p1):
            s = page_of(gran, sv, region, p)
            if s < 0:
                g += 1
                n += 1
                if pst[page_stamp_index(region, p)] == launch:
                    g += per
                    n += per
            elif gran[s, G_INIT] == PAGE_SPLIT:
                g += per
                n += per
            else:
                n += 1
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
        if sv[SV_PAGE_LAUNCH] == launch:  # pure pages it splits
            for p in range(lo >> ps, ((hi - 1) >> ps) + 1):
                s = page_of(gran, sv, region, p)
                if s >= 0 and gran[s, G_INIT] != PAGE_SPLIT:
                    g += per
                    n += per * (list_length(nodes, gran[s, G_WRITES]) +
                                list_length(nodes, gran[s, G_READS]))
    return g, n


@jit_leaf
def page_room(op, space, addr, size, space2, addr2, peer, block, a, sv, nodes, gran, ivs, pst):
    """``replay_room`` for an access or copy that covers a whole page or
    meets a launch with pages: sets ``SV_GROW`` and returns False when the
    pools lack the room it may need."""
    g, n = range_need(gran, nodes, sv, pst, region_of(space, peer, a, sv), addr, size)
    if op == O.CP_ASYNC or op == O.TMA_LOAD or op == O.TMA_STORE:
        g2, n2 = range_need(gran, nodes, sv, pst, region_of(space2, block, a, sv), addr2, size)
        g += g2
        n += n2
    grow = 0
    if sv[SV_NODE_USED] + n > nodes.shape[0]:
        grow |= GR_NODES
    if 2 * (sv[SV_GRAN_COUNT] + g) > gran.shape[0]:
        grow |= GR_GRAN
    if sv[SV_IV_N] + 2 > ivs.shape[0]:
        grow |= GR_IV
    sv[SV_GROW] = grow
    return grow == 0


@jit_inline
def region_of(space, owner_block, agent, sv):
    if space == O.SPACE_GLOBAL:
        return sv[SV_GLOBAL_REGION]
    if space == O.SPACE_SHARED:
        return sv[SV_SHARED_REGION] | owner_block
    return REGION_LOCAL | agent


@jit_leaf
def async_agent(ag, sv, async_map, t, lane, key):
    a = hm_get(async_map, t, np.int64(lane), key)
    if a < 0:
        a = new_agent(ag, sv, ag[t, AG_BLOCK], ag[t, AG_THREAD], ag[t, AG_CLUSTER], lane)
        ag[a, AG_ISSUER] = t
        hm_put(async_map, t, np.int64(lane), key, a)
    return a


@jit_leaf
def copy(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst, t, ca, epoch,
         proxy_bits, copy_kind, row, ts, site, op, space, addr, size, space2, addr2, block, peer):
    """A copy's source read then destination write, by copy agent ``ca``.
    Returns 1 when either left a candidate in ``cand`` (see ``access``)."""
    info = op | I_ASYNC | proxy_bits | (copy_kind << I_COPY_SHIFT)
    found = 0
    if sv[SV_VIEW] & (1 << space2):
        sowner = block if space2 == O.SPACE_SHARED else (ag[t, AG_THREAD] if space2 == O.SPACE_LOCAL else 0)
        found = access(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst,
                       region_of(space2, block, t, sv), space2, sowner, addr2, size, ca, epoch, t,
                       info, row, ts, site)
    if sv[SV_VIEW] & (1 << space):
        downer = peer if space == O.SPACE_SHARED else (ag[t, AG_THREAD] if space == O.SPACE_LOCAL else 0)
        found |= access(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst,
                        region_of(space, peer, t, sv), space, downer, addr, size, ca, epoch, t,
                        info | I_WRITE, row, ts, site)
    return found


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


@jit_leaf
def misuse(find, sv, ag, a, code, row, launch, block, thread, op, ts, site, peer, obj):
    k = emit(find, sv, _K_MBMIS, row, launch, block, thread, op, ts, site)
    find[k, F_SPACE] = O.SPACE_SHARED
    find[k, F_OWNER] = peer
    find[k, F_ADDR] = obj
    find[k, F_SIZE] = 8
    find[k, F_OBJ] = obj
    find[k, F_CODE] = code
    find[k, F_BAR_OBJ] = ag[a, AG_BAROBJ]
    find[k, F_BAR_GEN] = ag[a, AG_BARGEN]
    return k


@jit_leaf
def complete_phase(mbs, m, arr, ag, sv, snaps, arena_a, arena_e, scratch, touched, cvs, find, a,
                   row, launch, block, thread, op, ts, site, peer, obj):
    if mbs[m, MB_PENDING] > 0 or mbs[m, MB_TX] > 0:
        return
    if mbs[m, MB_TX] < 0:
        misuse(find, sv, ag, a, R.MBAR_TX_UNDERFLOW, row, launch, block, thread, op, ts, site,
               peer, obj)
    head = mbs[m, MB_ARRIVALS]
    snap = join_arrivals(arr, sv, snaps, arena_a, arena_e, head, scratch, touched, cvs)
    col = MB_DONE0 + (mbs[m, MB_PHASE] & 1)
    incref(snaps, snap)
    if mbs[m, col] >= 0:
        decref(snaps, sv, mbs[m, col])
    mbs[m, col] = snap
    # The phase's tma_loads wait, per parity, for a wait to retire them; the
    # loads of an older phase of that parity nobody waited on stay in flight.
    tcol = MB_TMA0 + (mbs[m, MB_PHASE] & 1)
    free_arrivals(arr, sv, snaps, mbs[m, tcol])
    mbs[m, tcol] = -1
    k = head
    while k >= 0:
        nxt = arr[k, AR_NEXT]
        if arr[k, AR_FLAG] == ARF_TMA:
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


@jit_leaf
def sig_knows(snaps, arena_a, arena_e, sigs, s, u):
    """What signal ``s``'s clock knows of agent ``u``."""
    if u == sigs[s, SG_AGENT]:
        return sigs[s, SG_EPOCH]
    return lookup(snaps, arena_a, arena_e, sigs[s, SG_BASE], u)


@jit_leaf
def sync_alias(ag, snaps, arena_a, arena_e, sv, sigs, fq, q, pairs, edges, find, cons, ncons,
               a, epoch, row, launch, block, thread, op, ts, site, obj):
    """The reference's ``sync_alias`` rule over consumed signals ``cons``."""
    warn = np.int64(-1)
    for c in range(ncons):
        s = cons[c]
        if sigs[s, SG_LAUNCH] != launch:
            continue
        p = fq[q, FQ_PAIRS]
        while p >= 0:
            if pairs[p, PR_S_SITE] != sigs[s, SG_SITE] and pairs[p, PR_W_SITE] != site and \
                    pairs[p, PR_S_LAUNCH] == launch:
                w1 = sig_knows(snaps, arena_a, arena_e, sigs, s, pairs[p, PR_W_AGENT]) >= \
                    pairs[p, PR_W_EPOCH]
                s1 = sig_knows(snaps, arena_a, arena_e, sigs, s, pairs[p, PR_S_AGENT]) >= \
                    pairs[p, PR_S_EPOCH]
                if not w1 and not s1 and (warn < 0 or pairs[p, PR_S_ROW] > pairs[warn, PR_S_ROW]):
                    warn = p
            p = pairs[p, PR_NEXT]
    for c in range(ncons):
        s = cons[c]
        p = sv[SV_PR_TOP]
        sv[SV_PR_TOP] += 1
        pairs[p, PR_NEXT] = fq[q, FQ_PAIRS]
        fq[q, FQ_PAIRS] = p
        pairs[p, PR_S_ROW] = sigs[s, SG_ROW]
        pairs[p, PR_S_SITE] = sigs[s, SG_SITE]
        pairs[p, PR_S_AGENT] = sigs[s, SG_AGENT]
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
            if is_foreign(edges, fq[q, FQ_EDGES], sigs[s, SG_SITE], site) and \
                    (pick < 0 or sigs[s, SG_ROW] > sigs[pick, SG_ROW]):
                pick = s
        if pick < 0:
            for c in range(ncons):
                s = cons[c]
                if pick < 0 or sigs[s, SG_ROW] > sigs[pick, SG_ROW]:
                    pick = s
        k = emit(find, sv, O.K_SYNC_ALIAS, row, launch, block, thread, op, ts, site)
        set_prev(find, k, sigs[pick, SG_ROW], sigs[pick, SG_LAUNCH], sigs[pick, SG_BLOCK],
                 sigs[pick, SG_THREAD], O.SIGNAL, sigs[pick, SG_TS], sigs[pick, SG_SITE])
        find[k, F_OBJ] = obj
        find[k, F_CODE] = R.ALIAS_CROSSED
        find[k, F_BAR_OBJ] = ag[a, AG_BAROBJ]
        find[k, F_BAR_GEN] = ag[a, AG_BARGEN]
    elif warn >= 0:
        k = emit(find, sv, O.K_SYNC_ALIAS, row, launch, block, thread, op, ts, site)
        find[k, F_SEVERITY] = _WARNING
        set_prev(find, k, pairs[warn, PR_S_ROW], pairs[warn, PR_S_LAUNCH], pairs[warn, PR_S_BLOCK],
                 pairs[warn, PR_S_THREAD], O.SIGNAL, pairs[warn, PR_S_TS], pairs[warn, PR_S_SITE])
        find[k, F_OBJ] = obj
        find[k, F_CODE] = R.ALIAS_MAY_CROSS
        find[k, F_BAR_OBJ] = ag[a, AG_BAROBJ]
        find[k, F_BAR_GEN] = ag[a, AG_BARGEN]


@jit_leaf
def is_foreign(edges, head, ssite, wsite):
    """Signal site ``ssite`` has fed a wait site other than ``wsite``."""
    e = head
    while e >= 0:
        if edges[e, ED_S] == ssite and edges[e, ED_W] != wsite:
            return True
        e = edges[e, ED_NEXT]
    return False


# ---------------------------------------------------------------------------
@jit_leaf
def acquire_atomic(ag, snaps, arena_a, arena_e, sv, atom_map, rels, scratch, touched, cvs, a,
                   region, addr, sem, scope):
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
                    snap = merge(snaps, arena_a, arena_e, sv, ag[a, lvl], rels[r, RL_BASE], u,
                                 rels[r, RL_EPOCH])
                    incref(snaps, snap)
                    decref(snaps, sv, ag[a, lvl])
                    ag[a, lvl] = snap
            # The newest release read in vain (ties: the record made last,
            # met first here; the reference meets it last).
            if (not acq or how == R.WEAK_SCOPE) and (
                    not weak or rels[r, RL_EPOCH] > ag[a, AG_WEAK_EPOCH]):
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
def release_atomic(ag, snaps, arena_a, arena_e, sv, atom_map, rels, a, region, addr, scope,
                   base, epoch):
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


@jit_leaf
def consume_signals(ag, snaps, arena_a, arena_e, sv, sigs, fq, q, pairs, edges, find, scratch,
                    touched, cvs, a, epoch, need, row, launch, block, thread, op, ts, site, obj):
    """A wait of ``a`` takes ``need`` signals from flag queue ``q`` in FIFO
    order and joins their clocks (``cvs``: a row per signal record taken,
    at most the live records)."""
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
        cvs[m, CV_BASE] = sigs[s, SG_BASE]
        cvs[m, CV_AGENT] = sigs[s, SG_AGENT]
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
    snap = merge_many(snaps, arena_a, arena_e, sv, cvs, m, scratch, touched)
    set_base(ag, snaps, sv, a, snap)
    sync_alias(ag, snaps, arena_a, arena_e, sv, sigs, fq, q, pairs, edges, find, cvs[:, CV_CONS],
               ncons, a, epoch, row, launch, block, thread, op, ts, site, obj)
    # Consumed signals go only after the merge has read their clocks.
    for p in range(nused):
        decref(snaps, sv, sigs[cvs[p, CV_USED], SG_BASE])
        pool_free(sigs, sv, SV_SIG_FREE, SV_SIG_USED, cvs[p, CV_USED])


@jit_inline
def prefetch_ahead(op_c, addr_c, size_c, gpos, k, gran, nodes, cold, gregion):
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
        prefetch_lists(gran, nodes, cold, gregion, np.int64(addr_c[e]), np.int64(size_c[e]),
                       np.int64(op_c[e]) == O.READ)


# Above this many agents the agent table outgrows the caches, and an access
# prefetches the table row of the event PF_FAR ahead (tiled_wide: 262,144
# agents); below, the ~22 instructions a prefetch costs buy nothing.
AGENT_PREFETCH_MIN = 8192


def global_accesses(batch) -> np.ndarray:
    """Rows of ``batch`` (0-based) that are plain or atomic accesses to global
    memory: the events whose shadow is worth prefetching."""
    c = batch.cols
    rows = np.flatnonzero((c["op"] <= O.ATOMIC) & (c["space"] == O.SPACE_GLOBAL))
    return rows.astype(np.int64, copy=False)  # already int64 where intp is


# Arena entries replay keeps free per event, per agent: a merge writes at most
# agents + 1 (see clocks.merge), merge_many as many, and an event makes at
# most two joins; the rest is headroom (it was 3 * agents + 1 per merge when
# merges flattened their delta inputs first).
ARENA_NEED = 8


# Findings one event may emit: at most one per hazard kind.
EVENT_FINDINGS = 16
assert N_KINDS <= EVENT_FINDINGS

# A plain read or write of at most PLAIN_MAX bytes takes at most PLAIN_NG
# nodes and granules (4-byte granules: an upper bound), at most
# EVENT_FINDINGS findings, and nothing from the other pools; a new agent
# resets the budget, so the agent tables' margins (4 agents) cover it.
PLAIN_MAX = 16
PLAIN_NG = 2 * ((PLAIN_MAX >> GRANULE_SHIFT) + 2)


@jit_inline
def replay_room(op, size, sv, ag, agent_map, async_map, snaps, arena_a, nodes, gran, gens, arr,
                sigs, fq, mbs, rels, fen, ivs, find, pairs, edges, bar_map, mb_map, flag_map,
                lock_map, atom_map, arg):
    """Room for the worst one event can need, checked before it touches
    anything. Returns -1 after setting ``SV_GROW`` to the pools to grow, else
    how many small plain accesses after this one (by known agents, with no
    other event between) are sure to find room without checking."""
    grow = 0
    na = sv[SV_N_AGENTS]
    if na + 4 > ag.shape[0]:
        grow |= GR_AGENTS
    if sv[SV_SNAP_N] + 16 > snaps.shape[0]:  # ids an event may take, free list or not
        grow |= GR_SNAPS
    need = ARENA_NEED * (na + 8)
    if arena_a.shape[0] - sv[SV_ARENA_TOP] < need:
        grow |= GR_ARENA  # the driver compacts first (compact allocates)
    # Granules (and nodes) this event may add: accesses and copies only; a
    # large init goes to the interval list instead.
    ng = 0
    # An access that covers a whole page, or any in a launch with pages,
    # has its own check (page_room), once its agent is known.
    if op == O.INIT and size < INIT_INTERVAL_MIN or size < (np.int64(1) << sv[SV_PAGE_SHIFT]) and (
            op <= O.ATOMIC or op == O.CP_ASYNC or op == O.TMA_LOAD or op == O.TMA_STORE):
        ng = 2 * ((size >> GRANULE_SHIFT) + 2)  # 4-byte granules: an upper bound
    if sv[SV_NODE_USED] + ng > nodes.shape[0]:
        grow |= GR_NODES
    if 2 * (sv[SV_GRAN_COUNT] + ng) > gran.shape[0]:
        grow |= GR_GRAN
    if sv[SV_NFIND] + EVENT_FINDINGS > find.shape[0]:
        grow |= GR_FIND
    if 2 * (na + 4) > agent_map.shape[0] or 2 * (na + 4) > async_map.shape[0]:
        grow |= GR_AMAP
    if op > O.WRITE:  # a plain access needs none of the synchronization tables
        if sv[SV_GEN_N] + 1 > gens.shape[0]:
            grow |= GR_GENS
        if sv[SV_ARR_USED] + 4 > arr.shape[0]:
            grow |= GR_ARR
        if sv[SV_SIG_USED] + 2 > sigs.shape[0]:
            grow |= GR_SIG
        if sv[SV_FQ_N] + 1 > fq.shape[0]:
            grow |= GR_FQ
        if sv[SV_MB_N] + 1 > mbs.shape[0]:
            grow |= GR_MB
        if sv[SV_AR_USED] + N_LEVELS + 1 > rels.shape[0]:  # a relaxed atomic: a record per level
            grow |= GR_RL
        if sv[SV_FEN_TOP] + 1 > fen.shape[0]:
            grow |= GR_FEN
        if sv[SV_IV_N] + 2 > ivs.shape[0]:
            grow |= GR_IV
        if op == O.WAIT:
            # A pairing per signal record taken: at most the live records.
            wneed = min(max(arg, 1), sv[SV_SIG_USED]) + 2
            if sv[SV_PR_TOP] + wneed > pairs.shape[0]:
                grow |= GR_PR
            if sv[SV_ED_TOP] + wneed > edges.shape[0]:
                grow |= GR_ED
        if 2 * (sv[SV_GEN_N] + 2) > bar_map.shape[0]:
            grow |= GR_BMAP
        if 2 * (sv[SV_MB_N] + 2) > mb_map.shape[0]:
            grow |= GR_MMAP
        if 2 * (sv[SV_FQ_N] + 2) > flag_map.shape[0]:
            grow |= GR_FMAP
        if 2 * (sv[SV_LOCK_N] + 2) > lock_map.shape[0]:
            grow |= GR_LMAP
        if 2 * (sv[SV_ATOM_N] + 2) > atom_map.shape[0]:
            grow |= GR_XMAP
    if grow:
        sv[SV_GROW] = grow
        return -1
    if op > O.WRITE or size > PLAIN_MAX or sv[SV_PAGE_LAUNCH] == sv[SV_LAUNCH]:
        return 0
    return max(min((nodes.shape[0] - sv[SV_NODE_USED]) // PLAIN_NG,
                   (gran.shape[0] // 2 - sv[SV_GRAN_COUNT]) // PLAIN_NG,
                   (find.shape[0] - sv[SV_NFIND]) // EVENT_FINDINGS) - 1, 0)


@jit_inline
def _agent_is(ag, sv, a, block, thread):
    return 0 <= a < sv[SV_N_AGENTS] and ag[a, AG_THREAD] == thread and \
        ag[a, AG_BLOCK] == block and ag[a, AG_KIND] == KIND_THREAD


@jit_inline
def thread_agent(ag, sv, agent_map, block, thread, last_a, last_block, last_thread):
    """The agent of (block, thread), or -1 when it has none yet. A block's
    threads mostly appear in order and get consecutive agents on their first
    event, so the agent is usually the last event's (``last_a``, of
    ``last_block`` and ``last_thread``) plus the difference of their
    threads: verified against its row, which the event reads next anyway,
    instead of a probe of the agent map."""
    if block == last_block:
        d = thread - last_thread
        a = last_a + d
        if _agent_is(ag, sv, a, block, thread):
            return a
        # Threads that each issued a cp.async (or a bulk copy) at their first
        # event made their copy agent next: their agents are two apart. A
        # probe instead missed the caches at every event of the pipeline
        # benchmark (its agent map is ~1 MB, visited in no useful order).
        a += d
        if _agent_is(ag, sv, a, block, thread):
            return a
    return hm_get(agent_map, block, thread, 0)


# ``replay`` allocates nothing (the joins use the ``cvs`` workspace; clock
# compaction, which sorts, runs in the driver), so it is compiled without
# NRT and the access kernel can be inlined into it. Measured on tiled 10^7,
# kernel only, alternating old and new: ~2.5 s -> ~1.5 s.
@jit_leaf
def replay(ts_c, op_c, launch_c, block_c, thread_c, space_c, addr_c, size_c, addr2_c, space2_c,
           peer_c, cluster_c, obj_c, arg_c, scope_c, sem_c, proxy_c, site_c, fence_c, row0, start,
           sv, ag, agent_map, async_map, snaps, arena_a, arena_e, scratch, touched,
           nodes, cold, gran, gens, bar_map, arr, sigs, flag_map, fq, mbs, mb_map, lock_map,
           rels, atom_map, fen, find, cand, ivs, pst, pairs, edges, cvs, gpos):
    n = op_c.shape[0]
    gk = np.searchsorted(gpos, start)  # gpos[gk]: the next global access
    budget = np.int64(0)  # small plain accesses that need no room check (replay_room)
    last_a = np.int64(-1)  # the agent of the last event, and its block and thread
    last_block = np.int64(-1)
    last_thread = np.int64(0)
    for i in range(start, n):
        row = row0 + i
        op = np.int64(op_c[i])
        launch = np.int64(launch_c[i])
        # -- a new launch: the driver closes the old one first.
        if launch != sv[SV_LAUNCH]:
            if launch < sv[SV_LAUNCH]:
                sv[SV_ERR_A] = launch
                sv[SV_ERR_B] = sv[SV_LAUNCH]
                return E_LAUNCH_ORDER, i
            return NEW_LAUNCH, i
        size = np.int64(size_c[i])
        # -- room for the worst this event can need, before touching anything.
        # A run of small plain accesses by known agents draws on a budget
        # instead (see PLAIN_NG): the full check of every pool, at every
        # event, was ~7% of the instructions of a tiled event.
        if budget > 0 and op <= O.WRITE and size <= PLAIN_MAX:
            budget -= 1
        else:
            budget = replay_room(op, size, sv, ag, agent_map, async_map, snaps, arena_a, nodes,
                                 gran, gens, arr, sigs, fq, mbs, rels, fen, ivs, find, pairs,
                                 edges, bar_map, mb_map, flag_map, lock_map, atom_map,
                                 np.int64(arg_c[i]))
            if budget < 0:
                return NEED_GROW, i


        block = np.int64(block_c[i])
        thread = np.int64(thread_c[i])
        ts = np.int64(ts_c[i])
        site = np.int64(site_c[i])
        a = thread_agent(ag, sv, agent_map, block, thread, last_a, last_block, last_thread)
        if a < 0:
            a = new_agent(ag, sv, block, thread, np.int64(cluster_c[i]), KIND_THREAD)
            hm_put(agent_map, block, thread, 0, a)
            budget = 0  # the room for agents was checked for the old count
        last_a = a
        last_block = block
        last_thread = thread
        if ag[a, AG_BLOCKED] >= 0:
            sv[SV_ERR_A] = block
            sv[SV_ERR_B] = thread
            sv[SV_ERR_C] = gens[ag[a, AG_BLOCKED], GN_KEYOBJ]
            sv[SV_ERR_D] = ag[a, AG_BLOCKNUM]
            return E_BARRIER_ORDER, i
        if size > 0 and (size >= (np.int64(1) << sv[SV_PAGE_SHIFT]) or
                         sv[SV_PAGE_LAUNCH] == launch) and (
                op <= O.ATOMIC or op == O.CP_ASYNC or op == O.TMA_LOAD or op == O.TMA_STORE):
            if not page_room(op, np.int64(space_c[i]), np.int64(addr_c[i]), size,
                             np.int64(space2_c[i]), np.int64(addr2_c[i]), np.int64(peer_c[i]),
                             block, a, sv, nodes, gran, ivs, pst):
                return NEED_GROW, i
        ag[a, AG_EPOCH] += 1
        epoch = ag[a, AG_EPOCH]

        if op <= O.ATOMIC:
            # The agent map is probed only where the agent is not the last
            # event's neighbour (see above): mostly where the block changes.
            if sv[SV_N_AGENTS] > AGENT_PREFETCH_MIN and i + PF_FAR < n and \
                    block_c[i + PF_FAR] != block_c[i + PF_FAR - 1]:
                hm_prefetch(agent_map, np.int64(block_c[i + PF_FAR]),
                            np.int64(thread_c[i + PF_FAR]), 0)
            space = np.int64(space_c[i])
            addr = np.int64(addr_c[i])
            peer = np.int64(peer_c[i])
            scope = np.int64(scope_c[i])
            sem = np.int64(sem_c[i])
            region = region_of(space, peer, a, sv)
            if space == O.SPACE_GLOBAL:
                prefetch_ahead(op_c, addr_c, size_c, gpos, gk, gran, nodes, cold, region)
                gk += 1
            owner = peer if space == O.SPACE_SHARED else (thread if space == O.SPACE_LOCAL else 0)
            info = op | (scope << I_SCOPE_SHIFT)
            if op != O.READ:
                info |= I_WRITE
            if op == O.ATOMIC:
                info |= I_ATOMIC
                acquire_atomic(ag, snaps, arena_a, arena_e, sv, atom_map, rels, scratch, touched,
                               cvs, a, region, addr, sem, scope)
            if proxy_c[i] == 1:
                info |= I_PROXY
            # ``access``, with the granule path inlined: replay allocates
            # nothing, so it is compiled without reference counting, and a
            # call pushes every array argument as a struct of ~8 words, ~100
            # pushes per access, ~12% of the tiled benchmark's samples
            # (inlining into a reference-counted caller instead made it 4x
            # slower: an incref and decref of each array per event).
            found = 0
            if sv[SV_VIEW] & (1 << space) and size > 0:
                if covers_page(sv, addr, size):
                    found = access(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand,
                                   ivs, pst, region, space, owner, addr, size, a, epoch, a, info,
                                   row, ts, site)
                else:
                    split_pages_of(sv, nodes, cold, gran, pst, region, addr, size)
                    found, ulo, uhi = granule_range(
                        ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst,
                        region, space, owner, addr, addr + size, addr, addr + size, a, epoch, a,
                        info, row, ts, site, size, np.int64(-1))
                    found |= offer_uninit(cand, space, owner, ulo, uhi)
            if found:
                flush_candidates(cand, find, sv, row, launch, block, thread, op, ts, site,
                                 ag[a, AG_BAROBJ], ag[a, AG_BARGEN])
            if op == O.ATOMIC:
                # The release side (the reference's ``atomic_release``): a
                # release atomic releases the clock at its scope; a relaxed
                # one, the clock at each level's latest release fence, at the
                # narrower of the two scopes.
                if sem == O.SEM_RELEASE or sem == O.SEM_ACQ_REL:
                    release_atomic(ag, snaps, arena_a, arena_e, sv, atom_map, rels, a, region,
                                   addr, scope, ag[a, AG_BASE], epoch)
                else:
                    for lvl in range(N_LEVELS):
                        if ag[a, AG_FREL_BASE + lvl] >= 0:
                            release_atomic(ag, snaps, arena_a, arena_e, sv, atom_map, rels, a,
                                           region, addr, min(lvl + 1, scope),
                                           ag[a, AG_FREL_BASE + lvl], ag[a, AG_FREL_EPOCH + lvl])
        elif op == O.INIT:
            space = np.int64(space_c[i])
            addr = np.int64(addr_c[i])
            region = region_of(space, np.int64(peer_c[i]), a, sv)
            if size >= INIT_INTERVAL_MIN:
                sv[SV_IV_N] = iv_add(ivs, sv[SV_IV_N], iv_region(region), addr, addr + size)
            elif size > 0:
                end = addr + size
                gs = granule_shift(region)
                for g in range(addr >> gs, ((end - 1) >> gs) + 1):
                    base = g << gs
                    lo = max(addr, base) - base
                    hi = min(end, base + (np.int64(1) << gs)) - base
                    slot = find_granule(gran, region, g, True, sv, SV_GRAN_COUNT, sv[SV_LAUNCH],
                                        pst)
                    gran[slot, G_INIT] |= ((1 << hi) - 1) ^ ((1 << lo) - 1)
        elif op == O.BAR_SYNC or op == O.BAR_ARRIVE or op == O.WARP_SYNC:
            arg = np.int64(arg_c[i])
            obj = np.int64(obj_c[i])
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
                    return E_WARP_MASK, i
            else:
                count = arg
                mask = np.int64(0)
                bk0, bk2 = np.int64(0), obj
                bar_obj = obj
                mis_obj = obj
                if count <= 0:
                    sv[SV_ERR_A] = obj
                    sv[SV_ERR_B] = count
                    return E_BAR_COUNT, i
            gslot = hm_get(bar_map, bk0, block, bk2)
            if gslot < 0:
                gslot = sv[SV_GEN_N]
                sv[SV_GEN_N] += 1
                hm_put(bar_map, bk0, block, bk2, gslot)
                gens[gslot, GN_OPEN] = 0
                gens[gslot, GN_NUMBER] = 0
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
                k = emit(find, sv, _K_BARMIS, row, launch, block, thread, op, ts, site)
                set_prev(find, k, gens[gslot, GN_F_ROW], gens[gslot, GN_F_LAUNCH], gens[gslot, GN_F_BLOCK],
                         gens[gslot, GN_F_THREAD], gens[gslot, GN_F_OP], gens[gslot, GN_F_TS], gens[gslot, GN_F_SITE])
                find[k, F_OBJ] = mis_obj
                find[k, F_CODE] = R.BAR_ARG_DISAGREES
                find[k, F_AUX] = gens[gslot, GN_ARG]
                find[k, F_BAR_OBJ] = ag[a, AG_BAROBJ]
                find[k, F_BAR_GEN] = ag[a, AG_BARGEN]
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
            fences = (np.int64(fence_c[i]) & sv[SV_VIEW] & 3) != 0
            flag = (ARF_WAITER | (np.int64(fence_c[i]) << ARF_FENCE_SHIFT)) if op != O.BAR_ARRIVE else 0
            if fences:
                gens[gslot, GN_ARRIVALS] = add_arrival(arr, sv, snaps, gens[gslot, GN_ARRIVALS],
                                                       ag[a, AG_BASE], a, epoch, flag)
            else:
                gens[gslot, GN_ARRIVALS] = add_arrival(arr, sv, snaps, gens[gslot, GN_ARRIVALS],
                                                       0, a, epoch, flag | ARF_NOJOIN)
            if flag:
                ag[a, AG_BLOCKED] = gslot
                ag[a, AG_BLOCKNUM] = gens[gslot, GN_NUMBER]
            if gens[gslot, GN_COUNT] >= gens[gslot, GN_ARG]:
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
                        ag[w, AG_BARGEN] = gens[gslot, GN_NUMBER]
                        ag[w, AG_BARFENCE] = (arr[k, AR_FLAG] >> ARF_FENCE_SHIFT) & 7
                    k = arr[k, AR_NEXT]
                free_arrivals(arr, sv, snaps, head)
                gens[gslot, GN_ARRIVALS] = -1
                gens[gslot, GN_NUMBER] += 1
                gens[gslot, GN_OPEN] = 0
        elif op == O.FENCE:
            # The reference's ``on_fence``: levels WARP up to the fence's scope.
            sem = np.int64(sem_c[i])
            top = min(np.int64(scope_c[i]), O.SCOPE_DEVICE)
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
        elif op == O.FENCE_PROXY_ASYNC:
            f = sv[SV_FEN_TOP]
            sv[SV_FEN_TOP] += 1
            fen[f, FN_NEXT] = ag[a, AG_FENCES]
            fen[f, FN_EPOCH] = epoch
            ag[a, AG_FENCES] = f
        elif op == O.RELEASE or op == O.ACQUIRE:
            obj = np.int64(obj_c[i])
            lock = max(hm_get(lock_map, obj, 0, 0), 0)
            if op == O.RELEASE:
                # The lock's clock joins the releaser's. When it is still the
                # snapshot this thread acquired (the usual critical section),
                # the thread's clock already covers it, and the join is the
                # thread's clock plus its own epoch: a delta, not a merge.
                if lock == 0 or snaps[lock, SN_SERIAL] == ag[a, AG_ACQ_SERIAL]:
                    snap = merge(snaps, arena_a, arena_e, sv, ag[a, AG_BASE], 0, a, epoch)
                else:
                    snap = merge(snaps, arena_a, arena_e, sv, lock, ag[a, AG_BASE], a, epoch)
                incref(snaps, snap)
                decref(snaps, sv, lock)
                sv[SV_LOCK_N] += hm_put(lock_map, obj, 0, 0, snap)
            else:
                join_into(ag, snaps, arena_a, arena_e, sv, a, lock, -1, 0)
                ag[a, AG_ACQ_SERIAL] = snaps[lock, SN_SERIAL]
        elif op == O.SIGNAL:
            obj = np.int64(obj_c[i])
            arg = np.int64(arg_c[i])
            q = hm_get(flag_map, obj, 0, 0)
            if q < 0:
                q = sv[SV_FQ_N]
                sv[SV_FQ_N] += 1
                hm_put(flag_map, obj, 0, 0, q)
                fq[q, FQ_HEAD] = -1
                fq[q, FQ_TAIL] = -1
                fq[q, FQ_TOTAL] = 0
                fq[q, FQ_PAIRS] = -1
                fq[q, FQ_EDGES] = -1
            s = pool_alloc(sigs, sv, SV_SIG_TOP, SV_SIG_FREE, SV_SIG_USED)
            sigs[s, SG_ROW] = row
            sigs[s, SG_SITE] = site
            sigs[s, SG_LAUNCH] = launch
            sigs[s, SG_BLOCK] = block
            sigs[s, SG_THREAD] = thread
            sigs[s, SG_TS] = ts
            sigs[s, SG_COUNT] = arg if arg > 0 else 1
            incref(snaps, ag[a, AG_BASE])
            sigs[s, SG_BASE] = ag[a, AG_BASE]
            sigs[s, SG_AGENT] = a
            sigs[s, SG_EPOCH] = epoch
            if fq[q, FQ_TAIL] >= 0:
                sigs[fq[q, FQ_TAIL], SG_NEXT] = s
            else:
                fq[q, FQ_HEAD] = s
            fq[q, FQ_TAIL] = s
            fq[q, FQ_TOTAL] += sigs[s, SG_COUNT]
        elif op == O.WAIT:
            obj = np.int64(obj_c[i])
            arg = np.int64(arg_c[i])
            need = arg if arg > 0 else 1
            q = hm_get(flag_map, obj, 0, 0)
            avail = fq[q, FQ_TOTAL] if q >= 0 else 0
            if avail < need:
                sv[SV_ERR_A] = obj
                sv[SV_ERR_B] = need
                sv[SV_ERR_C] = avail
                return E_WAIT, i
            consume_signals(ag, snaps, arena_a, arena_e, sv, sigs, fq, q, pairs, edges, find,
                            scratch, touched, cvs, a, epoch, need, row, launch, block, thread, op,
                            ts, site, obj)
        elif op == O.CP_ASYNC or op == O.TMA_STORE:
            if op == O.CP_ASYNC:
                ca = ag[a, AG_CP_AGENT]
                if ca < 0:
                    ca = async_agent(ag, sv, async_map, a, KIND_CP, 0)
                    ag[a, AG_CP_AGENT] = ca
                g = ag[a, AG_CP_OPEN]
                bits = 0
                kind = R.INFLIGHT_CP_ASYNC
            else:
                ca = ag[a, AG_BULK_AGENT]
                if ca < 0:
                    ca = async_agent(ag, sv, async_map, a, KIND_BULK, 0)
                    ag[a, AG_BULK_AGENT] = ca
                g = ag[a, AG_BULK_OPEN]
                bits = I_PROXY
                kind = R.INFLIGHT_BULK_STORE
            if copy(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst, a, ca, g, bits,
                    kind, row, ts, site, op, np.int64(space_c[i]), np.int64(addr_c[i]), size,
                    np.int64(space2_c[i]), np.int64(addr2_c[i]), block, np.int64(peer_c[i])):
                flush_candidates(cand, find, sv, row, launch, block, thread, op, ts, site,
                                 ag[a, AG_BAROBJ], ag[a, AG_BARGEN])
        elif op == O.CP_ASYNC_COMMIT:
            ag[a, AG_CP_OPEN] += 1
        elif op == O.BULK_COMMIT:
            ag[a, AG_BULK_OPEN] += 1
        elif op == O.CP_ASYNC_WAIT or op == O.BULK_WAIT:
            pending = np.int64(arg_c[i])
            if pending < 0:
                sv[SV_ERR_A] = pending
                return E_WAIT_GROUP, i
            if op == O.CP_ASYNC_WAIT:
                ca = ag[a, AG_CP_AGENT]
                if ca < 0:
                    ca = async_agent(ag, sv, async_map, a, KIND_CP, 0)
                    ag[a, AG_CP_AGENT] = ca
                upto = max(ag[a, AG_CP_RET], ag[a, AG_CP_OPEN] - 1 - pending)
                if upto > ag[a, AG_CP_RET]:  # a retiring wait: rule 7 fences go after it
                    f = sv[SV_FEN_TOP]
                    sv[SV_FEN_TOP] += 1
                    fen[f, FN_NEXT] = ag[ca, AG_FENCES]
                    fen[f, FN_EPOCH] = epoch
                    fen[f, FN_VAL] = upto
                    fen[f, FN_AUX] = site
                    ag[ca, AG_FENCES] = f
                ag[a, AG_CP_RET] = upto
            else:
                ca = ag[a, AG_BULK_AGENT]
                if ca < 0:
                    ca = async_agent(ag, sv, async_map, a, KIND_BULK, 0)
                    ag[a, AG_BULK_AGENT] = ca
                upto = max(ag[a, AG_BULK_RET], ag[a, AG_BULK_OPEN] - 1 - pending)
                ag[a, AG_BULK_RET] = upto
            if upto > 0:
                join_into(ag, snaps, arena_a, arena_e, sv, a, 0, ca, upto)
            ag[ca, AG_RETIRED] = max(ag[ca, AG_RETIRED], upto)
        elif op >= O.MBAR_INIT and op <= O.TMA_LOAD:
            peer = np.int64(peer_c[i])
            obj = np.int64(obj_c[i])
            arg = np.int64(arg_c[i])
            mslot = hm_get(mb_map, peer, obj, 0)
            if mslot < 0:
                mslot = sv[SV_MB_N]
                sv[SV_MB_N] += 1
                hm_put(mb_map, peer, obj, 0, mslot)
                for f in range(MB_FIELDS):
                    mbs[mslot, f] = 0
                mbs[mslot, MB_ARRIVALS] = -1
                mbs[mslot, MB_DONE0] = -1
                mbs[mslot, MB_DONE1] = -1
                mbs[mslot, MB_TMA0] = -1
                mbs[mslot, MB_TMA1] = -1
            valid = mbs[mslot, MB_VALID] == 1
            if op == O.TMA_LOAD:
                ta = async_agent(ag, sv, async_map, a, KIND_TMA, mslot)
                ag[ta, AG_MBAR] = obj
                ag[ta, AG_EPOCH] += 1
                cnt = ag[ta, AG_EPOCH]
                # The phase this load completes, logged when it changes.
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
                if copy(ag, snaps, arena_a, arena_e, sv, nodes, cold, gran, fen, cand, ivs, pst, a, ta, cnt,
                        I_PROXY, R.INFLIGHT_TMA_LOAD, row, ts, site, op, np.int64(space_c[i]),
                        np.int64(addr_c[i]), size, np.int64(space2_c[i]), np.int64(addr2_c[i]),
                        block, peer):
                    flush_candidates(cand, find, sv, row, launch, block, thread, op, ts, site,
                                     ag[a, AG_BAROBJ], ag[a, AG_BARGEN])
                if not valid:
                    misuse(find, sv, ag, a, R.MBAR_BEFORE_INIT, row, launch, block, thread, op,
                           ts, site, peer, obj)
                else:
                    mbs[mslot, MB_TX] -= size
                    h = add_arrival(arr, sv, snaps, mbs[mslot, MB_ARRIVALS], ag[a, AG_BASE], a,
                                    epoch, 0)
                    mbs[mslot, MB_ARRIVALS] = add_arrival(arr, sv, snaps, h, 0, ta, cnt, ARF_TMA)
                    complete_phase(mbs, mslot, arr, ag, sv, snaps, arena_a, arena_e, scratch,
                                   touched, cvs, find, a, row, launch, block, thread, op, ts, site,
                                   peer, obj)
            elif op == O.MBAR_INIT:
                if arg <= 0:
                    sv[SV_ERR_A] = obj
                    sv[SV_ERR_B] = arg
                    return E_MBAR_COUNT, i
                if valid:
                    k = misuse(find, sv, ag, a, R.MBAR_REINIT, row, launch, block, thread, op, ts,
                               site, peer, obj)
                    set_prev(find, k, mbs[mslot, MB_I_ROW], mbs[mslot, MB_I_LAUNCH], mbs[mslot, MB_I_BLOCK],
                             mbs[mslot, MB_I_THREAD], mbs[mslot, MB_I_OP], mbs[mslot, MB_I_TS], mbs[mslot, MB_I_SITE])
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
                mbs[mslot, MB_I_ROW] = row
                mbs[mslot, MB_I_LAUNCH] = launch
                mbs[mslot, MB_I_BLOCK] = block
                mbs[mslot, MB_I_THREAD] = thread
                mbs[mslot, MB_I_OP] = op
                mbs[mslot, MB_I_TS] = ts
                mbs[mslot, MB_I_SITE] = site
            elif not valid:
                misuse(find, sv, ag, a, R.MBAR_BEFORE_INIT, row, launch, block, thread, op, ts,
                       site, peer, obj)
            elif op == O.MBAR_ARRIVE:
                count = arg if arg > 0 else 1
                if count > mbs[mslot, MB_PENDING]:
                    misuse(find, sv, ag, a, R.MBAR_ARRIVAL_UNDERFLOW, row, launch, block, thread,
                           op, ts, site, peer, obj)
                    count = mbs[mslot, MB_PENDING]
                mbs[mslot, MB_PENDING] -= count
                mbs[mslot, MB_ARRIVALS] = add_arrival(arr, sv, snaps, mbs[mslot, MB_ARRIVALS],
                                                      ag[a, AG_BASE], a, epoch, 0)
                complete_phase(mbs, mslot, arr, ag, sv, snaps, arena_a, arena_e, scratch, touched,
                               cvs, find, a, row, launch, block, thread, op, ts, site, peer, obj)
            elif op == O.MBAR_EXPECT_TX:
                mbs[mslot, MB_TX] += arg
                complete_phase(mbs, mslot, arr, ag, sv, snaps, arena_a, arena_e, scratch, touched,
                               cvs, find, a, row, launch, block, thread, op, ts, site, peer, obj)
            elif op == O.MBAR_WAIT:
                done = mbs[mslot, MB_DONE0 + (arg & 1)]
                if done < 0:
                    misuse(find, sv, ag, a, R.MBAR_PHASE_NEVER_COMPLETED, row, launch, block,
                           thread, op, ts, site, peer, obj)
                else:
                    join_into(ag, snaps, arena_a, arena_e, sv, a, done, -1, 0)
                    # The first wait on the phase retires its tma_loads.
                    tcol = MB_TMA0 + (arg & 1)
                    k = mbs[mslot, tcol]
                    while k >= 0:
                        f = phase_entry(ag, fen, arr[k, AR_AGENT], arr[k, AR_EPOCH])
                        fen[f, FN_AUX] = 1
                        k = arr[k, AR_NEXT]
                    free_arrivals(arr, sv, snaps, mbs[mslot, tcol])
                    mbs[mslot, tcol] = -1
            else:  # MBAR_INVAL
                mbs[mslot, MB_VALID] = 0
    return OK, n


@jit
def finish_launch(gens, sv, find):
    """End of a launch: every generation still open is a barrier_mismatch."""
    for g in range(sv[SV_GEN_N]):
        if gens[g, GN_OPEN] == 1:
            emit(find, sv, _K_BARMIS, gens[g, GN_L_ROW], gens[g, GN_L_LAUNCH], gens[g, GN_L_BLOCK],
                 gens[g, GN_L_THREAD], gens[g, GN_L_OP], gens[g, GN_L_TS], gens[g, GN_L_SITE])
            k = sv[SV_NFIND] - 1
            find[k, F_OBJ] = gens[g, GN_L_OBJ]
            find[k, F_CODE] = R.BAR_INCOMPLETE
            find[k, F_AUX] = gens[g, GN_COUNT]


# ---------------------------------------------------------------------------
# The driver.


# pool name -> (grow bit, columns, initial rows, fill)
_POOLS = {
    "ag": (GR_AGENTS, AG_FIELDS, 1 << 10, 0),
    "snaps": (GR_SNAPS, SN_FIELDS, 1 << 12, 0),
    "nodes": (GR_NODES, N_FIELDS, 1 << 14, 0),
    "cold": (GR_NODES, K_FIELDS, 1 << 14, 0),
    "gran": (GR_GRAN, G_FIELDS, 1 << 15, -1),
    "gens": (GR_GENS, GN_FIELDS, 1 << 8, 0),
    "arr": (GR_ARR, AR_FIELDS, 1 << 10, 0),
    "sigs": (GR_SIG, SG_FIELDS, 1 << 8, 0),
    "fq": (GR_FQ, FQ_FIELDS, 1 << 6, 0),
    "mbs": (GR_MB, MB_FIELDS, 1 << 6, 0),
    "rels": (GR_RL, RL_FIELDS, 1 << 8, 0),
    "fen": (GR_FEN, FN_FIELDS, 1 << 8, 0),
    "find": (GR_FIND, NF + 1, 1 << 8, 0),
    "ivs": (GR_IV, IV_FIELDS, 1 << 6, 0),
    "pairs": (GR_PR, PR_FIELDS, 1 << 6, 0),
    "edges": (GR_ED, ED_FIELDS, 1 << 6, 0),
}

# Pools kept in tracerace.mapped arrays (grown in place, never filled: every
# field of a row is written when it is handed out), with the state-vector
# field that counts their rows in use, and how many rows past that the
# faulter keeps faulted in. The agent table is one: a launch of 10^5 agents
# grew it by copying (and clearing fresh pages for) ~90 MB on the replay
# thread, a quarter of a second of a tiled 10^8 check.
_MAPPED = {"nodes": SV_NODE_TOP, "cold": SV_NODE_TOP, "ag": SV_N_AGENTS}

# Starting sizes of the clock arena and the hash maps (tests shrink these and
# the pools' initial rows to make every growth path run).
ARENA_START = 1 << 14
ARENA_SLACK = 1 << 20  # entries (16 MiB of arena_a and arena_e)
MAP_START = 1 << 8

# The faulter (see ``Faulter``) keeps this many rows past the top of the node
# pools and the arena faulted in, a chunk at a time.
FAULT_AHEAD = 1 << 17
FAULT_CHUNK = 1 << 15
# Agents come a wave of blocks at a time; a row is AG_FIELDS words.
AG_FAULT_AHEAD = 1 << 13
# The largest spare granule table (rows) made for a trace of unknown length.
SPARE_BLIND_MAX = 1 << 19
# With a findings consumer, the findings pool is handed over rather than grown
# past this many rows (14 MiB of int64 fields).
FIND_HANDOVER_ROWS = 1 << 16
# The pace of new granules is judged over this many batches.
TREND_BATCHES = 4


class Faulter:
    """A thread that faults in the engine's pools ahead of the replay.

    On some machines the first write to a page costs far more than the work
    done on it (this VM: ~3 ms per MB, a third or more of a check at 10^7
    events), and the replay writes fresh node rows all the time. The read
    thread leaves the second core partly idle, so this thread populates the
    rows the replay will take next (``MappedArray.populate``: the contents
    stay as they are, so it never races with the replay's writes). Without
    kernel support it stops at once. ``start`` it once the check is long
    enough to profit; leaving the ``with`` block stops it.
    """

    def __init__(self, st: "EngineState") -> None:
        self._st = st
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tracerace-fault", daemon=True)
        self._started = False

    def start(self) -> None:
        """Start the thread; later calls do nothing (the thread may have
        ended already: no kernel support)."""
        if not self._started:
            self._started = True
            self._thread.start()

    def __enter__(self) -> "Faulter":
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._started:
            self._thread.join()

    def _run(self) -> None:
        st = self._st
        while can_populate() and not self._stop.is_set():
            try:
                if not st.prefault():
                    self._stop.wait(0.002)
            except Exception:  # a hint only: never the check's problem
                return

# The kernel's error statuses -> (rule, message) (tracerace.badinput), from
# the four values it leaves in SV_ERR_A..D.
_ERRORS = {
    E_BARRIER_ORDER: lambda a, b, c, d: badinput.barrier_order(a, b, c, d),
    E_WAIT: lambda a, b, c, d: badinput.wait_without_signal(a, b, c),
    E_BAR_COUNT: lambda a, b, c, d: badinput.barrier_count(a, b),
    E_WARP_MASK: lambda a, b, c, d: badinput.empty_warp_mask(),
    E_LAUNCH_ORDER: lambda a, b, c, d: badinput.launch_order(a, b),
    E_MBAR_COUNT: lambda a, b, c, d: badinput.mbarrier_count(a, b),
    E_WAIT_GROUP: lambda a, b, c, d: badinput.wait_group(a),
}


class EngineState:
    """Every array the kernels keep across batches, and their growth."""

    def __init__(self, page_shift: int = PAGE_SHIFT) -> None:
        if not GLOBAL_GRANULE_SHIFT < WIDE_GRANULE_SHIFT < page_shift < 40:
            raise ValueError(f"page_shift {page_shift}: pages must hold several granules")
        self.sv = np.zeros(SV_FIELDS, np.int64)
        self.sv[SV_SIG_FREE] = -1
        self.sv[SV_VIEW] = VIEW_ALL
        self.sv[SV_PAGE_SHIFT] = page_shift
        self.sv[SV_PAGE_LAUNCH] = -1
        # Per page hash, the last launch that gave one of its granules lists.
        self.pst = np.full(PST_SIZE, -1, np.int64)
        self.findings: list[np.ndarray] = []
        self.arrays: dict[str, np.ndarray] = {}
        # The node pools and the clock arena grow in place (tracerace.mapped).
        self.mapped: dict[str, MappedArray] = {}
        for name, (_, cols, rows, fill) in _POOLS.items():
            if name in _MAPPED:
                self.mapped[name] = MappedArray(rows, cols, reserve=self._ahead(name))
                self.arrays[name] = self.mapped[name].array
            else:
                self.arrays[name] = np.full((rows, cols), fill, np.int64)
        for name in ("arena_a", "arena_e"):
            self.mapped[name] = MappedArray(ARENA_START, reserve=FAULT_AHEAD)
        self.arena_a = self.mapped["arena_a"].array
        self.arena_e = self.mapped["arena_e"].array
        self.cand = np.zeros((N_KINDS + 2, C_FIELDS), np.int64)
        self.cvs = np.empty((self._cvs_rows(), CV_FIELDS), np.int64)
        # A granule table twice the size of the one in use, filled by the
        # faulter before the replay asks for it (see ``_prepare_spare``),
        # and what it goes by: the rows replayed and, when known, in all.
        self.spare_gran: np.ndarray | None = None
        self.spares_taken = 0  # growths that found their table ready
        self.rows_done = 0
        self.rows_total: int | None = None
        # (rows replayed, granules) after each of the last batches.
        self.trend: collections.deque[tuple[int, int]] = collections.deque(
            maxlen=TREND_BATCHES)
        self.reset_launch(-1)

    def reset_launch(self, launch: int, shared_shift: int | None = None,
                     global_shift: int | None = None) -> None:
        """Forget everything of the finished launch (see the module docstring).
        ``shared_shift``, ``global_shift``: log2 of the new launch's shared-
        and global-memory granules (default: 4 and 8 bytes; see
        :func:`shared_shift_for` and :func:`global_shift_for`)."""
        sv = self.sv
        # The granule table is kept: its slots are stamped with their launch.
        keep = {SV_NFIND, SV_FQ_N, SV_SIG_TOP, SV_SIG_FREE, SV_SIG_USED, SV_ED_TOP,
                SV_GRAN_COUNT, SV_GLOBAL_SIZES, SV_VIEW, SV_PAGE_SHIFT, SV_PAGE_LAUNCH}
        # Global init intervals survive; shared and local ones belong to the launch.
        ivs = self.arrays["ivs"]
        live = ivs[: int(sv[SV_IV_N])]
        live = live[live[:, IV_REGION] == 0]
        ivs[: len(live)] = live
        n_iv = len(live)
        for k in range(SV_FIELDS):
            if k not in keep:
                sv[k] = 0
        sv[SV_LAUNCH] = launch
        sv[SV_IV_N] = n_iv
        sv[SV_SHARED_REGION] = REGION_SHARED | (
            REGION_WIDE if shared_shift == WIDE_GRANULE_SHIFT else 0)
        wide = global_shift == WIDE_GRANULE_SHIFT
        sv[SV_GLOBAL_REGION] = REGION_WIDE if wide else 0
        if launch >= 0:  # not the state's first reset: no launch has run yet
            sv[SV_GLOBAL_SIZES] |= GS_WIDE if wide else GS_NARROW
        for q in range(int(sv[SV_FQ_N])):
            self.arrays["fq"][q, FQ_PAIRS] = -1
        for k in (SV_SNAP_FREE, SV_NODE_FREE, SV_ARR_FREE, SV_AR_FREE):
            sv[k] = -1
        sv[SV_SNAP_N] = 1  # snapshot 0: the empty clock
        snaps = self.arrays["snaps"]
        snaps[0] = 0
        snaps[0, SN_REF] = 1
        # Signals survive a launch (their counts pair with later waits) but
        # their clocks name only agents of the old launch: make them empty.
        sigs = self.arrays["sigs"]
        fq = self.arrays["fq"]
        for q in range(int(sv[SV_FQ_N])):
            s = fq[q, FQ_HEAD]
            while s >= 0:
                sigs[s, SG_BASE] = 0
                sigs[s, SG_AGENT] = -1
                s = sigs[s, SG_NEXT]
        self.scratch = np.full(self.arrays["ag"].shape[0], -1, np.int64)
        self.touched = np.zeros(self.arrays["ag"].shape[0], np.int64)
        for name in _MAPS:
            if name != "flag_map" or not hasattr(self, "flag_map"):
                setattr(self, name, new_table(MAP_START))

    def grow(self, mask: int) -> None:
        for name, (bit, _, _, fill) in _POOLS.items():
            if mask & bit:
                old = self.arrays[name]
                if name == "gran":
                    new, self.spare_gran = self.spare_gran, None
                    if new is None or new.shape[0] != old.shape[0] * 2:
                        new = np.full((old.shape[0] * 2, old.shape[1]), -1, np.int64)
                    else:
                        self.spares_taken += 1
                    self.sv[SV_GRAN_COUNT] = rehash(old, new, self.sv[SV_LAUNCH])
                elif name in _MAPPED:
                    # Only the rows in use are kept.
                    rows = old.shape[0] * 2
                    del old, self.arrays[name]
                    new = self.mapped[name].grow(rows, int(self.sv[_MAPPED[name]]))
                else:
                    new = np.full((old.shape[0] * 2, old.shape[1]), fill, np.int64)
                    new[: old.shape[0]] = old
                self.arrays[name] = new
        if mask & GR_AGENTS:
            n = self.arrays["ag"].shape[0]
            scratch = np.full(n, -1, np.int64)
            scratch[: self.scratch.shape[0]] = self.scratch
            self.scratch = scratch
            self.touched = np.zeros(n, np.int64)
        for name, bit in _MAPS.items():
            if mask & bit:
                old = getattr(self, name)
                new = new_table(old.shape[0] * 2)
                hm_rehash(old, new)
                setattr(self, name, new)
        if mask & (GR_ARR | GR_RL | GR_SIG):
            self.cvs = np.empty((self._cvs_rows(), CV_FIELDS), np.int64)
        if mask & GR_ARENA:
            self._compact_or_grow_arena()

    def prefault(self) -> bool:
        """Fault in the mapped pools' rows up to FAULT_AHEAD (the agents':
        AG_FAULT_AHEAD) past their tops, at most FAULT_CHUNK rows per pool
        per call, and prepare a spare granule table when one will be needed,
        from the calling thread (see :class:`Faulter`). Returns whether it
        did anything."""
        did = self._prepare_spare()
        tops = dict(_MAPPED, arena_a=SV_ARENA_TOP, arena_e=SV_ARENA_TOP)
        for name, top in tops.items():
            m = self.mapped[name]
            want = int(self.sv[top]) + self._ahead(name)
            if m.populated < want:
                did = m.populate(min(want, m.populated + FAULT_CHUNK)) or did
        return did

    def _prepare_spare(self) -> bool:
        """Fill the granule table the next growth will take, if one looks
        like it is coming: more than 40% full (it grows at half), and on
        course to pass half by the end of the trace at the pace of the last
        batches or, when the length of the trace is unknown, small (so an
        unneeded spare wastes little). A spare that is no longer called for
        is dropped. Growing took ~0.1 s of a 1.4 s tiled 10^7 check on the
        replay thread, nearly all of it the kernel clearing the new table's
        pages; here the other core pays. The replay only takes a spare of
        exactly the size it needs."""
        cap = self.arrays["gran"].shape[0]
        count = int(self.sv[SV_GRAN_COUNT])
        total, done = self.rows_total, self.rows_done
        if 5 * count < 2 * cap:
            wanted = False
        elif total is None:
            wanted = 2 * cap <= SPARE_BLIND_MAX
        else:
            wanted = 2 * (self._expected_granules(count, total, done) + PLAIN_NG) > cap
        spare = self.spare_gran
        if spare is not None and (spare.shape[0] != 2 * cap or not wanted):
            self.spare_gran = spare = None  # made for a smaller table, or not needed now
        if spare is not None or not wanted:
            return False
        self.spare_gran = np.full((2 * cap, G_FIELDS), -1, np.int64)
        return True

    def _expected_granules(self, count: int, total: int, done: int) -> float:
        """Granules at the end of the trace, at the pace of the last batches
        (of all rows so far, until a second batch is in): a workload whose
        variables were all touched early (the cpu benchmark's 10^6) stops
        adding granules, and a spare table would be wasted (it is dropped
        once the pace says so)."""
        r0, c0 = 0, 0
        for rows, granules in list(self.trend):
            if rows < done:
                r0, c0 = rows, granules
                break
        if done <= r0:
            return count
        return count + (count - c0) * (total - done) / (done - r0)

    def batch_done(self, rows: int) -> None:
        """``rows`` rows are replayed (what ``_prepare_spare`` goes by)."""
        self.rows_done = rows
        self.trend.append((rows, int(self.sv[SV_GRAN_COUNT])))

    @staticmethod
    def _ahead(name: str) -> int:
        return AG_FAULT_AHEAD if name == "ag" else FAULT_AHEAD

    def _compact_or_grow_arena(self) -> None:
        compact(self.arrays["snaps"], self.arena_a, self.arena_e, self.sv)
        need = ARENA_NEED * (int(self.sv[SV_N_AGENTS]) + 8)  # what replay asks to be free
        top = int(self.sv[SV_ARENA_TOP])  # entries past the top are never read
        # Grow unless compaction left room for half as much as is live, so
        # each compaction is paid for by half as many new entries, and for at
        # least ARENA_SLACK entries: a compaction has a fixed cost (a call
        # from Python, allocations, a sort of the live ids), and with a small
        # live arena (cpu: ~40 k entries) that cost came every ~150 lock
        # acquires, 6,300 times in 10^7 events, a third of the check.
        if self.arena_a.shape[0] - top < max(2 * need, top // 2, ARENA_SLACK):
            n = self.arena_a.shape[0] * 2
            self.arena_a = self.arena_e = None
            self.arena_a = self.mapped["arena_a"].grow(n, top)
            self.arena_e = self.mapped["arena_e"].grow(n, top)

    def _cvs_rows(self) -> int:
        ar = self.arrays
        return max(ar["arr"].shape[0], ar["rels"].shape[0], ar["sigs"].shape[0]) + 2

    def take_findings(self) -> np.ndarray:
        """The findings so far as ``FINDING_DTYPE`` records; the pool is emptied
        (a finding is complete once its event is replayed: none refers to
        another's slot)."""
        return records(self.take_rows())

    def take_rows(self) -> np.ndarray:
        """The findings pool's rows so far (with F_RANK), and empty it."""
        n = int(self.sv[SV_NFIND])
        out = self.arrays["find"][:n].copy()  # F is FINDING_DTYPE's order
        self.sv[SV_NFIND] = 0
        return out

    def fork(self, view: int) -> "EngineState":
        """A copy of this state that checks ``view``'s memory from now on,
        with no findings yet (those so far stay with this state)."""
        twin = EngineState.__new__(EngineState)
        twin.__dict__.update(self.__dict__)
        twin.mapped = {}
        for name, m in self.mapped.items():
            twin.mapped[name] = MappedArray(m.array.shape[0], m.cols, reserve=m.capacity)
            twin.mapped[name].array[...] = m.array
        twin.arrays = {name: twin.mapped[name].array if name in twin.mapped else a.copy()
                       for name, a in self.arrays.items()}
        twin.arena_a = twin.mapped["arena_a"].array
        twin.arena_e = twin.mapped["arena_e"].array
        for name in ("sv", "cand", "cvs", "scratch", "touched", "pst", *_MAPS):
            setattr(twin, name, getattr(self, name).copy())
        twin.spare_gran = None
        twin.trend = collections.deque(self.trend, maxlen=TREND_BATCHES)
        twin.sv[SV_NFIND] = 0
        twin.sv[SV_VIEW] = view
        return twin

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values()) + self.arena_a.nbytes * 2


def _raise(status: int, sv: np.ndarray, row: int, path: str | None) -> None:
    values = (int(sv[k]) for k in (SV_ERR_A, SV_ERR_B, SV_ERR_C, SV_ERR_D))
    rule, message = _ERRORS[status](*values)
    raise TraceError(message, path=path, row=row, rule=rule)


def check_trace(reader, *, progress: Callable[[int], None] | None = None,
                on_findings: Callable[[np.ndarray], None] | None = None,
                page_shift: int = PAGE_SHIFT) -> CheckResult:
    """Replay ``reader`` (a TraceReader) through the Numba engine.

    ``on_findings``: called with the findings (``FINDING_DTYPE``, in the order
    found) after each batch, and whenever the findings pool reaches
    ``FIND_HANDOVER_ROWS`` rows; the result then holds no findings, and memory
    does not grow with them.

    A barrier that orders only some memory (``fence_spaces``) splits
    happens-before in two: one relation for global memory, one for shared.
    From the first batch that holds such a barrier on, the state is forked
    and two views replay every batch, one checking global (and local) memory
    and one shared memory, each joining clocks only at the barriers that
    fence its memory; after each batch their findings are merged as one
    checker would have kept them (the reference's shared-memory clock
    entries).

    ``page_shift``: log2 of the pages large accesses are recorded by (see
    ``tracerace.shadow``, PAGES); no answer depends on it (tests make pages
    small so that short traces use them)."""
    st = EngineState(page_shift)
    st.rows_total = reader.meta.num_rows
    views = [st]
    merged: list[np.ndarray] = []  # findings of two views, merged per batch
    events = 0
    # The read-ahead thread is stopped before returning or raising, so the
    # caller may close the reader at once.
    batches = prefetch(((b, global_accesses(b)) for b in reader), depth=1)
    try:
        with Faulter(st) as faulter:
            for batch, gpos in batches:
                if len(views) == 1 and _fences_some_memory(batch.cols):
                    views.append(st.fork(VIEW_SHARED))
                    st.sv[SV_VIEW] = VIEW_GLOBAL
                if len(views) == 1:
                    _replay_batch(st, batch, reader.meta.path, gpos, on_findings)
                    if on_findings is not None:
                        on_findings(st.take_findings())
                else:
                    # Both views hold the batch's findings until they are merged.
                    for view in views:
                        _replay_batch(view, batch, reader.meta.path, gpos)
                    merged.append(records(_merge_views([v.take_rows() for v in views])))
                    if on_findings is not None:
                        on_findings(merged.pop())
                # From the second batch on: a one-batch check is over before
                # faulting ahead could pay for itself.
                faulter.start()
                events += batch.n
                st.batch_done(events)
                if progress is not None:
                    progress(events)
    finally:
        batches.close()
    for view in views:
        _close_launch(view)
    if len(views) > 1:
        merged.append(records(_merge_views([v.take_rows() for v in views])))
        last = np.concatenate(merged)
        merged.clear()
    else:
        last = st.take_findings()
    if on_findings is not None:
        on_findings(last)
        last = last[:0]
    return CheckResult(events, last)


_MEMORY_KINDS = np.array([_K_RAW, _K_WAR, _K_WAW, _K_UNINIT, _K_INFLIGHT, _K_PROXY])


def _fences_some_memory(cols: dict) -> bool:
    """Whether a barrier of the batch leaves global or shared memory unfenced."""
    op = cols["op"]
    barrier = (op == O.BAR_SYNC) | (op == O.BAR_ARRIVE) | (op == O.WARP_SYNC)
    return bool(np.any(barrier & ((cols["fence_spaces"] & 3) != 3)))


def _merge_views(found: list[np.ndarray]) -> np.ndarray:
    """The findings of one or two views (global first) as one checker keeps
    them: per (row, kind), the candidate of highest (earlier row, rank). Only
    the global view reports what is not about memory, and the views never
    tie (a tie would need one access in both)."""
    if len(found) == 1:
        return found[0]
    g, s = found
    memory = np.isin(g[:, F_KIND], _MEMORY_KINDS)
    both = np.concatenate([g[memory], s[np.isin(s[:, F_KIND], _MEMORY_KINDS)]])
    both = both[np.lexsort((both[:, F_RANK], both[:, F_PREV_ROW], both[:, F_KIND], both[:, F_ROW]))]
    last = np.ones(both.shape[0], bool)
    last[:-1] = (both[1:, F_ROW] != both[:-1, F_ROW]) | (both[1:, F_KIND] != both[:-1, F_KIND])
    return np.concatenate([g[~memory], both[last]])


def _replay_batch(st: EngineState, batch, path: str | None,
                  gpos: np.ndarray | None = None,
                  on_findings: Callable[[np.ndarray], None] | None = None) -> None:
    """Run the kernel over one batch, growing pools and closing launches
    whenever it stops to ask. ``gpos``: :func:`global_accesses` of the batch,
    when the read-ahead thread has computed it. ``on_findings``: takes a full
    findings pool instead of its growth past ``FIND_HANDOVER_ROWS``."""
    c = batch.cols
    if gpos is None:
        gpos = global_accesses(batch)
    cols = tuple(c[name] for name in COLUMN_NAMES)
    start = 0
    while True:
        ar = st.arrays
        status, start = replay(*cols, batch.row0, start, st.sv, ar["ag"], st.agent_map,
                               st.async_map, ar["snaps"], st.arena_a, st.arena_e, st.scratch,
                               st.touched, ar["nodes"], ar["cold"], ar["gran"], ar["gens"],
                               st.bar_map, ar["arr"], ar["sigs"], st.flag_map, ar["fq"],
                               ar["mbs"], st.mb_map, st.lock_map, ar["rels"], st.atom_map,
                               ar["fen"], ar["find"], st.cand, ar["ivs"], st.pst, ar["pairs"],
                               ar["edges"], st.cvs, gpos)
        if status == OK:
            return
        if status == NEED_GROW:
            mask = int(st.sv[SV_GROW])
            if (mask & GR_FIND and on_findings is not None
                    and st.arrays["find"].shape[0] >= FIND_HANDOVER_ROWS):
                on_findings(st.take_findings())
                mask &= ~GR_FIND
            st.grow(mask)
        elif status == NEW_LAUNCH:
            _close_launch(st)
            st.reset_launch(int(c["launch"][start]), shared_shift_for(c, start),
                            global_shift_for(c, start))
        else:
            _raise(status, st.sv, batch.row0 + start, path)


# How a launch's shared-memory granule size is chosen (shared_shift_for):
# from the first SHIFT_SAMPLE events of the launch in the batch at hand, if
# at least SHIFT_MIN_ACCESSES of them access shared memory and at most
# 1/SHIFT_NARROW_SHARE of those are not aligned 16-byte multiples.
SHIFT_SAMPLE = 1 << 16
SHIFT_MIN_ACCESSES = 64
SHIFT_NARROW_SHARE = 16


def _launch_sample(cols: dict, start: int) -> slice:
    """Rows of the launch that starts at ``start``, at most SHIFT_SAMPLE of
    them (launches come in order, so a binary search finds its end: a trace
    of many short launches does not scan 2^16 rows for each)."""
    launch = cols["launch"][start:start + SHIFT_SAMPLE]
    return slice(start, start + int(np.searchsorted(launch, launch[0], side="right")))


def _mostly_vectors(size: np.ndarray, addr: np.ndarray) -> bool:
    """Whether enough accesses (sizes and addresses) are sampled, and at
    most 1/SHIFT_NARROW_SHARE of them are not aligned 16-byte multiples."""
    n = size.shape[0]
    if n < SHIFT_MIN_ACCESSES:
        return False
    size = size.astype(np.int64)
    addr = addr.astype(np.int64)
    narrow = np.count_nonzero(((size & 15) != 0) | ((addr & 15) != 0) | (size == 0))
    return narrow * SHIFT_NARROW_SHARE <= n


def shared_shift_for(cols: dict, start: int) -> int:
    """log2 of the shared-memory granule for the launch that starts at row
    ``start`` of a batch's columns: 16 bytes where its shared accesses are
    nearly all aligned 16-byte vectors, else 4. Results never depend on the
    choice, only speed: masks keep every byte apart either way. With 4-byte
    elements read by many threads (a tiled matmul), 16-byte granules would
    put four elements' readers in one list; with 16-byte vectors (a
    cp.async pipeline), 4-byte granules cost four of everything per access.
    Shared memory starts afresh at a launch, so each launch may choose."""
    rows = _launch_sample(cols, start)
    op = cols["op"][rows]
    shared = (cols["space"][rows] == O.SPACE_SHARED) & ((op <= O.ATOMIC) | (op == O.CP_ASYNC))
    wide = _mostly_vectors(cols["size"][rows][shared], cols["addr"][rows][shared])
    return WIDE_GRANULE_SHIFT if wide else GRANULE_SHIFT


def global_shift_for(cols: dict, start: int) -> int:
    """log2 of the global-memory granule for the launch that starts at row
    ``start``: 16 bytes where its global accesses and cp.async sources are
    nearly all aligned 16-byte vectors (a cp.async pipeline: each source is
    then one granule and one node, not two), else 8 (8-byte words, the
    common variable of CPU-style traces, keep lists of their own). Results
    never depend on the choice (see shadow.SV_GLOBAL_SIZES for the
    initialized bytes, which outlive a launch)."""
    rows = _launch_sample(cols, start)
    op = cols["op"][rows]
    direct = (cols["space"][rows] == O.SPACE_GLOBAL) & (op <= O.ATOMIC)
    source = (cols["space2"][rows] == O.SPACE_GLOBAL) & (op == O.CP_ASYNC)
    size = cols["size"][rows]
    wide = _mostly_vectors(np.concatenate([size[direct], size[source]]),
                           np.concatenate([cols["addr"][rows][direct], cols["addr2"][rows][source]]))
    return WIDE_GRANULE_SHIFT if wide else GLOBAL_GRANULE_SHIFT


def _close_launch(st: EngineState) -> None:
    if st.sv[SV_LAUNCH] < 0:
        return
    if st.sv[SV_NFIND] + st.sv[SV_GEN_N] + 8 > st.arrays["find"].shape[0]:
        st.grow(GR_FIND)
        while st.sv[SV_NFIND] + st.sv[SV_GEN_N] + 8 > st.arrays["find"].shape[0]:
            st.grow(GR_FIND)
    finish_launch(st.arrays["gens"], st.sv, st.arrays["find"])
