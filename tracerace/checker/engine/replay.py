"""The replay kernel: one pass over a batch's columns, one handler per op.

Each op goes to the handler named as its twin in the reference checker
(``reference.HANDLERS``): ``on_access`` (``memory``), ``on_barrier``
(``barriers``), ``on_mbar_arrive`` (``mbarriers``), and so on. Before that,
``replay`` does what every event needs: room for the worst it can ask of the
pools (``room``), its agent (``agents``), the barrier it may still be held
at, and its epoch.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...trace import ops as O
from ...trace.schema import COLUMN_NAMES
from ..jit import jit_kernel
from .agents import AGENT_PREFETCH_MIN, new_agent, thread_agent
from .async_copies import on_fence_proxy
from .atomics import on_fence
from .barriers import on_barrier
from .clusters import on_cluster_arrive, on_cluster_wait
from .copies import (
    on_bulk_commit,
    on_bulk_wait,
    on_cp_async,
    on_cp_commit,
    on_cp_wait,
    on_tma_store,
)
from .granules import prefetch_ahead
from .hashmap import hm_prefetch, hm_put
from .launches import next_launch
from .layout import (
    AG_BLOCKED,
    AG_BLOCKNUM,
    AG_EPOCH,
    CLUSTER_BARRIER,
    E_BARRIER_ORDER,
    E_CLUSTER_ORDER,
    E_LAUNCH_ORDER,
    GN_BAROBJ,
    GN_KEYOBJ,
    KIND_THREAD,
    NEED_GROW,
    OK,
    SV_ERR_A,
    SV_ERR_B,
    SV_ERR_C,
    SV_ERR_D,
    SV_GLOBAL_REGION,
    SV_LAUNCH,
    SV_N_AGENTS,
    SV_PAGE_LAUNCH,
    SV_PAGE_SHIFT,
)
from .locks import on_acquire, on_release
from .mbarriers import (
    on_cp_async_mbar_arrive,
    on_mbar_arrive,
    on_mbar_arrive_drop,
    on_mbar_expect_tx,
    on_mbar_init,
    on_mbar_inval,
    on_mbar_wait,
    on_st_async,
    on_tma_load,
)
from .memory import on_access, on_init
from .pages import page_room
from .room import PLAIN_MAX, replay_room
from .shadow import PF_FAR
from .shards import access_owned
from .signals import on_signal, on_wait

Columns = namedtuple("Columns", COLUMN_NAMES)
"""A batch's columns (NumPy arrays, the trace's own types)."""

Event = namedtuple("Event", "row launch block thread op ts site size")
"""What every handler is told of the event at hand (int64 values)."""


# ``replay`` allocates nothing (the joins use the ``cvs`` workspace; clock
# compaction, which sorts, runs in the driver), so it is compiled without NRT.
# ``on_access`` and the granule path are inlined into it (``jit_inline_ir``,
# their helpers ``jit_inline``): a call passes every array argument as a
# struct of ~8 words, ~100 pushes per access. The other handlers are leaves
# of their own, called with ``Tables`` (LLVM inlines most of them here, each having one call site):
# fewer instructions per event than with them inlined into ``replay`` at IR
# level or gathered into one leaf (bench/README.md has the figures).
def _replay_kernel(sharded):
    """The replay kernel for one state (``sharded`` False) or for a shard of
    a check (``shards``). ``sharded`` is a constant of the compiled code: the
    test and skip of the accesses a shard does not own are not in the one
    state's kernel, whose instructions per event they raised by 5% (tiled,
    ``bench.icount``: a longer loop body spills more), and a single check
    never compiles the shard's kernel."""

    @jit_kernel
    def replay(c, row0, start, t, gpos):
        """Replay rows ``start``.. of batch ``c`` (:class:`Columns`, its first row is
        ``row0`` of the trace) against the state ``t`` (:class:`.state.Tables`):
        ``(OK, n)``, or the status that stopped it and the row to resume at
        (``NEED_GROW``, ``NEW_LAUNCH`` for a launch the driver starts, an ``E_*``
        bad-input code). ``gpos``: the
        rows of the batch's global accesses (:func:`.granules.global_accesses`)."""
        sv, ag, agent_map = t.sv, t.ag, t.agent_map
        n = c.op.shape[0]
        gk = np.searchsorted(gpos, start)  # gpos[gk]: the next global access
        budget = np.int64(0)  # small plain accesses that need no room check (replay_room)
        last_a = np.int64(-1)  # the agent of the last event, and its block and thread
        last_block = np.int64(-1)
        last_thread = np.int64(0)
        for i in range(start, n):
            row = row0 + i
            op = np.int64(c.op[i])
            launch = np.int64(c.launch[i])
            # -- a new launch: closed and started here, or by the driver
            # (``launches``); nothing of the old launch's agents carries over.
            if launch != sv[SV_LAUNCH]:
                if launch < sv[SV_LAUNCH]:
                    sv[SV_ERR_A] = launch
                    sv[SV_ERR_B] = sv[SV_LAUNCH]
                    return E_LAUNCH_ORDER, i
                status = next_launch(t, c, i, launch)
                if status != OK:
                    return status, i
                budget = np.int64(0)
                last_a = np.int64(-1)
                last_block = np.int64(-1)
            size = np.int64(c.size[i])
            # -- in a shard (``shards``): whether it owns the bytes of an
            # access, none (0), all (1) or some (2). A read or write of none
            # of them is skipped: only its agent is looked up, for the checks
            # a whole check makes of every event; an agent it would make, or
            # one still held at a barrier, takes the full path below (the
            # room, the bad-input error). Its epoch is counted as a whole
            # check counts it, so every epoch is the whole check's: the
            # newest release an atomic reads in vain is chosen by comparing
            # the epochs of different agents (``atomics.acquire_atomic``).
            # An atomic is replayed wherever its bytes are: it synchronizes.
            own = np.int64(1)
            if sharded and op <= O.ATOMIC and size > 0:
                own = access_owned(
                    sv, np.int64(c.space[i]), np.int64(c.peer[i]), np.int64(c.addr[i]), size
                )
                if own == 0 and op != O.ATOMIC:
                    block = np.int64(c.block[i])
                    thread = np.int64(c.thread[i])
                    a = thread_agent(
                        ag, sv, agent_map, block, thread, last_a, last_block, last_thread
                    )
                    if a >= 0 and ag[a, AG_BLOCKED] < 0:
                        ag[a, AG_EPOCH] += 1
                        last_a = a
                        last_block = block
                        last_thread = thread
                        continue
            # -- room for the worst this event can need, before touching anything.
            # A run of small plain accesses by known agents draws on a budget
            # instead (see PLAIN_NG): the full check of every pool at every
            # event costs instructions on the hot path.
            if budget > 0 and op <= O.WRITE and size <= PLAIN_MAX:
                budget -= 1
            else:
                budget = replay_room(
                    op,
                    size,
                    sv,
                    ag,
                    agent_map,
                    t.async_map,
                    t.snaps,
                    t.arena_a,
                    t.nodes,
                    t.gran,
                    t.gens,
                    t.arr,
                    t.sigs,
                    t.fq,
                    t.mbs,
                    t.rels,
                    t.fen,
                    t.ivs,
                    t.find,
                    t.pairs,
                    t.edges,
                    t.bar_map,
                    t.mb_map,
                    t.flag_map,
                    t.lock_map,
                    t.atom_map,
                    np.int64(c.arg[i]),
                )
                if budget < 0:
                    return NEED_GROW, i

            # -- the agent (the last event's, or a neighbour of it, mostly).
            block = np.int64(c.block[i])
            thread = np.int64(c.thread[i])
            a = thread_agent(ag, sv, agent_map, block, thread, last_a, last_block, last_thread)
            if a < 0:
                a = new_agent(ag, sv, block, thread, np.int64(c.cluster[i]), KIND_THREAD)
                hm_put(agent_map, block, thread, 0, a)
                budget = 0  # the room for agents was checked for the old count
            last_a = a
            last_block = block
            last_thread = thread
            if ag[a, AG_BLOCKED] >= 0:  # still held at a barrier: the trace is out of order
                sv[SV_ERR_A] = block
                sv[SV_ERR_B] = thread
                sv[SV_ERR_C] = t.gens[ag[a, AG_BLOCKED], GN_KEYOBJ]
                sv[SV_ERR_D] = ag[a, AG_BLOCKNUM]
                if t.gens[ag[a, AG_BLOCKED], GN_BAROBJ] == CLUSTER_BARRIER:
                    return E_CLUSTER_ORDER, i
                return E_BARRIER_ORDER, i
            if (
                size > 0
                and (size >= (np.int64(1) << sv[SV_PAGE_SHIFT]) or sv[SV_PAGE_LAUNCH] == launch)
                and (
                    op <= O.ATOMIC
                    or op == O.CP_ASYNC
                    or op == O.TMA_LOAD
                    or op == O.TMA_STORE
                    or O.BULK_COPY_PEER <= op <= O.RED_ASYNC
                )
            ):
                if not page_room(
                    op,
                    np.int64(c.space[i]),
                    np.int64(c.addr[i]),
                    size,
                    np.int64(c.space2[i]),
                    np.int64(c.addr2[i]),
                    np.int64(c.peer[i]),
                    block,
                    a,
                    sv,
                    t.nodes,
                    t.gran,
                    t.ivs,
                    t.pst,
                ):
                    return NEED_GROW, i
            ag[a, AG_EPOCH] += 1
            epoch = ag[a, AG_EPOCH]
            ev = Event(row, launch, block, thread, op, np.int64(c.ts[i]), np.int64(c.site[i]), size)

            # -- the op's handler.
            status = OK
            if op <= O.ATOMIC:
                # Read ahead: the agent map where the block changes (elsewhere the
                # agent is the last event's neighbour), the granules of the next
                # global accesses.
                if (
                    sv[SV_N_AGENTS] > AGENT_PREFETCH_MIN
                    and i + PF_FAR < n
                    and c.block[i + PF_FAR] != c.block[i + PF_FAR - 1]
                ):
                    hm_prefetch(
                        agent_map, np.int64(c.block[i + PF_FAR]), np.int64(c.thread[i + PF_FAR]), 0
                    )
                if c.space[i] == O.SPACE_GLOBAL:
                    # A shard's ``gpos`` leaves out the accesses it skips, and
                    # an access it does not own that took the full path (a new
                    # agent's first event).
                    if sharded:
                        while gk < gpos.shape[0] and gpos[gk] < i:
                            gk += 1
                    if not sharded or (gk < gpos.shape[0] and gpos[gk] == i):
                        prefetch_ahead(
                            c.addr, c.size, gpos, gk, t.gran, t.nodes, sv[SV_GLOBAL_REGION]
                        )
                        gk += 1
                on_access(t, c, i, ev, a, epoch, own)
            elif op == O.INIT:
                on_init(t, c, i, ev, a, epoch)
            elif op == O.BAR_SYNC or op == O.BAR_ARRIVE or op == O.WARP_SYNC:
                status = on_barrier(t, c, i, ev, a, epoch)
            elif op == O.FENCE:
                on_fence(t, c, i, ev, a, epoch)
            elif op == O.FENCE_PROXY_ASYNC:
                on_fence_proxy(t, c, i, ev, a, epoch)
            elif op == O.RELEASE:
                on_release(t, c, i, ev, a, epoch)
            elif op == O.ACQUIRE:
                on_acquire(t, c, i, ev, a, epoch)
            elif op == O.SIGNAL:
                status = on_signal(t, c, i, ev, a, epoch)
            elif op == O.WAIT:
                status = on_wait(t, c, i, ev, a, epoch)
            elif op == O.CP_ASYNC:
                on_cp_async(t, c, i, ev, a, epoch)
            elif op == O.TMA_STORE or op == O.BULK_REDUCE:
                on_tma_store(t, c, i, ev, a, epoch)
            elif op == O.CP_ASYNC_COMMIT:
                status = on_cp_commit(t, c, i, ev, a, epoch)
            elif op == O.BULK_COMMIT:
                on_bulk_commit(t, c, i, ev, a, epoch)
            elif op == O.CP_ASYNC_WAIT:
                status = on_cp_wait(t, c, i, ev, a, epoch)
            elif op == O.BULK_WAIT:
                status = on_bulk_wait(t, c, i, ev, a, epoch)
            elif op == O.TMA_LOAD or op == O.BULK_COPY_PEER or op == O.BULK_REDUCE_PEER:
                status = on_tma_load(t, c, i, ev, a, epoch)
            elif op == O.ST_ASYNC or op == O.RED_ASYNC:
                status = on_st_async(t, c, i, ev, a, epoch)
            elif op == O.MBAR_INIT:
                status = on_mbar_init(t, c, i, ev, a, epoch)
            elif op == O.MBAR_ARRIVE:
                on_mbar_arrive(t, c, i, ev, a, epoch)
            elif op == O.MBAR_EXPECT_TX:
                status = on_mbar_expect_tx(t, c, i, ev, a, epoch)
            elif op == O.MBAR_WAIT:
                on_mbar_wait(t, c, i, ev, a, epoch)
            elif op == O.MBAR_INVAL:
                on_mbar_inval(t, c, i, ev, a, epoch)
            elif op == O.MBAR_ARRIVE_DROP:
                on_mbar_arrive_drop(t, c, i, ev, a, epoch)
            elif op == O.CLUSTER_ARRIVE or op == O.CLUSTER_ARRIVE_RELAXED:
                status = on_cluster_arrive(t, c, i, ev, a, epoch)
            elif op == O.CLUSTER_WAIT:
                status = on_cluster_wait(t, c, i, ev, a, epoch)
            elif op == O.CP_ASYNC_MBAR_ARRIVE or op == O.CP_ASYNC_MBAR_ARRIVE_NOINC:
                status = on_cp_async_mbar_arrive(t, c, i, ev, a, epoch)
            if status != OK:
                return status, i
        return OK, n

    return replay


replay = _replay_kernel(False)
replay_shard = _replay_kernel(True)
