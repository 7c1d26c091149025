"""Agents (threads and the async agents a thread issues through) and their clocks:
who knows whom, joins, and the per-launch agent map.
"""

from __future__ import annotations

import numpy as np

from ...trace import ops as O
from ..jit import jit_inline, jit_leaf
from .clocks import decref, incref, lookup, merge
from .hashmap import hm_get, hm_put
from .layout import (
    AG_BARFENCE,
    AG_BAROBJ,
    AG_BARPOS,
    AG_BASE,
    AG_BLOCK,
    AG_BLOCKED,
    AG_BULK_AGENT,
    AG_BULK_OPEN,
    AG_CL_DONE,
    AG_CLUSTER,
    AG_CP_AGENT,
    AG_CP_OPEN,
    AG_EPOCH,
    AG_FENCES,
    AG_FIELDS,
    AG_FREL_BASE,
    AG_ISSUER,
    AG_KIND,
    AG_THREAD,
    AG_WEAK_AGENT,
    CP_ARRIVE_BITS,
    KIND_THREAD,
    N_LEVELS,
    SV_N_AGENTS,
)


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
    ag[a, AG_BARPOS] = -1
    ag[a, AG_BAROBJ] = -1
    for lvl in range(N_LEVELS):
        ag[a, AG_FREL_BASE + lvl] = -1
    ag[a, AG_FENCES] = -1
    ag[a, AG_CP_OPEN] = np.int64(1) << CP_ARRIVE_BITS  # group 1's first stamp
    ag[a, AG_BULK_OPEN] = 1
    ag[a, AG_CP_AGENT] = -1
    ag[a, AG_BULK_AGENT] = -1
    ag[a, AG_ISSUER] = -1
    ag[a, AG_WEAK_AGENT] = -1
    ag[a, AG_BARFENCE] = 7
    ag[a, AG_CL_DONE] = -1
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
def async_agent(ag, sv, async_map, t, lane, key):
    a = hm_get(async_map, t, np.int64(lane), key)
    if a < 0:
        a = new_agent(ag, sv, ag[t, AG_BLOCK], ag[t, AG_THREAD], ag[t, AG_CLUSTER], lane)
        ag[a, AG_ISSUER] = t
        hm_put(async_map, t, np.int64(lane), key, a)
    return a


# Above this many agents the agent table outgrows the caches, and an access
# prefetches the table row of the event PF_FAR ahead (tiled_wide: 262,144
# agents); below, the ~22 instructions a prefetch costs buy nothing.
AGENT_PREFETCH_MIN = 8192


@jit_inline
def _agent_is(ag, sv, a, block, thread):
    return (
        0 <= a < sv[SV_N_AGENTS]
        and ag[a, AG_THREAD] == thread
        and ag[a, AG_BLOCK] == block
        and ag[a, AG_KIND] == KIND_THREAD
    )


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
