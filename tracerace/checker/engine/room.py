"""Room: before an event is applied, the worst it can need of every pool is checked, so
no event is ever half applied (the kernel returns NEED_GROW instead).
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from ..jit import jit_inline
from .layout import (
    GR_AGENTS,
    GR_AMAP,
    GR_ARENA,
    GR_ARR,
    GR_BMAP,
    GR_ED,
    GR_FEN,
    GR_FIND,
    GR_FMAP,
    GR_FQ,
    GR_GENS,
    GR_GRAN,
    GR_IV,
    GR_LMAP,
    GR_MB,
    GR_MMAP,
    GR_NODES,
    GR_PR,
    GR_RL,
    GR_SIG,
    GR_SNAPS,
    GR_XMAP,
    N_KINDS,
    N_LEVELS,
    SV_AR_USED,
    SV_ARENA_TOP,
    SV_ARR_USED,
    SV_ATOM_N,
    SV_ED_TOP,
    SV_FEN_TOP,
    SV_FQ_N,
    SV_GEN_N,
    SV_GRAN_COUNT,
    SV_GROW,
    SV_IV_N,
    SV_LAUNCH,
    SV_LOCK_N,
    SV_MB_N,
    SV_N_AGENTS,
    SV_NFIND,
    SV_NODE_USED,
    SV_PAGE_LAUNCH,
    SV_PAGE_SHIFT,
    SV_PR_TOP,
    SV_SIG_USED,
    SV_SNAP_N,
)
from .shadow import GRAN_DENSE_MIN, GRANULE_SHIFT, INIT_INTERVAL_MIN

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
def replay_room(
    op,
    size,
    sv,
    ag,
    agent_map,
    async_map,
    snaps,
    arena_a,
    nodes,
    gran,
    gens,
    arr,
    sigs,
    fq,
    mbs,
    rels,
    fen,
    ivs,
    find,
    pairs,
    edges,
    bar_map,
    mb_map,
    flag_map,
    lock_map,
    atom_map,
    arg,
):
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
    if (
        op == O.INIT
        and size < INIT_INTERVAL_MIN
        or size < (np.int64(1) << sv[SV_PAGE_SHIFT])
        and (
            op <= O.ATOMIC
            or op == O.CP_ASYNC
            or op == O.TMA_LOAD
            or op == O.TMA_STORE
            or O.BULK_COPY_PEER <= op <= O.RED_ASYNC
        )
    ):
        ng = 2 * ((size >> GRANULE_SHIFT) + 2)  # 4-byte granules: an upper bound
    if sv[SV_NODE_USED] + ng > nodes.shape[0]:
        grow |= GR_NODES
    # shadow.gran_limit, written out (see there)
    if 4 * (sv[SV_GRAN_COUNT] + ng) > (2 + (gran.shape[0] >= GRAN_DENSE_MIN)) * gran.shape[0]:
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
        # A slot's key and, for the first slot of its obj, its name.
        if 2 * (2 * sv[SV_GEN_N] + 2) > bar_map.shape[0]:
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
    return max(
        min(
            (nodes.shape[0] - sv[SV_NODE_USED]) // PLAIN_NG,
            ((2 + (gran.shape[0] >= GRAN_DENSE_MIN)) * (gran.shape[0] // 4) - sv[SV_GRAN_COUNT])
            // PLAIN_NG,
            (find.shape[0] - sv[SV_NFIND]) // EVENT_FINDINGS,
        )
        - 1,
        0,
    )
