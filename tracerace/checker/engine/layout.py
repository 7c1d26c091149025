"""The engine's state layout: every slot of the scalar vector ``sv``, the columns of each
table (granule slots, nodes hot and cold, snapshots, ...), the bit fields of a node's
``info`` word with their accessors, the finding and candidate columns, return codes and
grow bits, in one place. Each group is asserted disjoint at import.
"""

from __future__ import annotations

import numpy as np
from numba.cpython.unsafe.numbers import leading_zeros

from ...trace import badinput
from ...trace import ops as O
from ...trace.schema import SITE_NONE
from ..findings import FINDING_DTYPE
from ..jit import jit_inline

# ---------------------------------------------------------------------------
# The scalar vector ``sv``: every slot, numbered once (``SV_FIELDS`` long).
# Snapshots and their arena (clocks).
SV_SNAP_N = 0  # snapshot ids handed out (high-water mark)
SV_SNAP_FREE = 1  # head of the free-id list (linked through SN_START), -1 none
SV_ARENA_TOP = 2
SV_ARENA_LIVE = 3
SV_STAMP = 4
SV_SNAP_SERIAL = 5
# Tables: rows in use, free lists, high-water marks.
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
SV_GROW = 26  # the grow bits of the pools a NEED_GROW return asks for
SV_ERR_A, SV_ERR_B, SV_ERR_C, SV_ERR_D = 27, 28, 29, 30  # what a bad-input return names
SV_LOCK_N, SV_ATOM_N = 31, 32
SV_IV_N = 33
SV_PR_TOP, SV_ED_TOP = 34, 35
# Granule sizes (shadow): the shared region (REGION_SHARED, with REGION_WIDE
# in a launch of 16-byte granules); the global granule sizes any launch used
# (GS_NARROW, GS_WIDE) and this launch's global region (0, or REGION_WIDE).
SV_SHARED_REGION = 36
SV_GLOBAL_SIZES = 37
SV_GLOBAL_REGION = 38
# The memory spaces this state checks (fence_spaces bits: 1 global, 2 shared,
# 4 local): all of them, or, once a barrier orders only some memory, one of
# the two views the driver runs side by side (see ``check.check_trace``).
SV_VIEW = 39
# Pages (pages, RUNS): the page size's shift, and the last launch that made a
# run of pages (-1: none yet).
SV_PAGE_SHIFT = 40
SV_PAGE_LAUNCH = 41
# Launch boundaries the kernel crosses itself (``launches``): the slots each
# launch's hash maps start with (``Sizes.maps``), and the shared granule
# shift every launch is given (-1: chosen per launch).
SV_MAPS_CAP = 42
SV_FIXED_SHARED = 43
# Sharding (``shards``): how many states split the bytes between them (1:
# this state owns every byte), which of them this is, and the log2 of the
# stretches of bytes they own.
SV_SHARDS = 44
SV_SHARD = 45
SV_STRETCH_SHIFT = 46
# The most cp.async groups a thread commits in a launch, and
# cp_async_mbar_arrive rows with copies in one group (badinput.cp_limits).
SV_CP_GROUP_MAX = 47
SV_CP_ARRIVES_MAX = 48
# The most generations of one barrier that complete in a launch
# (badinput.bar_gens_limit; BARPOS_GEN_BITS).
SV_BAR_GENS_MAX = 49
SV_FIELDS = 50
VIEW_ALL, VIEW_GLOBAL, VIEW_SHARED = 7, 1 | 4, 2

# Snapshots (clocks): a row per snapshot id, padded to one cache line.
SN_START, SN_LEN, SN_REF, SN_STAMP, SN_PARENT, SN_SERIAL = range(6)
SN_FIELDS = 8

# The granule table (shadow): a slot per (region, granule index), four
# words (32 bytes: two slots to a cache line), each packing fields that are
# read together. Read and written through the slot accessors below, never by
# shifting by hand.
# - G_REGION: the region (low SLOT_REGION_BITS; EMPTY, -1, for a free slot)
#   and the granule's initialized bytes (16 bits from SLOT_INIT_SHIFT).
# - G_INDEX: the granule index.
# - G_HEADS: the heads of its two node lists, 32 bits each (-1: empty),
#   writes from bit HEAD_WRITES and reads from bit HEAD_READS; a node row
#   is below NODES_MAX (``state.EngineState.grow``).
# - G_STAMP: the launch that last used the lists (low 32 bits: a trace's
#   launch is a uint32; see ``shadow.find_granule``), the reads in the read
#   list (STAMP_NREADS_BITS, saturating) and the log2 of the length at which
#   the read list is next pruned (6 bits from STAMP_RLIMIT_SHIFT). Both only
#   decide when pruning pays (``granules.record``): no answer depends on them.
G_REGION, G_INDEX, G_HEADS, G_STAMP = range(4)
G_FIELDS = 4
SLOT_REGION_BITS = 48
SLOT_REGION_MASK = (1 << SLOT_REGION_BITS) - 1
SLOT_INIT_SHIFT = SLOT_REGION_BITS
HEAD_WRITES, HEAD_READS = 0, 32
NODES_MAX = (1 << 31) - 1
STAMP_LAUNCH_MASK = 0xFFFFFFFF
STAMP_NREADS_SHIFT = 32
STAMP_NREADS_BITS = 26
STAMP_NREADS_MAX = (1 << STAMP_NREADS_BITS) - 1
STAMP_RLIMIT_SHIFT = STAMP_NREADS_SHIFT + STAMP_NREADS_BITS
assert STAMP_RLIMIT_SHIFT + 6 == 64

# A node is split in three tables with the same row: the hot part, which
# every scan of a list reads (32 bytes: two nodes to a cache line), the cold
# part, read only to report a hazard, and the shade, which only a node that a
# copy shadows or an atomic hides from the proxy rule has.
# N_LINK packs two fields: the next node of the list (high 32 bits, signed:
# -1 ends the list; a state holds fewer than NODES_MAX nodes) and the agent
# (low 32 bits; a state holds fewer than AGENTS_MAX agents: both bounds are
# ``state.EngineState.grow``'s). Read and written through ``node_next``,
# ``node_agent``, ``set_next`` and ``set_link``. N_ROW: the access's row,
# which ranks candidates (``races.offer``), so scans find it hot. A free
# node's N_LINK is the pool's free list (``pools.pool_free``).
N_LINK, N_EPOCH, N_INFO, N_ROW = range(4)
N_FIELDS = 4
LINK_AGENT_MASK = 0xFFFFFFFF
AGENTS_MAX = 1 << 32
# The cold part, 8 bytes: K_BARPOS, the thread's AG_BARPOS at the access,
# which only replay knows (``races.offer`` reads it). What else a report says
# of the access (address, size, ts, site) is its row's, looked up in the
# trace when a finding names it (``tracerace.trace.rows``).
K_BARPOS = 0
K_FIELDS = 1
# The shade, 16 bytes, written only once a node needs it (``I_SHADED``): the
# agent and epoch of the copy that shadows the node. ``S_AGENT`` packs two
# fields: that agent (low KS_AGENT_BITS), and the bytes of the node that a
# later atomic follows in happens-before (16 bits from KS_HIDDEN_SHIFT). A
# node without I_SHADED has no shadow and no hidden bytes, whatever its
# shade row holds: most nodes never touch theirs, so most of the table's
# pages are never written (a read-once kernel's 10^7 nodes, 150 MiB).
S_AGENT, S_EPOCH = range(2)
S_FIELDS = 2
KS_AGENT_BITS = 40
KS_AGENT_MASK = (1 << KS_AGENT_BITS) - 1
KS_HIDDEN_SHIFT = KS_AGENT_BITS

# Init intervals and runs of pages (shadow, pages): sorted rows.
IV_REGION, IV_LO, IV_HI = range(3)
IV_FIELDS = 3

# A node's ``info`` word: what the access was, and which bytes of its
# granule the node still stands for. Read and written through the accessors
# below, never by shifting by hand.
MASK_ALL = 0xFFFF  # a granule's bytes (at most 16)
I_OP_MASK = 0xFF  # bits 0-7: the op
I_WRITE = 1 << 8
I_ATOMIC = 1 << 9
I_ASYNC = 1 << 10  # made by a copy agent
I_PROXY = 1 << 11  # async proxy
I_SCOPE_SHIFT = 12  # 3 bits: the atomic's scope
I_SCOPE_BITS = 7
I_MASK_SHIFT = 16  # 16 bits: bytes of the granule this node stands for
I_COPY_SHIFT = 32  # 2 bits: reasons.INFLIGHT_*
I_COPY_BITS = 3
I_AFTER_ALL = 1 << 34  # a copy's write that every older write to its bytes here happens before
I_RACED = 1 << 35  # a write that a newer copy's write raced (it does not happen before it)
# The node's shadow is an async atomic's (red_async, a bulk reduction): once
# retired it hides the bytes from the proxy rule, as a thread's atomic does
# at its row, and leaves them in the list (a later atomic that pairs with the
# shadowing one may still race this write).
I_SHADE_HIDES = 1 << 36
I_SHADED = 1 << 37  # the node's shade row is written (shadow.shaded)
I_SHADOW_SHIFT = 40  # 16 bits: bytes a later copy covers (its shade; 0: none)


@jit_inline
def info_op(info):
    return info & I_OP_MASK


@jit_inline
def info_scope(info):
    return (info >> I_SCOPE_SHIFT) & I_SCOPE_BITS


@jit_inline
def info_copy_kind(info):
    return (info >> I_COPY_SHIFT) & I_COPY_BITS


@jit_inline
def info_mask(info):
    """The bytes of its granule the node stands for."""
    return (info >> I_MASK_SHIFT) & MASK_ALL


@jit_inline
def add_mask(info, m):
    """``info``, which stands for no bytes yet, standing for the bytes ``m``."""
    return info | (m << I_MASK_SHIFT)


@jit_inline
def with_mask(info, m):
    """``info`` standing for the bytes ``m`` instead."""
    return (info & ~(np.int64(MASK_ALL) << I_MASK_SHIFT)) | (m << I_MASK_SHIFT)


@jit_inline
def info_shadow(info):
    """The bytes a later copy covers (0: none)."""
    return (info >> I_SHADOW_SHIFT) & MASK_ALL


@jit_inline
def with_shadow(info, m):
    """``info`` with the bytes ``m`` under its shadowing copy instead."""
    return (info & ~(np.int64(MASK_ALL) << I_SHADOW_SHIFT)) | (m << I_SHADOW_SHIFT)


@jit_inline
def node_next(nodes, x):
    """The node after ``x`` in its list (-1: none)."""
    return nodes[x, N_LINK] >> 32


@jit_inline
def node_agent(nodes, x):
    """The agent of node ``x``'s access."""
    return nodes[x, N_LINK] & LINK_AGENT_MASK


@jit_inline
def set_next(nodes, x, nxt):
    nodes[x, N_LINK] = (nxt << 32) | (nodes[x, N_LINK] & LINK_AGENT_MASK)


@jit_inline
def set_link(nodes, x, nxt, a):
    """Node ``x``: followed by ``nxt`` (-1: none), an access of agent ``a``."""
    nodes[x, N_LINK] = (nxt << 32) | a


@jit_inline
def slot_region(gran, s):
    """The region of slot ``s`` (of a used slot: EMPTY is checked on the word)."""
    return gran[s, G_REGION] & SLOT_REGION_MASK


@jit_inline
def slot_init(gran, s):
    """The bytes of slot ``s``'s granule some write or ``init`` covered."""
    return (gran[s, G_REGION] >> SLOT_INIT_SHIFT) & MASK_ALL


@jit_inline
def add_init(gran, s, m):
    """Mark the bytes ``m`` of slot ``s``'s granule initialized."""
    gran[s, G_REGION] |= m << SLOT_INIT_SHIFT


@jit_inline
def clear_init(gran, s):
    gran[s, G_REGION] &= SLOT_REGION_MASK


@jit_inline
def head(gran, s, which):
    """The first node of slot ``s``'s list ``which`` (HEAD_WRITES or
    HEAD_READS), -1 when empty."""
    return (gran[s, G_HEADS] << (32 - which)) >> 32


@jit_inline
def set_head(gran, s, which, x):
    """Make node ``x`` (-1: none) the first of slot ``s``'s list ``which``."""
    keep = ~(np.int64(0xFFFFFFFF) << which)
    gran[s, G_HEADS] = (gran[s, G_HEADS] & keep) | ((x & np.int64(0xFFFFFFFF)) << which)


@jit_inline
def slot_launch(gran, s):
    return gran[s, G_STAMP] & STAMP_LAUNCH_MASK


@jit_inline
def reads_count(gran, s):
    """The reads in slot ``s``'s read list (saturating at STAMP_NREADS_MAX)."""
    return (gran[s, G_STAMP] >> STAMP_NREADS_SHIFT) & STAMP_NREADS_MAX


@jit_inline
def reads_limit(gran, s):
    """The read list's length past which it is pruned (a power of two)."""
    return np.int64(1) << ((gran[s, G_STAMP] >> STAMP_RLIMIT_SHIFT) & 63)


@jit_inline
def count_read(gran, s):
    """One more read in slot ``s``'s read list; whether the list has now
    passed the length at which it is pruned."""
    w = gran[s, G_STAMP]
    n = (w >> STAMP_NREADS_SHIFT) & STAMP_NREADS_MAX
    if n < STAMP_NREADS_MAX:
        n += 1
        w += np.int64(1) << STAMP_NREADS_SHIFT
        gran[s, G_STAMP] = w
    return n > (np.int64(1) << ((w >> STAMP_RLIMIT_SHIFT) & 63))


@jit_inline
def stamp(launch, n, limit):
    """A G_STAMP word: ``launch``, ``n`` reads (saturated), pruned past
    ``limit`` rounded up to a power of two."""
    lg = 64 - leading_zeros(max(limit, 1) - 1)  # ceil(log2(limit))
    return (
        (launch & STAMP_LAUNCH_MASK)
        | (min(n, STAMP_NREADS_MAX) << STAMP_NREADS_SHIFT)
        | (lg << STAMP_RLIMIT_SHIFT)
    )


@jit_inline
def set_reads(gran, s, n, limit):
    """Slot ``s``'s read list holds ``n`` reads, pruned past ``limit``."""
    gran[s, G_STAMP] = stamp(slot_launch(gran, s), n, limit)


def slot_fields(gran: np.ndarray) -> dict[str, np.ndarray]:
    """The granule table's fields, one NumPy array per field (for tests and
    measurements; ``empty`` marks free slots, whose other fields mean nothing)."""
    w0, heads, st = gran[:, G_REGION], gran[:, G_HEADS], gran[:, G_STAMP]
    return {
        "empty": w0 == -1,
        "region": w0 & SLOT_REGION_MASK,
        "index": gran[:, G_INDEX],
        "init": (w0 >> SLOT_INIT_SHIFT) & MASK_ALL,
        "writes": (heads << (32 - HEAD_WRITES)) >> 32,
        "reads": heads >> HEAD_READS,
        "launch": st & STAMP_LAUNCH_MASK,
        "nreads": (st >> STAMP_NREADS_SHIFT) & STAMP_NREADS_MAX,
        "rlimit": np.int64(1) << ((st >> STAMP_RLIMIT_SHIFT) & 63),
    }


# Agents.
# The first eight fields are what every access reads (finding the agent, its
# clock, its barrier position for the node it makes): with rows of 24 fields
# (three aligned cache lines; the tables are page-aligned) an access touches
# one line of its agent's row. Rows of 22 fields, hot fields spread over the
# first ten, touched two and often three lines: the pipeline benchmark sweeps
# ~17k agents (~3 MB) per instruction of its lockstep schedule, so each event
# missed the caches there.
(
    AG_BASE,
    AG_EPOCH,
    AG_BLOCK,
    AG_THREAD,
    AG_KIND,
    AG_BLOCKED,
    AG_BARPOS,
    AG_CLUSTER,
    AG_BLOCKNUM,
    AG_FENCES,
    AG_CP_OPEN,
    AG_CP_RET,
    AG_BULK_OPEN,
    AG_BULK_RET,
    AG_RETIRED,
    AG_CP_AGENT,
    AG_BULK_AGENT,
    AG_ACQ_SERIAL,
    AG_ISSUER,
    AG_MBAR,
    AG_WEAK_AGENT,
    AG_WEAK_EPOCH,
    AG_WEAK_AUX,
    AG_WEAK_OBJ,
    AG_BARFENCE,
    AG_BAROBJ,
) = range(26)
# Per scope level (WARP..DEVICE at offset scope - 1): the release fences
# (base snapshot and epoch of the latest release fence of that scope or
# wider; base -1: none) and the releases read by relaxed atomics waiting for
# an acquire fence (a snapshot per reach; 0: none).
N_LEVELS = 4
AG_FREL_BASE = AG_BAROBJ + 1
AG_FREL_EPOCH = AG_FREL_BASE + N_LEVELS
AG_PACQ = AG_FREL_EPOCH + N_LEVELS
# A thread's cluster-barrier arrival not yet waited for: its generation's
# slot + 1 while the generation is open (0: none), and the snapshot the
# generation completed with once it has (-1: none).
AG_CL_PEND = AG_PACQ + N_LEVELS
AG_CL_DONE = AG_CL_PEND + 1
AG_FIELDS = 40  # five aligned cache lines
assert AG_CL_DONE < AG_FIELDS
KIND_THREAD, KIND_CP, KIND_BULK, KIND_TMA = 0, 1, 2, 3
# A cp.async agent's row keeps its issuer's clock at the issuer's latest copy
# in AG_BASE (a snapshot it holds) and AG_EPOCH (0: no copy yet), columns
# that otherwise mean a thread's own clock: what a cp_async_mbar_arrive gives
# the phase. Its copies' epochs are stamps, (group << CP_ARRIVE_BITS) | the
# issuer's cp_async_mbar_arrive rows in the group so far (the issuer's
# AG_CP_OPEN is its next copy's; AG_CP_RET and AG_RETIRED are stamps too).
CP_ARRIVE_BITS = badinput.CP_ARRIVE_BITS
CP_ARRIVES_MASK = np.int64(badinput.CP_ARRIVES_MAX)
# AG_FENCES heads the agent's log in ``fen``: fence_proxy_async epochs for a
# thread, retiring waits for a cp.async agent, phases for a TMA agent (below).
# AG_ISSUER: an async agent's thread; AG_MBAR: a TMA agent's mbarrier address.
# AG_WEAK_*: the last release the thread's atomics read without synchronizing
# (releaser, its epoch, reasons.weak_sync_aux, the address; agent -1: none).
# AG_BARPOS: the barrier generation the thread last completed (-1: none), in
# one word: its barrier's name (high bits from BARPOS_NAME_SHIFT: the slot of
# ``gens`` whose GN_BAROBJ is the barrier's obj; in a launch, one name per
# obj, so equal names are equal objs) and the generation's number (low
# BARPOS_GEN_BITS bits). ``races.bar_obj`` and ``bar_gen`` read it.
# AG_BARFENCE: the fence_spaces of its arrival at that generation; AG_BAROBJ:
# its barrier's obj (-1: none), for the findings of the thread's events.
BARPOS_GEN_BITS = 32
BARPOS_GEN_MASK = (1 << BARPOS_GEN_BITS) - 1
BARPOS_NAME_SHIFT = BARPOS_GEN_BITS
assert badinput.BAR_GENS_MAX <= 1 << BARPOS_GEN_BITS  # the numbers that complete
# A name is a slot of ``gens``: a launch holds fewer (``state.EngineState.grow``).
GENS_MAX = 1 << (63 - BARPOS_NAME_SHIFT)

# Barrier generations, one slot per (kind, block, obj) key, reused per generation.
(
    GN_OPEN,
    GN_ARG,
    GN_MASK,
    GN_COUNT,
    GN_ARRIVALS,
    GN_NUMBER,
    GN_BAROBJ,
    GN_KEYOBJ,
    GN_F_ROW,
    GN_F_LAUNCH,
    GN_F_BLOCK,
    GN_F_THREAD,
    GN_F_OP,
    GN_F_TS,
    GN_F_SITE,
    GN_L_ROW,
    GN_L_LAUNCH,
    GN_L_BLOCK,
    GN_L_THREAD,
    GN_L_OP,
    GN_L_TS,
    GN_L_SITE,
    GN_L_OBJ,
    GN_NAME,
) = range(24)
GN_FIELDS = 24
# GN_NAME: the name of the slot's barrier in AG_BARPOS (the first slot of the
# launch with its obj).

# Arrivals (barrier generations and mbarrier phases).
AR_NEXT, AR_BASE, AR_AGENT, AR_EPOCH, AR_FLAG = range(5)
AR_FIELDS = 5
ARF_WAITER, ARF_TMA = 1, 2
# An mbarrier arrival of cp.async copies (cp_async_mbar_arrive): agent the
# cp.async agent, epoch the stamp they go up to; the flag's bits from
# ARF_CP_LOG_SHIFT up hold the ``fen`` row kept for the log entry of the
# wait that retires them.
ARF_CP = 128
ARF_CP_LOG_SHIFT = 8
ARF_NOJOIN = 4  # a barrier arrival that does not fence this view's memory: no clock given or taken
ARF_CLUSTER = 8  # a cluster-barrier arrival: its thread takes the clock when it waits
ARF_FENCE_SHIFT = 4  # a barrier arrival's fence_spaces, in its flag

# Signals queued on a flag.
(
    SG_NEXT,
    SG_COUNT,
    SG_BASE,
    SG_AGENT,
    SG_EPOCH,
    SG_ROW,
    SG_SITE,
    SG_LAUNCH,
    SG_BLOCK,
    SG_THREAD,
    SG_TS,
) = range(11)
SG_FIELDS = 11
# A signal's clock (SG_BASE, SG_AGENT) and a flag's pairings (FQ_PAIRS) are
# of their launch only (SG_LAUNCH, FQ_PAIRS_LAUNCH): read from a later launch
# they are empty, so a launch boundary does not walk every flag and signal.
FQ_HEAD, FQ_TAIL, FQ_TOTAL, FQ_PAIRS, FQ_EDGES, FQ_PAIRS_LAUNCH = range(6)
FQ_FIELDS = 6

# sync_alias: FIFO pairings of this launch, and (signal site, wait site) edges.
(
    PR_NEXT,
    PR_S_ROW,
    PR_S_SITE,
    PR_S_AGENT,
    PR_S_EPOCH,
    PR_W_SITE,
    PR_W_AGENT,
    PR_W_EPOCH,
    PR_S_LAUNCH,
    PR_S_BLOCK,
    PR_S_THREAD,
    PR_S_TS,
) = range(12)
PR_FIELDS = 12
ED_NEXT, ED_S, ED_W = range(3)
ED_FIELDS = 3

# mbarriers.
(
    MB_VALID,
    MB_EXPECTED,
    MB_PENDING,
    MB_TX,
    MB_PHASE,
    MB_ARRIVALS,
    MB_DONE0,
    MB_DONE1,
    MB_I_ROW,
    MB_I_LAUNCH,
    MB_I_BLOCK,
    MB_I_THREAD,
    MB_I_OP,
    MB_I_TS,
    MB_I_SITE,
    MB_INITS,
    MB_TMA0,
    MB_TMA1,
) = range(18)
MB_FIELDS = 18
# MB_INITS: mbar_inits so far (a phase is known by (init number << 32) | phase).
# MB_TMA0/1: per parity, the tma_loads (arrival records: agent, load number)
# and the cp.async copies (ARF_CP) that completed the latest completed phase,
# until a wait retires them.

# The clock-value workspace ``cvs`` (rows: at least the arrival, signal and
# releasing-atomic pools', so a join of any of them fits): merge_many reads
# CV_BASE/CV_AGENT/CV_EPOCH; a wait also lists the signal records it took.
CV_BASE, CV_AGENT, CV_EPOCH, CV_CONS, CV_USED = range(5)
CV_FIELDS = 5

# Releasing atomics per address.
RL_NEXT, RL_SCOPE, RL_AGENT, RL_BASE, RL_EPOCH = range(5)
RL_FIELDS = 5

# Agent logs, newest first (head: AG_FENCES):
# - thread: fence_proxy_async, at FN_EPOCH;
# - cp.async agent: waits that retired its copies: FN_EPOCH the waiter's
#   epoch at the wait, FN_VAL the stamp retired up to, FN_AUX the wait's site
#   (the issuer's cp_async_wait), or -(1 + the entry of the first mbar_wait
#   on a phase that tracked them, below) when that wait retired them;
# - TMA agent: phases its loads complete: FN_EPOCH the first load number in
#   the phase, FN_VAL the phase key, FN_AUX 0, or once a wait returned on
#   it 1 + the index of that first wait's entry: FN_EPOCH the waiter's epoch
#   at the wait, FN_VAL the waiter, FN_AUX the wait's site (an st_async
#   destination write is the waiter's, performed there, for rule 7).
FN_NEXT, FN_EPOCH, FN_VAL, FN_AUX = range(4)
FN_FIELDS = 4

NF = len(FINDING_DTYPE.names)
F = {name: i for i, name in enumerate(FINDING_DTYPE.names)}
# One more column past the finding's fields: its rank among candidates
# (prev is a write, 2; this access writes, 1), which the driver needs to merge
# the findings of two views.
F_RANK = NF
(
    F_KIND,
    F_SEVERITY,
    F_ROW,
    F_LAUNCH,
    F_BLOCK,
    F_THREAD,
    F_OP,
    F_TS,
    F_SITE,
    F_PREV_ROW,
    F_PREV_LAUNCH,
    F_PREV_BLOCK,
    F_PREV_THREAD,
    F_PREV_OP,
    F_PREV_TS,
    F_PREV_SITE,
    F_PREV_ASYNC,
    F_SPACE,
    F_OWNER,
    F_ADDR,
    F_SIZE,
    F_OBJ,
    F_BAR_OBJ,
    F_BAR_GEN,
    F_PREV_BAR_OBJ,
    F_PREV_BAR_GEN,
    F_CODE,
    F_AUX,
) = range(NF)

# Candidate slots per hazard kind for the current event.
(
    C_VALID,
    C_PREV_ROW,
    C_PW,
    C_AW,
    C_PREV_BLOCK,
    C_PREV_THREAD,
    C_PREV_OP,
    C_PREV_ASYNC,
    C_PREV_BARPOS,
    C_SPACE,
    C_OWNER,
    C_LO,
    C_HI,
    C_CODE,
    C_AUX,
    C_OBJ,
) = range(16)
C_FIELDS = 16
N_KINDS = len(O.HazardKind)  # a candidate row per kind

# Return codes.
OK, NEED_GROW, NEW_LAUNCH = 0, 1, 2
# Bad input: the kernel returns the rule's code and leaves the values its
# message reads in SV_ERR_A.. (in the order of the rule's ``fields``).
E_BARRIER_ORDER = badinput.BARRIER_ORDER.code
E_WAIT = badinput.WAIT_WITHOUT_SIGNAL.code
E_BAR_COUNT = badinput.BARRIER_COUNT.code
E_WARP_MASK = badinput.EMPTY_WARP_MASK.code
E_LAUNCH_ORDER = badinput.LAUNCH_ORDER.code
E_MBAR_COUNT = badinput.MBARRIER_COUNT.code
E_WAIT_GROUP = badinput.WAIT_GROUP.code
E_SIGNAL_OVERFLOW = badinput.SIGNAL_OVERFLOW.code
E_TX_OVERFLOW = badinput.TX_OVERFLOW.code
E_CLUSTER_ORDER = badinput.CLUSTER_ORDER.code
E_CLUSTER_COUNT = badinput.CLUSTER_COUNT.code
E_CLUSTER_AGAIN = badinput.CLUSTER_ARRIVE_AGAIN.code
E_CLUSTER_WAIT = badinput.CLUSTER_WAIT_ALONE.code
E_CP_GROUP_OVERFLOW = badinput.CP_GROUP_OVERFLOW.code
E_CP_ARRIVE_OVERFLOW = badinput.CP_ARRIVE_OVERFLOW.code
E_BAR_GENS_OVERFLOW = badinput.BAR_GENS_OVERFLOW.code
COUNT_MAX = np.int64(badinput.COUNT_MAX)
"""The largest pending-signal or transaction count (the format's int64 ``arg``)."""
COUNT_MIN = np.int64(badinput.COUNT_MIN)

# Grow bits.
(
    GR_AGENTS,
    GR_SNAPS,
    GR_ARENA,
    GR_NODES,
    GR_GRAN,
    GR_GENS,
    GR_ARR,
    GR_SIG,
    GR_FQ,
    GR_MB,
    GR_RL,
    GR_FEN,
    GR_FIND,
    GR_AMAP,
    GR_BMAP,
    GR_MMAP,
    GR_FMAP,
    GR_LMAP,
    GR_XMAP,
) = (1 << i for i in range(19))
GR_IV = 1 << 19
GR_PR = 1 << 20
GR_ED = 1 << 21

WARP_BARRIER = -2
CLUSTER_BARRIER = -3  # GN_BAROBJ of a cluster barrier's generation
SITE_NONE_I = np.int64(SITE_NONE)

WARNING = int(O.Severity.WARNING)


def _slots_are_disjoint() -> None:
    """Every ``SV_*`` slot is numbered once and lies below ``SV_FIELDS``."""
    slots = {
        name: value
        for name, value in globals().items()
        if name.startswith("SV_") and name != "SV_FIELDS"
    }
    taken: dict[int, str] = {}
    for name, value in slots.items():
        assert 0 <= value < SV_FIELDS, f"{name} = {value} is outside sv"
        assert value not in taken, f"{name} and {taken[value]} share slot {value}"
        taken[value] = name
    assert len(taken) == SV_FIELDS, f"sv slots {sorted(set(range(SV_FIELDS)) - set(taken))} unused"


_slots_are_disjoint()


def _finding_columns_match() -> None:
    """``F_<FIELD>`` is the column of every ``FINDING_DTYPE`` field, and ``F_RANK`` the
    one past them."""
    for name, column in F.items():
        assert globals().get(f"F_{name.upper()}") == column, f"F_{name.upper()} != {column}"
    assert F_RANK == NF


_finding_columns_match()


def _columns_are_disjoint() -> None:
    """Every table's columns are numbered once, from 0, below its ``*_FIELDS``."""
    g = globals()
    for prefix, width in (
        ("SN_", SN_FIELDS),
        ("G_", G_FIELDS),
        ("N_", N_FIELDS),
        ("K_", K_FIELDS),
        ("S_", S_FIELDS),
        ("IV_", IV_FIELDS),
        ("AR_", AR_FIELDS),
        ("SG_", SG_FIELDS),
        ("FQ_", FQ_FIELDS),
        ("PR_", PR_FIELDS),
        ("ED_", ED_FIELDS),
        ("MB_", MB_FIELDS),
        ("RL_", RL_FIELDS),
        ("FN_", FN_FIELDS),
        ("GN_", GN_FIELDS),
        ("C_", C_FIELDS),
        ("CV_", CV_FIELDS),
        ("AG_", AG_FIELDS),
    ):
        taken: dict[int, str] = {}
        for name, value in g.items():
            if (
                not name.startswith(prefix)
                or name == f"{prefix}FIELDS"
                or name in ("N_KINDS", "N_LEVELS")
                or not isinstance(value, int)
            ):
                continue
            assert 0 <= value < width, f"{name} = {value} is outside its row of {width}"
            if prefix == "AG_" and name.startswith(("AG_FREL_", "AG_PACQ")):
                continue  # the first of N_LEVELS columns each, checked below
            assert value not in taken, f"{name} and {taken[value]} share column {value}"
            taken[value] = name
    for lvl in range(N_LEVELS):
        for base in (AG_FREL_BASE, AG_FREL_EPOCH, AG_PACQ):
            assert base + lvl < AG_FIELDS and base + lvl >= AG_BAROBJ + 1


_columns_are_disjoint()


def _info_fields_are_disjoint() -> None:
    """The bit fields of a node's ``info`` word overlap nowhere and fit 63 bits."""
    fields = {
        "op": I_OP_MASK,
        "write": I_WRITE,
        "atomic": I_ATOMIC,
        "async": I_ASYNC,
        "proxy": I_PROXY,
        "scope": I_SCOPE_BITS << I_SCOPE_SHIFT,
        "mask": MASK_ALL << I_MASK_SHIFT,
        "copy": I_COPY_BITS << I_COPY_SHIFT,
        "after_all": I_AFTER_ALL,
        "raced": I_RACED,
        "shade_hides": I_SHADE_HIDES,
        "shaded": I_SHADED,
        "shadow": MASK_ALL << I_SHADOW_SHIFT,
    }
    seen = 0
    for name, bits in fields.items():
        assert not bits & seen, f"info field {name} overlaps another"
        seen |= bits
    assert seen < 1 << 63
    assert KS_HIDDEN_SHIFT + 16 <= 63 and KS_AGENT_MASK >> KS_AGENT_BITS == 0


_info_fields_are_disjoint()
